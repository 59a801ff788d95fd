"""The ManifestWorkReplicaSet controller (spec/hub.md section 2).

Deploys a ManifestWork template to every cluster its Placements select, at
the pace of each placement's rollout strategy, and reports progress in the
replica set's status. A reconcile finalizes a deleting replica set, adds the
finalizer, or deploys (:mod:`replicaset_deploy`) and summarizes
(:mod:`replicaset_status`); the status is patched once, if it changed. Where
this differs from OCM, each module's docstring says so.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import structlog

from hubcontroller.controllers.replicaset_cache import Template, WorkJudgements
from hubcontroller.controllers.replicaset_deploy import DeployStep
from hubcontroller.controllers.replicaset_index import (
    DECISIONS_BY_PLACEMENT,
    REPLICA_SETS_BY_OWNER,
    REPLICA_SETS_BY_PLACEMENT,
    WORKS_BY_OWNER,
    decision_placement_key,
    decisions_by_placement,
    placement_key,
    replica_sets_by_owner,
    replica_sets_by_placement,
    work_owner,
    works_by_owner,
)
from hubcontroller.controllers.replicaset_recent import RecentWrites
from hubcontroller.controllers.replicaset_status import (
    StatusDraft,
    report_write_failures,
    summarize,
)
from hubcontroller.controllers.replicaset_works import (
    is_deleting,
    meta,
    owner_label_value,
    owner_of,
)
from hubcontroller.controllers.replicaset_writes import (
    WorkWriter,
    patch_finalizers,
    patch_status,
    run_writes,
)
from hubcontroller.deps import Clock, HubDeps, utc_now
from hubcontroller.settings import HUB_RESYNC_SECONDS
from ocmkit.kube import (
    MANIFESTWORK_REPLICASETS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    KubeError,
    NotFound,
)
from ocmkit.runtime import Controller, Informer, Object, Result, WorkQueue, object_key
from schemas.wire import MANIFEST_WORK_REPLICA_SET_FINALIZER

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "ManifestWorkReplicaSetController"
#: Rollout rechecks at or beyond this are left to events and resyncs (as OCM).
MAX_REQUEUE = timedelta(minutes=30)


class ReconcileErrors(KubeError):
    """Several API errors of one reconcile, retried together with backoff.

    A KubeError, so the controller logs it without a traceback (the messages
    say it all); ``retry_after`` is the longest ``Retry-After`` among them.
    """

    def __init__(self, errors: list[KubeError]) -> None:
        self.errors = errors
        waits = [e.retry_after for e in errors if e.retry_after is not None]
        super().__init__(
            0,
            "MultipleErrors",
            f"{len(errors)} requests failed: " + "; ".join(str(e) for e in errors),
            retry_after=max(waits) if waits else None,
        )


def _raise_errors(errors: list[KubeError]) -> None:
    """Raise the reconcile's API errors: one as itself, several together."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ReconcileErrors(errors)


def _has_finalizer(obj: Mapping[str, Any]) -> bool:
    return MANIFEST_WORK_REPLICA_SET_FINALIZER in (meta(obj).get("finalizers") or [])


