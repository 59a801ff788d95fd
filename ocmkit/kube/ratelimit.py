"""A fair token bucket limiting a client's request rate (client-go's QPS/burst)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved up; ``qps <= 0`` means unlimited.

    Waiters are served in arrival order: each ``acquire`` reserves the next
    token at once (the balance may go negative) and sleeps until that token
    is due, like Go's ``rate.Limiter.Wait``. Later callers therefore always
    get later slots, and no caller can starve another. A waiter cancelled
    while sleeping hands its token back.

    ``clock`` and ``sleep`` are injectable so tests need no wall time.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.qps = qps
        # client-go refuses qps > 0 with burst 0; one token is the closest usable meaning.
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()

    @property
    def unlimited(self) -> bool:
        """True when the bucket never delays."""
        return self.qps <= 0

    @property
    def tokens(self) -> float:
        """Tokens available now; negative when callers are queued for future tokens."""
        self._refill(self._clock())
        return self._tokens

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._last)
        self._last = max(self._last, now)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)

    def reserve(self) -> float:
        """Take one token now; returns how many seconds the caller must wait for it."""
        if self.unlimited:
            return 0.0
        self._refill(self._clock())
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        """Wait for a token; returns the time waited (seconds, by the bucket's clock)."""
        delay = self.reserve()
        if delay <= 0:
            return 0.0
        try:
            await self._sleep(delay)
        except asyncio.CancelledError:
            self._tokens = min(float(self.burst), self._tokens + 1.0)
            raise
        return delay
