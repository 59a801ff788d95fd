"""Kubernetes JSONPath as client-go's ``util/jsonpath`` runs it for status feedback.

OCM evaluates a feedback path with ``jsonpath.New(name).AllowMissingKeys(true)``,
``Parse("{" + path + "}")`` and ``FindResults(object)``. This module is a port of
that parser and evaluator, not a translation to jsonpath-ng: the
``StatusFeedbackSynced`` message embeds client-go's error texts verbatim, and
client-go's semantics (an index out of range is an error, a missing key is
nothing, ``int64`` against a float literal does not compare, one result set
per ``{}`` action) are not jsonpath-ng's. A plain field chain such as
``.status.readyReplicas`` is evaluated by direct dictionary lookups.

Differences from client-go, all on hostile input only: paths longer than
:data:`MAX_PATH_LENGTH` or nested deeper than :data:`MAX_NESTING` are parse
errors, an evaluation that produces more than :data:`MAX_WORK` intermediate
values stops with an error (Go would run out of time or memory; a
:class:`WorkBudget` makes several evaluations share that limit), and map
entries are visited in sorted key order where Go's order is random (so
``.*`` and ``..`` give stable feedback values instead of flapping ones).

Parsed paths are immutable and cached (:func:`compile_path`, an LRU of
:data:`CACHE_SIZE` entries), so a path is parsed once however often its
resource is scraped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from ocmkit.govalues import (
    INT64_MAX,
    INT64_MIN,
    GoInt,
    GoUint8,
    go_format_value,
    go_type_name,
    int_as_float,
)

__all__ = [
    "CACHE_SIZE",
    "MAX_NESTING",
    "MAX_PATH_LENGTH",
    "MAX_WORK",
    "JSONPathError",
    "JSONPathEvalError",
    "JSONPathParseError",
    "Template",
    "WorkBudget",
    "compile_path",
]

#: Longest path accepted, in characters. Paths come from any hub user.
MAX_PATH_LENGTH: Final = 1024
#: Deepest nesting of filters, unions and bracketed keys inside one another.
MAX_NESTING: Final = 16
#: Most intermediate values one evaluation may produce (unions of unions and
#: nested ``range`` blocks multiply; a real path produces a handful).
MAX_WORK: Final = 1_000_000
#: Parsed paths kept.
CACHE_SIZE: Final = 2048


class JSONPathError(Exception):
    """A path that cannot be parsed or evaluated; ``str()`` is client-go's message."""


class JSONPathParseError(JSONPathError):
    """The path does not parse."""


class JSONPathEvalError(JSONPathError):
    """Evaluating the path against an object failed.

    ``partial`` is what client-go returns alongside the error: an ``exists``
    filter (``[?(@.a[3])]``) keeps an element when that is not empty.
    """

    def __init__(self, message: str, partial: list[Any] | None = None) -> None:
        super().__init__(message)
        self.partial: list[Any] = partial if partial is not None else []


class _WorkLimitExceeded(Exception):
    """Raised past MAX_WORK; never swallowed by an ``exists`` filter, unlike evaluation errors."""


_MISSING: Final = object()


class WorkBudget:
    """Intermediate values that several evaluations may produce together.

    One hostile feedback rule may list many paths; with a limit per path its
    cost would grow with their number. The paths of one resource therefore
    share one budget: once it is spent, the remaining non-trivial paths fail
    at once (plain field chains cost nothing and are always read).
    """

    __slots__ = ("remaining", "total")

    def __init__(self, total: int = MAX_WORK) -> None:
        self.total = total
        self.remaining = total


class _Run:
    """Mutable state of one evaluation: client-go's range counters and our work budget."""

    __slots__ = ("begin_range", "end_range", "in_range", "last_end", "limit", "work")

    def __init__(self, limit: int = MAX_WORK) -> None:
        self.begin_range = 0
        self.in_range = 0
        self.end_range = 0
        self.last_end: int | None = None
        self.work = 0
        self.limit = limit

    def charge(self, count: int) -> None:
        self.work += count
        if self.work > self.limit:
            raise _WorkLimitExceeded


