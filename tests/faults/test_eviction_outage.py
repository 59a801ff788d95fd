"""Eviction of unmanaged AppliedManifestWorks across a hub outage longer than the grace period.

The agent evicts an AppliedManifestWork whose ManifestWork is gone from the
hub once ``--appliedmanifestwork-eviction-grace-period`` has passed (spec
section 15). While the hub is unreachable the agent cannot know which works
are gone, so it must not start a grace period, let alone evict, however long
the outage and however short the grace period. Once the hub is back, works
still there stay applied untouched (same UIDs), a work deleted normally
during the outage is finalized, and a work that vanished without the agent's
finalizer (force-deleted) is evicted after the grace period: its objects are
deleted and nothing is left behind.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ocmkit.kube import APPLIED_MANIFESTWORKS, CONFIGMAPS, KubeClient
from tests.conftest import eventually
from tests.faults.conftest import STATUS_SYNC_SECONDS, Clusters
from tests.faults.harness import HubApi, configmaps, create_work, reachable, take_hub_away
from tests.faults.invariants import CLUSTER
from tests.support.programs import AgentRunner, agent_settings

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

#: The grace period, much shorter than the outage.
GRACE_SECONDS = 1.0
OUTAGE_SECONDS = 4.0
STAYING = ("stay-0", "stay-1")
DELETED = "gone-deleted"  # deleted on the hub during the outage (the finalizer holds it)
FORCED = "gone-forced"  # deleted and its finalizer removed: it vanishes from the hub


@pytest.fixture
async def agent(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """The real agent, in-process, with a one-second eviction grace period."""
    runner = AgentRunner(
        agent_settings(
            tmp_path,
            status_sync_interval=STATUS_SYNC_SECONDS,
            eviction_grace_period=GRACE_SECONDS,
        )
    )
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


async def configmap_uids(spoke: KubeClient) -> dict[str, str]:
    """UID by name of the spoke ConfigMaps in ``default``."""
    items = (await spoke.list(CONFIGMAPS, "default"))["items"]
    return {cm["metadata"]["name"]: cm["metadata"]["uid"] for cm in items}


def force_delete(api: HubApi, name: str) -> None:
    """Delete a work and strip its finalizers, as an impatient admin would: it is gone."""
    api.delete(name)
    work = copy.deepcopy(api.sim.api.get(api.rt, CLUSTER, name))
    work["metadata"]["finalizers"] = []
    api.sim.api.update(api.rt, CLUSTER, name, work, api.caller)


@pytest.mark.parametrize("outage", ["refuse-connections", "stop-start"])
async def test_nothing_is_evicted_while_the_hub_is_unreachable(
    outage: str,
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """An outage four times the grace period evicts nothing; afterwards exactly the
    works gone from the hub are cleaned up."""
    names = (*STAYING, DELETED, FORCED)
    for name in names:
        await create_work(env.hub_client, name, configmaps(name, 2))
    await env.converged(set(names))
    before = await configmap_uids(env.spoke_client)
    amw_uids = {
        a["metadata"]["name"]: a["metadata"]["uid"]
        for a in (await env.spoke_client.list(APPLIED_MANIFESTWORKS))["items"]
    }

    api = HubApi(env.hub)
    await take_hub_away(env.hub, env.hub_client, outage, OUTAGE_SECONDS)
    loop = asyncio.get_running_loop()
    outage_ends = loop.time() + OUTAGE_SECONDS
    api.delete(DELETED)
    force_delete(api, FORCED)

    async def untouched() -> None:
        """Fail at once if anything was evicted, or an eviction grace period started."""
        for amw in (await env.spoke_client.list(APPLIED_MANIFESTWORKS))["items"]:
            meta = amw["metadata"]
            assert amw_uids.get(meta["name"]) == meta["uid"], f"{meta['name']} was recreated"
            assert not meta.get("deletionTimestamp"), f"{meta['name']} is being deleted"
            start = (amw.get("status") or {}).get("evictionStartTime")
            assert start is None, f"{meta['name']}: eviction started at {start}, hub unreachable"
        assert len(amw_uids) == len(names)
        assert await configmap_uids(env.spoke_client) == before, "applied objects changed"

    if outage == "stop-start":

        async def lasted() -> bool:
            await untouched()
            return loop.time() >= outage_ends

        await eventually(lasted, timeout=OUTAGE_SECONDS + 30, what="the outage to last")
        await env.hub.start()

    async def outage_over() -> bool:
        await untouched()
        return await reachable(env.hub_client)

    await eventually(outage_over, timeout=OUTAGE_SECONDS + 30, what="the hub to be back")

    await env.converged(set(STAYING), what="the gone works cleaned up, the others kept")
    after = await configmap_uids(env.spoke_client)
    kept = {n: u for n, u in before.items() if n.startswith("stay-")}
    assert after == kept, "the staying works' objects must be the same instances"
