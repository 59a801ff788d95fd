"""Executor permission checks (spec/agent.md section 16): may a work's executor apply a manifest?

A ManifestWork with ``spec.executor`` names a service account on the spoke;
before every apply of every manifest the agent checks with
SubjectAccessReviews that this account could write the object itself, and for
RBAC manifests that it could create them without escalating its privileges.

:func:`build_executor_validator` makes the agent's validator: a
:class:`BasicExecutorValidator`, or a :class:`CachingExecutorValidator` when
the ``ExecutorValidatingCaches`` gate is on (register its ``controllers()``
with the Manager). A denial raises :class:`NotAllowedError` (``str(err)`` is
the condition message, ``err.requeue_after`` the retry delay, not an error);
an executor naming no service account raises :class:`InvalidExecutorError`.
"""

from ocmkit.kube.access import ResourceAccess
from workagent.executor.access import Access, AccessReviewer, NonResourceAccess
from workagent.executor.base import (
    NOT_ALLOWED_REQUEUE_SECONDS,
    InvalidExecutorError,
    NotAllowedError,
)
from workagent.executor.basic import BasicExecutorValidator
from workagent.executor.cache import AccessCache, Dimension
from workagent.executor.caching import CachingExecutorValidator, build_executor_validator
from workagent.executor.subject import ManifestTarget, ServiceAccountExecutor

__all__ = [
    "NOT_ALLOWED_REQUEUE_SECONDS",
    "Access",
    "AccessCache",
    "AccessReviewer",
    "BasicExecutorValidator",
    "CachingExecutorValidator",
    "Dimension",
    "InvalidExecutorError",
    "ManifestTarget",
    "NonResourceAccess",
    "NotAllowedError",
    "ResourceAccess",
    "ServiceAccountExecutor",
    "build_executor_validator",
]
