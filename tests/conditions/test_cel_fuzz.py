"""Random expressions through our engine and through cel-go: the same outcomes.

The hand-written corpus (test_cel_oracle.py) and the sweep (test_cel_sweep.py)
try what we thought of; this draws thousands of expressions, seeded so that a
failure reproduces, from two grammars:

* pieces of every type thrown together (literals, ``object`` and its fields,
  library calls, operators, macros, optionals): mostly type errors, which must
  agree to the letter (cel-go numbers free type variables in an order of its
  own that changes from run to run, so ``_varN`` is compared without its
  number);
* well-typed expressions built by the type they produce: values and run-time
  errors (overflows, conversions, folds that fail, quantities, time).

Syntax errors are compared by kind, as in test_cel_oracle.py.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from tests.conditions import test_cel_oracle as oracle
from workagent.conditions.celengine import CelEngine

pytestmark = pytest.mark.realkube

_OBJECT = {"spec": {"replicas": 1, "name": "web"}, "items": [1, 2], "labels": {"a": "b"}}
_ATOMS = (
    "1", "2u", "1.5", "'a'", "b'x'", "true", "null", "[1, 2]", "['a']", "{'a': 1}",
    "{1: 'x'}", "[]", "{}", "object", "object.spec", "object.spec.replicas", "object.items",
    "object.labels", "object.?spec", "duration('1s')", "timestamp('2020-01-01T00:00:00Z')",
    "quantity('1')", "ip('1.2.3.4')", "cidr('10.0.0.0/8')", "url('http://a')",
    "semver('1.0.0')", "optional.of(1)", "optional.none()", "type(1)", "int", "string", "x",
    "[object.spec, 1]", "[[1]]", "{'k': [1]}",
)  # fmt: skip
_OPERATORS = ("+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "&&", "||")
_METHODS = (
    "size()", "startsWith('a')", "contains(1)", "lowerAscii()", "split(',')", "join(',')",
    "indexOf('a')", "indexOf(1)", "hasValue()", "value()", "orValue(1)", "or(optional.of(2))",
    "getHours()", "add(1)", "isLessThan(quantity('2'))", "family()", "containsIP('1.2.3.4')",
    "getHost()", "charAt(0)", "sum()", "min()", "isSorted()", "major()", "asInteger()",
    "format([1])", "matches('a')", "reverse()", "replace('a', 'b')", "substring(1)", "trim()",
)  # fmt: skip
_FUNCTIONS = (
    "size", "string", "int", "double", "dyn", "type", "bool", "hasConditions", "optional.of",
    "strings.quote",
)  # fmt: skip
_MACROS = ("all", "exists", "exists_one", "map", "filter")


def _expression(rng: random.Random, depth: int) -> str:
    draw = rng.random()
    if depth <= 0 or draw < 0.25:
        return rng.choice(_ATOMS)

    def sub() -> str:
        return _expression(rng, depth - 1)

    if draw < 0.5:
        return f"{sub()} {rng.choice(_OPERATORS)} {sub()}"
    if draw < 0.65:
        return f"{sub()}.{rng.choice(_METHODS)}"
    if draw < 0.75:
        return f"{sub()}.{rng.choice(_MACROS)}(x, {sub()})"
    if draw < 0.8:
        return f"({sub()} ? {sub()} : {sub()})"
    if draw < 0.85:
        return f"{sub()}[{sub()}]"
    if draw < 0.9:
        return f"{rng.choice(_FUNCTIONS)}({sub()})"
    if draw < 0.95:
        return f"[{sub()}, {sub()}]"
    return f"{sub()}.optMap(x, {sub()})"


def _free_variables(text: str) -> str:
    return re.sub(r"_var\d+", "_var", text)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_expressions_agree_with_cel_go(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    expressions = list(dict.fromkeys(_expression(rng, 3) for _ in range(2500)))
    kinds = _compare(expressions, _OBJECT, monkeypatch)
    # The draw reaches every kind of outcome.
    assert kinds.get("compile", 0) > 1000 and kinds.get("value", 0) > 20, kinds


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_typed_expressions_agree_with_cel_go(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    draw = _Typed(seed)
    kinds = _TYPED_ROOTS
    expressions = list(dict.fromkeys(draw.of(draw.pick(kinds), 3, {}) for _ in range(2500)))
    outcomes = _compare(expressions, _TYPED_OBJECT, monkeypatch)
    assert outcomes.get("value", 0) > 600 and outcomes.get("error", 0) > 500, outcomes


def _compare(
    expressions: list[str], obj: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> dict[str, int]:
    """Assert our outcomes are cel-go's; how many of each kind cel-go gave."""
    answers = oracle.ask_oracle(expressions, obj)
    monkeypatch.setattr(oracle, "OBJ", obj)  # what _ours binds ``object`` to
    engine = CelEngine()
    mismatches: list[str] = []
    kinds: dict[str, int] = {}
    for expression, answer in zip(expressions, answers, strict=True):
        ours: dict[str, Any] = oracle._ours(engine, expression)
        kind = next(iter(answer))
        kinds[kind] = kinds.get(kind, 0) + 1
        theirs = {"value": oracle._comparable(answer["value"])} if kind == "value" else answer
        if "compile" in theirs and "compile" in ours:
            same = _free_variables(ours["compile"]) == _free_variables(theirs["compile"])
            same = same or (
                "Syntax error:" in ours["compile"] and "Syntax error:" in theirs["compile"]
            )
        else:
            same = ours == theirs
        if not same and expression not in _KNOWN:
            mismatches.append(f"{expression}\n  ours:   {ours}\n  cel-go: {theirs}")
    assert not mismatches, f"{len(mismatches)} differences:\n" + "\n".join(mismatches[:20])
    return kinds


