"""A selecting subset of Kubernetes JSONPath, for ``ignoreFields.jsonPaths``.

Only what is needed to find the maps a field must be removed from: field
names (``.a.b``, ``['a.b']``), wildcards (``.*``, ``[*]``), indexes and
slices (``[0]``, ``[-1]``, ``[1:3]``), unions of names (``['a','b']``),
recursive descent (``..name``) and filters comparing a relative path with a
literal (``[?(@.name=="web")]``, with ``==``, ``!=``, ``<``, ``<=``, ``>``,
``>=``, or a bare ``@.path`` for existence). Missing keys select nothing, as
with client-go's ``AllowMissingKeys(true)``. Anything else raises
:class:`JSONPathError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


class JSONPathError(ValueError):
    """The expression is not in the supported subset, or malformed."""


@dataclass(frozen=True)
class _Field:
    names: tuple[str, ...]


@dataclass(frozen=True)
class _Wildcard:
    pass


@dataclass(frozen=True)
class _Slice:
    start: int | None
    stop: int | None
    step: int | None
    single: bool


@dataclass(frozen=True)
class _Filter:
    path: tuple[Any, ...]
    op: str | None
    literal: Any


@dataclass(frozen=True)
class _Recursive:
    step: Any


_NAME = re.compile(r"[^.\[\]\s()]+")
_INT = re.compile(r"-?\d+")
_FILTER = re.compile(
    r"^\?\(\s*@(?P<path>[^=!<>]*?)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*\)$"
)


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise JSONPathError(f"unsupported filter literal {text!r}") from None


def _bracket(content: str) -> Any:
    content = content.strip()
    if content == "*":
        return _Wildcard()
    if content.startswith("?"):
        match = _FILTER.match(content)
        if match is None:
            raise JSONPathError(f"unsupported filter [{content}]")
        op = match["op"]
        return _Filter(parse(match["path"] or ""), op, _literal(match["lit"]) if op else None)
    if content and content[0] in "'\"":
        names = []
        for raw in content.split(","):
            part = raw.strip()
            if len(part) < 2 or part[0] != part[-1] or part[0] not in "'\"":
                raise JSONPathError(f"malformed key list [{content}]")
            names.append(part[1:-1])
        return _Field(tuple(names))
    parts = content.split(":")
    if len(parts) > 3 or not all(p.strip() == "" or _INT.fullmatch(p.strip()) for p in parts):
        raise JSONPathError(f"unsupported subscript [{content}]")
    numbers = [int(p) if p.strip() else None for p in parts]
    if len(parts) == 1:
        if numbers[0] is None:
            raise JSONPathError("empty subscript []")
        return _Slice(numbers[0], None, None, single=True)
    return _Slice(numbers[0], numbers[1], numbers[2] if len(parts) == 3 else None, single=False)


def parse(expression: str) -> tuple[Any, ...]:
    """Parse a JSONPath (without the braces) into steps."""
    text = expression.strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[Any] = []
    i = 0
    while i < len(text):
        recursive = False
        if text.startswith("..", i):
            recursive = True
            i += 2
        elif text[i] == ".":
            i += 1
        elif text[i] != "[":
            # client-go reads a bare word as an identifier (range, end), not a field.
            raise JSONPathError(f"unrecognized identifier {text[i:]!r} in {expression!r}")
        step: Any
        if i < len(text) and text[i] == "[":
            end = _closing(text, i)
            step = _bracket(text[i + 1 : end])
            i = end + 1
        elif i < len(text) and text[i] == "*":
            step = _Wildcard()
            i += 1
        else:
            match = _NAME.match(text, i)
            if match is None:
                raise JSONPathError(f"unexpected {text[i:]!r} in {expression!r}")
            step = _Field((match.group(),))
            i = match.end()
        steps.append(_Recursive(step) if recursive else step)
    return tuple(steps)


def _closing(text: str, start: int) -> int:
    """Index of the ``]`` closing the ``[`` at ``start``, skipping quoted text."""
    quote: str | None = None
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i
    raise JSONPathError(f"unclosed [ in {text!r}")


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield from value.values()
    elif isinstance(value, list):
        yield from value


def _descendants(value: Any) -> Iterator[Any]:
    yield value
    for child in _children(value):
        yield from _descendants(child)


def _apply(step: Any, value: Any) -> Iterator[Any]:
    if isinstance(step, _Field):
        if isinstance(value, dict):
            for name in step.names:
                if name in value:
                    yield value[name]
    elif isinstance(step, _Wildcard):
        yield from _children(value)
    elif isinstance(step, _Slice):
        if not isinstance(value, list):
            return
        if step.single:
            index = step.start if step.start is not None else 0
            if -len(value) <= index < len(value):
                yield value[index]
        else:
            yield from value[step.start : step.stop : step.step]
    elif isinstance(step, _Filter):
        items = value if isinstance(value, list) else []
        for item in items:
            if _matches(step, item):
                yield item
    elif isinstance(step, _Recursive):
        for node in _descendants(value):
            yield from _apply(step.step, node)


def _matches(step: _Filter, item: Any) -> bool:
    found = list(select(step.path, item))
    if step.op is None:
        return bool(found)
    for value in found:
        try:
            if step.op == "==" and value == step.literal:
                return True
            if step.op == "!=" and value != step.literal:
                return True
            if step.op == "<" and value < step.literal:
                return True
            if step.op == "<=" and value <= step.literal:
                return True
            if step.op == ">" and value > step.literal:
                return True
            if step.op == ">=" and value >= step.literal:
                return True
        except TypeError:
            continue
    return False


def select(steps: tuple[Any, ...], root: Any) -> Iterator[Any]:
    """Every value ``steps`` select from ``root`` (the values themselves, not copies)."""
    current = [root]
    for step in steps:
        current = [found for value in current for found in _apply(step, value)]
    yield from current
