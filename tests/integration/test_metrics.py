"""The agent's work-level series, scraped from a running ``workagent agent`` process.

The agent runs as its own process (a clean metrics registry), against kubesim
hub and spoke, serving HTTPS with its self-signed certificate as in
production. Works succeed, fail, lose a manifest and are deleted; an
AppliedManifestWork without a work is evicted. The test then scrapes
``/metrics`` and checks:

- every series docs/metrics.md documents for the agent is served, with the
  documented type and labels, and nothing undocumented is served;
- the values: the condition gauges equal the counts computed from the works
  as the hub API returns them, and the counters, histogram and status gauges
  have the values this scenario implies.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from prometheus_client.metrics_core import Metric

from ocmkit.kube import APPLIED_MANIFESTWORKS, CONFIGMAPS, MANIFESTWORKS, KubeClient, NotFound
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    hub_hash_of,
    manifest_statuses,
    update_work,
    wait_applied,
    wait_gone,
    work_body,
)
from tests.metrics_reference import parse_scrape, samples, undocumented_or_missing, value
from tests.support.manifests import json_paths, manifest_config
from tests.support.programs import CLUSTER
from tests.support.serving_endpoint import AGENT, get, unverified
from workagent.identity import applied_work_name

INTERVAL = 1.0


def watch_config(name: str) -> dict[str, Any]:
    """Watch-mode status feedback for ConfigMap ``name`` in ``default``."""
    return manifest_config(
        "", "configmaps", name, feedback=[json_paths(("v", ".data.k"))], scrape="Watch"
    )


def condition_counts(works: list[dict[str, Any]], *, manifests: bool) -> dict[tuple[str, ...], int]:
    """(condition, status, reason) counts, computed from the works as the hub returns them."""
    counts: Counter[tuple[str, ...]] = Counter()
    for work in works:
        if manifests:
            conditions = [c for e in manifest_statuses(work) for c in e.get("conditions") or []]
        else:
            conditions = list((work.get("status") or {}).get("conditions") or [])
        for cond in conditions:
            counts[(cond["type"], cond["status"], cond["reason"])] += 1
    return dict(counts)


def scraped_counts(families: dict[str, Metric], name: str) -> dict[tuple[str, ...], int]:
    """The same counts as the agent's gauge reports them."""
    out: dict[tuple[str, ...], int] = {}
    for labels, count in samples(families, name).items():
        as_dict = dict(labels)
        out[(as_dict["condition"], as_dict["status"], as_dict["reason"])] = int(count)
    return out


