"""The asyncio controller runtime shared by the work agent and the hub controller.

Informers (list + watch caches), work queues, controllers, leader election,
the metrics/probe server, logging setup and the process manager. It builds on
:mod:`workagent.kube` and imports nothing else of ``workagent``.
"""

from workagent.runtime.backoff import Backoff
from workagent.runtime.clock import Clock, FakeClock, MonotonicClock
from workagent.runtime.controller import Controller, Reconcile, Result, TerminalError
from workagent.runtime.health import CheckResult, HealthChecks, HealthSource, LoopMonitor, Report
from workagent.runtime.informer import Informer, OnAdd, OnDelete, OnUpdate
from workagent.runtime.leaderelection import (
    LeaderElectionSettings,
    LeaderElector,
    default_identity,
)
from workagent.runtime.logs import (
    bound_context,
    configure_logging,
    new_reconcile_id,
    parse_level,
    reconcile_context,
)
from workagent.runtime.manager import Manager, ManagerSettings, run_main
from workagent.runtime.observability import ObservabilityServer, parse_bind_address
from workagent.runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from workagent.runtime.store import (
    NAMESPACE_INDEX,
    IndexFunc,
    Object,
    Store,
    Transform,
    namespace_index,
    object_key,
    split_key,
    strip_managed_fields,
)
from workagent.runtime.workqueue import QueueEmpty, ShutDown, WorkQueue

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
    "configure_logging",
    "default_controller_rate_limiter",
    "default_identity",
    "namespace_index",
    "new_reconcile_id",
    "object_key",
    "parse_bind_address",
    "parse_level",
    "reconcile_context",
    "run_main",
    "split_key",
    "strip_managed_fields",
]
