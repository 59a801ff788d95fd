"""Who is checked (the executor's service account) and what against (the manifest's target)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ocmkit.kube import Resource
from ocmkit.kube.access import ServiceAccount
from schemas.work_v1 import ExecutorSubjectType, ManifestWorkExecutor
from workagent.executor.base import InvalidExecutorError


class ServiceAccountExecutor(ServiceAccount):
    """A work's executor: a service account on the spoke (its ``user`` and ``groups``)."""

    @property
    def key(self) -> str:
        """``namespace/name``: the executor's key in the cache and its work queue."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_key(cls, key: str) -> ServiceAccountExecutor:
        """The executor of a :attr:`key`."""
        namespace, _, name = key.partition("/")
        return cls(namespace, name)


def service_account_of(executor: ManifestWorkExecutor) -> ServiceAccountExecutor:
    """The service account a (non-nil) executor names; raises InvalidExecutorError otherwise.

    Go's subject is a struct, not a pointer: a missing subject has an empty
    type, hence the same "only support" error as a wrong type.
    """
    subject = executor.subject
    if subject is None or subject.type != ExecutorSubjectType.SERVICE_ACCOUNT:
        raise InvalidExecutorError(
            f"only support {ExecutorSubjectType.SERVICE_ACCOUNT.value} type for the executor"
        )
    account = subject.service_account
    if account is None:
        raise InvalidExecutorError("the executor service account is nil")
    return ServiceAccountExecutor(account.namespace, account.name)


@dataclass(frozen=True)
class ManifestTarget:
    """The object a manifest writes: the SubjectAccessReview's resource attributes."""

    group: str
    version: str
    resource: str
    namespace: str
    name: str

    @classmethod
    def of(cls, resource: Resource, obj: dict[str, Any]) -> ManifestTarget:
        """The target of manifest ``obj`` mapped to ``resource``.

        A cluster-scoped resource has no namespace even if the manifest sets one
        (spec section 4.4 step 1).
        """
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        namespace = meta.get("namespace") if resource.namespaced else ""
        name = meta.get("name")
        return cls(
            group=resource.group,
            version=resource.version,
            resource=resource.plural,
            namespace=namespace if isinstance(namespace, str) else "",
            name=name if isinstance(name, str) else "",
        )

    def describe(self) -> str:
        """``<group> <resource>, <namespace> <name>`` as OCM's messages print it.

        Empty parts stay empty (Go's ``%s %s, %s %s``), so a core-group resource
        reads ``" configmaps, ns name"``.
        """
        return f"{self.group} {self.resource}, {self.namespace} {self.name}"
