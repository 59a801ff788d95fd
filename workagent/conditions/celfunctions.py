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

The Kubernetes URL, IP, CIDR and semver libraries are complete (their
values and Go parsing rules are :mod:`workagent.conditions.kubevalues`), with
the type names ``net.IP`` and ``net.CIDR``; ``semver``/``isSemver`` take one
argument, as OCM enables them.

Optional values are :mod:`workagent.conditions.celoptional`'s (their syntax
is :mod:`workagent.conditions.celinterpreter`'s), the named formats'
validators :mod:`workagent.conditions.kubeformats`'. ``math.*`` and
two-variable comprehensions are in neither OCM's environment nor here.
cel-go's ext lists (``sort``, ``flatten``, a list's ``reverse``...) are not
in OCM's environment either, so a rule using them fails as on OCM.
Wrong argument types are run-time ``no such overload`` errors,
where cel-go's type checker would reject them at compile time.
"""

from __future__ import annotations

import datetime
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
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from ocmkit.govalues import go_format_value
from workagent.conditions import celoptional, celtime, kubeformats, kubevalues
from workagent.conditions.celoptional import NONE, CelOptional
from workagent.conditions.kubevalues import CIDR, IP, URL, KubeValueError, Semver
from workagent.quantity import (
    Amount,
    QuantityError,
    add_amounts,
    amount_as_int64,
    int64_amount,
    parse_quantity,
    quantity_value,
)

# google-re2 ships with celpy (its ``matches`` uses it) but has no type stubs.
re2: Any = importlib.import_module("re2")

#: Longest string or list a function may build; past it the evaluation counts
#: as over budget (cel-go's cost model would have stopped it long before).
MAX_RESULT_SIZE: Final = 4 * 1024 * 1024

_DURATION: Final = "google.protobuf.Duration"
# Go's time.Duration range (int64 nanoseconds), to the microsecond Python keeps.
_GO_DURATIONS: Final = (
    datetime.timedelta(microseconds=-(1 << 63) // 1000),
    datetime.timedelta(microseconds=((1 << 63) - 1) // 1000),
)
_TIMESTAMP: Final = "google.protobuf.Timestamp"


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


def _of(kind: type[Any], value: Any) -> Any:
    if not isinstance(value, kind):
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


def quote(text: Any) -> celtypes.StringType:
    """``strings.quote(s)``: ``s`` in double quotes, ``\\``, ``"`` and the control
    characters Go has a letter for escaped (others, and all non-ASCII, as they are)."""
    escaped = (
        "\\" + kubevalues.ESCAPES.get(c, c) if c in kubevalues.ESCAPES or c in '"\\' else c
        for c in _string(text)
    )
    return _bounded('"' + "".join(escaped) + '"')


def _text_test(test: Callable[[str, str], bool]) -> Callable[[Any, Any], celtypes.BoolType]:
    """``s.contains(t)`` and friends, of strings only (celpy also takes bytes and lists)."""
    return lambda text, part: celtypes.BoolType(test(_string(text), _string(part)))


def char_at(text: Any, index: Any) -> celtypes.StringType:
    """``s.charAt(i)``: the character at ``i``; ``""`` at the end."""
    s, i = _string(text), _int(index)
    if i < 0 or i > len(s):
        raise CelFunctionError(f"index out of range: {i}")
    return celtypes.StringType(s[i : i + 1])


def _searched_from(s: str, sub: str, offset: int) -> int | None:
    """cel-go's answer for a search of ``sub`` from ``offset`` when it needs none: a
    negative offset is an error, ``''`` is found at the offset (at most the end), and
    nothing is found from past the end. None: search."""
    if offset < 0:
        raise CelFunctionError(f"index out of range: {offset}")
    if sub == "":
        return min(offset, len(s))
    return -1 if offset >= len(s) else None


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
    if offset is None:
        return celtypes.IntType(s.find(sub))
    first = _int(offset)
    found = _searched_from(s, sub, first)
    return celtypes.IntType(s.find(sub, first) if found is None else found)


def last_index_of(target: Any, item: Any, offset: Any = None) -> celtypes.IntType:
    """``s.lastIndexOf(t[, i])`` for strings, ``l.lastIndexOf(x)`` for lists."""
    if isinstance(target, list):
        return _list_search(target, item, offset, range(len(target) - 1, -1, -1))
    s, sub = _string(target), _string(item)
    if offset is None:
        return celtypes.IntType(s.rfind(sub))
    last = _int(offset)
    found = _searched_from(s, sub, last)
    if found is not None:
        return celtypes.IntType(found)
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
    possible = len(s) + 1 if a == "" else s.count(a)
    occurrences = possible if n < 0 else min(n, possible)
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


def reverse(value: Any) -> celtypes.StringType:
    """``s.reverse()``."""
    return celtypes.StringType(_string(value)[::-1])


def join(items: Any, separator: Any = None) -> celtypes.StringType:
    """``l.join([sep])`` for a list of strings."""
    elements = _list(items)
    sep = "" if separator is None else _string(separator)
    return _bounded(sep.join(_string(e) for e in elements))


# --------------------------------------------------------------------------
# Format (Kubernetes format library)
# --------------------------------------------------------------------------

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
    if _is_bool(value):
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
    text, values = _string(template), _list(args)

    def render(index: int, verb: str, precision: int) -> str:
        if verb == "s":
            return format_value(values[index])
        return _format_number(values[index], verb, precision)

    return _bounded(format_clauses(text, len(values), render))


# --------------------------------------------------------------------------
# Regex (Kubernetes regex library; RE2 like cel-go)
# --------------------------------------------------------------------------


# RE2's error codes where Go's regexp/syntax (a port of RE2) words them differently.
_GO_REGEXP_ERRORS: Final = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid named capture group": "invalid named capture",
    "invalid repetition size": "invalid repeat count",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "no argument for repetition operator": "missing argument to repetition operator",
    "trailing \\": "trailing backslash at end of expression",
}
# Go has no ``\C`` (any byte); RE2 does.
_ANY_BYTE: Final = re.compile(r"(?:^|[^\\])(?:\\\\)*\\C")
_RE2_OPTIONS: Final = re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 would print every bad pattern on stderr


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    """``pattern`` compiled, or Go's ``error parsing regexp: <code>: `<fragment>```."""
    if _ANY_BYTE.search(pattern):
        raise CelFunctionError("error parsing regexp: invalid escape sequence: `\\C`")
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", errors="replace")
        code, _, fragment = str(detail).partition(": ")
        code = _GO_REGEXP_ERRORS.get(code, code)
        raise CelFunctionError(f"error parsing regexp: {code}: `{fragment}`") from exc


