"""The agent's work-level Prometheus series (docs/metrics.md has the reference table).

Two kinds:

- views of the hub ManifestWork cache, computed at scrape time
  (:class:`~ocmkit.runtime.metrics.ScrapeGauge`): works by work-level
  condition, manifests by manifest-level condition, and the status syncs'
  age and read modes. They are right by construction and a deleted work
  leaves no series behind;
- events, counted where they happen: manifest apply failures by reason,
  AppliedManifestWork evictions, resources deleted because no work
  maintains them, and the time from a work generation first seen to
  ``Applied=True`` for it.

No series carries a per-work label unless ``--metrics-work-labels`` asks for
it (then only the two condition gauges do): a fleet of thousands of works
must not become thousands of series per condition.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable
from typing import Any, Final

from prometheus_client import Counter, Histogram

from ocmkit.kube import KubeError
from ocmkit.runtime import Informer, Object
from ocmkit.runtime.metrics import Sample, SampleSource, ScrapeGauge
from schemas.wire import CONDITION_APPLIED
from workagent.apply import IgnoreFieldsError, InvalidManifest, ServerSideApplyConflict
from workagent.controllers.conditions import manifest_statuses, work_condition
from workagent.controllers.manifests import ManifestError, UnknownResourceType
from workagent.executor.base import InvalidExecutorError, NotAllowedError

#: Labels of the condition gauges (plus ``work`` with ``--metrics-work-labels``).
CONDITION_LABELS: Final = ("condition", "status", "reason")
#: Label values of ``work_agent_orphan_deletions_total{reason}``.
ORPHAN_REMOVED_FROM_WORK: Final = "removed_from_work"
ORPHAN_WORK_DELETED: Final = "work_deleted"
#: Label values of ``work_agent_status_resources{mode}``.
MODE_WATCH: Final = "watch"
MODE_POLL: Final = "poll"

WORKS = ScrapeGauge(
    "work_agent_manifestworks",
    "ManifestWorks of the cluster namespace by work-level condition type, status and reason.",
)
MANIFESTS = ScrapeGauge(
    "work_agent_manifests",
    "Manifests of the cluster namespace's ManifestWorks by manifest-level condition type, "
    "status and reason.",
)
STATUS_SYNC_OLDEST_AGE = ScrapeGauge(
    "work_agent_status_sync_oldest_age_seconds",
    "Seconds since the least recently synced work's status was last synced "
    "(compare with work_agent_status_sync_interval_seconds).",
)
STATUS_SYNC_INTERVAL = ScrapeGauge(
    "work_agent_status_sync_interval_seconds",
    "The configured --status-sync-interval (each work is synced every x0.8 to x1 of it).",
)
STATUS_RESOURCES = ScrapeGauge(
    "work_agent_status_resources",
    "Resources whose status the agent reports, by how its last status sync read them: "
    "from a watch (feedbackScrapeType Watch) or by polling.",
)
APPLY_FAILURES = Counter(
    "work_agent_manifest_apply_failures",
    "Manifests that failed to apply, by reason (counted once per manifest and apply pass).",
    ["reason"],
)
TIME_TO_APPLIED = Histogram(
    "work_agent_time_to_applied_seconds",
    "Time from a work generation first seen by the agent to the work reporting Applied=True "
    "for that generation.",
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0),
)
EVICTIONS = Counter(
    "work_agent_appliedmanifestwork_evictions",
    "AppliedManifestWorks deleted because their ManifestWork was gone from the hub for the "
    "eviction grace period.",
)
ORPHAN_DELETIONS = Counter(
    "work_agent_orphan_deletions",
    "Applied resources deleted because no work maintains them any more: removed from their "
    "work's manifests, or their work (or its AppliedManifestWork) was deleted.",
    ["reason"],
)
for _reason in (ORPHAN_REMOVED_FROM_WORK, ORPHAN_WORK_DELETED):
    ORPHAN_DELETIONS.labels(_reason)


#: The ``reason`` of a failure that is not an expected outcome (a bug in a strategy).
UNEXPECTED_FAILURE: Final = "Unexpected"
#: The agent's own refusals, by name; first match wins (an UnknownResourceType is a ManifestError).
_FAILURE_REASONS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (UnknownResourceType, "UnknownResourceType"),
    ((ManifestError, InvalidManifest), "InvalidManifest"),
    (NotAllowedError, "ExecutorNotAllowed"),
    (InvalidExecutorError, "InvalidExecutor"),
    (ServerSideApplyConflict, "ServerSideApplyConflict"),
    (IgnoreFieldsError, "IgnoreFieldsError"),
)


def failure_reason(err: Exception) -> str:
    """The ``reason`` label of an apply failure: a small, fixed set of values.

    API errors by their type (``Forbidden``, ``Invalid``, ``Conflict``,
    ``ServerError``, ``Unreachable``, ...), the agent's own refusals by name,
    anything else ``Unexpected``.
    """
    for kind, reason in _FAILURE_REASONS:
        if isinstance(err, kind):
            return reason
    if isinstance(err, KubeError):
        return type(err).__name__
    return UNEXPECTED_FAILURE


def count_apply_failure(err: Exception) -> None:
    """Count one manifest that failed to apply."""
    APPLY_FAILURES.labels(failure_reason(err)).inc()


class StatusSyncs:
    """When each work's status was last synced, and how its resources were read.

    The status controller calls :meth:`due` when it starts on an eligible work
    (so a work whose syncs keep failing ages from its first attempt),
    :meth:`synced` after a sync that wrote or confirmed the status, and
    :meth:`forget` when the work is gone or no longer synced.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[str, float] = {}
        self._modes: dict[str, Tally[str]] = {}

    def due(self, name: str) -> None:
        """The work's status is to be synced (its age starts now unless already known)."""
        self._last.setdefault(name, self._clock())

    def synced(self, name: str, modes: Tally[str]) -> None:
        """The work's status was synced now; ``modes`` counts its reads by mode."""
        self._last[name] = self._clock()
        self._modes[name] = modes

    def forget(self, name: str) -> None:
        """The work is gone, or no longer has a status to sync."""
        self._last.pop(name, None)
        self._modes.pop(name, None)

    def oldest_age(self) -> float:
        """Seconds since the least recently synced work was synced (0 with none)."""
        if not self._last:
            return 0.0
        return max(0.0, self._clock() - min(self._last.values()))

    def resources(self) -> Tally[str]:
        """Resources by read mode, summed over the works' last syncs."""
        total: Tally[str] = Tally({MODE_WATCH: 0, MODE_POLL: 0})
        for modes in self._modes.values():
            total.update(modes)
        return total


