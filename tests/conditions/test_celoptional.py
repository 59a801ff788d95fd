"""CEL optional types, named formats, strings.quote, the three-argument map, trailing commas.

Every ``expression`` here is also evaluated by cel-go itself in
tests/conditions/test_cel_oracle.py (the realkube leg), against the same object.
"""

from __future__ import annotations

from typing import Any

import pytest
from celpy.adapter import json_to_cel

from tests.conditions.test_celengine import OBJ, error, run, true
from workagent.conditions.celengine import CelEngine
from workagent.conditions.protocol import ExpressionsOutcome, MessageOutcome


@pytest.mark.parametrize(
    "expression",
    [
        # Selection: a missing field, key or index is an empty optional, not an error.
        "object.?status.?readyReplicas.orValue(0) == 2",
        "object.?status.?missing.orValue(7) == 7",
        "!object.?spec.?paused.hasValue()",
        "object.?status.nothing.hasValue()",  # present, and null
        "object.?metadata.labels.app.orValue('') == 'web'",
        "object.?missing.labels.app.orValue('none') == 'none'",
        "object.?status.conditions[0].type.value() == 'Available'",
        "object.?status.conditions[5].type.orValue('none') == 'none'",
        "!object.status.conditions[?9].hasValue()",
        "object.status.conditions[?1].value().type == 'Progressing'",
        "object[?'spec'].replicas.value() == 3",
        "!object.spec.replicas.?x.hasValue()",  # a field of a number: empty, as cel-go has it
        "{'a': 1}[?'b'] == optional.none() && {1: 'x'}[?1] == optional.of('x')",
        # Literals: the element or entry only when the optional has a value.
        "[?object.?spec.?replicas, ?object.?spec.?paused] == [3]",
        "{?'r': object.?spec.?replicas, ?'p': object.?spec.?paused} == {'r': 3}",
        "[?optional.none()] == [] && {?'k': optional.none()}.size() == 0",
        # Values and functions.
        "optional.of(1) == optional.of(1) && optional.none() == optional.none()",
        "optional.of(1) != optional.none() && optional.of(1) != optional.of(2)",
        "optional.of(optional.none()).hasValue()",
        "optional.ofNonZeroValue('') == optional.none() && optional.ofNonZeroValue(0) == optional.none()",
        "optional.ofNonZeroValue(0.0) == optional.none() && optional.ofNonZeroValue(null) == optional.none()",
        "optional.ofNonZeroValue(false) == optional.none() && optional.ofNonZeroValue({}) == optional.none()",
        "optional.ofNonZeroValue(duration('0s')) == optional.none()",
        "optional.ofNonZeroValue(timestamp('1970-01-01T00:00:00Z')).hasValue()",
        "optional.ofNonZeroValue([1]).hasValue() && optional.ofNonZeroValue(0u) == optional.none()",
        "optional.none().or(optional.of(2)).value() == 2",
        "optional.of(1).or(optional.of(2)).value() == 1",
        "optional.none().orValue('d') == 'd'",
        "object.?spec.?replicas.optMap(r, r * 2).value() == 6",
        "object.?spec.?paused.optMap(p, !p) == optional.none()",
        "object.?spec.optFlatMap(s, s.?replicas).value() == 3",
        "optional.of(1).optFlatMap(x, optional.none()) == optional.none()",
        "optional.unwrap([optional.of(1), optional.none()]) == [1]",
        "[optional.none(), optional.of('a')].unwrapOpt() == ['a']",
        "object.status.conditions.first().value().type == 'Available'",
        "object.status.conditions.last().value().type == 'Progressing'",
        "object.status.empty.first() == optional.none()",
        "type(object.?spec) == optional_type",
        "optional.of(1) in [optional.of(1)]",
        # The three-argument map: filter, then transform (a map's keys).
        "object.status.conditions.map(c, c.status == 'True', c.type) == ['Available', 'Progressing']",
        "object.metadata.labels.map(k, k != 'app', k) == ['tier']",
        "[1, 2, 3].map(x, x > 5, x) == []",
        # strings.quote: CEL's escapes, the rest as it is.
        "strings.quote('a\"b') == '\"a\\\\\"b\"'",
        "strings.quote('tab\\there\\n') == '\"tab\\\\there\\\\n\"'",
        "strings.quote('é') == '\"é\"'",
        # Kubernetes named formats: validate() is empty or Go's error texts.
        "format.named('x') == optional.none() && format.named('byte').hasValue()",
        "format.named('dns1123Label') == optional.of(format.dns1123Label())",
        "format.uri() == format.uri() && format.uri() != format.uuid()",
        "type(format.uri()) == type(format.named('uuid').value())",
        "format.named('labelValue').value().validate('ok') == optional.none()",
        "format.dns1123Label().validate('a b').value().size() == 1",
        "format.dns1123Label().validate('ABC').value()[0].startsWith('a lowercase RFC 1123 label')",
        "format.dns1123Label().validate(object.metadata.name) == optional.none()",
        # has(): a map's key; false on a scalar or null, and through an optional.
        "has(object.?spec.replicas) && !has(optional.none().replicas)",
        "!has(object.spec.replicas.x) && !has(object.status.nothing.x)",
        "bool('t') && bool('TRUE') && !bool('0') && type(true) == bool",
        # min, max, isSorted as the Kubernetes lists library runs them: an element of
        # another kind is skipped by the comparison (cel-go's Compare gives an error).
        "dyn([1, 'a']).max() == 1 && dyn(['a', 1, 'b']).max() == 'b'",
        "dyn([1, 'a', 0]).min() == 0 && [1, 2.5, 2u].max() == 2.5",
        "!dyn(['b', 'a', 1]).isSorted() && dyn([2, 'a', 1]).isSorted()",
        "[duration('2s'), duration('1s')].min() == duration('1s')",
        "dyn([duration('1s'), duration('2s')]).sum() == duration('3s')",
        # Trailing commas; a repeated map key keeps the last value.
        "[1, 2,] == [1, 2] && {'a': 1,} == {'a': 1}",
        "{'a': 1, 'a': 2}['a'] == 2",
    ],
)
def test_true(engine: CelEngine, expression: str) -> None:
    true(engine, expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("optional.none().value() == 1", "optional.none() dereference"),
        (
            "[?object.spec.replicas] == []",
            "cannot initialize optional list element from non-optional value 3",
        ),
        (
            "{?'k': object.kind} == {}",
            "cannot initialize optional entry 'k' from non-optional value Deployment",
        ),
        # (Not a map: cel-go prints one in Go's random map order.)
        (
            "[?object.status.empty] == []",
            "cannot initialize optional list element from non-optional value []",
        ),
        (
            "object.status.conditions[?'x'].hasValue()",
            "unsupported index type 'string' in list",
        ),
        ("object.status.conditions['x'] == 1", "unsupported index type 'string' in list"),
        ("object.status.conditions[1.5] == 1", "unsupported index value 1.5 in list"),
        ("object.status.conditions[true] == 1", "unsupported index type 'bool' in list"),
        ("[1, 2].map(x, x / 0 > 1, x) == []", "division by zero"),
        ("[1, 2].map(x, x > 1, x / 0) == []", "division by zero"),
        ("object.?spec.?replicas.optMap(r, r / 0).hasValue()", "division by zero"),
        ("object.?nope.orValue(object.nope) == 1", "no such key: nope"),
        ("strings.quote(dyn(1)) == ''", "no such overload: strings.quote(int)"),
        # A call no overload takes: cel-go names the function and the argument types,
        # except for size and matches (the name only) and a few functions (neither).
        ("dyn(1).lowerAscii() == ''", "no such overload: lowerAscii(int)"),
        ("'a'.charAt(dyn('x')) == ''", "no such overload: charAt(string, string)"),
        ("dyn('x').getHost() == ''", "no such overload: getHost(string)"),
        ("dyn([1]).join(',') == ''", "no such overload: join(list, string)"),
        ("dyn(['a']).sum() == ''", "no such overload: sum(list)"),
        ("dyn([1, 2.5]).sum() == 1", "no such overload"),
        ("format.named(dyn(1)).hasValue()", "no such overload: format.named(int)"),
        ("optional.unwrap(dyn(1)) == []", "no such overload: optional.unwrap(int)"),
        ("dyn(1).optMap(x, x).hasValue()", "no such overload: hasValue(int)"),
        ("bool(dyn(1.5))", "no such overload: bool(double)"),
        ("bool('yes')", "type conversion error from 'string' to 'bool'"),
        ("dyn(1).getDate() == 1", "no such overload: getDate(int)"),
        ("size(dyn(null)) == 0", "no such overload: size"),
        ("dyn(1).matches('a')", "no such overload: matches"),
        ("dyn(1).endsWith('a')", "no such overload"),
        ("dyn([{}, 1]).max() == 1", "no such overload: max(list)"),
        ("dyn([[1], 2]).min() == 1", "no such overload: min(list)"),
        ("dyn([]).min() == 1", "min called on empty list"),
        ("cidr('10.0.0.0/8').containsIP('bad')", "no such overload"),
        # has() fails where its operand does (celpy alone would say false).
        ("has(object.missing.x)", "no such key: missing"),
        ("has(object.status.conditions.x)", "unsupported index type 'string' in list"),
        ("string(dyn(optional.of(1))) == ''", "no such overload: string(optional_type)"),
        ("dyn(object.?spec) + 1 == 1", "no such overload: _+_"),
    ],
)
def test_runtime_errors(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression) == message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("has(object.?spec)", "invalid argument to has() macro"),
        ("[?1] == []", "expected type 'optional_type(int)' but found 'int'"),
        ("{?'k': 'v'} == {}", "expected type 'optional_type(string)' but found 'string'"),
        ("size(?object)", "Syntax error: mismatched input '?'"),
        ("object.?['spec']", "Syntax error: mismatched input '['"),
        ("optional.of", "undeclared reference to 'optional' (in container '')"),
        ("optional.some(1)", "undeclared reference to 'optional' (in container '')"),
        ("[1].map(x, x, x, x) == []", "undeclared reference to 'map' (in container '')"),
        ("f(1,)", "Syntax error: mismatched input ')'"),
        ("format.x() == 1", "undeclared reference to 'format' (in container '')"),
    ],
)
def test_compile_errors(engine: CelEngine, expression: str, message: str) -> None:
    assert message in error(engine, expression).split("\n", 1)[0]