#: Drawn expressions whose outcome differs from cel-go's on purpose, and why.
_KNOWN: dict[str, str] = {}


# -- the typed grammar ----------------------------------------------------------------

_TYPED_OBJECT = {
    "spec": {"replicas": 3, "name": "Web-1", "ratio": 0.5, "tags": ["a", "b"]},
    "items": [3, 1, 2],
    "labels": {"app": "web", "tier": "db"},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}
#: Per type: its leaves, then templates whose ``{type}`` holes are filled by that type
#: (``{int:x}`` binds the macro variable ``x`` to an int in the holes after it).
_LEAVES: dict[str, tuple[str, ...]] = {
    "int": ("0", "1", "-3", "7", "9223372036854775807", "-9223372036854775808",
            "object.spec.replicas", "size(object.items)"),
    "uint": ("0u", "1u", "18446744073709551615u", "5u"),
    "double": ("0.0", "1.5", "-2.25", "1e300", "object.spec.ratio", "0.1"),
    "string": ("''", "'a'", "'Web-1'", "'héllo'", "object.spec.name", "'a,b,,c'", "' x '",
               "'10'", "'500m'", "'1.2.3.4'"),
    "bool": ("true", "false", "has(object.spec.name)", "has(object.nope)"),
    "ints": ("[]", "[1, 2, 3]", "object.items", "[-1]"),
    "strings": ("['a', 'b']", "object.spec.tags", "[]", "['b', 'a', 'a']"),
    "map": ("{'a': 1}", "object.labels", "{}", "{'app': 'x', 'z': 'y'}"),
    "optional": ("optional.none()", "optional.of(1)", "object.?spec.?replicas",
                 "object.?nope.?x", "[1, 2][?1]", "{'a': 5}[?'a']"),
    "duration": ("duration('1s')", "duration('1h30m')", "duration('-1.5s')", "duration('0')"),
    "timestamp": ("timestamp('2020-01-01T00:00:00Z')", "timestamp('2024-02-29T12:30:45.5Z')"),
    "dyn": ("object.spec", "object.status.conditions[0]", "object.items[0]", "dyn(1)",
            "object.labels.app"),
}  # fmt: skip
_TEMPLATES: dict[str, tuple[str, ...]] = {
    "int": ("{int} + {int}", "{int} - {int}", "{int} * {int}", "{int} / {int}", "{int} % {int}",
            "-{int}", "size({string})", "{ints}[{int}]", "int({double})", "int({string})",
            "int({uint})", "{string}.indexOf({string})", "{ints}.sum()", "{ints}.min()",
            "({bool} ? {int} : {int})", "{timestamp}.getHours()", "{duration}.getSeconds()",
            "{optional}.orValue({int})", "{optional}.value()", "{ints}.indexOf({int})",
            "int({timestamp})", "quantity({string}).asInteger()", "{map}.size()", "int({dyn})"),
    "uint": ("{uint} + {uint}", "{uint} - {uint}", "{uint} * {uint}", "{uint} / {uint}",
             "uint({int})", "uint({double})", "uint({string})"),
    "double": ("{double} + {double}", "{double} * {double}", "{double} / {double}", "-{double}",
               "double({int})", "double({string})", "quantity({string}).asApproximateFloat()"),
    "string": ("{string} + {string}", "{string}.lowerAscii()", "{string}.substring({int})",
               "{string}.replace({string}, {string})", "{string}.trim()", "string({int})",
               "string({double})", "string({uint})", "{strings}.join({string})",
               "{string}.charAt({int})", "strings.quote({string})",
               "'%d-%s'.format([{int}, {string}])", "'%.2f|%e'.format([{double}, {double}])",
               "'%s'.format([{ints}])", "'%s'.format([{map}])", "({bool} ? {string} : {string})",
               "string({duration})", "string({timestamp})", "{map}[{string}]",
               "{strings}[{int}]", "string({dyn})", "url({string}).getHost()",
               "string(ip({string}))"),
    "bool": ("{int} < {int}", "{double} <= {double}", "{string} == {string}", "{int} != {int}",
             "{string} > {string}", "{string}.startsWith({string})", "{string}.contains({string})",
             "{string}.matches({string})", "!{bool}", "{bool} && {bool}", "{bool} || {bool}",
             "{int} in {ints}", "{string} in {map}", "{optional}.hasValue()", "{ints}.isSorted()",
             "{ints} == {ints}", "{map} == {map}", "{duration} < {duration}",
             "{timestamp} < {timestamp}", "{dyn} == {dyn}", "{dyn} == {int}", "{uint} < {uint}",
             "{ints}.all({int:x}, {bool})", "{ints}.exists({int:x}, {bool})",
             "{strings}.exists_one({string:x}, {bool})", "{map}.all({string:x}, {bool})",
             "isQuantity({string})", "quantity({string}).isLessThan(quantity('1'))",
             "hasConditions({dyn})", "type({dyn}) == int", "{dyn} in [1, 2.0, 'a']"),
    "ints": ("{ints} + {ints}", "{ints}.map({int:x}, {int})", "{ints}.filter({int:x}, {bool})",
             "[{int}, {int}]", "{strings}.map({string:x}, {int})",
             "{ints}.map({int:x}, {bool}, {int})"),
    "strings": ("{string}.split({string})", "{strings} + {strings}",
                "{ints}.map({int:x}, {string})", "{strings}.filter({string:x}, {bool})",
                "[{string}, {string}]"),
    "map": ("{{{string}: {int}}}",),
    "optional": ("optional.of({int})", "{optional}.or({optional})",
                 "{optional}.optMap({int:x}, {int})", "{ints}[?{int}]", "{map}[?{string}]"),
    "duration": ("{duration} + {duration}", "{duration} - {duration}",
                 "{timestamp} - {timestamp}", "duration({string})"),
    "timestamp": ("{timestamp} + {duration}", "{timestamp} - {duration}", "timestamp({string})",
                  "timestamp({int})"),
    "dyn": ("object.spec[{string}]", "dyn({ints})", "object.labels[{string}]"),
}  # fmt: skip
# The libraries' functions, time zones, format verbs (as many again).
_MORE: dict[str, tuple[str, ...]] = {
    "string": ("{string}.indexOf({string}, {int})", "{string}.substring({int}, {int})",
               "{string}.replace({string}, {string}, {int})",
               "'%b %o %x %X'.format([{int}, {int}, {int}, {int}])",
               "'%.3f %e %s'.format([{double}, {double}, {bool}])",
               "'%s %s'.format([{duration}, {timestamp}])", "url({string}).getScheme()",
               "url({string}).getEscapedPath()", "url({string}).getQuery()",
               "url('https://h:' + {string} + '/p?q=1').getPort()",
               "string(cidr('10.0.0.0/' + string({int})))", "{string}.find({string})",
               "'%s'.format([{strings}])", "'%s'.format([{optional}])", "'%x'.format([{string}])",
               "string({timestamp} + duration({string}))"),
    "int": ("{timestamp}.getHours({string})", "{timestamp}.getDayOfWeek('-08:00')",
            "{timestamp}.getMonth('America/New_York')", "{duration}.getMinutes()",
            "semver({string}).major()", "semver('1.2.3').compareTo(semver({string}))",
            "{ints}.lastIndexOf({int})", "cidr({string}).prefixLength()",
            "{string}.findAll({string}, {int}).size()"),
    "bool": ("ip({string}).isLoopback()", "cidr('10.0.0.0/8').containsIP({string})",
             "isIP({string})", "isCIDR({string})", "isSemver({string})",
             "semver({string}).isGreaterThan(semver('1.0.0'))", "ip.isCanonical({string})",
             "format.dns1123Label().validate({string}).hasValue()",
             "format.named({string}).hasValue()", "[{double}, {double}].isSorted()",
             "{timestamp} == timestamp({string})"),
    "double": ("[{double}, {double}].max()", "double({uint}) / double({int})"),
}  # fmt: skip
_TEMPLATES = {kind: (*found, *_MORE.get(kind, ())) for kind, found in _TEMPLATES.items()}
_LEAVES["string"] += (
    "'::1'", "'10.0.0.0/8'", "'https://u@h:8/a%20b?x=1#f'", "'UTC'", "'1h'", "'-07:00'",
    "'v1.0.0'", "'[a-z]+'", "'2020-01-01T00:00:00Z'", "'Europe/Paris'", "'1:x'",
)  # fmt: skip
_TYPED_ROOTS = ("bool", "bool", "int", "string", "double", "ints", "strings", "optional",
                "uint", "duration", "timestamp")  # fmt: skip
_HOLE = re.compile(r"\{(\w+)(?::(\w+))?\}")


class _Typed:
    """Draws an expression of a given type, macro variables in scope."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, options: tuple[str, ...]) -> str:
        return self.rng.choice(options)

    def of(self, kind: str, depth: int, scope: dict[str, str]) -> str:
        names = tuple(name for name, bound in scope.items() if bound == kind)
        if depth <= 0 or self.rng.random() < 0.25:
            if names and self.rng.random() < 0.5:
                return self.pick(names)
            return self.pick(_LEAVES[kind])
        inner = dict(scope)

        def fill(hole: re.Match[str]) -> str:
            hole_kind, variable = hole[1], hole[2]
            if variable is not None:  # ``{int:x}``: x is the macro's variable
                name = self.pick(("x", "y", "z"))
                inner[name] = hole_kind
                return name
            return self.of(hole_kind, depth - 1, inner)

        return _HOLE.sub(fill, self.pick(_TEMPLATES[kind]))
