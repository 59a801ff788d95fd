"""The CEL engine in-process: compile checks, runtime errors, types and Kubernetes functions.

These run the engine the worker runs, without a worker, to keep them fast.
(The test process may import celpy: it uses the same interpreted runner as
kubesim's CRD validation.)
"""

from __future__ import annotations

from typing import Any

import pytest
from celpy.adapter import json_to_cel

from workagent.conditions.celcheck import MAX_EXPRESSION_CHARS, MAX_SYNTAX_DEPTH
from workagent.conditions.celengine import CelEngine, CompileFailure
from workagent.conditions.protocol import (
    CelProgram,
    ExpressionsOutcome,
    MessageOutcome,
    decode_response,
)
from workagent.quantity import FORMAT_ERROR as QUANTITY_FORMAT
from workagent.quantity import quantity_value

OBJ: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web", "tier": "Front"}},
    "spec": {"replicas": 3},
    "status": {
        "readyReplicas": 2,
        "replicas": 3,
        "ratio": 0.5,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True"},
        ],
        "capacity": "1536Mi",
        "image": "registry.example.com/team/web:v1.2.3",
        "empty": [],
        "nothing": None,
    },
}


def run(engine: CelEngine, *expressions: str, obj: Any = None) -> ExpressionsOutcome:
    activation = {"object": json_to_cel(OBJ if obj is None else obj)}
    return engine.evaluate_expressions(list(expressions), activation)


def value(engine: CelEngine, expression: str) -> Any:
    """The result of one expression, via the message environment (returns any type)."""
    program = engine.compile(expression, frozenset({"object", "result"}))
    assert not isinstance(program, CompileFailure), program
    return program.evaluate({"object": json_to_cel(OBJ)})


def true(engine: CelEngine, expression: str) -> None:
    outcome = run(engine, expression)
    assert outcome == ExpressionsOutcome("True", "ConditionRuleEvaluated"), (expression, outcome)


def error(engine: CelEngine, expression: str) -> str:
    outcome = run(engine, expression)
    assert outcome.status == "False" and outcome.reason == "ConditionRuleExpressionError", outcome
    assert outcome.error is not None
    return outcome.error


# --------------------------------------------------------------------------
# Evaluation order and results
# --------------------------------------------------------------------------


def test_all_true_and_no_expressions(engine: CelEngine) -> None:
    assert run(engine) == ExpressionsOutcome("True", "ConditionRuleEvaluated")
    assert run(engine, "true", "object.spec.replicas == 3") == ExpressionsOutcome(
        "True", "ConditionRuleEvaluated"
    )


def test_first_false_stops_before_a_later_error(engine: CelEngine) -> None:
    assert run(engine, "true", "false", "object.missing") == ExpressionsOutcome(
        "False", "ConditionRuleEvaluated"
    )


def test_an_error_before_a_false_wins(engine: CelEngine) -> None:
    assert error(engine, "object.missing") == "no such key: missing"
    assert run(engine, "object.missing", "false").error == "no such key: missing"


@pytest.mark.parametrize(
    ("expression", "type_name"),
    [
        ("object.metadata.name", "string"),
        ("'a' + 'b'", "string"),
        ("object.spec.replicas", "int64"),
        ("1u", "uint64"),
        ("object.status.ratio", "float64"),
        ("b'x'", "[]uint8"),
        ("object.status.nothing", "structpb.NullValue"),
        ("object.status.conditions", "[]interface {}"),
        ("object.metadata", "map[string]interface {}"),
        ("timestamp('2024-01-01T00:00:00Z')", "time.Time"),
        ("duration('1s')", "time.Duration"),
        ("quantity('1Gi')", "*resource.Quantity"),
        ("url('https://a/b')", "*url.URL"),
        ("ip('1.2.3.4')", "netip.Addr"),
        ("cidr('1.2.3.0/24')", "netip.Prefix"),
        ("semver('1.2.3')", "semver.Version"),
    ],
)
def test_non_bool_results(engine: CelEngine, expression: str, type_name: str) -> None:
    assert error(engine, expression) == f"expected bool result, got {type_name}"


# --------------------------------------------------------------------------
# Compile errors (cel-go wording and display format)
# --------------------------------------------------------------------------


def test_undeclared_reference(engine: CelEngine) -> None:
    assert error(engine, "badcel") == (
        "ERROR: <input>:1:1: undeclared reference to 'badcel' (in container '')\n | badcel\n | ^"
    )


def test_undeclared_function_points_at_the_call(engine: CelEngine) -> None:
    assert error(engine, "object.metadata.name.shout()") == (
        "ERROR: <input>:1:27: undeclared reference to 'shout' (in container '')\n"
        " | object.metadata.name.shout()\n"
        " | ..........................^"
    )
    assert error(engine, "nope(1)").startswith(
        "ERROR: <input>:1:5: undeclared reference to 'nope' (in container '')"
    )


def test_undeclared_even_where_short_circuit_would_skip_it(engine: CelEngine) -> None:
    # cel-go rejects it at compile time, whatever the object.
    assert "undeclared reference to 'nope'" in error(engine, "false && nope()")


