"""Deletion of applied resources, the finalizers and eviction (spec/agent.md sections 7, 8, 15).

Two layers, both against a hub and a spoke (kubesim, or real control planes)
through the real client and HTTP:

- ``delete_applied_resources`` called directly on a spoke, with objects
  owned (or not) the way the apply loop leaves them;
- the cleanup controllers (ManifestWorkFinalizer, AppliedManifestWorkFinalizer,
  eviction) running on a hub and a spoke, with the apply loop's results
  (AppliedManifestWork, owned objects, ``status.appliedResources``) created
  by the test, so each controller's contract is checked on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    CRDS,
    MANIFESTWORKS,
    NAMESPACES,
    KubeClient,
    NotFound,
    RESTMapper,
    ServerError,
)
from ocmkit.runtime import Informer
from schemas.crdgen import crd_for
from schemas.wire import (
    APPLIED_MANIFEST_WORK_FINALIZER,
    CONDITION_DELETING,
    MANIFEST_WORK_FINALIZER,
    REASON_WORK_DELETING,
)
from schemas.work_v1 import AppliedManifestWork, DeleteOption, ManifestWork
from tests.conftest import eventually, pool_for
from tests.integration.conftest import (
    configmap,
    delete_work,
    exists,
    forget_work,
    get_applied_work,
    get_work,
    has_cleanup_finalizer,
    wait_applied,
    work_body,
    work_condition,
)
from tests.support.programs import AgentRunner, agent_settings
from tests.support.targets import Cluster, open_cluster
from workagent.agent import cleanup_controllers
from workagent.apply.base import Applier, ApplyRequest
from workagent.controllers.deletion import ResourceDeletionError, delete_applied_resources
from workagent.controllers.deps import AgentDeps
from workagent.controllers.ownership import applied_work_owner, owned_by_the_work, owner_for
from workagent.executor.basic import BasicExecutorValidator
from workagent.identity import applied_work_name, hub_hash
from workagent.settings import EVICTION_DISABLED_AT, AgentSettings

CLUSTER = "cluster1"
NS = "ns1"
FOREIGN_FINALIZER = "example.com/hold"


# -- fixtures -----------------------------------------------------------------------------


class _NoApplier:
    """Applier stand-in: the cleanup controllers never apply."""

    async def apply(self, request: ApplyRequest) -> dict[str, Any]:
        raise AssertionError("the cleanup controllers must not apply manifests")


def _no_applier(strategy: object) -> Applier:
    return _NoApplier()


@dataclass
class Clusters:
    """A hub and a spoke with the work CRDs, and admin clients for them."""

    hub_cluster: Cluster
    spoke_cluster: Cluster
    hub: KubeClient
    spoke: KubeClient
    settings: AgentSettings
    hub_hash: str

    def deps(self, **settings: Any) -> AgentDeps:
        """Dependencies for the cleanup controllers (new, unstarted informers)."""
        merged = replace(self.settings, **settings)
        return AgentDeps(
            settings=merged,
            hub=self.hub,
            spoke=self.spoke,
            mapper=RESTMapper(self.spoke),
            hub_hash=self.hub_hash,
            agent_id=merged.agent_id or self.hub_hash,
            works=Informer(self.hub, MANIFESTWORKS, CLUSTER, name="manifestworks"),
            applied=Informer(self.spoke, APPLIED_MANIFESTWORKS, name="appliedmanifestworks"),
            # The real check: the cleanup controllers never call it.
            executor=BasicExecutorValidator(self.spoke),
            applier_for=_no_applier,
        )


async def _install(client: KubeClient, model: type[AppliedManifestWork | ManifestWork]) -> None:
    await client.create(CRDS, crd_for(model))
    res = APPLIED_MANIFESTWORKS if model is AppliedManifestWork else MANIFESTWORKS

    async def served() -> bool:
        try:
            await client.list(res)
        except NotFound:
            return False
        return True

    await eventually(served, what=f"{res} to be served")


@pytest.fixture
async def clusters(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Clusters]:
    """Hub (ManifestWork CRD, namespace ``cluster1``) and spoke (AMW CRD, namespace ``ns1``)."""
    pool = pool_for(request, target)
    async with (
        open_cluster(target, pool) as hub_cluster,
        open_cluster(target, pool) as spoke_cluster,
    ):
        hub_kc = hub_cluster.write_kubeconfig(tmp_path / "hub.kubeconfig")
        spoke_kc = spoke_cluster.write_kubeconfig(tmp_path / "spoke.kubeconfig")
        hub = await KubeClient.from_kubeconfig(str(hub_kc), qps=0, name="hub")
        spoke = await KubeClient.from_kubeconfig(
            str(spoke_kc), qps=0, user_agent="work-agent", name="spoke"
        )
        try:
            await _install(hub, ManifestWork)
            await _install(spoke, AppliedManifestWork)
            await hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
            await spoke.create(NAMESPACES, {"metadata": {"name": NS}})
            settings = AgentSettings(
                cluster_name=CLUSTER,
                hub_kubeconfig=str(hub_kc),
                spoke_kubeconfig=str(spoke_kc),
                workers=2,
            )
            yield Clusters(
                hub_cluster, spoke_cluster, hub, spoke, settings, hub_hash(hub_cluster.url)
            )
        finally:
            await hub.close()
            await spoke.close()


@contextlib.asynccontextmanager
async def running_cleanup(deps: AgentDeps) -> AsyncIterator[None]:
    """Run the cleanup controllers of ``deps`` (and their informers) until the block ends."""
    controllers = cleanup_controllers(deps)
    await deps.works.start()
    await deps.applied.start()
    tasks = [asyncio.create_task(c.run()) for c in controllers]
    try:
        for controller in controllers:
            await controller.wait_started()
        yield
    finally:
        for controller in controllers:
            await controller.stop(deadline=5.0)
        await asyncio.gather(*tasks, return_exceptions=True)
        await deps.works.stop()
        await deps.applied.stop()


# -- helpers: what the apply loop would have left behind ----------------------------------


async def _applied_work(
    clusters: Clusters, work: str, *, agent_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """An AppliedManifestWork for ``work`` as the apply loop creates it."""
    return await clusters.spoke.create(
        APPLIED_MANIFESTWORKS,
        {
            "apiVersion": APPLIED_MANIFESTWORKS.api_version,
            "kind": APPLIED_MANIFESTWORKS.kind,
            "metadata": {
                "name": name or applied_work_name(clusters.hub_hash, work),
                "finalizers": [APPLIED_MANIFEST_WORK_FINALIZER],
            },
            "spec": {
                "hubHash": clusters.hub_hash,
                "manifestWorkName": work,
                "agentID": clusters.hub_hash if agent_id is None else agent_id,
            },
        },
    )


async def _configmap(
    spoke: KubeClient,
    name: str,
    owners: list[dict[str, Any]],
    *,
    finalizers: list[str] | None = None,
    namespace: str = NS,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = owners
    if finalizers:
        meta["finalizers"] = finalizers
    return await spoke.create(
        CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}
    )


def _entry(obj: dict[str, Any], resource: str = "configmaps", group: str = "") -> dict[str, Any]:
    """The ``status.appliedResources`` entry the apply loop records for ``obj``."""
    meta = obj["metadata"]
    return {
        "group": group,
        "version": "v1",
        "resource": resource,
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta["uid"],
    }


async def _record(
    spoke: KubeClient, applied: dict[str, Any], entries: list[dict[str, Any]]
) -> None:
    """Write ``status.appliedResources`` as the apply loop's bookkeeping does."""
    await spoke.patch(
        APPLIED_MANIFESTWORKS,
        applied["metadata"]["name"],
        {"status": {"appliedResources": entries}},
        subresource="status",
    )


