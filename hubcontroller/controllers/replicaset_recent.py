"""Objects the controller wrote, remembered until its informers show them.

A reconcile often runs before the watch event of the controller's previous
write has reached the cache (the write itself, or an event it caused,
re-queues the key). Deciding from the stale cached object would repeat the
write with a stale resourceVersion (a 409 and a retry) or, for works created
with a generated name, create a second work for the same cluster. This is
client-go's "expectations" idea, kept minimal: the object the API server
returned for our write is used instead of the cached one while the cache
still holds the resourceVersion our write replaced.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hubcontroller.controllers.replicaset_works import meta

Obj = Mapping[str, Any]

#: How long a created object is remembered if the informer never shows it (it
#: was deleted again, or the watch lags badly); long enough for any sane lag.
PENDING_TTL_SECONDS = 120.0


@dataclass
class _Written:
    obj: Obj | None  # None: we deleted it and the server answered "gone"
    previous_rv: str | None  # None: we created it
    at: float


class RecentWrites:
    """Recent writes by group (a replica set key or owner) and object uid."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, ttl: float = PENDING_TTL_SECONDS
    ) -> None:
        self._clock = clock
        self._ttl = ttl
        self._groups: dict[str, dict[str, _Written]] = {}

    def remember(self, group: str, obj: Obj, previous_rv: str | None) -> None:
        """Record the server's answer to a write; ``previous_rv`` None for a create."""
        uid = str(meta(obj).get("uid", ""))
        if uid:
            self._groups.setdefault(group, {})[uid] = _Written(obj, previous_rv, self._clock())

    def remember_deleted(self, group: str, uid: str) -> None:
        """Record that we deleted an object and the server no longer has it."""
        if uid:
            self._groups.setdefault(group, {})[uid] = _Written(None, None, self._clock())

    def forget(self, group: str) -> None:
        """Forget a whole group."""
        self._groups.pop(group, None)

    def latest(self, group: str, cached: Obj) -> Obj:
        """``cached``, or our newer write of it while the cache has not caught up."""
        found = self.overlay(group, [cached], include_unseen=False)
        return found[0] if found else cached

    def overlay(
        self, group: str, cached: Iterable[Obj], *, include_unseen: bool = True
    ) -> list[Obj]:
        """The cached objects with our newer writes laid over (and, by default,
        objects we created that the cache does not show yet).

        A remembered write is dropped once the cache holds a different
        resourceVersion of that object (the informer caught up, or someone
        wrote after us), or after the TTL.
        """
        entries = self._groups.get(group)
        if not entries:
            return list(cached)
        now = self._clock()
        out: list[Obj] = []
        seen: set[str] = set()
        for obj in cached:
            uid = str(meta(obj).get("uid", ""))
            seen.add(uid)
            entry = entries.get(uid)
            if entry is not None and now - entry.at <= self._ttl:
                if entry.obj is None:
                    continue  # deleted by us; the cache has not seen the delete yet
                if entry.previous_rv == meta(obj).get("resourceVersion"):
                    out.append(entry.obj)  # the cache still shows the object before our write
                    continue
            entries.pop(uid, None)
            out.append(obj)
        for uid, entry in list(entries.items()):
            if uid in seen:
                continue
            if entry.obj is None or now - entry.at > self._ttl:
                del entries[uid]  # a deletion the cache has caught up with, or too old
            elif include_unseen and entry.previous_rv is None:
                out.append(entry.obj)  # created by us, not in the cache yet
        if not entries:
            self._groups.pop(group, None)
        return out
