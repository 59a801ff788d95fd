"""``duration(s)`` and ``timestamp(s)`` as cel-go converts strings: Go's parsers.

celpy's own conversions are more lenient than Go's (a ``d`` unit, dates
without a time, any text ``pendulum`` reads), so a rule that fails on OCM's
agent could pass here. These follow ``time.ParseDuration`` and
``time.Parse(time.RFC3339, s)``; every string they refuse is cel-go's
``type conversion error``. Values are celpy's, whose resolution is the
microsecond (Go keeps nanoseconds).
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Final

from celpy import celtypes

_NANOS_PER_UNIT: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_LIMIT: Final = 1 << 63
_DURATION: Final = "google.protobuf.Duration"
_TIMESTAMP: Final = "google.protobuf.Timestamp"
_DIGITS: Final = "0123456789"
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2})"
)
# CEL's timestamp range: years 1 to 9999 (Python's datetime has the same).
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# Python ints that are not CEL ints (``timestamp(1u)`` has no overload).
_NOT_SECONDS: Final = (bool, celtypes.BoolType, celtypes.UintType)


class ConversionError(ValueError):
    """cel-go's words for a string its conversion refuses."""

    def __init__(self, target: str) -> None:
        super().__init__(f"type conversion error from 'string' to '{target}'")


class TimestampOverflow(ValueError):
    """A timestamp outside CEL's years 1 to 9999."""

    def __init__(self) -> None:
        super().__init__("timestamp overflow")


def _digits(text: str) -> int:
    """How many ASCII digits ``text`` starts with."""
    return len(text) - len(text.lstrip(_DIGITS))


def _fraction(digits: str) -> tuple[int, float]:
    """Go's ``leadingFraction``: the digits as an integer and 10**(digits kept)."""
    value, scale = 0, 1.0
    for digit in digits:
        if value > (_LIMIT - 1) // 10 or value * 10 + int(digit) > _LIMIT:
            break  # Go keeps reading but stops accumulating
        value, scale = value * 10 + int(digit), scale * 10
    return value, scale


def parse_duration_nanos(text: str) -> int:
    """Go's ``time.ParseDuration`` in nanoseconds; ValueError where Go errs."""
    rest, negative = text, text[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(text)
    total = 0
    while rest:
        whole_len = _digits(rest)
        if whole_len and int(rest[:whole_len]) > _LIMIT:
            raise ValueError(text)
        whole, rest = int(rest[:whole_len] or 0), rest[whole_len:]
        fraction, scale, fraction_len = 0, 1.0, 0
        if rest[:1] == ".":
            fraction_len = _digits(rest[1:])
            fraction, scale = _fraction(rest[1 : 1 + fraction_len])
            rest = rest[1 + fraction_len :]
        if not whole_len and not fraction_len:
            raise ValueError(text)
        # The unit is everything up to the next number.
        unit_len = next((i for i, c in enumerate(rest) if c in "." + _DIGITS), len(rest))
        unit = _NANOS_PER_UNIT.get(rest[:unit_len])
        if unit is None:
            raise ValueError(text)
        rest = rest[unit_len:]
        if whole > _LIMIT // unit:
            raise ValueError(text)
        value = whole * unit + (int(fraction * (unit / scale)) if fraction else 0)
        total += value
        if value > _LIMIT or total > _LIMIT:
            raise ValueError(text)
    if not negative and total > _LIMIT - 1:
        raise ValueError(text)
    return -total if negative else total


def to_duration(value: Any) -> celtypes.DurationType:
    """``duration(x)`` of a duration or a Go duration string."""
    if isinstance(value, celtypes.DurationType):
        return value
    if not isinstance(value, str):
        raise TypeError("no such overload")
    try:
        nanos = parse_duration_nanos(value)
    except ValueError:
        raise ConversionError(_DURATION) from None
    micros = abs(nanos) // 1000
    return celtypes.DurationType(datetime.timedelta(microseconds=-micros if nanos < 0 else micros))


def _parse_rfc3339(text: str) -> datetime.datetime:
    """Go's ``time.Parse(time.RFC3339, text)`` in UTC; ConversionError or OverflowError."""
    found = _RFC3339.fullmatch(text)
    if found is None:
        raise ConversionError(_TIMESTAMP)
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    offset = 0
    if zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 24 or minutes > 60:  # Go's limits
            raise ConversionError(_TIMESTAMP)
        offset = (hours * 60 + minutes) * (-1 if zone[0] == "-" else 1)
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        # Year 0 is Go's to parse (then out of CEL's range): check the rest on a leap year.
        local = datetime.datetime(
            int(year) or 2000, int(month), int(day), int(hour), int(minute), int(second), micros
        )
    except ValueError:
        raise ConversionError(_TIMESTAMP) from None
    if int(year) == 0:
        raise OverflowError("timestamp overflow")
    return (local - datetime.timedelta(minutes=offset)).replace(tzinfo=datetime.UTC)


def to_timestamp(value: Any) -> celtypes.TimestampType:
    """``timestamp(x)`` of a timestamp, Unix seconds, or an RFC 3339 string."""
    if isinstance(value, celtypes.TimestampType):
        return value
    try:
        if isinstance(value, int) and not isinstance(
            value, bool | celtypes.BoolType | celtypes.UintType
        ):
            return celtypes.TimestampType(_EPOCH + datetime.timedelta(seconds=int(value)))
        if isinstance(value, str):
            return celtypes.TimestampType(_parse_rfc3339(value))
    except OverflowError:
        raise TimestampOverflow from None
    raise TypeError("no such overload")
