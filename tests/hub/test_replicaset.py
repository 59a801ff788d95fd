"""The ManifestWorkReplicaSet controller against one hub: kubesim, and a real kube-apiserver.

No scheduler and no agent run: each test creates Placements and
PlacementDecisions itself, and plays the agent by writing conditions on the
generated works' ``/status``. The controller runs in-process, built with
``build_replicaset_controller(HubDeps(...))``. Waits use ``eventually``.

The first section unit-tests the pure work helpers (rollout status from work
conditions, generated work shape) without a server.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hubcontroller.controllers.replicaset import build_replicaset_controller
from hubcontroller.controllers.replicaset_cache import WorkJudgements
from hubcontroller.controllers.replicaset_recent import RecentWrites
from hubcontroller.controllers.replicaset_works import (
    cluster_rollout_status,
    comparable_spec,
    desired_work,
    spec_written_at,
)
from hubcontroller.deps import HubDeps
from hubcontroller.rollout import RolloutStatus
from ocmkit.govalues import go_bytes
from ocmkit.kube import (
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    KubeClient,
)
from ocmkit.kube.mergepatch import merge_patch
from ocmkit.runtime import Controller, Informer
from ocmkit.validation import label_value
from schemas.meta import format_time, parse_time
from schemas.wire import (
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PLACEMENT_VERIFIED,
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    MANIFEST_WORK_REPLICA_SET_FINALIZER,
    MANIFEST_WORK_REPLICA_SET_LABEL,
    PLACEMENT_LABEL,
    PLACEMENT_NAME_LABEL,
)
from tests.conftest import eventually
from tests.integration.conftest import exists
from tests.support.manifests import configmap
from tests.support.prepare import install_crds, typed
from tests.support.targets import Cluster

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
S = RolloutStatus

# =========================================================================================
# Pure helpers
# =========================================================================================


def cond(kind: str, status: str, generation: int | None = 1, at: datetime = T0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": kind,
        "status": status,
        "reason": "Test",
        "message": "",
        "lastTransitionTime": format_time(at),
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def work_with(*conditions: dict[str, Any], generation: int = 1, **meta: Any) -> dict[str, Any]:
    metadata = {"name": "w", "namespace": "c1", "generation": generation, **meta}
    return {"metadata": metadata, "spec": {}, "status": {"conditions": list(conditions)}}


class TestClusterRolloutStatus:
    def test_progressing_condition_follows_ocm(self) -> None:
        applied = cond("Applied", "True")
        cases = [
            ([applied, cond("Progressing", "True")], S.PROGRESSING),
            ([applied, cond("Progressing", "False")], S.SUCCEEDED),
            ([applied, cond("Progressing", "Unknown")], S.PROGRESSING),
            ([applied, cond("Progressing", "True"), cond("Degraded", "True")], S.FAILED),
            ([applied, cond("Progressing", "False"), cond("Degraded", "True")], S.SUCCEEDED),
            # Applied not true, or stale, or a stale Degraded: ToApply as in OCM
            ([cond("Applied", "False"), cond("Progressing", "False")], S.TO_APPLY),
            ([cond("Applied", "True", 0), cond("Progressing", "False")], S.TO_APPLY),
            ([applied, cond("Progressing", "False"), cond("Degraded", "False", 0)], S.TO_APPLY),
        ]
        for conditions, expected in cases:
            assert cluster_rollout_status("c1", work_with(*conditions)).status is expected

    def test_progressing_times_come_from_the_right_condition(self) -> None:
        later = T0 + timedelta(minutes=3)
        failed = work_with(
            cond("Applied", "True"), cond("Progressing", "True"), cond("Degraded", "True", at=later)
        )
        assert cluster_rollout_status("c1", failed).last_transition_time == later
        done = work_with(cond("Applied", "True"), cond("Progressing", "False", at=later))
        assert cluster_rollout_status("c1", done).last_transition_time == later

    def test_plain_works_are_judged_by_applied_and_available(self) -> None:
        cases = [
            ([cond("Applied", "True"), cond("Available", "True")], S.SUCCEEDED),
            ([cond("Applied", "False")], S.FAILED),
            ([cond("Applied", "False"), cond("Available", "True")], S.FAILED),
            ([cond("Applied", "True"), cond("Available", "False")], S.PROGRESSING),
            ([cond("Applied", "True"), cond("Available", "Unknown")], S.PROGRESSING),
            ([cond("Applied", "True")], S.PROGRESSING),
            ([cond("Applied", "True"), cond("Available", "True", 0)], S.PROGRESSING),
            ([cond("Applied", "False", 0)], S.PROGRESSING),  # not this generation yet
            ([], S.PROGRESSING),
            # a stale Progressing condition does not count
            (
                [
                    cond("Applied", "True"),
                    cond("Available", "True"),
                    cond("Progressing", "True", 0),
                ],
                S.SUCCEEDED,
            ),
        ]
        for conditions, expected in cases:
            assert cluster_rollout_status("c1", work_with(*conditions)).status is expected

    def test_plain_work_time_is_never_before_the_spec_was_written(self) -> None:
        written = T0 + timedelta(hours=1)
        managed = [
            {
                "manager": "hub",
                "operation": "Update",
                "time": format_time(written),
                "fieldsV1": {"f:spec": {}},
            },
            {
                "manager": "agent",
                "operation": "Update",
                "subresource": "status",
                "time": format_time(written + timedelta(hours=1)),
                "fieldsV1": {"f:status": {}},
            },
        ]
        work = work_with(
            cond("Applied", "True"),
            cond("Available", "True"),
            managedFields=managed,
            creationTimestamp=format_time(T0),
        )
        assert spec_written_at(work) == written
        status = cluster_rollout_status("c1", work)
        assert status.status is S.SUCCEEDED and status.last_transition_time == written
        fresh = work_with(
            cond("Applied", "True", at=written + timedelta(minutes=5)),
            cond("Available", "True", at=written + timedelta(minutes=7)),
            managedFields=managed,
        )
        assert cluster_rollout_status("c1", fresh).last_transition_time == written + timedelta(
            minutes=7
        )

    def test_unreported_work_progresses_since_creation(self) -> None:
        work = work_with(creationTimestamp=format_time(T0))
        status = cluster_rollout_status("c1", work)
        assert status.status is S.PROGRESSING and status.last_transition_time == T0

    def test_relabelling_a_generation_does_not_move_its_time(self) -> None:
        # The controller's label-only merge patch moves its managedFields entry's time;
        # what counts is when the generation's spec was written.
        judgements = WorkJudgements()

        def seen(generation: int, version: str, written: datetime) -> datetime | None:
            managed = [{"manager": "hub", "time": format_time(written), "fieldsV1": {"f:spec": {}}}]
            work = work_with(
                cond("Applied", "True", generation),
                cond("Available", "True", generation),
                generation=generation,
                uid="u1",
                resourceVersion=version,
                managedFields=managed,
            )
            status = judgements.rollout_status("c1", work)
            assert status.status is S.SUCCEEDED
            return status.last_transition_time

        assert seen(1, "1", T0) == T0
        assert seen(1, "2", T0 + timedelta(hours=1)) == T0
        assert seen(2, "3", T0 + timedelta(hours=2)) == T0 + timedelta(hours=2)


def test_generated_work_shape() -> None:
    template = {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap"}]}}
    rs = {
        "metadata": {
            "name": "mw",
            "namespace": "ns",
            "labels": {"team": "a"},
            "annotations": {"x": "y"},
        },
        "spec": {"manifestWorkTemplate": template},
    }
    new = desired_work(rs, "c1", "p", None)
    assert new["metadata"] == {
        "namespace": "c1",
        "generateName": "mw",
        "labels": {
            "team": "a",
            MANIFEST_WORK_REPLICA_SET_LABEL: "ns.mw",
            PLACEMENT_NAME_LABEL: "p",
        },
    }
    assert new["spec"] == template and new["spec"] is not template
    assert desired_work(rs, "c1", "p", "mw-abcde")["metadata"]["name"] == "mw-abcde"


def test_spec_comparison_ignores_creation_timestamps_and_empties() -> None:
    a: dict[str, Any] = {
        "workload": {
            "manifests": [
                {
                    "kind": "Deployment",
                    "metadata": {"name": "d"},
                    "spec": {"template": {"metadata": {"labels": {"a": "b"}}}},
                }
            ]
        }
    }
    b: dict[str, Any] = copy.deepcopy(a)
    b["workload"]["manifests"][0]["metadata"]["creationTimestamp"] = None
    b["workload"]["manifests"][0]["spec"]["template"]["metadata"]["creationTimestamp"] = None
    b["manifestConfigs"] = []
    assert comparable_spec(a) == comparable_spec(b)
    b["workload"]["manifests"][0]["metadata"]["name"] = "e"
    assert comparable_spec(a) != comparable_spec(b)


def test_owner_label_validation() -> None:
    # apimachinery v0.35's IsValidLabelValue (content.IsLabelValue): lengths in bytes.
    assert label_value("ns.name") == []
    assert label_value("n" * 64) == ["must be no more than 63 bytes"]
    assert label_value(go_bytes("é" * 32)) == [
        "must be no more than 63 bytes",
        "a valid label must be an empty string or consist of alphanumeric characters, '-', "
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
        "or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]


def test_merge_patch() -> None:
    old = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1]}
    new = {"a": 1, "b": {"c": 2}, "l": [1, 2], "e": "x"}
    assert merge_patch(old, new) == {"b": {"d": None}, "l": [1, 2], "e": "x"}


def test_recent_writes_hide_a_stale_cache_until_it_catches_up() -> None:
    clock = [0.0]
    recent = RecentWrites(clock=lambda: clock[0], ttl=60)
    before = {"metadata": {"uid": "u1", "resourceVersion": "5"}, "spec": {"v": 1}}
    after = {"metadata": {"uid": "u1", "resourceVersion": "9"}, "spec": {"v": 2}}
    created = {"metadata": {"uid": "u2", "resourceVersion": "7"}}
    recent.remember("o", after, "5")
    recent.remember("o", created, None)
    assert recent.overlay("o", [before]) == [after, created]
    assert recent.latest("o", before) == after
    # the informer caught up with both writes
    assert recent.overlay("o", [after, created]) == [after, created]
    assert recent.overlay("o", [before]) == [before]
    # a created object the informer never shows is forgotten after the TTL
    recent.remember("o", created, None)
    clock[0] = 61.0
    assert recent.overlay("o", []) == []
    # a deleted one is hidden until the cache drops it too
    recent.remember_deleted("o", "u2")
    assert recent.overlay("o", [created, after]) == [after]
    assert recent.overlay("o", [after]) == [after]
    assert recent.overlay("o", [created, after]) == [created, after]


# =========================================================================================
# Against a hub (each test on kubesim and on a real kube-apiserver)
# =========================================================================================

REPO = Path(__file__).resolve().parents[2]
CRD_FILES = (
    "work.open-cluster-management.io_manifestworks.yaml",
    "work.open-cluster-management.io_manifestworkreplicasets.yaml",
    "cluster.open-cluster-management.io_placements.yaml",
    "cluster.open-cluster-management.io_placementdecisions.yaml",
)
NS = "ocm-ns"
CLUSTERS = [f"cluster{i:02d}" for i in range(10)]
TEMPLATE: dict[str, Any] = {"workload": {"manifests": [configmap("demo", version="1")]}}

Group = tuple[str, Sequence[str]]  # (group name, clusters); the index is the position


@dataclass
class Hub:
    """The test's view of the hub: a client and helpers that play scheduler and agent."""

    client: KubeClient
    kubeconfig: Path
    controllers: list[Controller] = field(default_factory=list)

    # -- placements ---------------------------------------------------------------------
    async def placement(self, name: str, groups: Sequence[Group] | None = None) -> None:
        """A Placement with one PlacementDecision per group (status filled as a scheduler would)."""
        await self.client.create(
            PLACEMENTS, typed(PLACEMENTS, metadata={"name": name}, spec={}), NS
        )
        await self.decide(name, groups or [])

    async def decide(self, name: str, groups: Sequence[Group]) -> None:
        """Replace the placement's decisions and its status counts."""
        existing = await self.client.list(
            PLACEMENT_DECISIONS, NS, label_selector=f"{PLACEMENT_LABEL}={name}"
        )
        wanted = {f"{name}-decision-{i}": g for i, g in enumerate(groups)}
        for item in existing["items"]:
            if item["metadata"]["name"] not in wanted:
                await self.client.delete(PLACEMENT_DECISIONS, item["metadata"]["name"], NS)
        names = {item["metadata"]["name"] for item in existing["items"]}
        status_groups = []
        for index, (decision, (group, members)) in enumerate(wanted.items()):
            labels = {
                PLACEMENT_LABEL: name,
                DECISION_GROUP_INDEX_LABEL: str(index),
                DECISION_GROUP_NAME_LABEL: group,
            }
            if decision not in names:
                body = typed(PLACEMENT_DECISIONS, metadata={"name": decision, "labels": labels})
                await self.client.create(PLACEMENT_DECISIONS, body, NS)
            decisions = [{"clusterName": c, "reason": ""} for c in members]
            await self.client.patch(
                PLACEMENT_DECISIONS,
                decision,
                {"status": {"decisions": decisions}},
                NS,
                subresource="status",
            )
            status_groups.append(
                {
                    "decisionGroupIndex": index,
                    "decisionGroupName": group,
                    "decisions": [decision],
                    "clusterCount": len(members),
                }
            )
        selected = sum(len(m) for _, m in groups)
        await self.client.patch(
            PLACEMENTS,
            name,
            {"status": {"numberOfSelectedClusters": selected, "decisionGroups": status_groups}},
            NS,
            subresource="status",
        )

    # -- replica sets -------------------------------------------------------------------
    async def replica_set(
        self,
        name: str,
        refs: Sequence[dict[str, Any]],
        template: Mapping[str, Any] = TEMPLATE,
        **spec: Any,
    ) -> dict[str, Any]:
        body = typed(
            MANIFESTWORK_REPLICASETS,
            metadata={"name": name, "labels": {"app": "demo"}},
            spec={"placementRefs": list(refs), "manifestWorkTemplate": dict(template), **spec},
        )
        return await self.client.create(MANIFESTWORK_REPLICASETS, body, NS)

    async def get_rs(self, name: str) -> dict[str, Any]:
        return await self.client.get(MANIFESTWORK_REPLICASETS, name, NS)

    async def wait_rs_gone(self, name: str) -> None:
        async def gone() -> bool:
            return not await exists(self.client, MANIFESTWORK_REPLICASETS, name, NS)

        await eventually(gone, what=f"the replica set {name} to disappear")

    async def condition(self, name: str, kind: str) -> dict[str, Any] | None:
        rs = await self.get_rs(name)
        for c in (rs.get("status") or {}).get("conditions") or []:
            if c["type"] == kind:
                return dict(c)
        return None

    async def summary(self, name: str) -> dict[str, Any]:
        return dict(((await self.get_rs(name)).get("status") or {}).get("summary") or {})

    async def works(self, name: str, placement: str | None = None) -> dict[str, dict[str, Any]]:
        """The replica set's works by cluster (asserting one per cluster)."""
        selector = f"{MANIFEST_WORK_REPLICA_SET_LABEL}={NS}.{name}"
        if placement is not None:
            selector += f",{PLACEMENT_NAME_LABEL}={placement}"
        items = (await self.client.list(MANIFESTWORKS, label_selector=selector))["items"]
        by_cluster = {w["metadata"]["namespace"]: w for w in items}
        assert len(by_cluster) == len(items), "two works of one placement in one cluster"
        return by_cluster

    # -- the agent's part ---------------------------------------------------------------
    async def report(
        self,
        work: Mapping[str, Any],
        *,
        applied: str = "True",
        available: str | None = "True",
        progressing: str | None = None,
        degraded: str | None = None,
        ago: float = 0,
    ) -> None:
        """Write work conditions for the work's current generation, as an agent would;
        ``ago`` back-dates their transition times."""
        generation = work["metadata"]["generation"]
        now = datetime.now(UTC) - timedelta(seconds=ago)
        conditions = [cond("Applied", applied, generation, now)]
        for kind, value in (
            ("Available", available),
            ("Progressing", progressing),
            ("Degraded", degraded),
        ):
            if value is not None:
                conditions.append(cond(kind, value, generation, now))
        await self.client.patch(
            MANIFESTWORKS,
            work["metadata"]["name"],
            {"status": {"conditions": conditions}},
            work["metadata"]["namespace"],
            subresource="status",
        )

    async def succeed(self, name: str, clusters: Sequence[str]) -> None:
        works = await self.works(name)
        for cluster in clusters:
            await self.report(works[cluster])

    # -- waiting -------------------------------------------------------------------------
    async def wait_works(self, name: str, clusters: Sequence[str], *, what: str = "") -> None:
        async def check() -> bool:
            return sorted(await self.works(name)) == sorted(clusters)

        await eventually(check, timeout=15, what=what or f"works in {sorted(clusters)}")

    async def wait_condition(
        self, name: str, kind: str, status: str, reason: str, timeout: float = 15
    ) -> dict[str, Any]:
        async def check() -> bool:
            c = await self.condition(name, kind)
            return c is not None and c["status"] == status and c["reason"] == reason

        await eventually(check, timeout=timeout, what=f"{kind}={status}/{reason} on {name}")
        found = await self.condition(name, kind)
        assert found is not None
        return found

    async def wait_summary(self, name: str, **expected: int) -> None:
        async def check() -> bool:
            summary = await self.summary(name)
            return all(summary.get(k) == v for k, v in expected.items())

        await eventually(check, timeout=15, what=f"summary {expected} on {name}")


