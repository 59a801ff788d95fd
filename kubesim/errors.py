"""Kubernetes ``Status`` errors, worded as kube-apiserver words them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubesim.jsonvalues import go_quote, schema_type


class ApiError(Exception):
    """An error answered to the client as a ``metav1.Status`` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        # What went wrong when the answer does not say (never sent to the client).
        self.detail = ""

    def status(self) -> dict[str, Any]:
        """The ``Status`` body of this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


class UntypedError(ApiError):
    """An error the apiserver answers as a bare Status: no reason, only code and message.

    That is how kube-apiserver reports plain Go errors, e.g. server-side apply's
    "failed to create typed patch object" as a 500.
    """

    def status(self) -> dict[str, Any]:
        """The Status body, without ``reason`` and ``details``."""
        body = super().status()
        body.pop("reason", None)
        body.pop("details", None)
        return body


def _details(name: str, resource: str, group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def qualified(resource: str, group: str) -> str:
    """``deployments.apps`` style name used in messages (core group: bare)."""
    return f"{resource}.{group}" if group else resource


def _about_object(
    code: int, reason: str, resource: str, name: str, group: str, what: str
) -> ApiError:
    """An error worded ``<resource> "<name>" <what>``, with the object in its details."""
    message = f'{qualified(resource, group)} "{name}" {what}'
    return ApiError(code, reason, message, _details(name, resource, group))


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    """404 NotFound for ``resource`` ``name``."""
    return _about_object(404, "NotFound", resource, name, group, "not found")


def not_found_path() -> ApiError:
    """404 for a URL that names no known resource (the server's plain answer)."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    """409 AlreadyExists."""
    return _about_object(409, "AlreadyExists", resource, name, group, "already exists")


def conflict(resource: str, name: str, group: str = "", why: str | None = None) -> ApiError:
    """409 Conflict on an optimistic-concurrency failure."""
    reason = why or (
        "the object has been modified; please apply your changes to the latest version "
        "and try again"
    )
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {reason}',
        _details(name, resource, group),
    )


def invalid(
    kind: str,
    name: str,
    causes: list[dict[str, Any]],
    group: str = "",
) -> ApiError:
    """422 Invalid with one cause per field error.

    Each cause is ``{"reason", "message", "field"}``; the message joins them as
    the apiserver does (``Kind.group "name" is invalid: field: message``).
    """
    qual = f"{kind}.{group}" if group else kind
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    # StatusDetails omits empty fields (a ListOptions has no name, a review no kind).
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    details["causes"] = causes
    return ApiError(422, "Invalid", f'{qual} "{name}" is invalid: {joined}', details)


def shown_value(value: Any) -> str:
    """A bad value as ``field.Error`` shows it: strings quoted as ``%q``, numbers and
    booleans bare, whole numbers without a fraction, objects and arrays by type name."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int | float):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    if isinstance(value, Mapping | list):
        return f'"{schema_type(value)}"'
    return str(value)


def field_invalid(field: str, value: Any, detail: str) -> dict[str, Any]:
    """A FieldValueInvalid cause."""
    return field_invalid_shown(field, shown_value(value), detail)


def field_invalid_shown(field: str, shown: str, detail: str) -> dict[str, Any]:
    """A FieldValueInvalid cause whose value is already rendered (``shown``)."""
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": field,
    }


def field_required(field: str, detail: str = "") -> dict[str, Any]:
    """A FieldValueRequired cause."""
    msg = "Required value" + (f": {detail}" if detail else "")
    return {"reason": "FieldValueRequired", "message": msg, "field": field}


def field_forbidden(field: str, detail: str) -> dict[str, Any]:
    """A FieldValueForbidden cause."""
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def field_not_supported(field: str, value: Any, allowed: list[str]) -> dict[str, Any]:
    """A FieldValueNotSupported cause."""
    quoted = ", ".join(f'"{a}"' for a in allowed)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {shown_value(value)}: supported values: {quoted}",
        "field": field,
    }


def bad_request(message: str) -> ApiError:
    """400 BadRequest."""
    return ApiError(400, "BadRequest", message)


def forbidden(
    resource: str,
    name: str,
    message: str,
    group: str = "",
    causes: list[dict[str, Any]] | None = None,
) -> ApiError:
    """403 Forbidden; ``message`` is the part after ``is forbidden: ``."""
    label = f'{qualified(resource, group)} "{name}"' if name else qualified(resource, group)
    details: dict[str, Any] = _details(name, resource, group) if name else {"kind": resource}
    if group and not name:
        details = {"group": group, "kind": resource}
    if causes:
        details["causes"] = causes
    return ApiError(403, "Forbidden", f"{label} is forbidden: {message}", details)


def unauthorized() -> ApiError:
    """401 Unauthorized (no or unknown bearer token)."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def expired(message: str = "The resourceVersion for the provided list is too old.") -> ApiError:
    """410 Expired (Gone)."""
    return ApiError(410, "Expired", message)


def too_many_requests(retry_after: int = 1) -> ApiError:
    """429 TooManyRequests with a Retry-After header."""
    return ApiError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        {"retryAfterSeconds": retry_after},
        {"Retry-After": str(retry_after)},
    )


def internal_error(
    message: str = "an error on the server has prevented the request from succeeding",
) -> ApiError:
    """500 InternalError."""
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def service_unavailable() -> ApiError:
    """503 ServiceUnavailable."""
    return ApiError(
        503, "ServiceUnavailable", "the server is currently unable to handle the request"
    )


def entity_too_large() -> ApiError:
    """413 RequestEntityTooLarge (body over the 3 MiB limit)."""
    return ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")


def method_not_allowed(method: str) -> ApiError:
    """405 MethodNotAllowed (``method``: the refused HTTP method, not named in the answer)."""
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def unsupported_media_type(content_type: str) -> ApiError:
    """415 for a body type an object write does not decode (``content_type`` not echoed)."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )


def unsupported_patch_type() -> ApiError:
    """415 for a PATCH whose Content-Type is no patch type."""
    return ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


class PageNotFound(ApiError):
    """A path no API group or version serves: Go's plain-text "404 page not found"."""

    def __init__(self) -> None:
        super().__init__(404, "NotFound", "404 page not found")


# etcd's default --max-request-bytes: a write whose stored object is larger fails in etcd.
ETCD_MAX_REQUEST_BYTES = 1_572_864


def etcd_too_large() -> UntypedError:
    """500 from etcd for an object over its request limit.

    kube-apiserver passes etcd's error through unconverted (kubernetes issue
    #112152, still open), so the answer is a Status with code 500, no reason
    and etcd's own words, as logged in kubernetes issue #74600.
    """
    return UntypedError(500, "", "etcdserver: request is too large")


def go_json(value: Any, *, sort: bool) -> str:
    """Compact JSON as Go's encoding/json writes it (HTML characters escaped)."""
    # Not ocmkit.govalues.go_marshal: kubesim is the cluster the programs are tested against,
    # so by contract it imports none of their code (a shared bug would hide from the tests).
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort)
    for char, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text