def matches(text: Any, pattern: Any) -> celtypes.BoolType:
    """``s.matches(re)``: RE2 search anywhere in ``s``."""
    if isinstance(text, str) and not isinstance(pattern, str):
        raise CelFunctionError("no such overload")  # a string's overload, not matched
    return celtypes.BoolType(_regex(_string(pattern)).search(_string(text)) is not None)


def regex_error(pattern: str) -> str | None:
    """Go's error for a pattern that does not compile, or None."""
    try:
        _regex(pattern)
    except CelFunctionError as exc:
        return str(exc)
    return None


def _library_regex(pattern: Any) -> Any:
    """``_regex`` for the Kubernetes library's functions, which word a bad pattern so."""
    error = regex_error(_string(pattern))
    if error is not None:
        raise CelFunctionError(f"Illegal regex: {error}")
    return _regex(pattern)


def find(text: Any, pattern: Any) -> celtypes.StringType:
    """``s.find(re)``: the first match, or ``""``."""
    found = _library_regex(pattern).search(_string(text))
    return celtypes.StringType(found.group(0) if found else "")


def find_all(text: Any, pattern: Any, limit: Any = None) -> celtypes.ListType:
    """``s.findAll(re[, n])``: all (or the first ``n``) matches."""
    n = -1 if limit is None else _int(limit)
    out: list[celtypes.StringType] = []
    if n == 0:
        return celtypes.ListType(out)
    for found in _library_regex(pattern).finditer(_string(text)):
        out.append(celtypes.StringType(found.group(0)))
        if 0 < n <= len(out):
            break
    return celtypes.ListType(out)


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
    pairs = itertools.pairwise(_list(items))
    return celtypes.BoolType(all(_order_of(a, b) != 1 for a, b in pairs))


