"""Rate limiters deciding how long a failed key waits before it is retried.

They mirror client-go's ``workqueue`` rate limiters, so retry timing is what
operators of Go controllers expect: per-key exponential backoff (5 ms doubling,
capped at 1000 s) combined with an overall token bucket (10/s, burst 100),
taking the larger of the two delays.
"""

from __future__ import annotations

from typing import Protocol

from ocmkit.kube.ratelimit import TokenBucket
from ocmkit.runtime.clock import Clock, MonotonicClock


class RateLimiter(Protocol):
    """Decides the delay before a key is retried, and tracks its failures."""

    def when(self, key: str) -> float:
        """Record one more failure of ``key``; return the seconds to wait before retrying."""
        ...

    def forget(self, key: str) -> None:
        """Reset the failure history of ``key`` (it succeeded or was dropped)."""
        ...

    def num_requeues(self, key: str) -> int:
        """How many failures of ``key`` have been recorded since the last ``forget``."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-key backoff: ``base * 2**failures``, capped at ``max_delay``."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        if base <= 0 or max_delay < base:
            raise ValueError(f"need 0 < base <= max_delay, got base={base} max={max_delay}")
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[str, int] = {}

    def when(self, key: str) -> float:
        """The next delay for ``key``; each call doubles the following one."""
        exp = self._failures.get(key, 0)
        self._failures[key] = exp + 1
        # Past 2**64 the float would overflow long after the cap; stop computing.
        if exp > 64:
            return self.max_delay
        return min(self.base * (2.0**exp), self.max_delay)

    def forget(self, key: str) -> None:
        """Drop the failure count of ``key``."""
        self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        """Failures recorded for ``key``."""
        return self._failures.get(key, 0)


class BucketRateLimiter:
    """An overall token bucket shared by all keys (``qps`` refill, ``burst`` capacity).

    Like Go's ``rate.Limiter.Reserve``, every call takes a token even when none
    is left; the bucket then goes negative and the delay is the time until the
    debt is repaid, so bursts of retries are spread out at ``qps``.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"need qps > 0 and burst >= 1, got qps={qps} burst={burst}")
        self._bucket = TokenBucket(qps, burst, clock=(clock or MonotonicClock()).now)

    def when(self, key: str) -> float:
        """Reserve a token; the delay until it is available (0 while the burst lasts)."""
        return self._bucket.reserve()

    def forget(self, key: str) -> None:
        """The bucket keeps no per-key state."""

    def num_requeues(self, key: str) -> int:
        """The bucket keeps no per-key state."""
        return 0


class MaxOfRateLimiter:
    """Combines limiters: the delay is the largest any of them asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, key: str) -> float:
        """Ask every limiter (each records the failure), return the longest delay."""
        return max(limiter.when(key) for limiter in self.limiters)

    def forget(self, key: str) -> None:
        """Forget ``key`` in every limiter."""
        for limiter in self.limiters:
            limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        """The largest failure count any limiter holds for ``key``."""
        return max(limiter.num_requeues(key) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> RateLimiter:
    """client-go's ``DefaultControllerRateLimiter``.

    The larger of a per-key 5 ms..1000 s exponential backoff and a 10/s, burst
    100 token bucket.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock),
    )
