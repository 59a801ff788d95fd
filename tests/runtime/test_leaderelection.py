"""Leader election on a Lease in kubesim: one leader, failover, release, lost leadership."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import LEASES, KubeClient, NotFound
from ocmkit.runtime import LeaderElectionSettings, LeaderElector
from tests.conftest import eventually
from tests.runtime.conftest import NS, sample

LEASE = "test-lock"


def fast(identity: str, **kw: Any) -> LeaderElectionSettings:
    """Short timings so failover happens within a test."""
    values: dict[str, Any] = {
        "lease_name": LEASE,
        "namespace": NS,
        "identity": identity,
        "lease_duration": 2.0,
        "renew_deadline": 1.5,
        "retry_period": 0.2,
    }
    values.update(kw)
    return LeaderElectionSettings(**values)


ElectorFactory = Callable[..., LeaderElector]


@pytest.fixture
async def electors(kube: KubeClient) -> AsyncIterator[ElectorFactory]:
    made: list[LeaderElector] = []

    def make(identity: str, **kw: Any) -> LeaderElector:
        elector = LeaderElector(kube, fast(identity, **kw))
        made.append(elector)
        return elector

    try:
        yield make
    finally:
        for elector in made:
            await elector.stop()


async def lease_spec(kube: KubeClient) -> dict[str, Any]:
    lease = await kube.get(LEASES, LEASE, NS)
    spec: dict[str, Any] = lease["spec"]
    return spec


async def test_exactly_one_leads_and_the_other_takes_over_on_release(
    kube: KubeClient, electors: ElectorFactory
) -> None:
    a = electors("a")
    b = electors("b")
    await a.start()
    await eventually(_is(a.is_leader), what="a to lead")
    await b.start()

    async def b_standing_by() -> bool:
        return b.state == "standby" and b.leader_identity == "a"

    await eventually(b_standing_by, what="b to stand by")
    assert a.is_leader() and not b.is_leader()
    assert a.readiness_failure() is None and b.readiness_failure() is None
    assert (await lease_spec(kube))["holderIdentity"] == "a"
    assert sample("leader_election_master_status", name=LEASE) == 1

    await a.stop()
    await asyncio.wait_for(a.wait_stopped_leading(), 5)  # it led, and stopped on release
    await eventually(_is(b.is_leader), what="b to take over")
    assert not a.is_leader()
    assert b.leader_identity == "b"
    spec = await lease_spec(kube)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1


async def test_simultaneous_candidates_elect_exactly_one(
    kube: KubeClient, electors: ElectorFactory
) -> None:
    candidates = [electors(f"c{i}") for i in range(3)]
    await asyncio.gather(*(c.start() for c in candidates))

    async def settled() -> bool:
        states = sorted(c.state for c in candidates)
        return states == ["leader", "standby", "standby"]

    await eventually(settled, what="one leader and two standbys")
    leader = next(c for c in candidates if c.is_leader())
    assert (await lease_spec(kube))["holderIdentity"] == leader.settings.identity
    assert all(c.leader_identity == leader.settings.identity for c in candidates)


async def test_release_empties_the_lease(kube: KubeClient, electors: ElectorFactory) -> None:
    a = electors("solo")
    await a.start()
    await a.wait_leading()
    spec = await lease_spec(kube)
    assert spec["holderIdentity"] == "solo" and spec["leaseDurationSeconds"] == 2
    await a.stop()
    spec = await lease_spec(kube)
    assert spec.get("holderIdentity", "") == ""
    assert spec["leaseDurationSeconds"] == 1
    assert a.state == "stopped"
    assert a.readiness_failure() == "stopped"


async def test_failover_after_a_leader_dies_without_releasing(
    kube: KubeClient, electors: ElectorFactory
) -> None:
    a = electors("crashing", release_on_cancel=False)
    b = electors("survivor")
    await a.start()
    await a.wait_leading()
    await b.start()
    await eventually(_is(lambda: b.state == "standby"))
    await a.stop()  # no release: b must wait for the lease to expire
    assert (await lease_spec(kube))["holderIdentity"] == "crashing"
    await eventually(_is(b.is_leader), timeout=10, what="b to take over an expired lease")
    assert (await lease_spec(kube))["holderIdentity"] == "survivor"


async def test_leader_that_cannot_renew_stops_leading(
    sim: KubeSim, electors: ElectorFactory
) -> None:
    a = electors("unlucky")
    await a.start()
    await a.wait_leading()
    sim.inject(verb="*", resource="leases", code=500)
    await eventually(_is(lambda: a.state == "lost"), what="leadership to be lost")
    await a.wait_stopped_leading()
    assert not a.is_leader()
    assert a.readiness_failure() == "leadership lost"
    assert sample("leader_election_master_status", name=LEASE) == 0


async def test_lease_errors_are_reported_for_readiness(
    sim: KubeSim, electors: ElectorFactory
) -> None:
    sim.inject(verb="get", resource="leases", code=503)
    a = electors("blocked")
    assert a.readiness_failure() == "waiting for the first Lease check"
    await a.start()

    async def reported() -> bool:
        failure = a.readiness_failure()
        return failure is not None and "503" in failure

    await eventually(reported)
    failure = a.readiness_failure()
    assert failure is not None and failure.startswith("cannot read Lease: 503")
    sim.clear_faults()
    await a.wait_leading()
    assert a.readiness_failure() is None


async def test_disabled_leads_at_once_without_a_lease(kube: KubeClient) -> None:
    elector = LeaderElector(None, LeaderElectionSettings(disabled=True))
    await elector.start()
    assert elector.is_leader() and elector.state == "leader"
    await elector.wait_leading()
    with pytest.raises(NotFound):
        await kube.get(LEASES, "work-agent-lock", "open-cluster-management-agent")
    await elector.stop()


def test_settings_are_validated() -> None:
    defaults = LeaderElectionSettings()
    assert (defaults.lease_duration, defaults.renew_deadline, defaults.retry_period) == (
        137.0,
        107.0,
        26.0,
    )
    assert "_" in defaults.identity
    with pytest.raises(ValueError, match="greater than the renew deadline"):
        LeaderElectionSettings(lease_duration=10, renew_deadline=10).validate()
    with pytest.raises(ValueError, match="retry period"):
        LeaderElectionSettings(renew_deadline=10, retry_period=9).validate()
    with pytest.raises(ValueError, match="needs a client"):
        LeaderElector(None, LeaderElectionSettings())


def _is(predicate: Callable[[], bool]) -> Callable[[], Any]:
    async def check() -> bool:
        return predicate()

    return check