def _extreme(name: str, replace_when: int) -> Callable[[Any], Any]:
    """``l.max()``/``l.min()``: the running result gives way to an element it orders
    ``replace_when`` against (the first of equal elements, 1 and 1.0, stays)."""

    def pick(items: Any) -> Any:
        elements = _list(items)
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
    elements = _list(items)
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


@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes resource quantity (``500m``, ``1Gi``), compared by value."""

    text: str = field(compare=False)
    value: Decimal
    #: How Kubernetes stores it (:func:`~workagent.quantity.int64_amount`).
    amount: Amount = field(compare=False, default=None)

    def __str__(self) -> str:
        return self.text


def _parse_quantity(text: str) -> Quantity | None:
    value = parse_quantity(text)
    return None if value is None else Quantity(text, value, int64_amount(text))


def _decimal_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def quantity(text: Any) -> Quantity:
    """``quantity(s)``, failing with Kubernetes' words."""
    try:
        text = _string(text)
        return Quantity(text, quantity_value(text), int64_amount(text))
    except QuantityError as exc:
        raise CelFunctionError(str(exc)) from None


def is_quantity(text: Any) -> celtypes.BoolType:
    """``isQuantity(s)``."""
    return celtypes.BoolType(_parse_quantity(_string(text)) is not None)


def _quantity_or_int(value: Any) -> Decimal:
    if isinstance(value, Quantity):
        return value.value
    return Decimal(_int(value))


def quantity_sign(q: Any) -> celtypes.IntType:
    """``sign(q)``: -1, 0 or 1."""
    value = _of(Quantity, q).value
    return celtypes.IntType((value > 0) - (value < 0))


def quantity_is_integer(q: Any) -> celtypes.BoolType:
    """``q.isInteger()``: Kubernetes' ``AsInt64`` succeeds (not for ``1000m``)."""
    return celtypes.BoolType(amount_as_int64(_of(Quantity, q).amount) is not None)


def quantity_as_integer(q: Any) -> celtypes.IntType:
    """``q.asInteger()``."""
    value = amount_as_int64(_of(Quantity, q).amount)
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
    sign, digits, exponent = _of(Quantity, q).value.as_tuple()
    base = float(int("".join(map(str, digits)) or "0")) * (-1.0 if sign else 1.0)
    if not isinstance(exponent, int) or exponent == 0:
        return celtypes.DoubleType(base)
    return celtypes.DoubleType(base * _go_pow10(exponent))


def _quantity_arithmetic(op: Callable[[Decimal, Decimal], Decimal]) -> Callable[..., Quantity]:
    """``q.add(q2|int)`` and ``q.sub(q2|int)``, kept as Kubernetes keeps the result."""

    def run(q: Any, other: Any) -> Quantity:
        left = _of(Quantity, q)
        value = op(left.value, _quantity_or_int(other))
        right = other.amount if isinstance(other, Quantity) else (_int(other), 0)
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
    return lambda text: parse(_string(text))


def _validator(parse: Callable[[str], Any]) -> Callable[[Any], celtypes.BoolType]:
    """``isURL(s)`` and friends: whether the parser accepts ``s``."""

    def valid(text: Any) -> celtypes.BoolType:
        try:
            parse(_string(text))
        except KubeValueError:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)

    return valid


def _getter(kind: type[Any], get: Callable[[Any], Any], cel_type: Callable[[Any], Any]) -> Any:
    """A method without arguments of one value type, its result as ``cel_type``."""
    return lambda value: cel_type(get(_of(kind, value)))


def ip(value: Any) -> IP:
    """``ip(s)``, and ``c.ip()`` of a CIDR: its address."""
    if isinstance(value, CIDR):
        return value.ip
    return kubevalues.parse_ip(_string(value))


def ip_is_canonical(text: Any) -> celtypes.BoolType:
    """``ip.isCanonical(s)``: ``s`` is the one way ``ip()`` prints its address."""
    return celtypes.BoolType(str(ip(_string(text))) == text)


