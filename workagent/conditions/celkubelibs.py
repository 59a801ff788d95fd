"""The Kubernetes CEL libraries: lists, quantity, URL, IP, CIDR, semver, named formats.

Their values and Go parsing rules are :mod:`workagent.conditions.kubevalues`',
the named formats' validators :mod:`workagent.conditions.kubeformats`'.
``semver``/``isSemver`` take one argument, as OCM enables them.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from celpy import celtypes
from celpy.adapter import json_to_cel

from ocmkit.govalues import go_format_value
from workagent.conditions import celtime, kubeformats, kubevalues
from workagent.conditions.celformat import format_value
from workagent.conditions.celoptional import NONE, CelOptional
from workagent.conditions.celvalues import (
    LIBRARY_TYPES,
    CelFunctionError,
    NamedFormat,
    Quantity,
    arg_of,
    cel_less,
    cel_type_name,
    int_arg,
    is_bool,
    list_arg,
    string_arg,
)
from workagent.conditions.kubevalues import CIDR, IP, URL, KubeValueError, Semver
from workagent.quantity import (
    QuantityError,
    add_amounts,
    amount_as_int64,
    int64_amount,
    parse_quantity,
    quantity_value,
)

# --------------------------------------------------------------------------
# Lists (Kubernetes lists library)
# --------------------------------------------------------------------------


# What cel-go can order (``traits.Comparer``): numbers across types, bools, strings,
# bytes, timestamps and durations.
_COMPARERS: Final = (int, float, str, bytes, celtypes.TimestampType, celtypes.DurationType)


def _order_of(a: Any, b: Any) -> int | None:
    """cel-go's ``a.Compare(b)`` as the lists library reads it: -1, 0 or 1, or None for a
    ``b`` of another kind (an error value, which matches neither -1 nor 1)."""
    if not isinstance(a, _COMPARERS):
        raise TypeError("no such overload")
    try:
        return _compare(a, b)
    except TypeError:
        return None


def is_sorted(items: Any) -> celtypes.BoolType:
    """``l.isSorted()``: no element orders after the next one."""
    pairs = itertools.pairwise(list_arg(items))
    return celtypes.BoolType(all(_order_of(a, b) != 1 for a, b in pairs))


def _extreme(name: str, replace_when: int) -> Callable[[Any], Any]:
    """``l.max()``/``l.min()``: the running result gives way to an element it orders
    ``replace_when`` against (the first of equal elements, 1 and 1.0, stays)."""

    def pick(items: Any) -> Any:
        elements = list_arg(items)
        if not elements:
            raise CelFunctionError(f"{name} called on empty list")
        result = elements[0]
        for element in elements[1:]:
            if _order_of(result, element) == replace_when:
                result = element
        return result

    pick.__doc__ = f"``l.{name}()``."
    return pick


list_max = _extreme("max", -1)
list_min = _extreme("min", 1)


_SUMMABLE: Final = frozenset({"int", "uint", "double", "google.protobuf.Duration"})


def list_sum(items: Any) -> Any:
    """``l.sum()`` of numbers of one type or durations: 0 for an empty list."""
    elements = list_arg(items)
    if not elements:
        return celtypes.IntType(0)
    first = cel_type_name(elements[0])
    if first not in _SUMMABLE:
        raise TypeError("no such overload")
    if any(cel_type_name(element) != first for element in elements):
        raise CelFunctionError("no such overload")  # adding an element has no overload
    return functools.reduce(operator.add, elements)


def _compare(a: Any, b: Any) -> int:
    return -1 if cel_less(a, b) else (1 if cel_less(b, a) else 0)


# --------------------------------------------------------------------------
# Quantity (Kubernetes quantity library)
# --------------------------------------------------------------------------


def _parse_quantity(text: str) -> Quantity | None:
    value = parse_quantity(text)
    return None if value is None else Quantity(text, value, int64_amount(text))


def _decimal_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def quantity(text: Any) -> Quantity:
    """``quantity(s)``, failing with Kubernetes' words."""
    try:
        text = string_arg(text)
        return Quantity(text, quantity_value(text), int64_amount(text))
    except QuantityError as exc:
        raise CelFunctionError(str(exc)) from None


def is_quantity(text: Any) -> celtypes.BoolType:
    """``isQuantity(s)``."""
    return celtypes.BoolType(_parse_quantity(string_arg(text)) is not None)


def _quantity_or_int(value: Any) -> Decimal:
    if isinstance(value, Quantity):
        return value.value
    return Decimal(int_arg(value))


def quantity_sign(q: Any) -> celtypes.IntType:
    """``sign(q)``: -1, 0 or 1."""
    value = arg_of(Quantity, q).value
    return celtypes.IntType((value > 0) - (value < 0))


def quantity_is_integer(q: Any) -> celtypes.BoolType:
    """``q.isInteger()``: Kubernetes' ``AsInt64`` succeeds (not for ``1000m``)."""
    return celtypes.BoolType(amount_as_int64(arg_of(Quantity, q).amount) is not None)