async def _get_or_none(client: KubeClient, res: Any, name: str, ns: str | None = None) -> Any:
    try:
        return await client.get(res, name, ns)
    except NotFound:
        return None


def _gone(client: KubeClient, res: Any, name: str, ns: str | None = None) -> Callable[[], Any]:
    async def check() -> bool:
        return await _get_or_none(client, res, name, ns) is None

    return check


async def _drop_finalizers(spoke: KubeClient, name: str) -> None:
    await spoke.patch(CONFIGMAPS, name, {"metadata": {"finalizers": None}}, NS)


def _owner_uids(obj: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or []]


# -- delete_applied_resources, directly ---------------------------------------------------


async def test_owned_resource_is_deleted_and_gone_when_the_delete_says_so(
    clusters: Clusters,
) -> None:
    deps = clusters.deps()
    applied = await _applied_work(clusters, "work1")
    owner = applied_work_owner(applied)
    cm = await _configmap(clusters.spoke, "cm1", [owner])

    pending, errors = await delete_applied_resources(deps, [_entry(cm)], "test", owner)
    assert errors == []
    # The DELETE answered with a success Status, not the object: it is gone, nothing
    # is pending (an object held by a finalizer is: see the next test).
    assert pending == []
    await eventually(_gone(clusters.spoke, CONFIGMAPS, "cm1", NS), what="cm1 deleted")

    pending, errors = await delete_applied_resources(deps, [_entry(cm)], "test", owner)
    assert (pending, errors) == ([], [])


