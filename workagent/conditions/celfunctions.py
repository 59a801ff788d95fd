"""CEL functions cel-python lacks: OCM's ``hasConditions`` and the Kubernetes libraries.

celpy binds a receiver-style call ``x.f(a)`` to ``f(x, a)``, so every method
here takes its receiver first. Results are celpy values; failures raise one
of the :class:`CelFunctionError` family, whose message is what cel-go says
(``index out of range: 5``), and which the engine turns into the condition
message. celpy reports TypeErrors raised by a function as ``no such
overload``, which is also cel-go's wording for a call on the wrong types.

What exists is in the tables at the end (:data:`GLOBAL_FUNCTIONS`,
:data:`METHODS`), besides celpy's own ``contains``, ``startsWith``,
``endsWith``, ``size`` and the ``min`` macro. :data:`FUNCTIONS` also overrides
operators where celpy differs from cel-go as Kubernetes runs it:
heterogeneous equality (``1 == 1.0`` is true, ``1 == 'a'`` false), cross-type
numeric ordering (``1 < 2.5``), and cel-go's messages for ``/``, ``%`` and ``[]``.

Not provided (calls are compile errors ``undeclared reference``): the URL,
IP, CIDR and semver libraries, ``strings.quote``, ``math.*``, optional types
(``obj.?field``, which celpy cannot even parse), two-variable comprehensions
and the three-argument ``map``.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import operator
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from celpy import celtypes
from celpy.evaluation import CELEvalError

from workagent.quantity import parse_quantity

# google-re2 ships with celpy (its ``matches`` uses it) but has no type stubs.
re2: Any = importlib.import_module("re2")

#: Longest string or list a function may build; past it the evaluation counts
#: as over budget (cel-go's cost model would have stopped it long before).
MAX_RESULT_SIZE: Final = 4 * 1024 * 1024


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
# Helpers
# --------------------------------------------------------------------------


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("no such overload")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool | celtypes.BoolType) or not isinstance(value, int):
        raise TypeError("no such overload")
    return int(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("no such overload")
    return value


def _bounded(text: str) -> celtypes.StringType:
    if len(text) > MAX_RESULT_SIZE:
        raise CelBudgetError("string result too large")
    return celtypes.StringType(text)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool | celtypes.BoolType)


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
# Strings (cel-go ext.Strings)
# --------------------------------------------------------------------------

# Go's unicode.IsSpace (strings.TrimSpace); Python's str.strip() also strips \x1c-\x1f.
_GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)


def char_at(text: Any, index: Any) -> celtypes.StringType:
    """``s.charAt(i)``: the character at ``i``; ``""`` at the end."""
    s, i = _string(text), _int(index)
    if i < 0 or i > len(s):
        raise CelFunctionError(f"index out of range: {i}")
    return celtypes.StringType(s[i : i + 1])


def _check_offset(s: str, offset: int) -> None:
    if offset < 0 or offset >= len(s):
        raise CelFunctionError(f"index out of range: {offset}")


def _list_search(
    items: list[Any], item: Any, offset: Any, order: Iterable[int]
) -> celtypes.IntType:
    """The first index in ``order`` holding ``item``, or -1 (lists take no offset)."""
    if offset is not None:
        raise TypeError("no such overload")
    return celtypes.IntType(next((i for i in order if cel_equal(items[i], item)), -1))


def index_of(target: Any, item: Any, offset: Any = None) -> celtypes.IntType:
    """``s.indexOf(t[, i])`` for strings, ``l.indexOf(x)`` for lists."""
    if isinstance(target, list):
        return _list_search(target, item, offset, range(len(target)))
    s, sub = _string(target), _string(item)
    first = 0 if offset is None else _int(offset)
    if sub == "":
        return celtypes.IntType(first)
    _check_offset(s, first)
    return celtypes.IntType(s.find(sub, first))


def last_index_of(target: Any, item: Any, offset: Any = None) -> celtypes.IntType:
    """``s.lastIndexOf(t[, i])`` for strings, ``l.lastIndexOf(x)`` for lists."""
    if isinstance(target, list):
        return _list_search(target, item, offset, range(len(target) - 1, -1, -1))
    s, sub = _string(target), _string(item)
    last = len(s) - 1 if offset is None else _int(offset)
    if sub == "":
        return celtypes.IntType(len(s) if offset is None else last)
    _check_offset(s, last)
    # cel-go looks for a match starting at or before ``last``.
    return celtypes.IntType(s.rfind(sub, 0, min(last, len(s) - len(sub)) + len(sub)))


_TO_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_TO_UPPER: Final = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def lower_ascii(text: Any) -> celtypes.StringType:
    """``s.lowerAscii()``: only ASCII letters change."""
    return celtypes.StringType(_string(text).translate(_TO_LOWER))


def upper_ascii(text: Any) -> celtypes.StringType:
    """``s.upperAscii()``: only ASCII letters change."""
    return celtypes.StringType(_string(text).translate(_TO_UPPER))


def replace(text: Any, old: Any, new: Any, count: Any = None) -> celtypes.StringType:
    """``s.replace(a, b[, n])``: ``n`` < 0 (the default) replaces all."""
    s, a, b = _string(text), _string(old), _string(new)
    n = -1 if count is None else _int(count)
    # Check the size before building it: ``s.replace('', s)`` is quadratic.
    occurrences = (len(s) + 1 if a == "" else s.count(a)) if n < 0 else n
    if len(s) + occurrences * max(0, len(b) - len(a)) > MAX_RESULT_SIZE:
        raise CelBudgetError("string result too large")
    return celtypes.StringType(s.replace(a, b, n))


def split(text: Any, separator: Any, limit: Any = None) -> celtypes.ListType:
    """``s.split(sep[, n])`` with Go's ``strings.SplitN`` semantics."""
    s, sep = _string(text), _string(separator)
    n = -1 if limit is None else _int(limit)
    if n == 0:
        return celtypes.ListType([])
    if sep == "":
        parts = list(s)
        if 0 < n < len(parts):
            parts = [*parts[: n - 1], "".join(parts[n - 1 :])]
    else:
        parts = s.split(sep, n - 1) if n > 0 else s.split(sep)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def substring(text: Any, start: Any, end: Any = None) -> celtypes.StringType:
    """``s.substring(i[, j])``: characters ``i`` (inclusive) to ``j`` (exclusive)."""
    s, i = _string(text), _int(start)
    j = len(s) if end is None else _int(end)
    if end is not None and i > j:
        raise CelFunctionError(f"invalid substring range. start: {i}, end: {j}")
    if i < 0 or i > len(s):
        raise CelFunctionError(f"index out of range: {i}")
    if j < 0 or j > len(s):
        raise CelFunctionError(f"index out of range: {j}")
    return celtypes.StringType(s[i:j])