async def hub_client(kubeconfig: Path, clusters: Sequence[str]) -> KubeClient:
    """A test client of the hub with the CRDs served and namespaces ``ocm-ns`` and ``clusters``."""
    client = await KubeClient.from_kubeconfig(
        str(kubeconfig), user_agent="integration-test", qps=0, name="test-hub"
    )
    try:
        await install_crds(client, [REPO / "charts" / "crds" / file for file in CRD_FILES])
        for ns in (NS, *clusters):
            await client.create(NAMESPACES, {"metadata": {"name": ns}})
    except BaseException:
        await client.close()
        raise
    return client


@pytest.fixture
async def hub(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Hub]:
    """A hub (kubesim or a real apiserver) with the OCM CRDs, the namespace ``ocm-ns`` and
    10 cluster namespaces."""
    kubeconfig = cluster.write_kubeconfig(tmp_path / "hub.kubeconfig")
    client = await hub_client(kubeconfig, CLUSTERS)
    try:
        yield Hub(client, kubeconfig)
    finally:
        await client.close()


@pytest.fixture
async def running(hub: Hub) -> AsyncIterator[Hub]:
    """The controller, built like the composition root builds it, running in-process."""
    client = await KubeClient.from_kubeconfig(
        str(hub.kubeconfig), user_agent="hubcontroller", qps=0, name="hub"
    )
    works = Informer(client, MANIFESTWORKS)
    deps = HubDeps(hub=client, works=works)
    informers, controller = build_replicaset_controller(deps)
    for informer in (works, *informers):
        await informer.start()
    task = asyncio.create_task(controller.run())
    await controller.wait_started()
    hub.controllers.append(controller)
    try:
        yield hub
    finally:
        await controller.stop(deadline=5)
        await task
        for informer in (works, *informers):
            await informer.stop()
        await client.close()


