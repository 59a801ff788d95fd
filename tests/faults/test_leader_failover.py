"""Two agent replicas with leader election: the leader SIGKILLed, then SIGTERMed.

Both replicas are real processes (``python -m workagent agent``) with short
lease settings. Each has tokens of its own on the hub and the spoke, so
kubesim's request journal says which process sent which write and when: the
proof that nothing is applied twice concurrently is that the standby sends no
write (to the spoke or to the hub) before its first successful write of the
Lease, and that it takes the Lease only once the leader is gone.

- SIGKILL: the Lease is left held; the standby takes over once it has seen no
  renewal for the lease duration, and applies the work created after the kill.
- SIGTERM: the leader releases the Lease on its way out, so the standby takes
  over within a retry period, long before the (here 30 s) lease would expire.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubesim.faults import JournalEntry
from kubesim.sim import KubeSim
from ocmkit.kube import LEASES, NAMESPACES, KubeClient, NotFound
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import (
    agent_args,
    agent_identity,
    configmaps,
    create_work,
    spawn_agent,
    writes_of,
)
from tests.support.processes import ProgramProcess

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

NAMESPACE = "open-cluster-management-agent"
LEASE = "work-agent-lock"
#: How long a takeover may take beyond what the lease settings allow (slow CI).
SLACK = 10.0


class Replicas:
    """Agent processes of one deployment, each under its own identity."""

    def __init__(self, hub: KubeSim, spoke: KubeSim, tmp_path: Path) -> None:
        self.hub, self.spoke, self.tmp_path = hub, spoke, tmp_path
        self.running: dict[str, ProgramProcess] = {}

    async def start(self, user: str, lease: float, renew: float, retry: float) -> ProgramProcess:
        """Start replica ``user`` with leader election on these settings (seconds)."""
        hub_config, spoke_config = agent_identity(self.hub, self.spoke, self.tmp_path, user)
        args = agent_args(
            hub_config,
            spoke_config,
            f"--namespace={NAMESPACE}",
            f"--leader-election-lease-duration={lease:g}s",
            f"--leader-election-renew-deadline={renew:g}s",
            f"--leader-election-retry-period={retry:g}s",
        )
        process = await spawn_agent(self.tmp_path, user, *args)
        self.running[user] = process
        return process

    def alive(self, user: str) -> None:
        """Fail with the replica's log if it exited."""
        process = self.running[user]
        if process.process.returncode is not None:
            raise AssertionError(f"replica {user} exited:\n{process.log()}")

    async def stop_all(self) -> None:
        """SIGTERM every replica still running."""
        await asyncio.gather(*(p.terminate() for p in self.running.values()))


