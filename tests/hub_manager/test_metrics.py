"""The hub manager's work-level series, scraped from the real manager's /metrics.

The manager runs in-process with both gates (so the registry is the pytest
process's: counters are compared as differences, and the check that nothing
undocumented is served is left to the agent's process test). The test plays
scheduler and agent with the ``Hub`` helper of the replica set tests: a
replica set rolls out to three clusters, one cluster leaves, a completed work
with a TTL is collected; then every series docs/metrics.md documents for the
hub is served with the documented type and labels, and with these values.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
from prometheus_client.metrics_core import Metric

from ocmkit.kube import MANIFESTWORKS, NotFound
from schemas.meta import format_time, now
from schemas.wire import GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK, GATE_MANIFEST_WORK_REPLICA_SET
from tests.conftest import eventually
from tests.hub.test_replicaset import CLUSTERS, Hub, all_ref, hub  # noqa: F401 (the fixture)
from tests.metrics_reference import parse_scrape, undocumented_or_missing, value
from tests.support.programs import ManagerRunner, manager_settings

CREATED = "work_hub_replicaset_works_created_total"
DELETED = "work_hub_replicaset_works_deleted_total"
TTL = "work_hub_ttl_deletions_total"


async def scrape(url: str) -> dict[str, Metric]:
    """The manager's /metrics, parsed."""
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200
        return parse_scrape(await response.text())


async def test_hub_series_after_a_rollout_a_departure_and_a_ttl_deletion(
    hub: Hub,  # noqa: F811 (the imported fixture)
    tmp_path: Path,
) -> None:
    runner = ManagerRunner(
        manager_settings(
            Path(hub.kubeconfig),
            feature_gates=frozenset(
                {GATE_MANIFEST_WORK_REPLICA_SET, GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK}
            ),
        )
    )
    await runner.start()
    assert runner.built is not None
    url = runner.built.manager.observability.url + "/metrics"
    try:
        before = await scrape(url)
        base = {name: value(before, name) or 0.0 for name in (CREATED, DELETED, TTL)}

        await hub.placement("all", [("", CLUSTERS[:3])])
        await hub.replica_set("rolled", [all_ref()])
        await hub.replica_set("waiting", [all_ref("missing")])
        await hub.wait_works("rolled", CLUSTERS[:3])
        await hub.succeed("rolled", CLUSTERS[:3])
        await hub.wait_condition("rolled", "PlacementRolledOut", "True", "Complete")
        await hub.decide("all", [("", CLUSTERS[:2])])  # cluster02 leaves
        await hub.wait_works("rolled", CLUSTERS[:2])

        # A completed work with a TTL of 0, outside any replica set: collected.
        body = {
            "apiVersion": MANIFESTWORKS.api_version,
            "kind": MANIFESTWORKS.kind,
            "metadata": {"name": "job", "namespace": CLUSTERS[5]},
            "spec": {
                "workload": {"manifests": []},
                "deleteOption": {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": 0},
            },
        }
        created = await hub.client.create(MANIFESTWORKS, body)
        complete = {
            "type": "Complete",
            "status": "True",
            "reason": "Completed",
            "message": "",
            "lastTransitionTime": format_time(now()),
        }
        await hub.client.patch(
            MANIFESTWORKS,
            "job",
            {"status": {"conditions": [complete]}},
            created["metadata"]["namespace"],
            subresource="status",
        )

        async def collected() -> bool:
            try:
                await hub.client.get(MANIFESTWORKS, "job", CLUSTERS[5])
            except NotFound:
                return True
            return False

        await eventually(collected, what="the completed work to be collected")

        scraped: dict[str, Metric] = {}

        async def counted() -> bool:
            scraped.clear()
            scraped.update(await scrape(url))
            states = {
                state: value(scraped, "work_hub_manifestworkreplicasets", state=state)
                for state in ("Complete", "Progressing", "Deleting", "Unknown")
            }
            return states == {"Complete": 1, "Progressing": 0, "Deleting": 0, "Unknown": 1}

        await eventually(counted, what="replica sets by rollout state")
    finally:
        assert await runner.stop() == 0

    families = scraped
    assert undocumented_or_missing(families, "hub", exhaustive=False) == []
    assert value(families, CREATED) == base[CREATED] + 3
    assert value(families, DELETED) == base[DELETED] + 1
    assert value(families, TTL) == base[TTL] + 1
