"""Jittered exponential backoff for reconnect loops (informers, CloudEvents sources)."""

from __future__ import annotations

import random


class Backoff:
    """Delays that grow ``factor``-fold from ``initial`` up to ``maximum``, each jittered.

    A delay is ``base * (1 + U[0,1))``, as client-go's ``wait.Jitter`` with
    factor 1: many clients reconnecting after the same outage spread out
    instead of arriving together.
    """

    def __init__(self, initial: float, maximum: float, *, factor: float = 2.0) -> None:
        if initial <= 0 or maximum < initial or factor < 1:
            raise ValueError(
                f"invalid backoff: initial={initial} maximum={maximum} factor={factor}"
            )
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self._base = initial

    def next(self) -> float:
        """The next delay in seconds; the one after will be longer (up to the cap)."""
        base = self._base
        self._base = min(self._base * self.factor, self.maximum)
        return base * (1.0 + random.random())

    def reset(self) -> None:
        """Start again from ``initial`` (after a success)."""
        self._base = self.initial
