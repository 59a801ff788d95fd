"""cel-go's type checking of condition rules (workagent/conditions/celtyping.py).

OCM's agent compiles rules with cel-go, which type-checks them: these
expressions are compile errors there, whatever the object, and each gives the
errors cel-go gives (the CEL oracle compares the whole text, source lines too).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from workagent.conditions.celcheck import MESSAGE_VARIABLES, RULE_VARIABLES
from workagent.conditions.celcost import sized_calls
from workagent.conditions.celengine import CelEngine, CompileFailure
from workagent.conditions.celfunctions import GLOBAL_FUNCTIONS, METHODS, QUALIFIED_FUNCTIONS
from workagent.conditions.celinterpreter import parser
from workagent.conditions.celtree import unwrap
from workagent.conditions.celtyping import (
    DECLARATIONS,
    DYN,
    INT,
    STRING,
    CelType,
    check_types,
    list_of,
    optional_of,
    substitute,
)


@pytest.fixture(scope="module")
def engine() -> CelEngine:
    return CelEngine()


def compile_errors(engine: CelEngine, expression: str, variables: frozenset[str]) -> str:
    """The errors' lines of a failed compilation, ``line:column: message`` joined by `` | ``."""
    program = engine.compile(expression, variables)
    assert isinstance(program, CompileFailure), f"{expression!r} compiled"
    assert not program.internal
    lines = program.text.split("\n")
    return " | ".join(
        line.removeprefix("ERROR: <input>:") for line in lines if line[:6] == "ERROR:"
    )