@pytest.fixture
async def replicas(
    hub: KubeSim, spoke: KubeSim, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[Replicas]:
    """Replicas of the agent (started by the test); all stopped at the end."""
    await spoke_client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    group = Replicas(hub, spoke, tmp_path)
    try:
        yield group
    finally:
        await group.stop_all()


async def lease_holder(spoke_client: KubeClient) -> str:
    """The Lease's holderIdentity ("" when released or not created yet)."""
    try:
        lease = await spoke_client.get(LEASES, LEASE, NAMESPACE)
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def wait_leader(replicas: Replicas, spoke_client: KubeClient, user: str) -> str:
    """Wait until replica ``user`` (the only one running) holds the Lease; its identity."""
    holder: list[str] = []

    async def held() -> bool:
        replicas.alive(user)
        holder[:] = [await lease_holder(spoke_client)]
        return bool(holder[0])

    await eventually(held, timeout=60, what=f"replica {user} to take the Lease")
    return holder[0]


async def wait_standing_by(replicas: Replicas, spoke: KubeSim, user: str) -> None:
    """Wait until replica ``user`` has read the held Lease twice: it polls as a standby."""

    async def polling() -> bool:
        replicas.alive(user)
        reads = spoke.journal().select(user=user, verbs=("get",))
        return sum(1 for e in reads if e.resource == "leases") >= 2

    await eventually(polling, timeout=60, what=f"replica {user} to poll the Lease as a standby")


def first_lease_write(spoke: KubeSim, user: str) -> JournalEntry:
    """The first successful write of the Lease by ``user``: when it took the Lease."""
    taken = [e for e in writes_of(spoke, user) if e.resource == "leases"]
    assert taken, f"replica {user} never wrote the Lease"
    return taken[0]


def assert_writes_only_while_leading(
    hub: KubeSim, spoke: KubeSim, user: str, since: float, until: float = float("inf")
) -> None:
    """Every write of ``user`` except the Lease arrived in [since, until)."""
    outside = [
        (sim_name, e.verb, e.resource, round(e.at - since, 2))
        for sim_name, sim in (("hub", hub), ("spoke", spoke))
        for e in writes_of(sim, user, exclude=("leases",))
        if not since <= e.at < until
    ]
    assert outside == [], f"replica {user} wrote while not leading: {outside}"


async def test_standby_takes_over_from_a_killed_leader(
    replicas: Replicas,
    env: Clusters,
) -> None:
    """SIGKILL the leader: the standby takes the expired Lease and applies new work;
    the two never write at the same time."""
    lease, renew, retry = 4.0, 3.0, 1.0
    await create_work(env.hub_client, "before", configmaps("before", 2))
    await replicas.start("agent-a", lease, renew, retry)
    leader = await wait_leader(replicas, env.spoke_client, "agent-a")
    await replicas.start("agent-b", lease, renew, retry)
    await wait_standing_by(replicas, env.spoke, "agent-b")
    await create_work(env.hub_client, "during", configmaps("during", 2))
    await env.converged({"before", "during"})
    assert await lease_holder(env.spoke_client) == leader

    killed_at = time.monotonic()
    replicas.running["agent-a"].process.kill()
    await replicas.running["agent-a"].process.wait()
    await create_work(env.hub_client, "after", configmaps("after", 3))

    async def taken_over() -> bool:
        replicas.alive("agent-b")
        return await lease_holder(env.spoke_client) not in ("", leader)

    # The bound on the takeover time is asserted below, from kubesim's journal.
    await eventually(taken_over, timeout=60, what="the standby to take the Lease")
    await env.converged(
        {"before", "during", "after"},
        what="the new leader to apply the work created after the kill",
    )

    took = first_lease_write(env.spoke, "agent-b")
    takeover = took.at - killed_at
    # The killed leader renewed at most one retry period before the kill, and the
    # standby waits a full lease duration after seeing a renewal: earlier would be
    # two leaders at once. Later than lease + two (jittered) polls plus slack is a bug.
    assert lease - 2 * retry < takeover < lease + 2 * 1.2 * retry + SLACK, takeover
    assert writes_of(env.hub, "agent-a", exclude=("leases",)), "the first leader applied nothing"
    assert writes_of(env.spoke, "agent-b", exclude=("leases",)), "the new leader applied nothing"
    assert_writes_only_while_leading(env.hub, env.spoke, "agent-a", since=0.0, until=killed_at)
    assert_writes_only_while_leading(env.hub, env.spoke, "agent-b", since=took.at)
    # A standby does not even read the hub: its informers start once it leads.
    early = [
        (e.verb, e.resource) for e in env.hub.journal().select(user="agent-b") if e.at < took.at
    ]
    assert early == [], f"the standby talked to the hub before leading: {early}"


async def test_graceful_leader_releases_the_lease(
    replicas: Replicas,
    env: Clusters,
) -> None:
    """SIGTERM the leader: it exits 0 and releases the Lease, so the standby takes over
    within a retry period instead of waiting out the 30 s lease."""
    lease, renew, retry = 30.0, 20.0, 1.0
    await replicas.start("agent-a", lease, renew, retry)
    leader = await wait_leader(replicas, env.spoke_client, "agent-a")
    await replicas.start("agent-b", lease, renew, retry)
    await wait_standing_by(replicas, env.spoke, "agent-b")
    await create_work(env.hub_client, "first", configmaps("first", 2))
    await env.converged({"first"})

    stopping_at = time.monotonic()
    assert await replicas.running["agent-a"].terminate() == 0
    assert "released the lease" in replicas.running["agent-a"].log()
    await create_work(env.hub_client, "second", configmaps("second", 2))

    async def taken_over() -> bool:
        replicas.alive("agent-b")
        return await lease_holder(env.spoke_client) not in ("", leader)

    await eventually(taken_over, timeout=60, what="the standby to take the released Lease")
    took = first_lease_write(env.spoke, "agent-b")
    # Without the release the standby could not take over before lease - retry (29 s).
    assert took.at - stopping_at < lease / 2, took.at - stopping_at
    await env.converged(
        {"first", "second"}, what="the new leader to apply the work created after the handover"
    )
    # The leader drains its controllers before it releases the Lease, so even though
    # the standby may take over before the old process has exited, their writes
    # do not overlap.
    assert_writes_only_while_leading(env.hub, env.spoke, "agent-a", since=0.0, until=took.at)
    assert_writes_only_while_leading(env.hub, env.spoke, "agent-b", since=took.at)
