"""The AdmissionReview envelope: reading requests and writing controller-runtime's answers.

Answers are shaped exactly as controller-runtime's webhook handler writes
them (each :class:`Rejection` gives its ``status``), because that is what OCM
users and tools see (hub.md §4). The HTTP status is 200 in every case: the
answer is in the review. The answer echoes the request's ``uid`` and the
review's ``apiVersion`` (v1, or v1beta1 when asked in v1beta1, as the shipped
registration allows both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ocmkit.govalues import json_type

ADMISSION_V1: Final = "admission.k8s.io/v1"
ADMISSION_V1BETA1: Final = "admission.k8s.io/v1beta1"
ADMISSION_VERSIONS: Final = (ADMISSION_V1, ADMISSION_V1BETA1)
ADMISSION_REVIEW: Final = "AdmissionReview"
#: The "version" of an answer to a request that never became a review (no kind, no apiVersion).
UNTYPED: Final = ""

CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
CONNECT: Final = "CONNECT"


# -- rule outcomes ----------------------------------------------------------------------


class Rejection(Exception):
    """A request that is not allowed; :meth:`status` is the answer's ``status``."""

    code: int = 403

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` of the answer."""
        raise NotImplementedError


class BadRequest(Rejection):
    """A rule failed with ``apierrors.NewBadRequest``: 400, reason BadRequest."""

    code = 400

    def status(self) -> dict[str, Any]:
        """``{metadata, status: Failure, message, reason: BadRequest, code: 400}``."""
        return go_status(400, self.message, reason="BadRequest", status="Failure")


class Denied(Rejection):
    """A rule failed with a plain error: controller-runtime's ``Denied``, 403 Forbidden."""

    def status(self) -> dict[str, Any]:
        """``{metadata, message, reason: Forbidden, code: 403}``."""
        return go_status(403, self.message, reason="Forbidden")


class Errored(Rejection):
    """The request could not be processed (``admission.Errored``): 400, or 500 for our bugs."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

    def status(self) -> dict[str, Any]:
        """``{metadata, message, code}``, no reason, as controller-runtime writes it."""
        return go_status(self.code, self.message)


def go_status(
    code: int, message: str = "", *, reason: str = "", status: str = ""
) -> dict[str, Any]:
    """A ``metav1.Status`` as Go serialises it: ``metadata`` always, empties omitted."""
    out: dict[str, Any] = {"metadata": {}}
    if status:
        out["status"] = status
    if message:
        out["message"] = message
    if reason:
        out["reason"] = reason
    if code:
        out["code"] = code
    return out


# -- requests -----------------------------------------------------------------------------


@dataclass(frozen=True)
class UserInfo:
    """The requesting user, as the API server authenticated it."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupVersionKind:
    """``request.kind``: the type of the object under admission."""

    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        api_version = f"{self.group}/{self.version}" if self.group else self.version
        return f"{api_version} {self.kind}"


@dataclass(frozen=True)
class AdmissionRequest:
    """The fields of ``request`` the rules use; ``object``/``old_object`` are None when absent."""

    api_version: str
    uid: str
    operation: str
    namespace: str
    name: str
    kind: GroupVersionKind | None
    user: UserInfo
    object: Any
    old_object: Any


def answer(api_version: str, uid: str, allowed: bool, status: Mapping[str, Any]) -> dict[str, Any]:
    """An AdmissionReview answer (Go field order: kind, apiVersion; uid, allowed, status);
    with ``api_version`` :data:`UNTYPED`, the bare response Go writes for a review it could
    not decode."""
    response = {"response": {"uid": uid, "allowed": allowed, "status": dict(status)}}
    if api_version == UNTYPED:
        return response
    return {"kind": ADMISSION_REVIEW, "apiVersion": api_version, **response}


def parse_review(review: Any) -> AdmissionRequest:
    """Read an AdmissionReview (v1 or v1beta1); raises :class:`Errored` (400) when malformed.

    Lenient where controller-runtime is: ``apiVersion`` and ``kind`` may be
    absent (then v1 is assumed), unknown fields are ignored, and JSON nulls
    read as absent.
    """
    if not isinstance(review, Mapping):
        raise Errored(
            400,
            f"couldn't decode the AdmissionReview: expected a JSON object, got {json_type(review)}",
        )
    api_version = review.get("apiVersion")
    if api_version in (None, ""):
        api_version = ADMISSION_V1
    if api_version not in ADMISSION_VERSIONS:
        raise Errored(
            400,
            f"unsupported AdmissionReview apiVersion {_quote(api_version)}: "
            f"expected {ADMISSION_V1} or {ADMISSION_V1BETA1}",
        )
    kind = review.get("kind")
    if kind not in (None, "", ADMISSION_REVIEW):
        raise Errored(400, f"expected an AdmissionReview, got kind {_quote(kind)}")
    # Go decodes into a request it made beforehand: none reads as an empty one.
    request = review.get("request")
    if request is None:
        request = {}
    if not isinstance(request, Mapping):
        raise Errored(400, f"request: expected an object, got {json_type(request)}")
    return AdmissionRequest(
        api_version=str(api_version),
        uid=_string(request, "uid", "request.uid"),
        operation=_string(request, "operation", "request.operation"),
        namespace=_string(request, "namespace", "request.namespace"),
        name=_string(request, "name", "request.name"),
        kind=_gvk(request.get("kind")),
        user=_user(request.get("userInfo")),
        object=request.get("object"),
        old_object=request.get("oldObject"),
    )


def request_uid(review: Any) -> str:
    """The request's uid if one can be read from a (possibly malformed) review, else ``""``."""
    if isinstance(review, Mapping):
        request = review.get("request")
        if isinstance(request, Mapping) and isinstance(request.get("uid"), str):
            return str(request["uid"])
    return ""


def review_version(review: Any) -> str:
    """The review's apiVersion if it is one we answer in, else v1; :data:`UNTYPED` for
    what is no JSON object (Go fails to decode it)."""
    if not isinstance(review, Mapping):
        return UNTYPED
    if review.get("apiVersion") in ADMISSION_VERSIONS:
        return str(review["apiVersion"])
    return ADMISSION_V1


def _gvk(raw: Any) -> GroupVersionKind | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise Errored(400, f"request.kind: expected an object, got {json_type(raw)}")
    return GroupVersionKind(
        group=_string(raw, "group", "request.kind.group"),
        version=_string(raw, "version", "request.kind.version"),
        kind=_string(raw, "kind", "request.kind.kind"),
    )


def _user(raw: Any) -> UserInfo:
    if raw is None:
        return UserInfo()
    where = "request.userInfo"
    if not isinstance(raw, Mapping):
        raise Errored(400, f"{where}: expected an object, got {json_type(raw)}")
    extra_raw = raw.get("extra")
    extra: dict[str, tuple[str, ...]] = {}
    if extra_raw is not None:
        if not isinstance(extra_raw, Mapping):
            raise Errored(400, f"{where}.extra: expected an object, got {json_type(extra_raw)}")
        for key, values in extra_raw.items():
            extra[str(key)] = _strings(values, f"{where}.extra.{key}")
    return UserInfo(
        username=_string(raw, "username", f"{where}.username"),
        uid=_string(raw, "uid", f"{where}.uid"),
        groups=_strings(raw.get("groups"), f"{where}.groups"),
        extra=extra,
    )


def _string(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Errored(400, f"{where}: expected a string, got {json_type(value)}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Errored(400, f"{where}: expected a list of strings")
    return tuple(value)


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else json_type(value)