def _generation(work: Object) -> int:
    return int((work.get("metadata") or {}).get("generation") or 0)


def applied_for_generation(work: Object) -> bool:
    """Whether the work reports ``Applied=True`` for its current generation."""
    cond = work_condition(work, CONDITION_APPLIED)
    return (
        cond is not None
        and cond.get("status") == "True"
        and int(cond.get("observedGeneration") or 0) == _generation(work)
    )


class AppliedLatency:
    """Measures each work generation from first sight to ``Applied=True`` for it.

    Fed with every version of a work the hub informer delivers: a generation
    not seen before starts a clock (unless it is already applied: a work the
    agent finds applied after a restart took no time of this agent's); the
    first version that reports it applied stops it and observes the
    histogram. A new generation before that restarts the clock.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: work name -> (generation, when first seen)
        self._pending: dict[str, tuple[int, float]] = {}

    def observe(self, work: Object) -> None:
        """Account for one version of a work."""
        meta = work.get("metadata") or {}
        name = str(meta.get("name") or "")
        if meta.get("deletionTimestamp"):
            self._pending.pop(name, None)
            return
        generation = _generation(work)
        applied = applied_for_generation(work)
        pending = self._pending.get(name)
        if pending is not None and pending[0] == generation:
            if applied:
                del self._pending[name]
                TIME_TO_APPLIED.observe(max(0.0, self._clock() - pending[1]))
            return
        if applied:
            self._pending.pop(name, None)
        else:
            self._pending[name] = (generation, self._clock())

    def forget(self, work: Object) -> None:
        """The work was deleted."""
        self._pending.pop(str((work.get("metadata") or {}).get("name") or ""), None)


def _condition_samples(
    works: Iterable[Object], conditions_of: Callable[[Object], Iterable[Any]], per_work: bool
) -> list[Sample]:
    """Count (condition type, status, reason) over ``works``; with the work name if asked."""
    counts: Tally[tuple[str, ...]] = Tally()
    for work in works:
        name = str((work.get("metadata") or {}).get("name") or "")
        for cond in conditions_of(work):
            if not isinstance(cond, dict):
                continue
            key = tuple(str(cond.get(field) or "") for field in ("type", "status", "reason"))
            counts[(*key, name) if per_work else key] += 1
    names = (*CONDITION_LABELS, "work") if per_work else CONDITION_LABELS
    return [(dict(zip(names, key, strict=True)), float(n)) for key, n in sorted(counts.items())]


def _work_conditions(work: Object) -> Iterable[Any]:
    return list((work.get("status") or {}).get("conditions") or [])


def _manifest_conditions(work: Object) -> Iterable[Any]:
    return [
        cond
        for entry in manifest_statuses(work)
        if isinstance(entry, dict)
        for cond in entry.get("conditions") or []
    ]


class WorkMetrics:
    """The agent's scrape-time sources, over its ManifestWork cache and status syncs.

    :meth:`attach` makes them the sources of the gauges and feeds the
    time-to-applied histogram from the works informer; :meth:`detach` (at
    shutdown) removes them again.
    """

    def __init__(
        self, works: Informer, syncs: StatusSyncs, interval: float, per_work: bool
    ) -> None:
        self._works = works
        self._syncs = syncs
        self._interval = interval
        self._per_work = per_work
        self.latency = AppliedLatency()
        self._sources: list[tuple[ScrapeGauge, SampleSource]] = [
            (WORKS, self.works),
            (MANIFESTS, self.manifests),
            (STATUS_SYNC_OLDEST_AGE, lambda: [({}, self._syncs.oldest_age())]),
            (STATUS_SYNC_INTERVAL, lambda: [({}, self._interval)]),
            (STATUS_RESOURCES, self.resources),
        ]

    def attach(self) -> None:
        """Become the gauges' sources and follow the works informer."""
        for gauge, source in self._sources:
            gauge.set_source(source)
        self._works.add_handler(
            on_add=self.latency.observe,
            on_update=lambda _old, new: self.latency.observe(new),
            on_delete=self.latency.forget,
        )

    async def detach(self) -> None:
        """Stop being the gauges' sources (a closer of the manager)."""
        for gauge, source in self._sources:
            gauge.clear_source(source)

    def works(self) -> list[Sample]:
        """``work_agent_manifestworks`` samples."""
        return _condition_samples(self._works.store.list(), _work_conditions, self._per_work)

    def manifests(self) -> list[Sample]:
        """``work_agent_manifests`` samples."""
        return _condition_samples(self._works.store.list(), _manifest_conditions, self._per_work)

    def resources(self) -> list[Sample]:
        """``work_agent_status_resources`` samples."""
        return [({"mode": mode}, float(n)) for mode, n in sorted(self._syncs.resources().items())]
