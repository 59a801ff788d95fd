"""The asyncio controller runtime the work agent and the hub controller share (docs/runtime.md)."""

from ocmkit.runtime.clock import Clock, MonotonicClock
from ocmkit.runtime.controller import Controller, Reconcile, Result, TerminalError
from ocmkit.runtime.health import HealthChecks, Report
from ocmkit.runtime.informer import Informer
from ocmkit.runtime.leaderelection import LeaderElectionSettings, LeaderElector
from ocmkit.runtime.logs import bound_context, configure_logging, parse_level, reconcile_context
from ocmkit.runtime.manager import Manager, ManagerSettings, run_built, run_main
from ocmkit.runtime.observability import ObservabilityServer, parse_bind_address
from ocmkit.runtime.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)
from ocmkit.runtime.store import Object, Store, object_key, strip_managed_fields
from ocmkit.runtime.workqueue import QueueEmpty, ShutDown, WorkQueue

__all__ = [
    "BucketRateLimiter",
    "Clock",
    "Controller",
    "HealthChecks",
    "Informer",
    "ItemExponentialFailureRateLimiter",
    "LeaderElectionSettings",
    "LeaderElector",
    "Manager",
    "ManagerSettings",
    "MaxOfRateLimiter",
    "MonotonicClock",
    "Object",
    "ObservabilityServer",
    "QueueEmpty",
    "Reconcile",
    "Report",
    "Result",
    "ShutDown",
    "Store",
    "TerminalError",
    "WorkQueue",
    "bound_context",
    "configure_logging",
    "default_controller_rate_limiter",
    "object_key",
    "parse_bind_address",
    "parse_level",
    "reconcile_context",
    "run_built",
    "run_main",
    "strip_managed_fields",
]
