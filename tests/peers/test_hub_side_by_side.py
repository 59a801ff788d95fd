"""OCM's Go hub manager (``work manager``, v1.2.1) and ours, side by side.

Two real hubs, set up alike: the same Placement and decisions, the same
ManifestWorkReplicaSet; OCM's manager runs on one, ours on the other. The test
plays scheduler and agent on both hubs alike (decisions, work conditions) and
compares, step by step, the works each manager generates (per cluster: labels,
annotations, owners, spec) and the replica set's status (conditions, counts,
placement summaries). Then a template change, a cluster leaving, the replica
set's deletion, and a completed work deleted after its TTL.

Left out of the comparison, by design (docs/compatibility.md): the works'
names (OCM v1.2.1 names them after the replica set; the spec we follow, OCM
later, lets the API server generate them), condition times (only their shape,
whole seconds in UTC, is compared), ``observedGeneration`` on conditions (ours
writes it), and zero counts OCM's merge patch
leaves out (read as 0). Messages are compared: the scenario has no problem to
report.

Runs in the real leg only; ``make ocm`` builds OCM's binary.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import MANIFESTWORK_REPLICASETS, MANIFESTWORKS, NotFound
from schemas.wire import GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK, GATE_MANIFEST_WORK_REPLICA_SET
from tests.conftest import eventually
from tests.hub.test_replicaset import NS, T0, TEMPLATE, TYPED_TEMPLATE, Hub, cond, hub_client
from tests.peers.test_agent_side_by_side import diff, time_shape
from tests.support.controlplane import spawn
from tests.support.manifests import configmap
from tests.support.ocmpeer import Peer, ocm_binary
from tests.support.processes import free_port
from tests.support.programs import ManagerRunner, manager_settings
from tests.support.targets import REAL, PlanePool, open_cluster

pytestmark = pytest.mark.realkube

CLUSTERS = ["cluster1", "cluster2", "cluster3"]
GATES = f"{GATE_MANIFEST_WORK_REPLICA_SET}=true,{GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK}=true"
COUNTS = ("total", "applied", "available", "degraded", "progressing", "desiredTotal", "updated")


@dataclass
class Hubs:
    """OCM's manager's hub and ours, and OCM's process."""

    ocm: Hub
    ours: Hub
    manager: Peer

    @property
    def both(self) -> tuple[Hub, Hub]:
        return (self.ocm, self.ours)


def ocm_manager(kubeconfig: Path, log: Path) -> Peer:
    """OCM's ``work manager`` on the hub of ``kubeconfig``, both gates on."""
    argv = [
        str(ocm_binary("work")),
        "manager",
        f"--kubeconfig={kubeconfig}",
        "--namespace=open-cluster-management-hub",
        f"--feature-gates={GATES}",
        f"--listen=127.0.0.1:{free_port()}",
        "--disable-leader-election",
    ]
    return Peer(spawn("ocm-work-manager", argv, log))


def our_settings(kubeconfig: Path) -> Any:
    """Our manager's settings for the hub of ``kubeconfig``, both gates on."""
    return manager_settings(
        kubeconfig,
        feature_gates=frozenset(
            {GATE_MANIFEST_WORK_REPLICA_SET, GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK}
        ),
    )


@pytest.fixture
async def hubs(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Hubs]:
    """Two hubs with the CRDs and cluster namespaces, OCM's manager on one, ours on the other."""
    async with (
        open_cluster(REAL, realkube_pool) as ocm_plane,
        open_cluster(REAL, realkube_pool) as our_plane,
    ):
        ocm_path = ocm_plane.write_kubeconfig(tmp_path / "ocm-hub.kubeconfig")
        our_path = our_plane.write_kubeconfig(tmp_path / "our-hub.kubeconfig")
        ocm_client = await hub_client(ocm_path, CLUSTERS)
        our_client = await hub_client(our_path, CLUSTERS)
        peer = ocm_manager(ocm_path, tmp_path / "ocm-manager.log")
        try:
            async with ManagerRunner(our_settings(our_path)):
                yield Hubs(Hub(ocm_client, ocm_path), Hub(our_client, our_path), peer)
        finally:
            await peer.stop()
            await ocm_client.close()
            await our_client.close()


