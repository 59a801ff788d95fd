"""ManifestWorkAddFinalizerController (spec/agent.md section 3).

Puts ``cluster.open-cluster-management.io/manifest-work-cleanup`` on every
ManifestWork of the cluster namespace that is not being deleted, so the hub
object cannot disappear before the agent has cleaned up after it. No other
controller acts on a work until the finalizer is there.
"""

from __future__ import annotations

from typing import Any

import structlog

from ocmkit.kube import MANIFESTWORKS, NotFound
from ocmkit.runtime import Controller, Result, WorkQueue
from schemas.wire import MANIFEST_WORK_FINALIZER
from workagent.controllers.deps import AgentDeps
from workagent.controllers.patcher import patch_metadata_and_spec

log = structlog.get_logger(__name__)

QUEUE_NAME = "ManifestWorkAddFinalizerController"


def has_finalizer(obj: dict[str, Any], finalizer: str = MANIFEST_WORK_FINALIZER) -> bool:
    """Whether ``obj`` carries ``finalizer``."""
    return finalizer in ((obj.get("metadata") or {}).get("finalizers") or [])


def is_deleting(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` has a deletionTimestamp."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def work_from_cache(deps: AgentDeps, name: str) -> dict[str, Any] | None:
    """The cached ManifestWork ``name`` of the cluster namespace, or None."""
    return deps.works.store.get(f"{deps.settings.cluster_name}/{name}")


class AddFinalizerController:
    """Adds the ManifestWork cleanup finalizer; one worker, as in OCM.

    Register :attr:`controller` with the Manager.
    """

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps
        self.queue = WorkQueue(QUEUE_NAME)
        self.controller = Controller(
            QUEUE_NAME, self.queue, self.reconcile, workers=1, depends_on=[deps.works]
        )
        deps.works.add_handler(
            on_add=self._enqueue,
            on_update=lambda _old, new: self._enqueue(new),
            on_delete=self._enqueue,
        )

    def _enqueue(self, obj: dict[str, Any]) -> None:
        # Only the states that need work: skip the common case at the handler.
        if not is_deleting(obj) and not has_finalizer(obj):
            self.queue.add(obj["metadata"]["name"])

    async def reconcile(self, key: str) -> Result | None:
        """Append the finalizer (merge patch with uid/resourceVersion preconditions)."""
        work = work_from_cache(self.deps, key)
        if work is None or is_deleting(work) or has_finalizer(work):
            return None
        finalizers = [*(work["metadata"].get("finalizers") or []), MANIFEST_WORK_FINALIZER]
        try:
            await patch_metadata_and_spec(self.deps.hub, MANIFESTWORKS, work, finalizers=finalizers)
        except NotFound:
            return None  # deleted meanwhile; nothing to protect
        log.info("added finalizer", finalizer=MANIFEST_WORK_FINALIZER)
        return None
