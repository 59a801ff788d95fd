"""Watches closed over and over and 410 storms on both clusters while works change.

Each round changes the hub (a work created, changed, relabelled or deleted)
and at once ends the agent's watches: cleanly (``close_watches``: the
informer resumes from its resourceVersion) or with ``410 Expired`` after a
compaction (``expire_watches``: it must relist and deliver what it missed,
deletions included). The next round starts only when the agent watches both
clusters again, so every fault hits a freshly reconnected informer.
"""

from __future__ import annotations

import aiohttp
import pytest

from kubesim.sim import KubeSim
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import (
    configmaps,
    create_work,
    create_works,
    delete_work,
    set_manifests,
    touch_labels,
)
from tests.integration.conftest import (
    configmap,
)
from tests.support.programs import AgentRunner

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)


async def open_watches(sim: KubeSim) -> int:
    """Watches open on ``sim``, from its admin API."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.url}/kubesim/watches") as response,
    ):
        return int((await response.json())["open"])


async def test_watch_drops_and_410_storms(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """Works created, changed and deleted between watch drops and expiries converge."""
    await env.converged(await create_works(env.hub_client, "storm", 4, 3))

    changed = [configmap("storm-0-0", v="changed"), *configmaps("storm-0-new", 2)]
    # (action, whether the hub's watches expire, whether the spoke's do; else closed)
    rounds = [
        ("create storm-4", False, False),
        ("change storm-0", True, True),
        ("delete storm-1", True, False),
        ("relabel storm-2", False, True),
        ("delete storm-3", True, True),
        ("create storm-5", True, True),
        ("change storm-4", False, False),
    ]
    for action, hub_expires, spoke_expires in rounds:
        if action == "create storm-4":
            await create_work(env.hub_client, "storm-4", configmaps("storm-4", 2))
        elif action == "change storm-0":
            await set_manifests(env.hub_client, "storm-0", changed)
        elif action == "delete storm-1":
            await delete_work(env.hub_client, "storm-1")
        elif action == "relabel storm-2":
            await touch_labels(env.hub_client, "storm-2", tier="gold")
        elif action == "delete storm-3":
            await delete_work(env.hub_client, "storm-3")
        elif action == "create storm-5":
            await create_work(env.hub_client, "storm-5", configmaps("storm-5", 3), team="a")
        else:
            await set_manifests(env.hub_client, "storm-4", configmaps("storm-4", 1, v="shrunk"))
        for sim, expire in ((env.hub, hub_expires), (env.spoke, spoke_expires)):
            if expire:
                sim.expire_watches()
            else:
                sim.close_watches()

        async def watching_again() -> bool:
            return await open_watches(env.hub) >= 1 and await open_watches(env.spoke) >= 1

        await eventually(
            watching_again, timeout=60, what=f"the agent to watch again after {action}"
        )

    await env.converged(
        {"storm-0", "storm-2", "storm-4", "storm-5"}, what="convergence after the watch storms"
    )
