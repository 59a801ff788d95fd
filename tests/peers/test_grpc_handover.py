"""Handing a managed cluster over between OCM's Go work agent and ours on the grpc driver.

The scenario of ``test_agent_handover.py`` with both agents receiving works from OCM
v1.2.1's ``server grpc`` (``--workload-source-driver=grpc``, the same
``--workload-source-config`` and ``--cloudevents-client-id``): the AppliedManifestWorks
are named from the hash of the gRPC ``url``, and each agent starts with a spec resync
instead of listing the hub. OCM's agent applies works of every update strategy, status
feedback and delete option; it gets SIGTERM and ours takes over; nothing may be written
(objects, AppliedManifestWorks, hub works). Works then change and are deleted under ours,
and OCM's agent comes back, rewrites nothing and cleans up a work ours created.

Runs in the real leg only; ``make ocm`` builds OCM's binaries.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS
from tests.conftest import eventually
from tests.peers.test_agent_handover import (
    Agent,
    Plane,
    Snapshot,
    all_settled,
    change_under_ours,
    create_work,
    hand_back_to_ocm,
    ocm_caches_synced,
    ocm_then_ours,
    quiet,
    read_work,
)
from tests.peers.test_agent_side_by_side import CASES, Case, GrpcSetup, hub_side, spoke_side
from tests.support.manifests import configmap
from tests.support.ocmpeer import Peer, grpc_source
from tests.support.programs import CLUSTER
from tests.support.targets import PlanePool

pytestmark = pytest.mark.realkube

#: The works OCM's agent applies before the handover.
HANDED_OVER = [
    "plain",  # Update, typed paths
    "feedback",  # Update, a Deployment; WellKnownStatus, JSONPaths, CEL rules
    "service",  # Update with OCM's spec-hash annotation
    "create-only",
    "ssa-force",
    "ssa-ignore-fields",
    "read-only",
    "watched",  # ReadOnly with Watch-mode feedback
    # Not "job": OCM's agent on the grpc driver applies a Job again on resync events
    # and stays Applied=False (docs/cloudevents.md); ours, taking over, reports it applied.
    "orphan",
    "selective",
]
READY: dict[str, Case] = {name: CASES[name] for name in HANDED_OVER}


#: Keys of timestamps a rewrite with the same content changes.
TIMES = ("lastTransitionTime", "time")


def _without_times(value: Any) -> Any:
    """``value`` without ``lastTransitionTime`` and managed-fields ``time`` keys, its
    conditions in the order of their types."""
    if isinstance(value, dict):
        out = {k: _without_times(v) for k, v in value.items() if k not in TIMES}
        if isinstance(out.get("conditions"), list):
            out["conditions"] = sorted(out["conditions"], key=lambda c: str(c.get("type")))
        return out
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def assert_same_content(before: Snapshot, after: Snapshot) -> None:
    """Objects and AppliedManifestWorks untouched (uid, resourceVersion, managed fields);
    works with the same content, though they may have been written.

    On the grpc driver OCM's own agent, restarted, publishes every work's status again
    with new condition times (its store starts empty; the spec resync carries no
    status), so the works' ``lastTransitionTime``s and resourceVersions move under
    either agent, and the order of the conditions with them (a condition refreshed by a
    new generation goes last, a fresh status lists them in their usual order).
    """
    found = [
        f"object {key}: {'gone' if key not in after.objects else 'changed'}"
        for key, obj in before.objects.items()
        if after.objects.get(key) != obj
    ]
    for name, applied in before.applied.items():
        new = after.applied.get(name)
        if new is None:
            found.append(f"AppliedManifestWork {name} deleted")
            continue
        if new != applied:
            found.append(f"AppliedManifestWork {name} changed: {applied} -> {new}")
    found += [f"AppliedManifestWork {n} created" for n in set(after.applied) - set(before.applied)]
    for name, work in before.works.items():
        old_work = _without_times({**work, "resourceVersion": None})
        if _without_times({**after.works[name], "resourceVersion": None}) != old_work:
            found.append(f"work {name} changed: {work} -> {after.works[name]}")
    assert not found, "\n\n".join(found)


@contextlib.asynccontextmanager
async def _grpc_plane(pool: PlanePool, folder: Path) -> AsyncIterator[tuple[Plane, Peer]]:
    async with (
        hub_side(pool, folder, [CLUSTER]) as (_, hub_path, hub_client),
        spoke_side(pool, folder, CLUSTER) as (side, spoke_path),
    ):
        setup = GrpcSetup(hub_client, folder)
        server, url = await setup.ocm_server(hub_path)
        config = await setup.agent_config(CLUSTER, url)
        agent = Agent(folder, hub_path, spoke_path, "")
        agent.flags = grpc_source(config, f"{CLUSTER}-work-agent")
        try:
            yield Plane(hub_client, side, agent), server
        finally:
            with contextlib.suppress(AssertionError):
                await agent.stop()
            await server.stop(kill=True)


@pytest.fixture
async def grpc_plane(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[tuple[Plane, Peer]]:
    """A hub behind OCM's gRPC server, a managed cluster; no agent yet."""
    async with _grpc_plane(realkube_pool, tmp_path) as pair:
        yield pair


