"""The status controller against a hub and a spoke (spec/agent.md sections 9-14).

The spoke simulates workload controllers (``simulate_workloads``: kubesim's
own, or :mod:`tests.support.workloads` on a real control plane): Deployments,
DaemonSets and Pods become ready and Jobs complete shortly after they are
applied, so availability, status feedback and condition rules have real
status to read. Every wait is :func:`tests.conftest.eventually` on an
observable state; nothing sleeps to synchronise.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from demo.examples import hello_deployment
from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, DEPLOYMENTS, JOBS, MANIFESTWORKS, NAMESPACES, KubeClient
from tests.conftest import eventually
from tests.integration.conftest import (
    condition_is,
    configmap,
    create_and_wait,
    exists,
    get_work,
    manifest_condition,
    manifest_statuses,
    update_work,
    values_of,
    wait_applied,
    wait_work,
    work_body,
    work_condition,
)
from tests.support.manifests import json_paths, manifest_config
from tests.support.programs import CLUSTER, AgentRunner, agent_settings
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.settings import FEATURE_RAW_FEEDBACK_JSON_STRING
from workagent.watchpool import FeedbackWatchPool

#: Poll often: a status sync every 0.3 s x [0.8, 1).
FAST = 0.3

HELLO = hello_deployment()

_POD_SPEC = {"containers": [{"name": "main", "image": "busybox"}], "restartPolicy": "Never"}

DAEMONSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "default"},
    "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        },
    },
}


def job(name: str) -> dict[str, Any]:
    """A Job manifest the simulator completes."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"spec": _POD_SPEC}},
    }


POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "runner", "namespace": "default"},
    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
}


@pytest.fixture
def spoke_options() -> dict[str, Any]:
    """The spoke writes the status workload controllers would."""
    return {"simulate_workloads": True}


@contextlib.asynccontextmanager
async def running_agent(tmp_path: Path, **overrides: Any) -> AsyncIterator[AgentRunner]:
    """The real agent with these settings (a fast status sync unless overridden)."""
    overrides.setdefault("status_sync_interval", FAST)
    async with AgentRunner(agent_settings(tmp_path, **overrides)) as runner:
        yield runner


WELL_KNOWN = {"type": "WellKnownStatus"}


def cel(condition: str, *expressions: str, **extra: str) -> dict[str, Any]:
    """A CEL condition rule."""
    return {"type": "CEL", "condition": condition, "celExpressions": list(expressions), **extra}


def integer(n: int) -> dict[str, Any]:
    return {"type": "Integer", "integer": n}


def string(s: str) -> dict[str, Any]:
    return {"type": "String", "string": s}


def brief(cond: dict[str, Any] | None) -> tuple[Any, ...] | None:
    """(status, reason, message) of a condition."""
    return None if cond is None else (cond["status"], cond["reason"], cond.get("message", ""))


def briefs(work: dict[str, Any], *where: tuple[int | None, str]) -> list[tuple[Any, ...] | None]:
    """:func:`brief` of each (manifest ordinal, type) condition of ``work``; an ordinal of
    None names the work's own condition."""
    return [
        brief(
            work_condition(work, ctype)
            if ordinal is None
            else manifest_condition(work, ordinal, ctype)
        )
        for ordinal, ctype in where
    ]


def pool_of(runner: AgentRunner) -> FeedbackWatchPool:
    assert runner.agent is not None and runner.agent.deps.watch_pool is not None
    return runner.agent.deps.watch_pool


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def status_syncs() -> float:
    """Successful status syncs so far (each one requeues itself after the interval)."""
    return sample(
        "controller_runtime_reconcile_total",
        {"controller": "AvailableStatusController", "result": "requeue_after"},
    )


# -- tests --------------------------------------------------------------------------------