def trim(text: Any) -> celtypes.StringType:
    """``s.trim()``: leading and trailing Unicode white space removed."""
    return celtypes.StringType(_string(text).strip(_GO_SPACE))


def reverse(value: Any) -> Any:
    """``s.reverse()`` and ``l.reverse()``."""
    if isinstance(value, list):
        return celtypes.ListType(list(reversed(value)))
    return celtypes.StringType(_string(value)[::-1])


def join(items: Any, separator: Any = None) -> celtypes.StringType:
    """``l.join([sep])`` for a list of strings."""
    elements = _list(items)
    sep = "" if separator is None else _string(separator)
    return _bounded(sep.join(_string(e) for e in elements))


# --------------------------------------------------------------------------
# Format (Kubernetes format library)
# --------------------------------------------------------------------------

_CLAUSE: Final = re.compile(r"%(?:\.(\d+))?([a-zA-Z%])?")


def _format_value(value: Any, *, nested: bool = False) -> str:
    """``%s`` of a value, as cel-go's string formatter renders it."""
    if value is None:
        return "null"
    if isinstance(value, celtypes.BoolType | bool):
        return "true" if value else "false"
    if isinstance(value, celtypes.StringType | str):
        return repr_string(value) if nested else str(value)
    if isinstance(value, celtypes.BytesType | bytes):
        text = bytes(value).decode("utf-8", errors="replace")
        return repr_string(text) if nested else text
    if isinstance(value, float):
        return _format_double(float(value))
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v, nested=True) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted(
            (_format_value(k, nested=True), _format_value(v, nested=True)) for k, v in value.items()
        )
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, celtypes.DurationType):
        return f"{value.total_seconds():g}s"
    if isinstance(value, celtypes.TimestampType):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, Quantity):
        return str(value)
    raise CelFunctionError(f"string clause can only be used on strings, got {type(value).__name__}")


