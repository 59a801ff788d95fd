"""What the agent sends, counted by kubesim: no request the protocol does not need.

The counts come from the spoke's and the hub's request statistics (verb,
resource, User-Agent, code), so they are what the servers answered. Times
are never asserted; every wait is :func:`tests.conftest.eventually` on an
observable state.
"""

from __future__ import annotations

from typing import Any

from kubesim.sim import KubeSim
from tests.integration.conftest import (
    AgentRunner,
    configmap,
    get_applied_work,
    wait_applied,
    work_body,
)
from workagent.kube import CONFIGMAPS, MANIFESTWORKS, KubeClient

#: User-Agents of the agent's clients (the in-process agent, and as a process).
AGENT_USER_AGENTS = ("work-agent", "workagent")


def agent_requests(sim: KubeSim, verb: str, resource: str, code: int | None = None) -> int:
    """How many ``verb`` requests on ``resource`` the agent sent (answered ``code``, if given)."""
    return sum(
        row["count"]
        for row in sim.state.stats.to_json()["requests"]
        if row["userAgent"] in AGENT_USER_AGENTS
        and row["verb"] == verb
        and row["resource"] == resource
        and (code is None or row["code"] == code)
    )


def owner_uids(obj: dict[str, Any]) -> list[str]:
    """UIDs of an object's owner references."""
    return [str(ref.get("uid")) for ref in obj["metadata"].get("ownerReferences") or []]


async def test_new_objects_are_created_without_a_get_first(
    agent: AgentRunner, spoke: KubeSim, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """Objects the agent never saw exist are created straight away (no GET answered 404);
    one that existed before the work answers AlreadyExists and is read and adopted."""
    await spoke_client.create(CONFIGMAPS, configmap("existing", key="before"), "default")
    spoke.state.stats.reset()
    manifests = [
        configmap("new-1"),
        configmap("new-2"),
        configmap("existing", key="after"),
        configmap("create-only"),
    ]
    configs = [
        {
            "resourceIdentifier": {
                "resource": "configmaps",
                "namespace": "default",
                "name": "create-only",
            },
            "updateStrategy": {"type": "CreateOnly"},
        }
    ]
    await hub_client.create(MANIFESTWORKS, work_body("fresh", manifests, manifestConfigs=configs))
    await wait_applied(hub_client, "fresh")

    assert agent_requests(spoke, "get", "configmaps", 404) == 0
    assert agent_requests(spoke, "create", "configmaps", 201) == 3
    assert agent_requests(spoke, "create", "configmaps", 409) == 1
    applied = await get_applied_work(spoke_client, agent.hub_hash, "fresh")
    assert applied is not None
    for name in ("new-1", "new-2", "existing", "create-only"):
        obj = await spoke_client.get(CONFIGMAPS, name, "default")
        assert applied["metadata"]["uid"] in owner_uids(obj), name
    assert (await spoke_client.get(CONFIGMAPS, "existing", "default"))["data"] == {"key": "after"}