def all_ref(placement: str = "all") -> dict[str, Any]:
    return {"name": placement, "rolloutStrategy": {"type": "All"}}


# -- fan-out -----------------------------------------------------------------------------------


async def test_all_fans_out_one_work_per_cluster_with_exact_metadata(running: Hub) -> None:
    hub = running
    await hub.placement("all", [("", CLUSTERS)])
    await hub.replica_set("mwrs", [all_ref()])
    await hub.wait_works("mwrs", CLUSTERS)
    await hub.wait_summary("mwrs", total=10, applied=0, available=0)

    for cluster, work in (await hub.works("mwrs")).items():
        meta = work["metadata"]
        assert meta["name"].startswith("mwrs") and len(meta["name"]) == len("mwrs") + 5
        assert meta["labels"] == {
            "app": "demo",
            MANIFEST_WORK_REPLICA_SET_LABEL: f"{NS}.mwrs",
            PLACEMENT_NAME_LABEL: "all",
        }
        assert "annotations" not in meta and "ownerReferences" not in meta
        assert comparable_spec(work["spec"]) == comparable_spec(TEMPLATE)
        assert meta["namespace"] == cluster

    rs = await hub.get_rs("mwrs")
    assert MANIFEST_WORK_REPLICA_SET_FINALIZER in rs["metadata"]["finalizers"]
    assert rs["status"]["placementSummary"] == [
        {
            "name": "all",
            "availableDecisionGroups": "1 (10 / 10 clusters applied)",
            "summary": {
                "total": 10,
                "applied": 0,
                "available": 0,
                "progressing": 0,
                "degraded": 0,
                "desiredTotal": 0,
                "updated": 0,
            },
        }
    ]
    verified = await hub.condition("mwrs", CONDITION_PLACEMENT_VERIFIED)
    assert verified is not None and verified["status"] == "True"
    assert verified["reason"] == "AsExpected" and verified["message"] == ""
    # metav1.Time is written in whole seconds, as OCM's controller writes it.
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", verified["lastTransitionTime"])
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_ROLLED_OUT, "False", "Progressing")
    await hub.wait_condition("mwrs", CONDITION_MANIFESTWORK_APPLIED, "False", "NotAsExpected")

    await hub.succeed("mwrs", CLUSTERS)
    await hub.wait_summary("mwrs", total=10, applied=10, available=10)
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_ROLLED_OUT, "True", "Complete")
    await hub.wait_condition("mwrs", CONDITION_MANIFESTWORK_APPLIED, "True", "AsExpected")

    # The worked example of the spec: Progressing + Degraded on one work.
    work = (await hub.works("mwrs"))["cluster03"]
    await hub.report(work, progressing="True", degraded="True")
    await hub.wait_summary("mwrs", degraded=1, progressing=1)
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_ROLLED_OUT, "False", "Progressing")
    await hub.wait_condition("mwrs", CONDITION_MANIFESTWORK_APPLIED, "False", "NotAsExpected")