async def test_foreground_waits_for_foreign_finalizers(clusters: Clusters) -> None:
    deps = clusters.deps()
    applied = await _applied_work(clusters, "work1")
    owner = applied_work_owner(applied)
    held = await _configmap(clusters.spoke, "held", [owner], finalizers=[FOREIGN_FINALIZER])
    entries = [_entry(held)]

    for _ in range(2):
        # Still there, being deleted: pending each time, deleted only once.
        pending, errors = await delete_applied_resources(deps, entries, "test", owner)
        assert (pending, errors) == (entries, [])
        live = await clusters.spoke.get(CONFIGMAPS, "held", NS)
        assert live["metadata"].get("deletionTimestamp")

    await _drop_finalizers(clusters.spoke, "held")
    await eventually(_gone(clusters.spoke, CONFIGMAPS, "held", NS), what="held deleted")
    pending, errors = await delete_applied_resources(deps, entries, "test", owner)
    assert (pending, errors) == ([], [])


async def test_shared_resource_is_disowned_not_deleted(clusters: Clusters) -> None:
    deps = clusters.deps()
    first = applied_work_owner(await _applied_work(clusters, "work1"))
    second = applied_work_owner(await _applied_work(clusters, "work2"))
    shared = await _configmap(clusters.spoke, "shared", [first, second])

    pending, errors = await delete_applied_resources(deps, [_entry(shared)], "test", first)
    assert (pending, errors) == ([], [])
    live = await clusters.spoke.get(CONFIGMAPS, "shared", NS)
    assert _owner_uids(live) == [second["uid"]]
    assert live["metadata"]["uid"] == shared["metadata"]["uid"]

    # The last owner deletes it (gone at once: nothing pending).
    pending, errors = await delete_applied_resources(deps, [_entry(shared)], "test", second)
    assert (pending, errors) == ([], [])
    await eventually(_gone(clusters.spoke, CONFIGMAPS, "shared", NS), what="shared deleted")


async def test_owners_that_are_not_applied_works_do_not_protect(clusters: Clusters) -> None:
    deps = clusters.deps()
    owner = applied_work_owner(await _applied_work(clusters, "work1"))
    parent = await _configmap(clusters.spoke, "parent", [])
    parent_ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "parent",
        "uid": parent["metadata"]["uid"],
    }
    child = await _configmap(clusters.spoke, "child", [owner, parent_ref])

    pending, errors = await delete_applied_resources(deps, [_entry(child)], "test", owner)
    assert (pending, errors) == ([], [])
    await eventually(_gone(clusters.spoke, CONFIGMAPS, "child", NS), what="child deleted")
    assert await _get_or_none(clusters.spoke, CONFIGMAPS, "parent", NS) is not None


@pytest.mark.parametrize(
    ("delete_option", "kept"),
    [
        ({"propagationPolicy": "Foreground"}, set()),
        ({"propagationPolicy": "Orphan"}, {"cm-a", "cm-b"}),
        (
            {
                "propagationPolicy": "SelectivelyOrphan",
                "selectivelyOrphans": {
                    "orphaningRules": [
                        {"group": "", "resource": "configmaps", "namespace": NS, "name": "cm-b"}
                    ]
                },
            },
            {"cm-b"},
        ),
    ],
)
async def test_delete_options_through_owner_references(
    clusters: Clusters, delete_option: dict[str, Any], kept: set[str]
) -> None:
    """Objects created with the owner the apply loop picks (section 4.4 step 3.5)."""
    deps = clusters.deps()
    option = DeleteOption.from_wire(delete_option)
    owner = applied_work_owner(await _applied_work(clusters, "work1"))
    entries = []
    for name in ("cm-a", "cm-b"):
        ref = owner_for(owner, owned_by_the_work("", "configmaps", NS, name, option))
        # A removal marker is never written: the object is created without it.
        owners = [ref] if ref["uid"] == owner["uid"] else []
        entries.append(_entry(await _configmap(clusters.spoke, name, owners)))

    pending, errors = await delete_applied_resources(deps, entries, "test", owner)
    # Deleted objects are gone at once (no finalizers), kept ones are dropped.
    assert (pending, errors) == ([], [])
    for name in ("cm-a", "cm-b"):
        if name in kept:
            assert await _get_or_none(clusters.spoke, CONFIGMAPS, name, NS) is not None
        else:
            await eventually(_gone(clusters.spoke, CONFIGMAPS, name, NS), what=f"{name} deleted")


