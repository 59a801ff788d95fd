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

from collections.abc import Iterable
from typing import Any, Final

from celpy.evaluation import celstr
from lark import Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from workagent.conditions.celfunctions import (
    GLOBAL_FUNCTIONS,
    METHODS,
    QUALIFIED_FUNCTIONS,
    TYPE_NAMES,
    CelFunctionError,
    clause_type_error,
    format_clauses,
    regex_error,
)

#: Longest expression accepted (cel-go's own limit is 100,000 code points).
MAX_EXPRESSION_CHARS: Final = 4096
#: Deepest syntax tree accepted. A typical rule is ~30 deep; 32 nested brackets
#: are ~350; celpy itself fails at ~600.
MAX_SYNTAX_DEPTH: Final = 400

#: Variables of the condition-rule environment.
RULE_VARIABLES: Final = frozenset({"object"})
#: Variables of the message-expression environment.
MESSAGE_VARIABLES: Final = frozenset({"object", "result"})

# Type names usable as values (``type(x) == string``).
_TYPE_IDENTIFIERS: Final = frozenset(
    {
        "bool",
        "bytes",
        "double",
        "int",
        "list",
        "map",
        "null_type",
        "optional_type",
        "string",
        "type",
        "uint",
    }
)
# Functions callable as ``f(x)``: CEL's own and our library's.
_GLOBAL_FUNCTIONS: Final = frozenset(
    {"bool", "bytes", "duration", "dyn", "has", "matches", "size", "string", "timestamp", "type"}
) | frozenset(GLOBAL_FUNCTIONS)
# Functions callable as ``x.f()``: CEL's own and our library's.
_METHODS: Final = frozenset(
    {
        "contains",
        "endsWith",
        "matches",
        "size",
        "startsWith",
        "getDate",
        "getDayOfMonth",
        "getDayOfWeek",
        "getDayOfYear",
        "getFullYear",
        "getHours",
        "getMilliseconds",
        "getMinutes",
        "getMonth",
        "getSeconds",
    }
) | frozenset(METHODS)
# Macros binding a variable in their last argument: ``x.all(v, e)``, ``o.optMap(v, e)``.
_COMPREHENSIONS: Final = frozenset(
    {"all", "exists", "exists_one", "filter", "map", "optMap", "optFlatMap"}
)
#: Nodes that only wrap their single child on the way down to an identifier.
WRAPPERS: Final = frozenset(
    {
        "expr",
        "conditionalor",
        "conditionaland",
        "relation",
        "addition",
        "multiplication",
        "unary",
        "member",
        "primary",
    }
)


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
    """cel-go's compile errors for a parsed expression, in source order (none: it is fine)."""
    errors: list[tuple[int, str]] = []
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
                errors.append(
                    (
                        _start(node),
                        f"expression recursion limit exceeded: deeper than {MAX_SYNTAX_DEPTH} "
                        "syntax levels",
                    )
                )
            continue
        children = _checked_children(node, scope, variables, source, errors)
        stack.extend((child, child_scope, depth + 1) for child, child_scope in children)
    errors.sort(key=lambda item: item[0])
    return [display_error(source, offset, message) for offset, message in errors]


