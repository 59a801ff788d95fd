"""The AppliedManifestWorkFinalizer (spec/agent.md section 8.2).

When an AppliedManifestWork of this agent is being deleted (by the
ManifestWorkFinalizer, by eviction, or by hand), delete every resource in its
``status.appliedResources`` with the algorithm of section 8.3, track what is
still pending in the status, and remove the ``applied-manifest-work-cleanup``
finalizer only when nothing is left. Deletion is driven by this list rather
than by Kubernetes garbage collection: owner references from a cluster-scoped
AppliedManifestWork are not reliable enough for that, and the list also lets
a foreign finalizer on a resource hold the whole chain up to the hub.
"""

from __future__ import annotations

import structlog

from ocmkit.kube import APPLIED_MANIFESTWORKS, NotFound
from ocmkit.runtime import (
    Controller,
    ItemExponentialFailureRateLimiter,
    Result,
    WorkQueue,
)
from schemas.wire import APPLIED_MANIFEST_WORK_FINALIZER
from workagent.controllers.add_finalizer import has_finalizer, is_deleting
from workagent.controllers.applied import recorded_resources
from workagent.controllers.deletion import DeletionFailed, delete_applied_resources
from workagent.controllers.deps import AgentDeps
from workagent.controllers.metrics import ORPHAN_WORK_DELETED
from workagent.controllers.ownership import applied_work_owner
from workagent.controllers.patcher import patch_metadata_and_spec, patch_status
from workagent.identity import applied_work_name

log = structlog.get_logger(__name__)

NAME = "AppliedManifestWorkFinalizer"
# Re-check resources still being deleted: 50 ms doubling, at most 60 s, per record.
PENDING_BASE_SECONDS = 0.05
PENDING_MAX_SECONDS = 60.0


class AppliedManifestWorkFinalizer:
    """Reconciles an AppliedManifestWork name: deletes its resources, then lets it go."""

    def __init__(self, deps: AgentDeps) -> None:
        self._deps = deps
        self._waits = ItemExponentialFailureRateLimiter(PENDING_BASE_SECONDS, PENDING_MAX_SECONDS)

    def controller(self) -> Controller:
        """A controller fed by events of this agent's AppliedManifestWorks."""
        deps = self._deps
        queue = WorkQueue(NAME)
        deps.queue_own_applied(queue)
        return deps.controller(NAME, queue, self.reconcile, deps.applied)

    async def reconcile(self, name: str) -> Result | None:
        """One pass for AppliedManifestWork ``name``."""
        deps = self._deps
        applied = deps.applied.store.get(name)
        if (
            applied is None
            or not deps.is_own_applied(applied)
            or not is_deleting(applied)
            or not has_finalizer(applied, APPLIED_MANIFEST_WORK_FINALIZER)
        ):
            self._waits.forget(name)
            deps.cleanup_blocked.discard(name)
            return None

        resources = recorded_resources(applied)
        work_name = str((applied.get("spec") or {}).get("manifestWorkName") or name)
        if deps.watch_pool is not None and name == applied_work_name(deps.hub_hash, work_name):
            # Step 2: the work's Watch-mode registrations go (all of them, a superset
            # of its appliedResources). Registrations belong to this hub's works, so
            # the record of another hub's work of the same name releases nothing.
            await deps.watch_pool.release_work(work_name)
        pending, errors = await delete_applied_resources(
            deps,
            resources,
            f"manifestwork {work_name} is terminating",
            applied_work_owner(applied),
            cause=ORPHAN_WORK_DELETED,
        )
        changed = pending != resources
        if pending or errors:
            # Tell the ManifestWorkFinalizer before the status event reaches it.
            deps.cleanup_blocked.add(name)
        if changed and pending:
            status = {**(applied.get("status") or {}), "appliedResources": pending}
            try:
                await patch_status(deps.work_client, APPLIED_MANIFESTWORKS, applied, status)
            except NotFound:
                return None  # gone already: nothing left to hold
        if errors:
            raise DeletionFailed(errors)
        if changed and pending:
            # The status update comes back as an event and triggers the next pass.
            return None
        if pending:
            return Result(requeue_after=self._waits.when(name))

        # Nothing left: the finalizer goes at once, without first writing the
        # empty list (the object is about to disappear with its status).
        self._waits.forget(name)
        deps.cleanup_blocked.discard(name)
        remaining = [
            f for f in applied["metadata"]["finalizers"] if f != APPLIED_MANIFEST_WORK_FINALIZER
        ]
        try:
            await patch_metadata_and_spec(
                deps.work_client, APPLIED_MANIFESTWORKS, applied, finalizers=remaining
            )
        except NotFound:
            return None
        log.info("all applied resources are gone, removed the finalizer")
        return None