async def test_already_gone_and_replaced_instances_are_dropped(clusters: Clusters) -> None:
    deps = clusters.deps()
    owner = applied_work_owner(await _applied_work(clusters, "work1"))
    gone = {"group": "", "version": "v1", "resource": "configmaps", "namespace": NS}
    gone |= {"name": "never-existed", "uid": "0000"}
    unknown_type = {"group": "example.com", "version": "v1", "resource": "widgets"}
    unknown_type |= {"namespace": NS, "name": "w1", "uid": "1111"}
    # Same name, owned by us, but not the recorded instance: someone recreated it.
    recreated = await _configmap(clusters.spoke, "recreated", [owner])
    stale_entry = {**_entry(recreated), "uid": "an-older-uid"}

    pending, errors = await delete_applied_resources(
        deps, [gone, unknown_type, stale_entry], "test", owner
    )
    assert (pending, errors) == ([], [])
    assert await _get_or_none(clusters.spoke, CONFIGMAPS, "recreated", NS) is not None


async def test_cluster_scoped_resource_stays_pending_while_terminating(
    clusters: Clusters,
) -> None:
    deps = clusters.deps()
    owner = applied_work_owner(await _applied_work(clusters, "work1"))
    ns = await clusters.spoke.create(
        NAMESPACES, {"metadata": {"name": "owned-ns", "ownerReferences": [owner]}}
    )
    await _configmap(clusters.spoke, "inside", [], namespace="owned-ns")
    entry = {"group": "", "version": "v1", "resource": "namespaces", "namespace": ""}
    entry |= {"name": "owned-ns", "uid": ns["metadata"]["uid"]}

    pending, errors = await delete_applied_resources(deps, [entry], "test", owner)
    assert (pending, errors) == ([entry], [])

    async def finished() -> bool:
        pending, errors = await delete_applied_resources(deps, [entry], "test", owner)
        assert errors == []
        return pending == []

    await eventually(finished, what="the namespace to be gone")


@pytest.mark.kubesim_only("fault injection: the spoke answers one DELETE of a ConfigMap 500")
async def test_errors_keep_the_entry_pending(clusters: Clusters) -> None:
    deps = clusters.deps()
    owner = applied_work_owner(await _applied_work(clusters, "work1"))
    failing = await _configmap(clusters.spoke, "failing", [owner])
    fine = await _configmap(clusters.spoke, "fine", [owner])
    assert isinstance(clusters.spoke_cluster, KubeSim)
    clusters.spoke_cluster.inject(verb="delete", resource="configmaps", code=500, count=1)

    pending, errors = await delete_applied_resources(
        deps, [_entry(failing), _entry(fine)], "test", owner
    )
    # One of the two deletes failed (the concurrent order decides which): it is
    # still tracked, and the error names it; the other one is gone.
    assert len(pending) == 1
    assert pending[0] in (_entry(failing), _entry(fine))
    assert len(errors) == 1
    error = errors[0]
    assert isinstance(error, ResourceDeletionError)
    assert isinstance(error.cause, ServerError)
    assert "failed to delete configmaps/v1 ns1/" in str(error)

    async def finished() -> bool:
        pending, _ = await delete_applied_resources(
            deps, [_entry(failing), _entry(fine)], "test", owner
        )
        return pending == []

    await eventually(finished, what="both deleted after the fault")


# -- the cleanup controllers --------------------------------------------------------------


async def _work(hub: KubeClient, name: str) -> dict[str, Any]:
    """A ManifestWork as it looks once the add-finalizer controller saw it."""
    return await hub.create(
        MANIFESTWORKS,
        {
            "apiVersion": MANIFESTWORKS.api_version,
            "kind": MANIFESTWORKS.kind,
            "metadata": {
                "name": name,
                "namespace": CLUSTER,
                "finalizers": [MANIFEST_WORK_FINALIZER],
            },
            "spec": {
                "workload": {
                    "manifests": [
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
                    ]
                }
            },
        },
        CLUSTER,
    )


