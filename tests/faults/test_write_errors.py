"""429 with Retry-After and 500/503 bursts on the agent's writes.

On the spoke every write verb of the agent fails 30% of the time with 500,
and creates, updates and deletes of ConfigMaps meet count-limited bursts of
503 and 429 (Retry-After 1 s). On the hub the agent's ManifestWork status
patches meet the same (429 x3, 503 x4, 500 at 30%), and its finalizer
patches 500 at 30%. Meanwhile works are created, changed and deleted. The
faults target the agent's User-Agents, so the test's own clients are spared.

The agent must converge while the 30% faults still apply (a converged work
costs no write, so nothing is left to fail), and stay converged once they
are cleared. Injected errors are answered before the write is done, so every
object the agent creates must have been created by exactly one successful
request: a retry never duplicates an action.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.faults import FaultRule
from ocmkit.kube.client import MAX_RETRIES
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import (
    AGENT_ON_HUB,
    AGENT_ON_SPOKE,
    WRITE_VERBS,
    agent_requests,
    configmaps,
    create_work,
    delete_work,
    set_manifests,
    successes,
)
from tests.faults.invariants import Expected
from tests.integration.conftest import (
    configmap,
)
from tests.support.manifests import deployment
from tests.support.programs import AgentRunner

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

SECRET: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "burst-secret", "namespace": "default"},
    "type": "Opaque",
    "data": {"token": "c2VjcmV0"},
}

DEPLOYMENT = deployment("burst-app", "default", image="busybox:1.36")


async def test_throttling_and_server_errors_on_writes(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """Works converge through 429/500/503 on spoke writes and hub status patches."""
    await create_work(env.hub_client, "burst-0", [SECRET, DEPLOYMENT, *configmaps("burst-0", 2)])
    await create_work(env.hub_client, "burst-1", configmaps("burst-1", 4))
    await create_work(env.hub_client, "burst-2", configmaps("burst-2", 3))
    await env.converged({"burst-0", "burst-1", "burst-2"})

    # 30% of the agent's writes fail with 500, until cleared.
    for verb in WRITE_VERBS:
        env.spoke.inject(verb=verb, resource="*", code=500, fraction=0.3, userAgent=AGENT_ON_SPOKE)
    for resource in ("manifestworks/status", "manifestworks"):
        env.hub.inject(
            verb="patch", resource=resource, code=500, fraction=0.3, userAgent=AGENT_ON_HUB
        )
    # Bursts: the first N matching writes fail; a 429 asks for a 1 s wait (Retry-After).
    burst_table = [
        (env.spoke, AGENT_ON_SPOKE, "create", "configmaps", 503, 4),
        (env.spoke, AGENT_ON_SPOKE, "update", "configmaps", 429, 3),
        (env.spoke, AGENT_ON_SPOKE, "delete", "configmaps", 503, 3),
        (env.hub, AGENT_ON_HUB, "patch", "manifestworks/status", 429, 3),
        (env.hub, AGENT_ON_HUB, "patch", "manifestworks/status", 503, 4),
    ]
    bursts: list[FaultRule] = [
        sim.inject(
            verb=verb,
            resource=resource,
            code=code,
            count=count,
            userAgent=user_agent,
            **({"retryAfter": 1} if code == 429 else {}),
        )
        for sim, user_agent, verb, resource, code, count in burst_table
    ]

    # Under the faults: two new works, two changed ones (values, a removed and an
    # added manifest, a changed Deployment), one deleted.
    await create_work(env.hub_client, "burst-3", configmaps("burst-3", 4))
    await create_work(
        env.hub_client,
        "burst-4",
        [SECRET | {"metadata": {"name": "burst-4-secret", "namespace": "default"}}],
    )
    scaled = {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 3}}
    await set_manifests(
        env.hub_client, "burst-0", [SECRET, scaled, configmap("burst-0-0", n="changed")]
    )
    await set_manifests(
        env.hub_client, "burst-1", [*configmaps("burst-1", 3, v="two"), configmap("burst-1-extra")]
    )
    await delete_work(env.hub_client, "burst-2")

    async def bursts_spent() -> bool:
        return all(rule.hits >= rule.count for rule in bursts)

    await eventually(bursts_spent, timeout=60, what="the agent to retry through every burst")
    expected = Expected(works={"burst-0", "burst-1", "burst-3", "burst-4"})
    await env.converged(expected, what="convergence under 30% write errors")

    env.hub.clear_faults()
    env.spoke.clear_faults()
    await env.converged(expected, what="convergence after the faults")

    # Every object was created by one successful request. ConfigMaps: burst-0 (2),
    # burst-1 (4 + 1 extra), burst-2 (3), burst-3 (4); Secrets: burst-0's and burst-4's.
    requests = await agent_requests(env.spoke, AGENT_ON_SPOKE)
    created = {
        r: successes(requests, "create", r) for r in ("configmaps", "secrets", "deployments")
    }
    assert created == {"configmaps": 14, "secrets": 2, "deployments": 1}, created


async def test_a_throttled_manifest_waits_for_retry_after(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """A spoke write throttled past the client's retries (MAX_RETRIES waits of 0 s, then
    a 429 with Retry-After 3 s): the work is not retried sooner than 3 s."""
    await create_work(env.hub_client, "throttled", [configmap("throttled-cm", v="1")])
    await env.converged({"throttled"})
    assert agent.agent is not None
    controller = next(
        c for c in agent.agent.manager.controllers if c.name == "manifestwork-controller"
    )
    env.spoke.inject(
        verb="update",
        resource="configmaps",
        code=429,
        count=MAX_RETRIES,
        retryAfter=0,
        userAgent=AGENT_ON_SPOKE,
    )
    throttle = env.spoke.inject(
        verb="update", resource="configmaps", code=429, retryAfter=3, userAgent=AGENT_ON_SPOKE
    )
    await set_manifests(env.hub_client, "throttled", [configmap("throttled-cm", v="2")])

    # Counted, not timed: when the work is first seen waiting 2 to 10 s for its
    # retry, the server must have been asked about once (honouring Retry-After 3 s;
    # twice if a status write of the first attempt lost a race with the status
    # controller), not the ~10 times of a 5 ms doubling backoff that only then
    # reaches 2.56 s. (Longer waits are the periodic resync of the last success.)
    asked: list[int] = []

    async def backing_off() -> bool:
        delay = controller.queue.waiting().get("throttled", 0.0)
        if throttle.hits >= 1 and 2.0 <= delay <= 10.0:
            asked.append(throttle.hits)
            return True
        return False

    await eventually(backing_off, what="the throttled work to wait for its retry")
    env.spoke.clear_faults()
    assert len(asked) == 1 and asked[0] <= 3, asked
