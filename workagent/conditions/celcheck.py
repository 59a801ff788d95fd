"""Compile-time checks cel-go does and celpy does not, worded as cel-go words them.

celpy parses but does not type-check: an unknown variable or function only
fails when evaluation reaches it (and then its error text embeds the whole
activation, i.e. the object). OCM compiles with cel-go, where such mistakes
are compile errors (``ERROR: <input>:1:1: undeclared reference to 'badcel'
(in container '')``) and make the condition ``False`` /
``ConditionRuleExpressionError`` whatever the object. This module walks the
parse tree once per expression (the result is cached with the program) and
reports:

* undeclared identifiers and functions, comprehension variables in scope;
* macros used with a non-identifier variable or a bad ``has()`` argument;
* ``'<template>'.format([<list>])`` as cel-go's format validator checks it:
  the template, the argument count and the literal arguments' types;
* syntax the agent does not support (``.f(x)``), and literals where an
  optional belongs (``[?1]``);
* expressions longer than :data:`MAX_EXPRESSION_CHARS` or nested deeper than
  :data:`MAX_SYNTAX_DEPTH` syntax-tree levels: a hub user's expression must not
  be able to exhaust the evaluator's recursion (celpy evaluates recursively,
  a few Python frames per level, under a recursion limit of 2500).

Messages use cel-go's display format: ``ERROR: <input>:<line>:<column>:
<message>`` followed by the source line and a caret line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from celpy.evaluation import celstr
from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from workagent.conditions.celformat import clause_type_error, format_clauses
from workagent.conditions.celfunctions import TYPE_NAMES
from workagent.conditions.celstrings import regex_error
from workagent.conditions.celtree import (
    location,
    signed_number,
    simple_name,
    start,
    unary_run,
    unwrap,
)
from workagent.conditions.celtyping import (
    DECLARATIONS,
    DYN,
    TYPE_IDENTIFIERS,
    CelType,
    Typing,
    check_types,
)
from workagent.conditions.celvalues import CelFunctionError

#: Longest expression accepted (cel-go's own limit is 100,000 code points).
MAX_EXPRESSION_CHARS: Final = 4096
#: Deepest syntax tree accepted. A typical rule is ~30 deep; 32 nested brackets
#: are ~350; celpy itself fails at ~600.
MAX_SYNTAX_DEPTH: Final = 400

#: Variables of the condition-rule environment.
RULE_VARIABLES: Final = frozenset({"object"})
#: Variables of the message-expression environment.
MESSAGE_VARIABLES: Final = frozenset({"object", "result"})

# Macros binding a variable in their last argument: ``x.all(v, e)``, ``o.optMap(v, e)``.
# What cel-go's parser says when the variable is not one.
_COMPREHENSIONS: Final = {
    **dict.fromkeys(("all", "exists", "exists_one"), "argument must be a simple name"),
    **dict.fromkeys(("filter", "map"), "argument is not an identifier"),
    **{
        name: f"{name}() variable name must be a simple identifier"
        for name in ("optMap", "optFlatMap")
    },
}


def display_error(source: str, offset: int | None, message: str) -> str:
    """One error in cel-go's display format; ``offset`` None for an error without location."""
    if offset is None:
        return f"ERROR: <input>:-1:0: {message}"
    offset = max(0, min(offset, len(source)))
    line_start = source.rfind("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    line_text = source[line_start : line_end if line_end >= 0 else len(source)]
    line = source.count("\n", 0, offset) + 1
    column = offset - line_start
    snippet = line_text.replace("\t", " ")
    # cel-go marks a multi-byte character with a full-width dot or caret.
    dots = "".join("." if c.isascii() else "\uff0e" for c in snippet[:column])
    caret = "^" if snippet[column : column + 1].isascii() else "\uff3e"
    return f"ERROR: <input>:{line}:{column + 1}: {message}\n | {snippet}\n | {dots}{caret}"


def first_line(display: str) -> str:
    """What OCM keeps of a compile error for a message expression (no source snippet)."""
    return display.split("\n | ", maxsplit=1)[0]


def length_error(source: str) -> str | None:
    """The error for an over-long expression, or None."""
    if len(source) <= MAX_EXPRESSION_CHARS:
        return None
    return display_error(
        source,
        None,
        f"expression code point size exceeds limit: size: {len(source)}, "
        f"limit {MAX_EXPRESSION_CHARS}",
    )


def syntax_error(source: str, exc: UnexpectedInput) -> str:
    """A lark parse failure as cel-go's ``Syntax error`` (without ANTLR's expected-token list)."""
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            return display_error(source, len(source), "Syntax error: mismatched input '<EOF>'")
        offset = token.start_pos if token.start_pos is not None else _offset(source, exc)
        return display_error(source, offset, f"Syntax error: mismatched input '{token}'")
    if isinstance(exc, UnexpectedCharacters):
        offset = exc.pos_in_stream if exc.pos_in_stream is not None else _offset(source, exc)
        char = source[offset : offset + 1] if offset < len(source) else "<EOF>"
        return display_error(source, offset, f"Syntax error: token recognition error at: '{char}'")
    return display_error(source, _offset(source, exc), "Syntax error: unexpected input")


def _offset(source: str, exc: UnexpectedInput) -> int:
    line, column = getattr(exc, "line", -1), getattr(exc, "column", -1)
    if not isinstance(line, int) or not isinstance(column, int) or line < 1 or column < 1:
        return len(source)
    starts = [0] + [i + 1 for i, c in enumerate(source) if c == "\n"]
    return starts[min(line, len(starts)) - 1] + column - 1


def check(tree: Tree[Any], source: str, variables: frozenset[str]) -> list[str]:
    """cel-go's compile errors for a parsed expression, in source order (none: it is fine).

    As in cel-go, errors of parsing (escapes, macro arguments) stop there; the
    checker's (names, types) come next; the format validator runs on a checked
    expression only."""
    found = _Found(source)
    too_deep = False
    # Iterative: the tree may be deep, and this check is what bounds that depth.
    stack: list[tuple[Any, frozenset[str], int]] = [(tree, frozenset(), 1)]
    while stack:
        node, scope, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if depth > MAX_SYNTAX_DEPTH:
            if not too_deep:
                too_deep = True
                found.parsing.append(
                    (
                        start(node),
                        f"expression recursion limit exceeded: deeper than {MAX_SYNTAX_DEPTH} "
                        "syntax levels",
                    )
                )
            continue
        children = _checked_children(node, scope, variables, found)
        stack.extend((child, child_scope, depth + 1) for child, child_scope in children)
    errors = list(dict.fromkeys(found.parsing))  # optMap's target is walked twice
    if not errors:
        typing = check_types(tree, source, variables)
        errors = found.checking + typing.errors
        for call in found.formats if not errors else ():
            _check_format(call, typing, source, errors)
    errors.sort(key=lambda item: item[0])
    return [display_error(source, offset, message) for offset, message in errors]


@dataclass
class _Found:
    """Errors by the phase cel-go finds them in, and the ``format`` calls to validate."""

    source: str
    parsing: list[tuple[int, str]] = field(default_factory=list)
    checking: list[tuple[int, str]] = field(default_factory=list)
    formats: list[Tree[Any]] = field(default_factory=list)
    #: The number literals a run of ``-`` reaches into (their own sign is one of it).
    unsigned: set[int] = field(default_factory=set)


def _checked_children(
    node: Tree[Any], scope: frozenset[str], variables: frozenset[str], found: _Found
) -> Iterable[tuple[Any, frozenset[str]]]:
    """Report what is wrong at ``node``; return the children to visit, with their scopes."""
    kind = node.data
    if kind == "literal":
        token = node.children[0]
        if isinstance(token, Token) and token.type in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
            problem = _escape_error(token)
        else:
            problem = _number_error(token, unsigned=id(node) in found.unsigned)
        if problem is not None:
            found.parsing.append(problem)
        return ()
    if kind == "unary" and len(node.children) == 2:
        count, operand = unary_run(node)
        if count > 1 and signed_number(operand):  # ``--5``: cel-go reads ``5`` after the run
            found.unsigned.add(id(unwrap(operand)))
        inner = node.children[1]  # the run's last operator reports it, once
        if inner is operand and inner.data == "unary" and len(inner.children) == 2:
            found.parsing.append(_mixed_unary(node.children[0], operand, found.source))
    if kind == "ident":
        token = node.children[0]
        name = str(token)
        if name not in scope and name not in variables and name not in TYPE_IDENTIFIERS:
            found.checking.append((start(token), _undeclared(name)))
        return ()
    if kind == "dot_ident":
        token = node.children[0]
        if str(token) not in variables:
            found.checking.append((start(token), _undeclared(str(token))))
        return ()
    if kind in ("ident_arg", "dot_ident_arg"):
        token = node.children[0]
        args = _args(node.children[1] if len(node.children) > 1 else None)
        if kind == "dot_ident_arg":
            # ``.f(x)``: celpy evaluates it as a bare name, not as a call.
            found.checking.append((start(token), f"unsupported syntax '.{token}(...)'"))
        elif str(token) == "has" and len(args) == 1:
            if unwrap(args[0]).data != "member_dot":
                at = location(args[0], found.source)
                found.parsing.append((at, "invalid argument to has() macro"))
        elif str(token) not in DECLARATIONS:
            found.checking.append((location(node, found.source), _undeclared(str(token))))
        return [(arg, scope) for arg in args]
    if kind == "member_dot":
        if f"{simple_name(node.children[0])}.{node.children[1]}" in TYPE_NAMES:
            return ()  # ``net.IP``
        # The selected field is a name, not a reference: only the operand is checked.
        return [(node.children[0], scope)]
    if kind == "member_dot_arg":
        return _check_method(node, scope, found)
    return [(child, scope) for child in node.children]


def program_error(tree: Tree[Any]) -> str | None:
    """What cel-go says building the program, or None (OCM's internal error): the
    Kubernetes regex library compiles a literal pattern of ``find``/``findAll`` then,
    and cel-go plans a constant index (``x[b'a']``, ``x[int]``) as a qualifier."""
    found: list[tuple[int, str]] = []
    for node in tree.iter_subtrees():
        if node.data in ("member_index", "member_optindex"):
            kind = _constant_key_type(node.children[1])
            if kind is not None:
                found.append((start(node), f"invalid qualifier type: {kind}"))
        if node.data == "member_dot_arg" and str(node.children[1]) in ("find", "findAll"):
            args = _args(node.children[2] if len(node.children) > 2 else None)
            pattern = unwrap(args[0]) if args else None
            token = pattern.children[0] if pattern is not None else None
            if isinstance(token, Token) and token.type in ("STRING_LIT", "MLSTRING_LIT"):
                error = regex_error(str(celstr(cel_escapes(token))))
                if error is not None:
                    found.append((start(node), error))
    return min(found)[1] if found else None


def _constant_key_type(key: Any) -> str | None:
    """cel-go's Go type of a constant index that is no valid qualifier (None: it is one,
    or not a constant): bytes, null, a type's name."""
    inner = unwrap(key)
    token = inner.children[0] if inner.children else None
    if inner.data == "literal" and isinstance(token, Token):
        return {"BYTES_LIT": "types.Bytes", "NULL_LIT": "types.Null"}.get(token.type)
    if inner.data == "ident" and str(token) in TYPE_IDENTIFIERS:
        return "*types.Type"
    return None


_SIMPLE_ESCAPES: Final = frozenset("abfnrtv\\'\"`?")
_HEX_ESCAPES: Final = {"x": 2, "u": 4, "U": 8}


def _bad_escape(body: str, at: int) -> tuple[int, int]:
    """The escape sequence at ``body[at]`` (a backslash): where it ends, and the index
    of the first character that cannot continue it (-1 when it is one of CEL's)."""
    kind = body[at + 1 : at + 2]
    if kind and kind in _SIMPLE_ESCAPES:
        return at + 2, -1
    if kind and kind in _HEX_ESCAPES:
        digits, allowed = _HEX_ESCAPES[kind], "0123456789abcdefABCDEF"
    elif kind and kind in "0123":
        digits, allowed = 2, "01234567"
    else:
        return at + 1, at + 1
    for index in range(at + 2, at + 2 + digits):
        if index >= len(body) or body[index] not in allowed:
            return index, index
    return at + 2 + digits, -1


def _mixed_unary(outer: Tree[Any], inner: Tree[Any], source: str) -> tuple[int, str]:
    """``!-x``, ``-!x``: CEL's grammar has a run of one operator before an operand, where
    ANTLR stops (after ``-`` at the operand, at a ``!``)."""
    operator, operand = inner.children
    if operator.data == "unary_not":
        at, text = start(operator), source[start(outer) : start(operator) + 1]
    else:
        at = start(operand)
        token = re.match(r"\w+|\S", source[at:])
        text = source[start(operator) : at + (len(token[0]) if token else 0)]
    return at, f"Syntax error: no viable alternative at input '{text}'"


_INT_RANGES: Final = {"INT_LIT": (-(2**63), 2**63 - 1, "int"), "UINT_LIT": (0, 2**64 - 1, "uint")}


def _number_error(token: Any, *, unsigned: bool) -> tuple[int, str] | None:
    """cel-go's error for a number literal out of its type's range (``-`` run aside)."""
    if not isinstance(token, Token):
        return None
    text, at = str(token), start(token)
    if unsigned:
        text, at = text[1:], at + 1
    if token.type == "FLOAT_LIT":
        return None if math.isfinite(float(text)) else (at, "invalid double literal")
    if token.type not in _INT_RANGES:
        return None
    low, high, name = _INT_RANGES[token.type]
    digits = text.rstrip("uU")
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("-")
    value = sign * (int(digits[2:], 16) if digits[:2].lower() == "0x" else int(digits))
    return None if low <= value <= high else (at, f"invalid {name} literal")


def cel_escapes(token: Token) -> Token:
    """A string or bytes literal with the two escapes cel-go knows and celpy does not
    (``\\?`` and ``\\```) resolved, so that celpy decodes the rest as cel-go does."""
    text = str(token)
    if "\\" not in text or "r" in text[: len(text) - len(text.lstrip("bBrR"))].lower():
        return token
    parts, at = [], 0
    while (found := text.find("\\", at)) >= 0:
        escaped = text[found + 1 : found + 2]
        parts += [text[at:found], escaped if escaped and escaped in "?`" else "\\" + escaped]
        at = found + 2
    resolved = "".join(parts) + text[at:]
    return token if resolved == text else Token.new_borrow_pos(token.type, resolved, token)


def _escape_error(token: Token) -> tuple[int, str] | None:
    """cel-go's lexer error for a string or bytes literal with an escape it does not know
    (``'\\d'``), where it reports it; None when the literal is fine or raw."""
    text = str(token)
    prefix = len(text) - len(text.lstrip("bBrR"))
    if "r" in text[:prefix].lower():
        return None
    quote = 3 if text[prefix : prefix + 3] in ("'''", '"""') else 1
    opening = prefix + quote  # where the body starts in ``text``
    body = text[opening : len(text) - quote]
    at = body.find("\\")
    while at >= 0:
        end, bad = _bad_escape(body, at)
        if bad >= 0:
            # ANTLR falls back to a one-quote string whose text runs to the bad character.
            seen = text[opening - 1 : opening + bad + 1]
            return start(token) + opening - 1, f"Syntax error: token recognition error at: '{seen}'"
        at = body.find("\\", end)
    return None


def _check_method(
    node: Tree[Any], scope: frozenset[str], found: _Found
) -> list[tuple[Any, frozenset[str]]]:
    member, name = node.children[0], str(node.children[1])
    args = _args(node.children[2] if len(node.children) > 2 else None)
    namespace = simple_name(member)
    if namespace is not None and f"{namespace}.{name}" in DECLARATIONS:
        return [(arg, scope) for arg in args]  # ``ip.isCanonical(s)``: one qualified name
    if (name in _COMPREHENSIONS and len(args) == 2) or (name == "map" and len(args) == 3):
        variable = simple_name(args[0])
        inner = scope
        if variable is None:
            at = location(args[0], found.source)
            found.parsing.append((at, _COMPREHENSIONS[name]))
        else:
            inner = scope | {variable}
        # The variable is not in scope in the range; cel-go's optMap expansion holds
        # its target twice, and reports what is wrong in it twice.
        targets = [(member, scope)] * (2 if name in ("optMap", "optFlatMap") else 1)
        return [*targets, *((arg, inner) for arg in args[1:])]
    if name not in DECLARATIONS:
        found.checking.append((location(node, found.source), _undeclared(name)))
    if name == "format" and len(args) == 1:
        found.formats.append(node)
    return [(member, scope), *((arg, scope) for arg in args)]


def _check_format(
    call: Tree[Any], typing: Typing, source: str, errors: list[tuple[int, str]]
) -> None:
    """cel-go's format validator: a literal template, a literal list, checked types."""
    template, items = unwrap(call.children[0]), unwrap(_args(call.children[2])[0])
    if template.data != "literal" or items.data != "list_lit":
        return
    token = template.children[0]
    if not isinstance(token, Token) or token.type not in ("STRING_LIT", "MLSTRING_LIT"):
        return
    elements = _args(items.children[0] if items.children else None)
    used = 0

    def check(index: int, verb: str, precision: int) -> str:
        nonlocal used
        used = index + 1
        for node in _formatted_nodes(elements[index], verb):
            kind = _format_kind(typing.types.get(id(unwrap(node)), DYN))
            error = None if kind is None else clause_type_error(verb, kind)
            if error is not None:
                raise _ArgumentError(location(node, source), error)
        return ""

    paren = location(call, source)
    try:
        format_clauses(str(celstr(cel_escapes(token))), len(elements), check, checking=True)
    except _ArgumentError as exc:
        errors.append((exc.offset, exc.message))
    except CelFunctionError as exc:
        errors.append((paren, str(exc)))
    else:
        if len(elements) > used:
            errors.append(
                (
                    paren,
                    "too many arguments supplied to string.format "
                    f"(expected {used}, got {len(elements)})",
                )
            )


# How the format validator names a checked type (None: it does not check a dyn).
_FORMAT_NAMES: Final = {
    "duration": "google.protobuf.Duration",
    "timestamp": "google.protobuf.Timestamp",
    "null": "null_type",
}


def _format_kind(t: CelType) -> str | None:
    if t.param or t.name in ("dyn", "any", "!error!"):
        return None
    return _FORMAT_NAMES.get(t.name, t.name)


class _ArgumentError(Exception):
    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset, self.message = offset, message


def _formatted_nodes(node: Any, verb: str) -> Iterable[Any]:
    """The argument, and for ``%s`` every element of a list or map literal (cel-go checks them)."""
    yield node
    inner = unwrap(node)
    if verb == "s" and inner.data in ("list_lit", "map_lit") and inner.children:
        for child in inner.children[0].children:
            yield from _formatted_nodes(child, verb)


def _undeclared(name: str) -> str:
    return f"undeclared reference to '{name}' (in container '')"


def _args(exprlist: Any) -> list[Any]:
    if isinstance(exprlist, Tree) and exprlist.data == "exprlist":
        return list(exprlist.children)
    return []
