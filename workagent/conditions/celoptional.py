"""CEL optional values (cel-go's ``cel.OptionalTypes()``, which OCM's environment enables).

An optional holds one value or none. Expressions make them with ``x.?f``,
``x[?k]``, ``optional.of``/``none``/``ofNonZeroValue`` and a list's
``first()``/``last()``, and read them with ``hasValue()``, ``value()``,
``orValue(d)`` and ``or(o)``. The syntax and the macros (``optMap``,
``optFlatMap``) are in :mod:`workagent.conditions.celinterpreter`; this module
holds the value and the plain functions, so that the engine's other modules
can name the type without importing the interpreter.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Final

from celpy import celtypes


class NoneDereferenceError(ValueError):
    """``optional.none().value()``; a ValueError so celpy reports it as a CEL error."""


class CelOptional:
    """An optional CEL value; :data:`NONE` is the empty one.

    Compared by content (two empties are equal): cel-go's ``Equal`` for
    optionals. Any value may be wrapped, null and other optionals included.
    """

    __slots__ = ("_value", "present")

    def __init__(self, value: Any = None, *, present: bool = True) -> None:
        self._value = value
        self.present = present

    def value(self) -> Any:
        """The wrapped value (cel-go's error for an empty optional)."""
        if not self.present:
            raise NoneDereferenceError("optional.none() dereference")
        return self._value

    def __repr__(self) -> str:
        return f"optional.of({self._value!r})" if self.present else "optional.none()"


#: The empty optional.
NONE: Final = CelOptional(present=False)


def _optional(value: Any) -> CelOptional:
    if not isinstance(value, CelOptional):
        raise TypeError("no such overload")
    return value


def _is_zero(value: Any) -> bool:
    """cel-go's ``IsZeroValue``: the zero of a CEL type (library types never are)."""
    if value is None:
        return True
    if isinstance(value, bool | int | float | str | bytes | list | dict):
        return not value
    if isinstance(value, celtypes.DurationType):
        return value == datetime.timedelta(0)
    if isinstance(value, celtypes.TimestampType):
        # Go's zero time.Time, not the epoch.
        return value == datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
    return False


def of(value: Any) -> CelOptional:
    """``optional.of(x)``."""
    return CelOptional(value)


def none() -> CelOptional:
    """``optional.none()``."""
    return NONE


def of_non_zero_value(value: Any) -> CelOptional:
    """``optional.ofNonZeroValue(x)``: empty for the zero value of ``x``'s type."""
    return NONE if _is_zero(value) else CelOptional(value)


def unwrap(values: Any) -> celtypes.ListType:
    """``optional.unwrap(l)`` and ``l.unwrapOpt()``: the values of the present optionals."""
    if not isinstance(values, list):
        raise TypeError("no such overload")
    return celtypes.ListType(o.value() for o in map(_optional, values) if o.present)


def has_value(optional: Any) -> celtypes.BoolType:
    """``o.hasValue()``."""
    return celtypes.BoolType(_optional(optional).present)


def get_value(optional: Any) -> Any:
    """``o.value()``."""
    return _optional(optional).value()


def or_value(optional: Any, default: Any) -> Any:
    """``o.orValue(d)``: the value, or ``d`` for an empty optional."""
    optional = _optional(optional)
    return optional.value() if optional.present else default


def or_optional(optional: Any, other: Any) -> CelOptional:
    """``o.or(p)``: ``o`` if it has a value, else ``p`` (which must be an optional)."""
    first = _optional(optional)
    return first if first.present else _optional(other)


def _end(index: int) -> Callable[[Any], CelOptional]:
    def pick(values: Any) -> CelOptional:
        if not isinstance(values, list):
            raise TypeError("no such overload")
        return CelOptional(values[index]) if values else NONE

    pick.__doc__ = f"``l.{'first' if index == 0 else 'last'}()``: an optional element."
    return pick


#: ``optional.*``, called with their namespace.
QUALIFIED: Final[dict[str, Callable[..., Any]]] = {
    "optional.of": of,
    "optional.none": none,
    "optional.ofNonZeroValue": of_non_zero_value,
    "optional.unwrap": unwrap,
}
#: Methods of optionals (and of lists).
METHODS: Final[dict[str, Callable[..., Any]]] = {
    "hasValue": has_value,
    "value": get_value,
    "orValue": or_value,
    "or": or_optional,
    "unwrapOpt": unwrap,
    "first": _end(0),
    "last": _end(-1),
}
