"""ManifestWork garbage collection after ttlSecondsAfterFinished (hub spec section 3).

The decision itself is tested as a pure function of the work and a given
time; the controller is tested through the real manager against a hub (kubesim
and a real kube-apiserver), with works whose ``Complete`` condition the test
writes as an agent would.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from hubcontroller.controllers.garbage_collection import (
    CONTROLLER_NAME,
    Action,
    collection_verdict,
)
from ocmkit.kube import MANIFESTWORKS, KubeClient
from ocmkit.runtime import run_built
from schemas.meta import now as api_now
from schemas.wire import (
    CONDITION_APPLIED,
    CONDITION_COMPLETE,
    GATE_MANIFEST_WORK_REPLICA_SET,
    MANIFEST_WORK_REPLICA_SET_LABEL,
)
from tests.conftest import eventually, pool_for
from tests.hub_manager.conftest import (
    condition,
    exists,
    hub_test_client,
    wait_deleted,
    work_body,
    write_complete,
    write_conditions,
)
from tests.support.programs import CLUSTER, ManagerRunner, manager_settings
from tests.support.targets import open_cluster

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def completed(
    ttl: int | None, *, at: datetime = NOW, status: str = "True", **extra_meta: Any
) -> dict[str, Any]:
    """A work body with a TTL and a Complete condition that turned ``status`` at ``at``."""
    work = work_body("w", ttl=ttl)
    work["metadata"].update(extra_meta)
    work["status"] = {"conditions": [condition(CONDITION_COMPLETE, status, at)]}
    return work


# -- the decision ------------------------------------------------------------------------


def test_ttl_elapsed_deletes() -> None:
    verdict = collection_verdict(completed(60, at=NOW - timedelta(seconds=61)), NOW)
    assert verdict.action is Action.DELETE


def test_ttl_elapsed_exactly_deletes() -> None:
    assert collection_verdict(completed(60), NOW + timedelta(seconds=60)).action is Action.DELETE


def test_ttl_not_reached_waits_for_the_rest() -> None:
    verdict = collection_verdict(completed(60, at=NOW - timedelta(seconds=45)), NOW)
    assert verdict.action is Action.WAIT
    assert verdict.delay == pytest.approx(15.0)


def test_complete_in_the_future_waits_longer_than_the_ttl() -> None:
    # Clock skew between agent and hub: the wait is measured from the condition's time.
    verdict = collection_verdict(completed(10, at=NOW + timedelta(seconds=5)), NOW)
    assert verdict.action is Action.WAIT
    assert verdict.delay == pytest.approx(15.0)


@pytest.mark.parametrize("ttl", [0, -5])
def test_zero_or_negative_ttl_deletes_at_once(ttl: int) -> None:
    work = completed(ttl, at=NOW + timedelta(hours=1))
    assert collection_verdict(work, NOW).action is Action.DELETE


def test_no_delete_option_or_no_ttl_keeps() -> None:
    assert collection_verdict(completed(None), NOW).action is Action.KEEP
    work = completed(None)
    work["spec"]["deleteOption"] = {"propagationPolicy": "Orphan"}
    assert collection_verdict(work, NOW + timedelta(days=365)).action is Action.KEEP


@pytest.mark.parametrize("status", ["False", "Unknown"])
def test_complete_not_true_keeps(status: str) -> None:
    work = completed(0, status=status)
    assert collection_verdict(work, NOW + timedelta(days=1)).action is Action.KEEP


def test_no_complete_condition_keeps() -> None:
    work = completed(0)
    work["status"]["conditions"] = [condition(CONDITION_APPLIED, "True", NOW)]
    assert collection_verdict(work, NOW + timedelta(days=1)).action is Action.KEEP
    del work["status"]
    assert collection_verdict(work, NOW + timedelta(days=1)).action is Action.KEEP


def test_replica_set_label_keeps_whatever_its_value() -> None:
    work = completed(0, labels={MANIFEST_WORK_REPLICA_SET_LABEL: ""})
    verdict = collection_verdict(work, NOW + timedelta(days=1))
    assert verdict.action is Action.KEEP
    assert "ManifestWorkReplicaSet" in verdict.reason


def test_being_deleted_keeps() -> None:
    work = completed(0, deletionTimestamp="2025-03-01T11:00:00Z")
    assert collection_verdict(work, NOW + timedelta(days=1)).action is Action.KEEP


def test_unreadable_transition_time_counts_as_long_ago() -> None:
    # Go reads a missing time as the zero time, so OCM deletes; the CRD requires one anyway.
    work = completed(3600)
    del work["status"]["conditions"][0]["lastTransitionTime"]
    assert collection_verdict(work, NOW).action is Action.DELETE


# -- the controller, through the manager against a hub ------------------------------------


async def test_completed_work_past_its_ttl_is_deleted(
    manager: ManagerRunner, hub_client: KubeClient
) -> None:
    await hub_client.create(MANIFESTWORKS, work_body("done-long-ago", ttl=1))
    await write_complete(hub_client, "done-long-ago", api_now() - timedelta(minutes=5))
    await wait_deleted(hub_client, "done-long-ago")


async def test_ttl_zero_deletes_at_once(manager: ManagerRunner, hub_client: KubeClient) -> None:
    await hub_client.create(MANIFESTWORKS, work_body("done-now", ttl=0))
    # Even a Complete "in the future" (agent clock ahead) does not hold back a ttl of 0.
    await write_complete(hub_client, "done-now", api_now() + timedelta(hours=1))
    await wait_deleted(hub_client, "done-now")


async def test_ttl_not_reached_is_requeued_and_deleted_later(
    manager: ManagerRunner, hub_client: KubeClient
) -> None:
    def requeues() -> float:
        labels = {"controller": CONTROLLER_NAME, "result": "requeue_after"}
        return REGISTRY.get_sample_value("controller_runtime_reconcile_total", labels) or 0.0

    before = requeues()
    await hub_client.create(MANIFESTWORKS, work_body("done-soon", ttl=1))
    # Completed one second "from now" with a ttl of 1 s: about two seconds to wait.
    await write_complete(hub_client, "done-soon", api_now() + timedelta(seconds=1))
    await wait_deleted(hub_client, "done-soon")
    # The first look found the TTL running and requeued the key for the rest of it.
    assert requeues() > before


async def test_works_that_are_not_due_are_kept(
    manager: ManagerRunner, hub_client: KubeClient
) -> None:
    far = api_now() - timedelta(days=1)
    await hub_client.create(MANIFESTWORKS, work_body("no-complete", ttl=0))
    written = [
        await write_conditions(hub_client, "no-complete", condition(CONDITION_APPLIED, "True", far))
    ]
    await hub_client.create(MANIFESTWORKS, work_body("complete-false", ttl=0))
    written.append(
        await write_conditions(
            hub_client, "complete-false", condition(CONDITION_COMPLETE, "False", far)
        )
    )
    await hub_client.create(MANIFESTWORKS, work_body("no-ttl"))
    written.append(await write_complete(hub_client, "no-ttl", far))
    await hub_client.create(
        MANIFESTWORKS,
        work_body("from-replicaset", ttl=0, labels={MANIFEST_WORK_REPLICA_SET_LABEL: "ns.mwrs"}),
    )
    written.append(await write_complete(hub_client, "from-replicaset", far))
    for work in written:
        await manager.settled(work)
    for work in written:
        assert await exists(hub_client, work["metadata"]["name"])


async def test_work_being_deleted_is_left_to_its_finalizers(
    manager: ManagerRunner, hub_client: KubeClient
) -> None:
    body = work_body("held", ttl=0)
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await hub_client.create(MANIFESTWORKS, body)
    await hub_client.delete(MANIFESTWORKS, "held", CLUSTER)
    held = await write_complete(hub_client, "held")
    assert held["metadata"].get("deletionTimestamp")
    await manager.settled(held)
    assert await exists(hub_client, "held")
    await hub_client.patch(MANIFESTWORKS, "held", {"metadata": {"finalizers": None}}, CLUSTER)
    await wait_deleted(hub_client, "held")


async def test_a_work_completing_later_is_collected_then(
    manager: ManagerRunner, hub_client: KubeClient
) -> None:
    """Kept while running; collected once its Complete condition turns True."""
    await hub_client.create(MANIFESTWORKS, work_body("job", ttl=0))
    running = await write_conditions(
        hub_client, "job", condition(CONDITION_COMPLETE, "False", api_now())
    )
    await manager.settled(running)
    assert await exists(hub_client, "job")
    await write_complete(hub_client, "job")
    await wait_deleted(hub_client, "job")


async def test_gate_off_runs_no_collector(hub_client: KubeClient, tmp_path: Path) -> None:
    """Without CleanUpCompletedManifestWork the manager runs no collector: works stay."""
    await hub_client.create(MANIFESTWORKS, work_body("untouched", ttl=0))
    await write_complete(hub_client, "untouched")
    async with ManagerRunner(
        manager_settings(tmp_path / "kubeconfig", feature_gates=frozenset())
    ) as runner:
        assert runner.built is not None
        assert runner.built.manager.controllers == []
        # Nothing watches ManifestWorks at all: no gate needs them.
        assert runner.built.manager.informers == []
    assert runner.exit_code == 0
    assert await exists(hub_client, "untouched")


async def test_replicaset_gate_without_the_controller_is_a_config_error(
    hub_client: KubeClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gate ManifestWorkReplicaSet with no MWRS controller in the build: exit code 2."""
    import hubcontroller.manager as manager_module

    monkeypatch.setattr(manager_module, "load_replicaset_builder", lambda: None)
    settings = manager_settings(
        tmp_path / "kubeconfig", feature_gates=frozenset({GATE_MANIFEST_WORK_REPLICA_SET})
    )
    build = manager_module.build_hub_manager
    assert await run_built(lambda: build(settings, handle_signals=False)) == 2


