"""The ``execute-as`` permission check: a SubjectAccessReview on the hub (hub.md §5.2).

A ManifestWork with an executor makes the agent act as that service account
on the managed cluster, so whoever writes the work must hold the verb
``execute-as`` on ``manifestworks`` (group ``work.open-cluster-management.io``)
in the work's namespace, for the resource name
``system:serviceaccount:<namespace>:<name>``. The webhook asks the hub's
authorizer through a SubjectAccessReview made with its own identity, which
therefore needs ``create`` on ``subjectaccessreviews``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from hubcontroller.webhook.admission import UserInfo
from ocmkit.kube import KubeClient
from ocmkit.kube.access import ResourceAccess, ServiceAccount, access_allowed, subject_access_review
from ocmkit.kube.resource import MANIFESTWORKS

#: The permission the author of a work with an executor needs: ``execute-as`` on
#: ``manifestworks`` (each request adds the work's namespace and the executor's user name).
EXECUTE_AS: Final = ResourceAccess(
    verb="execute-as", group=MANIFESTWORKS.group, resource=MANIFESTWORKS.plural
)


@dataclass(frozen=True)
class ExecuteAsRequest:
    """May ``user`` write a ManifestWork in ``namespace`` that runs as the executor?"""

    user: UserInfo
    namespace: str
    executor: ServiceAccount

    def subject_access_review(self) -> dict[str, Any]:
        """The SubjectAccessReview body, with Go's omitempty applied to every field."""
        # The resource name is the executor's user name, system:serviceaccount:<ns>:<name>.
        access = replace(EXECUTE_AS, namespace=self.namespace, name=self.executor.user)
        spec: dict[str, Any] = {"resourceAttributes": access.attributes()}
        if self.user.username:
            spec["user"] = self.user.username
        if self.user.groups:
            spec["groups"] = list(self.user.groups)
        if self.user.extra:
            spec["extra"] = {key: list(values) for key, values in self.user.extra.items()}
        if self.user.uid:
            spec["uid"] = self.user.uid
        return subject_access_review(spec)


#: Answers an :class:`ExecuteAsRequest`: True when allowed; raises when the check itself fails.
#: The rules take this plain callable, so they run without an API server in tests.
AccessCheck = Callable[[ExecuteAsRequest], Awaitable[bool]]


class HubAccessReviewer:
    """An :data:`AccessCheck` that creates a SubjectAccessReview on the hub.

    Every check is one request, as in OCM: nothing is cached, so a revoked
    binding takes effect at once. API failures raise the client's KubeError.
    """

    def __init__(self, hub: KubeClient) -> None:
        self.hub = hub

    async def __call__(self, request: ExecuteAsRequest) -> bool:
        """Whether the hub's authorizer allows ``request``."""
        return await access_allowed(self.hub, request.subject_access_review())