def _is_map(value: Any) -> bool:
    return isinstance(value, dict | Mapping)


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _children(run: _Run, value: Any) -> list[Any]:
    """What Go's wildcard iterates: map values, array items, a string's bytes.

    Charged to ``run`` before they are built: a long string's bytes would
    otherwise cost their full price even when the budget is already spent.
    """
    if _is_map(value):
        run.charge(len(value))
        return [value[key] for key in sorted(value)]
    if _is_list(value):
        run.charge(len(value))
        return list(value)
    if isinstance(value, str):
        encoded = value.encode("utf-8", "surrogatepass")
        run.charge(len(encoded))
        return [GoUint8(byte) for byte in encoded]
    return []


def _lookup(value: Any, chain: tuple[str, ...]) -> Any:
    """A chain of field nodes applied to one value: the value found, or _MISSING.

    Equivalent to evaluating the fields one by one (a field of nil, of a
    non-map or of a missing key selects nothing), without the lists.
    """
    for name in chain:
        if type(value) is not dict and (value is None or not isinstance(value, Mapping)):
            return _MISSING
        value = value.get(name, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


# --- nodes -------------------------------------------------------------------
#
# Each node maps the list of current values to the next list, as client-go's
# walk does. ``None`` stands for a Go nil interface.


class _Node:
    __slots__ = ()

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class _List(_Node):
    nodes: tuple[_Node, ...]

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        current = values
        for node in self.nodes:
            current = node.eval(run, current)
            # run.charge, inlined: this is the evaluator's innermost loop.
            run.work += len(current) + 1
            if run.work > run.limit:
                raise _WorkLimitExceeded
        return current


@dataclass(frozen=True, slots=True)
class _Text(_Node):
    text: str

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        return [self.text]


@dataclass(frozen=True, slots=True)
class _Field(_Node):
    name: str

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        out = []
        name = self.name
        for value in values:
            if type(value) is dict or (value is not None and isinstance(value, Mapping)):
                found = value.get(name, _MISSING)
                if found is not _MISSING:
                    out.append(found)
        # Missing keys are allowed (AllowMissingKeys(true)): no error, no value.
        return out


@dataclass(frozen=True, slots=True)
class _Param:
    value: int
    known: bool
    derived: bool = False


@dataclass(frozen=True, slots=True)
class _Array(_Node):
    start: _Param
    end: _Param
    step: _Param

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not _is_list(value):
                raise JSONPathEvalError(f"{go_type_name(value)} is not array or slice", values)
            length = len(value)
            start = self.start.value if self.start.known else 0
            if start < 0:
                start += length
            end = self.end.value if self.end.known else length
            if end < 0 or (end == 0 and self.end.derived):
                end += length
            if end == start:
                # client-go returns here, dropping the values after this one.
                return out
            if start >= length or start < 0:
                raise JSONPathEvalError(
                    f"array index out of bounds: index {start}, length {length}", values
                )
            if end > length or end < 0:
                raise JSONPathEvalError(
                    f"array index out of bounds: index {end - 1}, length {length}", values
                )
            if start > end:
                raise JSONPathEvalError(
                    f"starting index {start} is greater than ending index {end}", values
                )
            step = 1
            if self.step.known:
                if self.step.value <= 0:
                    raise JSONPathEvalError("step must be > 0", values)
                step = self.step.value
            chunk = value[start:end:step]
            run.charge(len(chunk))
            out.extend(chunk)
        return out


@dataclass(frozen=True, slots=True)
class _Wildcard(_Node):
    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if value is not None:
                out.extend(_children(run, value))
        return out


@dataclass(frozen=True, slots=True)
class _Recursive(_Node):
    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        # Pre-order: a container (or non-empty string), then its descendants.
        # Leaves are not included; the next node picks from the containers.
        out: list[Any] = []
        stack = list(reversed(values))
        while stack:
            value = stack.pop()
            if value is None:
                continue
            children = _children(run, value)
            if children:
                out.append(value)
                stack.extend(reversed(children))
        return out


@dataclass(frozen=True, slots=True)
class _Literal(_Node):
    """An int, float or bool literal: one copy per current value."""

    value: Any

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        return [self.value] * len(values)


@dataclass(frozen=True, slots=True)
class _Identifier(_Node):
    name: str

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        if self.name == "range":
            run.begin_range += 1
            return values
        if self.name == "end":
            if run.in_range > 0:
                run.end_range += 1
                return []
            raise JSONPathEvalError("not in range, nothing to end")
        raise JSONPathEvalError(f"unrecognized identifier {self.name}", values)


@dataclass(frozen=True, slots=True)
class _Union(_Node):
    lists: tuple[_List, ...]

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for branch in self.lists:
            try:
                out.extend(branch.eval(run, values))
            except JSONPathEvalError as exc:
                raise JSONPathEvalError(str(exc), values) from None
        return out


class _CompareError(Exception):
    pass


_BAD_TYPE: Final = "invalid type for comparison"
_INCOMPATIBLE: Final = "incompatible types for comparison"


def _basic_kind(value: Any) -> tuple[str, Any]:
    """client-go's ``basicKind``: (kind, comparable value) or the ``invalid type`` error."""
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, GoUint8):
        return "uint", int(value)
    if isinstance(value, int):
        if isinstance(value, GoInt) or INT64_MIN <= value <= INT64_MAX:
            return "int", int(value)
        # Too large for int64: Go decoded it as float64.
        return "float", int_as_float(value)
    if isinstance(value, float):
        return "float", value
    if isinstance(value, str):
        return "string", value
    raise _CompareError(_BAD_TYPE)


