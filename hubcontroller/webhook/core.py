"""The admission core: an AdmissionReview in, the answer out, no HTTP involved.

:func:`validate` takes a decoded review, :func:`validate_json` the request
body (which also gives each manifest's exact byte length for the size
limit). Both return the AdmissionReview answer; they never raise, whatever
the input: malformed requests get a 400 answer and our own bugs a 500 one.
The only I/O is the ``execute-as`` check, injected as ``sar``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from hubcontroller.webhook import metrics
from hubcontroller.webhook.access import AccessCheck
from hubcontroller.webhook.admission import (
    ADMISSION_V1,
    CONNECT,
    CREATE,
    DELETE,
    UNTYPED,
    UPDATE,
    AdmissionRequest,
    Errored,
    Rejection,
    answer,
    go_status,
    parse_review,
    request_uid,
    review_version,
)
from hubcontroller.webhook.rawjson import (
    GO_REPLACE,
    Path,
    lone_surrogates_replaced,
    parse_keeping_raw,
)
from hubcontroller.webhook.resources import (
    MANIFESTWORK,
    RESOURCES,
    WebhookResource,
    WorkObject,
    decode,
    resource_for,
)
from hubcontroller.webhook.rules import validate_manifest_work, validate_replica_set
from hubcontroller.webhook.settings import ValidationOptions

log = structlog.get_logger(__name__)

_RAW_PATHS: tuple[Path, ...] = tuple(r.raw_manifests_path for r in RESOURCES)


@dataclass(frozen=True)
class Verdict:
    """An answer and what it says, for logs and metrics."""

    answer: dict[str, Any]
    allowed: bool
    code: int
    message: str
    operation: str = ""
    uid: str = ""

    @classmethod
    def refused(cls, rejection: Rejection, api_version: str, uid: str, operation: str) -> Verdict:
        """The answer that refuses a request."""
        refusal = answer(api_version, uid, False, rejection.status())
        return cls(refusal, False, rejection.code, rejection.message, operation, uid)


class AdmissionValidator:
    """Applies the rules of §5 with fixed options and access check.

    ``resource`` (given by the webhook path) says which rules apply; without
    it they are chosen from ``request.kind``.
    """

    def __init__(self, options: ValidationOptions, access: AccessCheck) -> None:
        self.options = options
        self.access = access

    async def review_json(
        self, body: bytes | str, resource: WebhookResource | None = None
    ) -> Verdict:
        """Answer a review given as the request body (JSON, UTF-8)."""
        # Go reads invalid UTF-8 (byte by byte) and lone UTF-16 surrogates in strings as U+FFFD.
        text = body.decode("utf-8", errors=GO_REPLACE) if isinstance(body, bytes) else body
        try:
            review, raws = parse_keeping_raw(text, _RAW_PATHS)
            review = lone_surrogates_replaced(review, text)
        except (ValueError, RecursionError) as err:  # JSONDecodeError, nesting past the stack
            rejection = Errored(400, f"couldn't decode the AdmissionReview: {err}")
            return Verdict.refused(rejection, UNTYPED, "", "")
        return await self.review(review, resource, raw_manifests=raws)

    async def review(
        self,
        review: Any,
        resource: WebhookResource | None = None,
        *,
        raw_manifests: Mapping[Path, Sequence[str]] | None = None,
    ) -> Verdict:
        """Answer a decoded review; ``raw_manifests`` as :func:`parse_keeping_raw` finds them."""
        api_version, uid, operation = ADMISSION_V1, "", ""
        try:
            api_version = review_version(review)
            uid = request_uid(review)
            request = parse_review(review)
            operation = request.operation
            if operation not in (CREATE, UPDATE, DELETE, CONNECT):
                raise Errored(400, f'unknown operation "{operation}"')
            target = resource or _resource_of(request)
            raws = (raw_manifests or {}).get(target.raw_manifests_path)
            await self._admit(request, target, raws)
        except Rejection as rejection:
            return Verdict.refused(rejection, api_version, uid, operation)
        except Exception as err:
            # A bug of ours must not take the API server's writes down with a crash.
            log.exception("admission failed unexpectedly", uid=uid, operation=operation)
            metrics.PANICS.inc()
            failure = Errored(500, f"internal error: {err!r}")
            return Verdict.refused(failure, api_version, uid, operation)
        # controller-runtime's Allowed("") after Complete: just the code.
        allowed = answer(api_version, uid, True, go_status(200))
        return Verdict(allowed, True, 200, "", operation, uid)

    async def _admit(
        self, request: AdmissionRequest, target: WebhookResource, raws: Sequence[str] | None
    ) -> None:
        operation = request.operation
        if operation == CONNECT:
            return  # controller-runtime validates no CONNECT
        new: WorkObject | None = None
        old: WorkObject | None = None
        # Decoded in controller-runtime's order: the object, then the old object
        # (for DELETE the old object is the one being deleted).
        if operation in (CREATE, UPDATE):
            new = decode(
                target, request.object, raw_manifests=raws, default_namespace=request.namespace
            )
        if operation in (UPDATE, DELETE):
            old = decode(
                target,
                request.old_object,
                default_namespace=request.namespace,
                with_manifests=False,
            )
        if target == MANIFESTWORK:
            await validate_manifest_work(
                operation, new, old, request.user, self.options, self.access
            )
        else:
            validate_replica_set(operation, new, self.options)


def _resource_of(request: AdmissionRequest) -> WebhookResource:
    if request.kind is None:
        raise Errored(400, "request.kind is missing: cannot tell which rules apply")
    resource = resource_for(request.kind.group, request.kind.kind)
    if resource is None:
        raise Errored(400, f"no validating webhook for {request.kind}")
    return resource


async def validate(
    review: Mapping[str, Any],
    *,
    sar: AccessCheck,
    options: ValidationOptions | None = None,
    resource: WebhookResource | None = None,
) -> dict[str, Any]:
    """The AdmissionReview answer to a decoded ``review``.

    ``sar`` answers ``execute-as`` questions (e.g. a
    :class:`~hubcontroller.webhook.access.HubAccessReviewer`). Manifest sizes
    are those of the manifests re-encoded as the API server encodes them.
    """
    validator = AdmissionValidator(options or ValidationOptions(), sar)
    return (await validator.review(review, resource)).answer


async def validate_json(
    body: bytes | str,
    *,
    sar: AccessCheck,
    options: ValidationOptions | None = None,
    resource: WebhookResource | None = None,
) -> dict[str, Any]:
    """The AdmissionReview answer to a request body; manifest sizes are taken from its bytes."""
    validator = AdmissionValidator(options or ValidationOptions(), sar)
    return (await validator.review_json(body, resource)).answer
