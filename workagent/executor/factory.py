"""Choosing the executor validator from the feature gates."""

from __future__ import annotations

from ocmkit.kube import KubeClient
from workagent.executor.base import ManagedExecutorValidator
from workagent.executor.basic import BasicExecutorValidator
from workagent.executor.caching import CachingExecutorValidator


def build_executor_validator(spoke: KubeClient, *, caching: bool) -> ManagedExecutorValidator:
    """The validator for the agent: cached when ``ExecutorValidatingCaches`` is on.

    ``spoke`` is the agent's own spoke client: it creates the
    SubjectAccessReviews and, for the cached variant, watches RBAC objects.
    Register the result's ``controllers()`` with the Manager (a no-op list
    for the uncached validator).
    """
    if caching:
        return CachingExecutorValidator(spoke)
    return BasicExecutorValidator(spoke)