async def test_summary_fields_nobody_computes_keep_their_values(running: Hub) -> None:
    """desiredTotal and updated: OCM sets the counted fields one by one and never these,
    so a value someone else wrote stays; the counts still follow the works."""
    hub = running
    await hub.placement("kept", [("", CLUSTERS[:2])])
    await hub.replica_set("keep", [all_ref("kept")])
    await hub.wait_summary("keep", total=2, applied=0)
    foreign = {"summary": {"desiredTotal": 7, "updated": 5, "total": 2}}
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, "keep", {"status": foreign}, NS, subresource="status"
    )
    await hub.succeed("keep", CLUSTERS[:2])
    await hub.wait_summary("keep", total=2, applied=2, available=2)
    summary = await hub.summary("keep")
    assert (summary["desiredTotal"], summary["updated"]) == (7, 5)


async def test_progressive_max_concurrency_advances_on_reported_conditions(running: Hub) -> None:
    hub = running
    await hub.placement("prog", [("", CLUSTERS)])
    ref = {
        "name": "prog",
        "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": "30%"}},
    }
    await hub.replica_set("mwrs", [ref])
    batches = [CLUSTERS[0:3], CLUSTERS[3:6], CLUSTERS[6:9], CLUSTERS[9:10]]
    done: list[str] = []
    for batch in batches:
        done += batch
        await hub.wait_works("mwrs", done, what=f"the batch {batch}")
        await hub.wait_summary("mwrs", total=len(done))
        assert sorted(await hub.works("mwrs")) == done
        await hub.succeed("mwrs", batch)
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_ROLLED_OUT, "True", "Complete")
    await hub.wait_condition("mwrs", CONDITION_MANIFESTWORK_APPLIED, "True", "AsExpected")


async def test_progressive_stops_past_max_failures(running: Hub) -> None:
    hub = running
    await hub.placement("prog", [("", CLUSTERS)])
    ref = {
        "name": "prog",
        "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 2}},
    }
    await hub.replica_set("mwrs", [ref])
    await hub.wait_works("mwrs", CLUSTERS[:2])
    works = await hub.works("mwrs")
    await hub.report(works["cluster00"], applied="False", available=None)
    await hub.report(works["cluster01"])
    # This status comes from a reconcile that saw both reports.
    await hub.wait_summary("mwrs", total=2, applied=1, available=1)
    assert sorted(await hub.works("mwrs")) == CLUSTERS[:2]
    # The failed cluster recovers: the rollout goes on.
    await hub.report(works["cluster00"])
    await hub.wait_works("mwrs", CLUSTERS[:4])


