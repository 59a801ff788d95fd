"""cel-go's ext.Strings and the Kubernetes regex library (RE2, as cel-go).

Methods take their receiver first (celpy binds ``x.f(a)`` to ``f(x, a)``).
"""

from __future__ import annotations

import functools
import importlib
import re
import string
from collections.abc import Callable, Iterable
from typing import Any, Final

from celpy import celtypes

from ocmkit.govalues import GO_ESCAPES
from workagent.conditions.celvalues import (
    MAX_RESULT_SIZE,
    CelBudgetError,
    CelFunctionError,
    bounded_string,
    cel_equal,
    int_arg,
    list_arg,
    string_arg,
)

# google-re2 ships with celpy (its ``matches`` uses it) but has no type stubs.
re2: Any = importlib.import_module("re2")


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
    escaped = (GO_ESCAPES.get(c, c) for c in string_arg(text))
    return bounded_string('"' + "".join(escaped) + '"')


def _text_test(test: Callable[[str, str], bool]) -> Callable[[Any, Any], celtypes.BoolType]:
    """``s.contains(t)`` and friends, of strings only (celpy also takes bytes and lists)."""
    return lambda text, part: celtypes.BoolType(test(string_arg(text), string_arg(part)))


def char_at(text: Any, index: Any) -> celtypes.StringType:
    """``s.charAt(i)``: the character at ``i``; ``""`` at the end."""
    s, i = string_arg(text), int_arg(index)
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
    s, sub = string_arg(target), string_arg(item)
    if offset is None:
        return celtypes.IntType(s.find(sub))
    first = int_arg(offset)
    found = _searched_from(s, sub, first)
    return celtypes.IntType(s.find(sub, first) if found is None else found)


def last_index_of(target: Any, item: Any, offset: Any = None) -> celtypes.IntType:
    """``s.lastIndexOf(t[, i])`` for strings, ``l.lastIndexOf(x)`` for lists."""
    if isinstance(target, list):
        return _list_search(target, item, offset, range(len(target) - 1, -1, -1))
    s, sub = string_arg(target), string_arg(item)
    if offset is None:
        return celtypes.IntType(s.rfind(sub))
    last = int_arg(offset)
    found = _searched_from(s, sub, last)
    if found is not None:
        return celtypes.IntType(found)
    # cel-go looks for a match starting at or before ``last``.
    return celtypes.IntType(s.rfind(sub, 0, min(last, len(s) - len(sub)) + len(sub)))


_TO_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_TO_UPPER: Final = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def lower_ascii(text: Any) -> celtypes.StringType:
    """``s.lowerAscii()``: only ASCII letters change."""
    return celtypes.StringType(string_arg(text).translate(_TO_LOWER))


def upper_ascii(text: Any) -> celtypes.StringType:
    """``s.upperAscii()``: only ASCII letters change."""
    return celtypes.StringType(string_arg(text).translate(_TO_UPPER))


def replace(text: Any, old: Any, new: Any, count: Any = None) -> celtypes.StringType:
    """``s.replace(a, b[, n])``: ``n`` < 0 (the default) replaces all."""
    s, a, b = string_arg(text), string_arg(old), string_arg(new)
    n = -1 if count is None else int_arg(count)
    # Check the size before building it: ``s.replace('', s)`` is quadratic.
    possible = len(s) + 1 if a == "" else s.count(a)
    occurrences = possible if n < 0 else min(n, possible)
    if len(s) + occurrences * max(0, len(b) - len(a)) > MAX_RESULT_SIZE:
        raise CelBudgetError("string result too large")
    return celtypes.StringType(s.replace(a, b, n))


def split(text: Any, separator: Any, limit: Any = None) -> celtypes.ListType:
    """``s.split(sep[, n])`` with Go's ``strings.SplitN`` semantics."""
    s, sep = string_arg(text), string_arg(separator)
    n = -1 if limit is None else int_arg(limit)
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
    s, i = string_arg(text), int_arg(start)
    j = len(s) if end is None else int_arg(end)
    if end is not None and i > j:
        raise CelFunctionError(f"invalid substring range. start: {i}, end: {j}")
    if i < 0 or i > len(s):
        raise CelFunctionError(f"index out of range: {i}")
    if j < 0 or j > len(s):
        raise CelFunctionError(f"index out of range: {j}")
    return celtypes.StringType(s[i:j])


def trim(text: Any) -> celtypes.StringType:
    """``s.trim()``: leading and trailing Unicode white space removed."""
    return celtypes.StringType(string_arg(text).strip(_GO_SPACE))


def reverse(value: Any) -> celtypes.StringType:
    """``s.reverse()``."""
    return celtypes.StringType(string_arg(value)[::-1])


def join(items: Any, separator: Any = None) -> celtypes.StringType:
    """``l.join([sep])`` for a list of strings."""
    elements = list_arg(items)
    sep = "" if separator is None else string_arg(separator)
    return bounded_string(sep.join(string_arg(e) for e in elements))


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
    return celtypes.BoolType(_regex(string_arg(pattern)).search(string_arg(text)) is not None)


def regex_error(pattern: str) -> str | None:
    """Go's error for a pattern that does not compile, or None."""
    try:
        _regex(pattern)
    except CelFunctionError as exc:
        return str(exc)
    return None


def _library_regex(pattern: Any) -> Any:
    """``_regex`` for the Kubernetes library's functions, which word a bad pattern so."""
    error = regex_error(string_arg(pattern))
    if error is not None:
        raise CelFunctionError(f"Illegal regex: {error}")
    return _regex(pattern)


def find(text: Any, pattern: Any) -> celtypes.StringType:
    """``s.find(re)``: the first match, or ``""``."""
    found = _library_regex(pattern).search(string_arg(text))
    return celtypes.StringType(found.group(0) if found else "")


def find_all(text: Any, pattern: Any, limit: Any = None) -> celtypes.ListType:
    """``s.findAll(re[, n])``: all (or the first ``n``) matches."""
    n = -1 if limit is None else int_arg(limit)
    out: list[celtypes.StringType] = []
    if n == 0:
        return celtypes.ListType(out)
    for found in _library_regex(pattern).finditer(string_arg(text)):
        out.append(celtypes.StringType(found.group(0)))
        if 0 < n <= len(out):
            break
    return celtypes.ListType(out)


#: The string and regex methods, ``s.f(...)``.
METHODS: Final[dict[str, Callable[..., Any]]] = {
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
    "matches": matches,
    "find": find,
    "findAll": find_all,
}
#: ``strings.quote(s)``.
QUALIFIED: Final[dict[str, Callable[..., Any]]] = {"strings.quote": quote}