def test_result_is_not_a_rule_variable(engine: CelEngine) -> None:
    assert "undeclared reference to 'result'" in error(engine, "result")


def test_several_errors_in_source_order(engine: CelEngine) -> None:
    text = error(engine, "a ||\n  b")
    assert text == (
        "ERROR: <input>:1:1: undeclared reference to 'a' (in container '')\n | a ||\n | ^\n"
        "ERROR: <input>:2:3: undeclared reference to 'b' (in container '')\n |   b\n | ..^"
    )


def test_comprehension_variables_are_scoped(engine: CelEngine) -> None:
    true(engine, "object.status.conditions.exists(c, c.type == 'Available')")
    assert "undeclared reference to 'c'" in error(
        engine, "object.status.conditions.exists(c, true) && c.type == 'x'"
    )


def test_macro_variable_must_be_a_name(engine: CelEngine) -> None:
    assert "argument must be a simple name" in error(engine, "[1].all(1, true)")


def test_has_needs_a_field_selection(engine: CelEngine) -> None:
    assert "invalid argument to has() macro" in error(engine, "has(object)")
    true(engine, "has(object.status.readyReplicas) && !has(object.status.missing)")


def test_syntax_errors(engine: CelEngine) -> None:
    assert error(engine, "1 +") == (
        "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>'\n | 1 +\n | ...^"
    )
    assert error(engine, "object.spec ## 1").startswith(
        "ERROR: <input>:1:13: Syntax error: token recognition error at: '#'"
    )


def test_unsupported_syntax_is_a_compile_error(engine: CelEngine) -> None:
    assert "undeclared reference to 'reduce'" in error(engine, "[1].reduce(a, b, 0, a + b) == 1")
    assert "unsupported syntax '.size(...)'" in error(engine, ".size([1]) == 1")


def test_format_calls_are_checked_as_cel_go_checks_them(engine: CelEngine) -> None:
    # A literal template with a literal list: cel-go's format validator, at compile time.
    assert error(engine, "'%d'.format(['a']) == ''") == (
        "ERROR: <input>:1:14: error during formatting: decimal clause can only be used on ints, "
        "uints, and doubles, was given string\n | '%d'.format(['a']) == ''\n | .............^"
    )
    assert error(engine, "'%s'.format([1, object.kind]) == ''").startswith(
        "ERROR: <input>:1:12: too many arguments supplied to string.format (expected 1, got 2)"
    )
    assert error(engine, "'%s %s'.format([object.kind]) == ''").startswith(
        "ERROR: <input>:1:15: index 1 out of range"
    )
    # What cel-go cannot know before evaluation is checked then, with the same words.
    assert error(engine, "'%d'.format([object.kind]) == ''") == (
        "error during formatting: decimal clause can only be used on ints, uints, and doubles, "
        "was given string"
    )


def test_too_long(engine: CelEngine) -> None:
    text = "true && " * 600 + "true"
    assert len(text) > MAX_EXPRESSION_CHARS
    assert error(engine, text) == (
        f"ERROR: <input>:-1:0: expression code point size exceeds limit: size: {len(text)}, "
        f"limit {MAX_EXPRESSION_CHARS}"
    )


def test_too_deep(engine: CelEngine) -> None:
    text = "(" * 60 + "true" + ")" * 60
    assert f"expression recursion limit exceeded: deeper than {MAX_SYNTAX_DEPTH}" in error(
        engine, text
    )
    long_chain = " + ".join(["1"] * 300) + " > 0"
    assert "expression recursion limit exceeded" in error(engine, long_chain)


def test_reasonable_nesting_is_fine(engine: CelEngine) -> None:
    true(engine, "(" * 30 + "true" + ")" * 30)
    true(engine, " + ".join(["1"] * 150) + " == 150")


def test_compiled_programs_are_cached(engine: CelEngine) -> None:
    first = engine.compile("object.spec.replicas > 0", frozenset({"object"}))
    assert engine.compile("object.spec.replicas > 0", frozenset({"object"})) is first
    failure = engine.compile("nope", frozenset({"object"}))
    assert engine.compile("nope", frozenset({"object"})) is failure


def test_cache_is_bounded() -> None:
    small = CelEngine(cache_size=2)
    one = small.compile("1 == 1", frozenset({"object"}))
    small.compile("2 == 2", frozenset({"object"}))
    small.compile("3 == 3", frozenset({"object"}))
    assert small.compile("1 == 1", frozenset({"object"})) is not one