async def test_hub_work_goes_only_after_its_resources(clusters: Clusters) -> None:
    deps = clusters.deps()
    await _work(clusters.hub, "work1")
    applied = await _applied_work(clusters, "work1")
    owner = applied_work_owner(applied)
    held = await _configmap(clusters.spoke, "held", [owner], finalizers=[FOREIGN_FINALIZER])
    plain = await _configmap(clusters.spoke, "plain", [owner])
    await _record(clusters.spoke, applied, [_entry(held), _entry(plain)])
    amw_name = applied["metadata"]["name"]

    async with running_cleanup(deps):
        await clusters.hub.delete(MANIFESTWORKS, "work1", CLUSTER)
        await eventually(_gone(clusters.spoke, CONFIGMAPS, "plain", NS), what="plain deleted")

        async def only_held_left() -> bool:
            amw = await clusters.spoke.get(APPLIED_MANIFESTWORKS, amw_name)
            return bool(amw["status"].get("appliedResources") == [_entry(held)])

        await eventually(only_held_left, what="the AMW to list only the held resource")
        # The foreign finalizer holds the resource, so the AMW and the hub work stay, and
        # the work says so (written after the AMW's pass that was held up).
        work: dict[str, Any] = {}

        async def deleting_reported() -> bool:
            work.update(await clusters.hub.get(MANIFESTWORKS, "work1", CLUSTER))
            conditions = work.get("status", {}).get("conditions") or []
            return any(c["type"] == CONDITION_DELETING for c in conditions)

        await eventually(deleting_reported, what="the work's Deleting condition")
        assert work["metadata"]["finalizers"] == [MANIFEST_WORK_FINALIZER]
        deleting = [c for c in work["status"]["conditions"] if c["type"] == CONDITION_DELETING]
        assert len(deleting) == 1
        assert deleting[0]["status"] == "True"
        assert deleting[0]["reason"] == REASON_WORK_DELETING
        assert deleting[0]["message"] == "ManifestWork is being deleted"
        amw = await clusters.spoke.get(APPLIED_MANIFESTWORKS, amw_name)
        assert amw["metadata"]["deletionTimestamp"]
        assert amw["metadata"]["finalizers"] == [APPLIED_MANIFEST_WORK_FINALIZER]
        live = await clusters.spoke.get(CONFIGMAPS, "held", NS)
        assert live["metadata"]["deletionTimestamp"]

        await _drop_finalizers(clusters.spoke, "held")
        await eventually(
            _gone(clusters.hub, MANIFESTWORKS, "work1", CLUSTER), what="the hub work to go"
        )
        assert await _get_or_none(clusters.spoke, APPLIED_MANIFESTWORKS, amw_name) is None
        assert await _get_or_none(clusters.spoke, CONFIGMAPS, "held", NS) is None


async def test_work_without_applied_work_is_released(clusters: Clusters) -> None:
    deps = clusters.deps()
    await _work(clusters.hub, "never-applied")
    async with running_cleanup(deps):
        await delete_work(clusters.hub, "never-applied", what="the work to go")


async def test_shared_resource_survives_deletion_of_one_work(clusters: Clusters) -> None:
    deps = clusters.deps()
    for work in ("work1", "work2"):
        await _work(clusters.hub, work)
    first = await _applied_work(clusters, "work1")
    second = await _applied_work(clusters, "work2")
    shared = await _configmap(
        clusters.spoke, "shared", [applied_work_owner(first), applied_work_owner(second)]
    )
    own = await _configmap(clusters.spoke, "own1", [applied_work_owner(first)])
    await _record(clusters.spoke, first, [_entry(shared), _entry(own)])
    await _record(clusters.spoke, second, [_entry(shared)])

    async with running_cleanup(deps):
        await delete_work(clusters.hub, "work1", what="work1 gone")
        assert await _get_or_none(clusters.spoke, CONFIGMAPS, "own1", NS) is None
        live = await clusters.spoke.get(CONFIGMAPS, "shared", NS)
        assert _owner_uids(live) == [second["metadata"]["uid"]]

        await delete_work(clusters.hub, "work2", what="work2 gone")
        assert await _get_or_none(clusters.spoke, CONFIGMAPS, "shared", NS) is None


