"""ManifestWorkController: the apply loop (spec/agent.md section 4; docs/agent.md
"The apply loop" lists its steps and where the agent goes beyond OCM).

A manifest's problems (bad input, unknown kind, 403, 422, a bug in a
strategy) stay on that manifest's condition: the others are applied, the
worker never dies, and other works are never held up.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import random
from collections.abc import Callable
from typing import Any

import structlog

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    MANIFESTWORKS,
    AlreadyExists,
    Conflict,
    KubeError,
    NotFound,
)
from ocmkit.kube.mergepatch import normalized
from ocmkit.runtime import (
    ItemExponentialFailureRateLimiter,
    Result,
    TerminalError,
    WorkQueue,
    bound_context,
)
from ocmkit.runtime.recentwrites import RecentWrites
from schemas.meta import now
from schemas.wire import (
    APPLIED_MANIFEST_WORK_FINALIZER,
    CONDITION_APPLIED,
    CONDITION_AVAILABLE,
    CONDITION_COMPLETE,
    LOGGING_ANNOTATION_PREFIX,
    REASON_APPLIED_MANIFEST_COMPLETE,
    REASON_APPLIED_MANIFEST_FAILED,
    REASON_APPLIED_MANIFEST_SSA_IGNORE_FIELD_ERROR,
    REASON_APPLIED_MANIFEST_WORK_COMPLETE,
    REASON_APPLIED_MANIFEST_WORK_FAILED,
)
from schemas.work_v1 import ManifestWorkSpec, UpdateStrategyType
from workagent.apply import ApplyRequest, IgnoreFieldsError, ServerSideApplyConflict
from workagent.conditions.reasons import MAX_MESSAGE_CHARS
from workagent.controllers.add_finalizer import has_finalizer, is_deleting, work_from_cache
from workagent.controllers.applied import (
    APPLIED_GENERATION_ANNOTATION,
    RECORDED_ANNOTATION,
    applied_generation,
    recorded_elsewhere,
    sync_applied_resources,
)
from workagent.controllers.apply_results import FillStatus, ManifestResult, object_identity
from workagent.controllers.conditions import (
    find_condition,
    find_manifest_status,
    first_manifest_status,
    is_condition_true,
    manifest_statuses,
    merge_manifest_conditions,
    new_condition,
    set_condition,
    work_condition,
)
from workagent.controllers.deps import AgentDeps
from workagent.controllers.manifestconfig import find_manifest_config, work_spec
from workagent.controllers.manifests import map_resource, parse_manifest
from workagent.controllers.metrics import APPLY_FAILURES, UNEXPECTED_FAILURE, failure_reason
from workagent.controllers.ownership import applied_work_owner, owned_by_the_work, owner_for
from workagent.controllers.patcher import patch_metadata_and_spec, patch_status
from workagent.controllers.recording import AppliedRecord, RecordingFailed, creation_record
from workagent.executor.base import NotAllowedError
from workagent.identity import applied_work_name, work_name_of

log = structlog.get_logger(__name__)

QUEUE_NAME = "manifestwork-controller"
#: Drift correction: every converged work is re-applied after 4 min x [1, 1.5).
RESYNC_SECONDS = 240.0
RESYNC_JITTER = 0.5
#: Whole-pass retries for 409 conflicts: 4 attempts, 10 ms x 5^n apart.
CONFLICT_ATTEMPTS = 4
CONFLICT_BACKOFF = 0.01
CONFLICT_FACTOR = 5


#: Writes of the work's status, each after a 409 on fresh data (a GET).
STATUS_CONFLICT_ATTEMPTS = 3


def describe_error(err: Exception) -> str:
    """The text a condition shows: an API error's own message, as Go prints it."""
    if isinstance(err, KubeError):
        return err.message or str(err)
    return str(err) or type(err).__name__


def _bounded(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - 3] + "..."


