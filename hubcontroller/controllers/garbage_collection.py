"""Garbage collection of completed ManifestWorks after ``ttlSecondsAfterFinished``.

OCM's ``ManifestWorkGarbageCollectionController`` (gate
``CleanUpCompletedManifestWork``): a ManifestWork whose ``Complete`` condition
is True and that sets ``spec.deleteOption.ttlSecondsAfterFinished`` is deleted
from the hub that many seconds after the condition's ``lastTransitionTime``;
until then its key is requeued for the remaining time. The agent then runs the
normal deletion flow (Foreground/Orphan rules still apply).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

import structlog

from hubcontroller.controllers.replicaset_works import find_condition, transition_time
from hubcontroller.deps import Clock, HubDeps, utc_now
from hubcontroller.metrics import TTL_DELETIONS
from ocmkit.kube import MANIFESTWORKS, Conflict, KubeClient, NotFound
from ocmkit.runtime import Controller, Informer, Object, Result, WorkQueue, object_key
from schemas.wire import CONDITION_COMPLETE, MANIFEST_WORK_REPLICA_SET_LABEL

log = structlog.get_logger(__name__)

#: The queue and controller name, as OCM's (it labels the workqueue_* metrics).
CONTROLLER_NAME = "ManifestWorkGarbageCollectionController"


class Action(Enum):
    """What the collector does with one work."""

    KEEP = "keep"  # not ours to delete (now or ever, until the work changes)
    WAIT = "wait"  # complete, TTL not yet elapsed: look again after ``delay``
    DELETE = "delete"  # TTL elapsed (or <= 0): delete the work


@dataclass(frozen=True)
class Verdict:
    """The decision about one work and why (``reason`` is for logs)."""

    action: Action
    reason: str
    delay: float = 0.0  # seconds, for WAIT


def _ttl_seconds(work: Mapping[str, Any]) -> int | None:
    option = (work.get("spec") or {}).get("deleteOption")
    if not isinstance(option, Mapping):
        return None
    ttl = option.get("ttlSecondsAfterFinished")
    # The CRD makes it an int64; anything else is treated as absent.
    if isinstance(ttl, bool) or not isinstance(ttl, int):
        return None
    return ttl


def collection_verdict(work: Mapping[str, Any], now: datetime) -> Verdict:
    """Decide what to do with ``work`` at ``now`` (an aware datetime), checked in OCM's order."""
    metadata = work.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return Verdict(Action.KEEP, "being deleted")
    if MANIFEST_WORK_REPLICA_SET_LABEL in (metadata.get("labels") or {}):
        return Verdict(Action.KEEP, "owned by a ManifestWorkReplicaSet")
    ttl = _ttl_seconds(work)
    if ttl is None:
        return Verdict(Action.KEEP, "no ttlSecondsAfterFinished")
    complete = find_condition(work, CONDITION_COMPLETE)
    if complete is None or complete.get("status") != "True":
        return Verdict(Action.KEEP, "not complete")
    if ttl > 0:
        completed_at = transition_time(complete)
        # A Complete condition without a readable lastTransitionTime (the CRD requires
        # one) counts as completed long ago, as Go's zero time does in OCM.
        if completed_at is not None:
            remaining = (completed_at - now).total_seconds() + ttl
            if remaining > 0:
                return Verdict(Action.WAIT, "ttl not reached", delay=remaining)
    return Verdict(Action.DELETE, f"complete and ttl of {ttl}s elapsed")


class ManifestWorkGarbageCollector:
    """The reconcile of :data:`CONTROLLER_NAME`: keys are ``namespace/name`` of works.

    ``works`` is the shared all-namespaces ManifestWork informer; deletes go
    through ``client``, the ManifestWork client (:attr:`HubDeps.works_client`).
    """

    def __init__(self, works: Informer, client: KubeClient, *, now: Clock = utc_now) -> None:
        self._works = works
        self._client = client
        self._now = now

    async def reconcile(self, key: str) -> Result | None:
        """Delete the work if its TTL elapsed; requeue for the rest of it otherwise."""
        work = self._works.store.get(key)
        if work is None:
            return None
        verdict = collection_verdict(work, self._now())
        if verdict.action is Action.KEEP:
            return None
        if verdict.action is Action.WAIT:
            log.debug("ttl not reached yet", requeue_after_seconds=round(verdict.delay, 3))
            return Result(requeue_after=verdict.delay)
        await self._delete(work, verdict)
        return None

    async def _delete(self, work: Object, verdict: Verdict) -> None:
        metadata = work["metadata"]
        name, namespace = metadata["name"], metadata.get("namespace")
        uid = metadata.get("uid")
        log.info("deleting completed ManifestWork", reason=verdict.reason)
        try:
            # The uid precondition guards against a race OCM leaves open: a work
            # deleted and re-created under the same name before this cache saw it
            # must not be deleted on the strength of its predecessor's status.
            await self._client.delete(
                MANIFESTWORKS, name, namespace, preconditions={"uid": uid} if uid else None
            )
        except NotFound:
            return  # already gone: nothing left to do
        except Conflict:
            # Another object holds the name now; its own events bring it here.
            log.info("work was replaced before it could be deleted, leaving the new one")
            return
        TTL_DELETIONS.inc()


def garbage_collection_controller(deps: HubDeps, *, now: Clock = utc_now) -> Controller:
    """The ManifestWork TTL garbage collector, with ``deps.workers`` workers.

    Registers its event handlers on ``deps.works`` (which must not have been
    started yet for the initial adds to reach it, as with any handler).
    """
    queue = WorkQueue(CONTROLLER_NAME)

    def enqueue(work: Object) -> None:
        queue.add(object_key(work))

    # Deletions need no handler: a vanished work has nothing left to collect, and
    # a pending requeue for it finds it missing from the cache and stops.
    deps.works.add_handler(on_add=enqueue, on_update=lambda _old, new: enqueue(new))
    collector = ManifestWorkGarbageCollector(deps.works, deps.works_client, now=now)
    return Controller(
        CONTROLLER_NAME, queue, collector.reconcile, workers=deps.workers, depends_on=[deps.works]
    )