def _checked_children(
    node: Tree[Any],
    scope: frozenset[str],
    variables: frozenset[str],
    source: str,
    errors: list[tuple[int, str]],
) -> Iterable[tuple[Any, frozenset[str]]]:
    """Report what is wrong at ``node``; return the children to visit, with their scopes."""
    kind = node.data
    if kind == "literal":
        token = node.children[0]
        if isinstance(token, Token) and token.type in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
            problem = _escape_error(token)
            if problem is not None:
                errors.append(problem)
        return ()
    if kind == "ident":
        token = node.children[0]
        name = str(token)
        if name not in scope and name not in variables and name not in _TYPE_IDENTIFIERS:
            errors.append((_token_start(token), _undeclared(name)))
        return ()
    if kind == "dot_ident":
        token = node.children[0]
        if str(token) not in variables:
            errors.append((_token_start(token), _undeclared(str(token))))
        return ()
    if kind in ("exprlist", "mapinits"):
        # ``[?e]``, ``{?k: e}``: cel-go's checker wants an optional ``e``; a literal never is one.
        items = node.children
        pairs = (
            ((item, item.children[0]) for item in items)
            if kind == "exprlist"
            else zip(items[::2], items[1::2], strict=True)
        )
        for marker, value in pairs:
            literal = static_type(value)
            if isinstance(marker, Tree) and marker.data == "opt_expr" and literal is not None:
                errors.append(
                    (
                        _start(unwrap(value)),
                        f"expected type 'optional_type({literal})' but found '{literal}'",
                    )
                )
    if kind in ("ident_arg", "dot_ident_arg"):
        token = node.children[0]
        args = _args(node.children[1] if len(node.children) > 1 else None)
        if kind == "dot_ident_arg":
            # ``.f(x)``: celpy evaluates it as a bare name, not as a call.
            errors.append((_token_start(token), f"unsupported syntax '.{token}(...)'"))
        else:
            _check_global_call(str(token), args, _paren(source, token), errors)
        return [(arg, scope) for arg in args]
    if kind == "member_dot":
        if f"{simple_name(node.children[0])}.{node.children[1]}" in TYPE_NAMES:
            return ()  # ``net.IP``
        # The selected field is a name, not a reference: only the operand is checked.
        return [(node.children[0], scope)]
    if kind == "member_dot_arg":
        member, token = node.children[0], node.children[1]
        args = _args(node.children[2] if len(node.children) > 2 else None)
        return _check_method(member, str(token), args, scope, _paren(source, token), source, errors)
    return [(child, scope) for child in node.children]


def program_error(tree: Tree[Any]) -> str | None:
    """What cel-go says building the program, or None: the Kubernetes regex library
    compiles a literal pattern of ``find``/``findAll`` then (OCM's internal error)."""
    calls = [
        node
        for node in tree.iter_subtrees()
        if node.data == "member_dot_arg" and str(node.children[1]) in ("find", "findAll")
    ]
    for node in sorted(calls, key=_start):
        args = _args(node.children[2] if len(node.children) > 2 else None)
        pattern = unwrap(args[0]) if args else None
        if pattern is None or pattern.data != "literal":
            continue
        token = pattern.children[0]
        if isinstance(token, Token) and token.type in ("STRING_LIT", "MLSTRING_LIT"):
            error = regex_error(str(celstr(token)))
            if error is not None:
                return error
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


def _escape_error(token: Token) -> tuple[int, str] | None:
    """cel-go's lexer error for a string or bytes literal with an escape it does not know
    (``'\\d'``), where it reports it; None when the literal is fine or raw."""
    text = str(token)
    prefix = len(text) - len(text.lstrip("bBrR"))
    if "r" in text[:prefix].lower():
        return None
    quote = 3 if text[prefix : prefix + 3] in ("'''", '"""') else 1
    start = prefix + quote  # where the body starts in ``text``
    body = text[start : len(text) - quote]
    at = body.find("\\")
    while at >= 0:
        end, bad = _bad_escape(body, at)
        if bad >= 0:
            # ANTLR falls back to a one-quote string whose text runs to the bad character.
            seen = text[start - 1 : start + bad + 1]
            return _token_start(
                token
            ) + start - 1, f"Syntax error: token recognition error at: '{seen}'"
        at = body.find("\\", end)
    return None


# CEL's conversions and functions of one argument (``dyn()`` would fail in celpy itself).
_ONE_ARGUMENT: Final = frozenset(
    {
        "bool",
        "bytes",
        "double",
        "duration",
        "dyn",
        "int",
        "size",
        "string",
        "timestamp",
        "type",
        "uint",
    }
)