def repr_string(text: str) -> str:
    """A string as a quoted CEL literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format_double(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    text = repr(f)
    return text[:-2] if text.endswith(".0") else text


def _format_number(value: Any, verb: str, precision: int | None) -> str:
    if verb == "d":
        if not _is_number(value) or isinstance(value, float):
            raise CelFunctionError("decimal clause can only be used on integers")
        return str(int(value))
    if verb in "fe":
        if not _is_number(value):
            raise CelFunctionError(
                "fixed-point clause can only be used on doubles"
                if verb == "f"
                else "scientific clause can only be used on doubles"
            )
        p = 6 if precision is None else precision
        f = float(value)
        if math.isnan(f) or math.isinf(f):
            return _format_double(f)
        return f"{f:.{p}{verb}}"
    # b, o, x, X
    if verb in "xX" and isinstance(value, str | bytes):
        data = value.encode() if isinstance(value, str) else bytes(value)
        return data.hex() if verb == "x" else data.hex().upper()
    if not _is_number(value) or isinstance(value, float):
        raise CelFunctionError(
            {
                "b": "binary clause can only be used on integers and bools",
                "o": "octal clause can only be used on integers",
            }.get(verb, "hex clause can only be used on integers, byte buffers, and strings")
        )
    return format(int(value), verb)


def string_format(template: Any, args: Any) -> celtypes.StringType:
    """``s.format(l)``: printf-style formatting of the list ``l``."""
    text, values = _string(template), _list(args)
    out: list[str] = []
    pos = used = 0
    for match in _CLAUSE.finditer(text):
        out.append(text[pos : match.start()])
        pos = match.end()
        precision, verb = match.group(1), match.group(2)
        if verb == "%" and precision is None:
            out.append("%")
            continue
        if verb is None or verb not in "sdfeboxX%":
            raise CelFunctionError(
                f'could not parse formatting clause: unrecognized formatting clause "{verb or ""}"'
            )
        if used >= len(values):
            raise CelFunctionError(f"index {used} out of range")
        value = values[used]
        used += 1
        if verb == "s":
            out.append(_format_value(value))
        else:
            out.append(_format_number(value, verb, None if precision is None else int(precision)))
    out.append(text[pos:])
    return _bounded("".join(out))


# --------------------------------------------------------------------------
# Regex (Kubernetes regex library; RE2 like cel-go)
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", errors="replace")
        raise CelFunctionError(f"error parsing regexp: {detail}") from exc


def matches(text: Any, pattern: Any) -> celtypes.BoolType:
    """``s.matches(re)``: RE2 search anywhere in ``s``."""
    return celtypes.BoolType(_regex(_string(pattern)).search(_string(text)) is not None)


def find(text: Any, pattern: Any) -> celtypes.StringType:
    """``s.find(re)``: the first match, or ``""``."""
    found = _regex(_string(pattern)).search(_string(text))
    return celtypes.StringType(found.group(0) if found else "")


def find_all(text: Any, pattern: Any, limit: Any = None) -> celtypes.ListType:
    """``s.findAll(re[, n])``: all (or the first ``n``) matches."""
    n = -1 if limit is None else _int(limit)
    out: list[celtypes.StringType] = []
    if n == 0:
        return celtypes.ListType(out)
    for found in _regex(_string(pattern)).finditer(_string(text)):
        out.append(celtypes.StringType(found.group(0)))
        if 0 < n <= len(out):
            break
    return celtypes.ListType(out)


# --------------------------------------------------------------------------
# Lists (Kubernetes lists library, cel-go ext.Lists)
# --------------------------------------------------------------------------


def _comparable(items: list[Any]) -> None:
    kinds = {"number" if _is_number(v) else type(v).__name__ for v in items}
    if len(kinds) > 1:
        raise TypeError("no such overload")


def is_sorted(items: Any) -> celtypes.BoolType:
    """``l.isSorted()``."""
    elements = _list(items)
    _comparable(elements)
    return celtypes.BoolType(all(not cel_less(b, a) for a, b in itertools.pairwise(elements)))


def list_sum(items: Any) -> Any:
    """``l.sum()``: 0 for an empty list."""
    elements = _list(items)
    return functools.reduce(operator.add, elements) if elements else celtypes.IntType(0)


def list_max(items: Any) -> Any:
    """``l.max()``."""
    elements = _list(items)
    if not elements:
        raise CelFunctionError("max of empty list")
    _comparable(elements)
    # The first of equal elements (1 and 1.0) wins.
    return max(elements, key=functools.cmp_to_key(_compare))


def list_slice(items: Any, start: Any, end: Any) -> celtypes.ListType:
    """``l.slice(i, j)``."""
    elements, i, j = _list(items), _int(start), _int(end)
    if i < 0 or j < 0:
        raise CelFunctionError(f"cannot slice({i}, {j}), negative indexes not supported")
    if i > j:
        raise CelFunctionError(
            f"cannot slice({i}, {j}), start index must be less than or equal to end index"
        )
    if j > len(elements):
        raise CelFunctionError(f"cannot slice({i}, {j}), list is length {len(elements)}")
    return celtypes.ListType(elements[i:j])


def flatten(items: Any, depth: Any = None) -> celtypes.ListType:
    """``l.flatten([depth])``: one level by default."""
    levels = 1 if depth is None else _int(depth)
    if levels < 0:
        raise CelFunctionError("level must be non-negative")

    def walk(values: Iterable[Any], level: int) -> Iterable[Any]:
        for value in values:
            if isinstance(value, list) and level > 0:
                yield from walk(value, level - 1)
            else:
                yield value

    out = list(walk(_list(items), levels))
    if len(out) > MAX_RESULT_SIZE:
        raise CelBudgetError("list result too large")
    return celtypes.ListType(out)


def distinct(items: Any) -> celtypes.ListType:
    """``l.distinct()``: first occurrences, in order."""
    out: list[Any] = []
    for element in _list(items):
        if not any(cel_equal(element, seen) for seen in out):
            out.append(element)
    return celtypes.ListType(out)


def list_sort(items: Any) -> celtypes.ListType:
    """``l.sort()``: the elements must be of one comparable type."""
    elements = _list(items)
    _comparable(elements)
    return celtypes.ListType(sorted(elements, key=functools.cmp_to_key(_compare)))


def _compare(a: Any, b: Any) -> int:
    return -1 if cel_less(a, b) else (1 if cel_less(b, a) else 0)


# --------------------------------------------------------------------------
# Quantity (Kubernetes quantity library)
# --------------------------------------------------------------------------

_QUANTITY_FORMAT_ERROR: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes resource quantity (``500m``, ``1Gi``), compared by value."""

    text: str = field(compare=False)
    value: Decimal

    def __str__(self) -> str:
        return self.text


