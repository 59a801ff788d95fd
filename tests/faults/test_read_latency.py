"""Slow reads: latency on the agent's gets, lists and watches, on the hub and the spoke.

Write latency is covered elsewhere; here kubesim delays only what the agent
reads (its User-Agent, so the tests' own clients stay fast):

- every read slowed a little on both clusters, from before the agent starts
  (its initial lists too) and through a 410 storm that forces relists: the
  works still converge;
- one resource type very slow (every read of a Secret takes seconds): works
  that only hold ConfigMaps converge meanwhile, the slow one after.
"""

from __future__ import annotations

import pytest

from kubesim.faults import FaultRule
from kubesim.sim import KubeSim
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import AGENT_ON_HUB, AGENT_ON_SPOKE, configmaps, create_work, create_works
from tests.faults.invariants import problems
from tests.support.programs import AgentRunner

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

READS = ("get", "list", "watch")
#: How long a read of a Secret takes in the slow-type test.
SLOW_SECONDS = 8.0


def slow_reads(sim: KubeSim, user_agent: str, latency: float) -> list[FaultRule]:
    """Delay every get, list and watch of ``user_agent`` on ``sim``."""
    return [sim.inject(verb=verb, latency=latency, userAgent=user_agent) for verb in READS]


async def test_slow_reads_everywhere_still_converge(
    runner: AgentRunner,
    env: Clusters,
) -> None:
    """Reads slowed by 0.3 s (hub) and 0.2 s (spoke), initial lists and relists
    included: works created before and after the start converge."""
    hub_rules = slow_reads(env.hub, AGENT_ON_HUB, 0.3)
    spoke_rules = slow_reads(env.spoke, AGENT_ON_SPOKE, 0.2)
    await create_work(env.hub_client, "early", configmaps("early", 3))
    await runner.start()
    works = {"early", *await create_works(env.hub_client, "slow", 3, 2)}
    await env.converged(works, what="convergence with slow reads")
    # A 410 storm makes the informers relist, slowly, while the hub moves on.
    env.hub.expire_watches()
    env.spoke.expire_watches()
    await create_work(env.hub_client, "after-410", configmaps("after-410", 2))
    await env.converged({*works, "after-410"}, what="convergence after relists with slow reads")
    # The agent reads works only through its informer: no GETs on the hub.
    used = [r for r in hub_rules if r.verb != "get"] + spoke_rules
    idle = [(r.verb, r.user_agent) for r in used if r.hits == 0]
    assert idle == [], f"latency rules never applied: {idle}"


async def test_one_slow_resource_type_does_not_stop_other_works(
    runner: AgentRunner,
    env: Clusters,
) -> None:
    """Every request on Secrets takes seconds: ConfigMap works converge meanwhile."""
    await runner.start()
    # Every verb, not only reads: the apply pass reports Available from the object
    # its create returned, so the work waits for its first Secret request either
    # way (the apply's GET or its create), never for a status read alone.
    slow = env.spoke.inject(
        verb="*", resource="secrets", latency=SLOW_SECONDS, userAgent=AGENT_ON_SPOKE
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "slow-secret", "namespace": "default"},
        "data": {"k": "dg=="},  # "v"
    }
    await create_work(env.hub_client, "slow", [secret])

    async def slow_read_started() -> bool:
        return slow.hits >= 1

    await eventually(slow_read_started, what="the agent to read the Secret")
    fast = await create_works(env.hub_client, "fast", 4, 2)
    slow_problems: list[str] = []

    async def fast_converged() -> bool:
        found = await problems(env.hub_client, env.spoke_client, env.the_hash)
        of_slow = ("work slow:", f"AppliedManifestWork {env.the_hash}-slow:")
        slow_problems[:] = [p for p in found if p.startswith(of_slow)]
        return len(slow_problems) == len(found)

    await eventually(
        fast_converged, timeout=SLOW_SECONDS, what="the ConfigMap works while a Secret read hangs"
    )
    # Same snapshot: the slow work had not converged yet, so its read was in flight.
    assert slow_problems, "the Secret read was not slow"
    env.spoke.clear_faults()
    await env.converged({"slow", *fast}, what="the slow work once its read returned")
