"""How the Go agent sees a JSON-decoded value: its Go type, its ``%v`` text and
its ``encoding/json`` encoding.

OCM reads live objects as ``unstructured.Unstructured``: JSON integers that fit
become ``int64``, other numbers ``float64``, objects ``map[string]interface {}``
and arrays ``[]interface {}``. Those Go types show through in status feedback:
in error messages (``the type []interface {} of the value ...``), in JSONPath
comparisons (``int64`` and ``float64`` do not compare) and in ``JsonRaw``
values, which are Go's compact JSON. This module reproduces all three for the
Python values ``json.loads`` gives, so the hub sees the same strings from us as
from the Go agent.

Two Go types have no JSON origin and get marker classes: :class:`GoInt`, an
integer literal of a JSONPath (Go ``int``, so ``{5}`` is *not* an Integer
feedback value), and :class:`GoUint8`, a byte of a string, which ``.*`` and
``..`` yield because Go indexes strings by byte.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1

#: ``go_format_value`` stops after about this many characters: the text only
#: goes into error messages, and an object printed whole would not fit a
#: condition (Go prints it whole; the hub then rejects the status patch).
FORMAT_LIMIT: Final = 1024


class GoInt(int):
    """An integer literal of a JSONPath: Go ``int``, not the ``int64`` of JSON data."""

    __slots__ = ()


class GoUint8(int):
    """One byte of a string (Go ``uint8``), as Go's wildcard and recursive descent yield."""

    __slots__ = ()


class GoJSONError(ValueError):
    """``encoding/json`` refuses the value; the message is Go's
    (``json: unsupported value: NaN``)."""


class JSONTooLong(ValueError):
    """The encoding went past the length limit given to :func:`go_marshal`."""


def is_go_int64(value: Any) -> bool:
    """Whether ``value`` is what Go decodes as ``int64``: a JSON integer that fits."""
    if type(value) is not int and (
        not isinstance(value, int) or isinstance(value, bool | GoInt | GoUint8)
    ):
        return False
    return INT64_MIN <= value <= INT64_MAX


def go_type_name(value: Any) -> str:
    """Go's ``reflect.TypeOf(value).String()`` for the Go twin of ``value``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, GoInt):
        return "int"
    if isinstance(value, GoUint8):
        return "uint8"
    if isinstance(value, int):
        # An integer too large for int64 is decoded as float64 by Go.
        return "int64" if INT64_MIN <= value <= INT64_MAX else "float64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    return type(value).__name__


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value, as Go's decoder names it in errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# --- floats ------------------------------------------------------------------


def _shortest_digits(x: float) -> tuple[str, int]:
    """The shortest round-trip decimal digits of ``x > 0`` and the decimal point
    position: ``x == 0.<digits> * 10**dp``. Python's ``repr`` and Go's
    ``strconv`` both pick the shortest digits that round-trip."""
    mantissa, _, exponent = repr(x).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    dp = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    dp -= len(digits) - len(stripped)
    return stripped.rstrip("0"), dp


def _fixed(digits: str, dp: int) -> str:
    if dp <= 0:
        return "0." + "0" * -dp + digits
    if dp >= len(digits):
        return digits + "0" * (dp - len(digits))
    return digits[:dp] + "." + digits[dp:]


def _exponent(digits: str, dp: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exp = dp - 1
    return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _float_special(x: float) -> str | None:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return None


def json_float(x: float) -> str:
    """Go ``encoding/json``'s float64 text: fixed notation for 1e-6 <= |x| < 1e21,
    otherwise ``1e+21`` / ``1e-7`` style (Go trims ``e-07`` to ``e-7``)."""
    special = _float_special(x)
    if special is not None:
        raise GoJSONError(f"json: unsupported value: {special}")
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0"
    digits, dp = _shortest_digits(abs(x))
    if 1e-6 <= abs(x) < 1e21:
        return sign + _fixed(digits, dp)
    text = _exponent(digits, dp)
    if text[-4:-1] == "e-0":
        text = text[:-2] + text[-1]
    return sign + text


def _v_float(x: float) -> str:
    """Go ``fmt``'s ``%v`` of a float64 (``strconv`` ``'g'``, shortest): ``1e+06``, ``1.5``."""
    special = _float_special(x)
    if special is not None:
        return special
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0"
    digits, dp = _shortest_digits(abs(x))
    exp = dp - 1
    return sign + (_exponent(digits, dp) if exp < -4 or exp >= 6 else _fixed(digits, dp))