# --------------------------------------------------------------------------
# Runtime errors (cel-go wording, never celpy's activation dump)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("object.status.missing == 1", "no such key: missing"),
        ("object.status['missing'] == 1", "no such key: missing"),
        ("object.status.conditions[5].type == 'x'", "index out of bounds: 5"),
        ("1 / 0 == 1", "division by zero"),
        ("1 % 0 == 1", "modulus by zero"),
        ("9223372036854775807 + 1 > 0", "integer overflow"),
        ("-9223372036854775808 % -1 == 0", "integer overflow"),
        ("object.metadata.name + dyn(1) == 'x'", "no such overload"),
        ("object.metadata.name.size() > object.metadata", "no such overload"),
        ("int('x') == 1", "type conversion error from 'string' to 'int'"),
        ("int(' 1') == 1", "type conversion error from 'string' to 'int'"),
        ("uint('+1') == 1u", "type conversion error from 'string' to 'uint'"),
        ("double('1e400') > 0.0", "type conversion error from 'string' to 'double'"),
        ("int(1e20) == 1", "integer overflow"),
        ("uint(-1) == 1u", "unsigned integer overflow"),
        ("object.metadata.name.foo == 'x'", "no such key: foo"),
        ("object.status.conditions.foo == 1", "unsupported index type 'string' in list"),
        ("object.status.empty.min() == 0", "min called on empty list"),
        ("[object.status.ratio * 2].size() == 1", "no such overload"),
        ("1u + object.spec.replicas > 0u", "no such overload"),
        ("object.status.conditions.map(c, c.missing).size() == 2", "no such key: missing"),
        ("!object.status.missing", "no such key: missing"),
        ("object.status.missing ? true : false", "no such key: missing"),
        ("-object.status.missing < 0", "no such key: missing"),
        ("'abc'.indexOf(object.status.missing) == 0", "no such key: missing"),
    ],
)
def test_runtime_errors(engine: CelEngine, expression: str, message: str) -> None:
    text = error(engine, expression)
    assert text == message
    assert "activation" not in text


def test_message_expression(engine: CelEngine) -> None:
    activation = {"object": json_to_cel(OBJ)}
    ok = engine.evaluate_message('"ready " + string(object.status.readyReplicas)', activation)
    assert ok == MessageOutcome(message="ready 2")
    assert engine.evaluate_message("''", activation) == MessageOutcome()
    assert engine.evaluate_message("badcel", activation) == MessageOutcome(
        error="ERROR: <input>:1:1: undeclared reference to 'badcel' (in container '')"
    )
    assert engine.evaluate_message("object.nope", activation) == MessageOutcome(
        error="no such key: nope"
    )
    assert engine.evaluate_message("1", activation) == MessageOutcome(
        error="expected message expression to have a string result, got int64"
    )


# --------------------------------------------------------------------------
# Equality and ordering as cel-go (heterogeneous equality, cross-type numbers)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        # dyn: cel-go's checker rejects the same comparisons of literals at compile time.
        "dyn(1) == 1.0",
        "dyn(1u) == 1",
        "dyn(1) != 'a'",
        "!(dyn(true) == 1)",
        "null == null",
        "object.status.nothing == null",
        "[1, 2] == [1.0, 2u]",
        "{'a': dyn(1)} == {'a': 1.0}",
        "dyn(1) < 1.5 && dyn(2.5) > 2 && dyn(1u) <= 1 && dyn(3) >= 2.99",
        "object.status.readyReplicas >= object.status.ratio * double(object.spec.replicas)",
        "dyn(1.0) in [1, 2]",
        "'app' in object.metadata.labels",
        "!('x' in object.metadata.labels)",
        "type(1) == int && type('a') == string",
    ],
)
def test_equality_and_ordering(engine: CelEngine, expression: str) -> None:
    true(engine, expression)


def test_ordering_across_kinds_is_an_error(engine: CelEngine) -> None:
    assert error(engine, "dyn(1) < 'a'") == "no such overload"


# --------------------------------------------------------------------------
# OCM and Kubernetes functions
# --------------------------------------------------------------------------


def test_has_conditions(engine: CelEngine) -> None:
    # OCM's own test case, verbatim.
    true(
        engine,
        """hasConditions(object.status)
            && !hasConditions({})
            && !hasConditions("badtype")
            && !hasConditions({"conditions": []})
            && !hasConditions({"conditions": null})""",
    )
    assert error(engine, "hasConditions(object.nope)") == "no such key: nope"


