"""Work queue semantics: dedup, per-key exclusivity, delays, rate limits, shutdown."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from ocmkit.runtime import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueEmpty,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)
from tests.support.clock import FakeClock


def drain(q: WorkQueue) -> list[str]:
    """Take every ready key (and mark each done)."""
    out: list[str] = []
    while True:
        try:
            key = q.get_nowait()
        except QueueEmpty:
            return out
        out.append(key)
        q.done(key)


def test_keys_are_queued_once_in_fifo_order() -> None:
    q = WorkQueue("t-dedup", clock=FakeClock())
    for key in ("a", "b", "a", "c", "b"):
        q.add(key)
    assert len(q) == 3
    assert drain(q) == ["a", "b", "c"]


def test_key_being_processed_is_not_handed_out_again_until_done() -> None:
    q = WorkQueue("t-exclusive", clock=FakeClock())
    q.add("a")
    assert q.get_nowait() == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0, "a is being processed: it must wait for done()"
    with pytest.raises(QueueEmpty):
        q.get_nowait()
    q.done("a")
    assert len(q) == 1
    assert q.get_nowait() == "a"
    q.done("a")
    assert len(q) == 0


def test_done_without_readd_does_not_requeue() -> None:
    q = WorkQueue("t-done", clock=FakeClock())
    q.add("a")
    q.done(q.get_nowait())
    assert len(q) == 0
    q.done("never-handed-out")  # ignored, as in client-go


def test_add_after_waits_for_the_clock() -> None:
    clock = FakeClock()
    q = WorkQueue("t-after", clock=clock)
    q.add_after("a", 5)
    assert len(q) == 0
    assert q.waiting() == {"a": 5}
    clock.advance(4.9)
    assert len(q) == 0
    clock.advance(0.1)
    assert len(q) == 1
    assert q.waiting() == {}


def test_add_after_only_moves_ready_time_earlier() -> None:
    clock = FakeClock()
    q = WorkQueue("t-earlier", clock=clock)
    q.add_after("a", 5)
    q.add_after("a", 10)
    assert q.waiting() == {"a": 5}
    q.add_after("a", 2)
    assert q.waiting() == {"a": 2}
    clock.advance(2)
    assert drain(q) == ["a"]
    clock.advance(10)
    assert len(q) == 0, "superseded ready times must not fire again"


def test_add_after_zero_adds_now() -> None:
    q = WorkQueue("t-zero", clock=FakeClock())
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert drain(q) == ["a", "b"]


def test_delayed_keys_come_out_in_ready_order() -> None:
    clock = FakeClock()
    q = WorkQueue("t-order", clock=clock)
    q.add_after("late", 3)
    q.add_after("early", 1)
    q.add_after("middle", 2)
    clock.advance(5)
    assert drain(q) == ["early", "middle", "late"]


async def test_blocked_get_wakes_for_a_delayed_key() -> None:
    clock = FakeClock()
    q = WorkQueue("t-wake", clock=clock)
    getter = asyncio.create_task(q.get())
    q.add_after("a", 10)
    # Let the getter and the delay pump park on the fake clock.
    await _until(lambda: clock.sleepers() == 1)
    assert not getter.done()
    clock.advance(10)
    assert await getter == "a"
    q.done("a")
    await q.shutdown()


async def test_earlier_add_after_reschedules_the_pump() -> None:
    clock = FakeClock()
    q = WorkQueue("t-resched", clock=clock)
    q.add_after("a", 100)
    getter = asyncio.create_task(q.get())
    await _until(lambda: clock.sleepers() == 1)
    q.add_after("a", 1)
    await _until(lambda: clock.sleepers() == 1 and q.waiting() == {"a": 1})
    clock.advance(1)
    assert await getter == "a"
    q.done("a")
    await q.shutdown()


async def test_get_blocks_until_add() -> None:
    q = WorkQueue("t-block", clock=FakeClock())
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("x")
    assert await getter == "x"


async def test_cancelled_getter_passes_its_wakeup_on() -> None:
    q = WorkQueue("t-cancel", clock=FakeClock())
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes `first` ...
    first.cancel()  # ... which is cancelled before it runs
    assert await second == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


def test_exponential_backoff_doubles_from_5ms_and_caps_at_1000s() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("k") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0
    assert max(delays) == 1000.0
    assert limiter.num_requeues("k") == 20
    assert limiter.when("other") == 0.005, "backoff is per key"
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
    assert limiter.when("k") == 0.005
    for _ in range(200):
        limiter.when("huge")  # no overflow far past the cap
    assert limiter.when("huge") == 1000.0


def test_token_bucket_allows_a_burst_then_spaces_at_qps() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert all(bucket.when(str(i)) == 0 for i in range(100))
    assert bucket.when("x") == pytest.approx(0.1)
    assert bucket.when("y") == pytest.approx(0.2)
    clock.advance(1.0)  # repays 10 tokens: 2 owed, 8 left
    assert all(bucket.when(str(i)) == 0 for i in range(8))
    assert bucket.when("z") == pytest.approx(0.1)


def test_default_rate_limiter_is_the_max_of_both() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    assert isinstance(limiter, MaxOfRateLimiter)
    # Within the burst the per-key backoff decides.
    assert limiter.when("k") == 0.005
    assert limiter.when("k") == 0.01
    for i in range(98):
        limiter.when(f"other-{i}")
    # Burst spent: the bucket's 0.1 s beats a fresh key's 5 ms.
    assert limiter.when("fresh") == pytest.approx(0.1)
    assert limiter.num_requeues("k") == 2
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0


def test_add_rate_limited_forget_and_num_requeues() -> None:
    clock = FakeClock()
    q = WorkQueue("t-ratelimited", clock=clock)
    assert q.add_rate_limited("a") == 0.005
    assert q.add_rate_limited("a") == 0.01
    assert q.num_requeues("a") == 2
    assert q.waiting() == {"a": pytest.approx(0.005)}, "the earlier ready time wins"
    clock.advance(0.005)
    assert drain(q) == ["a"]
    q.forget("a")
    assert q.num_requeues("a") == 0
    assert q.add_rate_limited("a", at_least=3.0) == 3.0


async def test_shutdown_wakes_getters_drops_waiting_and_drains_processing() -> None:
    clock = FakeClock()
    q = WorkQueue("t-shutdown", clock=clock)
    q.add("busy")
    assert q.get_nowait() == "busy"
    q.add_after("later", 5)
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    stopping = asyncio.create_task(q.shutdown(drain=True))
    with pytest.raises(ShutDown):
        await getter
    await asyncio.sleep(0)
    assert not stopping.done(), "drain waits for the key being processed"
    q.add("ignored")
    assert len(q) == 0
    q.done("busy")
    await stopping
    assert q.waiting() == {}
    with pytest.raises(ShutDown):
        await q.get()
    with pytest.raises(ShutDown):
        q.get_nowait()


async def test_shutdown_drops_queued_keys() -> None:
    q = WorkQueue("t-drop", clock=FakeClock())
    q.add("a")
    q.add("b")
    await q.shutdown()
    assert len(q) == 0
    with pytest.raises(ShutDown):
        q.get_nowait()


async def test_shutdown_without_drain_returns_at_once() -> None:
    q = WorkQueue("t-nodrain", clock=FakeClock())
    q.add("a")
    q.get_nowait()
    await q.shutdown(drain=False)
    with pytest.raises(ShutDown):
        q.get_nowait()
    assert q.processing() == {"a"}


def test_metrics_follow_client_go_names() -> None:
    clock = FakeClock()
    name = "t-metrics"
    before = {
        metric: REGISTRY.get_sample_value(metric, {"name": name}) or 0.0
        for metric in (
            "workqueue_adds_total",
            "workqueue_retries_total",
            "workqueue_queue_duration_seconds_count",
            "workqueue_work_duration_seconds_count",
        )
    }
    q = WorkQueue(name, clock=clock)
    q.add("a")
    q.add("a")
    q.add("b")
    assert REGISTRY.get_sample_value("workqueue_depth", {"name": name}) == 2
    clock.advance(0.5)
    key = q.get_nowait()
    clock.advance(2.0)
    assert (
        REGISTRY.get_sample_value("workqueue_longest_running_processor_seconds", {"name": name})
        == 2.0
    )
    assert REGISTRY.get_sample_value("workqueue_unfinished_work_seconds", {"name": name}) == 2.0
    q.done(key)
    q.add_rate_limited("c")

    def delta(metric: str) -> float:
        return (REGISTRY.get_sample_value(metric, {"name": name}) or 0.0) - before[metric]

    assert delta("workqueue_adds_total") == 2
    assert delta("workqueue_retries_total") == 1
    assert delta("workqueue_queue_duration_seconds_count") == 1
    assert delta("workqueue_work_duration_seconds_count") == 1
    assert REGISTRY.get_sample_value("workqueue_depth", {"name": name}) == 1
    assert (
        REGISTRY.get_sample_value("workqueue_longest_running_processor_seconds", {"name": name})
        == 0
    )


def test_invalid_rate_limiter_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        ItemExponentialFailureRateLimiter(base=0)
    with pytest.raises(ValueError):
        BucketRateLimiter(qps=0)
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


async def _until(check: object) -> None:
    """Yield to the loop until ``check()`` holds (bounded; these are loop-internal steps)."""
    assert callable(check)
    for _ in range(1000):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")