def _operands(left: Any, right: Any) -> tuple[str, Any, Any]:
    """The kind both sides share and their comparable values."""
    k1, v1 = _basic_kind(left)
    k2, v2 = _basic_kind(right)
    # Integers compare across signedness; nothing else mixes.
    if k1 != k2 and {k1, k2} != {"int", "uint"}:
        raise _CompareError(_INCOMPATIBLE)
    return k1, v1, v2


def _equal(left: Any, right: Any) -> bool:
    _, v1, v2 = _operands(left, right)
    return bool(v1 == v2)


def _less(left: Any, right: Any) -> bool:
    kind, v1, v2 = _operands(left, right)
    if kind == "bool":
        raise _CompareError(_BAD_TYPE)
    return bool(v1 < v2)


def _compare(operator: str, left: Any, right: Any) -> bool:
    """The filter operators over client-go's template comparison functions."""
    if operator == "==":
        return _equal(left, right)
    if operator == "!=":
        return not _equal(left, right)
    if operator == "<":
        return _less(left, right)
    if operator == "<=":
        return _less(left, right) or _equal(left, right)
    if operator == ">":
        return not (_less(left, right) or _equal(left, right))
    if operator == ">=":
        return not _less(left, right)
    raise _CompareError(f"unrecognized filter operator {operator}")


