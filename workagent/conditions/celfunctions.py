"""The functions bound to every CEL program: what cel-python lacks, with cel-go's behaviour.

OCM's ``hasConditions``, the conversions, and the tables that gather the
libraries: cel-go's strings (:mod:`~workagent.conditions.celstrings`), the
Kubernetes format, lists, quantity, URL, IP, CIDR, semver and named-format
libraries (:mod:`~workagent.conditions.celformat`,
:mod:`~workagent.conditions.celkubelibs`), optional values
(:mod:`~workagent.conditions.celoptional`) and the operators where celpy
differs from cel-go (:mod:`~workagent.conditions.celoperators`).

celpy binds a receiver-style call ``x.f(a)`` to ``f(x, a)``, so every method
takes its receiver first. Results are celpy values; failures raise one of the
:class:`~workagent.conditions.celvalues.CelFunctionError` family, whose
message is what cel-go says (``index out of range: 5``), and which the engine
turns into the condition message. celpy reports TypeErrors raised by a
function as ``no such overload``, which is also cel-go's wording for a call on
the wrong types.

Besides :data:`GLOBAL_FUNCTIONS` and :data:`METHODS` there are celpy's own
``contains``, ``startsWith``, ``endsWith``, ``size`` and the ``min`` macro.
``math.*`` and two-variable comprehensions are in neither OCM's environment
nor here. cel-go's ext lists (``sort``, ``flatten``, a list's ``reverse``...)
are not in OCM's environment either, so a rule using them fails as on OCM.
Wrong argument types are run-time ``no such overload`` errors, where cel-go's
type checker would reject them at compile time.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable
from typing import Any, Final

from celpy import celtypes

from workagent.conditions import (
    celformat,
    celkubelibs,
    celoperators,
    celoptional,
    celstrings,
    celtime,
)
from workagent.conditions.celoperators import propagating
from workagent.conditions.celoptional import CelOptional
from workagent.conditions.celvalues import (
    CONVERSION_TYPES,
    DURATION,
    TIMESTAMP,
    CelFunctionError,
    cel_type_name,
    is_bool,
    string_arg,
)
from workagent.conditions.kubevalues import CIDR, IP

# --------------------------------------------------------------------------
# OCM
# --------------------------------------------------------------------------


def has_conditions(value: Any) -> celtypes.BoolType:
    """``hasConditions(x)``: ``x`` is a map whose ``conditions`` is a non-empty list."""
    if not isinstance(value, dict):
        return celtypes.BoolType(False)
    # dict.get: MapType.get raises for a missing key.
    conditions = dict.get(value, "conditions")
    return celtypes.BoolType(isinstance(conditions, list) and len(conditions) > 0)


# --------------------------------------------------------------------------
# Conversions with cel-go's errors
# --------------------------------------------------------------------------


def _parse_float(text: str) -> float:
    """Go's ``strconv.ParseFloat``: no spaces, out of range is an error."""
    value = float(text) if text.strip() == text else math.nan
    if (math.isinf(value) and "inf" not in text.lower()) or (
        math.isnan(value) and "nan" not in text.lower()
    ):
        raise ValueError(text)
    return value