async def test_every_documented_series_with_the_scenario_values(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    the_hash = hub_hash_of(tmp_path)
    # An AppliedManifestWork of this agent whose work the hub never had: evicted.
    await spoke_client.create(
        APPLIED_MANIFESTWORKS,
        {
            # A real apiserver refuses a custom resource without its apiVersion and kind.
            "apiVersion": APPLIED_MANIFESTWORKS.api_version,
            "kind": APPLIED_MANIFESTWORKS.kind,
            "metadata": {"name": applied_work_name(the_hash, "ghost")},
            "spec": {"hubHash": the_hash, "manifestWorkName": "ghost", "agentID": the_hash},
        },
    )
    process, host, port, scheme = await AGENT.started(
        tmp_path,
        f"--status-sync-interval={INTERVAL:g}s",
        "--appliedmanifestwork-eviction-grace-period=1s",
    )
    assert scheme == "https"
    url = f"https://{host}:{port}/metrics"
    try:
        good = [configmap("good-a", k="1"), configmap("good-b")]
        await hub_client.create(
            MANIFESTWORKS, work_body("good", good, manifestConfigs=[watch_config("good-a")])
        )
        # Its namespace does not exist: the create answers 404 NotFound on every pass.
        await hub_client.create(MANIFESTWORKS, work_body("bad", [configmap("x", "missing")]))
        await hub_client.create(MANIFESTWORKS, work_body("gone", [configmap("gone-cm")]))
        await wait_applied(hub_client, "good")
        await wait_applied(hub_client, "gone")
        await wait_applied(hub_client, "bad", status="False")

        # good-b leaves the work (deleted as removed_from_work); "gone" is deleted
        # with its ConfigMap (work_deleted).
        def drop_b(work: dict[str, Any]) -> None:
            work["spec"]["workload"]["manifests"] = [configmap("good-a", k="1")]

        await update_work(hub_client, "good", drop_b)
        await wait_applied(hub_client, "good", generation=2)
        await hub_client.delete(MANIFESTWORKS, "gone", CLUSTER)
        await wait_gone(
            hub_client, MANIFESTWORKS, "gone", CLUSTER, what="work gone to be finalized"
        )

        async def ghost_evicted() -> bool:
            try:
                await spoke_client.get(APPLIED_MANIFESTWORKS, applied_work_name(the_hash, "ghost"))
            except NotFound:
                return True
            return False

        await eventually(ghost_evicted, what="the unmanaged AppliedManifestWork to be evicted")

        scraped: dict[str, Metric] = {}
        expected: dict[str, Any] = {}

        async def settled() -> bool:
            """The scrape agrees with the hub's works and the scenario (status converges)."""
            listed = (await hub_client.list(MANIFESTWORKS, CLUSTER))["items"]
            code, text = await get(url, unverified(), token=AGENT.admin_token(tmp_path))
            assert code == 200
            scraped.clear()
            scraped.update(parse_scrape(text))
            expected["works"] = condition_counts(listed, manifests=False)
            expected["manifests"] = condition_counts(listed, manifests=True)
            return (
                scraped_counts(scraped, "work_agent_manifestworks") == expected["works"]
                and scraped_counts(scraped, "work_agent_manifests") == expected["manifests"]
                and value(scraped, "work_agent_status_resources", mode="watch") == 1
                and value(scraped, "work_agent_status_resources", mode="poll") == 1
            )

        await eventually(settled, what="the scraped gauges to match the works on the hub")
    finally:
        assert await process.terminate() == 0

    assert undocumented_or_missing(scraped, "agent") == []
    # Gauges: one work applied (good), one failing (bad); counts as the hub shows them.
    works = expected["works"]
    assert works[("Applied", "True", "AppliedManifestWorkComplete")] == 1
    assert works[("Applied", "False", "AppliedManifestWorkFailed")] == 1
    assert expected["manifests"][("Applied", "False", "AppliedManifestFailed")] == 1
    assert expected["manifests"][("Applied", "True", "AppliedManifestComplete")] == 1
    # Counters: the failing manifest by its API error, once per apply pass (so at least
    # once), and nothing else failed.
    failures = samples(scraped, "work_agent_manifest_apply_failures_total")
    assert set(failures) == {(("reason", "NotFound"),)}
    assert failures[(("reason", "NotFound"),)] >= 1
    assert value(scraped, "work_agent_appliedmanifestwork_evictions_total") == 1
    orphans = "work_agent_orphan_deletions_total"
    assert value(scraped, orphans, reason="removed_from_work") == 1
    assert value(scraped, orphans, reason="work_deleted") == 1
    # Time to applied: good at generation 1 and 2, gone at 1; bad never applied.
    assert value(scraped, "work_agent_time_to_applied_seconds_count") == 3
    total = value(scraped, "work_agent_time_to_applied_seconds_sum")
    assert total is not None and 0 < total < 60
    # Status syncs: every second (x0.8 to x1), so never older than a few seconds.
    assert value(scraped, "work_agent_status_sync_interval_seconds") == INTERVAL
    age = value(scraped, "work_agent_status_sync_oldest_age_seconds")
    assert age is not None and 0 <= age < 30
    # Runtime series this scenario pins down.
    assert value(scraped, "informer_synced", informer="manifestworks") == 1
    assert value(scraped, "informer_cache_objects", informer="manifestworks") == 2
    assert value(scraped, "leader_election_master_status", name="work-agent-lock") == 1
    workers = "controller_runtime_max_concurrent_reconciles"
    assert value(scraped, workers, controller="manifestwork-controller") == 10
    assert value(scraped, "feedback_watch_pool_informers") == 1
    assert value(scraped, "feedback_watch_pool_registrations") == 1
    # Objects are deleted by the apply client, AppliedManifestWorks by the work client.
    deletes = "kube_client_requests_total"
    assert (value(scraped, deletes, client="spoke", verb="delete", code="200") or 0) >= 2
    assert (value(scraped, deletes, client="spoke-work", verb="delete", code="200") or 0) >= 1
    # The ConfigMaps the agent deleted are gone from the spoke.
    for name in ("good-b", "gone-cm"):
        try:
            await spoke_client.get(CONFIGMAPS, name, "default")
        except NotFound:
            continue
        raise AssertionError(f"configmap {name} still exists")
