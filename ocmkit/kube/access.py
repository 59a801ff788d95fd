"""SubjectAccessReviews: may a user do something? (``authorization.k8s.io/v1``).

The agent asks the spoke whether a work's executor (a :class:`ServiceAccount`)
may apply a manifest; the hub's webhook asks the hub whether a work's author
may ``execute-as`` that executor. Both create the review with their own identity (which needs
``create`` on ``subjectaccessreviews``) and read ``status.allowed``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ocmkit.kube.client import KubeClient
from ocmkit.kube.errors import ServerError
from ocmkit.kube.resource import SUBJECT_ACCESS_REVIEWS

SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True)
class ServiceAccount:
    """A service account, named as the API server authenticates its tokens."""

    namespace: str
    name: str

    @property
    def user(self) -> str:
        """``system:serviceaccount:<ns>:<name>``, the user name its token authenticates as."""
        return f"{SERVICE_ACCOUNT_USER_PREFIX}{self.namespace}:{self.name}"

    @property
    def groups(self) -> list[str]:
        """The groups a service-account token carries, in OCM's order."""
        return [
            SERVICE_ACCOUNTS_GROUP,
            AUTHENTICATED_GROUP,
            f"{SERVICE_ACCOUNTS_GROUP}:{self.namespace}",
        ]


@dataclass(frozen=True)
class ResourceAccess:
    """A resource request to review (``authorizationv1.ResourceAttributes``)."""

    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def attributes(self) -> dict[str, str]:
        """``spec.resourceAttributes`` with Go's omitempty: an empty field means "not set"."""
        return {key: value for key, value in dataclasses.asdict(self).items() if value}


def subject_access_review(spec: dict[str, Any]) -> dict[str, Any]:
    """A SubjectAccessReview with ``spec``."""
    return {
        "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
        "kind": SUBJECT_ACCESS_REVIEWS.kind,
        "spec": spec,
    }


async def access_allowed(client: KubeClient, review: dict[str, Any]) -> bool:
    """Create ``review``; whether the authorizer allowed it (API failures raise KubeError)."""
    answer = await client.create(SUBJECT_ACCESS_REVIEWS, review)
    status = answer.get("status") if isinstance(answer, dict) else None
    if not isinstance(status, dict):
        raise ServerError(500, "InternalError", "the SubjectAccessReview answer has no status")
    return status.get("allowed") is True
