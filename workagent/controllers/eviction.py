"""Eviction of unmanaged AppliedManifestWorks (spec/agent.md section 15).

An AppliedManifestWork of this agent whose ManifestWork is gone from the hub
(deleted while the agent was away, or the agent now talks to another hub) is
*unmanaged*: nothing would ever clean up its resources. After
``--appliedmanifestwork-eviction-grace-period`` it is deleted, and the
AppliedManifestWork finalizer (section 8.2) deletes or disowns its resources.
The grace period, recorded as ``status.evictionStartTime``, lets a hub that
is briefly out of sync (a restore, a reconnect) come back without the
workloads being torn down.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

import structlog

from ocmkit.kube import APPLIED_MANIFESTWORKS, NotFound
from ocmkit.runtime import Controller, Object, Result, WorkQueue
from schemas.meta import format_time, now, parse_time
from workagent.controllers.add_finalizer import is_deleting, work_from_cache
from workagent.controllers.deps import AgentDeps
from workagent.controllers.metrics import EVICTIONS
from workagent.controllers.patcher import patch_status
from workagent.identity import applied_work_name, work_name_of
from workagent.settings import EVICTION_DISABLED_AT
from workagent.sources.store import LocalWorkStore

log = structlog.get_logger(__name__)

NAME = "UnManagedAppliedManifestWork"


class Action(Enum):
    """What the eviction controller does to one AppliedManifestWork."""

    NOTHING = "nothing"
    CLEAR_START = "clear-start"  # managed again (or eviction off): forget the start time
    START = "start"  # unmanaged: record the start of the grace period
    WAIT = "wait"  # unmanaged, grace period running
    EVICT = "evict"  # unmanaged, grace period over: delete it


@dataclass(frozen=True)
class Decision:
    """An :class:`Action` and, for WAIT, the seconds left of the grace period."""

    action: Action
    remaining: float = 0.0


def decide(
    applied: Object,
    *,
    work_found: bool,
    hub_hash: str,
    grace_seconds: float,
    current_time: datetime,
) -> Decision:
    """The eviction decision for a (not deleting) AppliedManifestWork, as a pure function.

    ``work_found``: the hub cache holds a ManifestWork named
    ``spec.manifestWorkName``. A work of that name only counts if the record's
    name also carries the current hub hash: after a switch to another hub, a
    same-named work there is a different work.
    """
    started_raw = (applied.get("status") or {}).get("evictionStartTime")
    if grace_seconds >= EVICTION_DISABLED_AT:  # at least 100 years: eviction is off
        return Decision(Action.CLEAR_START if started_raw else Action.NOTHING)
    name = str((applied.get("metadata") or {}).get("name") or "")
    if work_found and work_name_of(hub_hash, name) is not None:
        return Decision(Action.CLEAR_START if started_raw else Action.NOTHING)
    if not started_raw:
        return Decision(Action.START)
    try:
        started = parse_time(started_raw)
    except ValueError:
        # Unreadable (written by hand?): start the grace period over.
        return Decision(Action.START)
    remaining = (started + timedelta(seconds=grace_seconds) - current_time).total_seconds()
    if remaining > 0:
        return Decision(Action.WAIT, remaining)
    return Decision(Action.EVICT)


class UnmanagedAppliedWorkEvictor:
    """Reconciles an AppliedManifestWork name; deletes it once unmanaged for the grace period.

    ``clock`` returns the current (wall-clock, UTC) time; it is injectable
    because the grace period is measured against a timestamp stored in the
    object, which other processes (a restarted agent) read too.
    """

    def __init__(self, deps: AgentDeps, *, clock: Callable[[], datetime] = now) -> None:
        self._deps = deps
        self._clock = clock

    def controller(self) -> Controller:
        """A controller fed by hub ManifestWork and this agent's AppliedManifestWork events."""
        deps = self._deps
        queue = WorkQueue(NAME)

        def on_work(obj: Object) -> None:
            # A work appearing or disappearing changes whether its record is managed;
            # other updates of a work cannot.
            name = str((obj.get("metadata") or {}).get("name") or "")
            queue.add(applied_work_name(deps.hub_hash, name))

        deps.works.add_handler(on_add=on_work, on_delete=on_work)
        deps.queue_own_applied(queue)
        if isinstance(deps.hub, LocalWorkStore):
            # Records passed over while the cache was not yet the hub's view.
            def recheck() -> None:
                for applied in deps.applied.store.list():
                    if deps.is_own_applied(applied):
                        queue.add(str(applied["metadata"]["name"]))

            deps.hub.on_primed(recheck)
        # One worker, as OCM: evictions are rare and need no parallelism.
        return Controller(NAME, queue, self.reconcile, 1, depends_on=(deps.works, deps.applied))

    async def reconcile(self, name: str) -> Result | None:
        """One pass for AppliedManifestWork ``name``."""
        deps = self._deps
        applied = deps.applied.store.get(name)
        if applied is None or is_deleting(applied) or not deps.is_own_applied(applied):
            return None
        if isinstance(deps.hub, LocalWorkStore) and not deps.hub.primed:
            # The CloudEvents cache before the first resync's answer: a missing work
            # may just not have arrived. Priming brings every record back.
            return None
        work_name = str((applied.get("spec") or {}).get("manifestWorkName") or "")
        work_found = bool(work_name) and work_from_cache(deps, work_name) is not None
        decision = decide(
            applied,
            work_found=work_found,
            hub_hash=deps.hub_hash,
            grace_seconds=deps.settings.eviction_grace_period,
            current_time=self._clock(),
        )
        match decision.action:
            case Action.NOTHING:
                return None
            case Action.CLEAR_START:
                await self._set_start(applied, None)
                return None
            case Action.START:
                # The status update event brings the record back for the WAIT step.
                await self._set_start(applied, format_time(self._clock()))
                log.info(
                    "manifest work is gone from the hub, eviction grace period started",
                    manifest_work=work_name,
                    grace_seconds=deps.settings.eviction_grace_period,
                )
                return None
            case Action.WAIT:
                return Result(requeue_after=decision.remaining)
            case Action.EVICT:
                log.info("evicting unmanaged applied manifest work", manifest_work=work_name)
                try:
                    await deps.work_client.delete(APPLIED_MANIFESTWORKS, name)
                except NotFound:
                    return None  # gone meanwhile: not evicted by us
                EVICTIONS.inc()
                return None

    async def _set_start(self, applied: Object, value: str | None) -> None:
        """Write ``status.evictionStartTime`` (None clears it) with a guarded status patch."""
        status = dict(applied.get("status") or {})
        if value is None:
            status.pop("evictionStartTime", None)
        else:
            status["evictionStartTime"] = value
        with contextlib.suppress(NotFound):  # gone meanwhile: nothing to record
            await patch_status(self._deps.work_client, APPLIED_MANIFESTWORKS, applied, status)