def quantity_as_integer(q: Any) -> celtypes.IntType:
    """``q.asInteger()``."""
    value = amount_as_int64(arg_of(Quantity, q).amount)
    if value is None:
        raise CelFunctionError("cannot convert value to integer")
    return celtypes.IntType(value)


# Go's math.Pow10 tables: it multiplies or divides two table entries.
_POW10: Final = tuple(float(f"1e{i}") for i in range(32))
_POW10_BY_32: Final = tuple(float(f"1e{32 * i}") for i in range(10))
_POW10_NEG_BY_32: Final = tuple(float(f"1e-{32 * i}") for i in range(11))


def _go_pow10(n: int) -> float:
    """Go's ``math.Pow10(n)``, rounding as Go's does."""
    if 0 <= n <= 308:
        return _POW10_BY_32[n // 32] * _POW10[n % 32]
    if -323 <= n < 0:
        return _POW10_NEG_BY_32[-n // 32] / _POW10[-n % 32]
    return math.inf if n > 0 else 0.0


def quantity_as_float(q: Any) -> celtypes.DoubleType:
    """``q.asApproximateFloat()``: the unscaled digits times 10**exponent in float64, as
    Kubernetes computes it (not the nearest double to the exact value)."""
    sign, digits, exponent = arg_of(Quantity, q).value.as_tuple()
    base = float(int("".join(map(str, digits)) or "0")) * (-1.0 if sign else 1.0)
    if not isinstance(exponent, int) or exponent == 0:
        return celtypes.DoubleType(base)
    return celtypes.DoubleType(base * _go_pow10(exponent))


def _quantity_arithmetic(op: Callable[[Decimal, Decimal], Decimal]) -> Callable[..., Quantity]:
    """``q.add(q2|int)`` and ``q.sub(q2|int)``, kept as Kubernetes keeps the result."""

    def run(q: Any, other: Any) -> Quantity:
        left = arg_of(Quantity, q)
        value = op(left.value, _quantity_or_int(other))
        right = other.amount if isinstance(other, Quantity) else (int_arg(other), 0)
        if right is not None and op is operator.sub:
            right = (-right[0], right[1])
        return Quantity(_decimal_text(value), value, add_amounts(left.amount, right))

    return run


def _order(a: Any, b: Any) -> int:
    """-1, 0 or 1 for two quantities or two semvers (``compareTo`` and friends)."""
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    raise TypeError("no such overload")


# --------------------------------------------------------------------------
# URL, IP, CIDR and semver (Kubernetes libraries; the values are kubevalues')
# --------------------------------------------------------------------------


def _parser(parse: Callable[[str], Any]) -> Callable[[Any], Any]:
    """``url(s)``, ``cidr(s)``, ``semver(s)``; their errors are KubeValueErrors."""
    return lambda text: parse(string_arg(text))


def _validator(parse: Callable[[str], Any]) -> Callable[[Any], celtypes.BoolType]:
    """``isURL(s)`` and friends: whether the parser accepts ``s``."""

    def valid(text: Any) -> celtypes.BoolType:
        try:
            parse(string_arg(text))
        except KubeValueError:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)

    return valid


def _getter(kind: type[Any], get: Callable[[Any], Any], cel_type: Callable[[Any], Any]) -> Any:
    """A method without arguments of one value type, its result as ``cel_type``."""
    return lambda value: cel_type(get(arg_of(kind, value)))


def ip(value: Any) -> IP:
    """``ip(s)``, and ``c.ip()`` of a CIDR: its address."""
    if isinstance(value, CIDR):
        return value.ip
    return kubevalues.parse_ip(string_arg(value))


def ip_is_canonical(text: Any) -> celtypes.BoolType:
    """``ip.isCanonical(s)``: ``s`` is the one way ``ip()`` prints its address."""
    return celtypes.BoolType(str(ip(string_arg(text))) == text)


def to_string(value: Any) -> celtypes.StringType:
    """``string(x)``: CEL's conversions as cel-go prints them, and IP addresses and CIDRs."""
    if isinstance(value, IP | CIDR):
        return celtypes.StringType(str(value))
    if isinstance(value, celtypes.TimestampType):
        return celtypes.StringType(celtime.format_timestamp(value))
    if isinstance(value, celtypes.DurationType):  # seconds, as cel-go prints them
        return celtypes.StringType(format_value(value))
    if is_bool(value):
        return celtypes.StringType("true" if value else "false")
    if isinstance(value, float):
        return celtypes.StringType(go_format_value(float(value)))
    if value is None or isinstance(value, (list, dict, CelOptional, *LIBRARY_TYPES)):
        raise TypeError("no such overload")
    return celtypes.StringType(value)


def contains_ip(cidr: Any, address: Any) -> celtypes.BoolType:
    """``c.containsIP(ip|string)``; a bad address string is no such overload, as in Kubernetes."""
    cidr = arg_of(CIDR, cidr)
    if isinstance(address, str):
        try:
            address = kubevalues.parse_ip(address)
        except KubeValueError:
            # Kubernetes' string overload answers a bad address so, without naming itself.
            raise CelFunctionError("no such overload") from None
    return celtypes.BoolType(arg_of(CIDR, cidr).contains_ip(arg_of(IP, address)))


def contains_cidr(cidr: Any, other: Any) -> celtypes.BoolType:
    """``c.containsCIDR(cidr|string)``."""
    cidr = arg_of(CIDR, cidr)
    if isinstance(other, str):
        other = kubevalues.parse_cidr(other)
    return celtypes.BoolType(arg_of(CIDR, cidr).contains_cidr(arg_of(CIDR, other)))


def _int64(value: int) -> celtypes.IntType:
    """A Go uint64 converted to int64 (semver numbers past 2**63 wrap, as in Go)."""
    return celtypes.IntType(value - (1 << 64) if value >= 1 << 63 else value)


# --------------------------------------------------------------------------
# Named formats (Kubernetes format library; the validators are kubeformats')
# --------------------------------------------------------------------------


def format_named(name: Any) -> CelOptional:
    """``format.named(s)``: the format of that name, empty for an unknown one."""
    name = string_arg(name)
    return CelOptional(NamedFormat(name)) if name in kubeformats.FORMAT_NAMES else NONE


def format_validate(named: Any, text: Any) -> CelOptional:
    """``f.validate(s)``: empty when ``s`` is valid, else the list of Go's error texts."""
    errors = kubeformats.validate(arg_of(NamedFormat, named).name, string_arg(text))
    return CelOptional(celtypes.ListType(map(celtypes.StringType, errors))) if errors else NONE


#: Library functions called as ``f(x)``.
GLOBALS: Final[dict[str, Callable[..., Any]]] = {
    "quantity": quantity,
    "isQuantity": is_quantity,
    "sign": quantity_sign,  # Kubernetes declares it global: ``sign(q)``, not ``q.sign()``
    "string": to_string,
    "url": _parser(kubevalues.parse_url),
    "isURL": lambda text: celtypes.BoolType(kubevalues.is_url(string_arg(text))),
    "ip": ip,
    "isIP": _validator(kubevalues.parse_ip),
    "cidr": _parser(kubevalues.parse_cidr),
    "isCIDR": _validator(kubevalues.parse_cidr),
    "semver": _parser(kubevalues.parse_semver),
    "isSemver": _validator(kubevalues.parse_semver),
}
#: Library functions with a qualified name, ``ip.isCanonical(s)``.
QUALIFIED: Final[dict[str, Callable[..., Any]]] = {
    "ip.isCanonical": ip_is_canonical,
    "format.named": format_named,
    **{f"format.{name}": functools.partial(NamedFormat, name) for name in kubeformats.FORMAT_NAMES},
}
#: Library functions called as methods, ``x.f(...)``.
METHODS: Final[dict[str, Callable[..., Any]]] = {
    # Lists.
    "isSorted": is_sorted,
    "sum": list_sum,
    "max": list_max,
    "min": list_min,
    # Quantity.
    "isInteger": quantity_is_integer,
    "asInteger": quantity_as_integer,
    "asApproximateFloat": quantity_as_float,
    "add": _quantity_arithmetic(operator.add),
    "sub": _quantity_arithmetic(operator.sub),
    # Quantity and semver.
    "isGreaterThan": lambda a, b: celtypes.BoolType(_order(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_order(a, b) < 0),
    "compareTo": lambda a, b: celtypes.IntType(_order(a, b)),
    # URL.
    "getScheme": _getter(URL, lambda u: u.scheme, celtypes.StringType),
    "getHost": _getter(URL, lambda u: kubevalues.text_of(u.host), celtypes.StringType),
    "getHostname": _getter(URL, URL.hostname, celtypes.StringType),
    "getPort": _getter(URL, URL.port, celtypes.StringType),
    "getEscapedPath": _getter(URL, URL.escaped_path, celtypes.StringType),
    "getQuery": _getter(URL, URL.query, json_to_cel),
    # IP.
    "family": _getter(IP, lambda a: a.version, celtypes.IntType),
    "isUnspecified": _getter(IP, lambda a: a.value == 0, celtypes.BoolType),
    "isLoopback": _getter(IP, IP.is_loopback, celtypes.BoolType),
    "isLinkLocalMulticast": _getter(IP, IP.is_link_local_multicast, celtypes.BoolType),
    "isLinkLocalUnicast": _getter(IP, IP.is_link_local_unicast, celtypes.BoolType),
    "isGlobalUnicast": _getter(IP, IP.is_global_unicast, celtypes.BoolType),
    # CIDR (and ``ip`` above).
    "ip": ip,
    "containsIP": contains_ip,
    "containsCIDR": contains_cidr,
    "masked": _getter(CIDR, CIDR.masked, lambda c: c),
    "prefixLength": _getter(CIDR, lambda c: c.prefix, celtypes.IntType),
    # Semver.
    "major": _getter(Semver, lambda v: v.major, _int64),
    "minor": _getter(Semver, lambda v: v.minor, _int64),
    "patch": _getter(Semver, lambda v: v.patch, _int64),
    "validate": format_validate,
}