async def test_applied_work_deleted_by_hand_cleans_up(clusters: Clusters) -> None:
    """The AMW finalizer acts on any deletion of this agent's records, not only the hub's."""
    deps = clusters.deps()
    applied = await _applied_work(clusters, "work1")
    cm = await _configmap(clusters.spoke, "cm1", [applied_work_owner(applied)])
    await _record(clusters.spoke, applied, [_entry(cm)])
    # Keep eviction out of this test: the work does not exist on the hub.
    deps = clusters.deps(eviction_grace_period=EVICTION_DISABLED_AT)
    async with running_cleanup(deps):
        await clusters.spoke.delete(APPLIED_MANIFESTWORKS, applied["metadata"]["name"])
        await eventually(
            _gone(clusters.spoke, APPLIED_MANIFESTWORKS, applied["metadata"]["name"]),
            what="the AMW to go",
        )
        assert await _get_or_none(clusters.spoke, CONFIGMAPS, "cm1", NS) is None


async def test_unmanaged_applied_work_is_evicted_after_the_grace_period(
    clusters: Clusters,
) -> None:
    # Another agent's record, listed first: a single-worker queue would reach it first.
    foreign = await _applied_work(clusters, "orphan-work", agent_id="another-agent", name="0-other")
    applied = await _applied_work(clusters, "gone-from-hub")
    cm = await _configmap(clusters.spoke, "cm1", [applied_work_owner(applied)])
    await _record(clusters.spoke, applied, [_entry(cm)])
    name = applied["metadata"]["name"]
    deps = clusters.deps(eviction_grace_period=0.5)

    async with running_cleanup(deps):

        async def started() -> bool:
            amw = await _get_or_none(clusters.spoke, APPLIED_MANIFESTWORKS, name)
            return amw is None or bool((amw.get("status") or {}).get("evictionStartTime"))

        await eventually(started, what="the grace period to start")
        await eventually(_gone(clusters.spoke, APPLIED_MANIFESTWORKS, name), what="eviction")
        assert await _get_or_none(clusters.spoke, CONFIGMAPS, "cm1", NS) is None
        other = await clusters.spoke.get(APPLIED_MANIFESTWORKS, foreign["metadata"]["name"])
        assert not other["metadata"].get("deletionTimestamp")
        assert not (other.get("status") or {}).get("evictionStartTime")


async def test_work_coming_back_cancels_eviction(clusters: Clusters) -> None:
    applied = await _applied_work(clusters, "work1")
    name = applied["metadata"]["name"]
    # A grace period far longer than the test: it must be cancelled, not expire.
    deps = clusters.deps(eviction_grace_period=3600.0)
    async with running_cleanup(deps):

        async def eviction_started() -> bool:
            amw = await clusters.spoke.get(APPLIED_MANIFESTWORKS, name)
            return bool((amw.get("status") or {}).get("evictionStartTime"))

        await eventually(eviction_started, what="the grace period to start")
        await _work(clusters.hub, "work1")

        async def cleared() -> bool:
            return not await eviction_started()

        await eventually(cleared, what="evictionStartTime to be cleared")
        amw = await clusters.spoke.get(APPLIED_MANIFESTWORKS, name)
        assert not amw["metadata"].get("deletionTimestamp")


async def test_eviction_disabled_clears_the_start_time(clusters: Clusters) -> None:
    applied = await _applied_work(clusters, "gone-from-hub")
    name = applied["metadata"]["name"]
    await clusters.spoke.patch(
        APPLIED_MANIFESTWORKS,
        name,
        {"status": {"evictionStartTime": "2000-01-01T00:00:00Z"}},
        subresource="status",
    )
    deps = clusters.deps(eviction_grace_period=EVICTION_DISABLED_AT)
    async with running_cleanup(deps):

        async def cleared() -> bool:
            amw = await clusters.spoke.get(APPLIED_MANIFESTWORKS, name)
            return not (amw.get("status") or {}).get("evictionStartTime")

        await eventually(cleared, what="evictionStartTime to be cleared")
        amw = await clusters.spoke.get(APPLIED_MANIFESTWORKS, name)
        assert not amw["metadata"].get("deletionTimestamp")


# -- end to end: the real agent (tests/integration/conftest.py) ---------------------------


async def _owner_count(spoke_client: KubeClient, name: str) -> int:
    live = await spoke_client.get(CONFIGMAPS, name, "default")
    return len(live["metadata"].get("ownerReferences") or [])


async def _wait_owner_count(spoke_client: KubeClient, name: str, count: int) -> None:
    async def check() -> bool:
        return await _owner_count(spoke_client, name) == count

    await eventually(check, what=f"{name} to have {count} owner reference(s)")