# The URL, IP, CIDR and semver cases are Kubernetes' documented examples and
# tests plus edge cases; their values and messages are what cel-go v0.29.2 with
# k8s.io/apiserver v0.35.4 (OCM's versions) answers.
_URL = "url('https://example.com:80/path?query=val#fragment')"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # Strings.
        ("'hello'.charAt(1)", "e"),
        ("'hello'.charAt(5)", ""),
        ("'hello'.indexOf('l')", 2),
        ("'hello'.indexOf('l', 3)", 3),
        ("'hello'.indexOf('')", 0),
        ("'hello'.indexOf('z')", -1),
        ("'hello'.indexOf('h', 9)", -1),
        ("'hello'.indexOf('', 9)", 5),
        ("'hello'.lastIndexOf('l')", 3),
        ("'hello'.lastIndexOf('l', 2)", 2),
        ("'hello'.lastIndexOf('')", 5),
        ("'héllo'.indexOf('l')", 2),
        ("'TacoCat'.lowerAscii()", "tacocat"),
        ("'TacoCÆt'.upperAscii()", "TACOCÆT"),
        ("'a-b-c'.replace('-', '+')", "a+b+c"),
        ("'a-b-c'.replace('-', '+', 1)", "a+b-c"),
        ("'a,b,c'.split(',')", ["a", "b", "c"]),
        ("'a,b,c'.split(',', 2)", ["a", "b,c"]),
        ("'a,b,c'.split(',', 0)", []),
        ("'abc'.split('')", ["a", "b", "c"]),
        ("'tacocat'.substring(4)", "cat"),
        ("'tacocat'.substring(0, 4)", "taco"),
        ("'  \\t trim me\\n '.trim()", "trim me"),
        ("'abc'.reverse()", "cba"),
        ("['a', 'b'].join()", "ab"),
        ("['a', 'b'].join(', ')", "a, b"),
        ("'abc'.contains('b') && 'abc'.startsWith('a') && 'abc'.endsWith('c')", True),
        ("'abc'.matches('^a.c$') && !'abc'.matches('^b')", True),
        ("object.status.image.find('v[0-9.]+')", "v1.2.3"),
        ("'a1b22c333'.findAll('[0-9]+')", ["1", "22", "333"]),
        ("'a1b22c333'.findAll('[0-9]+', 2)", ["1", "22"]),
        # Format.
        ("'%s has %d of %d ready'.format([object.metadata.name, 2, 3])", "web has 2 of 3 ready"),
        ("'%.2f%%'.format([66.666])", "66.67%"),
        ("'%s %s %s'.format([true, null, [1, 'a']])", "true null [1, a]"),
        ("'%x %X %o %b'.format([255, 255, 8, 5])", "ff FF 10 101"),
        ("'%e'.format([1234.5])", "1.234500e+03"),
        # Lists.
        ("[1, 2, 3].isSorted() && ![3, 1].isSorted()", True),
        ("[1, 2, 3].sum()", 6),
        ("[].sum()", 0),
        ("[3, 1, 2].min()", 1),
        ("[3, 1, 2].max()", 3),
        ("['a', 'b', 'a'].indexOf('a')", 0),
        ("['a', 'b', 'a'].lastIndexOf('a')", 2),
        # Quantity.
        ("quantity(object.status.capacity).isGreaterThan(quantity('1Gi'))", True),
        ("quantity('1536Mi').compareTo(quantity('1.5Gi'))", 0),
        ("quantity('500m').isLessThan(quantity('1'))", True),
        ("quantity('1k') == quantity('1000')", True),
        ("isQuantity('1Gi') && !isQuantity('1GiB')", True),
        ("quantity('2Ki').asInteger()", 2048),
        ("quantity('1.5').asApproximateFloat()", 1.5),
        ("sign(quantity('-3'))", -1),
        ("quantity('1.5').isInteger()", False),
        ("quantity('1Gi').add(quantity('1Gi')).compareTo(quantity('2Gi'))", 0),
        ("sign(quantity('1').sub(2))", -1),
        # URL.
        (f"{_URL}.getScheme()", "https"),
        (f"{_URL}.getHost()", "example.com:80"),
        (f"{_URL}.getHostname()", "example.com"),
        (f"{_URL}.getPort()", "80"),
        (f"{_URL}.getEscapedPath()", "/path"),
        (f"{_URL}.getQuery()", {"query": ["val"]}),
        ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
        ("url('https://example.com/').getPort()", ""),
        ("url('https://[::1]:80/path').getHost()", "[::1]:80"),
        ("url('https://[::1]:80/path').getHostname()", "::1"),
        ("url('https://h/?q=1&q=2&a=b+c&x;y&bad=%zz').getQuery()", {"q": ["1", "2"], "a": ["b c"]}),
        ("url('/absolute-path').getEscapedPath()", "/absolute-path"),
        ("url('mailto:a@b.c').getScheme() + url('mailto:a@b.c').getEscapedPath()", "mailto"),
        ("isURL('https://example.com/') && isURL('/path') && !isURL('example.com/')", True),
        ("url('HTTPS://host/a') == url('https://host/a')", True),
        ("url('https://host/a%41') == url('https://host/aA')", False),
        ("url('https://host/a') == url('https://host/a#x')", False),
        # IP.
        ("ip('192.168.0.1').family()", 4),
        ("ip('::1').family()", 6),
        ("ip.isCanonical('2001:db8::abcd')", True),
        ("ip.isCanonical('2001:DB8::ABCD')", False),
        ("ip.isCanonical('2001:db8::0:0:0:abcd')", False),
        ("string(ip('2001:0db8:0:0:1:0:0:1'))", "2001:db8::1:0:0:1"),
        ("ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified()", True),
        ("ip('127.0.0.1').isLoopback() && ip('::1').isLoopback()", True),
        ("ip('224.0.0.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast()", True),
        ("ip('224.0.1.1').isLinkLocalMulticast() || ip('fd00::1').isLinkLocalMulticast()", False),
        ("ip('169.254.169.254').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast()", True),
        ("ip('192.168.0.1').isLinkLocalUnicast() || ip('fd80::1').isLinkLocalUnicast()", False),
        ("ip('192.168.0.1').isGlobalUnicast() && ip('2001:db8::abcd').isGlobalUnicast()", True),
        ("ip('255.255.255.255').isGlobalUnicast() || ip('ff00::1').isGlobalUnicast()", False),
        (
            "isIP('::1') && !isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0') && !isIP('01.2.3.4')",
            True,
        ),
        ("ip('::1') == ip('0:0::1') && ip('1.2.3.4') != ip('1.2.3.5')", True),
        ("object.metadata.name == ip('1.2.3.4')", False),
        ("type(ip('1.2.3.4')) == net.IP && type(cidr('1.2.3.0/24')) == net.CIDR", True),
        # CIDR.
        ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", True),
        ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", False),
        ("cidr('192.168.0.0/24').containsIP('::1')", False),
        ("cidr('2001:db8::/32').containsIP('2001:db8::1')", True),
        ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))", True),
        ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')", False),
        ("cidr('2001:db8::/32').containsCIDR('2001:db8::/33')", True),
        ("string(cidr('192.168.0.1/24').ip())", "192.168.0.1"),
        ("string(cidr('192.168.0.1/24').masked())", "192.168.0.0/24"),
        ("string(cidr('2001:db8:1::/32').masked())", "2001:db8::/32"),
        ("cidr('192.168.0.0/24').prefixLength()", 24),
        ("isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0') && !isCIDR('::ffff:1.2.3.4/120')", True),
        ("cidr('10.0.0.1/8') == cidr('10.0.0.0/8')", False),
        ("cidr('10.0.0.1/8').masked() == cidr('10.0.0.0/8')", True),
        # Semver.
        ("semver('1.2.3-rc.1+build.5').major()", 1),
        ("semver('1.2.3-rc.1+build.5').minor()", 2),
        ("semver('1.2.3-rc.1+build.5').patch()", 3),
        ("isSemver('1.2.3-beta.1+build.1') && !isSemver('v1.0.0') && !isSemver('1.1')", True),
        ("semver('1.0.0').isLessThan(semver('1.2.3'))", True),
        ("semver('1.2.3').isGreaterThan(semver('1.2.3'))", False),
        ("semver('1.0.0-rc.1').compareTo(semver('1.0.0'))", -1),
        ("semver('1.0.0-beta.2').compareTo(semver('1.0.0-beta.11'))", -1),
        ("semver('1.0.0-alpha.beta').compareTo(semver('1.0.0-alpha.1'))", 1),
        ("semver('1.0.0+a') == semver('1.0.0+b')", True),
        # string() prints as cel-go does.
        ("string(true) + string(1.0) + string(1e20)", "true11e+20"),
    ],
)
def test_kubernetes_functions(engine: CelEngine, expression: str, expected: Any) -> None:
    result = value(engine, expression)
    if isinstance(expected, bool):
        assert bool(result) is expected
    else:
        assert result == expected


