"""cel-go's runtime cost of an evaluation, which OCM's agent limits (spec/agent.md 13.2).

OCM's agent builds each rule program with Kubernetes' per-call cost limit
(:data:`~workagent.conditions.reasons.PER_CALL_LIMIT`) and cost tracking. A
run over the limit stops with ``operation cancelled: actual cost limit
exceeded``; the actual costs of the expressions of one manifest's rules are
taken from a shared :data:`~workagent.conditions.reasons.BUDGET`, and an
expression that costs more than what is left fails with ``CEL evaluation
budget exceeded``.

The units are cel-go's (v0.29): a variable, a field selection and an index
cost 1 each, a list literal 10 and a map literal 30, a call 1, except the calls
whose cost grows with their arguments' sizes (:func:`call_cost`). Constants,
``&&``, ``||`` and ``?:`` cost nothing. Only a call cel-go's type checker bound
to one overload is sized: ``object.a + object.b`` (two ``dyn``) costs 1,
``object.a + 'x'`` (a string concatenation) by length; :func:`sized_calls`
finds those calls with the type checker (:mod:`~workagent.conditions.celtyping`).
:class:`~workagent.conditions.celinterpreter.Interpreter` charges the costs as
it evaluates.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from lark import Tree

from workagent.conditions.celoptional import CelOptional
from workagent.conditions.celtree import unwrap
from workagent.conditions.celtyping import RULE_TYPES, check_types
from workagent.conditions.kubevalues import CIDR, IP
from workagent.conditions.reasons import (
    BUDGET,
    BUDGET_EXCEEDED_MESSAGE,
    LIMIT_MESSAGE,
    PER_CALL_LIMIT,
)

#: cel-go's cost of a variable or of one field selection or index.
SELECT_COST: Final = 1
#: cel-go's cost of creating a list, and a map.
LIST_COST: Final = 10
MAP_COST: Final = 30

_TRAVERSAL: Final = 0.1  # common.StringTraversalCostFactor
_REGEX: Final = 0.25  # common.RegexStringLengthCostFactor


class CostLimitExceeded(Exception):
    """The evaluation went past its limit; it stops at once, as cel-go's does."""


#: Charges between two looks at the clock (a look costs about as much as a charge).
_CLOCK_EVERY: Final = 256


class CostTracker:
    """The cost of one evaluation so far, stopping it past ``limit``.

    With a ``deadline`` (``time.monotonic()`` seconds) the evaluation also
    stops once past it, with ``CEL evaluation budget exceeded``: the worker
    ends a slow rule itself and goes on with the next one.
    """

    __slots__ = ("_until_clock", "cost", "deadline", "limit")

    def __init__(self, limit: float = PER_CALL_LIMIT, deadline: float | None = None) -> None:
        self.cost = 0
        self.limit = limit
        self.deadline = deadline
        self._until_clock = _CLOCK_EVERY

    def charge(self, units: int) -> None:
        """Add ``units``; raise :class:`CostLimitExceeded` once past the limit or deadline."""
        self.cost += units
        if self.cost > self.limit:
            raise CostLimitExceeded(LIMIT_MESSAGE)
        if self.deadline is not None:
            self._until_clock -= 1
            if self._until_clock <= 0:
                self._until_clock = _CLOCK_EVERY
                if time.monotonic() > self.deadline:
                    raise CostLimitExceeded(BUDGET_EXCEEDED_MESSAGE)


class Budget:
    """What is left of the budget one manifest's rules share in one evaluation."""

    __slots__ = ("left",)

    def __init__(self, units: int = BUDGET) -> None:
        self.left = units

    def take(self, cost: int, error: str | None) -> str | None:
        """Account for a run that cost ``cost`` and failed with ``error`` (None: it did
        not); the error to report. A failed run takes nothing, as in OCM's agent."""
        if cost > self.left:
            return (
                BUDGET_EXCEEDED_MESSAGE
                if error is None
                else f"[{error}, {BUDGET_EXCEEDED_MESSAGE}]"
            )
        if error is None:
            self.left -= cost
        return error


def size(value: Any) -> int:
    """cel-go's ``actualSize``: a string's code points, a bytes', list's or map's
    length, an optional's content's size, an IP's or a CIDR prefix's bytes; 1 for
    anything else."""
    if isinstance(value, CelOptional) and value.present:
        return size(value.value())
    if isinstance(value, str | bytes | list | dict):
        return len(value)
    if isinstance(value, IP):  # Kubernetes sizes addresses and prefixes in bytes
        return value.bits // 8
    if isinstance(value, CIDR):
        return math.ceil(value.prefix / 8)
    return 1