def _conversion(
    cel_type: Callable[[Any], Any], syntax: str, name: str, overflow: str
) -> Callable[[Any], Any]:
    """``int(x)``, ``uint(x)``, ``double(x)``: a string is parsed (base 10 for integers),
    anything else converted."""

    def convert(value: Any) -> Any:
        kind = cel_type_name(value)
        if kind == DURATION and name == "int":  # nanoseconds
            return cel_type(value // datetime.timedelta(microseconds=1) * 1000)
        if kind == TIMESTAMP and name == "int":  # Unix seconds
            return cel_type(math.floor(value.timestamp()))
        if kind not in ("int", "uint", "double", "string"):
            raise TypeError("no such overload")
        if isinstance(value, str):
            try:
                if syntax and not re.fullmatch(syntax, value):
                    raise ValueError(value)
                return cel_type(int(value) if syntax else _parse_float(value))
            except ValueError:
                raise CelFunctionError(f"type conversion error from 'string' to '{name}'") from None
        if kind == "double" and name != "double" and not _DOUBLE_RANGES[name](float(value)):
            raise CelFunctionError(overflow)  # cel-go's checks, before truncating
        try:
            return cel_type(value)
        except (ValueError, OverflowError):
            raise CelFunctionError(overflow) from None

    return convert


# The doubles cel-go converts to an int or a uint (NaN fails both comparisons).
_DOUBLE_RANGES: Final[dict[str, Callable[[float], bool]]] = {
    "int": lambda v: -(2.0**63) < v < 2.0**63,
    "uint": lambda v: 0 <= v < 2.0**64,
}


# strconv.ParseBool's spellings.
_GO_BOOLS: Final = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def to_bool(value: Any) -> celtypes.BoolType:
    """``bool(x)`` of a bool, or of a string as Go's ``strconv.ParseBool`` reads it."""
    if is_bool(value):
        return celtypes.BoolType(bool(value))
    if not isinstance(value, str):
        raise TypeError("no such overload")
    if value not in _GO_BOOLS:
        raise CelFunctionError("type conversion error from 'string' to 'bool'")
    return celtypes.BoolType(_GO_BOOLS[value])


def to_bytes(value: Any) -> celtypes.BytesType:
    """``bytes(x)`` of bytes or a string (its UTF-8)."""
    if isinstance(value, bytes):
        return celtypes.BytesType(value)
    return celtypes.BytesType(string_arg(value).encode("utf-8", "surrogatepass"))


def size(value: Any) -> celtypes.IntType:
    """``size(x)``, ``x.size()``: of a string (code points), bytes, a list or a map only."""
    if not isinstance(value, str | bytes | list | dict):
        raise TypeError("no such overload")
    return celtypes.IntType(len(value))


#: Library functions called as ``f(x)``.
GLOBAL_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    # Conversions.
    "int": _conversion(celtypes.IntType, "[+-]?[0-9]+", "int", "integer overflow"),
    "uint": _conversion(celtypes.UintType, "[0-9]+", "uint", "unsigned integer overflow"),
    "double": _conversion(celtypes.DoubleType, "", "double", "double overflow"),
    "bool": to_bool,
    "bytes": to_bytes,
    "duration": celtime.to_duration,
    "timestamp": celtime.to_timestamp,
    "size": size,
    "hasConditions": has_conditions,  # OCM
    **celkubelibs.GLOBALS,
}
#: Library functions with a qualified name, ``ip.isCanonical(s)`` (celpy calls them as a
#: method of the function ``ip``), by the name of that method.
QUALIFIED_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    **celstrings.QUALIFIED,
    **celkubelibs.QUALIFIED,
    **celoptional.QUALIFIED,
}
#: Library functions called as methods, ``x.f(...)``.
METHODS: Final[dict[str, Callable[..., Any]]] = {
    **celstrings.METHODS,
    **celformat.METHODS,
    **celkubelibs.METHODS,
    # Optional values, and a list's first() and last().
    **celoptional.METHODS,
}
#: Functions and operator overrides bound to every program.
FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    **celoperators.OPERATORS,
    **GLOBAL_FUNCTIONS,
    **METHODS,
    **QUALIFIED_FUNCTIONS,
}
FUNCTIONS.update({name: propagating(function) for name, function in FUNCTIONS.items()})
FUNCTIONS.update(celoperators.LOGICAL)

# ``int`` as a value (``type(x) == int``) resolves to the function bound under
# that name, which replaces celpy's IntType: compare it as the type it stands for.
CONVERSION_TYPES.update(
    {
        FUNCTIONS["int"]: celtypes.IntType,
        FUNCTIONS["uint"]: celtypes.UintType,
        FUNCTIONS["double"]: celtypes.DoubleType,
        FUNCTIONS["string"]: celtypes.StringType,
        FUNCTIONS["bool"]: celtypes.BoolType,
    }
)

TYPE_NAMES: Final[dict[str, type]] = {"net.IP": IP, "net.CIDR": CIDR, "optional_type": CelOptional}
