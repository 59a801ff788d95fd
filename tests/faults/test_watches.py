"""Watches closed over and over and 410 storms on both clusters while works change.

Each round changes the hub (a work created, changed, relabelled or deleted)
and at once ends the agent's watches: cleanly (``close_watches``: the
informer resumes from its resourceVersion) or with ``410 Expired`` after a
compaction (``expire_watches``: it must relist and deliver what it missed,
deletions included). The next round starts only when the agent watches both
clusters again, so every fault hits a freshly reconnected informer.
"""

from __future__ import annotations

from collections.abc import Callable

import aiohttp
import pytest

from kubesim.sim import KubeSim
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import (
    configmaps,
    create_work,
    delete_work,
    set_manifests,
    touch_labels,
)
from tests.faults.invariants import Expected, converged
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
    for i in range(4):
        await create_work(env.hub_client, f"storm-{i}", configmaps(f"storm-{i}", 3))
    await converged(
        env.hub_client,
        env.spoke_client,
        env.the_hash,
        Expected(works={f"storm-{i}" for i in range(4)}),
    )

    def close_both() -> None:
        env.hub.close_watches()
        env.spoke.close_watches()

    def expire_both() -> None:
        env.hub.expire_watches()
        env.spoke.expire_watches()

    def expire_hub_close_spoke() -> None:
        env.hub.expire_watches()
        env.spoke.close_watches()

    def close_hub_expire_spoke() -> None:
        env.hub.close_watches()
        env.spoke.expire_watches()

    changed = [configmap("storm-0-0", v="changed"), *configmaps("storm-0-new", 2)]
    rounds: list[tuple[str, Callable[[], None]]] = [
        ("create storm-4", close_both),
        ("change storm-0", expire_both),
        ("delete storm-1", expire_hub_close_spoke),
        ("relabel storm-2", close_hub_expire_spoke),
        ("delete storm-3", expire_both),
        ("create storm-5", expire_both),
        ("change storm-4", close_both),
    ]
    for action, fault in rounds:
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
        fault()

        async def watching_again() -> bool:
            return await open_watches(env.hub) >= 1 and await open_watches(env.spoke) >= 1

        await eventually(
            watching_again, timeout=60, what=f"the agent to watch again after {action}"
        )

    await converged(
        env.hub_client,
        env.spoke_client,
        env.the_hash,
        Expected(works={"storm-0", "storm-2", "storm-4", "storm-5"}),
        what="convergence after the watch storms",
    )