async def test_e2e_work_deletion_waits_for_every_applied_resource(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    await hub_client.create(
        MANIFESTWORKS, work_body("doomed", [configmap("held"), configmap("plain")])
    )
    await wait_applied(hub_client, "doomed")
    the_hash = agent.hub_hash
    # A foreign finalizer (another controller's cleanup) holds one resource.
    await spoke_client.patch(
        CONFIGMAPS, "held", {"metadata": {"finalizers": [FOREIGN_FINALIZER]}}, "default"
    )

    await hub_client.delete(MANIFESTWORKS, "doomed", CLUSTER)
    await eventually(
        _gone(spoke_client, CONFIGMAPS, "plain", "default"), what="the plain resource deleted"
    )

    async def held_is_terminating() -> bool:
        live = await spoke_client.get(CONFIGMAPS, "held", "default")
        return bool(live["metadata"].get("deletionTimestamp"))

    await eventually(held_is_terminating, what="the held resource to be deleted")
    # Everything upstream of the held resource still exists.
    applied = await get_applied_work(spoke_client, the_hash, "doomed")
    assert applied is not None
    assert applied["metadata"].get("deletionTimestamp")
    # Deleting is written after the AMW's pass that was held up: it can trail the DELETE.
    work: dict[str, Any] = {}

    async def deleting_reported() -> bool:
        work.update(await get_work(hub_client, "doomed"))
        return work_condition(work, CONDITION_DELETING) is not None

    await eventually(deleting_reported, what="the work's Deleting condition")
    assert has_cleanup_finalizer(work)
    deleting = work_condition(work, CONDITION_DELETING)
    assert deleting is not None
    assert (deleting["status"], deleting["reason"], deleting["message"]) == (
        "True",
        REASON_WORK_DELETING,
        "ManifestWork is being deleted",
    )
    assert deleting["observedGeneration"] == work["metadata"]["generation"]
    # The status of a work whose clean-up is held up is still synced, for the
    # generation the deletion gave it (a real apiserver bumps it), as in OCM.
    generation = work["metadata"]["generation"]

    async def available_for_the_generation() -> bool:
        available = work_condition(await get_work(hub_client, "doomed"), "Available")
        return available is not None and available.get("observedGeneration") == generation

    await eventually(available_for_the_generation, what="Available for the deleting generation")

    await spoke_client.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, "default")
    await eventually(
        _gone(hub_client, MANIFESTWORKS, "doomed", CLUSTER), what="the hub work to disappear"
    )
    assert await get_applied_work(spoke_client, the_hash, "doomed") is None
    assert not await exists(spoke_client, CONFIGMAPS, "held", "default")


_ORPHAN_B = {
    "propagationPolicy": "SelectivelyOrphan",
    "selectivelyOrphans": {
        "orphaningRules": [
            {"group": "", "resource": "configmaps", "namespace": "default", "name": "opt-b"}
        ]
    },
}


@pytest.mark.parametrize(
    ("delete_option", "kept"),
    [
        (None, set()),
        ({"propagationPolicy": "Foreground"}, set()),
        ({"propagationPolicy": "Orphan"}, {"opt-a", "opt-b"}),
        (_ORPHAN_B, {"opt-b"}),
    ],
    ids=["absent", "Foreground", "Orphan", "SelectivelyOrphan"],
)
async def test_e2e_delete_options(
    agent: AgentRunner,
    hub_client: KubeClient,
    spoke_client: KubeClient,
    delete_option: dict[str, Any] | None,
    kept: set[str],
) -> None:
    spec = {} if delete_option is None else {"deleteOption": delete_option}
    await hub_client.create(
        MANIFESTWORKS, work_body("opts", [configmap("opt-a"), configmap("opt-b")], **spec)
    )
    await wait_applied(hub_client, "opts")
    for name in ("opt-a", "opt-b"):
        await _wait_owner_count(spoke_client, name, 0 if name in kept else 1)

    await delete_work(hub_client, "opts", what="the work to go")
    assert await get_applied_work(spoke_client, agent.hub_hash, "opts") is None
    for name in ("opt-a", "opt-b"):
        assert await exists(spoke_client, CONFIGMAPS, name, "default") is (name in kept)


