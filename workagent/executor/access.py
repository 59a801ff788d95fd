"""SubjectAccessReviews on the spoke for an executor's service account."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ocmkit.kube import KubeClient
from ocmkit.kube.access import ResourceAccess, access_allowed, subject_access_review
from workagent.executor.subject import ManifestTarget, ServiceAccountExecutor

# What applying a manifest needs, in the order OCM asks (the first denial stops).
APPLY_VERBS = ("create", "update", "patch", "get")
DELETE_VERB = "delete"


@dataclass(frozen=True)
class NonResourceAccess:
    """A non-resource request to review (``authorizationv1.NonResourceAttributes``)."""

    verb: str
    path: str


Access = ResourceAccess | NonResourceAccess


class AccessReviewer:
    """Asks the spoke whether an executor may do something (one SubjectAccessReview each).

    The agent's own identity creates the reviews, so it needs ``create`` on
    ``subjectaccessreviews``; nothing is impersonated.
    """

    def __init__(self, spoke: KubeClient) -> None:
        self.spoke = spoke

    async def allowed(self, executor: ServiceAccountExecutor, access: Access) -> bool:
        """Whether ``executor`` may perform ``access``; API failures raise their KubeError."""
        spec: dict[str, Any] = {"user": executor.user, "groups": executor.groups}
        if isinstance(access, ResourceAccess):
            spec["resourceAttributes"] = access.attributes()
        else:
            spec["nonResourceAttributes"] = {"path": access.path, "verb": access.verb}
        return await access_allowed(self.spoke, subject_access_review(spec))

    async def allowed_to_apply(
        self, executor: ServiceAccountExecutor, target: ManifestTarget, *, owned_by_work: bool
    ) -> bool:
        """Whether ``executor`` holds every verb applying ``target`` needs (spec 16 step 2).

        Reviews run one at a time in OCM's verb order and stop at the first
        denial, so a denied executor costs as few requests as possible.
        """
        # ``delete`` too when the work owns the object.
        for verb in (*APPLY_VERBS, DELETE_VERB) if owned_by_work else APPLY_VERBS:
            access = ResourceAccess(
                verb=verb,
                group=target.group,
                version=target.version,
                resource=target.resource,
                namespace=target.namespace,
                name=target.name,
            )
            if not await self.allowed(executor, access):
                return False
        return True