@pytest.mark.parametrize(
    ("expression", "outcome"),
    [
        # The Kubernetes regex library compiles a literal pattern of find/findAll
        # when the program is built: a bad one is OCM's internal error.
        (
            r"'abc'.find(r'\Z') == ''",
            ExpressionsOutcome(
                "Unknown",
                "ConditionRuleInternalError",
                "error parsing regexp: invalid escape sequence: `\\Z`",
            ),
        ),
        (
            "true || 'abc'.findAll('(', 2) == []",
            ExpressionsOutcome(
                "Unknown",
                "ConditionRuleInternalError",
                "error parsing regexp: missing closing ): `(`",
            ),
        ),
        # OCM reads a result with cel-go's Value(): an optional's is its content's.
        (
            "object.?spec.?replicas.optMap(r, r == 3)",
            ExpressionsOutcome("True", "ConditionRuleEvaluated"),
        ),
        ("optional.of(false)", ExpressionsOutcome("False", "ConditionRuleEvaluated")),
        (
            "object.?spec",
            ExpressionsOutcome(
                "False",
                "ConditionRuleExpressionError",
                "expected bool result, got map[string]interface {}",
            ),
        ),
        (
            "object.?missing",
            ExpressionsOutcome(
                "False", "ConditionRuleExpressionError", "expected bool result, got <nil>"
            ),
        ),
    ],
)
def test_optional_results(engine: CelEngine, expression: str, outcome: ExpressionsOutcome) -> None:
    assert run(engine, expression) == outcome


@pytest.mark.parametrize(
    ("source", "outcome"),
    [
        ("object.?metadata.?name", MessageOutcome(message="web")),
        (
            "format.dns1035Label().validate(object.metadata.labels.tier).orValue([]).join('; ')",
            MessageOutcome(
                message="a DNS-1035 label must consist of lower case alphanumeric characters or "
                "'-', start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')"
            ),
        ),
        (
            "object.?metadata.?missing",
            MessageOutcome(error="expected message expression to have a string result, got <nil>"),
        ),
    ],
)
def test_optional_messages(engine: CelEngine, source: str, outcome: MessageOutcome) -> None:
    activation: dict[str, Any] = {"object": json_to_cel(OBJ), "result": True}
    assert engine.evaluate_message(source, activation) == outcome
