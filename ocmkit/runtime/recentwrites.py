"""Our own last write of an object, used until the informer shows it.

A reconcile that follows its own write quickly reads the pre-write object from
the cache; deciding from it gives a pointless 409, or (a status that goes back
to what the cache still shows) a write skipped as "unchanged" although the
server holds our newer one. :class:`RecentWrites` bridges that gap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _rv(obj: dict[str, Any] | None) -> str | None:
    return None if obj is None else str((obj.get("metadata") or {}).get("resourceVersion") or "")


class RecentWrites:
    """Our own last write per key, for as long as the informer has not caught up.

    A reconcile that follows our own write quickly (a retry, a new spec) would
    otherwise read the pre-write object from the cache and fail its
    resourceVersion precondition with a pointless 409. The written object is
    used instead only while the cache still shows a version it replaced, so
    no resourceVersion ordering is assumed.

    ``cached`` (when given) returns what the informer holds for a key: an
    entry is then dropped as soon as the informer shows our write, by
    :meth:`settle` from its event handler, or never stored when the event came
    first. Without it an entry lives until the next :meth:`latest` of its key,
    which for a work that is never reconciled again (idle) means for ever: a
    whole object per work.
    """

    def __init__(self, cached: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        # key -> (versions our write superseded, the object the server returned)
        self._writes: dict[str, tuple[frozenset[str | None], dict[str, Any]]] = {}
        self._cached = cached

    def __len__(self) -> int:
        return len(self._writes)

    def latest(self, key: str, cached: dict[str, Any] | None) -> dict[str, Any] | None:
        """``cached``, or our newer write if the cache has not seen it yet."""
        entry = self._writes.get(key)
        if entry is None:
            return cached
        superseded, written = entry
        if _rv(cached) in superseded:
            return written
        del self._writes[key]  # the cache caught up (or someone else wrote)
        return cached

    def remember(self, key: str, based_on: dict[str, Any] | None, written: dict[str, Any]) -> None:
        """Record that ``written`` replaced ``based_on`` (None: it was created)."""
        entry = self._writes.get(key)
        superseded = {_rv(based_on)}
        if entry is not None and entry[1] is based_on:
            superseded |= entry[0]
        if self._cached is not None and _rv(self._cached(key)) not in superseded:
            # The informer already shows our write (or a later one): nothing to bridge.
            self._writes.pop(key, None)
            return
        self._writes[key] = (frozenset(superseded), written)

    def settle(self, key: str) -> None:
        """Drop the entry of ``key`` if the informer caught up (call on its events)."""
        if self._cached is not None and key in self._writes:
            self.latest(key, self._cached(key))

    def forget(self, key: str) -> None:
        """Drop what is remembered for ``key``."""
        self._writes.pop(key, None)