async def test_relabelling_keeps_a_timed_out_cluster_a_failure(running: Hub) -> None:
    # cluster00's agent never answers: past progressDeadline it is a failure beyond
    # maxFailures 0, and no cluster is added. Relabelling the replica set re-patches
    # the works; that must not restart cluster00's deadline and let cluster02 in.
    hub = running
    await hub.placement("prog", [("", CLUSTERS[:3])])
    deadline = 2
    progressive = {"maxConcurrency": 2, "maxFailures": 0, "progressDeadline": f"{deadline}s"}
    ref = {"name": "prog", "rolloutStrategy": {"type": "Progressive", "progressive": progressive}}
    await hub.replica_set("mwrs", [ref])
    await hub.wait_works("mwrs", CLUSTERS[:2])
    works = await hub.works("mwrs")
    created = parse_time(works["cluster00"]["metadata"]["creationTimestamp"])

    async def past_deadline() -> bool:
        return datetime.now(UTC) > created + timedelta(seconds=deadline + 1)

    # The controller's clock is this one: once past, its next reconcile sees a timeout.
    await eventually(past_deadline, timeout=15, what="cluster00's progress deadline")
    await hub.report(works["cluster01"])
    await hub.wait_summary("mwrs", total=2, applied=1, available=1)
    assert sorted(await hub.works("mwrs")) == CLUSTERS[:2]
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, "mwrs", {"metadata": {"labels": {"team": "x"}}}, NS
    )

    async def relabelled() -> bool:
        now = await hub.works("mwrs")
        return all(w["metadata"]["labels"].get("team") == "x" for w in now.values())

    await eventually(relabelled, what="the new label on the works")
    # A status the controller can only write after it has seen the relabelled works.
    await hub.report(works["cluster01"], degraded="True")
    await hub.wait_summary("mwrs", degraded=1)
    assert sorted(await hub.works("mwrs")) == CLUSTERS[:2]


async def test_mandatory_groups_and_min_success_time(running: Hub) -> None:
    hub = running
    canary, rest = CLUSTERS[8:], CLUSTERS[:8]
    await hub.placement("prog", [("prod", rest), ("canary", canary)])
    ref = {
        "name": "prog",
        "rolloutStrategy": {
            "type": "Progressive",
            "progressive": {
                "maxConcurrency": 4,
                "minSuccessTime": "1s",
                "mandatoryDecisionGroups": [{"groupName": "canary"}],
            },
        },
    }
    await hub.replica_set("mwrs", [ref])
    await hub.wait_works("mwrs", canary, what="the mandatory group alone")
    await hub.succeed("mwrs", canary)
    # After the 1 s soak the rest goes, four at a time, alphabetically.
    await hub.wait_works("mwrs", [*canary, *rest[:4]])
    await hub.wait_summary("mwrs", total=6)


async def test_progressive_per_group(running: Hub) -> None:
    hub = running
    groups = [("g0", CLUSTERS[:3]), ("g1", CLUSTERS[3:7]), ("g2", CLUSTERS[7:])]
    await hub.placement("pg", groups)
    ref = {
        "name": "pg",
        "rolloutStrategy": {
            "type": "ProgressivePerGroup",
            "progressivePerGroup": {"maxFailures": 1},
        },
    }
    await hub.replica_set("mwrs", [ref])
    await hub.wait_works("mwrs", CLUSTERS[:3])
    works = await hub.works("mwrs")
    # One failure in the first group is tolerated.
    await hub.report(works["cluster00"], applied="False", available=None)
    await hub.succeed("mwrs", CLUSTERS[1:3])
    await hub.wait_works("mwrs", CLUSTERS[:7])
    await hub.succeed("mwrs", CLUSTERS[3:7])
    await hub.wait_works("mwrs", CLUSTERS)

    # The summary is written after the works exist: wait for it, not just the works.
    async def summarized() -> bool:
        rs = await hub.get_rs("mwrs")
        summary = rs["status"]["placementSummary"][0]["availableDecisionGroups"]
        return bool(summary == "3 (10 / 10 clusters applied)")

    await eventually(summarized, what="the summary of all three groups and ten clusters")


async def test_rollout_type_spelling_of_the_docs_is_honoured(running: Hub) -> None:
    # The mwrset-cronjob example writes rolloutType; the server prunes it.
    hub = running
    await hub.placement("prog", [("", CLUSTERS)])
    ref = {
        "name": "prog",
        "rolloutStrategy": {"rolloutType": "Progressive", "progressive": {"maxConcurrency": 2}},
    }
    await hub.replica_set("mwrs", [ref])
    await hub.wait_works("mwrs", CLUSTERS[:2])
    await hub.wait_summary("mwrs", total=2)
    assert sorted(await hub.works("mwrs")) == CLUSTERS[:2]


# -- changes -----------------------------------------------------------------------------------


async def test_template_update_rolls_out_progressively(running: Hub) -> None:
    hub = running
    await hub.placement("prog", [("", CLUSTERS)])
    ref = {
        "name": "prog",
        "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 5}},
    }
    await hub.replica_set("mwrs", [ref])
    await hub.wait_works("mwrs", CLUSTERS[:5])
    await hub.succeed("mwrs", CLUSTERS[:5])
    await hub.wait_works("mwrs", CLUSTERS)
    await hub.succeed("mwrs", CLUSTERS[5:])
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_ROLLED_OUT, "True", "Complete")

    updated = copy.deepcopy(TEMPLATE)
    updated["workload"]["manifests"][0]["data"]["version"] = "2"
    rs = await hub.get_rs("mwrs")
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, "mwrs", {"spec": {"manifestWorkTemplate": updated}}, NS
    )

    async def on_v2(count: int) -> bool:
        works = await hub.works("mwrs")
        new = [
            c for c, w in works.items() if comparable_spec(w["spec"]) == comparable_spec(updated)
        ]
        return len(works) == 10 and sorted(new) == CLUSTERS[:count]

    await eventually(lambda: on_v2(5), timeout=15, what="the first five works on v2")
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_ROLLED_OUT, "False", "Progressing")
    await hub.wait_summary("mwrs", total=5)
    works = await hub.works("mwrs")
    assert all(works[c]["metadata"]["generation"] == 2 for c in CLUSTERS[:5])
    assert rs["metadata"]["generation"] < (await hub.get_rs("mwrs"))["metadata"]["generation"]
    await hub.succeed("mwrs", CLUSTERS[:5])
    await eventually(lambda: on_v2(10), timeout=15, what="every work on v2")
    await hub.succeed("mwrs", CLUSTERS[5:])
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_ROLLED_OUT, "True", "Complete")


