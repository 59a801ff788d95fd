"""``duration(s)`` and ``timestamp(s)`` as cel-go converts strings: Go's parsers.

celpy's own conversions are more lenient than Go's (a ``d`` unit, dates
without a time, any text ``pendulum`` reads), so a rule that fails on OCM's
agent could pass here. These follow ``time.ParseDuration`` (ocmkit's
port) and ``time.Parse(time.RFC3339, s)``; every string they refuse is cel-go's
``type conversion error``. Values are celpy's, whose resolution is the
microsecond (Go keeps nanoseconds).
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from collections.abc import Callable
from typing import Any, Final

from celpy import celtypes

from ocmkit.durations import DurationError, parse_duration
from workagent.conditions.kubevalues import go_quote

_DURATION: Final = "google.protobuf.Duration"
_TIMESTAMP: Final = "google.protobuf.Timestamp"
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


def to_duration(value: Any) -> celtypes.DurationType:
    """``duration(x)`` of a duration or a Go duration string."""
    if isinstance(value, celtypes.DurationType):
        return value
    if not isinstance(value, str):
        raise TypeError("no such overload")
    try:
        nanos = parse_duration(value)
    except DurationError:
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
    utc = (local - datetime.timedelta(minutes=offset)).replace(tzinfo=datetime.UTC)
    if abs(offset) >= 24 * 60:  # Go keeps such an offset; Python's time zones cannot
        return utc
    return utc.astimezone(datetime.timezone(datetime.timedelta(minutes=offset)))


def format_timestamp(value: datetime.datetime) -> str:
    """``string(t)``: Go's RFC 3339 with nanoseconds, in the offset ``t`` was parsed with."""
    text = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
        f"T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    offset = value.utcoffset() or datetime.timedelta(0)
    if not offset:
        return text + "Z"
    sign = "-" if offset < datetime.timedelta(0) else "+"
    minutes = abs(offset) // datetime.timedelta(minutes=1)
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


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


# -- a timestamp's fields in a time zone (cel-go's timeZone) ------------------------------

_FIELDS: Final[dict[str, Callable[[datetime.datetime], int]]] = {
    "getFullYear": lambda t: t.year,
    "getMonth": lambda t: t.month - 1,
    "getDate": lambda t: t.day,
    "getDayOfMonth": lambda t: t.day - 1,
    "getDayOfWeek": lambda t: t.isoweekday() % 7,
    "getDayOfYear": lambda t: t.timetuple().tm_yday - 1,
    "getHours": lambda t: t.hour,
    "getMinutes": lambda t: t.minute,
    "getSeconds": lambda t: t.second,
    "getMilliseconds": lambda t: t.microsecond // 1000,
}
#: The getters that take a time zone.
ZONED_GETTERS: Final = frozenset(_FIELDS)


class TimeZoneError(ValueError):
    """A time zone cel-go cannot read; the message is Go's."""


def field_in_zone(timestamp: datetime.datetime, getter: str, zone: str) -> int:
    """``t.getHours(zone)`` and the other getters as cel-go computes them: a zone with a
    ``:`` is an offset ``[+-]H:M`` (each part read by Go's ``strconv.Atoi``), any
    other a name for Go's ``time.LoadLocation``."""
    utc = timestamp.astimezone(datetime.UTC)
    if ":" in zone:
        hours_text, minutes_text = zone.split(":", 1)
        hours, minutes = _atoi(hours_text), _atoi(minutes_text)
        offset = hours * 60 - minutes if zone.startswith("-") else hours * 60 + minutes
        # Go's fixed zones take any offset; Python's stop at a day: shift by hand.
        local = utc.replace(tzinfo=None) + datetime.timedelta(minutes=offset)
    else:
        local = utc.astimezone(_location(zone))
    return _FIELDS[getter](local)


def _atoi(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise TimeZoneError(f"strconv.Atoi: parsing {_go_quoted(text)}: invalid syntax")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise TimeZoneError(f"strconv.Atoi: parsing {_go_quoted(text)}: value out of range")
    return value


def _go_quoted(text: str) -> str:
    return go_quote(text.encode("utf-8").decode("latin-1"))


def _location(name: str) -> datetime.tzinfo:
    """Go's ``time.LoadLocation`` (``Local`` is the agent's own zone: UTC in its image)."""
    if name in ("", "UTC", "Local"):
        return datetime.UTC
    if ".." in name or name[0] in "/\\":
        raise TimeZoneError("time: invalid location name")
    if any(len(part.encode()) > 255 for part in name.split("/")):
        raise TimeZoneError("file name too long")  # Linux's, opening the zoneinfo file
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise TimeZoneError(f"unknown time zone {name}") from None
