"""List and watch options as kube-apiserver v1.35 reads and checks them.

The query parameters of a list or watch (``resourceVersion``,
``resourceVersionMatch``, ``sendInitialEvents``, ``continue``...) are decoded
and validated before anything is read, with the apiserver's words: a 422
``ListOptions.meta.k8s.io "" is invalid`` for a forbidden combination, a 400
(list) or a reasonless 500 (watch) for a resourceVersion that is not a
number, and a 504 ``Too large resource version`` when the server has not
reached the requested resourceVersion within three seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesim import errors
from kubesim.errors import ApiError, UntypedError

#: How long a read waits for the store to reach a requested resourceVersion
#: (the apiserver's watch cache blocks this long before answering 504).
BLOCK_SECONDS = 3.0
#: The annotation of the bookmark that ends a watch's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
NOT_OLDER_THAN = "NotOlderThan"
EXACT = "Exact"
_MAX_UINT64 = 2**64 - 1


@dataclass(frozen=True)
class ListOptions:
    """Parameters of a list or watch.

    ``send_initial_events`` is None when the parameter is absent (its default
    then depends on the resourceVersion, see :func:`sends_initial_events`).
    """

    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    send_initial_events: bool | None = None


def go_bool(value: str | None) -> bool:
    """A boolean query parameter as the apiserver converts it.

    Absent, ``0`` and ``false`` (any case) are false; anything else, the empty
    string included, is true.
    """
    return value is not None and value != "0" and value.lower() != "false"


def go_optional_bool(value: str | None) -> bool | None:
    """A ``*bool`` query parameter: None when absent, else :func:`go_bool`."""
    return None if value is None else go_bool(value)


def sends_initial_events(opts: ListOptions) -> bool:
    """Whether a watch starts with the current objects as ADDED events.

    Without ``sendInitialEvents`` a watch from ``""`` or ``"0"`` does (the
    legacy behaviour), a watch from a given resourceVersion does not.
    """
    if opts.send_initial_events is not None:
        return opts.send_initial_events
    return opts.resource_version in ("", "0")


def _forbidden(field: str, detail: str) -> dict[str, Any]:
    return errors.field_forbidden(field, detail)


def validate(opts: ListOptions, *, watch: bool) -> None:
    """Refuse option combinations the apiserver refuses (422), in its order."""
    causes: list[dict[str, Any]] = []
    match = opts.resource_version_match
    if watch:
        if opts.send_initial_events is not None and match != NOT_OLDER_THAN:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
                )
            )
        if match:
            if opts.send_initial_events is None:
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents "
                        "is provided",
                    )
                )
            if match != NOT_OLDER_THAN:
                causes.append(
                    errors.field_not_supported("resourceVersionMatch", match, [NOT_OLDER_THAN])
                )
        if opts.continue_token:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    else:
        if match:
            if not opts.resource_version:
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )
                )
            if opts.continue_token:
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    )
                )
            if match not in (EXACT, NOT_OLDER_THAN):
                causes.append(
                    errors.field_not_supported(
                        "resourceVersionMatch", match, [EXACT, NOT_OLDER_THAN, ""]
                    )
                )
            if match == EXACT and opts.resource_version == "0":
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                    )
                )
        if opts.send_initial_events is not None:
            causes.append(
                _forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
            )
    if causes:
        raise errors.invalid("ListOptions", "", causes, "meta.k8s.io")


def _uint_error(text: str) -> str | None:
    """Go's strconv.ParseUint complaint about ``text``, or None when it parses."""
    if not text or not text.isascii() or not text.isdigit():
        return f'strconv.ParseUint: parsing "{text}": invalid syntax'
    if int(text) > _MAX_UINT64:
        return f'strconv.ParseUint: parsing "{text}": value out of range'
    return None


def resource_version(opts: ListOptions, *, watch: bool) -> int | None:
    """The requested resourceVersion as a number; None when unset or ``"0"``.

    A value that is not a number is a 400 BadRequest for a list and a bare 500
    for a watch, worded as the apiserver words them.
    """
    text = opts.resource_version
    if text in ("", "0"):
        return None
    problem = _uint_error(text)
    if problem is not None:
        detail = f'resourceVersion: Invalid value: "{text}": {problem}'
        if watch:
            raise UntypedError(500, "", detail)
        raise errors.bad_request(f"invalid resource version: {detail}")
    return int(text)


def too_large(requested: int, current: int) -> ApiError:
    """504: the server did not reach ``requested`` in time (it is at ``current``)."""
    return ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def bookmark(kind: str, api_version: str, rv: int, *, initial_events_end: bool) -> dict[str, Any]:
    """A BOOKMARK event; the one ending the initial events carries the annotation."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {
        "type": "BOOKMARK",
        "object": {"kind": kind, "apiVersion": api_version, "metadata": meta},
    }
