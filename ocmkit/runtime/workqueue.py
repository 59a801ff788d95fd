"""A rate-limited, delaying work queue with client-go's semantics, for asyncio.

The guarantees controllers rely on: a key is queued at most once, and a key
handed out by :meth:`WorkQueue.get` is not handed out again until
:meth:`WorkQueue.done` (added meanwhile, it is queued again then). Ready keys
come out in FIFO order.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque

from ocmkit.runtime import metrics
from ocmkit.runtime.clock import Clock, MonotonicClock
from ocmkit.runtime.ratelimit import RateLimiter, default_controller_rate_limiter


class ShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shutting down."""


class QueueEmpty(Exception):
    """Raised by :meth:`WorkQueue.get_nowait` when no key is ready."""


class WorkQueue:
    """A de-duplicating, per-key exclusive, delaying and rate-limited queue of string keys.

    ``clock`` is injectable so tests can drive delays with a fake clock.
    ``name`` labels the ``workqueue_*`` metrics.
    """

    def __init__(
        self,
        name: str,
        rate_limiter: RateLimiter | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock or MonotonicClock()
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(
            self._clock
        )
        self._queue: deque[str] = deque()
        # Keys that need processing: queued, or added again while being processed.
        self._dirty: set[str] = set()
        # Keys handed out and not yet done, with the time they were handed out.
        self._processing: dict[str, float] = {}
        self._added_at: dict[str, float] = {}
        # Delayed keys: ready time per key, plus a heap with lazy deletion of
        # superseded entries (a key moved earlier leaves its old entry behind).
        self._waiting: dict[str, float] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drained: list[asyncio.Future[None]] = []
        self._pump_task: asyncio.Task[None] | None = None
        self._pump_wakeup: asyncio.Future[None] | None = None
        self._shutting_down = False

        self._m_depth = metrics.WORKQUEUE_DEPTH.labels(name=name)
        self._m_adds = metrics.WORKQUEUE_ADDS.labels(name=name)
        self._m_retries = metrics.WORKQUEUE_RETRIES.labels(name=name)
        self._m_queue_duration = metrics.WORKQUEUE_QUEUE_DURATION.labels(name=name)
        self._m_work_duration = metrics.WORKQUEUE_WORK_DURATION.labels(name=name)
        # Computed at scrape time, so they are exact without a ticking goroutine
        # as client-go needs.
        metrics.WORKQUEUE_UNFINISHED_WORK.labels(name=name).set_function(self.unfinished_work)
        metrics.WORKQUEUE_LONGEST_RUNNING.labels(name=name).set_function(self.longest_running)
        self._m_depth.set(0)

    # -- adding -------------------------------------------------------------------------
    def add(self, key: str) -> None:
        """Queue ``key`` unless it is already queued; ignored after shutdown."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock.now())
        self._m_adds.inc()
        self._m_depth.set(len(self._dirty))
        if key in self._processing:
            # Re-queued by done(); a second worker must not get it meanwhile.
            return
        self._queue.append(key)
        self._wake_one_getter()

    def add_after(self, key: str, seconds: float) -> None:
        """Queue ``key`` once ``seconds`` have passed; an earlier pending time wins."""
        if self._shutting_down:
            return
        # client-go counts every delayed add as a retry; kept for metric parity.
        self._m_retries.inc()
        if seconds <= 0:
            self.add(key)
            return
        ready = self._clock.now() + seconds
        current = self._waiting.get(key)
        if current is not None and current <= ready:
            return
        self._waiting[key] = ready
        heapq.heappush(self._heap, (ready, next(self._seq), key))
        # Wake the pump: it may be sleeping until a later ready time.
        if self._pump_wakeup is not None and not self._pump_wakeup.done():
            self._pump_wakeup.set_result(None)
        self._ensure_pump()

    def add_rate_limited(self, key: str, *, at_least: float = 0.0) -> float:
        """Queue ``key`` after the rate limiter's delay; returns that delay in seconds.

        ``at_least`` raises the delay, e.g. to honour a server's Retry-After.
        """
        if self._shutting_down:
            return 0.0
        delay = max(self.rate_limiter.when(key), at_least)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """Reset the backoff of ``key`` (call after it was processed successfully)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        """How many rate-limited re-adds ``key`` had since it was last forgotten."""
        return self.rate_limiter.num_requeues(key)

    # -- taking ---------------------------------------------------------------------------
    def get_nowait(self) -> str:
        """The next ready key, marked as being processed; raises QueueEmpty or ShutDown."""
        if self._shutting_down:
            raise ShutDown(self.name)
        self._promote_due()
        if not self._queue:
            raise QueueEmpty(self.name)
        key = self._queue.popleft()
        now = self._clock.now()
        self._processing[key] = now
        self._dirty.discard(key)
        self._m_depth.set(len(self._dirty))
        added = self._added_at.pop(key, None)
        if added is not None:
            self._m_queue_duration.observe(max(now - added, 0.0))
        return key

    async def get(self) -> str:
        """Wait for the next ready key; raises ShutDown once the queue shuts down.

        Every key returned must be passed to :meth:`done` when processing ends.
        """
        while True:
            try:
                return self.get_nowait()
            except QueueEmpty:
                pass
            self._ensure_pump()
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                # If we had been chosen to take a key, hand that chance on.
                if fut.done() and not fut.cancelled():
                    self._wake_one_getter()
                raise
            finally:
                if fut in self._getters:
                    self._getters.remove(fut)

    def done(self, key: str) -> None:
        """Mark ``key`` as processed; queue it again if it was added meanwhile."""
        started = self._processing.pop(key, None)
        if started is None:
            return
        self._m_work_duration.observe(max(self._clock.now() - started, 0.0))
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._wake_one_getter()
        if not self._processing:
            for fut in self._drained:
                if not fut.done():
                    fut.set_result(None)
            self._drained.clear()

    # -- state ------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Number of keys ready to be handed out (not delayed, not being processed)."""
        self._promote_due()
        return len(self._queue)

    def processing(self) -> frozenset[str]:
        """Keys handed out and not yet done."""
        return frozenset(self._processing)

    def waiting(self) -> dict[str, float]:
        """Delayed keys and the seconds until each is ready."""
        now = self._clock.now()
        return {key: max(ready - now, 0.0) for key, ready in self._waiting.items()}

    def unfinished_work(self) -> float:
        """Total seconds that keys currently being processed have been running."""
        now = self._clock.now()
        return sum(max(now - t, 0.0) for t in self._processing.values())

    def longest_running(self) -> float:
        """Seconds the longest-running key being processed has been running."""
        if not self._processing:
            return 0.0
        return max(self._clock.now() - min(self._processing.values()), 0.0)

    # -- shutdown -----------------------------------------------------------------------------
    async def shutdown(self, drain: bool = True) -> None:
        """Stop handing out keys; with ``drain``, wait until processed keys are done.

        Keys that are queued or delayed are dropped: controllers are level-based
        and will see those objects again from their informers' initial list.
        Waiting getters (and later ones) get :class:`ShutDown`.
        """
        if not self._shutting_down:
            self._shutting_down = True
            self._queue.clear()
            self._dirty.clear()
            self._added_at.clear()
            self._waiting.clear()
            self._heap.clear()
            self._m_depth.set(0)
            for fut in self._getters:
                if not fut.done():
                    fut.set_result(None)
            if self._pump_task is not None:
                self._pump_task.cancel()
                self._pump_task = None
        if drain and self._processing:
            drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drained.append(drained)
            await drained

    # -- internals ------------------------------------------------------------------------------
    def _wake_one_getter(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def _promote_due(self) -> None:
        """Move delayed keys whose time has come into the queue."""
        if not self._heap:
            return
        now = self._clock.now()
        while self._heap and self._heap[0][0] <= now:
            ready, _, key = heapq.heappop(self._heap)
            if self._waiting.get(key) != ready:
                continue  # superseded by an earlier add_after
            del self._waiting[key]
            self.add(key)

    def _ensure_pump(self) -> None:
        """Start the task that promotes delayed keys, if there are any and a loop runs."""
        if not self._heap or self._shutting_down:
            return
        if self._pump_task is not None and not self._pump_task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop yet: get() starts the pump later
        self._pump_task = loop.create_task(self._pump(), name=f"workqueue-{self.name}-delays")

    async def _pump(self) -> None:
        """Sleep until the earliest delayed key is due, promote it, repeat while any wait."""
        loop = asyncio.get_running_loop()
        while self._heap and not self._shutting_down:
            self._promote_due()
            if not self._heap:
                break
            self._pump_wakeup = loop.create_future()
            # An absolute deadline: the sleeper task may start after the clock moved.
            sleeper = loop.create_task(self._clock.sleep_until(self._heap[0][0]))
            try:
                await asyncio.wait(
                    {sleeper, self._pump_wakeup}, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                sleeper.cancel()
                self._pump_wakeup = None
