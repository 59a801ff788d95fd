"""Who is calling, and may they: OCM's gRPC authentication and authorization.

A bearer token (TokenReview) first, else the verified client certificate;
then a SubjectAccessReview for the event's verb on ``manifestworks`` in the
cluster namespace. Allowed answers are cached for ``CACHE_SECONDS``, so a busy
agent does not cost a review per status event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID

from ocmkit.cloudevents.event import (
    CREATE_REQUEST,
    DELETE_REQUEST,
    RESYNC_REQUEST,
    STATUS,
    UPDATE_REQUEST,
    EventDecodeError,
    EventType,
)
from ocmkit.kube import KubeClient, KubeError
from ocmkit.kube.access import (
    ResourceAccess,
    TokenReviewer,
    TTLCache,
    UserInfo,
    access_allowed,
    subject_access_review,
)
from ocmkit.kube.resource import MANIFESTWORKS

CACHE_SECONDS = 30.0
WATCH_ACTION = "watch_request"

_VERBS = {
    CREATE_REQUEST: "create",
    UPDATE_REQUEST: "update",
    DELETE_REQUEST: "delete",
    WATCH_ACTION: "watch",
    RESYNC_REQUEST: "list",
}


class AuthError(Exception):
    """A refused call: ``code`` is the gRPC status to answer with."""

    code = grpc.StatusCode.UNAUTHENTICATED


class AccessDenied(AuthError):
    """The caller may not send this event (``access denied: <reason>``)."""

    code = grpc.StatusCode.PERMISSION_DENIED

    def __init__(self, reason: str) -> None:
        super().__init__(f"access denied: {reason}")


def parse_event_type(text: str) -> EventType:
    """The type of an event to authorize; raises AccessDenied when it has none."""
    try:
        return EventType.parse(text)
    except EventDecodeError as err:
        raise AccessDenied(str(err)) from None


def certificate_identity(pem: bytes) -> UserInfo:
    """User (CN) and groups (O) of a client certificate."""
    return _subject_identity(x509.load_pem_x509_certificate(pem))


def _subject_identity(cert: x509.Certificate) -> UserInfo:
    subject = cert.subject
    common = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return UserInfo(
        user=str(common[0].value) if common else "",
        groups=tuple(str(o.value) for o in orgs),
    )


class Authenticator:
    """Bearer tokens through TokenReview, then verified client certificates.

    ``peer_certificate`` is set when TLS ends in front of gRPC
    (:mod:`hubcontroller.grpcserver.tlsfront`): it gives the verified certificate
    (DER) of a call's peer; otherwise gRPC's own TLS reports it.
    """

    def __init__(self, hub: KubeClient) -> None:
        self._tokens = TokenReviewer(hub, CACHE_SECONDS)
        self.peer_certificate: Callable[[str], bytes | None] | None = None

    async def authenticate(self, context: grpc.aio.ServicerContext[Any, Any]) -> UserInfo:
        """The caller's identity; raises AuthError (UNAUTHENTICATED)."""
        metadata = dict(context.invocation_metadata() or ())
        header = metadata.get("authorization")
        token_error = "invalid token"
        if isinstance(header, str) and header:
            token = header.removeprefix("Bearer ")
            try:
                return await self._review(token)
            except AuthError as err:
                token_error = str(err)
        try:
            if self.peer_certificate is not None:
                der = self.peer_certificate(context.peer())
                if der is not None:
                    return _subject_identity(x509.load_der_x509_certificate(der))
            else:
                pems = list(context.auth_context().get("x509_pem_cert") or [])
                if pems:
                    return certificate_identity(pems[0])
        except ValueError:
            raise AuthError("could not verify peer certificate") from None
        if header:
            raise AuthError(token_error)
        raise AuthError("could not verify peer certificate")

    async def _review(self, token: str) -> UserInfo:
        try:
            answer = await self._tokens.review(token)
        except KubeError as err:
            raise AuthError(f"token review failed: {err}") from None
        if not isinstance(answer, UserInfo):
            raise AuthError("token not authenticated")
        return answer


class Authorizer:
    """SubjectAccessReviews for ManifestWork events of one cluster namespace."""

    def __init__(self, hub: KubeClient) -> None:
        self._hub = hub
        self._allowed = TTLCache(CACHE_SECONDS)

    async def authorize(self, who: UserInfo, cluster: str, event_type: EventType) -> None:
        """Raise AccessDenied unless ``who`` may send this event."""
        verb = _VERBS.get(event_type.action)
        if verb is None:
            raise AccessDenied(f"unsupported action {event_type.action}")
        subresource = "status" if event_type.subresource == STATUS else ""
        key = (who, cluster, verb, subresource)
        if self._allowed.get(key):
            return
        access = ResourceAccess(
            verb=verb,
            group=MANIFESTWORKS.group,
            resource=MANIFESTWORKS.plural,
            subresource=subresource,
            namespace=cluster,
        )
        spec = {
            "resourceAttributes": access.attributes(),
            "user": who.user,
            "groups": list(who.groups),
        }
        try:
            allowed = await access_allowed(self._hub, subject_access_review(spec))
        except KubeError as err:
            raise AccessDenied(str(err)) from None
        if not allowed:
            raise AccessDenied(
                f"the event {event_type} is not allowed, (cluster={cluster}, user={who.user})"
            )
        self._allowed.put(key, True)