async def test_decision_changes_add_and_remove_works(running: Hub) -> None:
    hub = running
    await hub.placement("all", [("", CLUSTERS[:6])])
    await hub.replica_set("mwrs", [all_ref()])
    await hub.wait_works("mwrs", CLUSTERS[:6])
    names = {c: w["metadata"]["name"] for c, w in (await hub.works("mwrs")).items()}
    # cluster01 leaves, cluster08 and cluster09 join
    now_selected = [c for c in CLUSTERS[:6] if c != "cluster01"] + ["cluster08", "cluster09"]
    await hub.decide("all", [("", now_selected)])
    await hub.wait_works("mwrs", now_selected)
    await hub.wait_summary("mwrs", total=7)
    works = await hub.works("mwrs")
    assert all(works[c]["metadata"]["name"] == names[c] for c in now_selected if c in names)
    # Every cluster leaves: nothing left, the placement is reported empty.
    await hub.decide("all", [])
    await hub.wait_works("mwrs", [])
    verified = await hub.wait_condition(
        "mwrs", CONDITION_PLACEMENT_VERIFIED, "False", "PlacementDecisionEmpty"
    )
    assert "select" in verified["message"]
    await hub.wait_condition(
        "mwrs", CONDITION_MANIFESTWORK_APPLIED, "False", "PlacementDecisionEmpty"
    )
    await hub.wait_summary("mwrs", total=0, applied=0)


async def test_placement_ref_removed_deletes_its_works(running: Hub) -> None:
    hub = running
    await hub.placement("a", [("", CLUSTERS[:3])])
    await hub.placement("b", [("", CLUSTERS[3:5])])
    await hub.replica_set("mwrs", [all_ref("a"), all_ref("b")])
    await hub.wait_works("mwrs", CLUSTERS[:5])
    await hub.wait_summary("mwrs", total=5)
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, "mwrs", {"spec": {"placementRefs": [all_ref("b")]}}, NS
    )
    await hub.wait_works("mwrs", CLUSTERS[3:5])
    await hub.wait_summary("mwrs", total=2)
    rs = await hub.get_rs("mwrs")
    assert [p["name"] for p in rs["status"]["placementSummary"]] == ["b"]


async def test_two_placements_selecting_one_cluster_get_one_work_each(running: Hub) -> None:
    hub = running
    await hub.placement("a", [("", ["cluster00"])])
    await hub.placement("b", [("", ["cluster00", "cluster01"])])
    await hub.replica_set("mwrs", [all_ref("a"), all_ref("b")])
    await hub.wait_summary("mwrs", total=3)
    assert sorted(await hub.works("mwrs", "a")) == ["cluster00"]
    assert sorted(await hub.works("mwrs", "b")) == ["cluster00", "cluster01"]


# -- deletion ----------------------------------------------------------------------------------


async def test_deleting_the_replica_set_deletes_its_works(running: Hub) -> None:
    hub = running
    await hub.placement("all", [("", CLUSTERS)])
    await hub.replica_set("mwrs", [all_ref()])
    await hub.wait_works("mwrs", CLUSTERS)
    await hub.client.delete(MANIFESTWORK_REPLICASETS, "mwrs", NS)
    await hub.wait_works("mwrs", [])
    await hub.wait_rs_gone("mwrs")


async def test_foreground_deletion_waits_for_the_works(running: Hub) -> None:
    hub = running
    await hub.placement("all", [("", CLUSTERS[:2])])
    await hub.replica_set("mwrs", [all_ref()], cascadeDeletionPolicy="Foreground")
    await hub.wait_works("mwrs", CLUSTERS[:2])
    # Play the agent: its finalizer keeps cluster00's work while it cleans up.
    work = (await hub.works("mwrs"))["cluster00"]
    await hub.client.patch(
        MANIFESTWORKS,
        work["metadata"]["name"],
        {"metadata": {"finalizers": ["cluster.open-cluster-management.io/manifest-work-cleanup"]}},
        "cluster00",
    )
    await hub.client.delete(MANIFESTWORK_REPLICASETS, "mwrs", NS)
    await hub.wait_works("mwrs", ["cluster00"])

    async def work_deleting() -> bool:
        w = (await hub.works("mwrs")).get("cluster00")
        return w is not None and bool(w["metadata"].get("deletionTimestamp"))

    await eventually(work_deleting, what="cluster00's work to be deleting")
    rs = await hub.get_rs("mwrs")
    assert rs["metadata"].get("deletionTimestamp")
    assert MANIFEST_WORK_REPLICA_SET_FINALIZER in rs["metadata"]["finalizers"]
    await hub.client.patch(
        MANIFESTWORKS, work["metadata"]["name"], {"metadata": {"finalizers": None}}, "cluster00"
    )
    await hub.wait_rs_gone("mwrs")


# -- bad input ----------------------------------------------------------------------------------


async def test_missing_placement_is_reported_then_picked_up(running: Hub) -> None:
    hub = running
    await hub.replica_set("mwrs", [all_ref("nope")])
    verified = await hub.wait_condition(
        "mwrs", CONDITION_PLACEMENT_VERIFIED, "False", "PlacementDecisionNotFound"
    )
    assert verified["message"] == f'Placement "nope" not found in namespace "{NS}"'
    assert await hub.works("mwrs") == {}
    # Creating the placement is enough: its events find the replica set.
    await hub.placement("nope", [("", CLUSTERS[:2])])
    await hub.wait_works("mwrs", CLUSTERS[:2])
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_VERIFIED, "True", "AsExpected")