@dataclass(frozen=True, slots=True)
class _Filter(_Node):
    left: _List
    right: _List
    operator: str
    #: Shortcut for the usual ``@.a.b == "literal"``: the left side's field names
    #: and the right side's constant (None when the shapes differ). Same
    #: results as evaluating the lists, several times faster.
    left_chain: tuple[str, ...] | None = None
    right_constant: tuple[Any] | None = None

    def eval(self, run: _Run, values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if not _is_list(value):
                raise JSONPathEvalError(
                    f"{go_format_value(value)} is not array or slice and cannot be filtered",
                    values,
                )
            if self.left_chain is not None and self.right_constant is not None:
                self._eval_simple(run, value, out)
                continue
            for item in value:
                element = [item]
                error: JSONPathEvalError | None = None
                try:
                    lefts = self.left.eval(run, element)
                except JSONPathEvalError as exc:
                    lefts, error = exc.partial, exc
                if self.operator == "exists":
                    # client-go ignores the error here and looks at what came back.
                    if lefts:
                        out.append(item)
                    continue
                if error is not None:
                    raise JSONPathEvalError(str(error), values) from None
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathEvalError("can only compare one element at a time", values)
                try:
                    rights = self.right.eval(run, element)
                except JSONPathEvalError as exc:
                    raise JSONPathEvalError(str(exc), values) from None
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathEvalError("can only compare one element at a time", values)
                try:
                    passed = _compare(self.operator, lefts[0], rights[0])
                except _CompareError as exc:
                    raise JSONPathEvalError(str(exc), out) from None
                if passed:
                    out.append(item)
        return out

    def _eval_simple(self, run: _Run, items: list[Any], out: list[Any]) -> None:
        assert self.left_chain is not None and self.right_constant is not None
        chain, (right,) = self.left_chain, self.right_constant
        run.charge(len(items))
        for item in items:
            left = _lookup(item, chain)
            if self.operator == "exists":
                if left is not _MISSING:
                    out.append(item)
                continue
            if left is _MISSING:
                continue
            if type(left) is str and type(right) is str and self.operator == "==":
                passed = left == right
            else:
                try:
                    passed = _compare(self.operator, left, right)
                except _CompareError as exc:
                    raise JSONPathEvalError(str(exc), out) from None
            if passed:
                out.append(item)


def _chain_of(nodes: tuple[_Node, ...]) -> tuple[str, ...] | None:
    """The field names when every node is a plain field, else None."""
    names = []
    for node in nodes:
        if not isinstance(node, _Field):
            return None
        names.append(node.name)
    return tuple(names)


def _constant_of(branch: _List) -> tuple[Any] | None:
    """``(value,)`` when the list is one literal or quoted text (one value per input)."""
    if len(branch.nodes) == 1:
        node = branch.nodes[0]
        if isinstance(node, _Text):
            return (node.text,)
        if isinstance(node, _Literal):
            return (node.value,)
    return None


def _make_filter(left: _List, right: _List, operator: str) -> _Filter:
    if operator == "exists":
        return _Filter(left, right, operator, _chain_of(left.nodes), (None,))
    return _Filter(left, right, operator, _chain_of(left.nodes), _constant_of(right))


# --- parser ------------------------------------------------------------------
#
# A line-by-line port of client-go's parser.go, with its tail recursion turned
# into loops (Python's stack is shallow). Positions count characters where Go
# counts bytes; every comparison the parser makes gives the same answer.

_EOF: Final = ""
_TERMINATORS: Final = frozenset(" \t\r\n.,[]$@{}")
_DICT_KEY = re.compile(r"'([^']*)'")
_SLICE = re.compile(r"(-?[0-9]*)(?::(-?[0-9]*))?(?::(-?[0-9]*))?")
_FILTER = re.compile(r"([^!<>=]+)([!<>=~]+)(.+?)")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES: Final = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}


class _SyntaxError(Exception):
    pass


def _is_terminator(char: str) -> bool:
    return char == _EOF or char in _TERMINATORS


def _is_alphanumeric(char: str) -> bool:
    return char == "_" or char.isalpha() or char.isdecimal()


def _go_rune(char: str) -> str:
    """Go's ``%#U``: ``U+0021 '!'``, or just ``U+0009`` for an unprintable rune."""
    text = f"U+{ord(char):04X}"
    return f"{text} '{char}'" if char.isprintable() else text


def _go_atoi(text: str) -> int | None:
    if _GO_INT.fullmatch(text) is None:
        return None
    number = int(text)
    return number if INT64_MIN <= number <= INT64_MAX else None


def _slice_param(text: str) -> _Param:
    """One number of ``[start:end:step]``; empty: not given."""
    if not text:
        return _Param(0, known=False)
    number = _go_atoi(text)
    if number is None:
        raise JSONPathParseError(f"array index {text} is not a number")
    return _Param(number, known=True)