async def test_work_driver_config_collects_works_in_that_cluster(
    hub_client: KubeClient, tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> None:
    """--work-driver-config: works are watched and deleted there; the hub keeps the rest."""
    async with open_cluster(target, pool_for(request, target)) as works_cluster:
        works_cluster.write_kubeconfig(tmp_path / "works.kubeconfig")
        works_client = await hub_test_client(tmp_path / "works.kubeconfig")
        try:
            settings = manager_settings(
                tmp_path / "kubeconfig", work_driver_config=str(tmp_path / "works.kubeconfig")
            )
            async with ManagerRunner(settings) as runner:
                for client in (works_client, hub_client):
                    await client.create(MANIFESTWORKS, work_body("elsewhere", ttl=0))
                    await write_complete(client, "elsewhere")
                await wait_deleted(works_client, "elsewhere")
                assert runner.built is not None
                assert runner.built.deps.works.client is not runner.built.deps.hub
            assert runner.exit_code == 0
            # The hub of --kubeconfig is not where ManifestWorks are read: untouched.
            assert await exists(hub_client, "elsewhere")
        finally:
            await works_client.close()


async def test_lease_is_held_and_released(hub_client: KubeClient, tmp_path: Path) -> None:
    """With leader election the manager holds Lease work-manager-lock in its namespace."""
    from ocmkit.kube import LEASES
    from ocmkit.runtime import LeaderElectionSettings

    election = LeaderElectionSettings(
        lease_name="work-manager-lock",
        namespace="open-cluster-management-hub",
        identity="manager-a",
    )
    async with ManagerRunner(
        manager_settings(tmp_path / "kubeconfig", leader_election=election)
    ) as runner:
        lease = await hub_client.get(LEASES, "work-manager-lock", "open-cluster-management-hub")
        assert lease["spec"]["holderIdentity"] == "manager-a"
        await hub_client.create(MANIFESTWORKS, work_body("led", ttl=0))
        await write_complete(hub_client, "led")
        await wait_deleted(hub_client, "led")
    assert runner.exit_code == 0

    async def released() -> bool:
        lease = await hub_client.get(LEASES, "work-manager-lock", "open-cluster-management-hub")
        return not lease["spec"].get("holderIdentity")

    await eventually(released, what="the Lease to be released")


async def test_both_gates_run_both_controllers_on_one_work_cache(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    """ManifestWorkReplicaSet + CleanUpCompletedManifestWork: one shared ManifestWork
    informer, the replica set controller's own informers, and both controllers."""
    from hubcontroller.manager import load_replicaset_builder
    from schemas.wire import GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK

    assert load_replicaset_builder() is not None, "the MWRS controller is part of this build"
    gates = frozenset({GATE_MANIFEST_WORK_REPLICA_SET, GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK})
    async with ManagerRunner(
        manager_settings(tmp_path / "kubeconfig", feature_gates=gates)
    ) as runner:
        assert runner.built is not None
        manager = runner.built.manager
        assert len(manager.controllers) == 2
        assert CONTROLLER_NAME in {c.name for c in manager.controllers}
        assert [i for i in manager.informers if i.resource == MANIFESTWORKS] == [
            runner.built.deps.works
        ]
        # The collector still works next to the replica set controller.
        await hub_client.create(MANIFESTWORKS, work_body("beside-mwrs", ttl=0))
        await write_complete(hub_client, "beside-mwrs")
        await wait_deleted(hub_client, "beside-mwrs")
    assert runner.exit_code == 0