def _scaled(n: float, factor: float = _TRAVERSAL) -> int:
    return math.ceil(n * factor)


def _smaller(args: Sequence[Any], _: Any) -> int:
    return _scaled(min(size(args[0]), size(args[1])))


def _transform(args: Sequence[Any], result: Any) -> int:
    return 1 + _scaled(size(args[0])) + size(result)


def _search(args: Sequence[Any], _: Any) -> int:
    return _scaled(size(args[0]) * size(args[1])) + 1


def _replace(args: Sequence[Any], result: Any) -> int:
    target, needle = max(size(args[0]), 1), max(size(args[1]), 1)
    return 1 + _scaled(target * needle) + size(result)


# The calls cel-go sizes whatever the arguments' static types (one overload each).
_ALWAYS_SIZED: Final[dict[str, Callable[[Sequence[Any], Any], int]]] = {
    "_==_": _smaller,
    "_!=_": _smaller,
    "startsWith": lambda args, _: _scaled(size(args[1])),
    "endsWith": lambda args, _: _scaled(size(args[1])),
    "contains": lambda args, _: _scaled(size(args[0])) * _scaled(size(args[1])),
    "matches": lambda args, _: _scaled(1 + size(args[0])) * _scaled(size(args[1]), _REGEX),
    "strings.quote": lambda args, _: _scaled(size(args[0])),
    "format": lambda args, _: _scaled(size(args[0])),
    # cel-go's extended strings track their own costs.
    "charAt": lambda args, _: 1 + _scaled(size(args[0])) + 1,
    "lowerAscii": _transform,
    "upperAscii": _transform,
    "substring": _transform,
    "trim": _transform,
    "reverse": _transform,
    "replace": _replace,
    "split": lambda args, result: 1 + _scaled(size(args[0]) + 1) + size(result) + LIST_COST,
    "join": lambda args, result: 1 + _scaled(size(args[0]) + 1) + size(result),
}
# The calls cel-go sizes when the checker bound them to the sized overload (sized_calls).
_SIZED_WHEN_BOUND: Final[dict[str, Callable[[Sequence[Any], Any], int]]] = {
    "_+_": lambda args, _: _scaled(size(args[0]) + size(args[1])),
    "_<_": _smaller,
    "_<=_": _smaller,
    "_>_": _smaller,
    "_>=_": _smaller,
    "_in_": lambda args, _: size(args[1]),
    "bytes": lambda args, _: _scaled(size(args[0])),
    "string": lambda args, _: _scaled(size(args[0])),
    "indexOf": _search,
    "lastIndexOf": _search,
}


def call_cost(name: str, args: Sequence[Any], result: Any, bound: bool) -> int:
    """The cost of calling ``name`` (receiver first in ``args``); ``bound`` says whether
    the call site is one of :func:`sized_calls`."""
    sized = _ALWAYS_SIZED.get(name)
    if sized is None and bound:
        sized = _SIZED_WHEN_BOUND.get(name)
    return 1 if sized is None else sized(args, result)


# The overloads of :data:`_SIZED_WHEN_BOUND` that cel-go sizes.
_SIZED_OVERLOADS: Final = frozenset(
    {
        "add_string",
        "add_bytes",
        *(
            f"{order}_{kind}"
            for order in ("less", "less_equals", "greater", "greater_equals")
            for kind in ("string", "bytes")
        ),
        "in_list",
        "string_to_bytes",
        "bytes_to_string",
        "string_index_of_string",
        "string_index_of_string_int",
        "string_last_index_of_string",
        "string_last_index_of_string_int",
    }
)


def sized_calls(tree: Tree[Any]) -> frozenset[int]:
    """The ids of the nodes of ``tree`` where cel-go's checker binds a call of
    :data:`_SIZED_WHEN_BOUND` to its sized overload: the one overload that matches
    the argument types is a string or bytes ``+`` or comparison, ``in`` a list,
    ``bytes()`` of a string, ``string()`` of bytes, a string's ``indexOf``."""
    overloads = check_types(tree, "", RULE_TYPES).overloads
    return frozenset(
        node for node, ids in overloads.items() if len(ids) == 1 and ids[0] in _SIZED_OVERLOADS
    )


def is_attribute(node: Any, *, conditional: bool = True) -> bool:
    """Whether cel-go plans ``node`` as an attribute: a variable, a selection or
    index of anything, or (``conditional``) a ``?:``."""
    inner = unwrap(node)
    while inner.data == "paren_expr":
        inner = unwrap(inner.children[0])
    if inner.data == "expr" and len(inner.children) == 3:
        return conditional
    return inner.data in (
        "ident",
        "member_dot",
        "member_optdot",
        "member_index",
        "member_optindex",
    )
