"""Reading the parse trees of CEL expressions: wrappers, names and cel-go's locations.

celpy's grammar nests every expression in one-child wrapper nodes (a literal
sits about eight deep); the checks, the type checker and the interpreter all
look through them the same way, and place errors where cel-go does.
"""

from __future__ import annotations

from typing import Any, Final

from lark import Token, Tree

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
#: The functions cel-go calls for the operators' parse-tree nodes.
OPERATORS: Final = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "@in",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
    "unary_not": "!_",
    "unary_neg": "-_",
}
# The symbol after the first child of a node with more than one (``a || b``, ``c ? x : y``).
_SYMBOL_NODES: Final = frozenset({"conditionalor", "conditionaland", "expr"})


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


def start(node: Any) -> int:
    """Where ``node`` (a tree or a token) starts in the source (0 when lark gives no position)."""
    return _position(node, "start_pos")


def end(node: Any) -> int:
    """Where ``node`` ends in the source."""
    return _position(node, "end_pos")


def _position(node: Any, which: str) -> int:
    # A token has it itself; a tree in its meta (propagate_positions).
    holder = node if isinstance(node, Token) else getattr(node, "meta", None)
    found = getattr(holder, which, None) if holder is not None else None
    return int(found) if isinstance(found, int) else 0


def next_token(source: str, offset: int) -> int:
    """The first offset from ``offset`` that is neither blank nor in a comment."""
    while offset < len(source):
        if source[offset].isspace():
            offset += 1
        elif source.startswith("//", offset):
            newline = source.find("\n", offset)
            offset = len(source) if newline < 0 else newline
        else:
            break
    return offset


def location(node: Any, source: str) -> int:
    """Where cel-go places the expression ``node``: an operator's symbol, a call's
    ``(``, a selection's ``.``, an index's ``[``, otherwise its first character."""
    inner = unwrap(node)
    data, children = inner.data, inner.children
    if data == "paren_expr":
        return location(children[0], source)
    if data in _SYMBOL_NODES and len(children) > 1:
        return next_token(source, end(children[0]))
    if data in ("relation", "addition", "multiplication") and len(children) == 2:
        return next_token(source, end(children[0].children[0]))
    if data in ("member_dot", "member_optdot", "member_index", "member_optindex"):
        return next_token(source, end(children[0]))
    if data == "member_dot_arg":
        return next_token(source, end(children[1]))
    if data == "ident_arg":
        return next_token(source, end(children[0]))
    return start(inner)


def unary_run(node: Tree[Any]) -> tuple[int, Any]:
    """cel-go's reading of a run of one unary operator (``!!x``, ``--x``): how many
    there are, and the operand. An even run is the operand itself, unchecked; an odd
    one applies the operator once. A run of ``-`` before a number reaches into the
    literal: ``--5`` is two, on the literal ``5`` (the count includes the literal's sign).
    """
    operator = node.children[0].data
    count, current = 0, node
    while (
        isinstance(current, Tree)
        and current.data == "unary"
        and len(current.children) == 2
        and current.children[0].data == operator
    ):
        count, current = count + 1, current.children[1]
    if operator == "unary_neg" and signed_number(current):
        count += 1
    return count, current


def signed_number(node: Any) -> bool:
    """Whether ``node`` is a number literal written with its ``-``."""
    inner = unwrap(node)
    token = inner.children[0] if inner.data == "literal" and inner.children else None
    return (
        isinstance(token, Token)
        and token.type in ("INT_LIT", "FLOAT_LIT", "UINT_LIT")
        and token.startswith("-")
    )
