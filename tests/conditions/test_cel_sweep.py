"""Every library function, operator and macro applied to every kind of value, against cel-go.

The hand-written corpus (test_cel_oracle.py) checks what a rule author means
to write; this one checks what a mistaken rule meets: a function or operator
given a value of the wrong type. ``dyn()`` hides the types from cel-go's
checker, so both engines meet them at run time and must agree on the outcome
and on its words (``no such overload: getHost(string)``). About 16,000
expressions are generated; about half reach run time in cel-go (the rest are
its compile errors). Those where we differ on purpose are listed with the reason.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.conditions.test_cel_oracle import _comparable, _ours, ask_oracle
from tests.conditions.test_celengine import OBJ
from workagent.conditions.celengine import CelEngine
from workagent.conditions.celfunctions import GLOBAL_FUNCTIONS, METHODS

pytestmark = pytest.mark.realkube

#: One value of every kind the engine knows, hidden from cel-go's type checker.
VALUES = [
    "dyn(1)",
    "dyn(-1)",
    "dyn(2u)",
    "dyn(1.5)",
    "dyn('a')",
    "dyn('')",
    "dyn(b'x')",
    "dyn(true)",
    "dyn(null)",
    "dyn([1, 'a'])",
    "dyn([])",
    "dyn({'k': 1})",
    "dyn(duration('1s'))",
    "dyn(timestamp('2020-01-01T00:00:00Z'))",
    "dyn(quantity('1'))",
    "dyn(ip('1.2.3.4'))",
    "dyn(cidr('1.0.0.0/8'))",
    "dyn(url('http://a/b'))",
    "dyn(semver('1.2.3'))",
    "dyn(optional.of(1))",
]
# CEL's own functions, besides the library's tables.
_BUILTIN_METHODS = ("size", "contains", "startsWith", "endsWith", "matches", "getHours", "getDate")
_BUILTIN_GLOBALS = ("size", "string", "int", "uint", "double", "bytes", "bool", "duration")
_OPERATORS = ("+", "-", "*", "/", "%", "<", "<=", "==", "!=", "in")
# Comprehensions whose body gives a bool, a non-bool or the element itself.
_MACROS = (
    "all(x, x)",
    "all(x, true)",
    "exists(x, x)",
    "exists_one(x, x)",
    "filter(x, x)",
    "filter(x, true)",
    "map(x, x)",
    "map(x, x, x)",
    "optMap(x, x)",
    "optFlatMap(x, x)",
)

_TIME_ZONE = "celpy's timestamp getters take null and lists for a time zone (cel-go: no overload)"
_UNHASHABLE = "cel-go fails hashing a bytes or semver key (an internal error); we answer false"
_UINT_INDEX = "a uint index of a string is taken; cel-go declares int only"
_METHOD_IP = "ip() is one function here, for strings and CIDRs as a global and as a method"
#: Expressions whose outcome differs from cel-go's, and why.
KNOWN_DIFFERENCES: dict[str, str] = {
    "dyn(quantity('1')).add(dyn(2u))": "a quantity adds any integer; cel-go declares int only",
    "dyn(quantity('1')).sub(dyn(2u))": "a quantity subtracts any integer; cel-go declares int only",
    "dyn('a').charAt(dyn(2u))": _UINT_INDEX,
    "dyn('').charAt(dyn(2u))": _UINT_INDEX,
    "dyn('a').substring(dyn(2u))": _UINT_INDEX,
    "dyn('').substring(dyn(2u))": _UINT_INDEX,
    "dyn(timestamp('2020-01-01T00:00:00Z')).getDate(dyn(null))": _TIME_ZONE,
    "dyn(timestamp('2020-01-01T00:00:00Z')).getDate(dyn([]))": _TIME_ZONE,
    "dyn(duration('1s')).getHours(dyn(null))": _TIME_ZONE,
    "dyn(timestamp('2020-01-01T00:00:00Z')).getHours(dyn(null))": _TIME_ZONE,
    "dyn(timestamp('2020-01-01T00:00:00Z')).getHours(dyn([]))": _TIME_ZONE,
    "dyn('a').ip()": _METHOD_IP,
    "dyn('').ip()": _METHOD_IP,
    "ip(dyn(cidr('1.0.0.0/8')))": _METHOD_IP,
    "dyn([]).join(dyn(null))": "an empty list joins with any separator",
    "dyn(b'x') in dyn({'k': 1})": _UNHASHABLE,
    "dyn(semver('1.2.3')) in dyn({'k': 1})": _UNHASHABLE,
}


def sweep_expressions() -> list[str]:
    """Methods and globals on every kind of value, operators on pairs, selection, index."""
    expressions: list[str] = []
    for method in sorted(set(METHODS) | set(_BUILTIN_METHODS)):
        for receiver in VALUES:
            expressions.append(f"{receiver}.{method}()")
            expressions += [f"{receiver}.{method}({arg})" for arg in VALUES[::2]]
    for function in sorted(set(GLOBAL_FUNCTIONS) | set(_BUILTIN_GLOBALS)):
        expressions += [f"{function}({arg})" for arg in VALUES]
    for operator in _OPERATORS:
        for left, right in itertools.product(VALUES[::2], VALUES[1::2]):
            expressions.append(f"{left} {operator} {right}")
    for value in VALUES:
        expressions += [f"-{value}", f"!{value}", f"{value}[0]", f"{value}['k']"]
        expressions += [f"{value}.k", f"has({value}.k)", f"{value}.?k", f"{value}[?0]"]
        expressions += [f"{value}.{macro}" for macro in _MACROS]
        expressions += [f"{value} && true", f"false || {value}", f"{value} ? 1 : 2"]
        expressions += [f"[?{value}]", f"{{?'k': {value}}}", f"{value} in [{value}]"]
    return expressions


def _same(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    theirs = {k: v for k, v in theirs.items() if k != "cost"}
    if "value" in theirs:
        theirs = {"value": _comparable(theirs["value"])}
    return ours == theirs


def test_library_and_operators_on_every_kind_of_value() -> None:
    expressions = sweep_expressions()
    assert len(expressions) > 10_000
    engine = CelEngine()
    mismatches: list[str] = []
    agreed_known: list[str] = []
    checked = costs = 0
    for expression, theirs in zip(
        expressions, ask_oracle(expressions, OBJ, cost=True), strict=True
    ):
        if "compile" in theirs:
            continue  # cel-go's type checker (its own exceptions: test_cel_oracle.py)
        checked += 1
        ours = _ours(engine, expression, cost=True)
        if "value" in ours and "value" in theirs:  # a failed run's cost is not taken
            costs += 1
            if ours["cost"] != theirs["cost"]:
                mismatches.append(f"{expression}: cost {ours['cost']}, cel-go {theirs['cost']}")
        same = _same({k: v for k, v in ours.items() if k != "cost"}, theirs)
        if expression in KNOWN_DIFFERENCES:
            if same:
                agreed_known.append(expression)
        elif not same:
            mismatches.append(
                f"{expression}\n  ours:   {_ours(engine, expression)}\n  cel-go: {theirs}"
            )
    assert checked > 5_000  # the rest are cel-go compile errors
    assert costs > 400
    assert not mismatches, f"{len(mismatches)} differences:\n" + "\n".join(mismatches[:50])
    assert not agreed_known, f"no longer different, remove from KNOWN_DIFFERENCES: {agreed_known}"
    assert set(KNOWN_DIFFERENCES) <= set(expressions), "a known difference no longer generated"