_CIDR_ERROR = "network address parse error during conversion from string: "
_URL_ERROR = "URL parse error during conversion from string: parse "


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("'abc'.charAt(4) == ''", "index out of range: 4"),
        ("'abc'.indexOf('a', -1) == 0", "index out of range: -1"),
        ("'abc'.substring(2, 1) == ''", "invalid substring range. start: 2, end: 1"),
        ("'abc'.substring(4) == ''", "index out of range: 4"),
        ("'abc'.matches('(') ", "error parsing regexp: missing closing ): `(`"),
        # RE2's errors in Go regexp's words (Go's regexp/syntax is a port of RE2).
        ("'abc'.matches('[a')", "error parsing regexp: missing closing ]: `[a`"),
        ("'abc'.matches('a**')", "error parsing regexp: invalid nested repetition operator: `**`"),
        ("'abc'.matches('x{2,1}')", "error parsing regexp: invalid repeat count: `{2,1}`"),
        ("'abc'.matches('(?P<x')", "error parsing regexp: invalid named capture: `(?P<x`"),
        (
            "'abc'.matches('(?!a)')",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
        ),
        (
            "'abc'.matches('+a')",
            "error parsing regexp: missing argument to repetition operator: `+`",
        ),
        ("'abc'.matches(')')", "error parsing regexp: unexpected ): `)`"),
        ("'abc'.matches('[z-a]')", "error parsing regexp: invalid character class range: `z-a`"),
        (
            "'abc'.matches(r'\\')",
            "error parsing regexp: trailing backslash at end of expression: ``",
        ),
        (r"'abc'.matches(r'a\C')", "error parsing regexp: invalid escape sequence: `\\C`"),
        (
            "'abc'.find(object.kind + '(') == ''",
            "Illegal regex: error parsing regexp: missing closing ): `Deployment(`",
        ),
        ("sign(quantity('1GiB')) == 1", "quantities must match the regular expression"),
        ("quantity('1.5').asInteger() == 1", "cannot convert value to integer"),
        ("'%s %s'.format(dyn(['a'])) == ''", "index 1 out of range"),
        ("[].max() == 0", "max called on empty list"),
        # cel-go's ext lists are not in OCM's environment.
        ("[1, 2].sort() == []", "ERROR: <input>:1:12: undeclared reference to 'sort'"),
        ("object.spec.flatten() == []", "ERROR: <input>:1:20: undeclared reference to 'flatten'"),
        ("object.spec.replicas.reverse() == ''", "no such overload: reverse(int)"),
        ("dyn([3, 1]).reverse() == dyn([])", "no such overload: reverse(list)"),
        ("url('x')", f'{_URL_ERROR}"x": invalid URI for request'),
        ("url('')", f'{_URL_ERROR}"": empty url'),
        (
            "url('https://a:b:80/x')",
            f'{_URL_ERROR}"https://a:b:80/x": invalid port ":b:80" after host',
        ),
        ("url('https://host/a%zz')", f'{_URL_ERROR}"https://host/a%zz": invalid URL escape "%zz"'),
        ("url('https://[1.2.3.4]/')", f'{_URL_ERROR}"https://[1.2.3.4]/": invalid IP-literal'),
        (
            "ip('1.2.3')",
            'IP Address "1.2.3" parse error during conversion from string: '
            'ParseAddr("1.2.3"): IPv4 address too short',
        ),
        ("ip('::ffff:1.2.3.4')", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
        ("ip('fe80::1%eth0')", 'IP address "fe80::1%eth0" with zone value is not allowed'),
        (
            "ip('01.2.3.4')",
            'IP Address "01.2.3.4" parse error during conversion from string: '
            'ParseAddr("01.2.3.4"): IPv4 field has octet with leading zero',
        ),
        (
            "ip('2001:db8:::68')",
            'IP Address "2001:db8:::68" parse error during conversion from string: '
            'ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit '
            '(at ":68")',
        ),
        (
            "ip.isCanonical('1.2.3.4.5')",
            'IP Address "1.2.3.4.5" parse error during conversion from string: '
            'ParseAddr("1.2.3.4.5"): IPv4 address too long',
        ),
        ("cidr('1.2.3.4')", f"{_CIDR_ERROR * 2}netip.ParsePrefix(\"1.2.3.4\"): no '/'"),
        (
            "cidr('192.168.0.0/')",
            f'{_CIDR_ERROR * 2}netip.ParsePrefix("192.168.0.0/"): bad bits after slash: ""',
        ),
        (
            "cidr('1.2.3.4/33')",
            f'{_CIDR_ERROR * 2}netip.ParsePrefix("1.2.3.4/33"): prefix length out of range',
        ),
        (
            "cidr('fe80::1%eth0/64')",
            f'{_CIDR_ERROR * 2}netip.ParsePrefix("fe80::1%eth0/64"): '
            "IPv6 zones cannot be present in a prefix",
        ),
        (
            "cidr('::ffff:1.2.3.4/120')",
            f'{_CIDR_ERROR}IPv4-mapped IPv6 address "::ffff:1.2.3.4/120" is not allowed',
        ),
        ("cidr('10.0.0.0/8').containsCIDR('10.0.0.0')", f"{_CIDR_ERROR * 2}netip.ParsePrefix"),
        # Kubernetes turns a bad address string into no such overload here.
        ("cidr('10.0.0.0/8').containsIP('bad')", "no such overload"),
        ("semver('v1.0')", "No Major.Minor.Patch elements found"),
        ("semver('01.2.3')", 'Major number must not contain leading zeroes "01"'),
        ("semver('1.2.3-01')", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("semver('1.2.3+a_b')", 'Invalid character(s) found in build meta data "a_b"'),
        # Equality is each type's own: no such overload against another type, unless
        # the other side is a CEL value (whose equality just answers false). Wrong
        # types are run-time errors here; cel-go rejects most at compile time already.
        ("ip('1.2.3.4') == object.metadata.name", "no such overload"),
        ("semver('1.2.3').compareTo(dyn(quantity('1'))) == 0", "no such overload"),
        ("string(dyn(url('https://a/b'))) == ''", "no such overload"),
        ("dyn(ip('1.2.3.4')).getHost() == ''", "no such overload"),
        (
            "'%s'.format([dyn(ip('1.2.3.4'))]) == ''",
            "error during formatting: string clause can only be used on strings, bools, bytes, "
            "ints, doubles, maps, lists, types, durations, and timestamps, was given net.IP",
        ),
    ],
)
def test_function_errors(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression).startswith(message)