@pytest.mark.parametrize(
    ("expression", "errors"),
    [
        (
            "object.metadata.name + 1 == 'x'",
            "1:26: found no matching overload for '_==_' applied to '(int, string)'",
        ),
        (
            "object.metadata.name.lowerAscii(1) == 'x'",
            "1:32: found no matching overload for 'lowerAscii' applied to 'dyn.(int)'",
        ),
        ("1 == 1.0", "1:3: found no matching overload for '_==_' applied to '(int, double)'"),
        ("1u == 1", "1:4: found no matching overload for '_==_' applied to '(uint, int)'"),
        ("1 != 'a'", "1:3: found no matching overload for '_!=_' applied to '(int, string)'"),
        ("!(true == 1)", "1:8: found no matching overload for '_==_' applied to '(bool, int)'"),
        (
            "{'a': 1} == {'a': 1.0}",
            "1:10: found no matching overload for '_==_' applied to '(map(string, int), map(string, double))'",
        ),
        (
            "1 < 1.5 && 2.5 > 2 && 1u <= 1 && 3 >= 2.99",
            "1:3: found no matching overload for '_<_' applied to '(int, double)' | 1:16: found no matching overload for '_>_' applied to '(double, int)' | 1:26: found no matching overload for '_<=_' applied to '(uint, int)' | 1:36: found no matching overload for '_>=_' applied to '(int, double)'",
        ),
        (
            "1.0 in [1, 2]",
            "1:5: found no matching overload for '@in' applied to '(double, list(int))'",
        ),
        ("1 < 'a'", "1:3: found no matching overload for '_<_' applied to '(int, string)'"),
        (
            "strings.quote(1) == ''",
            "1:14: found no matching overload for 'strings.quote' applied to '(int)'",
        ),
        (
            "string(optional.of(1)) == ''",
            "1:7: found no matching overload for 'string' applied to '(optional_type(int))'",
        ),
        (
            "object.?spec + 1 == 1",
            "1:14: found no matching overload for '_+_' applied to '(optional_type(dyn), int)'",
        ),
        (
            "size(object.spec) + 'a' == 'b'",
            "1:19: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "[1, 2].map(x, x + 'a') == []",
            "1:17: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "object.spec.replicas + 1 + 'a' == 'b'",
            "1:26: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "int('1') + 1u == 2u",
            "1:10: found no matching overload for '_+_' applied to '(int, uint)'",
        ),
        (
            "duration('1s') + 1 == duration('2s')",
            "1:16: found no matching overload for '_+_' applied to '(duration, int)'",
        ),
        (
            "timestamp('2020-01-01T00:00:00Z') - 1 == timestamp('2020-01-01T00:00:00Z')",
            "1:35: found no matching overload for '_-_' applied to '(timestamp, int)'",
        ),
        (
            "object.metadata.name.startsWith(1)",
            "1:32: found no matching overload for 'startsWith' applied to 'dyn.(int)'",
        ),
        (
            "'a'.size(1) == 1",
            "1:9: found no matching overload for 'size' applied to 'string.(int)'",
        ),
        ("size(1) == 1", "1:5: found no matching overload for 'size' applied to '(int)'"),
        ("size() == 0", "1:5: found no matching overload for 'size' applied to '()'"),
        (
            "[1, 2].exists(x, x == 'a')",
            "1:20: found no matching overload for '_==_' applied to '(int, string)'",
        ),
        (
            "has(object.spec) + 1 == 1",
            "1:18: found no matching overload for '_+_' applied to '(bool, int)'",
        ),
        (
            "{1: 'a'}['x'] == 'a'",
            "1:9: found no matching overload for '_[_]' applied to '(map(int, string), string)'",
        ),
        (
            "[1][1.0] == 1",
            "1:4: found no matching overload for '_[_]' applied to '(list(int), double)'",
        ),
        (
            "'abc'[0] == 'a'",
            "1:6: found no matching overload for '_[_]' applied to '(string, int)'",
        ),
        (
            "object.spec ? 1 : 'a'",
            "1:13: found no matching overload for '_?_:_' applied to '(dyn, int, string)'",
        ),
        ("[1].all(x, 1)", "1:12: expected type 'bool' but found 'int'"),
        ("true && 1", "1:9: expected type 'bool' but found 'int'"),
        (
            "1 || 'a' || object.spec",
            "1:1: expected type 'bool' but found 'int' | 1:6: expected type 'bool' but found 'string'",
        ),
        (
            "[1].exists_one(x, 1)",
            "1:15: found no matching overload for '_?_:_' applied to '(int, int, int)'",
        ),
        (
            "[1].filter(x, 1) == []",
            "1:11: found no matching overload for '_?_:_' applied to '(int, list(int), list(int))'",
        ),
        (
            "[1].map(x, 1, 2) == []",
            "1:8: found no matching overload for '_?_:_' applied to '(int, list(int), list(int))'",
        ),
        (
            "'a'.exists(x, true)",
            "1:1: expression of type 'string' cannot be range of a comprehension (must be list, map, or dynamic)",
        ),
        (
            "optional.of(1).optFlatMap(x, x).hasValue()",
            "1:26: found no matching overload for '_?_:_' applied to '(bool, int, optional_type(dyn))'",
        ),
        (
            "optional.of(1).optMap(x, x) + 1 == 2",
            "1:29: found no matching overload for '_+_' applied to '(optional_type(int), int)'",
        ),
        ("1 == null", "1:3: found no matching overload for '_==_' applied to '(int, null)'"),
        ("[?1] == []", "1:3: expected type 'optional_type(int)' but found 'int'"),
        ("{?'a': 1} == {}", "1:8: expected type 'optional_type(int)' but found 'int'"),
        ("'a'.b == 1", "1:4: type 'string' does not support field selection"),
        ("'a'.?b == optional.none()", "1:4: type 'string' does not support field selection"),
        ("[1].b == 1", "1:4: type 'list(int)' does not support field selection"),
        (
            "{'a': 1}.a + 'x' == 'y'",
            "1:12: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        ("quantity('1').x == 1", "1:14: unexpected failed resolution of 'kubernetes.Quantity'"),
        ("int + 1 == 1", "1:5: found no matching overload for '_+_' applied to '(type(int), int)'"),
        (
            "type(object) + 1 == 1",
            "1:14: found no matching overload for '_+_' applied to '(type(dyn), int)'",
        ),
        (
            "(1 + 'a').optMap(x, x).hasValue()",
            "1:4: found no matching overload for '_+_' applied to '(int, string)' | 1:4: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "{'a': 1}.all(k, k + 1 > 0)",
            "1:19: found no matching overload for '_+_' applied to '(string, int)'",
        ),
        (
            "[].map(x, x + 1)[0] + 'a' == 'b'",
            "1:21: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "(object.spec ? 1 : 2) + 'a' == 'b'",
            "1:23: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        ("-'a' == 'a'", "1:1: found no matching overload for '-_' applied to '(string)'"),
        ("!1", "1:1: found no matching overload for '!_' applied to '(int)'"),
        (
            "hasConditions(1, 2)",
            "1:14: found no matching overload for 'hasConditions' applied to '(int, int)'",
        ),
        ("max([1]) == 1", "1:4: found no matching overload for 'max' applied to '(list(int))'"),
        (
            "[1].max() + 'a' == 'b'",
            "1:11: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "optional.none() + 1 == 1",
            "1:17: found no matching overload for '_+_' applied to '(optional_type(dyn), int)'",
        ),
        (
            "optional.of(1).orValue('a') == 1",
            "1:23: found no matching overload for 'orValue' applied to 'optional_type(int).(string)'",
        ),
        (
            "[1][?0] + 1 == 2",
            "1:9: found no matching overload for '_+_' applied to '(optional_type(int), int)'",
        ),
        (
            "quantity('1').add(1) + 1 == 1",
            "1:22: found no matching overload for '_+_' applied to '(kubernetes.Quantity, int)'",
        ),
        (
            "ip('1.2.3.4').family() + 'a' == 'b'",
            "1:24: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "'%d'.format(['a' + 'b']) == ''",
            "1:18: error during formatting: decimal clause can only be used on ints, uints, and doubles, was given string",
        ),
        (
            "'%s'.format([object.spec]).size() + 'a' == 'b'",
            "1:35: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "[1, 2].map(x, [x]).map(y, y[0] + 'a') == []",
            "1:32: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "[[1]][0][0] + 'a' == 'b'",
            "1:13: found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "[1].exists(x, [x].all(y, y + x > 'a'))",
            "1:32: found no matching overload for '_>_' applied to '(int, string)'",
        ),
        ("has(1)", "1:5: invalid argument to has() macro"),
        ("has(object.?spec)", "1:11: invalid argument to has() macro"),
        ("has(object.spec, 1)", "1:4: undeclared reference to 'has' (in container '')"),
        ("[1].all(1, true)", "1:9: argument must be a simple name"),
        ("[1].map(x.y, 1) == []", "1:10: argument is not an identifier"),
        (
            "object.?spec.optMap(1, 2).hasValue()",
            "1:21: optMap() variable name must be a simple identifier",
        ),
        (
            "object.spec.int() == 1",
            "1:16: found no matching overload for 'int' applied to 'dyn.()'",
        ),
        # Number literals out of range, and runs of ``!`` or ``-`` as cel-go reads them:
        # an even run is its operand, unchecked; ``-`` runs reach into a number.
        ("9223372036854775808 > 0", "1:1: invalid int literal"),
        ("--9223372036854775808 > 0", "1:3: invalid int literal"),
        ("0x8000000000000000 > 0", "1:1: invalid int literal"),
        ("optional.of(--9223372036854775808).optMap(x, x).hasValue()", "1:15: invalid int literal"),
        ("18446744073709551616u > 0u", "1:1: invalid uint literal"),
        ("1e400 > 0.0", "1:1: invalid double literal"),
        ("!!!1", "1:1: found no matching overload for '!_' applied to '(int)'"),
        ("!-object.spec", "1:3: Syntax error: no viable alternative at input '-object'"),
        ("-!true", "1:2: Syntax error: no viable alternative at input '-!'"),
        # ``1.`` is not a float in CEL: a call on the int 1.
        (
            "1.all(x, true)",
            "1:1: expression of type 'int' cannot be range of a comprehension "
            "(must be list, map, or dynamic)",
        ),
        (
            "1.optMap(x, x).hasValue()",
            "1:9: found no matching overload for 'hasValue' applied to 'int.()' | "
            "1:9: found no matching overload for 'value' applied to 'int.()'",
        ),
    ],
)
def test_type_errors_are_cel_gos(engine: CelEngine, expression: str, errors: str) -> None:
    assert compile_errors(engine, expression, RULE_VARIABLES) == errors


def test_message_expressions_know_result_is_a_bool(engine: CelEngine) -> None:
    assert compile_errors(engine, "result + 'x'", MESSAGE_VARIABLES) == (
        "1:8: found no matching overload for '_+_' applied to '(bool, string)'"
    )
    program = engine.compile("result ? 'yes' : 'no'", MESSAGE_VARIABLES)
    assert not isinstance(program, CompileFailure)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("object.spec", "dyn"),
        ("object.spec.replicas + 1", "int"),
        ("object.spec + object.status", "dyn"),
        ("[1, 2].map(x, x * 2)", "list(int)"),
        ("[1, 'a']", "list(dyn)"),
        ("{'a': [1]}", "map(string, list(int))"),
        ("object.?spec.replicas", "optional_type(dyn)"),
        ("optional.of('a').optMap(s, size(s))", "optional_type(int)"),
        ("[].map(x, x) + [1]", "list(int)"),
        ("object.items.filter(i, true)", "list(dyn)"),
        ("true ? [] : [1]", "list(int)"),
        ("type(1)", "type(int)"),
        ("quantity('1')", "kubernetes.Quantity"),
        ("ip('::1')", "net.IP"),
        ("duration('1s')", "duration"),
        ("has(object.spec)", "bool"),
    ],
)
def test_static_types(expression: str, expected: str) -> None:
    tree = parser().parse(expression)
    typing = check_types(tree, expression, RULE_VARIABLES)
    assert typing.errors == []
    assert str(typing.types[id(unwrap(tree))]) == expected


