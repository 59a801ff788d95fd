"""The ManifestWorkFinalizer (spec/agent.md section 8.1).

Holds a deleted ManifestWork on the hub until the agent has cleaned up after
it: it deletes the work's AppliedManifestWork on the spoke, waits for that to be
gone (the AppliedManifestWork finalizer only lets it go once every owned
resource is gone, section 8.2), and only then removes the
``manifest-work-cleanup`` finalizer. So the hub object disappears last:
foreground deletion across two clusters.

On the kube driver, unlike OCM's agent, which writes the work condition
``Deleting`` before it deletes the AppliedManifestWork, this one writes it
only when a clean-up pass left resources behind (a foreign finalizer, an
error): a work whose resources go at once is released without a status write
it would carry for a moment. On the CloudEvents drivers it is written first,
as OCM's agent does: the source keeps the last status it receives, and sees
``Deleting`` before the ``Deleted`` confirmation (cloudevents.md section 4.6).
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import structlog

from ocmkit.kube import APPLIED_MANIFESTWORKS, MANIFESTWORKS, Conflict, NotFound
from ocmkit.runtime import (
    Controller,
    ItemExponentialFailureRateLimiter,
    Object,
    Result,
    WorkQueue,
)
from ocmkit.runtime.recentwrites import RecentWrites
from schemas.meta import now
from schemas.wire import (
    CONDITION_DELETING,
    MANIFEST_WORK_FINALIZER,
    REASON_WORK_DELETING,
)
from workagent.controllers.add_finalizer import has_finalizer, is_deleting, work_from_cache
from workagent.controllers.conditions import new_condition, set_condition
from workagent.controllers.deps import AgentDeps
from workagent.controllers.patcher import patch_metadata_and_spec, patch_status
from workagent.identity import applied_work_name, work_name_of

log = structlog.get_logger(__name__)

NAME = "ManifestWorkFinalizer"
DELETING_MESSAGE = "ManifestWork is being deleted"
# Wait for the AppliedManifestWork to go. Its update and delete events drive the
# next pass; the timer is only a safety net: 1 s doubling, at most 1000 s, per work.
WAIT_BASE_SECONDS = 1.0
WAIT_MAX_SECONDS = 1000.0


class ManifestWorkFinalizer:
    """Reconciles a ManifestWork name: cleans up on the spoke, then releases the hub object."""

    def __init__(self, deps: AgentDeps) -> None:
        self._deps = deps
        self._waits = ItemExponentialFailureRateLimiter(WAIT_BASE_SECONDS, WAIT_MAX_SECONDS)
        # AppliedManifestWorks the informer saw deleted (and not created since).
        self._seen_deleted: set[str] = set()
        # AppliedManifestWork name -> uid of the instance we sent a DELETE for: until
        # the informer shows its deletionTimestamp, the next pass sends nothing again.
        self._delete_sent: dict[str, str] = {}
        # Our status writes the works informer may not have delivered yet.
        self._written = RecentWrites(lambda name: work_from_cache(deps, name))

    def controller(self) -> Controller:
        """A controller fed by hub ManifestWork and spoke AppliedManifestWork events."""
        deps = self._deps
        queue = WorkQueue(NAME)

        def on_work(obj: Object) -> None:
            # Only works being deleted have anything to do here.
            if is_deleting(obj):
                queue.add(_name(obj))

        def on_work_update(_old: Object, new: Object) -> None:
            self._written.settle(_name(new))
            on_work(new)

        def on_applied(obj: Object) -> None:
            # The AppliedManifestWork of work W on this hub is "<hubHash>-W".
            self._seen_deleted.discard(_name(obj))
            work = work_name_of(deps.hub_hash, _name(obj))
            if work:
                queue.add(work)

        def on_applied_deleted(obj: Object) -> None:
            work = work_name_of(deps.hub_hash, _name(obj))
            if work:
                self._seen_deleted.add(_name(obj))
                queue.add(work)

        deps.works.add_handler(
            on_add=on_work,
            on_update=on_work_update,
            # A pass after the work is gone forgets what was remembered for it.
            on_delete=lambda obj: queue.add(_name(obj)),
        )
        deps.applied.add_handler(
            on_add=on_applied,
            on_update=lambda _old, new: on_applied(new),
            on_delete=on_applied_deleted,
        )
        return deps.controller(NAME, queue, self.reconcile, deps.works, deps.applied)

    async def reconcile(self, work_name: str) -> Result | None:
        """One pass for ManifestWork ``work_name``."""
        deps = self._deps
        work = self._written.latest(work_name, work_from_cache(deps, work_name))
        applied_name = applied_work_name(deps.hub_hash, work_name)
        if work is None or not is_deleting(work):
            # Gone: eviction (section 15) deals with anything left behind.
            self._forget(work_name, applied_name)
            return None

        kube = deps.settings.workload_source_driver == "kube"
        applied = deps.applied.store.get(applied_name)
        if applied is not None:
            uid = str(applied["metadata"].get("uid") or "")
            if not is_deleting(applied) and self._delete_sent.get(applied_name) != uid:
                if not kube:
                    # As OCM's agent (agent.md 8.1): a status event to the source before
                    # the AppliedManifestWork's delete; none for a work that never had one.
                    with contextlib.suppress(NotFound):
                        await self._mark_deleting(work)
                        work = self._written.latest(work_name, work) or work
                # NotFound: the hub object went meanwhile (its finalizer removed by
                # hand); it was being deleted, so cleaning up is still what is wanted.
                with contextlib.suppress(NotFound):
                    await deps.work_client.delete(APPLIED_MANIFESTWORKS, applied_name)
                self._delete_sent[applied_name] = uid
                log.info("deleting the applied manifest work", applied_work=applied_name)
            elif kube and applied_name in deps.cleanup_blocked:
                # Kube driver: Deleting is reported once a clean-up pass left something behind:
                # a clean-up that finishes at once releases the hub object without
                # that status write (one request per work fewer).
                with contextlib.suppress(NotFound):
                    await self._mark_deleting(work)
            return Result(requeue_after=self._waits.when(work_name))

        if applied_name not in self._seen_deleted and applied_name not in self._delete_sent:
            # The cache may lag behind the spoke (an AppliedManifestWork created a
            # moment ago): confirm before letting the hub object go. Once the
            # informer has shown it (we deleted what it showed) or its delete
            # event, its word that it is gone is enough.
            try:
                await deps.work_client.get(APPLIED_MANIFESTWORKS, applied_name)
            except NotFound:
                pass
            else:
                return Result(requeue_after=self._waits.when(work_name))

        self._waits.forget(work_name)
        if has_finalizer(work, MANIFEST_WORK_FINALIZER):
            try:
                await self._remove_finalizer(work)
            except NotFound:
                return None
            log.info("cleanup done, removed the manifest work finalizer")
        # What is remembered goes with the work from the cache: a pass until then
        # must not take the AppliedManifestWork for unknown again.
        return None

    async def _remove_finalizer(self, work: Object) -> None:
        """Remove the cleanup finalizer; after a 409 once more, on the work read afresh.

        The status controller keeps writing the status of a deleting work (its
        resources disappear), so the cached version is often just outdated; a
        GET costs less than a failed pass and its backoff.
        """
        name = _name(work)
        latest = self._written.latest(name, work) or work
        for attempt in range(2):
            remaining = [
                f
                for f in latest["metadata"].get("finalizers") or []
                if f != MANIFEST_WORK_FINALIZER
            ]
            try:
                written = await patch_metadata_and_spec(
                    self._deps.hub, MANIFESTWORKS, latest, finalizers=remaining
                )
                if written is not None:
                    self._written.remember(name, latest, written)
                return
            except Conflict:
                if attempt:
                    raise
                latest = await self._deps.hub.get(
                    MANIFESTWORKS, name, work["metadata"]["namespace"]
                )
                if not has_finalizer(latest, MANIFEST_WORK_FINALIZER):
                    return

    def _forget(self, work_name: str, applied_name: str) -> None:
        """Drop what is remembered of a work whose clean-up is over."""
        self._waits.forget(work_name)
        self._seen_deleted.discard(applied_name)
        self._delete_sent.pop(applied_name, None)
        self._written.forget(work_name)

    async def _mark_deleting(self, work: Object) -> None:
        """Set the work condition ``Deleting`` (a status patch, sent only if it changes)."""
        status = copy.deepcopy(work.get("status") or {})
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        generation = int((work.get("metadata") or {}).get("generation") or 0)
        set_condition(
            conditions,
            new_condition(
                CONDITION_DELETING, "True", REASON_WORK_DELETING, DELETING_MESSAGE, generation
            ),
            now(),
        )
        written = await patch_status(self._deps.hub, MANIFESTWORKS, work, status)
        if written is not None:
            self._written.remember(_name(work), work, written)


def _name(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
