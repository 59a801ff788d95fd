"""Typed errors of the Kubernetes client, mapped from the API server's ``Status`` bodies.

Controllers branch on the error *type* (``except NotFound``), never on message
text. The mapping looks at the Status ``reason`` first, because it is more
specific than the HTTP code (409 is both ``AlreadyExists`` and ``Conflict``),
and falls back to the code for bodies without a known reason (proxies, load
balancers and aggregated API servers do not always send a Status).
"""

from __future__ import annotations

import json
from typing import Any


class KubeConfigError(Exception):
    """A kubeconfig or in-cluster configuration cannot be used (missing, malformed, incomplete)."""


class KubeError(Exception):
    """An API request failed; ``code`` is the HTTP status (0 when no answer was received)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        status: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}" if code else f"{reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.status = status
        self.retry_after = retry_after


class BadRequest(KubeError):
    """400: the request itself is malformed (bad selector, undecodable patch, ...)."""


class Unauthorized(KubeError):
    """401: the credentials were refused."""


class Forbidden(KubeError):
    """403: the identity may not do this (RBAC), or the namespace is terminating."""


class NotFound(KubeError):
    """404: the object (or the resource type) does not exist."""


class AlreadyExists(KubeError):
    """409 AlreadyExists: a create named an object that exists."""


class Conflict(KubeError):
    """409 Conflict: a stale resourceVersion, a failed precondition or an apply conflict."""


class Gone(KubeError):
    """410: the resourceVersion is too old (compacted); relist."""


class Invalid(KubeError):
    """422: the object failed validation; ``status['details']['causes']`` names the fields."""


class TooManyRequests(KubeError):
    """429: throttled by the server; wait ``retry_after`` seconds when given."""


class ServerError(KubeError):
    """5xx: the server failed (internal error, unavailable, timeout)."""


class Unreachable(KubeError):
    """No answer: connection refused or reset, TLS failure, or a timeout. ``code`` is 0."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "Unreachable", message)


class NoKindMatch(NotFound):
    """The API server serves no resource for this group/version/kind (or plural)."""

    def __init__(self, message: str) -> None:
        super().__init__(404, "NotFound", message)


_BY_REASON: dict[str, type[KubeError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": ServerError,
    "ServiceUnavailable": ServerError,
    "ServerTimeout": ServerError,
    "Timeout": ServerError,
}

# The reason the API server gives each code, for answers without a Status body.
_DEFAULT_REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


# client-go's messages for answers without a Status body (the body is only a cause there);
# None: the body's text is the message (it says who may not do what, or which types).
_GENERIC_MESSAGES: dict[int, str | None] = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: None,
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    415: None,
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be "
    "processing the request",
}


def generic_message(code: int, text: str) -> str:
    """client-go's message for a ``code`` answer whose body (``text``) is not a Status."""
    if code in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[code] or text
    if code == 406:
        if text and text != "unknown":
            return text
        return "the server was unable to respond with a content type that the client supports"
    if code >= 500:
        quoted = json.dumps(text, ensure_ascii=False)
        return f"an error on the server ({quoted}) has prevented the request from succeeding"
    return f"the server responded with the status code {code} but did not return more information"


def error_from_status(
    code: int, status: dict[str, Any] | None, *, retry_after: float | None = None, text: str = ""
) -> KubeError:
    """Build the typed error for a failed answer.

    ``status`` is the decoded Status body if the server sent one; ``text`` is a
    short excerpt of any other body. ``retry_after`` (the Retry-After header)
    wins over ``details.retryAfterSeconds``.
    """
    reason = ""
    message = text
    if status is not None:
        reason = str(status.get("reason") or "")
        message = str(status.get("message") or text)
        # A Status embedded in a watch ERROR event carries its own code.
        body_code = status.get("code")
        if isinstance(body_code, int) and body_code > 0 and code == 0:
            code = body_code
        if retry_after is None:
            details = status.get("details")
            if isinstance(details, dict):
                seconds = details.get("retryAfterSeconds")
                if isinstance(seconds, int | float) and seconds >= 0:
                    retry_after = float(seconds)
    default_reason = _DEFAULT_REASONS.get(code, "Unknown")
    # The reason is more specific than the code (409 is AlreadyExists or Conflict).
    cls = _BY_REASON.get(reason) or _BY_REASON.get(default_reason)
    if cls is None:
        cls = ServerError if code >= 500 else KubeError
    return cls(code, reason or default_reason, message, status, retry_after)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header; None for absent or HTTP-date values."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        # The HTTP-date form is legal but no API server sends it; ignore it.
        return None
    return seconds if seconds >= 0 else None
