"""CEL values as the engine's functions see them: errors, argument checks, type names, equality.

The errors' messages are cel-go's; :class:`CelFunctionError` is a ValueError
because celpy turns ValueErrors raised by functions into CEL errors. Type
names and equality follow cel-go as Kubernetes runs it (heterogeneous
equality: ``1 == 1.0``; cross-type numeric ordering: ``1 < 2.5``).
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from celpy import celtypes

from workagent.conditions.celoptional import CelOptional
from workagent.conditions.kubevalues import CIDR, IP, URL, Semver
from workagent.quantity import Amount

#: Longest string or list a function may build; past it the evaluation counts
#: as over budget (cel-go's cost model would have stopped it long before).
MAX_RESULT_SIZE: Final = 4 * 1024 * 1024

DURATION: Final = "google.protobuf.Duration"
# Go's time.Duration range (int64 nanoseconds), to the microsecond Python keeps.
GO_DURATIONS: Final = (
    datetime.timedelta(microseconds=-(1 << 63) // 1000),
    datetime.timedelta(microseconds=((1 << 63) - 1) // 1000),
)
TIMESTAMP: Final = "google.protobuf.Timestamp"


class CelFunctionError(ValueError):
    """A CEL runtime error with cel-go's wording.

    A ValueError because celpy converts ValueErrors raised by functions into
    CEL errors (other exceptions escape the evaluator).
    """


class CelBudgetError(CelFunctionError):
    """A function would build a value too large to be a reasonable evaluation."""


class CelKeyError(KeyError):
    """``m[k]`` on a missing key (``[]`` handles KeyErrors, not ValueErrors)."""


class CelIndexError(IndexError):
    """``l[i]`` out of range."""


# --------------------------------------------------------------------------
# Argument checks (a wrong type is celpy's "no such overload")
# --------------------------------------------------------------------------


def string_arg(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("no such overload")
    return value


def int_arg(value: Any) -> int:
    if isinstance(value, bool | celtypes.BoolType) or not isinstance(value, int):
        raise TypeError("no such overload")
    return int(value)


def list_arg(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("no such overload")
    return value


def arg_of(kind: type[Any], value: Any) -> Any:
    if not isinstance(value, kind):
        raise TypeError("no such overload")
    return value


def bounded_string(text: str) -> celtypes.StringType:
    if len(text) > MAX_RESULT_SIZE:
        raise CelBudgetError("string result too large")
    return celtypes.StringType(text)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool | celtypes.BoolType)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes resource quantity (``500m``, ``1Gi``), compared by value."""

    text: str = field(compare=False)
    value: Decimal
    #: How Kubernetes stores it (:func:`~workagent.quantity.int64_amount`).
    amount: Amount = field(compare=False, default=None)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class NamedFormat:
    """A ``kubernetes.NamedFormat``: ``format.dns1123Label()`` and the rest."""

    name: str


# --------------------------------------------------------------------------
# Equality and ordering
# --------------------------------------------------------------------------


