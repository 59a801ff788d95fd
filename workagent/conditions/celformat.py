"""The Kubernetes format library's ``s.format(args)``, with Go's value formatting."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from celpy import celtypes

from workagent.conditions.celvalues import (
    CelFunctionError,
    bounded_string,
    cel_type_name,
    is_bool,
    list_arg,
    string_arg,
    type_value_name,
)

# What each clause accepts (CEL type names) and its error, as cel-go v0.29's ext strings.
_NUMBERS: Final = "int uint double"
_CLAUSE_TYPES: Final = {
    "d": ("decimal clause can only be used on ints, uints, and doubles", _NUMBERS),
    "f": ("fixed-point clause can only be used on ints, uints, and doubles", _NUMBERS),
    "e": ("scientific clause can only be used on ints, uints, and doubles", _NUMBERS),
    "b": ("only ints, uints, and bools can be formatted as binary", "int uint bool"),
    "o": ("octal clause can only be used on ints and uints", "int uint"),
    "x": ("only ints, uints, bytes, and strings can be formatted as hex", "int uint string bytes"),
    "s": (
        "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
        "types, durations, and timestamps",
        f"{_NUMBERS} bool string bytes null_type type list map "
        "google.protobuf.Duration google.protobuf.Timestamp",
    ),
}
_MAX_PRECISION: Final = 100


def format_value(value: Any) -> str:
    """``%s`` of a value: nested strings unquoted, map entries sorted by their text.

    Also how cel-go prints a value into an error message (``%v``).
    """
    kind = _clause_type(value, "s")
    if kind == "list":
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if kind == "map":
        items = sorted(
            ((format_value(k), format_value(v)) for k, v in value.items()), key=lambda i: i[0]
        )
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if kind == "type":
        return type_value_name(value)
    if kind == "google.protobuf.Duration":
        micros = value // datetime.timedelta(microseconds=1)
        seconds = int(micros / 1_000_000)  # Go's Seconds(): whole seconds plus the rest, both float
        return _format_double(seconds + (micros - seconds * 1_000_000) * 1000 / 1e9) + "s"
    if kind == "google.protobuf.Timestamp":
        utc: datetime.datetime = value.astimezone(datetime.UTC).replace(tzinfo=None)
        return utc.isoformat(timespec="microseconds").rstrip("0").rstrip(".") + "Z"
    return (
        _format_number(value, "d", 0) if kind in ("int", "uint", "double") else _scalar_text(value)
    )


def _clause_type(value: Any, verb: str) -> str:
    """The CEL type name of a value the clause accepts; cel-go's error for another."""
    kind = cel_type_name(value)
    error = clause_type_error(verb, kind)
    if error is not None:
        raise CelFunctionError(error)
    return kind


def _scalar_text(value: Any) -> str:
    if is_bool(value):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return bytes(value).decode("utf-8", errors="replace")
    return "null" if value is None else str(value)


def _format_double(f: float) -> str:
    """strconv.FormatFloat(f, 'f', -1, 64): the shortest digits, never an exponent."""
    if math.isnan(f) or math.isinf(f):
        return "NaN" if math.isnan(f) else ("Infinity" if f > 0 else "-Infinity")
    return format(Decimal(repr(f)).normalize(), "f")


def _format_number(value: Any, verb: str, precision: int) -> str:
    kind = _clause_type(value, verb.lower())
    if verb in "fe" and not math.isfinite(value):
        return _format_double(float(value))
    if verb in "fe":
        return f"{float(value):.{precision}{verb}}"
    if kind == "double":
        return _format_double(float(value))
    if kind in ("string", "bytes"):
        data = value.encode() if isinstance(value, str) else bytes(value)
        return data.hex() if verb == "x" else data.hex().upper()
    return format(int(value), verb if verb != "d" else "")


def _atoi_error(number: str) -> str:
    reason = "value out of range" if number else "invalid syntax"
    return f'strconv.Atoi: parsing "{number}": {reason}'


def _clause(text: str, start: int) -> tuple[int, str, int]:
    """The clause after the ``%`` at ``start``: (its end, verb, precision), or cel-go's error."""
    pos, precision = start + 1, 6
    if text[pos] == ".":
        digits = re.match(r"[0-9]*", text[pos + 1 :])
        number = digits[0] if digits else ""
        pos += 1 + len(number)
        problem = ""
        if pos >= len(text):
            problem = "could not find end of precision specifier"
        elif not number or int(number) >= 1 << 63:
            problem = f"error while converting precision to integer: {_atoi_error(number)}"
        elif int(number) > _MAX_PRECISION:
            problem = f"precision {number} exceeds maximum allowed precision {_MAX_PRECISION}"
        if problem:
            raise CelFunctionError(
                f"could not parse formatting clause: error while parsing precision: {problem}"
            )
        precision = int(number)
    verb = text[pos]
    if verb not in "sdfeboxX":
        # cel-go reads one byte: a multi-byte character shows as its first byte's Latin-1 letter.
        shown = chr(verb.encode()[0])
        raise CelFunctionError(
            f'could not parse formatting clause: unrecognized formatting clause "{shown}"'
        )
    return pos + 1, verb, precision


def format_clauses(
    text: str, count: int, render: Callable[[int, str, int], str], *, checking: bool = False
) -> str:
    """``text`` with each clause replaced by ``render(argument index, verb, precision)``.

    ``checking``: cel-go's compile-time order of the two checks below (its
    validator looks for the end of the string before counting the arguments).
    """
    out: list[str] = []
    pos = used = 0
    while (found := text.find("%", pos)) >= 0:
        out.append(text[pos:found])
        if text.startswith("%%", found):
            out.append("%")
            pos = found + 2
            continue
        problems = [
            (used >= count, f"index {used} out of range"),
            (found + 1 >= len(text), "unexpected end of string"),
        ]
        for failed, message in reversed(problems) if checking else problems:
            if failed:
                raise CelFunctionError(message)
        pos, verb, precision = _clause(text, found)
        out.append(render(used, verb, precision))
        used += 1
    out.append(text[pos:])
    return "".join(out)


def clause_type_error(verb: str, kind: str) -> str | None:
    """cel-go's error when the clause ``verb`` cannot format a CEL type, or None."""
    message, accepted = _CLAUSE_TYPES[verb.lower()]
    return (
        None
        if kind in accepted.split()
        else f"error during formatting: {message}, was given {kind}"
    )


def string_format(template: Any, args: Any) -> celtypes.StringType:
    """``s.format(l)``: printf-style formatting of the list ``l``, as cel-go v0.29's ext strings."""
    text, values = string_arg(template), list_arg(args)

    def render(index: int, verb: str, precision: int) -> str:
        if verb == "s":
            return format_value(values[index])
        return _format_number(values[index], verb, precision)

    return bounded_string(format_clauses(text, len(values), render))


#: ``s.format(list)``.
METHODS: Final[dict[str, Callable[..., Any]]] = {"format": string_format}