async def test_invalid_strategy_is_reported_and_others_are_served(running: Hub) -> None:
    hub = running
    await hub.placement("p", [("", CLUSTERS[:3])])
    bad = {
        "name": "p",
        "rolloutStrategy": {"type": "Progressive", "progressive": {"progressDeadline": "10mins"}},
    }
    await hub.replica_set("bad", [bad])
    await hub.replica_set("good", [all_ref("p")])
    # No work at all: OCM's final reason (spec 2.3 step 5), with our message.
    verified = await hub.wait_condition(
        "bad", CONDITION_PLACEMENT_VERIFIED, "False", "PlacementDecisionEmpty"
    )
    assert verified["message"] == (
        'placement "p": progressive.progressDeadline: invalid progress deadline "10mins": '
        'time: unknown unit "mins" in duration "10mins"'
    )
    await hub.wait_condition(
        "bad", CONDITION_MANIFESTWORK_APPLIED, "False", "PlacementDecisionEmpty"
    )
    await hub.wait_works("good", CLUSTERS[:3])
    assert await hub.works("bad") == {}
    # Fixing the strategy is picked up from the update event.
    fixed = {
        "name": "p",
        "rolloutStrategy": {"type": "Progressive", "progressive": {"progressDeadline": "10m"}},
    }
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, "bad", {"spec": {"placementRefs": [fixed]}}, NS
    )
    await hub.wait_works("bad", CLUSTERS[:3])
    await hub.wait_condition("bad", CONDITION_PLACEMENT_VERIFIED, "True", "AsExpected")


async def test_decision_without_group_index_is_reported(running: Hub) -> None:
    hub = running
    await hub.client.create(PLACEMENTS, typed(PLACEMENTS, metadata={"name": "p"}, spec={}), NS)
    decision = typed(
        PLACEMENT_DECISIONS, metadata={"name": "p-1", "labels": {PLACEMENT_LABEL: "p"}}
    )
    await hub.client.create(PLACEMENT_DECISIONS, decision, NS)
    await hub.replica_set("mwrs", [all_ref("p")])
    # The reasons OCM ends with (spec 2.3 step 4.3 and 5, 2.6); the message is ours, in Go's quoting.
    verified = await hub.wait_condition(
        "mwrs", CONDITION_PLACEMENT_VERIFIED, "False", "PlacementDecisionEmpty"
    )
    assert verified["message"] == (
        'placement "p": PlacementDecision "p-1" has no valid '
        'cluster.open-cluster-management.io/decision-group-index label (got ""); '
        "it must be a decimal integer"
    )
    await hub.wait_condition(
        "mwrs", CONDITION_MANIFESTWORK_APPLIED, "False", "PlacementDecisionEmpty"
    )


async def test_problem_next_to_deployed_works_is_named_in_the_message(running: Hub) -> None:
    hub = running
    await hub.placement("good", [("", CLUSTERS[:2])])
    await hub.client.create(PLACEMENTS, typed(PLACEMENTS, metadata={"name": "p"}, spec={}), NS)
    decision = typed(
        PLACEMENT_DECISIONS, metadata={"name": "p-1", "labels": {PLACEMENT_LABEL: "p"}}
    )
    await hub.client.create(PLACEMENT_DECISIONS, decision, NS)
    await hub.replica_set("mwrs", [all_ref("good"), all_ref("p")])
    await hub.wait_works("mwrs", CLUSTERS[:2])
    # OCM's status and reason (spec 2.3 step 5: works exist); OCM's message is empty.
    verified = await hub.wait_condition("mwrs", CONDITION_PLACEMENT_VERIFIED, "True", "AsExpected")
    assert verified["message"].startswith('placement "p": PlacementDecision "p-1"')
    assert '(got "")' in verified["message"]


async def test_long_owner_name_is_refused_with_a_message(running: Hub) -> None:
    hub = running
    await hub.placement("p", [("", CLUSTERS[:1])])
    name = "m" * (63 - len(NS))  # "<ns>.<name>" is 64 characters
    await hub.replica_set(name, [all_ref("p")])
    applied = await hub.wait_condition(
        name, CONDITION_MANIFESTWORK_APPLIED, "False", "InvalidManifestWorkName"
    )
    assert "value: must be no more than 63 bytes; recreate" in applied["message"]
    assert (await hub.client.list(MANIFESTWORKS))["items"] == []


async def test_refused_writes_are_reported_and_the_rest_deployed(running: Hub) -> None:
    hub = running
    # No namespace exists for "cluster99": the API server refuses that work.
    await hub.placement("p", [("", ["cluster00", "cluster99"])])
    await hub.replica_set("mwrs", [all_ref("p")])
    await hub.wait_works("mwrs", ["cluster00"])
    await hub.wait_condition("mwrs", CONDITION_MANIFESTWORK_APPLIED, "False", "NotAsExpected")

    async def reported() -> bool:
        c = await hub.condition("mwrs", CONDITION_MANIFESTWORK_APPLIED)
        return c is not None and 'applying to cluster "cluster99"' in c["message"]

    await eventually(reported, what="the refused write in ManifestworkApplied")
    applied = await hub.condition("mwrs", CONDITION_MANIFESTWORK_APPLIED)
    assert applied is not None
    assert applied["message"].startswith("the API server refused 1 ManifestWork write(s): ")
    assert "not found" in applied["message"]
    # Once the namespace exists, the retry deploys it.
    await hub.client.create(NAMESPACES, {"metadata": {"name": "cluster99"}})
    await hub.wait_works("mwrs", ["cluster00", "cluster99"])


