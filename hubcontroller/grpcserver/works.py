"""The hub's ManifestWorks as CloudEvents: per-cluster caches, spec events, status writes.

A cluster namespace gets its own ManifestWork informer the first time an
agent of that cluster subscribes (list+watch of that namespace only).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable
from typing import Any

import structlog

from ocmkit.cloudevents import CloudEvent
from ocmkit.cloudevents.event import (
    CREATE_REQUEST,
    DELETE_REQUEST,
    RESYNC_RESPONSE,
    UPDATE_REQUEST,
)
from ocmkit.cloudevents.works import (
    KUBE_SOURCE,
    StatusUpdate,
    deleted_resync_response,
    spec_event,
)
from ocmkit.kube import MANIFESTWORKS, Conflict, KubeClient, NotFound
from ocmkit.kube.mergepatch import merge_patch, with_preconditions
from ocmkit.runtime import Informer, object_key, strip_managed_fields
from ocmkit.runtime.recentwrites import RecentWrites
from schemas.wire import MANIFEST_WORK_FINALIZER

log = structlog.get_logger(__name__)

Object = dict[str, Any]
EventSink = Callable[[str, CloudEvent], None]
#: How long a resync or a status write waits for a new cluster's first list: below
#: the agents' 30 s publish deadline, so that they get the refusal, not a timeout.
SYNC_TIMEOUT = 20.0
#: How often a waiting call looks whether the first list failed.
_SYNC_POLL = 0.2


class WorksUnavailable(TimeoutError):
    """A cluster's ManifestWorks cannot be listed (yet): the message says why."""