# -- what is compared ----------------------------------------------------------------------


def _counts(summary: dict[str, Any] | None) -> dict[str, int]:
    return {key: int((summary or {}).get(key) or 0) for key in COUNTS}


def comparable_status(rs: dict[str, Any] | None) -> Any:
    """A replica set's status: conditions without times and generations, counts with
    absent ones as 0."""
    if rs is None:
        return None
    status = rs.get("status") or {}
    conditions = sorted(
        (
            {
                k: time_shape(v) if k == "lastTransitionTime" else v
                for k, v in c.items()
                if k != "observedGeneration"
            }
            for c in status.get("conditions") or []
        ),
        key=lambda c: str(c["type"]),
    )
    placements = [
        {**entry, "summary": _counts(entry.get("summary"))}
        for entry in status.get("placementSummary") or []
    ]
    return {
        "conditions": conditions,
        "summary": _counts(status.get("summary")),
        "placementSummary": placements,
    }


def comparable_works(works: dict[str, dict[str, Any]]) -> Any:
    """The generated works by cluster: labels, annotations, owners, spec (not names)."""
    return {
        cluster: {
            "labels": work["metadata"].get("labels"),
            "annotations": work["metadata"].get("annotations"),
            "ownerReferences": work["metadata"].get("ownerReferences"),
            "spec": work["spec"],
        }
        for cluster, work in works.items()
    }


async def same_on_both(
    hubs: Hubs,
    what: str,
    read: Callable[[Hub], Awaitable[Any]],
    ready: Callable[[Any], bool],
    timeout: float = 60.0,
) -> None:
    """Wait until ``read`` gives the same ready value on both hubs; fail with the diff."""
    seen: list[Any] = [None, None]

    async def check() -> bool:
        hubs.manager.check_alive()
        seen[:] = [await read(hubs.ocm), await read(hubs.ours)]
        return ready(seen[0]) and ready(seen[1]) and seen[0] == seen[1]

    try:
        await eventually(check, timeout=timeout, what=f"{what} to be the same on both hubs")
    except AssertionError as err:
        raise AssertionError(f"{err}\n{diff(seen[0], seen[1])}") from None


async def status_of(hub: Hub) -> Any:
    try:
        return comparable_status(await hub.get_rs("rs"))
    except NotFound:
        return None


async def works_of(hub: Hub) -> Any:
    return comparable_works(await hub.works("rs"))


def conditions_are(**expected: str) -> Callable[[Any], bool]:
    """Ready when the named conditions have these statuses."""

    def ready(status: Any) -> bool:
        found = {c["type"]: c["status"] for c in (status or {}).get("conditions") or []}
        return all(found.get(kind) == value for kind, value in expected.items())

    return ready


def total_is(total: int) -> Callable[[Any], bool]:
    """Ready when the replica set counts this many works."""
    return lambda status: bool(status) and status["summary"]["total"] == total


def works_in(clusters: list[str], version: str) -> Callable[[Any], bool]:
    """Ready when exactly these clusters have a work of this template version."""

    def ready(works: Any) -> bool:
        return sorted(works) == sorted(clusters) and all(
            w["spec"]["workload"]["manifests"][0]["data"].get("version") == version
            for w in works.values()
        )

    return ready


async def report_all(hubs: Hubs) -> None:
    """Every work of the replica set reports success (applied, available, done), on both."""
    for hub in hubs.both:
        for work in (await hub.works("rs")).values():
            await hub.report(work, applied="True", available="True", progressing="False")


async def same_when_rolled_out(hubs: Hubs, what: str) -> None:
    """Both replica sets rolled out and applied as expected, with the same status."""
    ready = conditions_are(PlacementRolledOut="True", ManifestworkApplied="True")
    await same_on_both(hubs, what, status_of, ready)


# -- the scenario ---------------------------------------------------------------------------


