"""Prometheus metric objects of the runtime, on the default registry.

Names follow the Go implementations operators already have dashboards for
(client-go, controller-runtime; docs/metrics.md). Module-level metric objects
are the one kind of global the house style allows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

_log = structlog.get_logger(__name__)

# client-go: prometheus.ExponentialBuckets(10e-9, 10, 10), i.e. 10 ns .. 10 s.
_WORKQUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(10))

# controller-runtime's reconcile_time_seconds buckets.
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0,
    10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip

# -- work queues ----------------------------------------------------------------------
WORKQUEUE_DEPTH = Gauge("workqueue_depth", "Current depth of workqueue", ["name"])
WORKQUEUE_ADDS = Counter("workqueue_adds", "Total number of adds handled by workqueue", ["name"])
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
    ["name"],
    buckets=_WORKQUEUE_BUCKETS,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=_WORKQUEUE_BUCKETS,
)
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of "
    "stuck threads by observing the rate at which this increases.",
    ["name"],
)
WORKQUEUE_LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name"],
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries", "Total number of retries handled by workqueue", ["name"]
)

# -- controllers ----------------------------------------------------------------------
RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile",
    "Total number of reconciliations per controller, by result "
    "(success, error, terminal_error, requeue, requeue_after).",
    ["controller", "result"],
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller",
    ["controller"],
)
RECONCILE_TERMINAL_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
)

# -- informers ------------------------------------------------------------------------
INFORMER_LISTS = Counter(
    "informer_lists", "Completed list calls (initial list and relists) per informer", ["informer"]
)
INFORMER_RELISTS = Counter(
    "informer_relists",
    "Lists after the initial one (410 Gone, watch failures, restarts) per informer",
    ["informer"],
)
INFORMER_WATCH_RECONNECTS = Counter(
    "informer_watch_reconnects",
    "Watches opened again after a previous watch of the informer ended",
    ["informer"],
)
INFORMER_WATCH_STALLS = Counter(
    "informer_watch_stalls",
    "Watches abandoned by the watchdog after making no progress past their timeout",
    ["informer"],
)
INFORMER_ERRORS = Counter(
    "informer_errors",
    "Failed list and watch calls per informer, by verb and HTTP code (0: no response)",
    ["informer", "verb", "code"],
)
INFORMER_EVENTS = Counter(
    "informer_events",
    "Watch events received per informer, by type",
    ["informer", "type"],
)
INFORMER_SYNCED = Gauge(
    "informer_synced", "1 once the informer's cache holds its first list", ["informer"]
)
INFORMER_OBJECTS = Gauge("informer_cache_objects", "Objects in the informer's cache", ["informer"])
INFORMER_PENDING_NOTIFICATIONS = Gauge(
    "informer_pending_notifications",
    "Events waiting to be delivered to the informer's handlers (a slow handler shows here)",
    ["informer"],
)

# -- leader election ------------------------------------------------------------------
LEADER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
    "1 indicates master. 'name' is the string used to identify the lease.",
    ["name"],
)
LEADER_SLOWPATH = Counter(
    "leader_election_slowpath",
    "Total number of slow path exercised in renewing leader leases. "
    "'name' is the string used to identify the lease.",
    ["name"],
)


# -- gauges computed at scrape time ---------------------------------------------------

#: One sample: its labels and its value.
Sample = tuple[dict[str, str], float]
#: Computes the samples of a :class:`ScrapeGauge` when it is scraped.
SampleSource = Callable[[], Iterable[Sample]]


class ScrapeGauge(Collector):
    """A gauge family whose samples are computed when ``/metrics`` is read.

    For counts that are a view of a cache (works by condition, replica sets by
    rollout state): computing them from the cache at scrape time keeps them
    right by construction, and a deleted object leaves no stale series
    behind. The source is set by the component that owns the cache; as with
    the informer gauges, the last one set wins (tests run several agents in
    one process, one after another), and :meth:`clear_source` only removes
    the source it is given. Without a source the family has no samples.
    """

    def __init__(
        self, name: str, documentation: str, *, registry: CollectorRegistry | None = REGISTRY
    ) -> None:
        self.name = name
        self.documentation = documentation
        self._source: SampleSource | None = None
        if registry is not None:
            registry.register(self)

    def set_source(self, source: SampleSource) -> None:
        """Compute the samples with ``source`` from now on."""
        self._source = source

    def clear_source(self, source: SampleSource) -> None:
        """Stop using ``source`` (a newer source set meanwhile stays)."""
        if self._source is source:
            self._source = None

    def describe(self) -> Iterable[Metric]:
        """The family without samples (the registry checks names with it)."""
        return [Metric(self.name, self.documentation, "gauge")]

    def collect(self) -> Iterable[Metric]:
        """The family with the source's current samples."""
        family = Metric(self.name, self.documentation, "gauge")
        source = self._source
        if source is not None:
            try:
                samples = list(source())
            except Exception:
                # A scrape must still answer with every other family.
                _log.exception("computing a metric failed", metric=self.name)
                samples = []
            for labels, value in samples:
                family.add_sample(self.name, labels, value)
        yield family