def cel_equal(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality: numbers by value, other kinds never equal each other."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, CelOptional) or isinstance(b, CelOptional):
        return (
            isinstance(a, CelOptional)
            and isinstance(b, CelOptional)
            and a.present == b.present
            and (not a.present or cel_equal(a.value(), b.value()))
        )
    a_bool, b_bool = is_bool(a), is_bool(b)
    if a_bool or b_bool:
        return a_bool and b_bool and bool(a) == bool(b)
    if is_number(a) and is_number(b):
        if isinstance(a, float) or isinstance(b, float):
            return float(a) == float(b)
        return int(a) == int(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for key, value in a.items():
            other = map_lookup(b, key)
            if other is MISSING_KEY or not cel_equal(value, other):
                return False
        return True
    if isinstance(a, str) and isinstance(b, str):
        return str(a) == str(b)
    if isinstance(a, bytes) and isinstance(b, bytes):
        return bytes(a) == bytes(b)
    a_type, b_type = as_type(a), as_type(b)
    if a_type is not None or b_type is not None:
        return a_type is b_type
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except TypeError:
        return False


def as_type(value: Any) -> type | None:
    """The CEL type a value denotes, if it is a type (``int`` is our conversion function)."""
    if isinstance(value, type):
        return value
    if callable(value):
        return CONVERSION_TYPES.get(value)
    return None


def is_bool(value: Any) -> bool:
    return isinstance(value, bool | celtypes.BoolType)


MISSING_KEY: Final = object()


def map_lookup(mapping: dict[Any, Any], key: Any) -> Any:
    """``mapping[key]`` by CEL equality (a dict alone would find 1 for True), or MISSING_KEY."""
    if isinstance(key, str):
        return mapping.get(key, MISSING_KEY)
    for candidate, value in mapping.items():
        if cel_equal(candidate, key):
            return value
    return MISSING_KEY


def ordered_by(op: Callable[[Any, Any], bool], a: Any, b: Any) -> bool:
    """``op(a, b)`` for an ordering ``op``: numbers across int, uint and double, else one kind."""
    if is_number(a) and is_number(b):
        if isinstance(a, float) or isinstance(b, float):
            return op(float(a), float(b))
        return op(int(a), int(b))
    if is_bool(a) and is_bool(b):
        return op(bool(a), bool(b))
    for kind in (str, bytes, celtypes.TimestampType, celtypes.DurationType):
        if isinstance(a, kind) and isinstance(b, kind):
            return op(a, b)
    raise TypeError("no such overload")


def cel_less(a: Any, b: Any) -> bool:
    """``a < b`` with CEL's cross-type numeric ordering."""
    return ordered_by(operator.lt, a, b)


#: Filled in by :mod:`workagent.conditions.celfunctions` once the functions exist.
CONVERSION_TYPES: Final[dict[Any, type]] = {}
#: The CEL names of the library types; ``net.IP`` and ``net.CIDR`` are also type values.
_CEL_TYPE_NAMES: Final[dict[type, str]] = {
    Quantity: "kubernetes.Quantity",
    URL: "kubernetes.URL",
    IP: "net.IP",
    CIDR: "net.CIDR",
    Semver: "kubernetes.Semver",
    NamedFormat: "kubernetes.NamedFormat",
}
LIBRARY_TYPES: Final = tuple(_CEL_TYPE_NAMES)
# Order matters: bools and uints are ints, as ints are in Python.
_CEL_TYPES: Final[tuple[tuple[type | tuple[type, ...], str], ...]] = (
    ((celtypes.BoolType, bool), "bool"),
    (celtypes.UintType, "uint"),
    (int, "int"),
    (float, "double"),
    (str, "string"),
    (bytes, "bytes"),
    (celtypes.DurationType, "google.protobuf.Duration"),
    (celtypes.TimestampType, "google.protobuf.Timestamp"),
    (list, "list"),
    (dict, "map"),
    (type(None), "null_type"),
    (celtypes.TypeType, "type"),
    (CelOptional, "optional_type"),
    *_CEL_TYPE_NAMES.items(),
)


# Names found so far, by the value's class (a hot path of every call's dispatch).
_NAME_OF_CLASS: dict[type, str] = {}


def cel_type_name(value: Any) -> str:
    """The CEL type name of a value, as cel-go spells it (``int``, ``net.IP``)."""
    cls = type(value)
    known = _NAME_OF_CLASS.get(cls)
    if known is not None:
        return known
    if isinstance(value, type) or (callable(value) and value in CONVERSION_TYPES):
        return "type"
    name = next((name for kind, name in _CEL_TYPES if isinstance(value, kind)), cls.__name__)
    if not callable(value):  # a function's name depends on the function, not its class
        _NAME_OF_CLASS[cls] = name
    return name


def type_value_name(value: Any) -> str:
    """The name of the type a type value (``type(1)``, ``int``) stands for."""
    value = CONVERSION_TYPES.get(value, value) if callable(value) else value
    return next((name for kind, name in _CEL_TYPES if issubclass(value, kind)), value.__name__)