def _unquote_extend(quoted: str) -> str:
    """client-go's ``UnquoteExtend`` (``strconv.Unquote`` that also takes single quotes)."""
    if len(quoted) < 2 or quoted[0] != quoted[-1] or quoted[0] not in "\"'":
        raise _SyntaxError
    quote, body = quoted[0], quoted[1:-1]
    if "\\" not in body and quote not in body:
        return body
    buffer = bytearray()
    i, size = 0, len(body)
    while i < size:
        char = body[i]
        if char == quote:
            raise _SyntaxError
        if ord(char) >= 0x80:
            buffer += char.encode("utf-8", "surrogatepass")
            i += 1
            continue
        if char != "\\":
            buffer.append(ord(char))
            i += 1
            continue
        if i + 1 >= size:
            raise _SyntaxError
        escape = body[i + 1]
        i += 2
        if escape in _SIMPLE_ESCAPES:
            buffer.append(_SIMPLE_ESCAPES[escape])
        elif escape in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[escape]
            digits = body[i : i + width]
            if len(digits) < width or not all(d in _HEX for d in digits):
                raise _SyntaxError
            i += width
            code = int(digits, 16)
            if escape == "x":
                # A single byte, possibly not UTF-8 on its own.
                buffer.append(code)
            elif code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _SyntaxError
            else:
                buffer += chr(code).encode("utf-8")
        elif escape in "01234567":
            digits = body[i : i + 2]
            if len(digits) < 2 or not all(d in "01234567" for d in digits):
                raise _SyntaxError
            i += 2
            code = int(escape + digits, 8)
            if code > 255:
                raise _SyntaxError
            buffer.append(code)
        elif escape in "'\"":
            if escape != quote:
                raise _SyntaxError
            buffer.append(ord(escape))
        else:
            raise _SyntaxError
    return buffer.decode("utf-8", "replace")


