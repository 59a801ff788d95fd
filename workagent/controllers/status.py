"""AvailableStatusController: status of the applied resources (spec/agent.md §10-§14).

docs/agent.md ("The status controller") says what a sync reports and when
it runs. When an object cannot be read, its entry's other conditions, values
and watch registration stay as they are; everything else is recomputed.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import structlog

from ocmkit.kube import MANIFESTWORKS, Conflict, KubeError, NotFound, Resource
from ocmkit.kube.mergepatch import normalized
from ocmkit.runtime import Object, Result, TerminalError, WorkQueue, bound_context
from ocmkit.runtime.recentwrites import RecentWrites
from schemas.meta import now
from schemas.wire import (
    CONDITION_APPLIED,
    CONDITION_AVAILABLE,
    CONDITION_COMPLETE,
    CONDITION_RULE_REASON_PREFIX,
    CONDITION_STATUS_FEEDBACK_SYNCED,
    REASON_FETCHING_RESOURCE_FAILED,
    REASON_INCOMPLETE_RESOURCE_META,
    REASON_RESOURCE_AVAILABLE,
    REASON_RESOURCE_NOT_AVAILABLE,
    REASON_STATUS_FEEDBACK_SYNC_FAILED,
)
from schemas.work_v1 import (
    FeedbackScrapeType,
    ManifestConfigOption,
    ManifestWorkSpec,
    UpdateStrategyType,
)
from workagent.conditions.aggregate import aggregate, aggregate_available
from workagent.conditions.reasons import REASON_AGGREGATED
from workagent.conditions.rules import evaluate_rules, is_condition_type
from workagent.controllers.add_finalizer import has_finalizer, is_deleting, work_from_cache
from workagent.controllers.apply_results import ObjectIdentity, object_identity
from workagent.controllers.conditions import (
    Condition,
    is_condition_true,
    manifest_statuses,
    new_condition,
    remove_condition,
    set_condition,
    work_condition,
)
from workagent.controllers.deletion import resource_of
from workagent.controllers.deps import AgentDeps
from workagent.controllers.managedfields import reads_managed_fields
from workagent.controllers.manifestconfig import find_manifest_config, work_spec
from workagent.controllers.manifestwork import _log_fields, describe_error
from workagent.controllers.metrics import MODE_POLL, MODE_WATCH
from workagent.controllers.patcher import patch_status
from workagent.feedback import is_cheap, read_feedback
from workagent.identity import applied_work_name
from workagent.settings import FEATURE_RAW_FEEDBACK_JSON_STRING
from workagent.watchpool import FeedbackWatchPool

log = structlog.get_logger(__name__)

QUEUE_NAME = "AvailableStatusController"
#: Hub ManifestWork index: the objects a work lists in its status.
BY_WORK_INDEX = "byWorkIndex"
#: The status sync period is the interval x [1 - STATUS_JITTER, 1).
STATUS_JITTER = 0.2
#: Most bytes of status feedback values (as JSON) one work reports. A feedback
#: path may select any field, e.g. a String of megabytes; without a bound the
#: status patch would exceed the hub's request limit (3 MiB) or etcd's object
#: limit (1.5 MiB by default) and fail on every sync, leaving the whole work's
#: status stale with no word as to why. This leaves room for the spec (at most
#: 500 KiB of manifests by default) and the conditions of 1,000 manifests.
MAX_FEEDBACK_BYTES = 512 * 1024


def resource_index_key(group: str, resource: str, version: str, namespace: str, name: str) -> str:
    """The ``byWorkIndex`` value of one object: ``group/resource/version/namespace/name``."""
    return f"{group}/{resource}/{version}/{namespace}/{name}"


def index_by_resource(work: Object) -> list[str]:
    """Index function: every object listed in ``status.resourceStatus.manifests``."""
    keys = []
    for entry in manifest_statuses(work):
        group, version, resource, namespace, name = object_identity(entry.get("resourceMeta") or {})
        keys.append(resource_index_key(group, resource, version, namespace, name))
    return keys


@dataclass(frozen=True)
class ReadOutcome:
    """A live read: the object (None when it could not be read) and its ``Available``.

    ``mode`` says how it was read: ``watch`` (the watch pool's cache), ``poll``
    (a GET or a coalesced LIST), or None when nothing could be asked.
    """

    obj: Object | None
    available: Condition
    mode: str | None = None


def _available(status: str, reason: str, message: str) -> Condition:
    # Manifest-level Available carries no observedGeneration (section 9).
    return new_condition(CONDITION_AVAILABLE, status, reason, message, None)


# Shared: set_condition copies what it merges.
_AVAILABLE: Final = _available("True", REASON_RESOURCE_AVAILABLE, "Resource is available")
_NOT_AVAILABLE: Final = _available(
    "False", REASON_RESOURCE_NOT_AVAILABLE, "Resource is not available"
)
_INCOMPLETE: Final = _available(
    "Unknown", REASON_INCOMPLETE_RESOURCE_META, "Resource meta is incomplete"
)


def _is_rule_condition(cond: Condition) -> bool:
    return str(cond.get("reason") or "").startswith(CONDITION_RULE_REASON_PREFIX)


def drop_stale_rule_conditions(conditions: list[Condition], generation: int) -> None:
    """Remove rule-made conditions of another generation (their rule left the spec)."""
    conditions[:] = [
        c
        for c in conditions
        if not (_is_rule_condition(c) and int(c.get("observedGeneration") or 0) != generation)
    ]


class AvailableStatusController:
    """Reports availability, status feedback and condition rules of applied resources."""

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps
        self.pool: FeedbackWatchPool | None = deps.watch_pool
        self.queue = WorkQueue(QUEUE_NAME)
        self.controller = deps.controller(QUEUE_NAME, self.queue, self.reconcile, deps.works)
        self._written = RecentWrites(lambda name: work_from_cache(deps, name))
        #: Called with a work's name when an object it applied is gone (the apply
        #: loop's :meth:`reapply`); None: left to the apply loop's periodic resync.
        self.on_gone: Callable[[str], None] | None = None
        self._gone_since: dict[str, dict[ObjectIdentity, float]] = {}
        deps.works.add_indexer(BY_WORK_INDEX, index_by_resource)
        deps.works.add_handler(
            on_add=self._enqueue,
            on_update=lambda _old, new: self._on_update(new),
            on_delete=self._enqueue,
        )
        if self.pool is not None:
            self.pool.add_listener(self._on_watched_object)
        # A coalesced list that shows an object changed syncs its works at once.
        deps.polled_reads.add_listener(self._on_listed_change)

    # -- triggers ----------------------------------------------------------------------
    def _enqueue(self, work: Object) -> None:
        self.queue.add(str(work["metadata"]["name"]))

    def _on_update(self, work: Object) -> None:
        self._written.settle(str(work["metadata"]["name"]))
        self._enqueue(work)

    def _on_watched_object(self, group: str, version: str, resource: str, obj: Object) -> None:
        meta = obj.get("metadata") or {}
        key = resource_index_key(
            group,
            resource,
            version,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )
        for work in self.deps.works.store.by_index(BY_WORK_INDEX, key):
            self._enqueue(work)

    def _on_listed_change(self, res: Resource, _namespace: str, obj: Object) -> None:
        self._on_watched_object(res.group, res.version, res.plural, obj)

    # -- reconcile ----------------------------------------------------------------------
    async def reconcile(self, key: str) -> Result | None:
        """Sync the status of work ``key`` (docs/agent.md, "The status controller")."""
        cached = self._written.latest(key, work_from_cache(self.deps, key))
        syncs = self.deps.status_syncs
        if cached is None:
            self._written.forget(key)
            self._gone_since.pop(key, None)
            syncs.forget(key)
            if self.pool is not None:
                # Beyond OCM (which waits for the AMW finalizer): a work that is
                # gone from the hub watches nothing any more.
                await self.pool.release_work(key)
            return None
        if not has_finalizer(cached) or work_condition(cached, CONDITION_APPLIED) is None:
            syncs.forget(key)
            return None  # nothing to report before the work was applied once
        if (
            is_deleting(cached)
            and applied_work_name(self.deps.hub_hash, key) not in self.deps.cleanup_blocked
        ):
            syncs.forget(key)
            return None
        syncs.due(key)
        with bound_context(**_log_fields(cached)):
            return await self._sync(key, cached)

    async def _sync(self, name: str, cached: Object) -> Result | None:
        deps = self.deps
        work = copy.deepcopy(cached)
        # A deleting work reports its current generation too (the hub bumps it on
        # deletion), as OCM's agent does while a clean-up is held up (spec §10).
        generation = int(work["metadata"].get("generation") or 0)
        try:
            spec = work_spec(work)[0]
        except ValueError as err:
            # The hub validated it with the same schema; only a foreign writer gets here.
            raise TerminalError(f"unreadable spec: {err}") from err

        status = work.setdefault("status", {})
        modes = await self._compute(name, work, spec, generation, None)

        try:
            written = await patch_status(deps.hub, MANIFESTWORKS, cached, status)
        except NotFound:
            deps.status_syncs.forget(name)
            return None  # deleted meanwhile: the next event says so
        except Conflict:
            # The apply loop (or someone else) wrote first: recompute on fresh data.
            log.debug("status changed meanwhile, syncing again")
            return Result(requeue=True)
        deps.status_syncs.synced(name, modes)
        self._report_gone(name, work, spec)
        if written is not None:
            self._written.remember(name, cached, written)
            log.info("updated status of applied resources")
        interval = deps.settings.status_sync_interval
        return Result(requeue_after=interval * (1 - random.random() * STATUS_JITTER))

    def _report_gone(self, name: str, work: Object, spec: ManifestWorkSpec) -> None:
        """Have the apply loop re-create objects deleted on the cluster.

        Beyond OCM, whose agent re-creates them only at its periodic resync (4 to
        6 min). An object must be seen gone by two status syncs at least half a
        sync interval apart: the first writes ``Available`` False to the hub, so
        the deletion shows there, and a deleter that keeps deleting is not fought
        faster than once per interval.
        """
        if self.on_gone is None or is_deleting(work):
            self._gone_since.pop(name, None)
            return
        gone = {
            object_identity(entry.get("resourceMeta") or {})
            for entry in manifest_statuses(work)
            if gone_while_applied(entry, spec)
        }
        moment = asyncio.get_running_loop().time()
        since = {key: self._gone_since.get(name, {}).get(key, moment) for key in gone}
        due = [
            key
            for key, first in since.items()
            if moment - first >= self.deps.settings.status_sync_interval / 2
        ]
        for key in due:
            since[key] = moment  # the next attempt, if need be, after another wait
        if since:
            self._gone_since[name] = since
        else:
            self._gone_since.pop(name, None)
        if not due:
            return
        group, _version, resource, namespace, obj_name = due[0]
        log.info(
            "an applied object is gone from the cluster, applying the work again",
            group=group,
            resource=resource,
            namespace=namespace,
            resource_name=obj_name,
            gone=len(due),
        )
        self.on_gone(name)

    async def _compute(
        self,
        name: str,
        work: Object,
        spec: ManifestWorkSpec,
        generation: int,
        known: dict[ObjectIdentity, Object] | None,
    ) -> Counter[str]:
        """Steps 1-5 on ``work["status"]`` in place; returns how the objects were read.

        ``known`` (from the apply loop) gives every listed object as it was just
        applied: nothing is read from the cluster then.
        """
        status = work.setdefault("status", {})
        manifests = manifest_statuses(work)  # the entries themselves are updated in place
        moment = now()
        listed: set[ObjectIdentity] = set()
        room = _FeedbackRoom()
        modes: Counter[str] = Counter()
        for entry in manifests:
            listed.add(object_identity(entry.get("resourceMeta") or {}))
            mode = await self._sync_manifest(work, entry, spec, generation, moment, room, known)
            if mode is not None:
                modes[mode] += 1
        if self.pool is not None:
            # Registrations of objects the work no longer lists (removed from the
            # spec, or now served at another version) go at once.
            await self.pool.retain(name, listed)

        conditions: list[Condition] = status.setdefault("conditions", [])
        per_manifest = [entry.get("conditions") or [] for entry in manifests]
        set_condition(conditions, aggregate_available(per_manifest, generation=generation), moment)
        aggregated = aggregate(per_manifest, generation=generation)
        for cond in aggregated:
            set_condition(conditions, cond, moment)
        # An aggregate whose type no manifest has any more goes, even if this
        # generation made it (from a manifest's condition its rule then lost).
        made = {cond["type"] for cond in aggregated}
        conditions[:] = [
            c for c in conditions if c.get("reason") != REASON_AGGREGATED or c.get("type") in made
        ]
        drop_stale_rule_conditions(conditions, generation)
        return modes

    async def fill_after_apply(self, work: Object, objects: dict[ObjectIdentity, Object]) -> bool:
        """Add what a status sync would to the status an apply pass is about to write.

        ``work`` carries the pass's new status; ``objects`` are the objects the
        pass applied, as the server answered (keys: ``object_identity`` of their meta).
        When every manifest the status lists is among them, ``Available``, the
        feedback values and the aggregated conditions are set from them in
        place, with no read, and True is returned: the apply loop's one status
        patch then carries both, and this controller's next sync (on the
        patch's event) finds nothing to change. False (status untouched) when
        an object is missing (a manifest failed) or the work has condition
        rules (CEL may take its time budget; ``Applied`` must not wait): this
        controller then writes its part after the pass, as before.
        """
        try:
            spec = work_spec(work)[0]
        except ValueError:
            return False
        if any(option.condition_rules for option in spec.manifest_configs or []):
            return False
        manifests = manifest_statuses(work)
        if not manifests or any(
            object_identity(entry.get("resourceMeta") or {}) not in objects for entry in manifests
        ):
            return False
        generation = int(work["metadata"].get("generation") or 0)
        await self._compute(str(work["metadata"]["name"]), work, spec, generation, objects)
        return True

    async def _sync_manifest(
        self,
        work: Object,
        entry: dict[str, Any],
        spec: ManifestWorkSpec,
        generation: int,
        moment: datetime,
        room: _FeedbackRoom,
        known: dict[ObjectIdentity, Object] | None = None,
    ) -> str | None:
        """Sync one manifest's entry in place; returns how its object was read (if at all).

        An object in ``known`` is taken from there, not read.
        """
        deps = self.deps
        work_name = str(work["metadata"]["name"])
        meta = entry.get("resourceMeta") or {}
        conditions: list[Condition] = entry.setdefault("conditions", [])
        group, version, resource, namespace, obj_name = object_identity(meta)
        option = find_manifest_config(spec.manifest_configs, group, resource, namespace, obj_name)
        fresh = known.get(object_identity(meta)) if known is not None else None
        outcome = (
            ReadOutcome(fresh, _AVAILABLE)
            if fresh is not None
            else await self._read(meta, managed_fields=reads_managed_fields(option))
        )
        set_condition(conditions, outcome.available, moment)
        obj = outcome.obj
        if obj is None:
            # The rest stays as it was until the object can be read again.
            room.take(_json_size((entry.get("statusFeedback") or {}).get("values") or []))
            return outcome.mode

        await self._update_watch(work, meta, option)

        feedback_rules = list(option.feedback_rules or []) if option is not None else []
        read = functools.partial(
            read_feedback,
            feedback_rules,
            obj,
            raw_json=deps.settings.gate(FEATURE_RAW_FEEDBACK_JSON_STRING),
            max_json_raw_length=deps.settings.max_json_raw_length,
        )
        # A path with recursive descent or filters may cost up to its work budget
        # (about a second of CPU): in a thread, so that the event loop, and with
        # it every other work, keeps going meanwhile.
        feedback = read() if is_cheap(feedback_rules) else await asyncio.to_thread(read)
        values = list(feedback.values)
        synced_status, synced_reason, synced_message = feedback.condition
        size = _json_size(values)
        left = room.left
        if values and not room.take(size):
            values = []
            synced_status, synced_reason = "False", REASON_STATUS_FEEDBACK_SYNC_FAILED
            synced_message = (
                "Sync status feedback failed with error the status feedback values of this "
                f"manifest take {size} bytes, more than the {left} of {MAX_FEEDBACK_BYTES} "
                "bytes left for the status feedback of the work; they are not reported"
            )
        old_values = (entry.get("statusFeedback") or {}).get("values") or []
        if normalized(old_values) != normalized(values):
            # New values: a fresh transition time tells when they last changed.
            remove_condition(conditions, CONDITION_STATUS_FEEDBACK_SYNCED)
        set_condition(
            conditions,
            new_condition(
                CONDITION_STATUS_FEEDBACK_SYNCED, synced_status, synced_reason, synced_message, None
            ),
            moment,
        )
        entry["statusFeedback"] = {"values": values} if values else {}

        rules = list(option.condition_rules or []) if option is not None else []
        for rule in rules:
            if rule.condition and not is_condition_type(rule.condition):
                # Dropped by the evaluator: as a status condition it would get every
                # status patch of the work refused. Nowhere else to say so.
                log.warning(
                    "condition rule ignored: its condition is not a valid condition type",
                    condition=rule.condition[:64],
                    resource_name=obj_name,
                )
        evaluated = await evaluate_rules(
            rules, obj, generation=generation, evaluator=deps.rule_evaluator
        )
        for cond in evaluated:
            set_condition(conditions, cond, moment)
        drop_stale_rule_conditions(conditions, generation)
        log.debug(
            "synced manifest status",
            group=group,
            version=version,
            resource=resource,
            namespace=namespace,
            resource_name=obj_name,
            work=work_name,
        )
        return outcome.mode

    async def _update_watch(
        self, work: Object, meta: dict[str, Any], option: ManifestConfigOption | None
    ) -> None:
        pool = self.pool
        if pool is None:
            return
        work_name = str(work["metadata"]["name"])
        group, _version, resource, namespace, obj_name = object_identity(meta)
        watch = option is not None and option.feedback_scrape_type == FeedbackScrapeType.WATCH
        # Beyond OCM: a work being deleted releases its watches (its AppliedManifestWork
        # finalizer is releasing them anyway); it is only polled until it is gone.
        if watch and not is_deleting(work):
            await pool.register(resource_of(meta), namespace, obj_name, work_name)
        else:
            await pool.unregister(group, resource, namespace, obj_name, work_name)

    async def _read(self, meta: dict[str, Any], *, managed_fields: bool) -> ReadOutcome:
        """The live object of a resourceMeta and its ``Available`` condition (section 12).

        Without ``managed_fields`` the object may lack ``metadata.managedFields``.
        """
        if not (meta.get("resource") and meta.get("version") and meta.get("name")):
            return ReadOutcome(None, _INCOMPLETE)
        group, version, resource, namespace, name = object_identity(meta)
        obj: Object | None
        pool = self.pool
        cached = (
            pool.lookup(group, version, resource, namespace, name) if pool is not None else None
        )
        if cached is not None:
            obj, mode = cached.obj, MODE_WATCH
        else:
            mode = MODE_POLL
            try:
                obj = await self.deps.polled_reads.read(
                    self.deps.status_client,
                    resource_of(meta),
                    namespace,
                    name,
                    interval=self.deps.settings.status_sync_interval,
                    managed_fields=managed_fields,
                )
            except KubeError as err:
                message = f"Failed to fetch resource: {describe_error(err)}"
                failed = _available("Unknown", REASON_FETCHING_RESOURCE_FAILED, message)
                return ReadOutcome(None, failed, mode)
        return ReadOutcome(obj, _AVAILABLE if obj is not None else _NOT_AVAILABLE, mode)


#: Objects that run to completion and are then deleted by design (a Job's
#: ``ttlSecondsAfterFinished``, a finished Pod's clean-up): created again only by the
#: periodic resync, as in OCM, so that a work without a completion rule does not run
#: them again every few seconds.
RUN_TO_COMPLETION: Final = frozenset({("batch", "jobs"), ("", "pods")})


def gone_while_applied(entry: dict[str, Any], spec: ManifestWorkSpec) -> bool:
    """Whether a manifest's object was applied and is now missing, and the status
    controller should have it created again now: not ReadOnly, not Complete, not a
    Job or Pod (:data:`RUN_TO_COMPLETION`)."""
    conditions = entry.get("conditions") or []
    available = next((c for c in conditions if c.get("type") == CONDITION_AVAILABLE), None)
    if available is None or available.get("reason") != REASON_RESOURCE_NOT_AVAILABLE:
        return False
    if not is_condition_true(conditions, CONDITION_APPLIED):
        return False
    if is_condition_true(conditions, CONDITION_COMPLETE):
        return False  # finished: the agent never touches it again
    group, _version, resource, namespace, name = object_identity(entry.get("resourceMeta") or {})
    if (group, resource) in RUN_TO_COMPLETION:
        return False
    option = find_manifest_config(spec.manifest_configs, group, resource, namespace, name)
    strategy = option.update_strategy if option is not None else None
    return strategy is None or strategy.type != UpdateStrategyType.READ_ONLY


class _FeedbackRoom:
    """What is left of a work's :data:`MAX_FEEDBACK_BYTES` during one sync."""

    def __init__(self) -> None:
        self.left = MAX_FEEDBACK_BYTES

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes; False (and nothing reserved) if they do not fit."""
        if size > self.left:
            return False
        self.left -= size
        return True


def _json_size(values: list[Any]) -> int:
    """Bytes of ``values`` as compact JSON, roughly what they add to the status."""
    if not values:
        return 0
    return len(json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode())