@pytest.mark.timeout(900)
async def test_grpc_handover_from_ocm_to_ours_and_back(grpc_plane: tuple[Plane, Peer]) -> None:
    plane, server = grpc_plane
    # Ours takes over: nothing may move.
    left_by_ocm, taken_over = await ocm_then_ours(plane, READY)
    server.check_alive()
    assert_same_content(left_by_ocm, taken_over)

    # The works change under ours.
    names = await change_under_ours(plane, READY)
    left_by_ours = await quiet(plane, names)

    # Roll back: OCM's agent accepts what ours left.
    await hand_back_to_ocm(plane, names, left_by_ours, assert_same_content)
    server.check_alive()


async def eventually_ocm_started(plane: Plane) -> None:
    """OCM's agent's controllers have synced their caches."""
    await eventually(ocm_caches_synced(plane), timeout=60, what="OCM's agent to start")


#: A work large enough that a SIGTERM can land in the middle of its first apply pass.
MANY = 240


def _many(count: int) -> Case:
    return Case([configmap(f"many-{i:03d}", a="1") for i in range(count)])


async def _many_uids(plane: Plane) -> dict[str, str]:
    """Name -> uid of every ``many-*`` ConfigMap on the managed cluster."""
    listed = (await plane.side.spoke.list(CONFIGMAPS, "default"))["items"]
    return {
        o["metadata"]["name"]: o["metadata"]["uid"]
        for o in listed
        if o["metadata"]["name"].startswith("many-")
    }


async def _stop_mid_apply(plane: Plane, before: int, *, kill: bool = False) -> dict[str, str]:
    """SIGTERM (SIGKILL for ours with ``kill``) the running agent once it created one
    more ``many-*`` ConfigMap than ``before``; what existed after it stopped."""
    seen: dict[str, str] = {}

    async def started() -> bool:
        plane.agent.check_alive()
        seen.update(await _many_uids(plane))
        return len(seen) > before

    await eventually(started, timeout=120, what="the agent to start applying")
    if kill and plane.agent.ours is not None:
        plane.agent.ours.process.kill()
        await plane.agent.ours.process.wait()
        plane.agent.ours = None
    await plane.agent.stop()
    return await _many_uids(plane)


async def _shrink(plane: Plane, count: int) -> None:
    work = await read_work(plane.hub, "many")
    assert work is not None
    work["spec"]["workload"]["manifests"] = copy.deepcopy(_many(count).manifests)
    await plane.hub.update(MANIFESTWORKS, work)


async def _only(
    plane: Plane, count: int, kept: dict[str, str], unrecorded: frozenset[str] = frozenset()
) -> None:
    """``many-000``..``many-<count-1>`` exist, those in ``kept`` not re-created, and the
    AppliedManifestWork lists them with their uids; others are gone but for some of
    ``unrecorded``."""
    wanted = {f"many-{i:03d}" for i in range(count)}

    async def cleaned() -> bool:
        plane.agent.check_alive()
        return wanted <= set(await _many_uids(plane)) <= wanted | unrecorded

    await eventually(cleaned, timeout=120, what=f"only {count} many-* ConfigMaps")
    await all_settled(plane, {"many": _many(count)})
    now = await _many_uids(plane)
    assert {n: now[n] for n in kept if n in wanted} == {
        n: u for n, u in kept.items() if n in wanted
    }
    taken = await quiet(plane, ["many"])
    (applied,) = [a for a in taken.applied.values() if a["spec"]["manifestWorkName"] == "many"]
    listed = {r["name"]: r.get("uid") for r in applied["status"]["appliedResources"]}
    assert listed == {n: now[n] for n in wanted}


@pytest.mark.timeout(600)
async def test_grpc_stopped_mid_apply(grpc_plane: tuple[Plane, Peer]) -> None:
    plane, server = grpc_plane
    agent = plane.agent
    # Ours gets SIGTERM in the middle of the first pass (it finishes the pass before it
    # exits); the work shrinks while it is down; ours, restarted, deletes what it
    # created of the dropped manifests.
    base = agent.folder
    agent.folder = base / "ours-1"
    agent.folder.mkdir()
    await agent.start_ours()
    await create_work(plane.hub, "many", _many(MANY))
    kept = await _stop_mid_apply(plane, 0)
    await _shrink(plane, MANY // 2)
    agent.folder = base / "ours-2"
    agent.folder.mkdir()
    await agent.start_ours()
    await _only(plane, MANY // 2, kept)

    # Ours killed in the middle of a pass; restarted, it cleans up after that pass.
    await _shrink(plane, MANY)
    kept = await _stop_mid_apply(plane, MANY // 2, kill=True)
    await _shrink(plane, MANY // 4)
    agent.folder = base / "ours-2b"
    agent.folder.mkdir()
    await agent.start_ours()
    await _only(plane, MANY // 4, kept)
    await agent.stop()
    agent.start_ocm()

    # OCM's agent stopped in the middle of a pass; ours takes over a smaller work. What
    # OCM's agent created in that pass it had not recorded yet (it records after the
    # pass): nobody knows of it, so it stays (owned by the AppliedManifestWork), as it
    # would with OCM's agent restarted.
    recorded = set(await _many_uids(plane))
    await _shrink(plane, MANY)
    kept = await _stop_mid_apply(plane, MANY // 4)
    await _shrink(plane, MANY // 8)
    agent.folder = base / "ours-3"
    agent.folder.mkdir()
    await agent.start_ours()
    await _only(plane, MANY // 8, kept, frozenset(set(kept) - recorded))
    server.check_alive()
