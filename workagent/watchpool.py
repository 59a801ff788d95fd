"""The feedback watch pool: informers for ``feedbackScrapeType: Watch`` (spec/agent.md §12).

The status controller registers an object (group, version, resource,
namespace, name, work) after a successful read; registrations share one
informer per (group, version, resource, namespace), at most
``--max-feedback-watch`` of them, and one that would need one more stays in
Poll mode. docs/agent.md ("The feedback watch pool") says when
registrations go. Add/update events go to the listeners; deletes are left to
the next poll. The pool's informers start while the Manager already runs, so
the pool starts and stops them itself and registers their liveness checks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import structlog
from prometheus_client import Counter, Gauge

from ocmkit.kube import KubeClient, Resource
from ocmkit.runtime import HealthChecks, Informer, Object

log = structlog.get_logger(__name__)

#: Watch-mode informers are resynced like OCM's: once a day.
WATCH_RESYNC_SECONDS = 24 * 3600.0

POOL_INFORMERS = Gauge(
    "feedback_watch_pool_informers",
    "Informers of the feedback watch pool (one per resource type and namespace).",
)
POOL_REGISTRATIONS = Gauge(
    "feedback_watch_pool_registrations",
    "Watch-mode registrations (resource, work) served by the feedback watch pool.",
)
FALLBACKS = Counter(
    "feedback_watch_fallbacks",
    "Watch-mode resources left in Poll mode because the pool was full "
    "(--max-feedback-watch); each counted once until it is watched or released.",
)

#: Called with (group, version, resource, object) for every add or update of a watched object.
Listener = Callable[[str, str, str, Object], None]


@dataclass(frozen=True)
class WatchKey:
    """What one informer of the pool watches: a resource type in one namespace."""

    group: str
    version: str
    resource: str
    namespace: str  # "" for cluster-scoped resources

    def __str__(self) -> str:
        gvr = ".".join(p for p in (self.resource, self.version, self.group) if p)
        return f"{gvr} {self.namespace}" if self.namespace else gvr


@dataclass(frozen=True)
class Registration:
    """One work's interest in one object."""

    key: WatchKey
    name: str
    work: str

    def matches(self, group: str, resource: str, namespace: str, name: str, work: str) -> bool:
        """Whether this is ``work``'s registration of that object (at any version)."""
        key = self.key
        mine = (key.group, key.resource, key.namespace, self.name, self.work)
        return mine == (group, resource, namespace, name, work)


@dataclass(frozen=True)
class CacheLookup:
    """The answer of a synced informer: the object, or None when it does not exist."""

    obj: Object | None


@dataclass
class _Entry:
    informer: Informer
    registrations: set[Registration] = field(default_factory=set)


