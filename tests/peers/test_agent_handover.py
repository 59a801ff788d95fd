"""Replacing OCM's Go work agent by ours on a running managed cluster, and rolling back.

One real hub and one real managed cluster. OCM's ``work agent`` (v1.2.1, kube
driver; a fixed ``--agent-id`` as the Klusterlet gives it, or none) applies works of the
side-by-side corpus covering every strategy, status feedback, condition rules,
delete options and failing applies; the test records what it left: the hub
works, the AppliedManifestWorks and every object they list (uid,
resourceVersion, managed fields). Then OCM's agent gets SIGTERM and ours starts
with the same flags on the same cluster. An operator expects nothing to move:
no object deleted or re-created, nothing rewritten that did not need it, the
AppliedManifestWorks adopted as they are, the hub status as it was. Then the
works change under our agent (a new generation dropping a manifest, deletions
with and without orphaning, a new work), and finally OCM's agent comes back
and must accept what ours left.

Neither agent writes anything when it takes over from the other (every write
would be a difference to explain); a write fails the test with what changed.
Runs in the real leg only; ``make ocm`` builds OCM's binary.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    MANIFESTWORKS,
    SECRETS,
    KubeClient,
    NotFound,
)
from ocmkit.kube.resource import Resource
from tests.conftest import eventually
from tests.integration.conftest import work_body
from tests.metrics_reference import parse_scrape
from tests.peers.test_agent_side_by_side import (
    CASES,
    NS,
    Case,
    Side,
    diff,
    hub_side,
    settled,
    spoke_side,
)
from tests.support.manifests import configmap
from tests.support.ocmpeer import Peer, start_ocm_agent, start_our_agent
from tests.support.processes import ProgramProcess, free_port
from tests.support.programs import CLUSTER
from tests.support.targets import PlanePool

pytestmark = pytest.mark.realkube

#: The agent identity the Klusterlet gives both agents (also run without one).
AGENT_ID = "agent-of-the-handover"
#: The works OCM's agent applies before the handover (the side-by-side corpus's).
HANDED_OVER = [
    "plain",  # Update, typed paths: ConfigMap, Secret, Namespace, ClusterRole
    "feedback",  # Update, generic path: a Deployment; WellKnownStatus, JSONPaths, CEL rules
    "crd-and-resource",  # a CRD shipped with its custom resource
    "service",  # Update with OCM's spec-hash annotation
    "string-data",  # a Secret's stringData folded into data
    "foreign-metadata",  # labels and annotations merged into someone else's object
    "create-only",
    "ssa-conflict",  # ServerSideApply without force on a field someone else owns: fails
    "ssa-force",
    "ssa-ignore-fields",
    "read-only",
    "read-only-missing",
    "watched",  # ReadOnly with Watch-mode feedback
    "job",  # a Complete condition rule: the work is frozen once complete
    "invalid",  # fails to apply
    "orphan",
    "selective",
]
#: Works whose status must be settled before the handover (the cases' own tests).
READY: dict[str, Case] = {name: CASES[name] for name in HANDED_OVER}
CREATED = Case([configmap("created-under-ours", a="1")])
#: Objects of the works deleted under our agent that stay.
ORPHANED = ("orphan-kept", "selective-kept")
#: "plain" under our agent: the Secret is dropped and the ConfigMap changed.
PLAIN_AFTER = [configmap("plain-cm", a="2"), *CASES["plain"].manifests[2:]]


@dataclass(frozen=True)
class Snapshot:
    """What the agents wrote that an operator would look at, by a readable key."""

    works: dict[str, dict[str, Any]]
    applied: dict[str, dict[str, Any]]
    objects: dict[str, dict[str, Any]]

    def uids(self) -> dict[str, str]:
        """Every object's uid, by key."""
        return {key: obj["uid"] for key, obj in self.objects.items()}


