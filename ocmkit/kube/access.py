"""Who is a caller, and may they do something: TokenReviews and SubjectAccessReviews.

The agent asks the spoke whether a work's executor (a :class:`ServiceAccount`)
may apply a manifest; the hub's webhook asks the hub whether a work's author
may ``execute-as`` that executor. Both create the review with their own identity (which needs
``create`` on ``subjectaccessreviews``) and read ``status.allowed``. The gRPC
server and the programs' endpoints also learn who a bearer token belongs to
(:func:`review_token`, which needs ``create`` on ``tokenreviews``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ocmkit.kube.client import KubeClient
from ocmkit.kube.errors import ServerError
from ocmkit.kube.resource import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS

SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
AUTHENTICATED_GROUP = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    """An authenticated caller, as a TokenReview or a client certificate names it."""

    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def review_subject(self) -> dict[str, Any]:
        """The subject fields of a SubjectAccessReview's spec (empty ones left out)."""
        subject: dict[str, Any] = {"user": self.user, "groups": list(self.groups)}
        if self.uid:
            subject["uid"] = self.uid
        if self.extra:
            subject["extra"] = {key: list(values) for key, values in self.extra}
        return subject


class TTLCache:
    """Answers kept for ``seconds`` (monotonic clock); bounded by dropping all at
    ``limit`` entries, which only costs new reviews."""

    def __init__(self, seconds: float, limit: int = 10_000) -> None:
        self.seconds = seconds
        self._limit = limit
        self._entries: dict[Hashable, tuple[float, Any]] = {}

    def get(self, key: Hashable) -> Any:
        """The value kept under ``key``; None when absent or expired."""
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            self._entries.pop(key, None)
            return None
        return entry[1]

    def put(self, key: Hashable, value: Any, seconds: float | None = None) -> None:
        """Keep ``value`` for ``seconds`` (the cache's own by default)."""
        if len(self._entries) >= self._limit:
            self._entries.clear()
        ttl = self.seconds if seconds is None else seconds
        self._entries[key] = (time.monotonic() + ttl, value)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


async def review_token(client: KubeClient, token: str) -> UserInfo | str:
    """Who ``token`` authenticates as, by a TokenReview: the user, or why not (the
    review's own error, e.g. ``invalid bearer token``). API failures raise KubeError."""
    body = {"apiVersion": TOKEN_REVIEWS.api_version, "kind": TOKEN_REVIEWS.kind}
    review = await client.create(TOKEN_REVIEWS, {**body, "spec": {"token": token}})
    status = _mapping(review.get("status"))
    if status.get("authenticated") is not True:
        return str(status.get("error") or "token not authenticated")
    user = _mapping(status.get("user"))
    extra = _mapping(user.get("extra"))
    return UserInfo(
        user=str(user.get("username") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        uid=str(user.get("uid") or ""),
        extra=tuple(sorted((str(k), tuple(str(v) for v in vs or ())) for k, vs in extra.items())),
    )


class TokenReviewer:
    """:func:`review_token` through ``client``, an authenticated token's user kept for
    ``seconds`` (a token that fails is asked about again).

    Callers asking about the same token while its review is under way share that
    review, as library-go's token cache does: a client opening several requests
    (a scrape's retries, an agent's first RPCs) costs one TokenReview.
    """

    def __init__(self, client: KubeClient, seconds: float) -> None:
        self._client = client
        self._users = TTLCache(seconds)
        self._inflight: dict[str, asyncio.Task[UserInfo | str]] = {}

    async def review(self, token: str) -> UserInfo | str:
        """The token's user, or why it does not authenticate; API failures raise KubeError."""
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._users.get(key)
        if isinstance(cached, UserInfo):
            return cached
        task = self._inflight.get(key)
        if task is None:
            task = self._inflight[key] = asyncio.ensure_future(self._review(key, token))
            task.add_done_callback(self._finished(key))
        # Shielded: a caller that goes away must not cancel the review the others wait for.
        return await asyncio.shield(task)

    async def _review(self, key: str, token: str) -> UserInfo | str:
        answer = await review_token(self._client, token)
        if isinstance(answer, UserInfo):
            self._users.put(key, answer)
        return answer

    def _finished(self, key: str) -> Callable[[asyncio.Task[UserInfo | str]], None]:
        def done(task: asyncio.Task[UserInfo | str]) -> None:
            self._inflight.pop(key, None)
            if not task.cancelled():
                task.exception()  # retrieved: every waiter may have gone

        return done


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
    return (await access_decision(client, review))[0]


async def access_decision(client: KubeClient, review: dict[str, Any]) -> tuple[bool, str]:
    """Create ``review``; (allowed, the authorizer's reason) (API failures raise KubeError)."""
    answer = await client.create(SUBJECT_ACCESS_REVIEWS, review)
    status = answer.get("status") if isinstance(answer, dict) else None
    if not isinstance(status, dict):
        raise ServerError(500, "InternalError", "the SubjectAccessReview answer has no status")
    return status.get("allowed") is True, str(status.get("reason") or "")
