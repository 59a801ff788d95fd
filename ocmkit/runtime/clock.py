"""Time sources for the runtime.

Everything in the runtime that waits or measures time goes through a
:class:`Clock`, so queue delays, backoff and rate limits can be tested without
real sleeping (``tests/support/clock.py`` has the fake one).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """A monotonic time source that can also sleep."""

    def now(self) -> float:
        """Seconds on a monotonic scale (only differences are meaningful)."""
        ...

    async def sleep_until(self, deadline: float) -> None:
        """Suspend the calling task until :meth:`now` reaches ``deadline``.

        Unlike a sleep of ``deadline - now()`` computed by the caller, this cannot
        oversleep when the task starts running after the clock has moved.
        """
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``.

    ``time.monotonic`` is what asyncio's event loop uses, so deadlines computed
    here agree with ``loop.time()``.
    """

    def now(self) -> float:
        """Current monotonic time in seconds."""
        return time.monotonic()

    async def sleep_until(self, deadline: float) -> None:
        """Sleep for real until ``deadline``."""
        await asyncio.sleep(max(deadline - time.monotonic(), 0.0))