async def wait_listed(informer: Informer, cluster: str, timeout: float = SYNC_TIMEOUT) -> None:
    """Wait for the first list of ``cluster``'s works; raise WorksUnavailable with the
    hub's error once a list failed (the informer retries with backoff meanwhile, up to
    ~45 s: waiting longer would only hold the agent's call until its deadline)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await informer.wait_synced(min(_SYNC_POLL, max(deadline - loop.time(), 0.0))):
        if informer.last_error is not None:
            raise WorksUnavailable(
                f"the ManifestWorks of {cluster} cannot be listed: {informer.last_error}"
            )
        if loop.time() >= deadline:
            raise WorksUnavailable(f"the ManifestWorks of {cluster} were not listed in time")


def _meta(obj: Object) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def needs_update_event(old: Object, new: Object) -> bool:
    """Whether a hub update is news for the agent (OCM's filter)."""
    o, n = _meta(old), _meta(new)
    return not (
        (o.get("labels") or {}) == (n.get("labels") or {})
        and (o.get("annotations") or {}) == (n.get("annotations") or {})
        and int(o.get("generation") or 0) >= int(n.get("generation") or 0)
        and not n.get("deletionTimestamp")
    )


class WorkService:
    """ManifestWorks of the hub, one informer per cluster namespace served."""

    def __init__(self, hub: KubeClient, sink: EventSink) -> None:
        self._hub = hub
        self._sink = sink
        self._informers: dict[str, Informer] = {}
        self._locks: collections.defaultdict[str, asyncio.Lock] = collections.defaultdict(
            asyncio.Lock
        )
        # Our finalizer and status writes until the informer shows them: a status that
        # goes back to what the cache still shows must not be taken for "unchanged".
        self._written = RecentWrites(self._cached)

    def _cached(self, key: str) -> Object | None:
        informer = self._informers.get(key.partition("/")[0])
        return None if informer is None else informer.store.get(key)

    async def ensure(self, cluster: str) -> Informer:
        """The informer of ``cluster``'s namespace, started and synced.

        The works of its first list are not announced: the agent's resync asks
        for them (as with OCM's server, whose informer lists before any agent
        subscribes); only later changes become spec events.
        """
        async with self._locks[cluster]:
            informer = self._informers.get(cluster)
            if informer is None:
                informer = Informer(
                    self._hub,
                    MANIFESTWORKS,
                    cluster,
                    name=f"manifestworks-{cluster}",
                    transform=strip_managed_fields,
                )
                self._informers[cluster] = informer
                await informer.start()
                try:
                    await wait_listed(informer, cluster)
                finally:
                    # Unlisted yet (403, no CRD): its works are announced once listed,
                    # since a refused resync is not asked again by OCM's agent.
                    listed = {_meta(w).get("uid") for w in informer.store.list()}
                    informer.add_handler(
                        on_add=lambda w: (
                            None if _meta(w).get("uid") in listed else self._emit(w, CREATE_REQUEST)
                        ),
                        on_update=self._on_update,
                        on_delete=self._on_delete,
                    )
        await wait_listed(informer, cluster)
        return informer

    async def stop(self) -> None:
        """Stop every informer."""
        await asyncio.gather(*(i.stop() for i in self._informers.values()))
        self._informers.clear()

    def ready_failure(self) -> str | None:
        """Informers that lost their watch."""
        for cluster, informer in self._informers.items():
            failure = informer.liveness_failure()
            if failure:
                return f"{cluster}: {failure}"
        return None

    # -- hub changes -> spec events ---------------------------------------------------
    def _emit(self, work: Object, action: str) -> None:
        meta = _meta(work)
        try:
            event = spec_event(work, action, KUBE_SOURCE)
        except (TypeError, ValueError) as err:
            log.warning("cannot encode a work", work=meta.get("name"), error=str(err))
            return
        log.debug(
            "spec event",
            cluster=meta.get("namespace"),
            work=meta.get("name"),
            resource_id=meta.get("uid"),
            action=action,
            generation=meta.get("generation"),
        )
        self._sink(str(meta.get("namespace")), event)

    def _on_update(self, old: Object, new: Object) -> None:
        self._written.settle(object_key(new))
        if needs_update_event(old, new):
            self._emit(new, UPDATE_REQUEST)

    def _on_delete(self, work: Object) -> None:
        self._written.forget(object_key(work))
        self._emit(work, DELETE_REQUEST)

    # -- agent requests -----------------------------------------------------------------
    async def resync(self, cluster: str, versions: dict[str, int]) -> list[CloudEvent]:
        """The answer to a spec resync request: what changed, and deletions."""
        informer = await self.ensure(cluster)
        answer: list[CloudEvent] = []
        known: set[str] = set()
        for work in informer.store.list():
            meta = _meta(work)
            uid = str(meta.get("uid") or "")
            known.add(uid)
            generation = int(meta.get("generation") or 0)
            if (
                meta.get("deletionTimestamp")
                or generation == 0
                or generation > versions.get(uid, 0)
            ):
                # OCM's server answers with the generation as the resourceVersion.
                answered = {**work, "metadata": {**meta, "resourceVersion": str(generation)}}
                answer.append(spec_event(answered, RESYNC_RESPONSE, KUBE_SOURCE))
        for uid in versions:
            if uid not in known:
                answer.append(deleted_resync_response(uid, cluster))
        return answer

    async def apply_status(self, update: StatusUpdate) -> str:
        """Write an agent's status event to the hub; returns what was done (for logs)."""
        informer = await self.ensure(update.cluster)
        cached = next((w for w in informer.store.list() if _meta(w).get("uid") == update.uid), None)
        if cached is None:
            return "work not found"
        work = self._written.latest(object_key(cached), cached) or cached
        for _ in range(2):  # on a conflict read the work again: three attempts in all
            try:
                return await self._write(work, update)
            except Conflict:
                try:
                    work = await self._hub.get(MANIFESTWORKS, _meta(work)["name"], update.cluster)
                except NotFound:
                    return "work not found"
        return await self._write(work, update)

    async def _write(self, work: Object, update: StatusUpdate) -> str:
        meta = _meta(work)
        name, namespace = str(meta["name"]), str(meta["namespace"])
        finalizers = list(meta.get("finalizers") or [])
        if update.deleted:
            if MANIFEST_WORK_FINALIZER not in finalizers:
                return "deleted (no finalizer)"
            remaining = [f for f in finalizers if f != MANIFEST_WORK_FINALIZER]
            await self._patch(work, {"metadata": {"finalizers": remaining or None}})
            return "finalizer removed"
        if int(meta.get("generation") or 0) > update.generation:
            return "older generation"
        if MANIFEST_WORK_FINALIZER not in finalizers:
            work = await self._patch(
                work, {"metadata": {"finalizers": [*finalizers, MANIFEST_WORK_FINALIZER]}}
            )
        old = work.get("status") or {}
        new = {**old, **update.status()}
        patch = merge_patch(old, new)
        if not patch:
            return "unchanged"
        body = {"metadata": {"uid": meta.get("uid")}, "status": patch}
        with contextlib.suppress(NotFound):
            written = await self._hub.patch(
                MANIFESTWORKS, name, body, namespace, patch_type="merge", subresource="status"
            )
            self._written.remember(f"{namespace}/{name}", work, written)
        return "status patched"

    async def _patch(self, work: Object, patch: dict[str, Any]) -> Object:
        meta = _meta(work)
        name, namespace = str(meta["name"]), str(meta["namespace"])
        body = with_preconditions(work, patch)
        written = await self._hub.patch(MANIFESTWORKS, name, body, namespace)
        self._written.remember(f"{namespace}/{name}", work, written)
        return written