async def test_same_replica_set_same_works_and_status(hubs: Hubs) -> None:
    for hub in hubs.both:
        await hub.placement("p", [("", CLUSTERS)])
        await hub.replica_set("rs", [{"name": "p", "rolloutStrategy": {"type": "All"}}])

    await same_on_both(hubs, "the generated works", works_of, works_in(CLUSTERS, "1"))
    await same_on_both(
        hubs,
        "the status before any agent reports",
        status_of,
        conditions_are(PlacementVerified="True", PlacementRolledOut="False"),
    )

    # Every cluster applied and finished: rolled out, applied as expected.
    await report_all(hubs)
    await same_when_rolled_out(hubs, "the status once every work succeeded")

    # One cluster progressing and degraded.
    for hub in hubs.both:
        await hub.report(
            (await hub.works("rs"))["cluster2"],
            applied="True",
            available="True",
            progressing="True",
            degraded="True",
        )
    await same_on_both(
        hubs,
        "the status with a degraded cluster",
        status_of,
        lambda s: (s or {}).get("summary", {}).get("degraded") == 1,
    )

    # A new template: every work is updated in place.
    template = copy.deepcopy(TEMPLATE)
    template["workload"]["manifests"] = [configmap("demo", version="2")]
    for hub in hubs.both:
        await hub.client.patch(
            MANIFESTWORK_REPLICASETS, "rs", {"spec": {"manifestWorkTemplate": template}}, NS
        )
    await same_on_both(hubs, "the updated works", works_of, works_in(CLUSTERS, "2"))
    await report_all(hubs)
    await same_when_rolled_out(hubs, "the status once the new template succeeded")

    # cluster3 leaves the placement: its work goes.
    for hub in hubs.both:
        await hub.decide("p", [("", CLUSTERS[:2])])
    await same_on_both(hubs, "the works after cluster3 left", works_of, works_in(CLUSTERS[:2], "2"))
    await same_on_both(
        hubs,
        "the status after cluster3 left",
        status_of,
        lambda s: (s or {}).get("summary", {}).get("total") == 2,
    )

    # The replica set is deleted: so are its works, then the replica set itself.
    for hub in hubs.both:
        await hub.client.delete(MANIFESTWORK_REPLICASETS, "rs", NS)
    await same_on_both(hubs, "the works after deletion", works_of, lambda w: w == {})
    await same_on_both(hubs, "the replica set after deletion", status_of, lambda s: s is None)


async def create_completed(
    hub: Hub, work: dict[str, Any], complete: str = "True", at: datetime = T0
) -> None:
    """Work ``work`` in cluster1, with a ``Complete`` condition since ``at`` as its agent
    would report it."""
    created = await hub.client.create(MANIFESTWORKS, copy.deepcopy(work), "cluster1")
    condition = cond("Complete", complete, created["metadata"]["generation"], at)
    await hub.client.patch(
        MANIFESTWORKS,
        created["metadata"]["name"],
        {"status": {"conditions": [condition]}},
        "cluster1",
        subresource="status",
    )


async def work_names(hub: Hub) -> list[str]:
    """The names of cluster1's works."""
    items = (await hub.client.list(MANIFESTWORKS, "cluster1"))["items"]
    return sorted(w["metadata"]["name"] for w in items)


async def test_completed_work_is_deleted_after_its_ttl(hubs: Hubs) -> None:
    body: dict[str, Any] = {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "done", "namespace": "cluster1"},
        "spec": {
            "workload": {"manifests": [configmap("done")]},
            "deleteOption": {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": 1},
        },
    }
    kept: dict[str, Any] = {**body, "metadata": {"name": "kept", "namespace": "cluster1"}}
    kept["spec"] = {"workload": {"manifests": [configmap("kept")]}}
    for hub in hubs.both:
        for work in (body, kept):
            await create_completed(hub, work)
    # Only the work with a TTL goes; one without is kept however complete it is.
    await same_on_both(hubs, "the completed works", work_names, lambda n: n == ["kept"])