def _parse_quantity(text: str) -> Quantity | None:
    value = parse_quantity(text)
    return None if value is None else Quantity(text, value)


def _decimal_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def quantity(text: Any) -> Quantity:
    """``quantity(s)``."""
    parsed = _parse_quantity(_string(text))
    if parsed is None:
        raise CelFunctionError(_QUANTITY_FORMAT_ERROR)
    return parsed


def is_quantity(text: Any) -> celtypes.BoolType:
    """``isQuantity(s)``."""
    return celtypes.BoolType(_parse_quantity(_string(text)) is not None)


def _quantity(value: Any) -> Quantity:
    if not isinstance(value, Quantity):
        raise TypeError("no such overload")
    return value


def _quantity_or_int(value: Any) -> Decimal:
    if isinstance(value, Quantity):
        return value.value
    return Decimal(_int(value))


def quantity_sign(q: Any) -> celtypes.IntType:
    """``q.sign()``: -1, 0 or 1."""
    value = _quantity(q).value
    return celtypes.IntType((value > 0) - (value < 0))


def quantity_is_integer(q: Any) -> celtypes.BoolType:
    """``q.isInteger()``: an integral value that fits in an int64."""
    value = _quantity(q).value
    return celtypes.BoolType(value == value.to_integral_value() and -(2**63) <= value < 2**63)


def quantity_as_integer(q: Any) -> celtypes.IntType:
    """``q.asInteger()``."""
    if not quantity_is_integer(q):
        raise CelFunctionError("cannot convert value to integer")
    return celtypes.IntType(int(_quantity(q).value))


def quantity_as_float(q: Any) -> celtypes.DoubleType:
    """``q.asApproximateFloat()``."""
    return celtypes.DoubleType(float(_quantity(q).value))


