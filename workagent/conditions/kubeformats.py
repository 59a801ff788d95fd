"""The validators behind Kubernetes' CEL named formats (``format.dns1123Label()`` and the rest).

k8s.io/apiserver's ``library.Format()`` (v0.35.4) gives every name of
:data:`FORMAT_NAMES` a validator; ``<format>.validate(s)`` is none when the
validator returns no error strings, else the list of them. :func:`validate`
returns those strings exactly as Go words them and in Go's order, so a rule's
``messageExpression`` reads the same on our agent as on OCM's.

Go's rules, not Python's, decide:

- lengths are Go's ``len``, in UTF-8 bytes: values are checked as Go byte
  strings (:func:`~ocmkit.govalues.go_bytes`), which also makes
  a ``*Prefix`` format mask its trailing dash byte-wise as Go does;
- the apimachinery helpers come in two generations: ``util/validation``
  (the three DNS names) says ``must be no more than 63 characters``,
  ``api/validate/content`` (qualified names, label values) says ``... bytes``;
- the patterns are RE2's; each is matched whole (``fullmatch``), which also
  keeps Python's ``$`` from accepting a trailing newline, and the ones used
  here mean the same in Python's ``re``;
- ``uri`` is ``url.ParseRequestURI`` (the Go port in kubevalues); ``uuid``,
  ``byte``, ``date`` and ``datetime`` are kube-openapi's strfmt checks.

Plain Python (no celpy): binding these to CEL names (``format.named``, the
optional results, the ``kubernetes.NamedFormat`` type) is the engine's part.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ocmkit.govalues import go_bytes
from ocmkit.validation import (
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    label_value,
    qualified_name,
)
from workagent.conditions.kubevalues import request_uri_error

_Validator = Callable[[str], list[str]]


def _mask_trailing_dash(raw: str) -> str:
    """apimachinery's ``maskTrailingDash``: a name to be suffixed may end in ``-``.

    Go drops the last *two* bytes and appends ``a`` (so ``ab-`` is checked as
    ``aa``); it is kept so, as the error texts and lengths depend on it.
    """
    if len(raw) > 1 and raw.endswith("-"):
        return raw[:-2] + "a"
    return raw


def _on_bytes(check: _Validator, *, prefix: bool = False) -> _Validator:
    """``check`` of the value as a Go byte string (dash-masked for the ``*Prefix`` formats)."""

    def run(value: str) -> list[str]:
        raw = go_bytes(value)
        return check(_mask_trailing_dash(raw) if prefix else raw)

    return run


# --------------------------------------------------------------------------
# kube-openapi strfmt: uri, uuid, byte, date, datetime
# --------------------------------------------------------------------------

# The strfmt patterns as Go spells them (their ^ and $ are redundant under fullmatch).
_UUID: Final = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_BASE64: Final = re.compile(
    r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$"
)
_TIME: Final = re.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
)
# time.Parse with layout 2006-01-02: four, two and two ASCII digits, nothing more.
_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DAYS_IN_MONTH: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _uri(value: str) -> list[str]:
    error = request_uri_error(value)
    return [] if error is None else [error]


def _days_in(month: int, year: int) -> int:
    """Go's ``daysIn``, proleptic Gregorian from year 0 (which Python's calendar lacks)."""
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]


def _is_date(text: str) -> bool:
    """strfmt ``IsDate``: ``time.Parse("2006-01-02", text)`` succeeds."""
    found = _DATE.fullmatch(text)
    if found is None:
        return False
    year, month, day = (int(part) for part in found.groups())
    return 1 <= month <= 12 and 1 <= day <= _days_in(month, year)


def _is_datetime(value: str) -> bool:
    """strfmt ``IsDateTime``: a date, ``t``, a time of day with a zone, case-insensitively.

    Go lowercases the whole string and splits it at every ``t``; only the
    first two pieces are looked at (so ``...Z`` + ``T`` + anything passes).
    Lowering ASCII only is exact here: no other character lowers to one the
    patterns name, and every character stays one character for the pattern's
    ``.``.
    """
    if len(go_bytes(value)) < 4:
        return False
    pieces = value.translate(_ASCII_LOWER).split("t")
    if len(pieces) < 2 or not _is_date(pieces[0]):
        return False
    time = _TIME.fullmatch(pieces[1])
    if time is None:
        return False
    hour, minute, second = time.group(1, 2, 3)
    return hour <= "23" and minute <= "59" and second <= "59"


def _strfmt(valid: Callable[[str], bool], error: str) -> _Validator:
    """A strfmt check, which says only one fixed ``error`` when it fails."""
    return lambda value: [] if valid(value) else [error]


def _fullmatch(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: pattern.fullmatch(value) is not None


# --------------------------------------------------------------------------
# The library's table
# --------------------------------------------------------------------------

#: The validators in the order k8s.io/apiserver declares its ConstantFormats.
_VALIDATORS: Final[dict[str, _Validator]] = {
    "dns1123Label": _on_bytes(dns1123_label),
    "dns1123Subdomain": _on_bytes(dns1123_subdomain),
    "dns1035Label": _on_bytes(dns1035_label),
    "qualifiedName": _on_bytes(qualified_name),
    "dns1123LabelPrefix": _on_bytes(dns1123_label, prefix=True),
    "dns1123SubdomainPrefix": _on_bytes(dns1123_subdomain, prefix=True),
    "dns1035LabelPrefix": _on_bytes(dns1035_label, prefix=True),
    "labelValue": _on_bytes(label_value),
    "uri": _uri,
    # Both patterns are ASCII-only, so matching the text is matching its bytes.
    "uuid": _strfmt(_fullmatch(_UUID), "does not match the UUID format"),
    "byte": _strfmt(_fullmatch(_BASE64), "invalid base64"),
    "date": _strfmt(_is_date, "invalid date"),
    "datetime": _strfmt(_is_datetime, "invalid datetime"),
}

#: Every format name of the library (``format.<name>()``, ``format.named('<name>')``).
FORMAT_NAMES: Final[tuple[str, ...]] = tuple(_VALIDATORS)


def validate(name: str, value: str) -> list[str]:
    """The errors format ``name`` finds in ``value``, as Go words them; empty when valid.

    Raises KeyError for a name that is not in :data:`FORMAT_NAMES`.
    """
    return _VALIDATORS[name](value)