def test_huge_string_results_count_as_over_budget(engine: CelEngine) -> None:
    obj = {"data": "x" * 100_000}
    outcome = run(engine, "object.data.replace('', object.data).size() > 0", obj=obj)
    assert outcome == ExpressionsOutcome(
        "False", "ConditionRuleExpressionError", "CEL evaluation budget exceeded"
    )


def test_library_names_compile(engine: CelEngine) -> None:
    true(engine, "'1.2.3.4' != string(ip('1.2.3.4')) || ip.isCanonical('1.2.3.4')")
    true(engine, "!(ip('1.2.3.4') == null) && url('/a') != null")
    # Only the qualified name is a function; the method alone is not.
    assert "undeclared reference to 'isCanonical'" in error(engine, "'1.2.3.4'.isCanonical()")
    assert "undeclared reference to 'net'" in error(engine, "type(1) == net.URL")


@pytest.mark.parametrize(
    "expression",
    [
        # cel-go's escapes, \? and \` among them (celpy alone keeps those two as written).
        r"'a\?b' == 'a?b'",
        r"'a\`b' == 'a`b'",
        r"'''a\?''' == 'a?'",
        r"b'\?' == b'?'",
        r"'a\\?b' == 'a\\' + '?b'",
        r"r'a\?' == 'a\\?'",
        r"'%s\?'.format(['x']) == 'x?'",
        r"'a?'.matches('a\?')",
        r"'\a\b\f\n\r\t\v' == '\x07\x08\x0c\x0a\x0d\x09\x0b'",
        r"'\101\u00e9' == 'Aé' && '\U0001F600'.size() == 1",
        r"b'\xff' == b'\377'",
    ],
)
def test_string_escapes(engine: CelEngine, expression: str) -> None:
    true(engine, expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # cel-go's && and ||: the first operand that is no bool decides the error.
        ("object.metadata.labels || (1 / 0 == 1)", "no such overload"),
        ("object.metadata.labels && object.missing", "no such overload"),
        ("object.missing || object.metadata.labels", "no such key: missing"),
        ("object.missing || object.other", "no such key: missing"),
        ("false || object.metadata.labels", "no such overload"),
    ],
)
def test_logical_operators_with_no_bool(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression) == message