def applied_condition(result: ManifestResult, generation: int) -> dict[str, Any]:
    """The manifest-level ``Applied`` condition for one result."""
    err = result.error
    if err is None:
        status, reason = "True", REASON_APPLIED_MANIFEST_COMPLETE
        message = "Apply manifest complete"
    elif isinstance(err, IgnoreFieldsError):
        status, reason = "False", REASON_APPLIED_MANIFEST_SSA_IGNORE_FIELD_ERROR
        message = _bounded(f"Failed to process ignoreFields: {describe_error(err)}")
    else:
        status, reason = "False", REASON_APPLIED_MANIFEST_FAILED
        message = _bounded(f"Failed to apply manifest: {describe_error(err)}")
    return new_condition(CONDITION_APPLIED, status, reason, message, generation)


def build_status(
    work: dict[str, Any], results: list[ManifestResult], generation: int
) -> dict[str, Any]:
    """The work's new status after an apply pass (other conditions are kept)."""
    status = copy.deepcopy(work.get("status") or {})
    moment = now()
    # statusFeedback is always there, {} until read: OCM's agent writes the struct even empty.
    entries = [
        {
            "resourceMeta": r.meta,
            "statusFeedback": {},
            "conditions": [applied_condition(r, generation)],
        }
        for r in results
    ]
    old_manifests = (status.get("resourceStatus") or {}).get("manifests")
    merged = merge_manifest_conditions(old_manifests, entries, moment)
    resource_status = dict(status.get("resourceStatus") or {})
    resource_status["manifests"] = merged
    if not merged:
        del resource_status["manifests"]  # Go's omitempty: a work without manifests shows {}
    status["resourceStatus"] = resource_status
    if entries:
        # Only a work with manifests gets a work-level Applied condition.
        failed = any(
            c.get("type") == CONDITION_APPLIED and c.get("status") == "False"
            for entry in merged
            for c in entry.get("conditions") or []
        )
        cond = new_condition(
            CONDITION_APPLIED,
            *(
                ("False", REASON_APPLIED_MANIFEST_WORK_FAILED, "Failed to apply manifest work")
                if failed
                else ("True", REASON_APPLIED_MANIFEST_WORK_COMPLETE, "Apply manifest work complete")
            ),
            generation,
        )
        conditions = status.setdefault("conditions", [])
        set_condition(conditions, cond, moment)
    return status


def _may_create(spec: ManifestWorkSpec, entry: dict[str, Any]) -> bool:
    """Whether applying the manifest of an applied-resource entry may create its object."""
    option = find_manifest_config(
        spec.manifest_configs, entry["group"], entry["resource"], entry["namespace"], entry["name"]
    )
    strategy = option.update_strategy if option is not None else None
    return strategy is None or strategy.type != UpdateStrategyType.READ_ONLY