def _applied_entry(applied: dict[str, Any]) -> dict[str, Any]:
    meta = applied["metadata"]
    return {
        "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"],
        "finalizers": meta.get("finalizers"),
        "labels": meta.get("labels"),
        "annotations": meta.get("annotations"),
        "ownerReferences": meta.get("ownerReferences"),
        "managedFields": meta.get("managedFields"),
        "spec": applied["spec"],
        "status": applied.get("status"),
    }


def _object_key(res: dict[str, Any]) -> str:
    return f"{res['resource']}.{res['group']}/{res.get('namespace') or ''}/{res['name']}"


#: Objects no AppliedManifestWork lists (any more) that the test still watches.
LEFTOVERS = [
    {"group": "", "version": "v1", "resource": "configmaps", "namespace": NS, "name": name}
    for name in ("orphan-kept", "selective-kept", "selective-gone", "not-there")
] + [{"group": "", "version": "v1", "resource": "secrets", "namespace": NS, "name": "plain-secret"}]


async def read_work(hub: KubeClient, name: str) -> dict[str, Any] | None:
    """The hub work ``name`` (None when gone)."""
    try:
        return await hub.get(MANIFESTWORKS, name, CLUSTER)
    except NotFound:
        return None


async def snapshot(hub: KubeClient, side: Side, names: list[str]) -> Snapshot:
    """The hub works ``names`` (None when gone), every AppliedManifestWork of the
    managed cluster, and every object one lists or :data:`LEFTOVERS` names."""
    works: dict[str, dict[str, Any]] = {}
    for name in names:
        work = await read_work(hub, name)
        works[name] = (
            {
                "resourceVersion": work["metadata"]["resourceVersion"],
                "generation": work["metadata"]["generation"],
                "finalizers": work["metadata"].get("finalizers"),
                "status": work.get("status"),
            }
            if work is not None
            else {}
        )
    listed = (await side.spoke.list(APPLIED_MANIFESTWORKS))["items"]
    applied = {a["metadata"]["name"]: _applied_entry(a) for a in listed}
    resources = {
        _object_key(res): res
        for a in listed
        for res in (a.get("status") or {}).get("appliedResources") or []
    }
    resources.update({_object_key(res): res for res in LEFTOVERS})
    objects: dict[str, dict[str, Any]] = {}
    for key, res in sorted(resources.items()):
        namespace = res.get("namespace") or None
        resource = Resource(res["group"], res["version"], res["resource"], "", bool(namespace))
        try:
            obj = await side.spoke.get(resource, res["name"], namespace)
        except NotFound:
            continue
        meta = obj["metadata"]
        objects[key] = {
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "ownerReferences": meta.get("ownerReferences"),
            "managedFields": meta.get("managedFields"),
        }
    return Snapshot(works, applied, objects)