def to_string(value: Any) -> celtypes.StringType:
    """``string(x)``: CEL's conversions as cel-go prints them, and IP addresses and CIDRs."""
    if isinstance(value, IP | CIDR):
        return celtypes.StringType(str(value))
    if isinstance(value, celtypes.TimestampType):
        return celtypes.StringType(celtime.format_timestamp(value))
    if isinstance(value, celtypes.DurationType):  # seconds, as cel-go prints them
        return celtypes.StringType(format_value(value))
    if _is_bool(value):
        return celtypes.StringType("true" if value else "false")
    if isinstance(value, float):
        return celtypes.StringType(go_format_value(float(value)))
    if value is None or isinstance(value, (list, dict, CelOptional, *_LIBRARY_TYPES)):
        raise TypeError("no such overload")
    return celtypes.StringType(value)


def contains_ip(cidr: Any, address: Any) -> celtypes.BoolType:
    """``c.containsIP(ip|string)``; a bad address string is no such overload, as in Kubernetes."""
    cidr = _of(CIDR, cidr)
    if isinstance(address, str):
        try:
            address = kubevalues.parse_ip(address)
        except KubeValueError:
            # Kubernetes' string overload answers a bad address so, without naming itself.
            raise CelFunctionError("no such overload") from None
    return celtypes.BoolType(_of(CIDR, cidr).contains_ip(_of(IP, address)))


def contains_cidr(cidr: Any, other: Any) -> celtypes.BoolType:
    """``c.containsCIDR(cidr|string)``."""
    cidr = _of(CIDR, cidr)
    if isinstance(other, str):
        other = kubevalues.parse_cidr(other)
    return celtypes.BoolType(_of(CIDR, cidr).contains_cidr(_of(CIDR, other)))


def _int64(value: int) -> celtypes.IntType:
    """A Go uint64 converted to int64 (semver numbers past 2**63 wrap, as in Go)."""
    return celtypes.IntType(value - (1 << 64) if value >= 1 << 63 else value)


# --------------------------------------------------------------------------
# Named formats (Kubernetes format library; the validators are kubeformats')
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NamedFormat:
    """A ``kubernetes.NamedFormat``: ``format.dns1123Label()`` and the rest."""

    name: str


def format_named(name: Any) -> CelOptional:
    """``format.named(s)``: the format of that name, empty for an unknown one."""
    name = _string(name)
    return CelOptional(NamedFormat(name)) if name in kubeformats.FORMAT_NAMES else NONE


