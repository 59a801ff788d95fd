"""Jittered exponential backoff for reconnect loops (informers, leader election)."""

from __future__ import annotations

import random


class Backoff:
    """Delays that double from ``initial`` up to ``maximum``, each jittered.

    A delay is ``base * (1 + jitter * U[0,1))``, as client-go's
    ``wait.Jitter``: many clients reconnecting after the same outage spread
    out instead of arriving together.
    """

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        *,
        factor: float = 2.0,
        jitter: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or maximum < initial or factor < 1 or jitter < 0:
            raise ValueError(
                f"invalid backoff: initial={initial} maximum={maximum} "
                f"factor={factor} jitter={jitter}"
            )
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or random.Random()
        self._base = initial

    def next(self) -> float:
        """The next delay in seconds; the one after will be longer (up to the cap)."""
        base = self._base
        self._base = min(self._base * self.factor, self.maximum)
        return base * (1.0 + self.jitter * self._rng.random())

    def reset(self) -> None:
        """Start again from ``initial`` (after a success)."""
        self._base = self.initial