async def test_refused_writes_leave_the_status_alone_while_retrying(running: Hub) -> None:
    """The message lists refused clusters in cluster order, so a retry that fails the
    same way writes no status: no update event starts another reconcile at once, and
    the backoff grows one step per retry, as OCM's."""
    hub = running
    missing = [f"gone{i}" for i in range(6)]
    await hub.placement("p", [("", ["cluster00", *reversed(missing)])])
    await hub.replica_set("mwrs", [all_ref("p")])
    await hub.wait_works("mwrs", ["cluster00"])

    async def reported() -> bool:
        c = await hub.condition("mwrs", CONDITION_MANIFESTWORK_APPLIED)
        return c is not None and c["message"].startswith("the API server refused 6 ")

    await eventually(reported, what="the refused writes in ManifestworkApplied")
    applied = await hub.condition("mwrs", CONDITION_MANIFESTWORK_APPLIED)
    assert applied is not None
    named = re.findall(r'applying to cluster "([^"]+)"', applied["message"])
    assert named == missing[:3]
    assert applied["message"].endswith("; and 3 more")

    queue = hub.controllers[0].queue
    key = f"{NS}/mwrs"

    async def retried(times: int) -> None:
        start = queue.num_requeues(key)

        async def check() -> bool:
            return queue.num_requeues(key) >= start + times

        await eventually(check, what=f"{times} more failed reconciles of {key}")

    await retried(1)  # any status write of an earlier reconcile has landed
    version = (await hub.get_rs("mwrs"))["metadata"]["resourceVersion"]
    await retried(4)
    assert (await hub.get_rs("mwrs"))["metadata"]["resourceVersion"] == version


# -- works written by OCM's hub -----------------------------------------------------------------

#: A template whose works OCM's hub writes with Go's zero values (docs/compatibility.md).
TYPED_TEMPLATE: dict[str, Any] = {
    "workload": {"manifests": [configmap("demo", version="1")]},
    "deleteOption": {
        "propagationPolicy": "SelectivelyOrphan",
        "selectivelyOrphans": {
            "orphaningRules": [{"resource": "configmaps", "namespace": "default", "name": "demo"}]
        },
    },
    "manifestConfigs": [
        {
            "resourceIdentifier": {
                "group": "apps",
                "resource": "deployments",
                "name": "d",
                "namespace": "default",
            },
            "conditionRules": [
                {"condition": "Progressing", "type": "WellKnownConditions"},
                {"condition": "Ready", "type": "CEL", "celExpressions": ["true"]},
            ],
            "updateStrategy": {
                "type": "ServerSideApply",
                "serverSideApply": {
                    "ignoreFields": [
                        {"condition": "OnSpokeChange", "jsonPaths": [".spec.replicas"]}
                    ]
                },
            },
        },
        {
            "resourceIdentifier": {"resource": "namespaces", "name": "nsx"},
            "updateStrategy": {"type": "ReadOnly"},
        },
    ],
}


def as_ocm_writes_it(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template as OCM v1.2.1's hub stores it in a work (qa-hub.md finding 4): the
    zero values of fields without ``omitempty`` filled in."""
    spec = copy.deepcopy(dict(template))
    for rule in spec["deleteOption"]["selectivelyOrphans"]["orphaningRules"]:
        rule.setdefault("group", "")
    for config in spec["manifestConfigs"]:
        config["resourceIdentifier"].setdefault("group", "")
        config["resourceIdentifier"].setdefault("namespace", "")
        for rule in config.get("conditionRules", []):
            rule.setdefault("message", "")
            rule.setdefault("messageExpression", "")
        ssa = config["updateStrategy"].get("serverSideApply")
        if ssa is not None:
            ssa.setdefault("force", False)
    return spec


async def test_works_written_by_ocm_are_taken_over_unchanged(running: Hub) -> None:
    hub = running
    clusters = CLUSTERS[:3]
    await hub.placement("p", [("", clusters)])
    labels = {
        "app": "demo",
        MANIFEST_WORK_REPLICA_SET_LABEL: f"{NS}.mwrs",
        PLACEMENT_NAME_LABEL: "p",
    }
    for cluster in clusters:
        work = typed(
            MANIFESTWORKS,
            metadata={"name": "mwrs", "labels": labels},
            spec=as_ocm_writes_it(TYPED_TEMPLATE),
        )
        await hub.client.create(MANIFESTWORKS, work, cluster)
    before = {c: w["metadata"]["resourceVersion"] for c, w in (await hub.works("mwrs")).items()}

    await hub.replica_set("mwrs", [all_ref("p")], template=TYPED_TEMPLATE)
    # The status of a reconcile that looked at (and kept) all three works.
    await hub.wait_summary("mwrs", total=3)
    await hub.wait_condition("mwrs", CONDITION_PLACEMENT_VERIFIED, "True", "AsExpected")
    works = await hub.works("mwrs")
    assert {c: w["metadata"]["resourceVersion"] for c, w in works.items()} == before
    assert {w["metadata"]["generation"] for w in works.values()} == {1}

    # A real template change still reaches them.
    changed = copy.deepcopy(TYPED_TEMPLATE)
    changed["workload"]["manifests"] = [configmap("demo", version="2")]
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, "mwrs", {"spec": {"manifestWorkTemplate": changed}}, NS
    )

    async def updated() -> bool:
        return {w["metadata"]["generation"] for w in (await hub.works("mwrs")).values()} == {2}

    await eventually(updated, what="the new template in every work")


# -- labels ---------------------------------------------------------------------------------


async def test_label_changes_reach_the_works_ocm_would_apply_again(running: Hub) -> None:
    hub = running
    await hub.placement("p", [("", CLUSTERS[:3])])
    await hub.replica_set("mwrs", [all_ref("p")])
    await hub.wait_works("mwrs", CLUSTERS[:3])
    works = await hub.works("mwrs")
    # OCM judges this work Succeeded and leaves it alone; the others stay "to apply".
    await hub.report(works["cluster00"], progressing="False")
    await hub.wait_summary("mwrs", applied=1, available=1)  # the controller has seen it
    await hub.client.patch(
        MANIFESTWORKS,
        works["cluster01"]["metadata"]["name"],
        {"metadata": {"labels": {"extra": "1"}, "annotations": {"note": "hi"}}},
        "cluster01",
    )
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, "mwrs", {"metadata": {"labels": {"app": None, "team": "x"}}}, NS
    )
    wanted = {"team": "x", MANIFEST_WORK_REPLICA_SET_LABEL: f"{NS}.mwrs", PLACEMENT_NAME_LABEL: "p"}

    async def relabelled() -> bool:
        now = await hub.works("mwrs")
        return all(
            now[c]["metadata"].get("labels") == wanted and not now[c]["metadata"].get("annotations")
            for c in ("cluster01", "cluster02")
        )

    await eventually(relabelled, what="the replica set's new labels on the works")
    now = await hub.works("mwrs")
    assert {w["metadata"]["generation"] for w in now.values()} == {1}
    assert now["cluster00"]["metadata"]["labels"]["app"] == "demo"