async def test_e2e_orphaning_follows_changes_of_the_delete_option(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """An orphaning rule removed from the spec gives the owner reference back (0 -> 1)."""
    await hub_client.create(
        MANIFESTWORKS, work_body("switch", [configmap("opt-b")], deleteOption=_ORPHAN_B)
    )
    await wait_applied(hub_client, "switch")
    await _wait_owner_count(spoke_client, "opt-b", 0)

    await hub_client.patch(
        MANIFESTWORKS,
        "switch",
        {"spec": {"deleteOption": {"propagationPolicy": "Foreground", "selectivelyOrphans": None}}},
        CLUSTER,
    )
    await _wait_owner_count(spoke_client, "opt-b", 1)
    await delete_work(hub_client, "switch", what="the work to go")
    assert not await exists(spoke_client, CONFIGMAPS, "opt-b", "default")


async def test_e2e_shared_resource_survives_deletion_of_one_work(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    await hub_client.create(
        MANIFESTWORKS, work_body("first", [configmap("shared"), configmap("first-own")])
    )
    await hub_client.create(MANIFESTWORKS, work_body("second", [configmap("shared")]))
    await wait_applied(hub_client, "first")
    await wait_applied(hub_client, "second")
    await _wait_owner_count(spoke_client, "shared", 2)
    shared_uid = (await spoke_client.get(CONFIGMAPS, "shared", "default"))["metadata"]["uid"]

    await delete_work(hub_client, "first", what="first to go")
    assert not await exists(spoke_client, CONFIGMAPS, "first-own", "default")
    live = await spoke_client.get(CONFIGMAPS, "shared", "default")
    assert live["metadata"]["uid"] == shared_uid
    second = await get_applied_work(spoke_client, agent.hub_hash, "second")
    assert second is not None
    assert _owner_uids(live) == [second["metadata"]["uid"]]

    await delete_work(hub_client, "second", what="second to go")
    assert not await exists(spoke_client, CONFIGMAPS, "shared", "default")


async def test_e2e_work_deleted_while_the_agent_was_away_is_evicted(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """The hub forgot a work (finalizer removed by hand); after the grace period the
    agent deletes its AppliedManifestWork and resources."""
    async with AgentRunner(agent_settings(tmp_path, eviction_grace_period=0.5)) as runner:
        await hub_client.create(MANIFESTWORKS, work_body("forgotten", [configmap("left")]))
        await hub_client.create(MANIFESTWORKS, work_body("kept", [configmap("stays")]))
        await wait_applied(hub_client, "forgotten")
        await wait_applied(hub_client, "kept")
        the_hash = runner.hub_hash
        await runner.stop()

        await forget_work(hub_client, "forgotten")
        assert await get_applied_work(spoke_client, the_hash, "forgotten") is not None

        await runner.start()

        async def evicted() -> bool:
            return await get_applied_work(spoke_client, the_hash, "forgotten") is None

        await eventually(evicted, what="the unmanaged AppliedManifestWork to be evicted")
        assert not await exists(spoke_client, CONFIGMAPS, "left", "default")
        kept = await get_applied_work(spoke_client, the_hash, "kept")
        assert kept is not None
        assert not kept["metadata"].get("deletionTimestamp")
        assert not (kept.get("status") or {}).get("evictionStartTime")
        assert await exists(spoke_client, CONFIGMAPS, "stays", "default")


async def test_e2e_eviction_disabled_keeps_unmanaged_work(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    async with AgentRunner(
        agent_settings(tmp_path, eviction_grace_period=EVICTION_DISABLED_AT)
    ) as runner:
        await hub_client.create(MANIFESTWORKS, work_body("forgotten", [configmap("left")]))
        await wait_applied(hub_client, "forgotten")
        the_hash = runner.hub_hash
        await runner.stop()
        await forget_work(hub_client, "forgotten")
        # An eviction started by an earlier run with eviction on.
        await spoke_client.patch(
            APPLIED_MANIFESTWORKS,
            applied_work_name(the_hash, "forgotten"),
            {"status": {"evictionStartTime": "2000-01-01T00:00:00Z"}},
            subresource="status",
        )
        await runner.start()

        async def cleared() -> bool:
            applied = await get_applied_work(spoke_client, the_hash, "forgotten")
            assert applied is not None
            return not (applied.get("status") or {}).get("evictionStartTime")

        await eventually(cleared, what="evictionStartTime to be cleared")
        applied = await get_applied_work(spoke_client, the_hash, "forgotten")
        assert applied is not None
        assert not applied["metadata"].get("deletionTimestamp")
        assert await exists(spoke_client, CONFIGMAPS, "left", "default")
