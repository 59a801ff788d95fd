"""The agent's local ManifestWork store for CloudEvents sources (docs/cloudevents.md).

With a CloudEvents driver there is no hub API server: this store stands in for
it, serving ``list``/``watch``/``get``/``patch`` of ``manifestworks`` in the
cluster namespace with the same signatures and errors as
:class:`~ocmkit.kube.KubeClient`, so the works informer and every controller
run unchanged on top of it. ``resourceVersion`` is a local counter.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from ocmkit.kube import (
    ADDED,
    DELETED,
    MANIFESTWORKS,
    MODIFIED,
    BadRequest,
    Conflict,
    Gone,
    NotFound,
    Resource,
    WatchEvent,
)
from ocmkit.kube.mergepatch import apply_merge_patch

Object = dict[str, Any]
#: Publishes a work's new status; raises (e.g. Unreachable) when it cannot.
StatusPublisher = Callable[[Object], Awaitable[None]]

#: How many changes a watch can resume from.
HISTORY = 2048


def _meta(obj: Object) -> dict[str, Any]:
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


def _not_found(name: str) -> NotFound:
    return NotFound(
        404,
        "NotFound",
        f'manifestworks.work.open-cluster-management.io "{name}" not found',
    )


class LocalWorkStore:
    """The in-memory ManifestWorks of one cluster namespace, served like an API."""

    def __init__(
        self, namespace: str, publish_status: StatusPublisher, *, history: int = HISTORY
    ) -> None:
        self.name = "cloudevents"  # labels logs like a client's name
        self.namespace = namespace
        self._publish_status = publish_status
        self._objects: dict[str, Object] = {}
        self._rv = 0
        self._history: deque[tuple[int, WatchEvent]] = deque(maxlen=history)
        self._watchers: set[asyncio.Queue[WatchEvent | None]] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._finalized_listeners: list[Callable[[], None]] = []
        self._closed = False
        self._primed = False
        self._primed_listeners: list[Callable[[], None]] = []

    # -- what the source does ------------------------------------------------------
    def on_finalized(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` when a deleting work loses its last finalizer."""
        self._finalized_listeners.append(listener)

    def prime(self) -> None:
        """The source's first resync has been answered: the cache is the hub's view.

        Until then a work missing from the cache may only not have arrived yet,
        so the eviction controller, which acts on missing works, holds off (the
        others act on the works they have, as OCM's).
        """
        if self._primed:
            return
        self._primed = True
        for listener in self._primed_listeners:
            listener()

    @property
    def primed(self) -> bool:
        """Whether :meth:`prime` was called."""
        return self._primed

    def on_primed(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` when the store is primed."""
        self._primed_listeners.append(listener)

    def works(self) -> list[Object]:
        """Copies of every cached work."""
        return [copy.deepcopy(obj) for obj in self._objects.values()]

    def generations(self) -> dict[str, int]:
        """UID -> generation of every cached work (what a spec resync request lists)."""
        return {
            str(_meta(o).get("uid")): int(_meta(o).get("generation") or 0)
            for o in self._objects.values()
        }

    def finalized(self) -> list[Object]:
        """Deleting works without finalizers: cleaned up, to be confirmed to the source."""
        return [
            copy.deepcopy(o)
            for o in self._objects.values()
            if _meta(o).get("deletionTimestamp") and not _meta(o).get("finalizers")
        ]

    def apply_spec(self, work: Object) -> str:
        """Merge a work decoded from a spec event; returns what happened (for logs).

        By UID: unknown -> added; known under another name -> replaced; a
        deletion -> the cached work of that UID (whatever the name) takes its
        deletionTimestamp and generation;
        an older generation -> ignored; else spec and metadata replaced, the
        cached finalizers and status kept.
        """
        meta = _meta(work)
        name = str(meta["name"])
        keys = self._keys_of(str(meta.get("uid")))
        if meta.get("deletionTimestamp") and keys:
            # A deletion names the work by UID alone when the source no longer has
            # it (resync answers carry no metadata): it is the cached work of that UID.
            name = keys[0]
        for key in keys:
            if key != name:
                self._remove(key)
        cached = self._objects.get(name) if name in keys else None
        if cached is None:
            self._store(name, copy.deepcopy(work), ADDED)
            return "added"
        old_meta = _meta(cached)
        generation = int(meta.get("generation") or 0)
        if meta.get("deletionTimestamp"):
            already = old_meta.get("deletionTimestamp")
            if already and generation in (0, old_meta.get("generation")):
                return "unchanged"  # the source repeats it (later hub updates, resyncs)
            updated = copy.deepcopy(cached)
            _meta(updated)["deletionTimestamp"] = already or meta["deletionTimestamp"]
            if generation:
                _meta(updated)["generation"] = generation
            self._store(name, updated, MODIFIED)
            return "deleting"
        if generation and generation < int(old_meta.get("generation") or 0):
            return "stale"
        updated = copy.deepcopy(work)
        new_meta = _meta(updated)
        new_meta["finalizers"] = list(old_meta.get("finalizers") or [])
        if not new_meta["finalizers"]:
            del new_meta["finalizers"]
        if old_meta.get("deletionTimestamp"):
            new_meta["deletionTimestamp"] = old_meta["deletionTimestamp"]
        if "status" in cached:
            updated["status"] = copy.deepcopy(cached["status"])
        new_meta["resourceVersion"] = old_meta.get("resourceVersion")  # the store's own
        if updated == cached:
            return "unchanged"
        self._store(name, updated, MODIFIED)
        return "updated"

    def remove_uid(self, uid: str) -> None:
        """Drop the work with this UID (after its deletion was confirmed)."""
        for key in self._keys_of(uid):
            self._remove(key)

    # -- the API the informer and the controllers use ------------------------------
    async def close(self) -> None:
        """End every open watch."""
        self._closed = True
        for queue in list(self._watchers):
            queue.put_nowait(None)

    # KubeClient's options come as ``**options``: its signatures say what they are,
    # and callers of WorkClient (KubeClient | LocalWorkStore) are checked against
    # them. What this store cannot honour (selectors, other patch types, dry runs)
    # is refused.

    async def list(
        self, res: Resource, namespace: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """Every cached work (selectors are not supported: the agent uses none)."""
        self._check(res, namespace, **options)
        return {
            "apiVersion": res.api_version,
            "kind": f"{res.kind}List",
            "metadata": {"resourceVersion": str(self._rv)},
            "items": self.works(),
        }

    def watch(
        self, res: Resource, namespace: str | None = None, **options: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        """Changes after ``resource_version`` until ``timeout_seconds`` (300) pass."""
        self._check(res, namespace, **options)
        return self._watch(options["resource_version"], options.get("timeout_seconds", 300))

    async def get(
        self, res: Resource, name: str, namespace: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """One cached work (a copy)."""
        self._check(res, namespace, **options)
        obj = self._objects.get(name)
        if obj is None:
            raise _not_found(name)
        return copy.deepcopy(obj)

    async def patch(
        self, res: Resource, name: str, body: Any, namespace: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """A JSON merge patch with uid/resourceVersion preconditions.

        Without subresource, metadata and spec change in the store only. On
        ``status`` the patched work is published first and stored only if
        that succeeded; an unchanged status is neither published nor stored.
        """
        self._check(res, namespace)
        subresource = options.get("subresource")
        merge = options.get("patch_type", "merge") == "merge" and not options.get("dry_run")
        if not merge or not isinstance(body, dict):
            raise BadRequest(400, "BadRequest", "only JSON merge patches are supported here")
        if subresource not in (None, "status"):
            raise NotFound(404, "NotFound", f"subresource {subresource!r} not found")
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            current = self._objects.get(name)
            if current is None:
                raise _not_found(name)
            self._preconditions(name, current, body.get("metadata") or {})
            if subresource == "status":
                return await self._patch_status(name, current, body.get("status"))
            return self._patch_object(name, current, body)

    # -- internals -------------------------------------------------------------------
    def _keys_of(self, uid: str) -> tuple[str, ...]:
        return tuple(key for key, obj in self._objects.items() if _meta(obj).get("uid") == uid)

    def _check(self, res: Resource, namespace: str | None, **options: Any) -> None:
        if res != MANIFESTWORKS:
            raise NotFound(404, "NotFound", f"{res} is not served by a CloudEvents source")
        if namespace not in (None, self.namespace):
            raise NotFound(404, "NotFound", f"namespace {namespace!r} is not served here")
        if options.get("label_selector") or options.get("field_selector"):
            raise BadRequest(400, "BadRequest", "selectors are not supported by the local store")

    @staticmethod
    def _preconditions(name: str, current: Object, wanted: dict[str, Any]) -> None:
        meta = _meta(current)
        uid = wanted.get("uid")
        if uid and uid != meta.get("uid"):
            raise Conflict(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {meta.get('uid')}",
            )
        rv = wanted.get("resourceVersion")
        if rv and rv != meta.get("resourceVersion"):
            raise Conflict(
                409,
                "Conflict",
                "Operation cannot be fulfilled on "
                f'manifestworks.work.open-cluster-management.io "{name}": the object has been '
                "modified; please apply your changes to the latest version "
                "and try again",
            )

    def _patch_object(self, name: str, current: Object, body: dict[str, Any]) -> Object:
        # Only metadata and spec; uid and resourceVersion were preconditions, not changes.
        patch = {k: v for k, v in body.items() if k == "spec"}
        preconditions = ("uid", "resourceVersion")
        metadata = body.get("metadata") or {}
        patch["metadata"] = {k: v for k, v in metadata.items() if k not in preconditions}
        updated = apply_merge_patch(current, patch)
        if updated == current:
            return copy.deepcopy(current)
        self._store(name, updated, MODIFIED)
        meta = _meta(updated)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            for listener in self._finalized_listeners:
                listener()
        return copy.deepcopy(self._objects[name])

    async def _patch_status(self, name: str, current: Object, status_patch: Any) -> Object:
        old_status = current.get("status") or {}
        new_status = apply_merge_patch(old_status, status_patch or {})
        if new_status == old_status:
            return copy.deepcopy(current)
        updated = copy.deepcopy(current)
        updated["status"] = new_status
        before = _meta(current).get("resourceVersion")
        await self._publish_status(copy.deepcopy(updated))
        latest = self._objects.get(name)
        if latest is None:
            raise _not_found(name)
        if _meta(latest).get("resourceVersion") != before:
            # A spec event changed the work while the status was on its way.
            self._preconditions(name, latest, {"resourceVersion": before})
        self._store(name, updated, MODIFIED)
        return copy.deepcopy(self._objects[name])

    def _store(self, name: str, obj: Object, kind: str) -> None:
        self._objects[name] = obj
        self._emit(kind, obj)

    def _remove(self, name: str) -> None:
        obj = self._objects.pop(name, None)
        self._locks.pop(name, None)
        if obj is not None:
            self._emit(DELETED, obj)  # popped: no one else holds it

    def _emit(self, kind: str, obj: Object) -> None:
        """Give ``obj`` the next resourceVersion and tell the watches."""
        self._rv += 1
        _meta(obj)["resourceVersion"] = str(self._rv)
        event = WatchEvent(kind, copy.deepcopy(obj))
        self._history.append((self._rv, event))
        for queue in self._watchers:
            queue.put_nowait(event)

    @contextlib.asynccontextmanager
    async def _watch(
        self, resource_version: str, timeout: int
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        try:
            since = int(resource_version or 0)
        except ValueError:
            raise BadRequest(
                400, "BadRequest", f"invalid resourceVersion {resource_version!r}"
            ) from None
        oldest = self._history[0][0] if self._history else self._rv + 1
        if since < oldest - 1 and since < self._rv:
            raise Gone(410, "Expired", f"too old resource version: {since} ({oldest - 1})")
        queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        for rv, event in self._history:
            if rv > since:
                queue.put_nowait(event)
        if self._closed:
            queue.put_nowait(None)
        self._watchers.add(queue)
        try:
            yield self._events(queue, timeout)
        finally:
            self._watchers.discard(queue)

    @staticmethod
    async def _events(
        queue: asyncio.Queue[WatchEvent | None], timeout: int
    ) -> AsyncIterator[WatchEvent]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 1)
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return  # the watch ends cleanly, as a server-side timeout does
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that
            # arrives with an event, and the informer's stop would then hang.
            try:
                async with asyncio.timeout(remaining):
                    event = await queue.get()
            except TimeoutError:
                return
            if event is None:
                return
            yield event
