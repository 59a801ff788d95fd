"""Outages: the hub unreachable for a while, the spoke apiserver restarted.

Hub outage. The hub goes away in one of two ways: kubesim's
``refuse-connections`` (3 s without a listener; open connections dropped) or
a stop and a start on the same port. While it is away the test keeps
changing works, written straight into the hub's storage through kubesim's
in-process API (``HubApi``), as the hub's other clients would go on doing:
the agent cannot see these writes until it reconnects, and then sees them
all at once (a watch resumed from its resourceVersion, or a relist). One more
change lands right before the outage (the agent may be mid-reconcile when the
connection drops) and one right after it. After catch-up, no action is lost
(the checker) or done twice: untouched objects keep their UIDs, and the
agent's successful creates and deletes on the spoke are exactly the objects
added and removed.

Spoke restart. ``await spoke.restart(downtime=...)`` stops the spoke
apiserver (every watch and connection ends) while a 20-manifest work is being
applied (a small latency on creates keeps it in flight), and starts it again
on the same port with the same objects; meanwhile the hub changes.
"""

from __future__ import annotations

import asyncio

import pytest

from ocmkit.kube import CONFIGMAPS, KubeClient
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import (
    AGENT_ON_SPOKE,
    HubApi,
    agent_requests,
    configmaps,
    create_work,
    create_works,
    delete_work,
    reachable,
    set_manifests,
    successes,
    take_hub_away,
    touch_labels,
)
from tests.integration.conftest import (
    configmap,
    get_applied_work,
)
from tests.support.programs import AgentRunner

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

HUB_DOWN_SECONDS = 3.0


async def uids(spoke_client: KubeClient, prefix: str) -> dict[str, str]:
    """UID by name of the spoke ConfigMaps whose name starts with ``prefix``."""
    items = (await spoke_client.list(CONFIGMAPS, "default"))["items"]
    return {
        cm["metadata"]["name"]: cm["metadata"]["uid"]
        for cm in items
        if cm["metadata"]["name"].startswith(prefix)
    }


@pytest.mark.parametrize("outage", ["refuse-connections", "stop-start"])
async def test_hub_unreachable_then_back(
    outage: str,
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """Changes made while the hub is away are caught up once, none lost or doubled."""
    await env.converged(await create_works(env.hub_client, "away", 4, 3))
    before = await uids(env.spoke_client, "away-")
    amws_before = {
        name: (await get_applied_work(env.spoke_client, env.the_hash, name) or {})["metadata"][
            "uid"
        ]
        for name in ("away-0", "away-2", "away-3")
    }
    spoke_before = await agent_requests(env.spoke, AGENT_ON_SPOKE)

    # Right before the outage: the agent may lose the hub while reconciling this.
    await set_manifests(
        env.hub_client, "away-3", [*configmaps("away-3", 3), configmap("away-3-new")]
    )
    api = HubApi(env.hub)
    await take_hub_away(env.hub, env.hub_client, outage, HUB_DOWN_SECONDS)

    # While the hub is away, through its storage: create, change, delete, relabel.
    api.create("away-new", configmaps("away-new", 3))
    api.set_manifests(
        "away-0",
        [configmap("away-0-0", v="changed"), configmap("away-0-1"), configmap("away-0-added")],
    )
    api.delete("away-1")
    api.set_labels("away-2", {"moved": "yes"})

    if outage == "stop-start":
        await asyncio.sleep(HUB_DOWN_SECONDS)  # sleep-ok: the fault must last
        await env.hub.start()

    async def back() -> bool:
        return await reachable(env.hub_client)

    await eventually(back, what="the hub to serve again")
    # And right after: one more change over HTTP.
    await touch_labels(env.hub_client, "away-new", late="yes")

    await env.converged(
        {"away-0", "away-2", "away-3", "away-new"}, what=f"catch-up after the hub outage ({outage})"
    )

    # Nothing done twice: untouched objects and AppliedManifestWorks are the same
    # instances, and the spoke saw one successful create per added object and one
    # successful delete per removed object.
    after = await uids(env.spoke_client, "away-")
    unchanged = {n: u for n, u in before.items() if not n.startswith(("away-1-", "away-0-2"))}
    assert {n: after.get(n) for n in unchanged} == unchanged
    for name, uid in amws_before.items():
        amw = await get_applied_work(env.spoke_client, env.the_hash, name)
        assert amw is not None and amw["metadata"]["uid"] == uid, name
    spoke_after = await agent_requests(env.spoke, AGENT_ON_SPOKE)
    added = {"away-3-new", "away-0-added", "away-new-0", "away-new-1", "away-new-2"}
    removed = {"away-0-2", "away-1-0", "away-1-1", "away-1-2"}
    assert set(after) - set(before) == added
    assert set(before) - set(after) == removed
    creates = successes(spoke_after, "create", "configmaps") - successes(
        spoke_before, "create", "configmaps"
    )
    deletes = successes(spoke_after, "delete", "configmaps") - successes(
        spoke_before, "delete", "configmaps"
    )
    assert (creates, deletes) == (len(added), len(removed))


async def test_spoke_apiserver_restarted(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """The spoke apiserver restarts mid-apply; the agent resumes and converges."""
    await env.converged(await create_works(env.hub_client, "reboot", 3, 3))

    # Slow creates keep the big work in flight when the apiserver goes down.
    env.spoke.inject(verb="create", resource="configmaps", latency=0.1, userAgent=AGENT_ON_SPOKE)
    await create_work(env.hub_client, "reboot-big", configmaps("reboot-big", 20))

    applied_so_far: list[int] = []

    async def big_started() -> bool:
        applied_so_far.append(len(await uids(env.spoke_client, "reboot-big-")))
        return applied_so_far[-1] >= 3

    await eventually(big_started, what="the big work to be partly applied")
    assert applied_so_far[-1] < 20  # the restart lands mid-apply
    restart = asyncio.create_task(env.spoke.restart(downtime=2.0))
    # While the spoke is down, the hub moves on.
    await set_manifests(
        env.hub_client, "reboot-0", [configmap("reboot-0-0", v="two"), configmap("reboot-0-x")]
    )
    await delete_work(env.hub_client, "reboot-1")
    await create_work(env.hub_client, "reboot-new", configmaps("reboot-new", 2))
    await restart
    env.spoke.clear_faults()

    await env.converged(
        {"reboot-0", "reboot-2", "reboot-big", "reboot-new"},
        what="convergence after the spoke restart",
    )