def format_validate(named: Any, text: Any) -> CelOptional:
    """``f.validate(s)``: empty when ``s`` is valid, else the list of Go's error texts."""
    errors = kubeformats.validate(_of(NamedFormat, named).name, _string(text))
    return CelOptional(celtypes.ListType(map(celtypes.StringType, errors))) if errors else NONE


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
        if kind == _DURATION and name == "int":  # nanoseconds
            return cel_type(value // datetime.timedelta(microseconds=1) * 1000)
        if kind == _TIMESTAMP and name == "int":  # Unix seconds
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
    if _is_bool(value):
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
    return celtypes.BytesType(_string(value).encode("utf-8", "surrogatepass"))


def size(value: Any) -> celtypes.IntType:
    """``size(x)``, ``x.size()``: of a string (code points), bytes, a list or a map only."""
    if not isinstance(value, str | bytes | list | dict):
        raise TypeError("no such overload")
    return celtypes.IntType(len(value))


# --------------------------------------------------------------------------
# Operators
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
    raise TypeError("no such overload")


def cel_less(a: Any, b: Any) -> bool:
    """``a < b`` with CEL's cross-type numeric ordering."""
    return _ordered(operator.lt, a, b)


# The left operand types of an operator whose mismatch cel-go calls plain "no such
# overload"; for any other left operand it names the operator ("no such overload: _<_").
_PLAIN_LEFT: Final[dict[str, frozenset[str]]] = {
    "+": frozenset({"int", "uint", "double", "string", "bytes", "list", _DURATION, _TIMESTAMP}),
    "-": frozenset({"int", "uint", "double", "string", _DURATION, _TIMESTAMP}),
    "*": frozenset({"int", "uint", "double", "string", _DURATION, _TIMESTAMP}),
    "/": frozenset({"int", "uint", "double", "string", _DURATION, _TIMESTAMP}),
    "%": frozenset({"int", "uint", "string", _DURATION, _TIMESTAMP}),
    "<": frozenset({"int", "uint", "double", "string", "bytes", "bool", _DURATION, _TIMESTAMP}),
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
            ordered = _ordered(op, a, b)
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
        mixed = isinstance(a, _LIBRARY_TYPES) and b is not None and type(a) is not type(b)
        if mixed and not negate:  # ``!=`` answers true
            raise TypeError("no such overload")
        return celtypes.BoolType(cel_equal(a, b) != negate)

    return op


def _logical(decides: bool) -> Callable[[Any, Any], Any]:
    """``&&`` (``decides`` false) and ``||`` (true), commutative as in CEL: an operand
    equal to ``decides`` wins over anything; else an error, else both must be bools."""

    def op(a: Any, b: Any) -> Any:
        if any(_is_bool(v) and bool(v) == decides for v in (a, b)):
            return celtypes.BoolType(decides)
        for value in (a, b):
            if isinstance(value, CELEvalError):
                return value
        if not (_is_bool(a) and _is_bool(b)):
            raise TypeError("no such overload")
        return celtypes.BoolType(not decides)

    return op


def _in_op(item: Any, container: Any) -> celtypes.BoolType:
    if isinstance(container, list):
        return celtypes.BoolType(any(cel_equal(item, e) for e in container))
    if isinstance(container, dict):
        return celtypes.BoolType(_map_lookup(container, item) is not _MISSING)
    raise TypeError("no such overload")


def _integral(value: Any) -> bool:
    return _is_number(value) and not isinstance(value, float)


# The operand types of CEL's arithmetic overloads: one type on both sides, or a
# listed pair. celpy would also compute ``true + 1``, ``'a' % [1]`` (Python's
# string formatting) and ``duration * 2``.
_ARITHMETIC: Final[dict[str, tuple[frozenset[str], frozenset[tuple[str, str]]]]] = {
    "+": (
        frozenset({"int", "uint", "double", "string", "bytes", "list", _DURATION}),
        frozenset({(_TIMESTAMP, _DURATION), (_DURATION, _TIMESTAMP)}),
    ),
    "-": (
        frozenset({"int", "uint", "double", _DURATION, _TIMESTAMP}),
        frozenset({(_TIMESTAMP, _DURATION)}),
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
            if not _GO_DURATIONS[0] <= result <= _GO_DURATIONS[1]:
                raise CelFunctionError("integer overflow")  # Go's durations: int64 nanoseconds
            # celpy's duration - duration is a plain timedelta, which no overload takes.
            return celtypes.DurationType(result)
        return result

    return run


def _negate(value: Any) -> Any:
    """``-x`` of an int, a double or a duration."""
    kind = cel_type_name(value)
    if kind in ("string", "bool", _TIMESTAMP):
        raise TypeError("no such overload")
    if kind not in ("int", "double", _DURATION):
        raise CelFunctionError("no such overload: -_")
    if kind == _DURATION:  # celpy's would be a plain timedelta
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
        if op is operator.truediv and isinstance(b, float) and float(b) == 0 and _is_number(a):
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
        value = _map_lookup(container, key)
        if value is _MISSING:
            raise CelKeyError(f"no such key: {_format_key(key)}")
        return value
    if isinstance(container, list):
        if isinstance(key, float):
            if not key.is_integer():
                raise CelFunctionError(f"unsupported index value {_format_key(key)} in list")
            key = int(key)
        if isinstance(key, str | bytes) or _is_bool(key):
            raise CelFunctionError(f"unsupported index type '{cel_type_name(key)}' in list")
        index = _int(key)
        if index < 0 or index >= len(container):
            raise CelIndexError(f"index out of bounds: {index}")
        return container[index]
    raise TypeError("no such overload")


def _format_key(key: Any) -> str:
    # cel-go prints the key with %v: strings bare, bools as true/false, 1.0 as 1.
    if _is_bool(key):
        return "true" if key else "false"
    if isinstance(key, float):
        return go_format_value(float(key))
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
    "int": _conversion(celtypes.IntType, "[+-]?[0-9]+", "int", "integer overflow"),
    "uint": _conversion(celtypes.UintType, "[0-9]+", "uint", "unsigned integer overflow"),
    "double": _conversion(celtypes.DoubleType, "", "double", "double overflow"),
    "bool": to_bool,
    "bytes": to_bytes,
    "duration": celtime.to_duration,
    "timestamp": celtime.to_timestamp,
    "size": size,
    "hasConditions": has_conditions,  # OCM
    "quantity": quantity,
    "isQuantity": is_quantity,
    "sign": quantity_sign,  # Kubernetes declares it global: ``sign(q)``, not ``q.sign()``
    "string": to_string,
    "url": _parser(kubevalues.parse_url),
    "isURL": lambda text: celtypes.BoolType(kubevalues.is_url(_string(text))),
    "ip": ip,
    "isIP": _validator(kubevalues.parse_ip),
    "cidr": _parser(kubevalues.parse_cidr),
    "isCIDR": _validator(kubevalues.parse_cidr),
    "semver": _parser(kubevalues.parse_semver),
    "isSemver": _validator(kubevalues.parse_semver),
}
#: Library functions with a qualified name, ``ip.isCanonical(s)`` (celpy calls them as a
#: method of the function ``ip``), by the name of that method.
QUALIFIED_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "ip.isCanonical": ip_is_canonical,
    "strings.quote": quote,
    "format.named": format_named,
    **{f"format.{name}": functools.partial(NamedFormat, name) for name in kubeformats.FORMAT_NAMES},
    **celoptional.QUALIFIED,
}
#: Library functions called as methods, ``x.f(...)``.
METHODS: Final[dict[str, Callable[..., Any]]] = {
    # Strings.
    "contains": _text_test(str.__contains__),
    "startsWith": _text_test(str.startswith),
    "endsWith": _text_test(str.endswith),
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
    # Optional values, and a list's first() and last().
    **celoptional.METHODS,
}
#: Functions and operator overrides bound to every program.
FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    # Operators (celpy looks them up by these names). The ternary and the
    # unary operators are celpy's own, only made to propagate errors.
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
    **GLOBAL_FUNCTIONS,
    **METHODS,
    **QUALIFIED_FUNCTIONS,
}
FUNCTIONS.update({name: _propagating(function) for name, function in FUNCTIONS.items()})
# Not propagating: a deciding operand absorbs the other side's error.
FUNCTIONS["_&&_"] = _logical(decides=False)
FUNCTIONS["_||_"] = _logical(decides=True)

# ``int`` as a value (``type(x) == int``) resolves to the function bound under
# that name, which replaces celpy's IntType: compare it as the type it stands for.
_CONVERSION_TYPES: Final[dict[Any, type]] = {
    FUNCTIONS["int"]: celtypes.IntType,
    FUNCTIONS["uint"]: celtypes.UintType,
    FUNCTIONS["double"]: celtypes.DoubleType,
    FUNCTIONS["string"]: celtypes.StringType,
    FUNCTIONS["bool"]: celtypes.BoolType,
}
#: The CEL names of the library types; ``net.IP`` and ``net.CIDR`` are also type values.
_CEL_TYPE_NAMES: Final[dict[type, str]] = {
    Quantity: "kubernetes.Quantity",
    URL: "kubernetes.URL",
    IP: "net.IP",
    CIDR: "net.CIDR",
    Semver: "kubernetes.Semver",
    NamedFormat: "kubernetes.NamedFormat",
}
_LIBRARY_TYPES: Final = tuple(_CEL_TYPE_NAMES)
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
    if isinstance(value, type) or (callable(value) and value in _CONVERSION_TYPES):
        return "type"
    name = next((name for kind, name in _CEL_TYPES if isinstance(value, kind)), cls.__name__)
    if not callable(value):  # a function's name depends on the function, not its class
        _NAME_OF_CLASS[cls] = name
    return name


def type_value_name(value: Any) -> str:
    """The name of the type a type value (``type(1)``, ``int``) stands for."""
    value = _CONVERSION_TYPES.get(value, value) if callable(value) else value
    return next((name for kind, name in _CEL_TYPES if issubclass(value, kind)), value.__name__)


TYPE_NAMES: Final[dict[str, type]] = {"net.IP": IP, "net.CIDR": CIDR, "optional_type": CelOptional}