def test_substitution_binds_through_variables() -> None:
    a, b = CelType("A", param=True), CelType("B", param=True)
    assert substitute({"A": list_of(b), "B": INT}, optional_of(a)) == optional_of(list_of(INT))
    assert substitute({}, a, free_to_dyn=True) == DYN
    assert str(CelType("map", (STRING, list_of(a)))) == "map(string, list(A))"


@pytest.mark.parametrize(
    ("expression", "sized"),
    [
        # cel-go sizes a call only where its checker bound it to the sized overload.
        ("object.a + 'x'", True),
        ("object.a + object.b", False),
        ("'a' < object.b", True),
        ("object.a < object.b", False),
        ("object.a in ['x']", True),
        ("object.a in object.b", False),
        ("bytes(object.a)", False),
        ("bytes('a')", True),
        ("'abc'.indexOf(object.x)", True),
        ("object.s.indexOf('a')", False),
        ("object.s.indexOf('a', 1)", True),
        # What only a full checker knows: a fold's variable, a map's value type.
        ("['a'].map(x, x + object.y)", True),
        ("{'k': 'v'}.k + object.y", True),
    ],
)
def test_sized_calls_follow_the_checker(expression: str, sized: bool) -> None:
    tree = parser().parse(expression)
    assert bool(sized_calls(tree)) == sized


def test_every_declared_function_is_one_we_evaluate() -> None:
    named = {name for name in DECLARATIONS if name[0].isalpha()} - {"in"}
    ours = set(GLOBAL_FUNCTIONS) | set(METHODS) | set(QUALIFIED_FUNCTIONS)
    celpy_builtins = {
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
        "contains",
        "endsWith",
        "matches",
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
    assert named - ours - celpy_builtins == set()


@pytest.mark.realkube
def test_declarations_are_cel_gos() -> None:
    """celdecls.json is what the oracle (cel-go in OCM's environment) declares."""
    from tests.conditions.test_cel_oracle import _oracle_path

    oracle = _oracle_path()
    if not oracle.exists():
        pytest.fail(f"{oracle} is not built: run `make cel-oracle`")
    printed = subprocess.run(
        [str(oracle), "-declarations"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    committed = Path(__file__).parents[2] / "workagent" / "conditions" / "celdecls.json"
    assert json.loads(printed) == json.loads(committed.read_text()), (
        "cel-go's declarations changed: run `make cel-declarations`"
    )
