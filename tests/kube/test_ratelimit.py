"""The token bucket (fake clock, no wall time) and its use by the client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, NAMESPACES, KubeClient, TokenBucket
from ocmkit.kube.config import load_kubeconfig
from tests.kube.helpers import NS, sample


class FakeTime:
    """A clock that only moves when told, and a sleep that records and advances it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0)


def test_burst_then_one_token_per_interval() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=3, clock=t.clock, sleep=t.sleep)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    # Later callers get strictly later slots: FIFO by construction.
    assert [round(bucket.reserve(), 6) for _ in range(3)] == [0.1, 0.2, 0.3]
    t.now += 10  # long idle: the bucket refills to the burst, not beyond
    assert bucket.tokens == 3
    t.now += 0.05
    assert bucket.tokens == 3


def test_partial_refill() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=2, burst=1, clock=t.clock, sleep=t.sleep)
    assert bucket.reserve() == 0.0
    t.now += 0.25  # half a token
    assert bucket.reserve() == pytest.approx(0.25)


def test_unlimited_and_zero_burst() -> None:
    t = FakeTime()
    unlimited = TokenBucket(qps=0, burst=0, clock=t.clock, sleep=t.sleep)
    assert unlimited.unlimited and all(unlimited.reserve() == 0 for _ in range(1000))
    tiny = TokenBucket(qps=1, burst=0, clock=t.clock, sleep=t.sleep)
    assert tiny.burst == 1 and tiny.reserve() == 0.0 and tiny.reserve() == 1.0


async def test_acquire_waits_and_a_cancelled_waiter_returns_its_token() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=1, burst=1, clock=t.clock, sleep=t.sleep)
    assert await bucket.acquire() == 0.0
    assert await bucket.acquire() == 1.0
    assert t.slept == [1.0]
    assert bucket.tokens == -1

    blocked = asyncio.Event()

    async def never(seconds: float) -> None:
        blocked.set()
        await asyncio.Event().wait()

    stuck = TokenBucket(qps=1, burst=1, clock=t.clock, sleep=never)
    await stuck.acquire()
    waiter = asyncio.create_task(stuck.acquire())
    await blocked.wait()
    assert stuck.tokens == -1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert stuck.tokens == 0


async def test_waiters_are_served_in_arrival_order() -> None:
    """Each waiter's token falls due after the previous waiter's, however much time
    passes between arrivals (a loaded machine): the slots are FIFO. The order in
    which sleeps *end* is the event loop's business, so it is not what is checked."""
    t = FakeTime()
    bucket = TokenBucket(qps=1000, burst=1, clock=t.clock, sleep=t.sleep)
    due: list[float] = []

    async def one(i: int) -> None:
        t.now += 0.0007 * (i % 3)  # irregular gaps, some shorter than a token interval
        arrived = t.now
        due.append(arrived + await bucket.acquire())

    for i in range(20):
        await one(i)
    assert due == sorted(due) and len(set(due)) == len(due)
    assert t.slept  # some waiters did wait for their slot


async def test_every_request_takes_a_token_including_watch_starts(
    sim: KubeSim, tmp_path: Path
) -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=1, burst=5, clock=t.clock, sleep=t.sleep)
    config = await load_kubeconfig(str(tmp_path / "kubeconfig"))
    async with KubeClient(config, rate_limiter=bucket, name="limited") as client:
        waits_before = sample("kube_client_rate_limiter_wait_seconds_count", {"client": "limited"})
        await client.create(NAMESPACES, {"metadata": {"name": NS}})  # 1
        listed = await client.list(CONFIGMAPS, NS)  # 2
        async with client.watch(
            CONFIGMAPS, NS, resource_version=listed["metadata"]["resourceVersion"]
        ):  # 3
            pass
        await client.patch(NAMESPACES, NS, {"metadata": {"labels": {"a": "b"}}})  # 4
        assert bucket.tokens == 1 and t.slept == []
        await client.get(NAMESPACES, NS)  # 5: the last token of the burst
        await client.get(NAMESPACES, NS)  # 6: must wait one interval
        assert t.slept == [1.0]
        waits_after = sample("kube_client_rate_limiter_wait_seconds_count", {"client": "limited"})
        assert waits_after - waits_before == 6


async def test_client_qps_and_burst_arguments(sim: KubeSim, tmp_path: Path) -> None:
    client = await KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"), qps=7, burst=9)
    async with client:
        assert (client.rate_limiter.qps, client.rate_limiter.burst) == (7, 9)
    unlimited = await KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"), qps=0)
    async with unlimited:
        assert unlimited.rate_limiter.unlimited
