"""Property tests: the work queue against a model, under random operation sequences."""

from __future__ import annotations

import asyncio
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ocmkit.runtime import QueueEmpty, WorkQueue
from tests.support.clock import FakeClock

KEYS = st.sampled_from(["a", "b", "c", "d"])
DELAYS = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.5])


class QueueModel(RuleBasedStateMachine):
    """Drives a WorkQueue and a plain-Python model of client-go's semantics side by side."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.q = WorkQueue("prop", clock=self.clock)
        self.ready: list[str] = []  # FIFO of keys that get() may hand out
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.waiting: dict[str, tuple[float, int]] = {}  # key -> (ready time, order)
        self.seq = 0
        self.handed_out: list[str] = []

    # -- the model --------------------------------------------------------------------
    def _add(self, key: str) -> None:
        if key in self.dirty:
            return
        self.dirty.add(key)
        if key not in self.processing:
            self.ready.append(key)

    def _promote(self) -> None:
        now = self.clock.now()
        due = sorted((t, seq, k) for k, (t, seq) in self.waiting.items() if t <= now)
        for _, _, key in due:
            del self.waiting[key]
            self._add(key)

    # -- operations -------------------------------------------------------------------
    @rule(key=KEYS)
    def add(self, key: str) -> None:
        self.q.add(key)
        self._add(key)

    @rule(key=KEYS, delay=DELAYS)
    def add_after(self, key: str, delay: float) -> None:
        self.q.add_after(key, delay)
        if delay <= 0:
            self._add(key)
            return
        at = self.clock.now() + delay
        current = self.waiting.get(key)
        if current is None or at < current[0]:
            self.waiting[key] = (at, self.seq)
            self.seq += 1

    @rule(seconds=st.sampled_from([0.25, 0.5, 1.0, 3.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule()
    def get(self) -> None:
        self._promote()
        try:
            key = self.q.get_nowait()
        except QueueEmpty:
            assert not self.ready, f"queue empty but the model has {self.ready}"
            return
        assert self.ready, f"queue handed out {key!r} but the model has nothing ready"
        expected = self.ready.pop(0)
        assert key == expected, f"FIFO order: got {key!r}, expected {expected!r}"
        assert key not in self.processing, f"{key!r} handed out twice"
        self.processing.add(key)
        self.dirty.discard(key)
        self.handed_out.append(key)

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.processing)))
        self.q.done(key)
        self.processing.discard(key)
        if key in self.dirty:
            self.ready.append(key)

    # -- invariants -------------------------------------------------------------------
    @invariant()
    def same_state(self) -> None:
        self._promote()
        assert len(self.q) == len(self.ready)
        assert self.q.processing() == self.processing
        assert set(self.q.waiting()) == set(self.waiting)

    @invariant()
    def ready_keys_are_unique_and_not_in_progress(self) -> None:
        assert len(set(self.ready)) == len(self.ready)
        assert not set(self.ready) & self.processing

    @invariant()
    def waiting_times_never_exceed_what_was_asked(self) -> None:
        now = self.clock.now()
        for key, remaining in self.q.waiting().items():
            assert abs(remaining - max(self.waiting[key][0] - now, 0.0)) < 1e-9


QueueModel.TestCase.settings = settings(
    max_examples=150, stateful_step_count=60, deadline=None, database=None
)
TestQueueModel = QueueModel.TestCase


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    ops=st.lists(st.tuples(st.sampled_from(["add", "after"]), KEYS), min_size=1, max_size=40),
    workers=st.integers(min_value=1, max_value=6),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_concurrent_workers_never_share_a_key_and_lose_no_add(
    ops: list[tuple[str, str]], workers: int, seed: int
) -> None:
    """Several async workers: a key is never processed twice at once, and every add
    is followed by a processing that started after it (no lost updates)."""
    asyncio.run(_exercise(ops, workers, seed))


async def _exercise(ops: list[tuple[str, str]], workers: int, seed: int) -> None:
    rng = random.Random(seed)
    q = WorkQueue("prop-concurrent", clock=FakeClock())
    in_progress: set[str] = set()
    tick = 0
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}

    async def worker() -> None:
        nonlocal tick
        while True:
            try:
                key = await q.get()
            except Exception:
                return
            assert key not in in_progress, f"{key} processed by two workers at once"
            in_progress.add(key)
            tick += 1
            last_start[key] = tick
            for _ in range(rng.randint(0, 3)):
                await asyncio.sleep(0)
            in_progress.discard(key)
            q.done(key)

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for op, key in ops:
        tick += 1
        last_add[key] = tick
        if op == "add":
            q.add(key)
        else:
            q.add_after(key, 0)
        for _ in range(rng.randint(0, 2)):
            await asyncio.sleep(0)
    # Let the workers finish everything that is queued.
    for _ in range(10_000):
        if len(q) == 0 and not q.processing():
            break
        await asyncio.sleep(0)
    for key, added in last_add.items():
        assert last_start.get(key, -1) > added, f"add of {key} at {added} was lost"
    await q.shutdown()
    await asyncio.gather(*tasks)