class _Parser:
    __slots__ = ("depth", "pos", "start", "text", "width")

    def __init__(self, text: str, depth: int) -> None:
        if depth > MAX_NESTING:
            raise JSONPathParseError(f"the path nests deeper than {MAX_NESTING} levels")
        self.text = text
        self.depth = depth
        self.pos = 0
        self.start = 0
        self.width = 0

    # -- scanning primitives (client-go's next/peek/backup/consumeText)

    def _next(self) -> str:
        if self.pos >= len(self.text):
            self.width = 0
            return _EOF
        self.width = 1
        self.pos += 1
        return self.text[self.pos - 1]

    def _peek(self) -> str:
        char = self._next()
        self.pos -= self.width
        return char

    def _backup(self) -> None:
        self.pos -= self.width

    def _consume(self) -> str:
        value = self.text[self.start : self.pos]
        self.start = self.pos
        return value

    # -- grammar

    def parse(self) -> list[_Node]:
        """The root nodes: one list per ``{...}`` action, text between them."""
        root: list[_Node] = []
        while True:
            brace = self.text.find("{", self.pos)
            if brace < 0:
                self.pos = len(self.text)
                if self.pos > self.start:
                    root.append(_Text(self._consume()))
                return root
            self.pos = brace
            if self.pos > self.start:
                root.append(_Text(self._consume()))
            self.pos += 1
            self._consume()
            nodes: list[_Node] = []
            self._inside_action(nodes)
            root.append(_List(tuple(nodes)))

    def _action(self, text: str) -> _List:
        """client-go's ``parseAction``: parse ``{text}`` and return its first list."""
        first = _Parser("{" + text + "}", self.depth + 1).parse()[0]
        assert isinstance(first, _List)
        return first

    def _inside_action(self, cur: list[_Node]) -> None:
        text = self.text
        while True:
            if text.startswith("}", self.pos):
                self.pos += 1
                self._consume()
                return
            if text.startswith("[?(", self.pos):
                self._filter(cur)
                continue
            if text.startswith("..", self.pos):
                self._recursive(cur)
                continue
            char = self._next()
            if char == _EOF or char in "\r\n":
                raise JSONPathParseError("unclosed action")
            if char in " @$":
                # A space, or the current object: nothing to do.
                self._consume()
            elif char == "[":
                self._array(cur)
            elif char in "\"'":
                self._quote(cur, char)
            elif char == ".":
                self._field(cur)
            elif char in "+-" or char.isdecimal():
                self._backup()
                self._number(cur)
            elif _is_alphanumeric(char):
                self._backup()
                self._identifier(cur)
            else:
                raise JSONPathParseError(f"unrecognized character in action: {_go_rune(char)}")

    def _identifier(self, cur: list[_Node]) -> None:
        while not _is_terminator(self._next()):
            pass
        self._backup()
        value = self._consume()
        if value in ("true", "false"):
            cur.append(_Literal(value == "true"))
        else:
            cur.append(_Identifier(value))

    def _recursive(self, cur: list[_Node]) -> None:
        if cur and isinstance(cur[-1], _Recursive):
            raise JSONPathParseError("invalid multiple recursive descent")
        self.pos += 2
        self._consume()
        cur.append(_Recursive())
        if _is_alphanumeric(self._peek()):
            self._field(cur)

    def _number(self, cur: list[_Node]) -> None:
        if self._peek() in ("+", "-"):
            self._next()
        while True:
            char = self._next()
            if char != "." and not char.isdecimal():
                self._backup()
                break
        value = self._consume()
        integer = _go_atoi(value)
        if integer is not None:
            cur.append(_Literal(GoInt(integer)))
            return
        if _GO_FLOAT.fullmatch(value) is not None:
            number = float(value)
            if not math.isinf(number):
                cur.append(_Literal(number))
                return
        raise JSONPathParseError(f"cannot parse number {value}")

    def _array(self, cur: list[_Node]) -> None:
        while True:
            char = self._next()
            if char in (_EOF, "\n"):
                raise JSONPathParseError("unterminated array")
            if char == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"

        parts = text.split(",")
        if len(parts) > 1:
            branches = tuple(self._action("[" + part.strip(" ") + "]") for part in parts)
            cur.append(_Union(branches))
            return

        key = _DICT_KEY.fullmatch(text)
        if key is not None:
            # ['a'] is .a, parsed as such: ['a.b'] is two fields, as in client-go.
            cur.extend(self._action("." + key.group(1)).nodes)
            return

        match = _SLICE.fullmatch(text)
        if match is None:
            raise JSONPathParseError(f"invalid array index {text}")
        start_text, end_text, step_text = match.groups()
        start = _slice_param(start_text)
        # [i] is the slice [i:i+1]; "derived" lets [-1] mean the last item.
        end = (
            _Param(start.value + 1, known=True, derived=True)
            if end_text is None
            else _slice_param(end_text)
        )
        cur.append(_Array(start, end, _slice_param(step_text or "")))

    def _filter(self, cur: list[_Node]) -> None:
        self.pos += len("[?(")
        self._consume()
        begin = end = False
        pair = ""
        while True:
            char = self._next()
            if char in (_EOF, "\n"):
                raise JSONPathParseError("unterminated filter")
            if char in ("'", '"'):
                if not begin:
                    begin, pair = True, char
                    continue
                if self.text[self.pos - 2] != "\\" and char == pair:
                    end = True
            elif char == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathParseError("unclosed array expect ]")
        text = self._consume()[:-2]
        match = _FILTER.fullmatch(text)
        if match is None:
            cur.append(_make_filter(self._action(text), _List(()), "exists"))
        else:
            left = self._action(match.group(1))
            right = self._action(match.group(3))
            cur.append(_make_filter(left, right, match.group(2)))

    def _quote(self, cur: list[_Node], quote: str) -> None:
        while True:
            char = self._next()
            if char in (_EOF, "\n"):
                raise JSONPathParseError("unterminated quoted string")
            if char == quote and self.text[self.pos - 2] != "\\":
                break
        value = self._consume()
        try:
            cur.append(_Text(_unquote_extend(value)))
        except _SyntaxError:
            raise JSONPathParseError(f"unquote string {value} error invalid syntax") from None

    def _field(self, cur: list[_Node]) -> None:
        self._consume()
        while True:
            char = self._next()
            if char == "\\":
                self._next()
            elif _is_terminator(char):
                self._backup()
                break
        value = self._consume()
        if value == "*":
            cur.append(_Wildcard())
        else:
            cur.append(_Field(value.replace("\\", "")))


