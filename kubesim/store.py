"""Versioned object storage with an event history for watches.

One global resourceVersion counter, as etcd has: every write gets the next
number, and the kept history lets a watch resume from any recent version.
Stored objects are never mutated in place; writers store new dicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

ResKey = tuple[str, str]
ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped


@dataclass(frozen=True)
class Event:
    """One change: ``type`` is ADDED, MODIFIED or DELETED."""

    rv: int
    key: ResKey
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None


class Expired(Exception):
    """The requested resourceVersion is older than the kept history."""


@dataclass(eq=False)
class Subscription:
    """A live watch's mailbox; ``queue`` gets ``Event`` items or ``None`` to close."""

    key: ResKey
    namespace: str
    queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)
    expire: bool = False


class Store:
    """Objects by resource and (namespace, name), plus the event history."""

    def __init__(self, history: int = 10000) -> None:
        self.rv = 1
        self._objects: dict[ResKey, dict[ObjKey, dict[str, Any]]] = {}
        self._encoded: dict[int, bytes] = {}
        self._history: deque[Event] = deque(maxlen=max(history, 1))
        self._compacted = 1
        self._subs: set[Subscription] = set()
        self.by_uid: dict[str, tuple[ResKey, ObjKey]] = {}
        # owner uid -> dependents, for the garbage collector
        self.dependents: dict[str, set[tuple[ResKey, ObjKey]]] = {}
        self.listeners: list[Callable[[Event], None]] = []
        # Set on every change: readers waiting for a resourceVersion re-check.
        self._changed = asyncio.Event()

    # -- reads ---------------------------------------------------------------
    def get(self, key: ResKey, okey: ObjKey) -> dict[str, Any] | None:
        """The stored object or None."""
        return self._objects.get(key, {}).get(okey)

    def items(self, key: ResKey, namespace: str = "") -> list[dict[str, Any]]:
        """Objects of a resource (one namespace, or all when ``namespace`` is empty), by key."""
        objs = self._objects.get(key, {})
        keys = sorted(k for k in objs if not namespace or k[0] == namespace)
        return [objs[k] for k in keys]

    def iter_all(self) -> Iterator[tuple[ResKey, dict[str, Any]]]:
        """Every stored object with its resource key."""
        for key, objs in list(self._objects.items()):
            for obj in list(objs.values()):
                yield key, obj

    def count(self, key: ResKey) -> int:
        """Number of stored objects of a resource."""
        return len(self._objects.get(key, {}))

    def encoded(self, obj: dict[str, Any]) -> bytes:
        """JSON of a stored object, cached while it is stored (GETs are the hot path)."""
        raw = self._encoded.get(id(obj))
        if raw is None:
            raw = json.dumps(obj, separators=(",", ":")).encode()
            self._encoded[id(obj)] = raw
        return raw

    # -- writes ----------------------------------------------------------------
    def next_rv(self) -> int:
        """Reserve and return the next resourceVersion."""
        self.rv += 1
        return self.rv

    def put(
        self,
        key: ResKey,
        obj: dict[str, Any],
        rv: int,
        event: str,
        *,
        encoded: bytes | None = None,
    ) -> None:
        """Store ``obj`` (its metadata.resourceVersion already set to ``rv``).

        ``encoded`` is its JSON when the writer already made it: reads reuse it.
        """
        meta = obj["metadata"]
        okey = (meta.get("namespace", ""), meta["name"])
        table = self._objects.setdefault(key, {})
        old = table.get(okey)
        if old is not None:
            self._encoded.pop(id(old), None)
            self._index_owners(old, (key, okey), add=False)
        table[okey] = obj
        if encoded is not None:
            self._encoded[id(obj)] = encoded
        self.by_uid[meta["uid"]] = (key, okey)
        self._index_owners(obj, (key, okey), add=True)
        self._emit(Event(rv, key, event, obj, old))

    def remove(self, key: ResKey, okey: ObjKey, final: dict[str, Any], rv: int) -> None:
        """Remove an object; ``final`` is the object as the DELETED event shows it."""
        old = self._objects.get(key, {}).pop(okey, None)
        if old is None:
            return
        self._encoded.pop(id(old), None)
        self.by_uid.pop(old["metadata"]["uid"], None)
        self._index_owners(old, (key, okey), add=False)
        self._emit(Event(rv, key, "DELETED", final, old))

    def _index_owners(self, obj: dict[str, Any], ref: tuple[ResKey, ObjKey], *, add: bool) -> None:
        for owner in obj["metadata"].get("ownerReferences") or []:
            uid = owner.get("uid") if isinstance(owner, dict) else None
            if not uid:
                continue
            if add:
                self.dependents.setdefault(uid, set()).add(ref)
            else:
                deps = self.dependents.get(uid)
                if deps is not None:
                    deps.discard(ref)
                    if not deps:
                        del self.dependents[uid]

    def drop_resource(self, key: ResKey) -> None:
        """Forget a whole resource (its CRD is gone) without per-object events."""
        for okey, obj in self._objects.pop(key, {}).items():
            self._encoded.pop(id(obj), None)
            self.by_uid.pop(obj["metadata"]["uid"], None)
            self._index_owners(obj, (key, okey), add=False)

    def _emit(self, ev: Event) -> None:
        if len(self._history) == self._history.maxlen:
            self._compacted = self._history[0].rv
        self._history.append(ev)
        for sub in list(self._subs):
            if sub.key == ev.key and (
                not sub.namespace or ev.obj["metadata"].get("namespace") == sub.namespace
            ):
                sub.queue.put_nowait(ev)
        for listener in self.listeners:
            listener(ev)
        self._changed.set()

    # -- watches -----------------------------------------------------------------
    def since(self, key: ResKey, namespace: str, rv: int) -> list[Event]:
        """Events of a resource after ``rv``; raises Expired if that is too old."""
        if rv < self._compacted:
            raise Expired
        out = []
        for ev in self._history:
            if ev.rv <= rv or ev.key != key:
                continue
            if namespace and ev.obj["metadata"].get("namespace") != namespace:
                continue
            out.append(ev)
        return out

    async def wait_for_rv(self, rv: int, timeout: float) -> bool:
        """Wait until the store has reached ``rv``; False after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.rv < rv:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):  # not wait_for: see api.watch
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
        return True

    def is_expired(self, rv: int) -> bool:
        """True when events after ``rv`` are no longer all kept."""
        return rv < self._compacted

    def subscribe(self, key: ResKey, namespace: str) -> Subscription:
        """Start receiving live events of a resource."""
        sub = Subscription(key, namespace)
        self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop delivering events to ``sub``."""
        self._subs.discard(sub)

    def close_watches(self, *, expire: bool = False) -> int:
        """End every open watch (with a 410 ERROR event first when ``expire``)."""
        subs = list(self._subs)
        for sub in subs:
            sub.expire = expire
            sub.queue.put_nowait(None)
        self._subs.clear()
        return len(subs)

    def watch_count(self) -> int:
        """Number of open watches."""
        return len(self._subs)

    def compact(self) -> None:
        """Forget the whole history, as an etcd compaction would."""
        self._history.clear()
        self._compacted = self.rv

    # -- persistence (restart with the same state) ------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A JSON-able copy of every object and the current resourceVersion."""
        return {
            "rv": self.rv,
            "objects": [[list(k), obj] for k, obj in self.iter_all()],
        }

    def restore(self, snap: dict[str, Any]) -> None:
        """Load a snapshot (history starts empty: old watches get 410)."""
        self.rv = int(snap["rv"])
        self._compacted = self.rv
        for key, obj in snap["objects"]:
            meta = obj["metadata"]
            rk = (key[0], key[1])
            okey = (meta.get("namespace", ""), meta["name"])
            self._objects.setdefault(rk, {})[okey] = obj
            self.by_uid[meta["uid"]] = (rk, okey)
            self._index_owners(obj, (rk, okey), add=True)
