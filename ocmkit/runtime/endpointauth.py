"""Delegated authentication and authorization of the endpoint, as library-go's.

OCM's programs serve ``/metrics`` only to callers the API server vouches
for: a bearer token is looked up with a TokenReview, a request without one is
``system:anonymous``, and anyone but ``system:masters`` needs a
SubjectAccessReview allowing the request's verb (``get``) on its path. The
probes are allowed to everyone, so the kubelet needs no credentials, but a
token that does not authenticate is refused there too (401), as library-go
does. The reviews are made with the program's own client (its
``--kubeconfig``), which needs ``create`` on ``tokenreviews`` and
``subjectaccessreviews`` (ClusterRole ``system:auth-delegator``).

Answers are cached as library-go configures them: an authenticated token and
an allowed request for 35 s (a 30 s scrape interval costs no review every
other time), a denial for 10 s; a token that fails is asked again each time
(requests with the same token share a review under way, as library-go's do).
Client certificates are not requested, so a caller presenting one is
anonymous.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Final

import structlog
from aiohttp import web

from ocmkit.kube import KubeClient, KubeError
from ocmkit.kube.access import (
    AUTHENTICATED_GROUP,
    TokenReviewer,
    TTLCache,
    UserInfo,
    access_decision,
    subject_access_review,
)

log = structlog.get_logger(__name__)

#: Paths served to anyone (the kubelet's probes), as library-go sets them.
ALWAYS_ALLOWED_PATHS: Final = frozenset({"/healthz", "/readyz", "/livez"})
#: The group allowed everything without a review, as library-go sets it.
PRIVILEGED_GROUP: Final = "system:masters"
ANONYMOUS: Final = UserInfo("system:anonymous", ("system:unauthenticated",))
ALLOW_SECONDS: Final = 35.0
DENY_SECONDS: Final = 10.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _Unauthorized(Exception):
    """Credentials were presented and do not authenticate."""


def _status(code: int, reason: str, message: str, *, details: bool) -> web.Response:
    """A ``metav1.Status`` failure, as the API server's filters write it."""
    status: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        status["details"] = {}
    status["code"] = code
    # Byte for byte as Go writes it: compact, a newline, no charset parameter.
    return web.Response(
        status=code,
        body=json.dumps(status, separators=(",", ":")).encode() + b"\n",
        headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"},
    )


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when there is
    none (absent, another scheme, or empty as in ``Bearer  x``): the caller is then
    anonymous, as the API server treats it."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class DelegatedAuth:
    """The endpoint's authentication and authorization through ``client``'s API server."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._tokens = TokenReviewer(client, ALLOW_SECONDS)
        self._decisions = TTLCache(ALLOW_SECONDS)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Answer 401 or 403 (as the API server's filters) unless the caller may
        make this request; otherwise pass it on."""
        try:
            user = await self.authenticate(request.headers.get("Authorization", ""))
        except _Unauthorized as err:
            log.info("endpoint request unauthorized", path=request.path, reason=str(err))
            return _status(401, "Unauthorized", "Unauthorized", details=False)
        verb = request.method.lower()
        try:
            allowed, reason = await self.authorize(user, verb, request.path)
        except KubeError as err:
            log.warning("endpoint authorization failed", path=request.path, error=str(err))
            # As Go's http.Error: the API server's message, a newline, nosniff.
            return web.Response(
                status=500,
                text=f'Internal Server Error: "{request.path}": {err.message}\n',
                headers={"X-Content-Type-Options": "nosniff"},
            )
        if not allowed:
            message = f'forbidden: User "{user.user}" cannot {verb} path "{request.path}"'
            return _status(
                403, "Forbidden", f"{message}: {reason}" if reason else message, details=True
            )
        return await handler(request)

    async def authenticate(self, header: str) -> UserInfo:
        """The caller of a request with this ``Authorization`` header (anonymous
        without a bearer token); raises _Unauthorized."""
        token = bearer_token(header)
        if token is None:
            return ANONYMOUS
        try:
            answer = await self._tokens.review(token)
        except KubeError as err:
            raise _Unauthorized(f"token review failed: {err}") from None
        if not isinstance(answer, UserInfo):
            raise _Unauthorized(answer)
        if AUTHENTICATED_GROUP in answer.groups:
            return answer
        # As the API server's authenticators, every authenticated user is in the group.
        return dataclasses.replace(answer, groups=(*answer.groups, AUTHENTICATED_GROUP))

    async def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, the authorizer's reason) for ``user`` making ``verb`` on ``path``;
        a failed review raises KubeError."""
        if path in ALWAYS_ALLOWED_PATHS or PRIVILEGED_GROUP in user.groups:
            return True, ""
        key = (user, verb, path)
        cached = self._decisions.get(key)
        if isinstance(cached, tuple):
            return cached
        spec = {"nonResourceAttributes": {"path": path, "verb": verb}, **user.review_subject()}
        decision = await access_decision(self._client, subject_access_review(spec))
        self._decisions.put(key, decision, None if decision[0] else DENY_SECONDS)
        return decision
