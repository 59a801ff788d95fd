"""A clock for tests of the runtime's delays: time moves only when the test says so."""

from __future__ import annotations

import asyncio
import heapq
import itertools


class FakeClock:
    """A clock that moves only when told to (for tests).

    ``sleep_until`` parks the caller until :meth:`advance` moves time past its
    deadline; a deadline already passed just yields to the event loop.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._seq = itertools.count()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    def now(self) -> float:
        """The current fake time."""
        return self._now

    async def sleep_until(self, deadline: float) -> None:
        """Wait until fake time reaches ``deadline``."""
        if deadline <= self._now:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (deadline, next(self._seq), fut))
        await fut

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has passed."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)

    def sleepers(self) -> int:
        """How many tasks are currently sleeping on this clock."""
        return sum(1 for _, _, fut in self._sleepers if not fut.done())
