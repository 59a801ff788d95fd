"""Executor permission checks (spec/agent.md section 16): may a work's executor apply a manifest?

A ManifestWork with ``spec.executor`` names a service account on the spoke;
before every apply of every manifest the agent checks with
SubjectAccessReviews that this account could write the object itself, and for
RBAC manifests that it could create them without escalating its privileges.

Exports:

- :func:`build_executor_validator` -- the validator for the agent, cached when the
  ``ExecutorValidatingCaches`` gate is on; register its ``controllers()`` with
  the Manager (``informers()`` lists the RBAC informers they depend on).
- :class:`ExecutorValidator` -- the protocol the apply loop calls;
  :class:`ManagedExecutorValidator` adds ``informers()`` and ``controllers()``.
- :class:`NotAllowedError` -- denied: ``str(err)`` is the condition message
  (``not allowed to apply the resource <group> <resource>, <ns> <name>, will try
  again in 1m0s``), ``err.requeue_after`` the retry delay (60 s, not an error);
  :class:`InvalidExecutorError` -- the executor names no service account
  (an ordinary error); ``NOT_ALLOWED_REQUEUE_SECONDS``.
- :class:`BasicExecutorValidator`, :class:`CachingExecutorValidator` -- the two
  validators, for composition and tests; :class:`AccessCache`,
  :class:`Dimension` and :class:`Action` -- the cache they keep.
- :class:`AccessReviewer` -- SubjectAccessReviews for a service account
  (:class:`ResourceAccess` / :class:`NonResourceAccess`, together ``Access``);
  :class:`EscalationChecker` and :class:`AccessReviewEscalationChecker` -- the
  RBAC escalation check.
- :class:`ServiceAccountExecutor`, :class:`ManifestTarget`,
  :func:`service_account_of` -- who is checked, against what.
"""

from ocmkit.kube.access import ResourceAccess
from workagent.executor.access import (
    APPLY_VERBS,
    DELETE_VERB,
    Access,
    AccessReviewer,
    NonResourceAccess,
    apply_verbs,
)
from workagent.executor.base import (
    NOT_ALLOWED_REQUEUE_SECONDS,
    ExecutorValidator,
    InvalidExecutorError,
    ManagedExecutorValidator,
    NotAllowedError,
    go_duration,
)
from workagent.executor.basic import BasicExecutorValidator
from workagent.executor.cache import AccessCache, Action, Dimension
from workagent.executor.caching import (
    CLEANUP_INTERVAL_SECONDS,
    CONTROLLER_NAME,
    CachingExecutorValidator,
)
from workagent.executor.escalation import (
    AccessReviewEscalationChecker,
    EscalationChecker,
    is_rbac_manifest,
)
from workagent.executor.factory import build_executor_validator
from workagent.executor.subject import ManifestTarget, ServiceAccountExecutor, service_account_of

__all__ = [
    "APPLY_VERBS",
    "CLEANUP_INTERVAL_SECONDS",
    "CONTROLLER_NAME",
    "DELETE_VERB",
    "NOT_ALLOWED_REQUEUE_SECONDS",
    "Access",
    "AccessCache",
    "AccessReviewEscalationChecker",
    "AccessReviewer",
    "Action",
    "BasicExecutorValidator",
    "CachingExecutorValidator",
    "Dimension",
    "EscalationChecker",
    "ExecutorValidator",
    "InvalidExecutorError",
    "ManagedExecutorValidator",
    "ManifestTarget",
    "NonResourceAccess",
    "NotAllowedError",
    "ResourceAccess",
    "ServiceAccountExecutor",
    "apply_verbs",
    "build_executor_validator",
    "go_duration",
    "is_rbac_manifest",
    "service_account_of",
]