def test_logical_operators_decided_by_either_side(engine: CelEngine) -> None:
    true(engine, "object.metadata.labels || true")
    true(engine, "object.missing || true")
    true(engine, "!(object.missing && false)")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # Kubernetes' ParseQuantity decides which of its errors a bad quantity gets.
        ("quantity('1x') == quantity('1')", QUANTITY_FORMAT),
        ("quantity('') == quantity('1')", QUANTITY_FORMAT),
        ("quantity('1e') == quantity('1')", "unable to parse quantity's suffix"),
        ("quantity('1kk') == quantity('1')", "unable to parse quantity's suffix"),
        ("quantity('--1') == quantity('1')", "unable to parse quantity's suffix"),
        ("quantity('1e9223372036854775808') == quantity('1')", "unable to parse quantity's suffix"),
    ],
)
def test_quantity_errors(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression) == message


@pytest.mark.parametrize(
    "expression",
    [
        # Values as Kubernetes parses them: rounded up to a nano, binary ones capped.
        "quantity('0.1n') == quantity('1n') && quantity('-0.1n') == quantity('-1n')",
        "quantity('1.0000000001') == quantity('1.000000001')",
        "quantity('10Ei') == quantity('9223372036854775807')",
        "quantity('.') == quantity('0') && quantity('+') == quantity('-0')",
        "isQuantity('-.') && quantity('1.G') == quantity('1G')",
        "quantity('1e+3') == quantity('1k') && quantity('1E-3') == quantity('1m')",
    ],
)
def test_quantity_values(engine: CelEngine, expression: str) -> None:
    true(engine, expression)


def test_quantity_exponents_of_any_size_are_cheap() -> None:
    """cel-go (with Kubernetes' inf.Dec) does not return from these; ours is exact at once."""
    assert quantity_value("1e2147483647") > quantity_value("1")
    assert quantity_value("1e-2147483647") == quantity_value("1n")
    assert quantity_value("1e2147483648") == quantity_value("1n")  # Go's int32(2^31)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # cel-go folds over every element: an error in the result stays, a failed test
        # replaces it, so the last failed test is the error (map's first failed f).
        ("[3, 1, 2].filter(y, object.spec.replicas[y] == 1).size() == 0", "no such key: 2"),
        ("[3, 1, 2].map(y, object.spec.replicas[y]).size() == 0", "no such key: 3"),
        ("[3, 1, 2].map(y, y > 1, object.spec.replicas[y]).size() == 0", "no such key: 3"),
        ("[3, 1, 2].map(y, object.spec.replicas[y] == 1, y).size() == 0", "no such key: 2"),
        ("[3, 1, 2].exists_one(y, object.spec.replicas[y] == 1)", "no such key: 2"),
        ("[3, 1, 2].filter(y, y == 3 ? object.x : y).size() == 0", "no such overload"),
        ("[0, 1, 0].map(x, x == 0 ? object.nope : true, x).size() == 0", "no such key: nope"),
    ],
)
def test_folds_report_errors_as_cel_go(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression) == message