def _quantity_arithmetic(op: Callable[[Decimal, Decimal], Decimal]) -> Callable[..., Quantity]:
    """``q.add(q2|int)`` and ``q.sub(q2|int)``."""

    def run(q: Any, other: Any) -> Quantity:
        value = op(_quantity(q).value, _quantity_or_int(other))
        return Quantity(_decimal_text(value), value)

    return run


def _quantity_comparison(result: Callable[[Decimal, Decimal], Any]) -> Callable[..., Any]:
    """``q.isGreaterThan(q2)``, ``q.isLessThan(q2)``, ``q.compareTo(q2)``."""

    def run(q: Any, other: Any) -> Any:
        return result(_quantity(q).value, _quantity(other).value)

    return run


# --------------------------------------------------------------------------
# Conversions with cel-go's parse errors
# --------------------------------------------------------------------------


def _conversion(
    cel_type: Callable[[Any], Any], parse: Callable[[str], Any], go_parser: str, name: str
) -> Callable[[Any], Any]:
    """``int(x)``, ``uint(x)``, ``double(x)``: a string is parsed, anything else converted."""

    def convert(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return cel_type(parse(value))
            except ValueError:
                raise CelFunctionError(
                    f'strconv.{go_parser}: parsing "{value}": invalid syntax'
                ) from None
        try:
            return cel_type(value)
        except (ValueError, OverflowError):
            raise CelFunctionError(f"range error converting value to {name}") from None

    return convert


# --------------------------------------------------------------------------
# Operators
# --------------------------------------------------------------------------


def cel_equal(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality: numbers by value, other kinds never equal each other."""
    if a is None or b is None:
        return a is None and b is None
    a_bool, b_bool = _is_bool(a), _is_bool(b)
    if a_bool or b_bool:
        return a_bool and b_bool and bool(a) == bool(b)
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) or isinstance(b, float):
            return float(a) == float(b)
        return int(a) == int(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for key, value in a.items():
            other = _map_lookup(b, key)
            if other is _MISSING or not cel_equal(value, other):
                return False
        return True
    if isinstance(a, str) and isinstance(b, str):
        return str(a) == str(b)
    if isinstance(a, bytes) and isinstance(b, bytes):
        return bytes(a) == bytes(b)
    a_type, b_type = _as_type(a), _as_type(b)
    if a_type is not None or b_type is not None:
        return a_type is b_type
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except TypeError:
        return False


def _as_type(value: Any) -> type | None:
    """The CEL type a value denotes, if it is a type (``int`` is our conversion function)."""
    if isinstance(value, type):
        return value
    if callable(value):
        return _CONVERSION_TYPES.get(value)
    return None


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | celtypes.BoolType)


_MISSING: Final = object()


def _map_lookup(mapping: dict[Any, Any], key: Any) -> Any:
    """``mapping[key]`` by CEL equality (a dict alone would find 1 for True), or _MISSING."""
    if isinstance(key, str):
        return mapping.get(key, _MISSING)
    for candidate, value in mapping.items():
        if cel_equal(candidate, key):
            return value
    return _MISSING


def _ordered(op: Callable[[Any, Any], bool], a: Any, b: Any) -> bool:
    """``op(a, b)`` for an ordering ``op``: numbers across int, uint and double, else one kind."""
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) or isinstance(b, float):
            return op(float(a), float(b))
        return op(int(a), int(b))
    if _is_bool(a) and _is_bool(b):
        return op(bool(a), bool(b))
    for kind in (str, bytes, celtypes.TimestampType, celtypes.DurationType):
        if isinstance(a, kind) and isinstance(b, kind):
            return op(a, b)
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return op(a.value, b.value)
    raise TypeError("no such overload")


def cel_less(a: Any, b: Any) -> bool:
    """``a < b`` with CEL's cross-type numeric ordering."""
    return _ordered(operator.lt, a, b)


def _bool_op(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], celtypes.BoolType]:
    def op(a: Any, b: Any) -> celtypes.BoolType:
        return celtypes.BoolType(compare(a, b))

    return op


def _in_op(item: Any, container: Any) -> celtypes.BoolType:
    if isinstance(container, list):
        return celtypes.BoolType(any(cel_equal(item, e) for e in container))
    if isinstance(container, dict):
        return celtypes.BoolType(_map_lookup(container, item) is not _MISSING)
    raise TypeError("no such overload")


def _integral(value: Any) -> bool:
    return _is_number(value) and not isinstance(value, float)


def _by_nonzero(op: Callable[[Any, Any], Any], message: str) -> Callable[[Any, Any], Any]:
    """``/`` and ``%``: an integer zero divisor is an error; doubles follow IEEE 754 (celpy's)."""

    def run(a: Any, b: Any) -> Any:
        if _integral(a) and _integral(b) and int(b) == 0:
            raise CelFunctionError(message)
        return op(a, b)

    return run


def _index(container: Any, key: Any) -> Any:
    if isinstance(container, dict):
        value = _map_lookup(container, key)
        if value is _MISSING:
            raise CelKeyError(f"no such key: {_format_key(key)}")
        return value
    if isinstance(container, list):
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        index = _int(key)
        if index < 0 or index >= len(container):
            raise CelIndexError(f"index '{index}' out of range in list size '{len(container)}'")
        return container[index]
    raise TypeError("no such overload")


def _format_key(key: Any) -> str:
    # cel-go prints the key with %v: strings bare, bools as true/false.
    if _is_bool(key):
        return "true" if key else "false"
    return str(key)


def _propagating(function: Callable[..., Any]) -> Callable[..., Any]:
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


#: Library functions called as ``f(x)``.
GLOBAL_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    # Conversions.
    "int": _conversion(celtypes.IntType, int, "ParseInt", "int"),
    "uint": _conversion(celtypes.UintType, int, "ParseUint", "uint"),
    "double": _conversion(celtypes.DoubleType, float, "ParseFloat", "double"),
    "hasConditions": has_conditions,  # OCM
    "quantity": quantity,
    "isQuantity": is_quantity,
}
#: Library functions called as methods, ``x.f(...)``.
METHODS: Final[dict[str, Callable[..., Any]]] = {
    # Strings.
    "charAt": char_at,
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "lowerAscii": lower_ascii,
    "upperAscii": upper_ascii,
    "replace": replace,
    "split": split,
    "substring": substring,
    "trim": trim,
    "reverse": reverse,
    "join": join,
    "format": string_format,
    "matches": matches,
    # Regex.
    "find": find,
    "findAll": find_all,
    # Lists.
    "isSorted": is_sorted,
    "sum": list_sum,
    "max": list_max,
    "slice": list_slice,
    "flatten": flatten,
    "distinct": distinct,
    "sort": list_sort,
    # Quantity.
    "sign": quantity_sign,
    "isInteger": quantity_is_integer,
    "asInteger": quantity_as_integer,
    "asApproximateFloat": quantity_as_float,
    "add": _quantity_arithmetic(operator.add),
    "sub": _quantity_arithmetic(operator.sub),
    "isGreaterThan": _quantity_comparison(lambda a, b: celtypes.BoolType(a > b)),
    "isLessThan": _quantity_comparison(lambda a, b: celtypes.BoolType(a < b)),
    "compareTo": _quantity_comparison(lambda a, b: celtypes.IntType((a > b) - (a < b))),
}
#: Functions and operator overrides bound to every program.
FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    # Operators (celpy looks them up by these names). The ternary and the
    # unary operators are celpy's own, only made to propagate errors.
    "_?_:_": celtypes.logical_condition,
    "!_": celtypes.logical_not,
    "-_": operator.neg,
    "_==_": _bool_op(cel_equal),
    "_!=_": _bool_op(lambda a, b: not cel_equal(a, b)),
    "_<_": _bool_op(functools.partial(_ordered, operator.lt)),
    "_<=_": _bool_op(functools.partial(_ordered, operator.le)),
    "_>_": _bool_op(functools.partial(_ordered, operator.gt)),
    "_>=_": _bool_op(functools.partial(_ordered, operator.ge)),
    "_in_": _in_op,
    "_/_": _by_nonzero(operator.truediv, "division by zero"),
    "_%_": _by_nonzero(operator.mod, "modulus by zero"),
    "_[_]": _index,
    **GLOBAL_FUNCTIONS,
    **METHODS,
}
FUNCTIONS.update({name: _propagating(function) for name, function in FUNCTIONS.items()})

# ``int`` as a value (``type(x) == int``) resolves to the function bound under
# that name, which replaces celpy's IntType: compare it as the type it stands for.
_CONVERSION_TYPES: Final[dict[Any, type]] = {
    FUNCTIONS["int"]: celtypes.IntType,
    FUNCTIONS["uint"]: celtypes.UintType,
    FUNCTIONS["double"]: celtypes.DoubleType,
}