async def test_progressive_rollout_advances_alike(hubs: Hubs) -> None:
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}}
    for hub in hubs.both:
        await hub.placement("p", [("", CLUSTERS)])
        await hub.replica_set("rs", [{"name": "p", "rolloutStrategy": strategy}])
    # One cluster at a time, in name order, each once the previous one reports done.
    for step in range(1, len(CLUSTERS) + 1):
        await same_on_both(
            hubs, f"the works of step {step}", works_of, works_in(CLUSTERS[:step], "1")
        )
        await same_on_both(
            hubs,
            f"the status of step {step}",
            status_of,
            total_is(step),
        )
        await report_all(hubs)
    await same_when_rolled_out(hubs, "the status once rolled out")


async def test_taking_over_from_ocm_rewrites_no_work(
    realkube_pool: PlanePool, tmp_path: Path
) -> None:
    """OCM's manager generates the works, stops; ours starts on the same hub and
    leaves every work as it is (OCM writes Go's zero values into typed fields)."""
    async with open_cluster(REAL, realkube_pool) as plane:
        path = plane.write_kubeconfig(tmp_path / "hub.kubeconfig")
        hub = Hub(await hub_client(path, CLUSTERS), path)
        try:
            await hub.placement("p", [("", CLUSTERS)])
            ref = {"name": "p", "rolloutStrategy": {"type": "All"}}
            await hub.replica_set("rs", [ref], template=TYPED_TEMPLATE)
            peer = ocm_manager(path, tmp_path / "ocm-manager.log")
            try:

                async def generated() -> bool:
                    peer.check_alive()
                    status = comparable_status(await hub.get_rs("rs")) or {}
                    return sorted(await hub.works("rs")) == CLUSTERS and total_is(3)(status)

                await eventually(generated, timeout=60, what="OCM's works and status")
            finally:
                await peer.stop()
            before = {
                c: (w["metadata"]["resourceVersion"], w["metadata"]["generation"])
                for c, w in (await hub.works("rs")).items()
            }

            async with ManagerRunner(our_settings(path)):

                async def reconciled() -> bool:
                    # Ours writes observedGeneration on the conditions; OCM does not.
                    status = (await hub.get_rs("rs")).get("status") or {}
                    conditions = status.get("conditions") or []
                    return bool(conditions) and all("observedGeneration" in c for c in conditions)

                await eventually(reconciled, timeout=60, what="our manager's first status")
                after = {
                    c: (w["metadata"]["resourceVersion"], w["metadata"]["generation"])
                    for c, w in (await hub.works("rs")).items()
                }
            assert after == before
        finally:
            await hub.client.close()


async def test_a_bad_placement_next_to_a_deployed_one_reads_alike(hubs: Hubs) -> None:
    """One placement whose strategy cannot be used next to one that deploys: the same
    works, conditions (status, reason) and counts on both; only ours says what is wrong
    (OCM's messages are empty)."""
    bad = {
        "name": "q",
        "rolloutStrategy": {"type": "Progressive", "progressive": {"progressDeadline": "10mins"}},
    }
    for hub in hubs.both:
        await hub.placement("p", [("", CLUSTERS[:2])])
        await hub.placement("q", [("", CLUSTERS[2:])])
        await hub.replica_set("rs", [{"name": "p", "rolloutStrategy": {"type": "All"}}, bad])

    async def without_messages(hub: Hub) -> Any:
        status = await status_of(hub)
        for condition in (status or {}).get("conditions") or []:
            condition.pop("message", None)
        return status

    await same_on_both(hubs, "the generated works", works_of, works_in(CLUSTERS[:2], "1"))
    await same_on_both(
        hubs, "the status", without_messages, conditions_are(PlacementVerified="True")
    )
    verified = cond_of(await hubs.ours.get_rs("rs"), "PlacementVerified")
    assert verified["reason"] == "AsExpected"
    assert verified["message"].startswith('placement "q": progressive.progressDeadline')
    assert cond_of(await hubs.ocm.get_rs("rs"), "PlacementVerified").get("message", "") == ""


def cond_of(rs: dict[str, Any], kind: str) -> dict[str, Any]:
    """The condition ``kind`` of a replica set's status."""
    conditions = (rs.get("status") or {}).get("conditions") or []
    return next(c for c in conditions if c["type"] == kind)