@pytest.mark.parametrize(
    "expression",
    [
        "!!1 == 1 && --'a' == 'a' && !!object.spec == object.spec",
        "--5 == 5 && ---5 == -5 && - -5 == 5 && --1.5 == 1.5",
        "-9223372036854775808 < 0 && --9223372036854775807 > 0 && -0x8000000000000000 < 0",
        "!!!false && -(-object.spec.replicas) == 3",
    ],
)
def test_runs_of_unary_operators(engine: CelEngine, expression: str) -> None:
    true(engine, expression)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # An integer to Kubernetes' library only as an int64 with a scale >= 0.
        ("quantity('1k').isInteger() && quantity('1Ki').isInteger()", True),
        ("quantity('1.0').isInteger() || quantity('1000m').isInteger()", False),
        ("quantity('9223372036854775807').isInteger()", False),  # 19 digits: a decimal
        ("quantity('922337203685477580').isInteger()", True),
        ("quantity('1.5Ki').isInteger()", False),
        ("quantity('1').add(quantity('1.0')).isInteger()", False),
        ("quantity('1').sub(quantity('500m')).add(quantity('500m')).isInteger()", False),
        ("quantity('9223372036854775806').add(quantity('1')).isInteger()", False),
        ("quantity('2').sub(1).asInteger() == 1 && quantity('5e3').asInteger() == 5000", True),
    ],
)
def test_quantity_integers_as_kubernetes_stores_them(
    engine: CelEngine, expression: str, expected: bool
) -> None:
    outcome = run(engine, expression)
    assert outcome.status == ("True" if expected else "False"), outcome
    assert outcome.reason == "ConditionRuleEvaluated"


@pytest.mark.parametrize(
    "expression",
    ["0.0/0.0 < 1.0", "1.0 <= 0.0/0.0", "dyn(0.0/0.0) < 'a'", "1u >= dyn(0.0/0.0)"],
)
def test_nan_cannot_be_ordered(engine: CelEngine, expression: str) -> None:
    assert error(engine, expression) == "NaN values cannot be ordered"


_TS = "timestamp('2020-01-01T00:00:00.123Z')"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # cel-go's time zones: an offset's parts read by Go's strconv.Atoi, a name by
        # time.LoadLocation.
        (f"{_TS}.getHours('Nowhere/City') == 0", "unknown time zone Nowhere/City"),
        (f"{_TS}.getHours('utc') == 0", "unknown time zone utc"),
        (f"{_TS}.getHours('a..b') == 0", "time: invalid location name"),
        (f"{_TS}.getHours('/etc') == 0", "time: invalid location name"),
        (f"{_TS}.getHours('{'x' * 256}') == 0", "file name too long"),
        (f"{_TS}.getHours('{'x' * 255}') == 0", f"unknown time zone {'x' * 255}"),
        (f"{_TS}.getHours('1:x') == 0", 'strconv.Atoi: parsing "x": invalid syntax'),
        (f"{_TS}.getHours('é:1') == 0", 'strconv.Atoi: parsing "é": invalid syntax'),
        (
            f"{_TS}.getHours('99999999999999999999:0') == 0",
            'strconv.Atoi: parsing "99999999999999999999": value out of range',
        ),
    ],
)
def test_time_zone_errors(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression) == message


@pytest.mark.parametrize(
    "expression",
    [
        f"{_TS}.getHours('America/New_York') == 19 && {_TS}.getHours('-08:30') == 15",
        f"{_TS}.getHours('+5:7') == 5 && {_TS}.getHours('99:00') == 3",
        f"{_TS}.getMinutes('-0:30') == 30 && {_TS}.getHours('') == 0",
        f"{_TS}.getHours('Local') == 0 && {_TS}.getDayOfWeek('Asia/Kolkata') == 3",
        f"{_TS}.getDayOfYear('-01:00') == 364 && {_TS}.getMonth('-01:00') == 11",
        f"{_TS}.getDate('-01:00') == 31 && {_TS}.getDayOfMonth('-01:00') == 30",
        f"{_TS}.getMilliseconds('+01:00') == 123 && {_TS}.getFullYear('-01:00') == 2019",
    ],
)
def test_time_zones(engine: CelEngine, expression: str) -> None:
    true(engine, expression)


def test_replace_with_a_count_beyond_the_occurrences(engine: CelEngine) -> None:
    true(engine, "'ab'.replace('', '-', 9223372036854775807) == '-a-b-'")
    true(engine, "'aaa'.replace('a', 'b', 2) == 'bba' && 'ab'.replace('', '-', 2) == '-a-b'")


def test_numbers_past_int64_are_doubles_as_go_decodes_them(engine: CelEngine) -> None:
    """A live object may hold any JSON number; Go reads one past int64 as a double, so
    every rule still evaluates (celpy's integers would overflow)."""
    big = {**OBJ, "spec": {"big": 12345678901234567890, "small": -(1 << 63) - 1, "ok": 7}}
    programs = [
        CelProgram(("true",)),
        CelProgram(("object.spec.big > 1.2e19", "type(object.spec.big) == double")),
        CelProgram(("object.spec.small < 0.0", "type(object.spec.ok) == int")),
    ]
    lines = list(engine.run(big, programs))
    outcomes = [decode_response(line, i) for i, line in enumerate(lines)]
    assert outcomes == [ExpressionsOutcome("True", "ConditionRuleEvaluated")] * 3
