"""The executor permission cache: executor -> dimension -> allowed (true, false or unknown).

Keyed as OCM's ``ExecutorValidatingCaches`` cache is: the executor's
``namespace/name``, then a :class:`Dimension` (the manifest's target and
whether delete is needed). Only the SubjectAccessReview outcome is cached;
the escalation check never is.

Each executor carries an *epoch*, bumped whenever its results are invalidated
(an RBAC change that may concern it). A result computed from reviews that
started before an invalidation is stale and is dropped by :meth:`AccessCache.store`,
so a slow review can never overwrite a refresh that already saw the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workagent.executor.subject import ManifestTarget


@dataclass(frozen=True)
class Dimension:
    """One cached question: may the executor apply (and, when owned, delete) ``target``?"""

    target: ManifestTarget
    owned_by_work: bool  # OCM's ApplyAndDelete (True) or ApplyNoDelete


@dataclass
class _Entry:
    allowed: bool | None  # None: unknown (never evaluated, or invalidated)
    last_used: float


@dataclass
class _Executor:
    epoch: int = 0
    entries: dict[Dimension, _Entry] = field(default_factory=dict)


class AccessCache:
    """Cached SubjectAccessReview outcomes per executor and dimension (not thread-safe;
    one event loop)."""

    def __init__(self) -> None:
        self._executors: dict[str, _Executor] = {}
        # Epochs come from one counter, so an executor pruned and registered
        # again never reuses an epoch an in-flight review may still hold.
        self._generation = 0

    def lookup(self, executor: str, dimension: Dimension, now: float) -> tuple[bool | None, int]:
        """The cached outcome (None: unknown) and the executor's epoch; marks it used.

        An unknown dimension is registered, so RBAC changes that concern the
        executor from now on invalidate it even before its first result lands.
        """
        state = self._executors.get(executor)
        if state is None:
            state = self._executors[executor] = _Executor(epoch=self._generation)
        entry = state.entries.get(dimension)
        if entry is None:
            entry = state.entries[dimension] = _Entry(None, now)
        else:
            entry.last_used = now
        return entry.allowed, state.epoch

    def store(self, executor: str, dimension: Dimension, allowed: bool, epoch: int) -> bool:
        """Record an outcome computed at ``epoch``; False (dropped) if stale or evicted."""
        state = self._executors.get(executor)
        if state is None or state.epoch != epoch:
            return False
        entry = state.entries.get(dimension)
        if entry is None:
            return False
        entry.allowed = allowed
        return True

    def get(self, executor: str, dimension: Dimension) -> bool | None:
        """The cached outcome without marking it used (None: unknown or absent)."""
        state = self._executors.get(executor)
        entry = state.entries.get(dimension) if state is not None else None
        return entry.allowed if entry is not None else None

    def invalidate(self, executor: str) -> bool:
        """Forget the executor's outcomes (keeping its dimensions); False if it has none."""
        state = self._executors.get(executor)
        if state is None:
            return False
        self._generation += 1
        state.epoch = self._generation
        for entry in state.entries.values():
            entry.allowed = None
        return bool(state.entries)

    def epoch(self, executor: str) -> int:
        """The executor's current epoch (the newest epoch for an unknown executor)."""
        state = self._executors.get(executor)
        return state.epoch if state is not None else self._generation

    def dimensions(self, executor: str) -> list[Dimension]:
        """The dimensions cached for the executor."""
        state = self._executors.get(executor)
        return list(state.entries) if state is not None else []

    def executors(self) -> list[str]:
        """Every executor with cached dimensions."""
        return [key for key, state in self._executors.items() if state.entries]

    def prune(self, unused_since: float) -> int:
        """Drop dimensions not used since ``unused_since`` (and emptied executors); the count."""
        dropped = 0
        for key in list(self._executors):
            state = self._executors[key]
            stale = [d for d, e in state.entries.items() if e.last_used < unused_since]
            for dimension in stale:
                del state.entries[dimension]
            dropped += len(stale)
            if not state.entries:
                del self._executors[key]
        return dropped

    def __len__(self) -> int:
        return sum(len(state.entries) for state in self._executors.values())
