"""A subset of jq, enough to run ``del(<path expression>)`` for ``ignoreFields``.

OCM evaluates ``jqPathExpressions`` with gojq; no jq implementation is a
dependency of this project, so the subset that names fields (paths, ``|``,
``,``, ``select`` with comparisons, ``and``/``or``/``not``, ``has``, ``empty``:
docs/compatibility.md) is implemented here. Anything else is a parse error.
"""

from __future__ import annotations

import json
import operator
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ocmkit.govalues import json_type

Path = tuple[str | int, ...]
#: (path of the value, or None when it is not a path expression result; the value)
Output = tuple[Path | None, Any]


class JqError(Exception):
    """A parse or evaluation error of the expression."""


class JqParseError(JqError):
    """The expression is malformed or outside the supported subset."""


class JqTimeout(JqError):
    """Evaluation ran past its deadline."""


_TOKEN = re.compile(
    r"""
    \s*(?:
      (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    | (?P<op>==|!=|<=|>=|\.\.|[.\[\](),|?<>:])
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise JqParseError(f"unexpected character {text[pos:].strip()[:1]!r}")
        pos = match.end()
        if match["string"] is not None:
            try:
                out.append(("str", json.loads(match["string"])))
            except ValueError as exc:
                raise JqParseError(f"invalid string literal {match['string']}") from exc
        elif match["number"] is not None:
            number = float(match["number"])
            out.append(("num", int(number) if number.is_integer() else number))
        elif match["op"] is not None:
            out.append(("op", match["op"]))
        else:
            out.append(("ident", match["ident"]))
    out.append(("end", None))
    return out


# -- AST -------------------------------------------------------------------------------

Node = Callable[[Output, "_Budget"], Iterator[Output]]


@dataclass
class _Budget:
    deadline: float

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise JqTimeout("timed out")


def _type_name(value: Any) -> str:
    """jq's name of a value's type: the JSON one, but ``boolean`` for true and false."""
    kind = json_type(value)
    return "boolean" if kind == "bool" else kind


def _show(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _truthy(value: Any) -> bool:
    return value is not None and value is not False


def _extend(path: Path | None, key: str | int) -> Path | None:
    return None if path is None else (*path, key)


def _index(output: Output, key: Any) -> Output:
    path, value = output
    if isinstance(key, str):
        if value is None:
            return _extend(path, key), None
        if isinstance(value, dict):
            return _extend(path, key), value.get(key)
        raise JqError(f"expected an object but got: {_type_name(value)} ({_show(value)})")
    if isinstance(key, int | float) and not isinstance(key, bool):
        if value is None:
            return _extend(path, int(key)), None
        if isinstance(value, list):
            i = int(key)
            if i < 0:
                i += len(value)
            return _extend(path, i), (value[i] if 0 <= i < len(value) else None)
        raise JqError(f"expected an array but got: {_type_name(value)} ({_show(value)})")
    raise JqError(f"cannot index {_type_name(value)} with {_type_name(key)}")


def _identity(output: Output, budget: _Budget) -> Iterator[Output]:
    yield output


def _field(target: Node, name: str) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        for found in target(output, budget):
            yield _index(found, name)

    return run


def _subscript(target: Node, index: Node) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        # jq evaluates the subscript against the term's input, not the target.
        keys = [value for _, value in index(output, budget)]
        for found in target(output, budget):
            for key in keys:
                yield _index(found, key)

    return run


def _children(path: Path | None, value: list[Any] | dict[str, Any]) -> Iterator[Output]:
    """The elements of an array or the values of an object, with their paths."""
    items = enumerate(value) if isinstance(value, list) else value.items()
    for key, item in items:
        yield _extend(path, key), item


def _iterate(target: Node) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        for path, value in target(output, budget):
            budget.check()
            if not isinstance(value, list | dict):
                raise JqError(f"cannot iterate over: {_type_name(value)}")
            yield from _children(path, value)

    return run


def _optional(inner: Node) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        try:
            yield from inner(output, budget)
        except JqTimeout:
            raise
        except JqError:
            return

    return run


def _recurse(output: Output, budget: _Budget) -> Iterator[Output]:
    budget.check()
    yield output
    path, value = output
    if isinstance(value, list | dict):
        for child in _children(path, value):
            yield from _recurse(child, budget)


def _pipe(left: Node, right: Node) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        for found in left(output, budget):
            yield from right(found, budget)

    return run


def _comma(left: Node, right: Node) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        yield from left(output, budget)
        yield from right(output, budget)

    return run


def _literal(value: Any) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        yield None, value

    return run


def _empty(output: Output, budget: _Budget) -> Iterator[Output]:
    return iter(())


def _select(cond: Node) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        for _, value in cond(output, budget):
            if _truthy(value):
                yield output

    return run


def _not(output: Output, budget: _Budget) -> Iterator[Output]:
    yield None, not _truthy(output[1])


def _has(arg: Node) -> Node:
    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        value = output[1]
        for _, key in arg(output, budget):
            if isinstance(value, dict) and isinstance(key, str):
                yield None, key in value
            elif isinstance(value, list) and isinstance(key, int) and not isinstance(key, bool):
                yield None, 0 <= key < len(value)
            else:
                raise JqError(f"has({_show(key)}) cannot be applied to: {_type_name(value)}")

    return run


_ORDER = {"null": 0, "boolean": 1, "number": 2, "string": 3, "array": 4, "object": 5}


def _sort_key(value: Any) -> tuple[Any, ...]:
    """jq's total order: null < false < true < numbers < strings < arrays < objects."""
    kind = _type_name(value)
    if kind == "array":
        return (_ORDER[kind], tuple(_sort_key(v) for v in value))
    if kind == "object":
        items = tuple((k, _sort_key(value[k])) for k in sorted(value))
        return (_ORDER[kind], tuple(sorted(value)), items)
    if kind == "null":
        return (0,)
    return (_ORDER[kind], value)


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _compare(left: Node, op: str, right: Node) -> Node:
    compare = _COMPARISONS[op]

    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        for _, b in right(output, budget):
            for _, a in left(output, budget):
                yield None, compare(_sort_key(a), _sort_key(b))

    return run


def _logical(left: Node, right: Node, *, decided_by: bool) -> Node:
    """``and`` (decided by a false left side) and ``or`` (by a true one)."""

    def run(output: Output, budget: _Budget) -> Iterator[Output]:
        for _, a in left(output, budget):
            if _truthy(a) == decided_by:
                yield None, decided_by
                continue
            for _, b in right(output, budget):
                yield None, _truthy(b)

    return run


# -- parser ----------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> tuple[str, Any]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, Any]:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expect(self, kind: str, value: Any = None) -> Any:
        token = self.take()
        if token[0] != kind or (value is not None and token[1] != value):
            raise JqParseError(f"unexpected token {self._describe(token)}")
        return token[1]

    @staticmethod
    def _describe(token: tuple[str, Any]) -> str:
        return "end of expression" if token[0] == "end" else repr(token[1])

    def parse(self) -> Node:
        node = self.pipe()
        if self.peek()[0] != "end":
            raise JqParseError(f"unexpected token {self._describe(self.peek())}")
        return node

    def pipe(self) -> Node:
        left = self.comma()
        if self.peek() == ("op", "|"):
            self.take()
            return _pipe(left, self.pipe())
        return left

    def comma(self) -> Node:
        node = self.or_()
        while self.peek() == ("op", ","):
            self.take()
            node = _comma(node, self.or_())
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek() == ("ident", "or"):
            self.take()
            node = _logical(node, self.and_(), decided_by=True)
        return node

    def and_(self) -> Node:
        node = self.compare()
        while self.peek() == ("ident", "and"):
            self.take()
            node = _logical(node, self.compare(), decided_by=False)
        return node

    def compare(self) -> Node:
        left = self.postfix()
        kind, value = self.peek()
        if kind == "op" and value in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return _compare(left, value, self.postfix())
        return left

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            kind, value = self.peek()
            if (kind, value) == ("op", "?"):
                self.take()
                node = _optional(node)
            elif (kind, value) == ("op", "["):
                node = self.bracket(node)
            elif (kind, value) == ("op", "."):
                self.take()
                nxt = self.peek()
                if nxt[0] in ("ident", "str"):
                    self.take()
                    node = _field(node, nxt[1])
                elif nxt == ("op", "["):
                    node = self.bracket(node)
                else:
                    raise JqParseError(f"unexpected token {self._describe(nxt)} after '.'")
            else:
                return node

    def bracket(self, target: Node) -> Node:
        self.expect("op", "[")
        if self.peek() == ("op", "]"):
            self.take()
            return _iterate(target)
        index = self.pipe()
        self.expect("op", "]")
        return _subscript(target, index)

    def primary(self) -> Node:
        kind, value = self.take()
        if (kind, value) == ("op", "."):
            nxt = self.peek()
            if nxt[0] in ("ident", "str"):
                self.take()
                return _field(_identity, nxt[1])
            return _identity
        if (kind, value) == ("op", ".."):
            return _recurse
        if (kind, value) == ("op", "("):
            node = self.pipe()
            self.expect("op", ")")
            return node
        if kind in ("str", "num"):
            return _literal(value)
        if kind == "ident":
            return self.keyword(value)
        raise JqParseError(f"unexpected token {self._describe((kind, value))}")

    def keyword(self, name: str) -> Node:
        if name in ("true", "false"):
            return _literal(name == "true")
        if name == "null":
            return _literal(None)
        if name == "not":
            return _not
        if name == "empty":
            return _empty
        if name in ("select", "has"):
            self.expect("op", "(")
            arg = self.pipe()
            self.expect("op", ")")
            return _select(arg) if name == "select" else _has(arg)
        raise JqParseError(f"function not defined: {name}")


def compile_path(expression: str) -> Node:
    """Parse a path expression; raises JqParseError."""
    return _Parser(expression).parse()


def _path_key(path: Path) -> tuple[Any, ...]:
    return tuple(_sort_key(part) for part in path)


def _delete(doc: Any, path: Path) -> Any:
    """jq ``delpaths([path])`` for one path; returns the new document."""
    if not path:
        return None
    head, rest = path[0], path[1:]
    if doc is None:
        return None
    if isinstance(doc, dict):
        if not isinstance(head, str):
            raise JqError(f"cannot delete field at index of object: {_show(head)}")
        if head not in doc:
            return doc
        if rest:
            child = _delete(doc[head], rest)
            return {**doc, head: child}
        return {k: v for k, v in doc.items() if k != head}
    if isinstance(doc, list):
        if not isinstance(head, int) or isinstance(head, bool):
            raise JqError(f"cannot delete field at object index of array: {_show(head)}")
        index = head + len(doc) if head < 0 else head
        if not 0 <= index < len(doc):
            return doc
        if rest:
            return [*doc[:index], _delete(doc[index], rest), *doc[index + 1 :]]
        return [*doc[:index], *doc[index + 1 :]]
    raise JqError(f"cannot delete from {_type_name(doc)}")


def delete_paths(doc: Any, expression: str, *, timeout: float = 1.0) -> Any:
    """jq ``del(expression)`` on ``doc``: a new document, ``doc`` is not modified.

    Raises JqParseError for a malformed or unsupported expression, JqTimeout
    past ``timeout`` seconds, JqError for evaluation errors (including a
    result that is not a path).
    """
    node = compile_path(expression)
    budget = _Budget(time.monotonic() + timeout)
    paths: list[Path] = []
    for path, value in node(((), doc), budget):
        if path is None:
            raise JqError(f"invalid path against: {_show(value)}")
        paths.append(path)
    unique = {tuple(p): p for p in paths}.values()
    # Last first, so deleting an array element does not shift the ones still to go.
    for path in sorted(unique, key=_path_key, reverse=True):
        budget.check()
        doc = _delete(doc, path)
    return doc