async def test_seed_feedback_of_the_hello_deployment(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """The seeds' example: WellKnownStatus plus an ``isAvailable`` JSONPath, polled."""
    manifests = [HELLO, configmap("plain")]
    configs = [
        manifest_config(
            "apps",
            "deployments",
            "hello",
            feedback=[
                WELL_KNOWN,
                json_paths(("isAvailable", '.status.conditions[?(@.type=="Available")].status')),
            ],
        )
    ]
    async with running_agent(tmp_path):
        work = await create_and_wait(
            hub_client,
            work_body("hello-work-demo", manifests, manifestConfigs=configs),
            lambda w: len(values_of(w, 0)) == 4,
            "the hello deployment's feedback",
        )
    assert values_of(work, 0) == [
        ("ReadyReplicas", integer(1)),
        ("Replicas", integer(1)),
        ("AvailableReplicas", integer(1)),
        ("isAvailable", string("True")),
    ]
    generation = work["metadata"]["generation"]
    for ordinal, synced_reason in ((0, "StatusFeedbackSynced"), (1, "NoStatusFeedbackSynced")):
        entry = manifest_statuses(work)[ordinal]
        assert [c["type"] for c in entry["conditions"]] == [
            "Applied",
            "Available",
            "StatusFeedbackSynced",
        ]
        available = manifest_condition(work, ordinal, "Available")
        assert brief(available) == ("True", "ResourceAvailable", "Resource is available")
        assert available is not None and "observedGeneration" not in available
        assert brief(manifest_condition(work, ordinal, "StatusFeedbackSynced")) == (
            "True",
            synced_reason,
            "",
        )
    assert values_of(work, 1) == []
    available = work_condition(work, "Available")
    assert brief(available) == ("True", "ResourcesAvailable", "All resources are available")
    assert available is not None and available["observedGeneration"] == generation


async def test_converged_work_makes_no_hub_writes(
    hub: Cluster, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """Unchanged values and conditions cost no write, however often the status is synced."""
    configs = [manifest_config("apps", "deployments", "hello", feedback=[WELL_KNOWN])]
    async with running_agent(tmp_path, status_sync_interval=0.1):
        work = await create_and_wait(
            hub_client,
            work_body("quiet", [HELLO], manifestConfigs=configs),
            lambda w: len(values_of(w, 0)) == 3 and work_condition(w, "Available") is not None,
            "the feedback to converge",
        )
        requests = RequestRecord(hub)
        before = status_syncs()

        async def synced_again() -> bool:
            return status_syncs() >= before + 5

        await eventually(synced_again, what="five more status syncs")
        made = requests.writes()
        assert made == [], made
    assert (await get_work(hub_client, "quiet"))["metadata"]["resourceVersion"] == work["metadata"][
        "resourceVersion"
    ]


async def test_well_known_status_of_each_kind(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """Deployment, DaemonSet, Job and Pod templates; any other kind is an error."""
    manifests = [HELLO, DAEMONSET, job("batch"), POD, configmap("no-template")]
    configs = [
        manifest_config("apps", "deployments", "hello", feedback=[WELL_KNOWN]),
        manifest_config("apps", "daemonsets", "agent", feedback=[WELL_KNOWN]),
        manifest_config("batch", "jobs", "batch", feedback=[WELL_KNOWN]),
        manifest_config("", "pods", "runner", feedback=[WELL_KNOWN]),
        manifest_config("", "configmaps", "no-template", feedback=[WELL_KNOWN]),
    ]
    expected = {
        0: [
            ("ReadyReplicas", integer(1)),
            ("Replicas", integer(1)),
            ("AvailableReplicas", integer(1)),
        ],
        1: [
            ("NumberReady", integer(1)),
            ("DesiredNumberScheduled", integer(1)),
            ("NumberAvailable", integer(1)),
        ],
        2: [("JobComplete", string("True")), ("JobSucceeded", integer(1))],
        3: [("PodReady", string("True")), ("PodPhase", string("Running"))],
    }
    async with running_agent(tmp_path):
        work = await create_and_wait(
            hub_client,
            work_body("kinds", manifests, manifestConfigs=configs),
            lambda w: all(values_of(w, i) == v for i, v in expected.items()),
            "well-known values of every kind",
        )
    for ordinal in expected:
        assert brief(manifest_condition(work, ordinal, "StatusFeedbackSynced")) == (
            "True",
            "StatusFeedbackSynced",
            "",
        )
    assert values_of(work, 4) == []
    assert brief(manifest_condition(work, 4, "StatusFeedbackSynced")) == (
        "False",
        "StatusFeedbackSyncFailed",
        "Sync status feedback failed with error "
        "cannot find the wellknown statuses for resource with gvk /v1, Kind=ConfigMap",
    )


async def test_json_paths(hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path) -> None:
    """Any field can be read; missing ones are skipped; a wrong version is an error, and
    without RawFeedbackJsonString a list is one too, while the other values stay."""
    manifests = [configmap("paths", test="some value"), HELLO]
    configs = [
        manifest_config(
            "",
            "configmaps",
            "paths",
            feedback=[
                json_paths(
                    ("test", ".data.test"),
                    ("name", ".metadata.name"),
                    ("missing", ".data.missing"),
                )
            ],
        ),
        manifest_config(
            "apps",
            "deployments",
            "hello",
            feedback=[
                json_paths(
                    ("replicas", ".status.replicas"),
                    ("other-version", ".status.replicas", "v1beta1"),
                    ("conds", ".status.conditions"),
                )
            ],
        ),
    ]
    async with running_agent(tmp_path):
        work = await create_and_wait(
            hub_client,
            work_body("paths", manifests, manifestConfigs=configs),
            lambda w: bool(values_of(w, 0)) and bool(values_of(w, 1)),
            "values of both manifests",
        )
    assert values_of(work, 0) == [("test", string("some value")), ("name", string("paths"))]
    assert values_of(work, 1) == [("replicas", integer(1))]
    assert briefs(work, (0, "StatusFeedbackSynced"), (1, "StatusFeedbackSynced")) == [
        ("True", "StatusFeedbackSynced", ""),
        (
            "False",
            "StatusFeedbackSyncFailed",
            "Sync status feedback failed with error [version set in the path other-version is "
            "not matched for the related resource, the type []interface {} of the value for "
            "conds is not found]",
        ),
    ]


async def test_json_raw_with_the_feature_gate(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """With RawFeedbackJsonString a list is reported as compact JSON text."""
    configs = [
        manifest_config(
            "apps",
            "deployments",
            "hello",
            feedback=[json_paths(("conds", ".status.conditions"))],
        )
    ]
    gates = frozenset({FEATURE_RAW_FEEDBACK_JSON_STRING})
    async with running_agent(tmp_path, feature_gates=gates):
        work = await create_and_wait(
            hub_client,
            work_body("raw", [HELLO], manifestConfigs=configs),
            lambda w: bool(values_of(w, 0)),
            "the raw conditions value",
        )
    [(name, value)] = values_of(work, 0)
    assert (name, value["type"]) == ("conds", "JsonRaw")
    live = await spoke_client.get(DEPLOYMENTS, "hello", "default")
    # Go's encoding: keys sorted, no spaces.
    assert value["jsonRaw"] == json.dumps(
        live["status"]["conditions"], sort_keys=True, separators=(",", ":")
    )
    assert brief(manifest_condition(work, 0, "StatusFeedbackSynced"))[:2] == (  # type: ignore[index]
        "True",
        "StatusFeedbackSynced",
    )


async def test_watch_mode_reports_changes_without_waiting(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """With ``feedbackScrapeType: Watch`` a status change reaches the hub at once,
    long before the (60 s) status sync interval."""
    configs = [
        manifest_config("apps", "deployments", "hello", feedback=[WELL_KNOWN], scrape="Watch")
    ]
    async with running_agent(tmp_path, status_sync_interval=60) as runner:
        await hub_client.create(
            MANIFESTWORKS, work_body("watched", [HELLO], manifestConfigs=configs)
        )
        await wait_work(
            hub_client,
            "watched",
            lambda w: ("ReadyReplicas", integer(1)) in values_of(w, 0),
            "the first feedback",
        )
        pool = pool_of(runner)
        assert pool.is_watched("apps", "deployments", "default", "hello", "watched")
        assert sample("feedback_watch_pool_informers") == 1
        assert sample("feedback_watch_pool_registrations") == 1

        # Scaled by hand (a foreign change to a field the manifest does not set): the
        # workload simulator then reports 3 ready replicas, and keeps reporting them.
        await spoke_client.patch(
            DEPLOYMENTS, "hello", {"spec": {"replicas": 3}}, "default", patch_type="merge"
        )
        work = await wait_work(
            hub_client,
            "watched",
            lambda w: ("ReadyReplicas", integer(3)) in values_of(w, 0),
            "the changed status on the hub",
        )
    assert values_of(work, 0) == [
        ("ReadyReplicas", integer(3)),
        ("Replicas", integer(3)),
        ("AvailableReplicas", integer(3)),
    ]
    assert sample("feedback_watch_pool_informers") == 0  # stopped with the agent


async def test_watch_limit_falls_back_to_poll_and_promotes(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """With room for two informers the third namespace is polled, and is watched once a
    deleted work frees a slot."""
    names = ("wa", "wb", "wc")
    for name in names:
        await spoke_client.create(NAMESPACES, {"metadata": {"name": f"ns-{name}"}})
    before = sample("feedback_watch_fallbacks_total")
    async with running_agent(tmp_path, max_feedback_watch=2) as runner:
        pool = pool_of(runner)
        for name in names:
            configs = [
                manifest_config(
                    "",
                    "configmaps",
                    "cm",
                    f"ns-{name}",
                    feedback=[json_paths(("key", ".data.key"))],
                    scrape="Watch",
                )
            ]
            body = work_body(name, [configmap("cm", f"ns-{name}")], manifestConfigs=configs)
            await hub_client.create(MANIFESTWORKS, body)
        for name in names:
            # The one left out is still polled.
            await wait_work(
                hub_client, name, lambda w: bool(values_of(w, 0)), f"feedback of work {name}"
            )

        def watched() -> list[str]:
            return [n for n in names if pool.is_watched("", "configmaps", f"ns-{n}", "cm", n)]

        async def two_watched() -> bool:
            return len(watched()) == 2

        await eventually(two_watched, what="two of the three resources watched")
        assert len(pool.watched()) == 2
        assert sample("feedback_watch_pool_informers") == 2
        assert sample("feedback_watch_fallbacks_total") - before == 1
        [polled] = [n for n in names if n not in watched()]

        await hub_client.delete(MANIFESTWORKS, watched()[0], CLUSTER)

        async def promoted() -> bool:
            return polled in watched() and len(pool.watched()) == 2

        await eventually(promoted, what=f"work {polled} promoted to a watch")
        assert sample("feedback_watch_pool_registrations") == 2
        assert sample("feedback_watch_fallbacks_total") - before == 1


async def test_switching_to_poll_releases_the_watch(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """Scrape type Watch -> Poll: the registration goes, and with it the informer."""
    feedback = [json_paths(("key", ".data.key"))]
    configs = [manifest_config("", "configmaps", "switch", feedback=feedback, scrape="Watch")]
    async with running_agent(tmp_path) as runner:
        pool = pool_of(runner)
        await hub_client.create(
            MANIFESTWORKS, work_body("switch", [configmap("switch")], manifestConfigs=configs)
        )

        async def is_watched() -> bool:
            return pool.is_watched("", "configmaps", "default", "switch", "switch")

        await eventually(is_watched, what="the configmap to be watched")

        def to_poll(work: dict[str, Any]) -> None:
            work["spec"]["manifestConfigs"][0]["feedbackScrapeType"] = "Poll"

        generation = (await update_work(hub_client, "switch", to_poll))["metadata"]["generation"]

        async def released() -> bool:
            return not pool.registrations() and not pool.watched()

        await eventually(released, what="the watch to be released")
        assert sample("feedback_watch_pool_informers") == 0
        assert sample("feedback_watch_pool_registrations") == 0
        # The release happens inside the reconcile whose status write follows it
        # (and the first write may have lost a conflict to the spec update), so
        # the values are read from the status written for the new generation.
        await wait_work(
            hub_client,
            "switch",
            lambda w: (
                (work_condition(w, "Applied") or {}).get("observedGeneration") == generation
                and values_of(w, 0) == [("key", string("value"))]
            ),
            "the polled feedback in the status of the new generation",
        )


async def test_job_completion_completes_and_freezes_the_work(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A WellKnownConditions ``Complete`` rule on a Job: once it is True the work is
    Complete and no longer applied, while its status is still reported."""
    rules = [{"type": "WellKnownConditions", "condition": "Complete"}]
    configs = [manifest_config("batch", "jobs", "once", rules=rules)]
    async with running_agent(tmp_path) as runner:
        work = await create_and_wait(
            hub_client,
            work_body("batch", [job("once")], manifestConfigs=configs),
            condition_is("Complete"),
            "the work to complete",
        )
        generation = work["metadata"]["generation"]
        cond = manifest_condition(work, 0, "Complete")
        assert brief(cond) == ("True", "ConditionRuleEvaluated", "Job is finished")
        assert cond is not None and cond["observedGeneration"] == generation
        cond = work_condition(work, "Complete")
        assert brief(cond) == ("True", "ConditionRulesAggregated", "Job is finished")
        assert cond is not None and cond["observedGeneration"] == generation

        assert runner.agent is not None
        applies = {"controller": "manifestwork-controller", "result": "success"}
        frozen_before = sample("controller_runtime_reconcile_total", applies)
        await update_work(
            hub_client,
            "batch",
            lambda w: w["spec"]["workload"]["manifests"].append(configmap("late")),
        )

        async def apply_loop_passed() -> bool:
            # A frozen work's reconcile ends at once with "success" (no requeue).
            return sample("controller_runtime_reconcile_total", applies) > frozen_before

        await eventually(apply_loop_passed, what="the apply loop to see the new spec")
        assert not await exists(spoke_client, CONFIGMAPS, "late", "default")
        # Status syncing goes on: the work-level conditions follow the new generation.
        work = await wait_work(
            hub_client,
            "batch",
            lambda w: (
                (work_condition(w, "Available") or {}).get("observedGeneration") == generation + 1
            ),
            "the status of the new generation",
        )
        assert (work_condition(work, "Applied") or {}).get("observedGeneration") == generation
        assert (work_condition(work, "Complete") or {}).get("status") == "True"
        assert len(manifest_statuses(work)) == 1


async def test_completed_manifest_is_not_reapplied_after_a_spec_change(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A manifest whose ``Complete`` is True is skipped by later applies; a CEL rule that
    is literally ``false`` keeps the work itself from completing."""
    configs = [
        manifest_config(
            "batch",
            "jobs",
            "first",
            rules=[{"type": "WellKnownConditions", "condition": "Complete"}],
        ),
        manifest_config("", "configmaps", "never", rules=[cel("Complete", "false")]),
    ]
    manifests = [job("first"), configmap("never", key="v1")]
    async with running_agent(tmp_path):
        work = await create_and_wait(
            hub_client,
            work_body("partly", manifests, manifestConfigs=configs),
            lambda w: (
                (manifest_condition(w, 0, "Complete") or {}).get("status") == "True"
                and work_condition(w, "Complete") is not None
            ),
            "the job to complete",
        )
        assert briefs(work, (1, "Complete"), (None, "Complete")) == [
            ("False", "ConditionRuleEvaluated", "Manifest is not Complete"),
            ("False", "ConditionRulesAggregated", "Aggregated from 2 manifest conditions"),
        ]

        changed = copy.deepcopy(job("first"))
        changed["metadata"]["labels"] = {"edited": "yes"}

        def edit(work: dict[str, Any]) -> None:
            work["spec"]["workload"]["manifests"] = [changed, configmap("never", key="v2")]

        written = await update_work(hub_client, "partly", edit)
        done = await wait_applied(
            hub_client, "partly", generation=written["metadata"]["generation"]
        )
        assert (await spoke_client.get(CONFIGMAPS, "never", "default"))["data"] == {"key": "v2"}
        live = await spoke_client.get(JOBS, "first", "default")
        assert "edited" not in (live["metadata"].get("labels") or {})
        assert (manifest_condition(done, 0, "Applied") or {}).get("status") == "True"


async def test_cel_rules_and_work_level_aggregation(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """CEL rules with a messageExpression, their aggregation to the work, removal of a
    rule's condition with the rule, and Available aggregation when a resource is gone."""
    ready = cel(
        "Ready",
        "object.status.readyReplicas == 1",
        messageExpression="result ? 'ready replicas: ' + string(object.status.readyReplicas) : 'no'",
    )
    configs = [
        manifest_config("apps", "deployments", "hello", rules=[ready, cel("Degraded", "false")]),
        manifest_config("", "configmaps", "side", rules=[cel("Degraded", "true")]),
    ]
    async with running_agent(tmp_path):
        work = await create_and_wait(
            hub_client,
            work_body("rules", [HELLO, configmap("side")], manifestConfigs=configs),
            condition_is("Ready"),
            "the deployment to be Ready",
        )
        generation = work["metadata"]["generation"]
        assert briefs(
            work,
            (0, "Ready"),
            (None, "Ready"),
            (0, "Degraded"),
            (1, "Degraded"),
            (None, "Degraded"),
        ) == [
            ("True", "ConditionRuleEvaluated", "ready replicas: 1"),
            ("True", "ConditionRulesAggregated", "ready replicas: 1"),
            ("False", "ConditionRuleEvaluated", "Manifest is not Degraded"),
            ("True", "ConditionRuleEvaluated", "Manifest is Degraded"),
            ("False", "ConditionRulesAggregated", "Aggregated from 2 manifest conditions"),
        ]
        degraded = work_condition(work, "Degraded")
        assert degraded is not None and degraded["observedGeneration"] == generation
        work_types = [c["type"] for c in work["status"]["conditions"]]
        assert sorted(work_types) == ["Applied", "Available", "Degraded", "Ready"]

        # A resource gone from the spoke: the apply loop recreates it only on its
        # next resync, the status shows it at once.
        await spoke_client.delete(CONFIGMAPS, "side", "default")
        work = await wait_work(
            hub_client,
            "rules",
            condition_is("Available", "False"),
            "the work to be unavailable",
        )
        assert briefs(work, (1, "Available"), (None, "Available")) == [
            ("False", "ResourceNotAvailable", "Resource is not available"),
            ("False", "ResourcesNotAvailable", "1 of 2 resources are not available"),
        ]

        # The Degraded rules leave the spec: their conditions leave the status.
        def without_degraded(work: dict[str, Any]) -> None:
            work["spec"]["manifestConfigs"] = [
                manifest_config("apps", "deployments", "hello", rules=[ready]),
                manifest_config(
                    "", "configmaps", "side", feedback=[json_paths(("key", ".data.key"))]
                ),
            ]

        await update_work(hub_client, "rules", without_degraded)
        work = await wait_work(
            hub_client,
            "rules",
            lambda w: (
                work_condition(w, "Degraded") is None
                and (work_condition(w, "Available") or {}).get("status") == "True"
                and (work_condition(w, "Ready") or {}).get("observedGeneration") == generation + 1
            ),
            "the Degraded conditions to go",
        )
        assert manifest_condition(work, 0, "Degraded") is None
        assert manifest_condition(work, 1, "Degraded") is None
        assert brief(work_condition(work, "Available")) == (
            "True",
            "ResourcesAvailable",
            "All resources are available",
        )


async def rule_briefs(
    hub_client: KubeClient,
    tmp_path: Path,
    work_name: str,
    config_map: dict[str, Any],
    rules: list[dict[str, Any]],
) -> list[tuple[Any, ...] | None]:
    """The conditions these rules give one ConfigMap, as the real agent reports them."""
    name = config_map["metadata"]["name"]
    configs = [manifest_config("", "configmaps", name, rules=rules)]
    types = [rule["condition"] for rule in rules]
    async with running_agent(tmp_path):
        work = await create_and_wait(
            hub_client,
            work_body(work_name, [config_map], manifestConfigs=configs),
            lambda w: all(manifest_condition(w, 0, t) for t in types),
            "the rule conditions",
        )
    return briefs(work, *((0, t) for t in types))


@pytest.mark.usefixtures("spoke_client")
async def test_cel_rules_with_the_kubernetes_url_ip_cidr_and_semver_libraries(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    """CEL rules reading a ConfigMap with ``url()``, ``ip()``, ``cidr()`` and ``semver()``:
    true, false and a bad address (the condition carries Kubernetes' error text)."""
    settings = configmap(
        "network",
        endpoint="https://api.example.com:8443/v1?region=eu",
        address="10.1.2.3",
        network="10.0.0.0/8",
        version="1.27.3",
        bad="1.2.3",
    )
    routable = cel(
        "Routable",
        "cidr(object.data.network).containsIP(ip(object.data.address))",
        "url(object.data.endpoint).getPort() == '8443'",
        "url(object.data.endpoint).getQuery()['region'] == ['eu']",
        "semver(object.data.version).isGreaterThan(semver('1.20.0'))",
        messageExpression="'via ' + url(object.data.endpoint).getHostname()",
    )
    public = cel("Public", "!cidr('10.0.0.0/8').containsIP(object.data.address)")
    parsed = cel("Parsed", "ip(object.data.bad).family() == 4")
    rules = [routable, public, parsed]
    assert await rule_briefs(hub_client, tmp_path, "netrules", settings, rules) == [
        ("True", "ConditionRuleEvaluated", "via api.example.com"),
        ("False", "ConditionRuleEvaluated", "Manifest is not Public"),
        (
            "False",
            "ConditionRuleExpressionError",
            'IP Address "1.2.3" parse error during conversion from string: '
            'ParseAddr("1.2.3"): IPv4 address too short',
        ),
    ]


@pytest.mark.usefixtures("spoke_client")
async def test_cel_rules_with_optional_fields_and_named_formats(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    """CEL rules reading fields that may be missing with optional types (``.?``,
    ``orValue``), a named format's validation as the message, and an empty optional
    as a rule's result (OCM's ``expected bool result, got <nil>``)."""
    settings = configmap("optional", label="Not_A_Label", replicas="3")
    present = cel(
        "Configured",
        "object.?data.?replicas.orValue('0') == '3'",
        "!object.?data.?paused.hasValue()",
        "[?object.?data.?missing, ?object.?data.?replicas] == ['3']",
    )
    named = cel(
        "Named",
        "format.dns1123Label().validate(object.data.label) == optional.none()",
        messageExpression="format.dns1123Label().validate(object.data.label)"
        ".orValue(['valid']).join('; ')",
    )
    empty = cel("Missing", "object.?data.?missing")
    rules = [present, named, empty]
    assert await rule_briefs(hub_client, tmp_path, "optrules", settings, rules) == [
        ("True", "ConditionRuleEvaluated", "Manifest is Configured"),
        (
            "False",
            "ConditionRuleEvaluated",
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
            "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        ("False", "ConditionRuleExpressionError", "expected bool result, got <nil>"),
    ]


#: OCM's cost limits, as its agent applies them: a run over 1,000,000 units is
#: cancelled, the rules of a manifest share 10,000,000 (the runs that failed take
#: nothing), message expressions are not costed. contains() of two strings of n
#: characters costs ceil(n / 10) squared: the limits are reached in microseconds.
#: OCM's own agent gives the same conditions (tests/cloudevents/test_ocm_agent_interop.py).
COST_CONFIGMAP = configmap("costs", big="a" * 10_010, near="b" * 9_990)
_COSTLY = "object.data.big.contains(object.data.big)"
COST_RULES = [
    cel("Limit", _COSTLY),
    *(cel(f"Near{i}", "object.data.near.contains(object.data.near)") for i in range(11)),
    cel("Message", "true", messageExpression=f"{_COSTLY} ? 'costly' : 'cheap'"),
]
COST_BRIEFS = [
    ("False", "ConditionRuleExpressionError", "operation cancelled: actual cost limit exceeded"),
    *(("True", "ConditionRuleEvaluated", f"Manifest is Near{i}") for i in range(10)),
    ("False", "ConditionRuleExpressionError", "CEL evaluation budget exceeded"),
    ("True", "ConditionRuleEvaluated", "costly"),
]


@pytest.mark.usefixtures("spoke_client")
async def test_cel_cost_limits_as_in_ocm(hub_client: KubeClient, tmp_path: Path) -> None:
    assert await rule_briefs(hub_client, tmp_path, "costs", COST_CONFIGMAP, COST_RULES) == (
        COST_BRIEFS
    )


@pytest.mark.kubesim_only("fault injection: the spoke answers GETs of Deployments 500")
async def test_unreadable_resource_is_unknown_and_keeps_its_rule_conditions(
    spoke: KubeSim, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A resource the spoke will not serve is Available=Unknown with the API server's
    message; the conditions of its rules keep their last value until it is readable."""
    ready = cel("Ready", "object.status.readyReplicas == 1")
    configs = [manifest_config("apps", "deployments", "hello", rules=[ready])]
    async with running_agent(tmp_path):
        await hub_client.create(
            MANIFESTWORKS, work_body("unread", [HELLO], manifestConfigs=configs)
        )
        await wait_work(
            hub_client,
            "unread",
            condition_is("Ready"),
            "the deployment to be Ready",
        )
        fault = spoke.inject(verb="get", resource="deployments", code=500)
        work = await wait_work(
            hub_client,
            "unread",
            lambda w: (manifest_condition(w, 0, "Available") or {}).get("status") == "Unknown",
            "the deployment to be unreadable",
        )
        status, reason, message = brief(manifest_condition(work, 0, "Available"))  # type: ignore[misc]
        assert (status, reason) == ("Unknown", "FetchingResourceFailed")
        assert message.startswith("Failed to fetch resource: ")
        # The rule conditions of an unreadable resource keep their last value.
        assert (manifest_condition(work, 0, "Ready") or {}).get("status") == "True"
        spoke.state.faults.rules.remove(fault)
        await wait_work(
            hub_client,
            "unread",
            lambda w: (manifest_condition(w, 0, "Available") or {}).get("status") == "True",
            "the deployment to be readable again",
        )


async def test_a_work_no_longer_complete_applies_the_spec_it_got_while_frozen(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A new spec whose rules end the work's ``Complete`` arrives while the work is still
    frozen; once the status drops ``Complete``, that spec is applied (OCM's periodic
    resync does it within minutes; here the status change itself triggers the apply)."""
    done = [manifest_config("", "configmaps", "flag", rules=[cel("Complete", "true")])]
    async with running_agent(tmp_path):
        await create_and_wait(
            hub_client,
            work_body("thaw", [configmap("flag")], manifestConfigs=done),
            condition_is("Complete"),
            "the work to complete",
        )

        def thaw(work: dict[str, Any]) -> None:
            work["spec"]["manifestConfigs"] = [
                manifest_config("", "configmaps", "flag", rules=[cel("Complete", "false")])
            ]
            work["spec"]["workload"]["manifests"].append(configmap("late"))

        written = await update_work(hub_client, "thaw", thaw)
        work = await wait_applied(hub_client, "thaw", generation=written["metadata"]["generation"])
        assert (work_condition(work, "Complete") or {}).get("status") != "True"
        assert await exists(spoke_client, CONFIGMAPS, "late", "default")
