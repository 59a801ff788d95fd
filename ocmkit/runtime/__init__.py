"""The asyncio controller runtime shared by the work agent and the hub controller.

Informers (list + watch caches), work queues, controllers, leader election,
the metrics/probe server, logging setup and the process manager. It builds on
:mod:`ocmkit.kube` and imports nothing else of ``workagent``.
"""

from ocmkit.runtime.backoff import Backoff
from ocmkit.runtime.clock import Clock, FakeClock, MonotonicClock
from ocmkit.runtime.controller import Controller, Reconcile, Result, TerminalError
from ocmkit.runtime.health import CheckResult, HealthChecks, HealthSource, LoopMonitor, Report
from ocmkit.runtime.informer import Informer, OnAdd, OnDelete, OnUpdate
from ocmkit.runtime.leaderelection import (
    LeaderElectionSettings,
    LeaderElector,
    default_identity,
)
from ocmkit.runtime.logs import (
    bound_context,
    configure_logging,
    new_reconcile_id,
    parse_level,
    reconcile_context,
)
from ocmkit.runtime.manager import Manager, ManagerSettings, run_built, run_main
from ocmkit.runtime.observability import ObservabilityServer, parse_bind_address
from ocmkit.runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from ocmkit.runtime.store import (
    NAMESPACE_INDEX,
    IndexFunc,
    Object,
    Store,
    Transform,
    compact,
    namespace_index,
    object_key,
    split_key,
    strip_managed_fields,
)
from ocmkit.runtime.workqueue import QueueEmpty, ShutDown, WorkQueue

__all__ = [
    "NAMESPACE_INDEX",
    "Backoff",
    "BucketRateLimiter",
    "CheckResult",
    "Clock",
    "Controller",
    "FakeClock",
    "HealthChecks",
    "HealthSource",
    "IndexFunc",
    "Informer",
    "ItemExponentialFailureRateLimiter",
    "LeaderElectionSettings",
    "LeaderElector",
    "LoopMonitor",
    "Manager",
    "ManagerSettings",
    "MaxOfRateLimiter",
    "MonotonicClock",
    "Object",
    "ObservabilityServer",
    "OnAdd",
    "OnDelete",
    "OnUpdate",
    "QueueEmpty",
    "RateLimiter",
    "Reconcile",
    "Report",
    "Result",
    "ShutDown",
    "Store",
    "TerminalError",
    "Transform",
    "WorkQueue",
    "bound_context",
    "compact",
    "configure_logging",
    "default_controller_rate_limiter",
    "default_identity",
    "namespace_index",
    "new_reconcile_id",
    "object_key",
    "parse_bind_address",
    "parse_level",
    "reconcile_context",
    "run_built",
    "run_main",
    "split_key",
    "strip_managed_fields",
]