class ReplicaSetController:
    """Reconciles ManifestWorkReplicaSets; see the module docstring.

    ``now`` is the wall clock the rollout and the conditions use; ``clock``
    the monotonic one that ages remembered writes. Both are injectable for
    tests.
    """

    def __init__(
        self,
        deps: HubDeps,
        replica_sets: Informer,
        placements: Informer,
        decisions: Informer,
        *,
        now: Clock = utc_now,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.deps = deps
        self.replica_sets = replica_sets
        self.now = now
        # Our own work writes, until the shared ManifestWork informer shows them.
        self.recent_works = RecentWrites(clock=clock)
        self.writer = WorkWriter(deps.works_client, self.recent_works)
        # Our own status and finalizer writes, until the replica set informer shows them.
        self.own_writes = RecentWrites(clock=clock)
        self.judgements = WorkJudgements()
        self.deploy = DeployStep(self.writer, placements.store, decisions.store, self.judgements)
        self.queue = WorkQueue(CONTROLLER_NAME)
        self.controller = Controller(
            CONTROLLER_NAME,
            self.queue,
            self.reconcile,
            workers=deps.workers,
            depends_on=[replica_sets, placements, decisions, deps.works],
        )
        replica_sets.add_indexer(REPLICA_SETS_BY_PLACEMENT, replica_sets_by_placement)
        replica_sets.add_indexer(REPLICA_SETS_BY_OWNER, replica_sets_by_owner)
        decisions.add_indexer(DECISIONS_BY_PLACEMENT, decisions_by_placement)
        deps.works.add_indexer(WORKS_BY_OWNER, works_by_owner)

        self._queue_replica_sets(replica_sets, lambda replica_set: [object_key(replica_set)])
        self._queue_replica_sets(deps.works, self._owners, on_delete=self.judgements.forget)
        self._queue_replica_sets(placements, self._placement_users)
        self._queue_replica_sets(decisions, self._decision_users)

    # -- event handlers: map events to keys, nothing else -------------------------------
    def _queue_replica_sets(
        self,
        informer: Informer,
        keys: Callable[[Object], list[str]],
        on_delete: Callable[[Object], None] | None = None,
    ) -> None:
        """Queue the replica sets ``keys`` maps each event's object to.

        An update queues the old object's replica sets too: a work that lost its owner
        label, or a decision moved to another placement, must still refresh its old
        replica set (the queue holds a key once, so an unchanged mapping costs nothing).
        """

        def enqueue(obj: Object) -> None:
            for key in keys(obj):
                self.queue.add(key)

        def updated(old: Object, new: Object) -> None:
            enqueue(new)
            enqueue(old)

        def deleted(obj: Object) -> None:
            if on_delete is not None:
                on_delete(obj)
            enqueue(obj)

        informer.add_handler(on_add=enqueue, on_update=updated, on_delete=deleted)

    def _owners(self, work: Object) -> list[str]:
        owner = work_owner(work)
        return self.replica_sets.store.index_keys(REPLICA_SETS_BY_OWNER, owner) if owner else []

    def _placement_users(self, placement: Object) -> list[str]:
        placement_meta = meta(placement)
        value = placement_key(
            str(placement_meta.get("namespace", "")), str(placement_meta.get("name"))
        )
        return self.replica_sets.store.index_keys(REPLICA_SETS_BY_PLACEMENT, value)

    def _decision_users(self, decision: Object) -> list[str]:
        value = decision_placement_key(decision)
        return self.replica_sets.store.index_keys(REPLICA_SETS_BY_PLACEMENT, value) if value else []

    # -- reconcile -----------------------------------------------------------------------
    def works_of(self, replica_set: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The replica set's generated works: the cache plus this controller's newer writes."""
        owner = owner_of(replica_set)
        cached = self.deps.works.store.by_index(WORKS_BY_OWNER, owner)
        return self.recent_works.overlay(owner, cached)

    async def reconcile(self, key: str) -> Result | None:
        """Bring one replica set's works and status up to date."""
        cached = self.replica_sets.store.get(key)
        if cached is None:
            namespace, _, name = key.partition("/")
            self.recent_works.forget(owner_label_value(namespace, name))
            self.own_writes.forget(key)
            return None
        replica_set = self.own_writes.latest(key, cached)
        draft = StatusDraft(replica_set, self.now())
        errors: list[KubeError] = []
        requeue_after: timedelta | None = None
        gone = False
        if is_deleting(replica_set):
            gone = await self._finalize(replica_set, errors)
        elif not _has_finalizer(replica_set):
            finalizers = meta(replica_set).get("finalizers") or []
            written = await patch_finalizers(
                self.deps.hub, replica_set, [*finalizers, MANIFEST_WORK_REPLICA_SET_FINALIZER]
            )
            self._remember(key, replica_set, written)
            return None  # the update event brings the object back
        else:
            template = Template.of(replica_set)
            outcome = await self.deploy.run(
                replica_set, self.works_of(replica_set), template, draft, draft.now
            )
            errors.extend(outcome.errors)
            requeue_after = outcome.requeue_after
            if not outcome.stop:
                works = self.works_of(replica_set)
                summarize(draft, outcome.placements, works, self.judgements, template)
            if outcome.failures:
                report_write_failures(draft, outcome.failures)

        if not gone and draft.changed():
            # NotFound: deleted meanwhile, and its delete event ends the story.
            with contextlib.suppress(NotFound):
                written = await patch_status(self.deps.hub, replica_set, draft.old, draft.to_wire())
                self._remember(key, replica_set, written)
        _raise_errors(errors)
        if requeue_after is not None and requeue_after < MAX_REQUEUE:
            # Conditions have whole-second times: never recheck sooner than that resolution.
            return Result(requeue_after=max(requeue_after.total_seconds(), 0.05))
        return None

    async def _finalize(self, replica_set: Mapping[str, Any], errors: list[KubeError]) -> bool:
        """Delete the generated works; True once the finalizer is removed."""
        works = self.works_of(replica_set)
        owner = owner_of(replica_set)
        failed = await run_writes(
            [("delete", self.writer.delete(owner, w)) for w in works if not is_deleting(w)]
        )
        errors.extend(err for _, err in failed)
        if errors or not _has_finalizer(replica_set):
            return False
        policy = (replica_set.get("spec") or {}).get("cascadeDeletionPolicy")
        if policy == "Foreground" and works:
            return False  # wait for the works' delete events
        remaining = [
            f
            for f in meta(replica_set).get("finalizers") or []
            if f != MANIFEST_WORK_REPLICA_SET_FINALIZER
        ]
        with contextlib.suppress(NotFound):
            await patch_finalizers(self.deps.hub, replica_set, remaining)
        self.recent_works.forget(owner)
        return True

    def _remember(self, key: str, before: Mapping[str, Any], written: Mapping[str, Any]) -> None:
        self.own_writes.remember(key, written, str(meta(before).get("resourceVersion", "")))


def build_replicaset_controller(
    deps: HubDeps, *, now: Clock = utc_now
) -> tuple[list[Informer], Controller]:
    """The MWRS controller and the informers it owns (replica sets, placements, decisions).

    It also indexes and watches ``deps.works``; the caller runs the returned
    informers, ``deps.works`` and the controller (the composition root does so
    when the ``ManifestWorkReplicaSet`` gate is on).
    """
    replica_sets = Informer(deps.hub, MANIFESTWORK_REPLICASETS, resync_seconds=HUB_RESYNC_SECONDS)
    placements = Informer(deps.hub, PLACEMENTS)
    decisions = Informer(deps.hub, PLACEMENT_DECISIONS)
    controller = ReplicaSetController(deps, replica_sets, placements, decisions, now=now)
    return [replica_sets, placements, decisions], controller.controller