def _check_global_call(
    name: str, args: list[Any], paren: int, errors: list[tuple[int, str]]
) -> None:
    if name == "has":
        if len(args) != 1 or unwrap(args[0]).data != "member_dot":
            errors.append((paren, "invalid argument to has() macro"))
    elif name not in _GLOBAL_FUNCTIONS:
        errors.append((paren, _undeclared(name)))
    elif name in _ONE_ARGUMENT and len(args) != 1:
        types = ", ".join(static_type(arg) or "dyn" for arg in args)
        errors.append((paren, f"found no matching overload for '{name}' applied to '({types})'"))


def _check_method(
    member: Any,
    name: str,
    args: list[Any],
    scope: frozenset[str],
    paren: int,
    source: str,
    errors: list[tuple[int, str]],
) -> list[tuple[Any, frozenset[str]]]:
    namespace = simple_name(member)
    if namespace is not None and f"{namespace}.{name}" in QUALIFIED_FUNCTIONS:
        return [(arg, scope) for arg in args]  # ``ip.isCanonical(s)``: one qualified name
    if (name in _COMPREHENSIONS and len(args) == 2) or (name == "map" and len(args) == 3):
        variable = simple_name(args[0])
        if variable is None:
            errors.append((_start(args[0]), "argument must be a simple name"))
        else:
            scope = scope | {variable}
        return [(member, scope), *((arg, scope) for arg in args[1:])]
    if name not in _METHODS:
        errors.append((paren, _undeclared(name)))
    if name == "format" and len(args) == 1:
        _check_format(member, args[0], paren, source, errors)
    return [(member, scope), *((arg, scope) for arg in args)]


# The CEL types of literals; anything else is dyn here (cel-go infers more).
_LITERAL_TYPES: Final = {
    "INT_LIT": "int",
    "UINT_LIT": "uint",
    "FLOAT_LIT": "double",
    "STRING_LIT": "string",
    "MLSTRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "BOOL_LIT": "bool",
    "NULL_LIT": "null_type",
    "list_lit": "list",
    "map_lit": "map",
}


# What the global functions return, where one type only (``dyn`` is not here).
_CALL_TYPES: Final = {
    "bool": "bool",
    "bytes": "bytes",
    "cidr": "net.CIDR",
    "double": "double",
    "duration": "google.protobuf.Duration",
    "int": "int",
    "ip": "net.IP",
    "quantity": "kubernetes.Quantity",
    "semver": "kubernetes.Semver",
    "size": "int",
    "string": "string",
    "timestamp": "google.protobuf.Timestamp",
    "type": "type",
    "uint": "uint",
    "url": "kubernetes.URL",
}


def _check_format(
    member: Any, arg: Any, paren: int, source: str, errors: list[tuple[int, str]]
) -> None:
    """A literal template with a literal list: what cel-go rejects at compile time."""
    template, items = unwrap(member), unwrap(arg)
    if template.data != "literal" or items.data != "list_lit":
        return
    token = template.children[0]
    if not isinstance(token, Token) or token.type not in ("STRING_LIT", "MLSTRING_LIT"):
        return
    elements = _args(items.children[0] if items.children else None)
    keywords = _keyword_starts(items, source)
    used = 0

    def check(index: int, verb: str, precision: int) -> str:
        nonlocal used
        used = index + 1
        for node in _formatted_nodes(elements[index], verb):
            kind = static_type(node)
            error = None if kind is None else clause_type_error(verb, kind)
            if error is not None:
                raise _ArgumentError(_argument_start(node, source, keywords), error)
        return ""

    try:
        format_clauses(str(celstr(token)), len(elements), check, checking=True)
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


class _ArgumentError(Exception):
    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset, self.message = offset, message


def _argument_start(node: Any, source: str, keywords: dict[int, int]) -> int:
    """Where cel-go places an argument: a literal's first character, a call's ``(``."""
    inner = unwrap(node)
    if inner.data == "ident_arg":
        return _paren(source, inner.children[0])
    if inner.data == "literal":
        token = inner.children[0]
        return keywords.get(id(token), _token_start(token))
    return _start(inner)


