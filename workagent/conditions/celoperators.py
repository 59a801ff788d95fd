"""CEL's operators as cel-go runs them, where celpy's differ.

Heterogeneous equality, cross-type numeric ordering, error propagation
through operands, and cel-go's messages for ``/``, ``%`` and ``[]``.
:data:`OPERATORS` binds them under celpy's operator names.
"""

from __future__ import annotations

import datetime
import functools
import math
import operator
from collections.abc import Callable
from typing import Any, Final

from celpy import celtypes
from celpy.evaluation import CELEvalError

from ocmkit.govalues import go_format_value
from workagent.conditions.celvalues import (
    DURATION,
    GO_DURATIONS,
    LIBRARY_TYPES,
    MISSING_KEY,
    TIMESTAMP,
    CelFunctionError,
    CelIndexError,
    CelKeyError,
    cel_equal,
    cel_type_name,
    int_arg,
    is_bool,
    is_number,
    map_lookup,
    ordered_by,
)

# The left operand types of an operator whose mismatch cel-go calls plain "no such
# overload"; for any other left operand it names the operator ("no such overload: _<_").
_PLAIN_LEFT: Final[dict[str, frozenset[str]]] = {
    "+": frozenset({"int", "uint", "double", "string", "bytes", "list", DURATION, TIMESTAMP}),
    "-": frozenset({"int", "uint", "double", "string", DURATION, TIMESTAMP}),
    "*": frozenset({"int", "uint", "double", "string", DURATION, TIMESTAMP}),
    "/": frozenset({"int", "uint", "double", "string", DURATION, TIMESTAMP}),
    "%": frozenset({"int", "uint", "string", DURATION, TIMESTAMP}),
    "<": frozenset({"int", "uint", "double", "string", "bytes", "bool", DURATION, TIMESTAMP}),
}


def _mismatch(symbol: str, left: Any) -> Exception:
    """The error of an operator no overload of takes these operands, in cel-go's words."""
    if cel_type_name(left) in _PLAIN_LEFT["<" if symbol in ("<=", ">", ">=") else symbol]:
        return TypeError("no such overload")
    return CelFunctionError(f"no such overload: _{symbol}_")


