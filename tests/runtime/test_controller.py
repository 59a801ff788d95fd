"""Controller semantics: results, errors, terminal errors, exclusivity, sync gating, stop."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from prometheus_client import REGISTRY

from ocmkit.kube import TooManyRequests
from ocmkit.runtime import Controller, Result, TerminalError, WorkQueue
from tests.conftest import eventually
from tests.support.clock import FakeClock


class FakeInformer:
    """A SyncSource whose sync the test controls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._synced = asyncio.Event()

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self, timeout: float | None = None) -> bool:
        await self._synced.wait()
        return True

    def sync(self) -> None:
        self._synced.set()


def sample(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


async def test_success_forgets_and_requeue_after_schedules() -> None:
    clock = FakeClock()
    q = WorkQueue("c-requeue", clock=clock)
    calls: Counter[str] = Counter()

    async def reconcile(key: str) -> Result | None:
        calls[key] += 1
        return Result(requeue_after=60) if key == "periodic" else None

    ctl = Controller("c-requeue", q, reconcile, workers=2)
    run = asyncio.create_task(ctl.run())
    q.add_rate_limited("plain")  # with backoff history, which success must reset
    clock.advance(1)
    q.add("periodic")

    async def both_done() -> bool:
        return calls["plain"] == 1 and calls["periodic"] == 1 and not q.processing()

    await eventually(both_done, what="first reconciles")
    assert q.num_requeues("plain") == 0, "success forgets the backoff"
    assert q.waiting() == {"periodic": pytest.approx(60)}
    clock.advance(60)

    async def periodic_again() -> bool:
        return calls["periodic"] == 2

    await eventually(periodic_again, what="requeue_after to fire")
    assert calls["plain"] == 1
    await ctl.stop(5)
    await run


async def test_errors_retry_with_backoff_and_terminal_errors_do_not() -> None:
    clock = FakeClock()
    q = WorkQueue("c-errors", clock=clock)
    calls: Counter[str] = Counter()
    before_err = sample("controller_runtime_reconcile_total", controller="c-errors", result="error")
    before_term = sample(
        "controller_runtime_terminal_reconcile_errors_total", controller="c-errors"
    )

    async def reconcile(key: str) -> Result | None:
        calls[key] += 1
        if key == "terminal":
            raise TerminalError("spec is invalid")
        if key == "flaky" and calls[key] < 3:
            raise RuntimeError("transient")
        if key == "throttled" and calls[key] == 1:
            raise TooManyRequests(429, "TooManyRequests", "slow down", retry_after=7.0)
        return None

    ctl = Controller("c-errors", q, reconcile, workers=3)
    run = asyncio.create_task(ctl.run())
    for key in ("terminal", "flaky", "throttled"):
        q.add(key)

    async def first_round() -> bool:
        return sum(calls.values()) == 3 and not q.processing()

    await eventually(first_round, what="first round")
    assert q.waiting() == {"flaky": pytest.approx(0.005), "throttled": pytest.approx(7.0)}
    assert q.num_requeues("flaky") == 1
    assert "terminal" not in q.waiting() and q.num_requeues("terminal") == 0
    clock.advance(0.005)

    async def second_flaky() -> bool:
        return calls["flaky"] == 2 and not q.processing()

    await eventually(second_flaky, what="flaky retried")
    assert q.waiting()["flaky"] == pytest.approx(0.01), "backoff doubles"
    clock.advance(7.0)

    async def all_done() -> bool:
        return calls["flaky"] == 3 and calls["throttled"] == 2 and not q.processing()

    await eventually(all_done, what="retries to succeed")
    assert q.num_requeues("flaky") == 0
    assert calls["terminal"] == 1
    assert (
        sample("controller_runtime_reconcile_total", controller="c-errors", result="error")
        - before_err
        == 3
    )
    assert (
        sample("controller_runtime_terminal_reconcile_errors_total", controller="c-errors")
        - before_term
        == 1
    )
    await ctl.stop(5)
    await run


async def test_requeue_true_uses_rate_limited_backoff() -> None:
    clock = FakeClock()
    q = WorkQueue("c-requeue-flag", clock=clock)
    calls = 0

    async def reconcile(key: str) -> Result:
        nonlocal calls
        calls += 1
        return Result(requeue=calls == 1)

    ctl = Controller("c-requeue-flag", q, reconcile)
    run = asyncio.create_task(ctl.run())
    q.add("k")

    async def requeued() -> bool:
        return "k" in q.waiting()

    await eventually(requeued, what="rate-limited requeue")
    assert q.num_requeues("k") == 1
    clock.advance(1)

    async def second() -> bool:
        return calls == 2 and not q.processing()

    await eventually(second)
    assert q.num_requeues("k") == 0
    await ctl.stop(5)
    await run


async def test_one_key_is_never_reconciled_by_two_workers() -> None:
    q = WorkQueue("c-exclusive", clock=FakeClock())
    release = asyncio.Event()
    running: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    calls: Counter[str] = Counter()

    async def reconcile(key: str) -> None:
        running[key] += 1
        peak[key] = max(peak[key], running[key])
        calls[key] += 1
        if key == "slow" and calls[key] == 1:
            await release.wait()
        running[key] -= 1

    ctl = Controller("c-exclusive", q, reconcile, workers=4)
    run = asyncio.create_task(ctl.run())
    q.add("slow")

    async def slow_running() -> bool:
        return running["slow"] == 1

    await eventually(slow_running)
    for _ in range(5):
        q.add("slow")  # coalesced, and held back until the first reconcile ends
        q.add("other")
        await asyncio.sleep(0)

    async def others_done() -> bool:
        return calls["other"] >= 1 and running["other"] == 0

    await eventually(others_done, what="other keys to proceed on the free workers")
    assert calls["slow"] == 1, "the added key must wait for the running one"
    release.set()

    async def slow_twice() -> bool:
        return calls["slow"] == 2 and not q.processing()

    await eventually(slow_twice, what="the re-added key to run once more")
    assert peak["slow"] == 1
    await ctl.stop(5)
    await run


async def test_workers_wait_for_informers_to_sync() -> None:
    q = WorkQueue("c-sync", clock=FakeClock())
    informer = FakeInformer("things")
    seen: list[str] = []

    async def reconcile(key: str) -> None:
        seen.append(key)

    ctl = Controller("c-sync", q, reconcile, workers=2, depends_on=[informer])
    run = asyncio.create_task(ctl.run())
    q.add("a")
    for _ in range(20):
        await asyncio.sleep(0)
    assert not ctl.started and seen == []
    informer.sync()
    await asyncio.wait_for(ctl.wait_started(), 5)

    async def reconciled() -> bool:
        return seen == ["a"]

    await eventually(reconciled)
    await ctl.stop(5)
    await run


async def test_stop_before_sync_returns() -> None:
    q = WorkQueue("c-stop-unsynced", clock=FakeClock())

    async def reconcile(key: str) -> None:
        raise AssertionError("must not run")

    ctl = Controller("c-stop-unsynced", q, reconcile, depends_on=[FakeInformer("never")])
    run = asyncio.create_task(ctl.run())
    await asyncio.sleep(0)
    assert await ctl.stop(5)
    await asyncio.wait_for(run, 5)


async def test_stop_drains_in_flight_reconciles() -> None:
    q = WorkQueue("c-drain", clock=FakeClock())
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        await release.wait()
        finished.append(key)

    ctl = Controller("c-drain", q, reconcile, workers=2)
    run = asyncio.create_task(ctl.run())
    q.add("a")
    q.add("b")
    q.add("c")

    async def two_running() -> bool:
        return len(q.processing()) == 2

    await eventually(two_running)
    stopping = asyncio.create_task(ctl.stop(30))
    await asyncio.sleep(0)
    assert not stopping.done()
    release.set()
    assert await stopping is True
    await run
    assert sorted(finished) == ["a", "b"], "queued key c is dropped, running ones finish"


async def test_stop_cancels_reconciles_past_the_deadline() -> None:
    q = WorkQueue("c-deadline", clock=FakeClock())
    cancelled = asyncio.Event()

    async def reconcile(key: str) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    ctl = Controller("c-deadline", q, reconcile)
    run = asyncio.create_task(ctl.run())
    q.add("stuck")

    async def running() -> bool:
        return q.processing() == {"stuck"}

    await eventually(running)
    assert await ctl.stop(0.05) is False
    assert cancelled.is_set()
    await run


def test_workers_must_be_positive() -> None:
    async def reconcile(key: str) -> None:
        return None

    with pytest.raises(ValueError, match="workers must be >= 1"):
        Controller("c-bad", WorkQueue("c-bad"), reconcile, workers=0)


async def test_cancelled_error_from_inside_a_reconcile_is_a_failure_not_an_exit() -> None:
    clock = FakeClock()
    q = WorkQueue("c-spurious-cancel", clock=clock)
    calls: Counter[str] = Counter()

    async def reconcile(key: str) -> None:
        calls[key] += 1
        if calls[key] == 1:
            cancelled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            cancelled.cancel()
            await cancelled  # raises CancelledError, but nobody cancelled the worker

    ctl = Controller("c-spurious-cancel", q, reconcile, workers=1)
    run = asyncio.create_task(ctl.run())
    q.add("k")

    async def requeued() -> bool:
        return "k" in q.waiting()

    await eventually(requeued, what="the failure to be requeued")
    clock.advance(1)

    async def retried() -> bool:
        return calls["k"] == 2 and not q.processing()

    await eventually(retried, what="the single worker to survive and retry")
    with pytest.raises(RuntimeError, match="already running"):
        await ctl.run()
    await ctl.stop(5)
    await run
