"""The uncached executor validator: SubjectAccessReviews on every call (spec section 16)."""

from __future__ import annotations

from typing import Any

from ocmkit.kube import KubeClient, Resource
from ocmkit.runtime import Controller, Informer
from schemas.work_v1 import ManifestWorkExecutor
from workagent.executor.access import AccessReviewer
from workagent.executor.base import NotAllowedError
from workagent.executor.escalation import AccessReviewEscalationChecker
from workagent.executor.subject import ManifestTarget, ServiceAccountExecutor, service_account_of


class BasicExecutorValidator:
    """Checks an executor's permissions on the spoke for every manifest, every time.

    1. no ``spec.executor``: allowed, nothing is asked;
    2. the subject must be a ServiceAccount with ``serviceAccount`` set
       (:class:`~workagent.executor.base.InvalidExecutorError` otherwise);
    3. SubjectAccessReviews for ``create``, ``update``, ``patch``, ``get`` and,
       when the work owns the resource, ``delete`` (first denial:
       :class:`~workagent.executor.base.NotAllowedError`);
    4. for Roles, ClusterRoles and their bindings, the escalation check.
    """

    def __init__(self, spoke: KubeClient, *, reviewer: AccessReviewer | None = None) -> None:
        self.reviewer = reviewer or AccessReviewer(spoke)
        self.escalation = AccessReviewEscalationChecker(spoke, self.reviewer)

    async def validate(
        self,
        executor: ManifestWorkExecutor | None,
        resource: Resource,
        obj: dict[str, Any],
        *,
        owned_by_work: bool,
    ) -> None:
        """Return if the executor may apply ``obj``; raise NotAllowedError otherwise."""
        if executor is None:
            return
        account = service_account_of(executor)
        target = ManifestTarget.of(resource, obj)
        if not await self.allowed_to_apply(account, target, owned_by_work):
            # A denied SubjectAccessReview (spec section 16 step 2).
            raise NotAllowedError(f"not allowed to apply the resource {target.describe()}")
        await self.escalation.check(account, target, obj)

    async def allowed_to_apply(
        self, account: ServiceAccountExecutor, target: ManifestTarget, owned_by_work: bool
    ) -> bool:
        """Whether ``account`` holds every verb applying ``target`` needs (reviews, uncached)."""
        return await self.reviewer.allowed_to_apply(account, target, owned_by_work=owned_by_work)

    def informers(self) -> list[Informer]:
        """None: nothing is cached."""
        return []

    def controllers(self) -> list[Controller]:
        """None: nothing is cached."""
        return []