def _ordering(symbol: str, op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    """``<`` and friends, across int, uint and double, else within one orderable type."""

    def run(a: Any, b: Any) -> celtypes.BoolType:
        # cel-go v0.29: a NaN on the left cannot be ordered with anything, on the
        # right with no number.
        if _is_nan(a):
            raise CelFunctionError(_NAN_ORDER)
        try:
            ordered = ordered_by(op, a, b)
        except TypeError:
            raise _mismatch(symbol, a) from None
        if _is_nan(b):
            raise CelFunctionError(_NAN_ORDER)
        return celtypes.BoolType(ordered)

    return run


_NAN_ORDER: Final = "NaN values cannot be ordered"


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _equality(negate: bool) -> Callable[[Any, Any], celtypes.BoolType]:
    """``==`` and ``!=``; a library value compared to another type (but null) is no such
    overload, as its cel-go ``Equal`` says (a CEL value on the left just answers false)."""

    def op(a: Any, b: Any) -> celtypes.BoolType:
        mixed = isinstance(a, LIBRARY_TYPES) and b is not None and type(a) is not type(b)
        if mixed and not negate:  # ``!=`` answers true
            raise TypeError("no such overload")
        return celtypes.BoolType(cel_equal(a, b) != negate)

    return op


def _logical(decides: bool) -> Callable[[Any, Any], Any]:
    """``&&`` (``decides`` false) and ``||`` (true), commutative as in CEL: an operand
    equal to ``decides`` wins over anything; else an error, else both must be bools."""

    def op(a: Any, b: Any) -> Any:
        if any(is_bool(v) and bool(v) == decides for v in (a, b)):
            return celtypes.BoolType(decides)
        for value in (a, b):
            if isinstance(value, CELEvalError):
                return value
        if not (is_bool(a) and is_bool(b)):
            raise TypeError("no such overload")
        return celtypes.BoolType(not decides)

    return op


def _in_op(item: Any, container: Any) -> celtypes.BoolType:
    if isinstance(container, list):
        return celtypes.BoolType(any(cel_equal(item, e) for e in container))
    if isinstance(container, dict):
        return celtypes.BoolType(map_lookup(container, item) is not MISSING_KEY)
    raise TypeError("no such overload")


def _integral(value: Any) -> bool:
    return is_number(value) and not isinstance(value, float)


# The operand types of CEL's arithmetic overloads: one type on both sides, or a
# listed pair. celpy would also compute ``true + 1``, ``'a' % [1]`` (Python's
# string formatting) and ``duration * 2``.
_ARITHMETIC: Final[dict[str, tuple[frozenset[str], frozenset[tuple[str, str]]]]] = {
    "+": (
        frozenset({"int", "uint", "double", "string", "bytes", "list", DURATION}),
        frozenset({(TIMESTAMP, DURATION), (DURATION, TIMESTAMP)}),
    ),
    "-": (
        frozenset({"int", "uint", "double", DURATION, TIMESTAMP}),
        frozenset({(TIMESTAMP, DURATION)}),
    ),
    "*": (frozenset({"int", "uint", "double"}), frozenset()),
    "/": (frozenset({"int", "uint", "double"}), frozenset()),
    "%": (frozenset({"int", "uint"}), frozenset()),
}


def _arithmetic(symbol: str, op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``a <symbol> b`` for the operand types CEL has an overload for, else no such overload."""
    same, pairs = _ARITHMETIC[symbol]

    def run(a: Any, b: Any) -> Any:
        kinds = (cel_type_name(a), cel_type_name(b))
        if not ((kinds[0] == kinds[1] and kinds[0] in same) or kinds in pairs):
            raise _mismatch(symbol, a)
        try:
            result = op(a, b)
        except OverflowError:  # a timestamp past year 9999 (or before 1)
            raise CelFunctionError("timestamp overflow") from None
        except ValueError as exc:  # celpy's 64-bit range checks
            if str(exc) != "overflow":
                raise
            unsigned = "unsigned " if kinds[0] == "uint" else ""
            raise CelFunctionError(f"{unsigned}integer overflow") from None
        if isinstance(result, datetime.timedelta):
            if not GO_DURATIONS[0] <= result <= GO_DURATIONS[1]:
                raise CelFunctionError("integer overflow")  # Go's durations: int64 nanoseconds
            # celpy's duration - duration is a plain timedelta, which no overload takes.
            return celtypes.DurationType(result)
        return result

    return run


def _negate(value: Any) -> Any:
    """``-x`` of an int, a double or a duration."""
    kind = cel_type_name(value)
    if kind in ("string", "bool", TIMESTAMP):
        raise TypeError("no such overload")
    if kind not in ("int", "double", DURATION):
        raise CelFunctionError("no such overload: -_")
    if kind == DURATION:  # celpy's would be a plain timedelta
        return celtypes.DurationType(-value)
    return operator.neg(value)


def _by_nonzero(
    symbol: str, op: Callable[[Any, Any], Any], message: str
) -> Callable[[Any, Any], Any]:
    """``/`` and ``%``: an integer zero divisor is an error; doubles follow IEEE 754."""

    @functools.partial(_arithmetic, symbol)
    def run(a: Any, b: Any) -> Any:
        if _integral(a) and _integral(b) and int(b) == 0:
            raise CelFunctionError(message)
        if isinstance(a, celtypes.IntType) and int(a) == -(2**63) and int(b) == -1:
            raise CelFunctionError("integer overflow")  # cel-go checks % as it checks /
        if op is operator.truediv and isinstance(b, float) and float(b) == 0 and is_number(a):
            # celpy answers +inf for any double divided by zero: IEEE 754 has NaN and signs.
            if float(a) == 0 or math.isnan(a):
                return celtypes.DoubleType(math.nan)
            return celtypes.DoubleType(math.copysign(math.inf, a) * math.copysign(1.0, b))
        return op(a, b)

    return run


def _index(container: Any, key: Any) -> Any:
    if not isinstance(container, dict | list):
        raise CelKeyError(f"no such key: {_format_key(key)}")
    if isinstance(container, dict):
        value = map_lookup(container, key)
        if value is MISSING_KEY:
            raise CelKeyError(f"no such key: {_format_key(key)}")
        return value
    if isinstance(container, list):
        if isinstance(key, float):
            if not key.is_integer():
                raise CelFunctionError(f"unsupported index value {_format_key(key)} in list")
            key = int(key)
        if isinstance(key, str | bytes) or is_bool(key):
            raise CelFunctionError(f"unsupported index type '{cel_type_name(key)}' in list")
        index = int_arg(key)
        if index < 0 or index >= len(container):
            raise CelIndexError(f"index out of bounds: {index}")
        return container[index]
    raise TypeError("no such overload")


def _format_key(key: Any) -> str:
    # cel-go prints the key with %v: strings bare, bools as true/false, 1.0 as 1.
    if is_bool(key):
        return "true" if key else "false"
    if isinstance(key, float):
        return go_format_value(float(key))
    return str(key)


def propagating(function: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``function`` return an error argument instead of being called with it.

    celpy hands operators (and method arguments) their operands even when an
    operand is an error value; CEL propagates the error.
    """

    @functools.wraps(function)
    def call(*args: Any) -> Any:
        for arg in args:
            if isinstance(arg, CELEvalError):
                return arg
        return function(*args)

    return call


#: The operators celpy looks up by these names. The ternary and the unary
#: operators are celpy's own (made to propagate errors with the rest).
OPERATORS: Final[dict[str, Callable[..., Any]]] = {
    "_?_:_": celtypes.logical_condition,
    "!_": celtypes.logical_not,
    "-_": _negate,
    "_==_": _equality(negate=False),
    "_!=_": _equality(negate=True),
    "_<_": _ordering("<", operator.lt),
    "_<=_": _ordering("<=", operator.le),
    "_>_": _ordering(">", operator.gt),
    "_>=_": _ordering(">=", operator.ge),
    "_in_": _in_op,
    "_+_": _arithmetic("+", operator.add),
    "_-_": _arithmetic("-", operator.sub),
    "_*_": _arithmetic("*", operator.mul),
    "_/_": _by_nonzero("/", operator.truediv, "division by zero"),
    "_%_": _by_nonzero("%", operator.mod, "modulus by zero"),
    "_[_]": _index,
}
#: Not error-propagating: a deciding operand absorbs the other side's error.
LOGICAL: Final[dict[str, Callable[..., Any]]] = {
    "_&&_": _logical(decides=False),
    "_||_": _logical(decides=True),
}