# --- evaluation entry point ----------------------------------------------------


def _find_results(run: _Run, nodes: tuple[_Node, ...], first: int, data: Any) -> list[list[Any]]:
    """client-go's ``FindResults`` from ``nodes[first]`` on, including its
    ``range``/``end`` bookkeeping; ``run.last_end`` is an index into ``nodes``."""
    current = [data]
    results: list[list[Any]] = []
    index = first
    while index < len(nodes):
        found = nodes[index].eval(run, current)
        if 0 < run.end_range <= run.in_range:
            run.end_range -= 1
            run.last_end = index
            break
        if run.begin_range > 0:
            run.begin_range -= 1
            run.in_range += 1
            if found:
                for value in found:
                    results.extend(_find_results(run, nodes, index + 1, value))
            else:
                # Still walk the block so that its end is found.
                _find_results(run, nodes, index + 1, None)
            run.in_range -= 1
            if run.last_end is not None and run.last_end > index:
                index = run.last_end
            index += 1
            continue
        results.append(found)
        index += 1
    return results


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed feedback path (client-go's parsed ``{path}`` template)."""

    nodes: tuple[_Node, ...]
    #: For a plain field chain (``.status.readyReplicas``), the names: evaluated
    #: by dictionary lookups without the general machinery.
    fields: tuple[str, ...] | None

    def find_results(self, data: Any, budget: WorkBudget | None = None) -> list[list[Any]]:
        """The result sets, one per action (``{...}``) and text of the template.

        Raises :class:`JSONPathEvalError` with client-go's message. The
        evaluation may produce :data:`MAX_WORK` intermediate values, or what is
        left of ``budget`` (which it then draws from).
        """
        if self.fields is not None:
            value = _lookup(data, self.fields)
            return [[]] if value is _MISSING else [[value]]
        run = _Run(MAX_WORK if budget is None else budget.remaining)
        try:
            return _find_results(run, self.nodes, 0, data)
        except _WorkLimitExceeded:
            raise JSONPathEvalError(_over_budget(budget)) from None
        except RecursionError:
            raise JSONPathEvalError("the path nests too deeply for this object") from None
        finally:
            if budget is not None:
                budget.remaining = max(0, budget.remaining - run.work)


def _over_budget(budget: WorkBudget | None) -> str:
    """The error of an evaluation stopped by its work limit."""
    if budget is None or budget.remaining == budget.total:
        limit = MAX_WORK if budget is None else budget.total
        return f"the path produces more than {limit} intermediate values"
    # Earlier paths of the same resource spent part of the shared budget.
    return (
        f"the paths of this resource produce more than {budget.total} intermediate values "
        "together; this one was not evaluated to the end"
    )


def _field_chain(nodes: tuple[_Node, ...]) -> tuple[str, ...] | None:
    if len(nodes) == 1 and isinstance(nodes[0], _List):
        return _chain_of(nodes[0].nodes)
    return None


@lru_cache(maxsize=CACHE_SIZE)
def _compile(path: str) -> Template | str:
    # A parse error is cached as its message: re-raising one cached exception
    # object would grow its traceback on every raise.
    try:
        nodes = tuple(_Parser("{" + path + "}", 0).parse())
    except JSONPathParseError as exc:
        return str(exc)
    except RecursionError:
        return "the path nests too deeply"
    return Template(nodes, _field_chain(nodes))


def compile_path(path: str) -> Template:
    """Parse a feedback path (without braces, e.g. ``.status.readyReplicas``).

    Raises :class:`JSONPathParseError` with client-go's message, or for a path
    longer than :data:`MAX_PATH_LENGTH` characters.
    """
    if len(path) > MAX_PATH_LENGTH:
        raise JSONPathParseError(
            f"the path is {len(path)} characters long, more than the limit of {MAX_PATH_LENGTH}"
        )
    compiled = _compile(path)
    if isinstance(compiled, str):
        raise JSONPathParseError(compiled)
    return compiled