def _keyword_starts(node: Tree[Any], source: str) -> dict[int, int]:
    """Where each ``true``/``false`` token under ``node`` starts (lark gives them no position)."""
    starts, cursor = {}, _start(node)
    for token in node.scan_values(lambda value: isinstance(value, Token)):
        if token.start_pos is not None:
            cursor = token.end_pos if token.end_pos is not None else cursor
            continue
        starts[id(token)] = found = max(source.find(str(token), cursor), cursor)
        cursor = found + len(token)
    return starts


def static_type(node: Any) -> str | None:
    """The type cel-go's checker gives ``node``, where this module can tell (None: ``dyn``
    or unknown): literals, the results of calls and of ``+`` on strings, bytes or lists."""
    inner = unwrap(node)
    data, children = inner.data, inner.children
    if data == "literal" and isinstance(children[0], Token):
        return _LITERAL_TYPES.get(children[0].type)
    if data == "ident_arg":
        return _CALL_TYPES.get(str(children[0]))
    if data == "ident" and str(children[0]) in _TYPE_IDENTIFIERS:
        return "type"
    if data == "paren_expr":
        return static_type(children[0])
    if data == "member_dot_arg":
        qualified = f"{simple_name(children[0])}.{children[1]}"
        return _METHOD_TYPES.get(qualified, _METHOD_TYPES.get(str(children[1])))
    if data == "addition" and len(children) == 2 and children[0].data == "addition_add":
        same = one_kind(static_type(children[0].children[0]), static_type(children[1]))
        return same if same in ("string", "bytes", "list") else None
    if data == "expr" and len(children) == 3:
        then, otherwise = static_type(children[1]), static_type(children[2])
        return then if then == otherwise else None
    return _LITERAL_TYPES.get(data)


def one_kind(left: str | None, right: str | None) -> str | None:
    """The type two operands share, one of them possibly unknown (``dyn``)."""
    if left is None or right is None or left == right:
        return left or right
    return None


# What methods return where the name alone tells (cel-go's extended strings, macros).
_METHOD_TYPES: Final = {
    **dict.fromkeys(
        (
            "charAt",
            "format",
            "join",
            "lowerAscii",
            "replace",
            "reverse",
            "strings.quote",
            "substring",
            "trim",
            "upperAscii",
        ),
        "string",
    ),
    **dict.fromkeys(("filter", "map", "split"), "list"),
}


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


def unwrap(node: Any) -> Tree[Any]:
    """The first node below ``node`` that is more than a one-child wrapper."""
    while (
        isinstance(node, Tree)
        and node.data in WRAPPERS
        and len(node.children) == 1
        and isinstance(node.children[0], Tree)
    ):
        node = node.children[0]
    return node if isinstance(node, Tree) else Tree("token", [node])


def field_name(token: Any) -> str:
    """The field a selection names (a backquoted name without its quotes)."""
    name = str(token)
    return name[1:-1] if name.startswith("`") else name


def simple_name(node: Any) -> str | None:
    """The identifier ``node`` is, or None when it is more than a bare name."""
    inner = unwrap(node)
    if inner.data == "ident":
        return str(inner.children[0])
    return None


def _token_start(token: Any) -> int:
    return int(token.start_pos) if isinstance(token, Token) and token.start_pos is not None else 0


def _start(node: Any) -> int:
    if isinstance(node, Token):
        return _token_start(node)
    meta = getattr(node, "meta", None)
    start = getattr(meta, "start_pos", None) if meta is not None else None
    return int(start) if isinstance(start, int) else 0


def _paren(source: str, token: Any) -> int:
    """Where the ``(`` after a function name is: cel-go places call errors there."""
    end = token.end_pos if isinstance(token, Token) and token.end_pos is not None else 0
    found = source.find("(", end)
    return found if found >= 0 else _token_start(token)