def int_as_float(value: int) -> float:
    """The float64 Go decodes a JSON integer outside int64 into (±Inf past float64)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# --- encoding/json -----------------------------------------------------------

# Go escapes the HTML characters and the JavaScript line separators too, and
# turns invalid UTF-8 (a lone surrogate here) into U+FFFD.
_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029\ud800-\udfff]')
_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    # Go 1.22 and later; older Go wrote \u0008 and \u000c.
    "\b": "\\b",
    "\f": "\\f",
}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\u{code:04x}"


def _json_string(text: str) -> str:
    if _NEEDS_ESCAPE.search(text) is None:
        return '"' + text + '"'
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def go_marshal(value: Any, limit: int | None = None, *, sort_keys: bool = True) -> str:
    """Go's ``json.Marshal(value)`` as text: compact, object keys sorted, ``<`` ``>``
    ``&`` U+2028 U+2029 escaped, other non-ASCII kept.

    ``sort_keys=False`` keeps the keys in their order, as Go writes a struct
    or passes a raw object through.

    With ``limit``, stops with :class:`JSONTooLong` once the text is longer than
    ``limit`` characters (so also longer than ``limit`` UTF-8 bytes): a JsonRaw
    value past the limit is an error anyway, and the object may be large.
    Iterative, so deep nesting cannot exhaust the Python stack.
    """
    text, cut = _text(value, _JSON_SYNTAX, limit, sort_keys=sort_keys)
    if cut:
        raise JSONTooLong(f"longer than {limit}")
    return text


@dataclass(frozen=True)
class _Syntax:
    """How :func:`_pieces` spells maps, separators, keys and scalars."""

    map_open: str
    map_close: str
    separator: str
    key: Callable[[Any], str]
    nil: str
    string: Callable[[str], str]
    number: Callable[[float], str]
    other: Callable[[Any], str]

    def scalar(self, item: Any) -> str:
        """A value that is neither a map nor a list."""
        if item is None:
            return self.nil
        if item is True:
            return "true"
        if item is False:
            return "false"
        if isinstance(item, str):
            return self.string(item)
        if isinstance(item, int):
            if INT64_MIN <= item <= INT64_MAX or isinstance(item, GoInt | GoUint8):
                return str(int(item))
            return self.number(int_as_float(item))
        if isinstance(item, float):
            return self.number(item)
        return self.other(item)


def _text(
    value: Any, syntax: _Syntax, limit: int | None, *, sort_keys: bool = True
) -> tuple[str, bool]:
    """The text of ``value``, stopped once longer than ``limit``; whether it was stopped."""
    out: list[str] = []
    size = 0
    for piece in _pieces(value, syntax, sort_keys=sort_keys):
        out.append(piece)
        size += len(piece)
        if limit is not None and size > limit:
            return "".join(out), True
    return "".join(out), False


def _pieces(value: Any, syntax: _Syntax, *, sort_keys: bool = True) -> Iterator[str]:
    """The text of ``value`` piece by piece, so callers can stop early (iterative: deep
    nesting cannot exhaust the Python stack)."""
    # (True, text) is output as is; (False, value) is a value still to encode.
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, item = stack.pop()
        if literal:
            yield item
        elif isinstance(item, Mapping):
            yield syntax.map_open
            stack.append((True, syntax.map_close))
            keys = sorted(item) if sort_keys else list(item)
            for index in range(len(keys) - 1, -1, -1):
                key = keys[index]
                stack.append((False, item[key]))
                stack.append((True, (syntax.separator if index else "") + syntax.key(key)))
        elif isinstance(item, list | tuple):
            yield "["
            stack.append((True, "]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append((False, item[index]))
                if index:
                    stack.append((True, syntax.separator))
        else:
            yield syntax.scalar(item)


# --- fmt %v ------------------------------------------------------------------


def go_format_value(value: Any, limit: int | None = FORMAT_LIMIT) -> str:
    """Go ``fmt``'s ``%v`` of the value: ``map[a:1 b:[x y]]``, ``<nil>``, ``1e+06``.

    Cut at about ``limit`` characters with ``...`` (for error messages; Go prints
    it whole): ``limit=None`` gives the whole text.
    """
    text, cut = _text(value, _V_SYNTAX, limit)
    return text[:limit] + "..." if cut and limit is not None else text


def _unsupported(item: Any) -> str:
    raise GoJSONError(f"json: unsupported type: {go_type_name(item)}")


def _json_key(key: str) -> str:
    return _json_string(key) + ":"


_JSON_SYNTAX = _Syntax("{", "}", ",", _json_key, "null", _json_string, json_float, _unsupported)
_V_SYNTAX = _Syntax("map[", "]", " ", lambda key: f"{key}:", "<nil>", str, _v_float, repr)


def go_bytes(text: str) -> str:
    """``text`` as a Go byte string: one character per UTF-8 byte, so ``len`` is Go's."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


#: ``strconv.Quote``'s escapes that are not ``\xNN``/``\uNNNN``.
GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (``%q``) of ``text``.

    Bytes that were not UTF-8 (kept as lone surrogates by ``surrogateescape``, as
    in ``sys.argv``) are ``\\xNN``, as Go writes an invalid byte.
    """
    out = ['"']
    for char in text:
        code = ord(char)
        if char in GO_ESCAPES:
            out.append(GO_ESCAPES[char])
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def protobuf_size(length: int) -> int:
    """Size of a length-delimited protobuf field of ``length`` bytes: tag, varint, bytes
    (what Go's generated ``Size()`` counts for a ``RawExtension``: 300 bytes count 303)."""
    return 1 + length + max(1, (length.bit_length() + 6) // 7)
