"""Async Kubernetes client: dynamic resources, typed errors, watches, QPS limits, RESTMapper.

``ocmkit.kube`` imports nothing else of ``workagent``: the runtime and the
controllers build on it, never the other way round.
"""

# First: makes the kubernetes_asyncio imports below light (see the module).
from ocmkit.kube import _lightimport  # noqa: F401
from ocmkit.kube.client import KubeClient, default_user_agent
from ocmkit.kube.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeConfigError,
    KubeError,
    NoKindMatch,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    Unreachable,
)
from ocmkit.kube.ratelimit import TokenBucket
from ocmkit.kube.resource import (
    APPLIED_MANIFESTWORKS,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    JOBS,
    LEASES,
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    SUBJECT_ACCESS_REVIEWS,
    Resource,
    split_api_version,
)
from ocmkit.kube.restmapper import RESTMapper
from ocmkit.kube.watch import ADDED, BOOKMARK, DELETED, MODIFIED, WatchEvent

__all__ = [
    "ADDED",
    "APPLIED_MANIFESTWORKS",
    "BOOKMARK",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIGMAPS",
    "CRDS",
    "DELETED",
    "DEPLOYMENTS",
    "JOBS",
    "LEASES",
    "MANIFESTWORKS",
    "MANIFESTWORK_REPLICASETS",
    "MODIFIED",
    "NAMESPACES",
    "PLACEMENTS",
    "PLACEMENT_DECISIONS",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICES",
    "SERVICE_ACCOUNTS",
    "SUBJECT_ACCESS_REVIEWS",
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeClient",
    "KubeConfigError",
    "KubeError",
    "NoKindMatch",
    "NotFound",
    "RESTMapper",
    "Resource",
    "ServerError",
    "TokenBucket",
    "TooManyRequests",
    "Unauthorized",
    "Unreachable",
    "WatchEvent",
    "default_user_agent",
    "split_api_version",
]
