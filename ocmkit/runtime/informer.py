"""Informers: a local cache of one resource kept current by list + watch.

The loop follows client-go's reflector (list, watch from the list's
resourceVersion, relist on ``410 Gone``, jittered backoff otherwise), with a
watchdog that reopens a watch making no progress; docs/runtime.md has the
details. Handlers run after the cache is updated, each handler set in its own
task, so a slow handler delays only itself.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from ocmkit.kube import (
    BOOKMARK,
    DELETED,
    Gone,
    KubeError,
    Resource,
    TooManyRequests,
    Unauthorized,
    Unreachable,
    WatchEvent,
)
from ocmkit.runtime import metrics
from ocmkit.runtime.backoff import Backoff
from ocmkit.runtime.store import IndexFunc, Object, Store, Transform, object_key

log = structlog.get_logger(__name__)

OnAdd = Callable[[Object], Awaitable[None] | None]
OnUpdate = Callable[[Object, Object], Awaitable[None] | None]
OnDelete = Callable[[Object], Awaitable[None] | None]


@dataclass(frozen=True)
class _Notification:
    kind: str  # "add", "update" or "delete"
    old: Object | None
    new: Object


class _WatchStalled(Exception):
    """The watchdog gave up on a watch that made no progress."""


class _Listener:
    """One handler set, fed through its own queue by its own task."""

    def __init__(
        self,
        informer: str,
        on_add: OnAdd | None,
        on_update: OnUpdate | None,
        on_delete: OnDelete | None,
    ) -> None:
        self.informer = informer
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.pending: deque[_Notification] = deque()
        self._wakeup = asyncio.Event()
        self.idle = asyncio.Event()  # set while nothing is pending
        self.idle.set()
        self.task: asyncio.Task[None] | None = None

    def push(self, note: _Notification) -> None:
        self.pending.append(note)
        self.idle.clear()
        self._wakeup.set()

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._run(), name=f"informer-{self.informer}-handler")

    async def _run(self) -> None:
        while True:
            while self.pending:
                note = self.pending.popleft()
                await self._deliver(note)
            self.idle.set()
            self._wakeup.clear()
            await self._wakeup.wait()

    async def _deliver(self, note: _Notification) -> None:
        try:
            result: Awaitable[None] | None = None
            if note.kind == "add" and self.on_add is not None:
                result = self.on_add(note.new)
            elif note.kind == "update" and self.on_update is not None:
                assert note.old is not None
                result = self.on_update(note.old, note.new)
            elif note.kind == "delete" and self.on_delete is not None:
                result = self.on_delete(note.new)
            if result is not None and inspect.isawaitable(result):
                await result
        except (Exception, asyncio.CancelledError) as err:
            task = asyncio.current_task()
            if isinstance(err, asyncio.CancelledError) and task and task.cancelling() > 0:
                raise
            # A handler bug (a CancelledError it let out too) must not stop later events.
            log.exception(
                "event handler failed",
                informer=self.informer,
                notification=note.kind,
                object_key=object_key(note.new),
            )


class ListWatcher(Protocol):
    """What an informer reads through: a KubeClient, or anything serving the same
    ``list`` and ``watch`` (the agent's CloudEvents store)."""

    name: str

    async def list(
        self, res: Resource, namespace: str | None = None, *, field_selector: str | None = None
    ) -> dict[str, Any]:
        """All objects and the list's resourceVersion."""
        ...

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        """Changes after ``resource_version`` (bookmarks allowed)."""
        ...


class Informer:
    """A cache of one resource (optionally one namespace, filtered by a field selector).

    ``name`` (default: the resource's plural) labels logs, metrics and health
    checks. ``watch_timeout_seconds`` is the server-side watch timeout (each
    watch asks for a random value between it and twice it, as client-go does);
    ``stall_grace_seconds`` is how much longer the watchdog waits before it
    declares a silent watch stuck. ``transform`` (say
    :func:`~ocmkit.runtime.store.strip_managed_fields`) is applied to every
    listed or watched object before it is cached or handed to the handlers.
    ``store`` is the cache (default: a :class:`Store` of the decoded objects).
    """

    def __init__(
        self,
        client: ListWatcher,
        resource: Resource,
        namespace: str | None = None,
        field_selector: str | None = None,
        resync_seconds: float | None = None,
        *,
        name: str | None = None,
        watch_timeout_seconds: float = 300.0,
        stall_grace_seconds: float = 30.0,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        transform: Transform | None = None,
        store: Store | None = None,
    ) -> None:
        if resync_seconds is not None and resync_seconds <= 0:
            raise ValueError(f"resync_seconds must be > 0 or None, got {resync_seconds}")
        if watch_timeout_seconds < 1:
            raise ValueError(f"watch_timeout_seconds must be >= 1, got {watch_timeout_seconds}")
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.field_selector = field_selector
        self.resync_seconds = resync_seconds
        self.name = name or resource.plural
        self.watch_timeout_seconds = watch_timeout_seconds
        self.stall_grace_seconds = stall_grace_seconds
        self.transform = transform
        self.store = store if store is not None else Store()
        self._backoff = Backoff(backoff_initial, backoff_max)
        self._listeners: list[_Listener] = []
        self._resource_version = ""
        self._synced = asyncio.Event()
        self._started = False
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self._last_error: KubeError | None = None
        self._failing_since: float | None = None
        # Watchdog state: what the loop is doing and when it last moved.
        self._phase = "idle"
        self._last_progress = 0.0
        self._stall_limit = 2 * watch_timeout_seconds + stall_grace_seconds
        self._stalled = False
        self._listed_at = float("-inf")
        self._log = log.bind(informer=self.name)

        label = self.name
        self._m_lists = metrics.INFORMER_LISTS.labels(informer=label)
        self._m_relists = metrics.INFORMER_RELISTS.labels(informer=label)
        self._m_reconnects = metrics.INFORMER_WATCH_RECONNECTS.labels(informer=label)
        self._m_stalls = metrics.INFORMER_WATCH_STALLS.labels(informer=label)
        self._m_synced = metrics.INFORMER_SYNCED.labels(informer=label)
        self._m_synced.set(0)
        metrics.INFORMER_OBJECTS.labels(informer=label).set_function(lambda: len(self.store))
        metrics.INFORMER_PENDING_NOTIFICATIONS.labels(informer=label).set_function(
            lambda: sum(len(listener.pending) for listener in self._listeners)
        )

    # -- configuration --------------------------------------------------------------
    def add_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
    ) -> None:
        """Register event handlers (plain or async functions).

        Added to a running informer, the handlers first get an add for every
        cached object, as with client-go.
        """
        listener = _Listener(self.name, on_add, on_update, on_delete)
        self._listeners.append(listener)
        if self._started:
            for obj in self.store.list():
                listener.push(_Notification("add", None, obj))
            if not self._stopped:
                listener.start()

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index: ``fn(obj)`` returns the values under which ``obj`` is found."""
        self.store.add_indexer(name, fn)

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Start listing and watching in the background (returns at once)."""
        if self._started:
            return
        self._started = True
        loop = asyncio.get_running_loop()
        self._last_progress = loop.time()
        for listener in self._listeners:
            listener.start()
        self._task = asyncio.create_task(self._run(), name=f"informer-{self.name}")
        if self.resync_seconds is not None:
            self._resync_task = asyncio.create_task(
                self._resync(self.resync_seconds), name=f"informer-{self.name}-resync"
            )

    async def stop(self) -> None:
        """Stop watching and delivering events; the cache keeps its last state."""
        if self._stopped:
            return
        self._stopped = True
        self._phase = "stopped"
        tasks = [t for t in (self._task, self._resync_task) if t is not None]
        tasks += [listener.task for listener in self._listeners if listener.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def has_synced(self) -> bool:
        """True once the cache holds the first complete list."""
        return self._synced.is_set()

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait until synced; returns False if ``timeout`` seconds pass first."""
        try:
            async with asyncio.timeout(timeout):
                await self._synced.wait()
        except TimeoutError:
            return False
        return True

    async def wait_handlers_idle(self) -> None:
        """Wait until every handler has processed every event delivered so far."""
        for listener in list(self._listeners):
            await listener.idle.wait()

    @property
    def resource_version(self) -> str:
        """The resourceVersion the next watch starts from."""
        return self._resource_version

    @property
    def last_error(self) -> KubeError | None:
        """The last list/watch failure, cleared by the next success."""
        return self._last_error

    # -- health ----------------------------------------------------------------------
    def readiness_failure(self) -> str | None:
        """Why the informer is not ready (None when synced)."""
        if self.has_synced():
            return None
        if not self._started:
            return "not started"
        if self._last_error is not None:
            return f"not synced: {self._last_error}"
        return "not synced: waiting for the initial list"

    def liveness_failure(self) -> str | None:
        """Why the informer is stuck (None when healthy): a watch without progress."""
        if self._task is not None and self._task.done() and not self._stopped:
            return "informer loop exited unexpectedly"
        silent = asyncio.get_running_loop().time() - self._last_progress
        if self._stalled or (self._phase == "watching" and silent > self._stall_limit):
            return f"watch stalled: no progress for {silent:.0f}s (limit {self._stall_limit:.0f}s)"
        return None

    # -- the list/watch loop ---------------------------------------------------------
    async def _run(self) -> None:
        need_list = True
        watched_before = False
        while True:
            verb = "list" if need_list else "watch"
            try:
                if need_list:
                    await self._list()
                    need_list = False
                    verb = "watch"
                if watched_before:
                    self._m_reconnects.inc()
                watched_before = True
                if await self._watch():
                    self._backoff.reset()
                else:
                    # A watch that ends at once without events would otherwise
                    # spin; pace it like a failure.
                    await self._pause(self._backoff.next())
            except Gone:
                metrics.INFORMER_ERRORS.labels(informer=self.name, verb=verb, code="410").inc()
                self._log.info(
                    "watch expired (410 Gone), relisting",
                    resource_version=self._resource_version,
                )
                need_list = True
                if asyncio.get_running_loop().time() - self._listed_at < 1.0:
                    # Gone right after a fresh list: do not hammer the server.
                    await self._pause(self._backoff.next())
            except _WatchStalled:
                self._m_stalls.inc()
                self._stalled = True
                self._log.warning(
                    "watch made no progress, reconnecting",
                    limit_seconds=round(self._stall_limit, 1),
                )
            except KubeError as err:
                code = str(err.code)
                metrics.INFORMER_ERRORS.labels(informer=self.name, verb=verb, code=code).inc()
                if self._last_error is None:
                    self._failing_since = asyncio.get_running_loop().time()
                if isinstance(err, Unauthorized) and not isinstance(self._last_error, Unauthorized):
                    # Unlike an outage, retrying cannot help until the credentials
                    # change (a rotated kubeconfig or token file): say so once, loudly.
                    self._log.error(
                        "the API server refused the credentials (401 Unauthorized); "
                        "retrying with backoff until they are rotated",
                        cluster=self.client.name,
                        resource=str(self.resource),
                    )
                self._last_error = err
                # client-go retries the watch itself only when the apiserver was
                # unreachable or throttling; anything else may mean the watch
                # cannot resume, so relist.
                if verb == "watch" and not isinstance(err, Unreachable | TooManyRequests):
                    need_list = True
                delay = max(self._backoff.next(), err.retry_after or 0.0)
                self._log.warning(
                    f"{verb} failed, retrying",
                    resource=str(self.resource),
                    namespace=self.namespace,
                    error=str(err),
                    retry_in_seconds=round(delay, 2),
                )
                await self._pause(delay)
            except Exception as err:
                # A bug or an unexpected payload: never let the loop die silently.
                metrics.INFORMER_ERRORS.labels(informer=self.name, verb=verb, code="0").inc()
                need_list = True
                delay = self._backoff.next()
                self._log.exception(
                    f"{verb} failed unexpectedly, relisting",
                    error=repr(err),
                    retry_in_seconds=round(delay, 2),
                )
                await self._pause(delay)

    async def _pause(self, seconds: float) -> None:
        self._phase = "backoff"
        await asyncio.sleep(seconds)

    def _record_success(self) -> None:
        if self._last_error is not None:
            since = self._failing_since or self._last_progress
            self._log.info(
                "recovered",
                after_seconds=round(asyncio.get_running_loop().time() - since, 2),
                last_error=str(self._last_error),
            )
        self._last_error = None
        self._failing_since = None

    def _progress(self) -> None:
        self._last_progress = asyncio.get_running_loop().time()
        self._stalled = False

    async def _list(self) -> None:
        self._phase = "listing"
        answer = await self.client.list(
            self.resource, self.namespace, field_selector=self.field_selector
        )
        items: list[Object] = answer.get("items") or []
        if self.transform is not None:
            items = [self.transform(obj) for obj in items]
        rv = _rv(answer)  # a list carries its resourceVersion where an object does
        first = not self.has_synced()
        self._replace(items)
        self._resource_version = rv
        self._listed_at = asyncio.get_running_loop().time()
        self._m_lists.inc()
        if not first:
            self._m_relists.inc()
        self._progress()
        self._record_success()
        if first:
            self._synced.set()
            self._m_synced.set(1)
            self._log.info("synced", objects=len(self.store), resource_version=rv)
        else:
            self._log.info("relisted", objects=len(self.store), resource_version=rv)

    def _replace(self, items: list[Object]) -> None:
        """Make the cache equal to a fresh list, notifying only what changed."""
        fresh = {object_key(obj): obj for obj in items}
        for key in self.store.list_keys():  # a copy: we delete while iterating
            if key not in fresh:
                # Deleted while we were not watching: the last state we knew.
                gone = self.store.delete(key)
                if gone is not None:
                    self._notify(_Notification("delete", None, gone))
        for key, obj in fresh.items():
            old = self.store.put(key, obj)
            if old is None:
                self._notify(_Notification("add", None, obj))
            elif _rv(old) != _rv(obj):
                self._notify(_Notification("update", old, obj))

    async def _watch(self) -> bool:
        """One watch until the server ends it; True if it delivered anything."""
        self._phase = "watching"
        timeout = int(self.watch_timeout_seconds * (1.0 + random.random()))
        self._stall_limit = timeout + self.stall_grace_seconds
        loop = asyncio.get_running_loop()
        started = loop.time()
        delivered = False
        try:
            async with asyncio.timeout(self._stall_limit) as watchdog:
                async with self.client.watch(
                    self.resource,
                    self.namespace,
                    resource_version=self._resource_version,
                    field_selector=self.field_selector,
                    timeout_seconds=timeout,
                ) as events:
                    self._progress()
                    self._record_success()
                    async for event in events:
                        self._progress()
                        watchdog.reschedule(loop.time() + self._stall_limit)
                        self._handle(event)
                        delivered = True
        except TimeoutError as exc:
            if watchdog.expired():
                raise _WatchStalled from exc
            raise
        self._progress()
        # A quiet namespace legitimately yields no events until the timeout.
        return delivered or loop.time() - started >= 1.0

    def _handle(self, event: WatchEvent) -> None:
        metrics.INFORMER_EVENTS.labels(informer=self.name, type=event.type).inc()
        obj = event.object
        rv = _rv(obj)
        if event.type == BOOKMARK:
            if rv:
                self._resource_version = rv
            return
        if self.transform is not None:
            obj = self.transform(obj)
        key = object_key(obj)
        if event.type == DELETED:
            self.store.delete(key)
            self._notify(_Notification("delete", None, obj))
        else:  # ADDED or MODIFIED; an ADDED for a cached key is an update
            old = self.store.put(key, obj)
            if old is None:
                self._notify(_Notification("add", None, obj))
            else:
                self._notify(_Notification("update", old, obj))
        if rv:
            self._resource_version = rv

    def _notify(self, note: _Notification) -> None:
        for listener in self._listeners:
            listener.push(note)

    async def _resync(self, period: float) -> None:
        """Periodically re-deliver every cached object as an update (client-go resync)."""
        while True:
            await asyncio.sleep(period)
            if not self.has_synced():
                continue
            for obj in self.store.list():
                self._notify(_Notification("update", obj, obj))


def _rv(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