class Agent:
    """The one agent running on the managed cluster: OCM's or ours, the same flags."""

    def __init__(self, folder: Path, hub_path: Path, spoke_path: Path, agent_id: str) -> None:
        self.folder = folder
        # Without --agent-id both agents take the hub hash as their id.
        agent_flags = (f"--agent-id={agent_id}",) if agent_id else ()
        self.flags = (f"--workload-source-config={hub_path}", *agent_flags)
        self.spoke_path = spoke_path
        self.ocm: Peer | None = None
        self.ours: ProgramProcess | None = None
        self.metrics_port = 0

    def start_ocm(self) -> None:
        """OCM's agent (``start_ocm_agent``: the Klusterlet's flags, 1 s status sync)."""
        self.ocm = start_ocm_agent(
            self.folder / "ocm",
            cluster=CLUSTER,
            source=self.flags,
            spoke_kubeconfig=self.spoke_path,
        )

    async def start_ours(self) -> None:
        """Ours with the flags OCM's got, its endpoint on plain HTTP (metrics read)."""
        self.metrics_port = free_port()
        self.ours = await start_our_agent(
            self.folder,
            cluster=CLUSTER,
            source=self.flags,
            spoke_kubeconfig=self.spoke_path,
            listen=f"127.0.0.1:{self.metrics_port}",
        )

    async def stop(self) -> None:
        """SIGTERM whichever runs; ours must end cleanly."""
        if self.ocm is not None:
            await self.ocm.stop()
            self.ocm = None
        if self.ours is not None:
            code = await self.ours.terminate()
            assert code == 0, self.ours.log()[-3000:]
            self.ours = None

    def check_alive(self) -> None:
        """Fail with its log if the running agent exited."""
        if self.ocm is not None:
            self.ocm.check_alive()
        if self.ours is not None and self.ours.exited() is not None:
            raise AssertionError(f"our agent exited:\n{self.ours.log()[-3000:]}")

    async def reconciles(self, controller: str) -> float:
        """Our agent's reconciles of ``controller`` so far, whatever their result."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        try:
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                text = await response.text()
        except aiohttp.ClientError:
            return 0.0  # not serving yet
        family = parse_scrape(text).get("controller_runtime_reconcile")
        if family is None:
            return 0.0
        return sum(
            s.value
            for s in family.samples
            if s.name.endswith("_total") and s.labels.get("controller") == controller
        )


@dataclass
class Plane:
    """The hub client, the managed cluster (as a :class:`Side`) and its agent."""

    hub: KubeClient
    side: Side
    agent: Agent


@contextlib.asynccontextmanager
async def _plane(pool: PlanePool, folder: Path, agent_id: str) -> AsyncIterator[Plane]:
    async with (
        hub_side(pool, folder, [CLUSTER]) as (_, hub_path, hub_client),
        spoke_side(pool, folder, CLUSTER) as (side, spoke_path),
    ):
        agent = Agent(folder, hub_path, spoke_path, agent_id)
        try:
            yield Plane(hub_client, side, agent)
        finally:
            with contextlib.suppress(AssertionError):
                await agent.stop()


@pytest.fixture(params=[AGENT_ID, ""], ids=["agent-id", "no-agent-id"])
async def plane(
    request: pytest.FixtureRequest, realkube_pool: PlanePool, tmp_path: Path
) -> AsyncIterator[Plane]:
    """A hub with the cluster namespace and a managed cluster; no agent yet. Both
    agents get the same ``--agent-id`` (the Klusterlet's), or none."""
    async with _plane(realkube_pool, tmp_path, str(request.param)) as plane:
        yield plane


# -- waiting -------------------------------------------------------------------------------


async def all_settled(plane: Plane, cases: dict[str, Case], timeout: float = 180.0) -> None:
    """Every work of ``cases`` applied at its generation, every manifest reported, the
    case ready."""
    pending: list[str] = []

    async def check() -> bool:
        plane.agent.check_alive()
        pending[:] = [
            name
            for name, case in cases.items()
            if not settled(await read_work(plane.hub, name), case)
        ]
        return not pending

    try:
        await eventually(check, timeout=timeout, what="the works to settle")
    except AssertionError as err:
        raise AssertionError(f"{err}: {pending}") from None


#: How long nothing may change for the agent to count as done (many status syncs).
QUIET_SECONDS = 6.0


@dataclass
class _Watch:
    """The last snapshot read, since when it has not changed, and when it was read."""

    last: Snapshot | None = None
    since: float = 0.0
    read_at: float = 0.0


async def quiet(plane: Plane, names: list[str], timeout: float = 120.0) -> Snapshot:
    """The snapshot once no write changed it for :data:`QUIET_SECONDS`."""
    seen = _Watch()

    async def check() -> bool:
        plane.agent.check_alive()
        if time.monotonic() - seen.read_at < 0.5:  # a snapshot is ~50 requests
            return False
        now = await snapshot(plane.hub, plane.side, names)
        seen.read_at = time.monotonic()
        if now != seen.last:
            seen.last, seen.since = now, seen.read_at
            return False
        return seen.read_at - seen.since >= QUIET_SECONDS

    await eventually(check, timeout=timeout, what="the agent to stop writing")
    assert seen.last is not None
    return seen.last


async def ours_went_round(plane: Plane, works: int) -> None:
    """Our agent reconciled every work in its apply loop and synced each status twice
    (both queues hold every work once at start, then the status sync repeats)."""

    async def check() -> bool:
        plane.agent.check_alive()
        applies = await plane.agent.reconciles("manifestwork-controller")
        statuses = await plane.agent.reconciles("AvailableStatusController")
        return applies >= works and statuses >= 2 * works

    await eventually(check, timeout=120, what="our agent to reconcile every work")


def ocm_caches_synced(plane: Plane) -> Callable[[], Awaitable[bool]]:
    """Whether OCM's agent logged every controller's caches as synced (library-go's
    base controller; then its queues hold every work)."""

    async def check() -> bool:
        plane.agent.check_alive()
        assert plane.agent.ocm is not None
        log = plane.agent.ocm.log()
        waiting = log.count('base_controller.go:36] "Waiting for caches to sync"')
        return waiting > 0 and log.count('base_controller.go:42] "Caches are synced"') >= waiting

    return check


# -- comparing -----------------------------------------------------------------------------


def _changed(what: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """How each of ``before``'s entries (by name, with a ``uid``) differs in ``after``."""
    found: list[str] = []
    for name, old in before.items():
        new = after.get(name)
        if new is None:
            found.append(f"{what} {name} deleted")
        elif new["uid"] != old["uid"]:
            found.append(f"{what} {name} re-created")
        elif new != old:
            found.append(f"{what} {name} rewritten:\n{diff(old, new)}")
    return found


def assert_unchanged(before: Snapshot, after: Snapshot) -> None:
    """Nothing the agents wrote changed from ``before`` to ``after``: no object or
    AppliedManifestWork deleted, re-created or written to (managed fields included), no
    AppliedManifestWork created, no work's status or finalizers written."""
    found = _changed("object", before.objects, after.objects)
    found += _changed("AppliedManifestWork", before.applied, after.applied)
    found += [f"AppliedManifestWork {n} created" for n in set(after.applied) - set(before.applied)]
    for name, work in before.works.items():
        if after.works[name] != work:
            found.append(f"work {name} rewritten:\n{diff(work, after.works[name])}")
    assert not found, "\n\n".join(found)


async def gone(what: str, read: Callable[[], Awaitable[Any]], timeout: float = 120.0) -> None:
    """Wait until ``read()`` returns None."""

    async def check() -> bool:
        return bool(await read() is None)

    await eventually(check, timeout=timeout, what=f"{what} to be gone")


async def live_meta(side: Side, resource: Resource, name: str) -> dict[str, Any] | None:
    """The metadata of object ``name`` in ``default`` (None when there is none)."""
    try:
        meta: dict[str, Any] = (await side.spoke.get(resource, name, NS))["metadata"]
    except NotFound:
        return None
    return meta


async def create_work(hub: KubeClient, name: str, case: Case) -> None:
    """The work ``name`` of ``case`` in the cluster namespace."""
    body = work_body(name, copy.deepcopy(case.manifests), **copy.deepcopy(case.spec))
    await hub.create(MANIFESTWORKS, body, CLUSTER)


def hub_hash_of(taken: Snapshot) -> str:
    """The hub hash the snapshot's AppliedManifestWorks are named with."""
    hashes = {a["spec"]["hubHash"] for a in taken.applied.values()}
    assert len(hashes) == 1, hashes
    return str(hashes.pop())


# -- the scenario --------------------------------------------------------------------------


async def change_under_ours(plane: Plane, ready: dict[str, Case]) -> list[str]:
    """Under ours: ``plain`` drops its Secret, ``orphan`` and ``selective`` are deleted
    (their kept objects orphaned, not re-created), ``created`` is new. Waits until all
    that is done (the works of ``ready`` settled); returns the works left."""
    hub, side = plane.hub, plane.side
    work = await read_work(hub, "plain")
    assert work is not None
    work["spec"]["workload"]["manifests"] = copy.deepcopy(PLAIN_AFTER)
    await hub.update(MANIFESTWORKS, work)
    orphans = {name: await live_meta(side, CONFIGMAPS, name) for name in ORPHANED}
    for name in ("orphan", "selective"):
        await hub.delete(MANIFESTWORKS, name, CLUSTER)
    await create_work(hub, "created", CREATED)
    after = {**ready, "created": CREATED, "plain": Case(PLAIN_AFTER)}
    for name in ("orphan", "selective"):
        after.pop(name)
        await gone(f"work {name}", functools.partial(read_work, hub, name))
    await all_settled(plane, after)
    # OCM's AppliedManifestWorks, deleted by ours: only what they owned goes.
    await gone(
        "configmap selective-gone", functools.partial(live_meta, side, CONFIGMAPS, "selective-gone")
    )
    for name, meta in orphans.items():
        now = await live_meta(side, CONFIGMAPS, name)
        assert meta is not None and now is not None, f"{name} must be orphaned, not deleted"
        assert now["uid"] == meta["uid"], f"{name} must be orphaned, not re-created"
        assert not now.get("ownerReferences"), (name, now.get("ownerReferences"))
    # The Secret dropped from "plain", recorded by OCM's agent, deleted by ours.
    await gone("secret plain-secret", functools.partial(live_meta, side, SECRETS, "plain-secret"))
    return list(after)


async def ocm_then_ours(plane: Plane, ready: dict[str, Case]) -> tuple[Snapshot, Snapshot]:
    """OCM's agent applies the works ``ready`` names and records every one; then ours
    takes over. The snapshots of both, each once quiet."""
    names = list(ready)
    plane.agent.start_ocm()
    for name in names:
        await create_work(plane.hub, name, CASES[name])
    await all_settled(plane, ready)
    left_by_ocm = await quiet(plane, names)
    assert sorted(a["spec"]["manifestWorkName"] for a in left_by_ocm.applied.values()) == sorted(
        names
    )
    await plane.agent.stop()
    await plane.agent.start_ours()
    await ours_went_round(plane, len(names))
    return left_by_ocm, await quiet(plane, names)


async def test_handover_from_ocm_to_ours_and_back(plane: Plane) -> None:
    left_by_ocm, taken_over = await ocm_then_ours(plane, READY)
    # Every work recorded with the objects it applied (the comparisons need them), and
    # nothing moved when ours took over.
    assert len(left_by_ocm.objects) >= 20, sorted(left_by_ocm.objects)
    assert_unchanged(left_by_ocm, taken_over)

    # The works change under ours: what OCM recorded is what ours cleans up.
    names = await change_under_ours(plane, READY)
    left_by_ours = await quiet(plane, names)

    # Roll back: OCM's agent accepts what ours left.
    await hand_back_to_ocm(plane, names, left_by_ours, assert_unchanged)


async def hand_back_to_ocm(
    plane: Plane,
    names: list[str],
    left_by_ours: Snapshot,
    same: Callable[[Snapshot, Snapshot], None],
) -> None:
    """Ours stops, OCM's agent starts: it takes what ours left as it is (``same``
    compares) and cleans up after the work whose AppliedManifestWork ours created."""
    hub, side, agent = plane.hub, plane.side, plane.agent
    await agent.stop()
    agent.start_ocm()
    await eventually(ocm_caches_synced(plane), timeout=60, what="OCM's agent to start")
    back = await quiet(plane, names)
    same(left_by_ours, back)
    await hub.delete(MANIFESTWORKS, "created", CLUSTER)
    await gone("work created", functools.partial(read_work, hub, "created"))
    await gone(
        "configmap created-under-ours",
        functools.partial(live_meta, side, CONFIGMAPS, "created-under-ours"),
    )
    final = await quiet(plane, [n for n in names if n != "created"])
    assert set(final.applied) == set(back.applied) - {f"{hub_hash_of(back)}-created"}