def _applied_condition(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    return find_condition(entry.get("conditions") if entry else None, CONDITION_APPLIED)


def _complete(work: dict[str, Any]) -> bool:
    return is_condition_true((work.get("status") or {}).get("conditions"), CONDITION_COMPLETE)


def _at_this_generation(work: dict[str, Any], condition: dict[str, Any]) -> bool:
    return bool(condition.get("observedGeneration") == work["metadata"].get("generation"))


def _failed_at_this_generation(work: dict[str, Any], result: ManifestResult) -> bool:
    """Whether the work's status says the last apply of ``result``'s manifest, at the
    work's current generation, failed (``Applied`` False)."""
    applied = _applied_condition(find_manifest_status(manifest_statuses(work), result.meta))
    return (
        applied is not None
        and applied.get("status") == "False"
        and _at_this_generation(work, applied)
    )


def _may_have_changed(
    work: dict[str, Any], entry: dict[str, Any] | None, applied_at: int | None
) -> bool:
    """Whether the manifest was applied before but maybe not at this generation.

    The status tells first. Without an ``Applied`` condition, ``applied_at`` tells:
    the generation the AppliedManifestWork records as applied whole, given only
    for a grpc/mqtt work after a restart (it comes without status). None (the kube
    driver, a new work or manifest, nothing recorded) says nothing: a recall then
    would cost a dry run per object at every restart, and a new manifest's object,
    even one that exists, was not applied by this work.
    """
    applied = _applied_condition(entry)
    if applied is None:
        return applied_at is not None and applied_at != int(work["metadata"].get("generation") or 0)
    return not (applied.get("status") == "True" and _at_this_generation(work, applied))


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _log_fields(work: dict[str, Any]) -> dict[str, Any]:
    """Log context of a work: its name plus its ``logging.open-cluster-management.io/`` pairs."""
    fields: dict[str, Any] = {"work": work["metadata"]["name"]}
    for key, value in ((work.get("metadata") or {}).get("annotations") or {}).items():
        if key.startswith(LOGGING_ANNOTATION_PREFIX) and len(key) > len(LOGGING_ANNOTATION_PREFIX):
            fields.setdefault(key[len(LOGGING_ANNOTATION_PREFIX) :], value)
    return fields


class ManifestWorkController:
    """Applies ManifestWorks of the cluster namespace to the managed cluster.

    ``fill_status`` (the status controller's ``fill_after_apply``) lets the
    pass that first applies a generation write ``Available`` and the feedback
    in its own status patch. Register :attr:`controller` with the Manager.
    """

    def __init__(self, deps: AgentDeps, *, fill_status: FillStatus | None = None) -> None:
        self.deps = deps
        self._fill_status = fill_status
        self.queue = WorkQueue(QUEUE_NAME)
        self.controller = deps.controller(
            QUEUE_NAME, self.queue, self.reconcile, deps.works, deps.applied
        )
        # Works queued by an event since their last pass began (the others are
        # periodic drift-correction passes, which may compare with a recent list).
        self._evented: set[str] = set()
        # Per-work delay while deleted stale resources are still finalizing.
        self._pending_backoff = ItemExponentialFailureRateLimiter(0.005, 1000.0)
        # Our writes the informers may not have delivered yet (works; applied works).
        # Each entry is dropped when its informer shows the write: an idle work is
        # not reconciled again, and would otherwise keep a whole object here.
        self._works_written = RecentWrites(lambda name: work_from_cache(deps, name))
        self._applied_written = RecentWrites(
            lambda name: deps.applied.store.get(applied_work_name(deps.hub_hash, name))
        )
        deps.works.add_handler(on_add=self._on_add, on_update=self._on_update)
        deps.applied.add_handler(
            on_add=self._on_applied,
            on_update=lambda _old, new: self._on_applied(new),
            on_delete=self._on_applied_delete,
        )

    # -- triggers (4.1) ---------------------------------------------------------------
    def _on_event(self, name: str) -> None:
        # A pass an event asks for reads every object: the drift correction it may be
        # about (someone touched the work to have it re-applied) sees the live state.
        self._evented.add(name)
        self.queue.add(name)

    def reapply(self, name: str) -> None:
        """Apply work ``name`` again now, reading every object: one it applied is gone
        from the cluster (the status controller saw it). OCM's agent waits for its
        periodic resync (4 to 6 min)."""
        self._on_event(name)

    def _on_add(self, obj: dict[str, Any]) -> None:
        if has_finalizer(obj):
            self._on_event(obj["metadata"]["name"])

    def _on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        name = new["metadata"]["name"]
        self._works_written.settle(name)
        if not has_finalizer(new):
            return
        if not has_finalizer(old):
            self._on_event(name)
            return
        if _complete(old) and not _complete(new):
            # No longer frozen: a spec that came while it was is applied now (OCM's
            # agent does at its periodic resync, 4 to 6 min later).
            self._on_event(name)
            return
        spec_changed = normalized(old.get("spec")) != normalized(new.get("spec"))
        if spec_changed or _labels(old) != _labels(new):
            # A new spec must not wait out the backoff of failures of the old one.
            self.queue.forget(name)
            self._on_event(name)

    def _on_applied(self, obj: dict[str, Any]) -> None:
        work_name = work_name_of(self.deps.hub_hash, obj["metadata"]["name"])
        if work_name is not None:
            self._applied_written.settle(work_name)

    def _on_applied_delete(self, obj: dict[str, Any]) -> None:
        # Beyond OCM, which waits for the periodic resync: a work whose
        # AppliedManifestWork vanished (deleted by hand, evicted) is re-applied now.
        work_name = work_name_of(self.deps.hub_hash, obj["metadata"]["name"])
        if work_name is not None and work_from_cache(self.deps, work_name) is not None:
            self._on_event(work_name)

    # -- reconcile ----------------------------------------------------------------------
    async def reconcile(self, key: str) -> Result | None:
        """Apply work ``key`` and report (docs/agent.md, "The apply loop")."""
        evented = key in self._evented
        self._evented.discard(key)
        cached = self._works_written.latest(key, work_from_cache(self.deps, key))
        if cached is None:
            self._works_written.forget(key)
            self._applied_written.forget(key)
            return None
        if is_deleting(cached) or not has_finalizer(cached):
            return None
        if _complete(cached):
            return None  # a completed work is frozen (until it is not: _on_update)
        with bound_context(**_log_fields(cached)):
            return await self._sync(cached, use_lists=not evented)

    async def _sync(self, cached: dict[str, Any], *, use_lists: bool) -> Result | None:
        deps = self.deps
        work = copy.deepcopy(cached)
        try:
            spec, manifests = work_spec(work)
        except ValueError as err:
            # The hub validated it with the same schema; only a foreign writer gets here.
            raise TerminalError(f"unreadable spec: {err}") from err
        generation = int(work["metadata"].get("generation") or 0)

        name = cached["metadata"]["name"]
        results = [parse_manifest(i, raw) for i, raw in enumerate(manifests)]

        creates = functools.partial(_may_create, spec)
        applied_work, created = await self._ensure_applied_work(work, results, creates)
        # After a restart, works from grpc/mqtt come without status: the record tells.
        restarted = (
            not created
            and deps.settings.workload_source_driver != "kube"
            and not manifest_statuses(work)
        )
        applied_at = applied_generation(applied_work) if restarted else None
        record = AppliedRecord(
            applied_work,
            deps.mapper,
            deps.work_client,
            creates=creates,
            retrying=functools.partial(_failed_at_this_generation, work),
            on_written=lambda before, after: self._applied_written.remember(name, before, after),
        )
        try:
            await self._apply_with_conflict_retry(
                work, spec, results, record, use_lists, applied_at
            )
        except RecordingFailed as err:
            # Nothing unrecorded was created; report nothing half-done, retry with backoff.
            log.warning(
                "not applying, will retry", error=str(err), retries=self.queue.num_requeues(name)
            )
            return Result(requeue=True, at_least=float(err.retry_after or 0.0))
        applied_work = record.applied_work
        for result in results:
            if result.error is not None:
                APPLY_FAILURES.labels(failure_reason(result.error)).inc()

        work["status"] = await self._new_status(work, results, generation)
        bookkeeping = await sync_applied_resources(
            deps, work, applied_work, results, self._pending_backoff
        )

        # 4.7: hub status first, then the AppliedManifestWork status. The latter is
        # written even when the former fails: it records what this pass did on the
        # spoke (objects deleted as stale, new UIDs), and a record left behind would
        # let the next pass mistake an object it re-creates for someone else's.
        try:
            written = await self._write_work_status(cached, work["status"], results, generation)
        except NotFound:
            await self._write_applied_resources(name, applied_work, bookkeeping.applied_resources)
            return None  # deleted meanwhile; the finalizer controllers take over
        except Exception:
            try:
                await self._write_applied_resources(
                    name, applied_work, bookkeeping.applied_resources
                )
            except KubeError as err:  # the status write's error is the one to report
                log.warning("cannot record applied resources", error=describe_error(err))
            raise
        if written is not None:
            log.info("updated status")
        await self._write_applied_resources(name, applied_work, bookkeeping.applied_resources)
        if all(result.error is None and not result.completed for result in results):
            await self._record_applied_generation(cached, applied_work, generation)

        errors, requeues = self._classify(results)
        if bookkeeping.error is not None:
            errors.append(bookkeeping.error)
        if errors:
            # Expected failures, already reported on the work: retry with backoff
            # without a traceback (a raised non-API error would log one).
            log.warning(
                "manifests failed, will retry",
                errors=[describe_error(e) for e in errors],
                retries=self.queue.num_requeues(name),
            )
            # A throttled write waits for the server's Retry-After, not just the backoff.
            retry_after = max(
                (float(getattr(e, "retry_after", None) or 0.0) for e in errors), default=0.0
            )
            return Result(requeue=True, at_least=retry_after)
        delays = [RESYNC_SECONDS * (1 + random.random() * RESYNC_JITTER), *requeues]
        if bookkeeping.requeue_after is not None:
            delays.append(bookkeeping.requeue_after)
        return Result(requeue_after=min(delays))

    async def _write_applied_resources(
        self, name: str, applied_work: dict[str, Any], resources: list[dict[str, Any]] | None
    ) -> None:
        """Record the pass's applied resources in the AppliedManifestWork (None: no change)."""
        if resources is None:
            return
        amw_status = copy.deepcopy(applied_work.get("status") or {})
        amw_status["appliedResources"] = resources
        written = await patch_status(
            self.deps.work_client, APPLIED_MANIFESTWORKS, applied_work, amw_status
        )
        if written is not None:
            self._applied_written.remember(name, applied_work, written)
            log.info("updated applied resources", count=len(resources))

    async def _record_applied_generation(
        self, cached: dict[str, Any], applied_work: dict[str, Any], generation: int
    ) -> None:
        """On grpc/mqtt, record that every manifest of ``generation`` is applied and
        reported (:data:`APPLIED_GENERATION_ANNOTATION`): one write per generation.

        Recorded where it is kept up to date already (our AppliedManifestWorks are
        created with ``0``) and where this process applied an older generation (the
        status it wrote says so), never on taking over a work as it is: a restart
        or a handover from OCM's agent writes nothing. Only the annotation is
        patched, with no resourceVersion precondition: a concurrent status write
        cannot make it fail, and only this agent writes it. A failed write is logged:
        a record kept up to date is written again at the next pass; without one, the
        work goes unrecorded (not recalled after a restart) until its next generation.
        """
        deps = self.deps
        if deps.settings.workload_source_driver == "kube":
            return  # the hub keeps every manifest's Applied condition across restarts
        name = cached["metadata"]["name"]
        amw_name = applied_work["metadata"]["name"]
        current = self._applied_written.latest(name, deps.applied.store.get(amw_name))
        current = current or applied_work
        recorded = applied_generation(current)
        if recorded == generation or current["metadata"].get("deletionTimestamp"):
            return
        applied = work_condition(cached, CONDITION_APPLIED)
        if recorded is None and (applied is None or _at_this_generation(cached, applied)):
            return
        patch = {
            "metadata": {
                "uid": current["metadata"].get("uid"),
                "annotations": {APPLIED_GENERATION_ANNOTATION: str(generation)},
            }
        }
        try:
            written = await deps.work_client.patch(
                APPLIED_MANIFESTWORKS, amw_name, patch, patch_type="merge"
            )
        except KubeError as err:
            log.info("cannot record the applied generation", error=describe_error(err))
            return
        self._applied_written.remember(name, current, written)

    async def _write_work_status(
        self,
        cached: dict[str, Any],
        status: dict[str, Any],
        results: list[ManifestResult],
        generation: int,
    ) -> dict[str, Any] | None:
        """Patch the work's status; on a 409, rebuild it on the work as it is now and retry.

        The status controller writes the same status (``Available``, feedback)
        whenever a work changes, so our write often loses the race by a few
        milliseconds. The outcome of the apply pass does not depend on what it
        wrote: a GET and a second patch beat failing the reconcile and waiting
        out its backoff. A new generation is not ours to report: its own
        reconcile does.
        """
        name = cached["metadata"]["name"]
        base = cached
        for attempt in range(STATUS_CONFLICT_ATTEMPTS):
            try:
                written = await patch_status(self.deps.hub, MANIFESTWORKS, base, status)
            except Conflict:
                if attempt + 1 == STATUS_CONFLICT_ATTEMPTS:
                    raise
                fresh = await self.deps.hub.get(
                    MANIFESTWORKS, name, base["metadata"].get("namespace")
                )
                if int(fresh["metadata"].get("generation") or 0) != generation:
                    raise
                log.debug("status written meanwhile, merging the apply results into it")
                base, status = fresh, await self._new_status(fresh, results, generation)
                continue
            if written is not None:
                self._works_written.remember(name, base, written)
            return written
        return None  # not reached: the last attempt returns or raises

    async def _new_status(
        self, work: dict[str, Any], results: list[ManifestResult], generation: int
    ) -> dict[str, Any]:
        """The status this pass writes: ``Applied`` and, while the work's ``Available``
        is not of this generation yet, what the status controller would add to it."""
        status = build_status(work, results, generation)
        fill = self._fill_status
        available = work_condition(work, CONDITION_AVAILABLE)
        if fill is None or (
            available is not None and int(available.get("observedGeneration") or 0) == generation
        ):
            return status
        # Only objects the server returned: a ReadOnly manifest whose object is missing
        # comes back as the manifest itself, without a uid, and is not available.
        objects = {
            object_identity(r.meta): r.obj
            for r in results
            if r.error is None
            and r.obj is not None
            and r.resource is not None
            and (r.obj.get("metadata") or {}).get("uid")
        }
        candidate = {**work, "status": status}
        await fill(candidate, objects)
        return dict(candidate["status"])

    @staticmethod
    def _classify(results: list[ManifestResult]) -> tuple[list[Exception], list[float]]:
        """Errors that fail the sync, and requeue delays asked for by "not allowed" ones."""
        errors: list[Exception] = []
        requeues: list[float] = []
        for result in results:
            err = result.error
            if err is None:
                continue
            if isinstance(err, NotAllowedError):
                requeues.append(err.requeue_after)
            elif isinstance(err, ServerSideApplyConflict):
                continue  # shown in the condition; the periodic resync retries
            else:
                errors.append(err)
        return errors, requeues

    # -- the AppliedManifestWork (4.3) ------------------------------------------------
    async def _ensure_applied_work(
        self,
        work: dict[str, Any],
        results: list[ManifestResult],
        creates: Callable[[dict[str, Any]], bool],
    ) -> tuple[dict[str, Any], bool]:
        """The work's AppliedManifestWork, created if missing (recording ``results``,
        :func:`~workagent.controllers.recording.creation_record`) or brought up to date,
        and whether this call created it."""
        deps = self.deps
        work_name = work["metadata"]["name"]
        name = applied_work_name(deps.hub_hash, work_name)
        spec = {"hubHash": deps.hub_hash, "manifestWorkName": work_name, "agentID": deps.agent_id}
        labels = _labels(work)
        existing = self._applied_written.latest(work_name, deps.applied.store.get(name))
        if existing is None:
            metadata: dict[str, Any] = {
                "name": name,
                "finalizers": [APPLIED_MANIFEST_WORK_FINALIZER],
            }
            if labels:
                metadata["labels"] = labels
            annotations: dict[str, str] = {}
            recorded = await creation_record(deps.mapper, results, creates)
            if recorded is not None:
                # The create is the record of what this pass is about to create.
                annotations[RECORDED_ANNOTATION] = recorded
            if deps.settings.workload_source_driver != "kube":
                annotations[APPLIED_GENERATION_ANNOTATION] = "0"  # nothing applied yet
            if annotations:
                metadata["annotations"] = annotations
            body = {
                "apiVersion": APPLIED_MANIFESTWORKS.api_version,
                "kind": APPLIED_MANIFESTWORKS.kind,
                "metadata": metadata,
                "spec": spec,
            }
            try:
                # Not remembered: while our cache lacks it, a second create answers
                # AlreadyExists and we read it (remembering "absent" could outlive it).
                created = await deps.work_client.create(APPLIED_MANIFESTWORKS, body)
                log.info("created appliedmanifestwork", appliedmanifestwork=name)
                return created, True
            except AlreadyExists:
                # Our cache lags behind our own create: read it once.
                existing = await deps.work_client.get(APPLIED_MANIFESTWORKS, name)
        patched = await patch_metadata_and_spec(
            deps.work_client, APPLIED_MANIFESTWORKS, existing, labels=labels, spec=spec
        )
        if patched is not None:
            self._applied_written.remember(work_name, existing, patched)
            log.info("updated appliedmanifestwork", appliedmanifestwork=name)
            return patched, False
        return existing, False

    # -- applying (4.4) ---------------------------------------------------------------
    async def _apply_with_conflict_retry(
        self,
        work: dict[str, Any],
        spec: ManifestWorkSpec,
        results: list[ManifestResult],
        record: AppliedRecord,
        use_lists: bool,
        applied_at: int | None,
    ) -> None:
        """Apply the parsed ``results`` in place (their ``obj`` and ``error``); with
        ``use_lists`` the first attempt compares with recently listed objects;
        ``applied_at`` is what a restart's record says (:func:`_may_have_changed`)."""
        todo = [r for r in results if r.required is not None]
        delay = CONFLICT_BACKOFF
        for attempt in range(CONFLICT_ATTEMPTS):
            for result in sorted(todo, key=lambda r: (r.rank, r.ordinal)):
                # After a 409 every object is read again, never taken from a list.
                await self._apply_one(
                    work,
                    spec,
                    record,
                    result,
                    results,
                    listed=use_lists and attempt == 0,
                    applied_at=applied_at,
                )
            todo = [
                r
                for r in results
                if r.required is not None and (r.obj is None or isinstance(r.error, Conflict))
            ]
            if not any(isinstance(r.error, Conflict) for r in todo):
                break
            if attempt + 1 < CONFLICT_ATTEMPTS:
                log.info("conflict while applying, retrying the pass", delay_seconds=delay)
                await asyncio.sleep(delay)
                delay *= CONFLICT_FACTOR

    async def _apply_one(
        self,
        work: dict[str, Any],
        spec: ManifestWorkSpec,
        record: AppliedRecord,
        result: ManifestResult,
        results: list[ManifestResult],
        *,
        listed: bool = True,
        applied_at: int | None = None,
    ) -> None:
        deps = self.deps
        meta = result.meta
        result.obj, result.error = None, None
        try:
            await map_resource(deps.mapper, result)
            assert result.resource is not None and result.required is not None
            old = first_manifest_status(manifest_statuses(work), meta)
            if old is not None and is_condition_true(old.get("conditions"), CONDITION_COMPLETE):
                result.obj = result.required  # finished: never touched again
                result.completed = True
                return
            group, resource = meta["group"], meta["resource"]
            namespace, name = meta["namespace"], meta["name"]
            owned = owned_by_the_work(group, resource, namespace, name, spec.delete_option)
            await deps.executor.validate(
                spec.executor, result.resource, result.required, owned_by_work=owned
            )
            owner = owner_for(applied_work_owner(record.applied_work), owned)
            option = find_manifest_config(spec.manifest_configs, group, resource, namespace, name)
            strategy = option.update_strategy if option is not None else None
            await record.ensure(result, results)
            applier = deps.applier_for(strategy)
            create_first = not record.seen_existing(result)
            # A drift-correction pass compares with the status syncs' recent list (no GET).
            known = (
                deps.polled_reads.fresh(
                    result.resource, namespace, name, interval=deps.settings.status_sync_interval
                )
                if listed and not create_first
                else None
            )
            result.obj = await applier.apply(
                ApplyRequest(
                    resource=result.resource,
                    required=copy.deepcopy(result.required),
                    owner=owner,
                    option=option,
                    work_name=work["metadata"]["name"],
                    create_first=create_first,
                    known=known,
                    # After a restart, status is all that tells what the agent applied;
                    # what another work applies too is not this manifest's to recall.
                    may_have_changed=_may_have_changed(work, old, applied_at)
                    and not recorded_elsewhere(
                        deps.applied.store.list(), record.applied_work["metadata"]["name"], meta
                    ),
                )
            )
            # The status controller's next read of it need not be older than this.
            deps.polled_reads.note_applied(result.resource, namespace, result.obj)
        except (asyncio.CancelledError, RecordingFailed):
            raise
        except Exception as err:
            result.error = err
            fields = {
                "ordinal": result.ordinal,
                "manifest_kind": meta.get("kind"),
                "manifest_name": meta.get("name"),
                "error": describe_error(err),
            }
            if failure_reason(err) != UNEXPECTED_FAILURE:
                # Reported on the manifest: no warning, no traceback.
                log.info("manifest not applied", **fields)
            else:
                # A strategy bug must cost this manifest only, never the worker.
                log.warning("manifest apply failed unexpectedly", **fields, exc_info=True)