class FeedbackWatchPool:
    """Shared, bounded Watch-mode informers on the managed cluster."""

    def __init__(
        self,
        client: KubeClient,
        max_informers: int,
        *,
        checks: HealthChecks | None = None,
    ) -> None:
        self._client = client
        self._max = max_informers
        self._checks = checks
        self._entries: dict[WatchKey, _Entry] = {}
        self._listeners: list[Listener] = []
        # Refused registrations, so each fallback is counted and logged once.
        self._fallen_back: set[Registration] = set()
        self._stopped = False
        self._publish()

    # -- configuration ---------------------------------------------------------------
    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` for every add/update event of every pool informer."""
        self._listeners.append(listener)

    # -- registrations ---------------------------------------------------------------
    async def register(self, resource: Resource, namespace: str, name: str, work: str) -> bool:
        """Watch object ``name`` for ``work``; False when the pool is full (stay in Poll).

        Idempotent. ``namespace`` is "" for a cluster-scoped resource.
        """
        key = WatchKey(resource.group, resource.version, resource.plural, namespace)
        reg = Registration(key, name, work)
        entry = self._entries.get(key)
        new_informer = False
        if entry is None:
            if self._stopped or len(self._entries) >= self._max:
                if reg not in self._fallen_back:
                    self._fallen_back.add(reg)
                    FALLBACKS.inc()
                    log.info(
                        "feedback watch pool is full, polling instead",
                        watch=str(key),
                        resource_name=name,
                        work=work,
                        max_feedback_watch=self._max,
                    )
                return False
            entry = self._entries[key] = _Entry(self._new_informer(key, resource))
            new_informer = True
        entry.registrations.add(reg)
        self._fallen_back.discard(reg)
        self._publish()
        if new_informer:
            # Registered in the dict before the first await: a concurrent
            # registration of the same key shares this informer.
            await self._start(entry.informer)
            log.info("watching for status feedback", watch=str(key))
        return True

    async def unregister(
        self, group: str, resource: str, namespace: str, name: str, work: str
    ) -> None:
        """Drop ``work``'s registration of an object (of any version)."""
        await self._release(lambda r: r.matches(group, resource, namespace, name, work))

    async def release_work(self, work: str) -> None:
        """Drop every registration of ``work`` (it is gone or being finalized)."""
        await self._release(lambda r: r.work == work)

    async def retain(self, work: str, keep: Collection[tuple[str, str, str, str, str]]) -> None:
        """Drop ``work``'s registrations of objects not in ``keep``.

        ``keep`` holds (group, version, resource, namespace, name) tuples: the
        resources the work still lists.
        """
        wanted = set(keep)
        await self._release(
            lambda r: (
                r.work == work
                and (r.key.group, r.key.version, r.key.resource, r.key.namespace, r.name)
                not in wanted
            )
        )

    # -- reading ---------------------------------------------------------------------
    def lookup(
        self, group: str, version: str, resource: str, namespace: str, name: str
    ) -> CacheLookup | None:
        """The object from a synced pool informer; None when no synced informer has it
        (the caller reads the API server instead)."""
        entry = self._entries.get(WatchKey(group, version, resource, namespace))
        if entry is None or not entry.informer.has_synced():
            return None
        return CacheLookup(entry.informer.store.get(f"{namespace}/{name}" if namespace else name))

    def watched(self) -> set[WatchKey]:
        """The (resource type, namespace) pairs that have an informer now."""
        return set(self._entries)

    def registrations(self) -> set[Registration]:
        """Every current registration."""
        return {reg for entry in self._entries.values() for reg in entry.registrations}

    def is_watched(self, group: str, resource: str, namespace: str, name: str, work: str) -> bool:
        """Whether ``work`` has a registration (any version) of this object."""
        return any(r.matches(group, resource, namespace, name, work) for r in self.registrations())

    # -- lifecycle -------------------------------------------------------------------
    async def stop(self) -> None:
        """Stop every informer and refuse new registrations (agent shutdown)."""
        self._stopped = True
        entries = list(self._entries.items())
        self._entries.clear()
        self._fallen_back.clear()
        self._publish()
        await asyncio.gather(
            *(self._stop_informer(key, e.informer) for key, e in entries), return_exceptions=True
        )

    # -- internals -------------------------------------------------------------------
    def _new_informer(self, key: WatchKey, resource: Resource) -> Informer:
        informer = Informer(
            self._client,
            resource,
            key.namespace or None,
            resync_seconds=WATCH_RESYNC_SECONDS,
            name=f"feedback-watch {key}",
        )

        def changed(obj: Object) -> None:
            for listener in self._listeners:
                listener(key.group, key.version, key.resource, obj)

        # Deletes are not reported: the next poll notices a missing object.
        informer.add_handler(on_add=changed, on_update=lambda _old, new: changed(new))
        return informer

    async def _start(self, informer: Informer) -> None:
        await informer.start()
        if self._checks is not None:
            # Liveness only: a Watch-mode resource the agent may not list or
            # watch must not make the whole agent unready; reads then fall
            # back to GETs. A stalled watch, though, is a stuck process.
            self._checks.add_liveness(f"informer {informer.name}", informer.liveness_failure)

    async def _stop_informer(self, key: WatchKey, informer: Informer) -> None:
        if self._checks is not None:
            self._checks.remove(f"informer {informer.name}")
        await informer.stop()
        log.info("stopped watching for status feedback", watch=str(key))

    async def _release(self, match: Callable[[Registration], bool]) -> None:
        self._fallen_back = {r for r in self._fallen_back if not match(r)}
        emptied: list[tuple[WatchKey, Informer]] = []
        for key, entry in list(self._entries.items()):
            entry.registrations = {r for r in entry.registrations if not match(r)}
            if not entry.registrations:
                del self._entries[key]
                emptied.append((key, entry.informer))
        self._publish()
        for key, informer in emptied:
            await self._stop_informer(key, informer)

    def _publish(self) -> None:
        POOL_INFORMERS.set(len(self._entries))
        POOL_REGISTRATIONS.set(sum(len(e.registrations) for e in self._entries.values()))
