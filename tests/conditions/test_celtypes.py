"""CEL conversions and operators on the types cel-go has overloads for, in cel-go's words.

Every ``expression`` here is also evaluated by cel-go itself in
tests/conditions/test_cel_oracle.py (the realkube leg). ``dyn()`` keeps cel-go's
type checker out of the way, so both engines meet the operands at run time.
"""

from __future__ import annotations

import pytest

from tests.conditions.test_celengine import error, true
from workagent.conditions.celengine import CelEngine


@pytest.mark.parametrize(
    "expression",
    [
        # Go's time.ParseDuration.
        "duration('1h30m') == duration('90m') && duration('+5m') == duration('300s')",
        "duration('-1.5s') == -dyn(duration('1500ms')) && duration('.5s') == duration('500ms')",
        "duration('0') == duration('0s') && duration('1.s') == duration('1s')",
        "duration('1us') == duration('1000ns') && duration('1\u00b5s') == duration('1\u03bcs')",
        "duration('2562047h') > duration('1h')",
        # RFC 3339 timestamps, any offset Go takes, fractions kept to the microsecond.
        "timestamp('2020-01-01T00:00:00+01:00') == timestamp('2019-12-31T23:00:00Z')",
        "timestamp('2020-01-01T00:00:00-05:30') == timestamp('2020-01-01T05:30:00Z')",
        "timestamp('2020-01-01T00:00:00+24:00') == timestamp('2019-12-31T00:00:00Z')",
        "timestamp('2020-01-01T00:00:00,5Z') == timestamp('2020-01-01T00:00:00.5Z')",
        "timestamp(0) == timestamp('1970-01-01T00:00:00Z')",
        "timestamp(253402300799) == timestamp('9999-12-31T23:59:59Z')",
        "int(timestamp('2020-01-01T00:00:00Z')) == 1577836800",
        # string() keeps the offset a timestamp was written with, and a duration's fraction.
        "string(timestamp('2020-01-01T05:00:00.5+05:00')) == '2020-01-01T05:00:00.5+05:00'",
        "string(timestamp('2020-01-01T00:00:00-00:00')) == '2020-01-01T00:00:00Z'",
        "string(timestamp('2020-01-01T05:00:00+05:00') + duration('1h')) == '2020-01-01T06:00:00+05:00'",
        "timestamp('2020-01-01T05:00:00+05:00').getHours() == 0",
        "string(duration('1h2m3.5s')) == '3723.5s' && string(duration('0s')) == '0s'",
        "timestamp('2020-01-01T00:00:00Z') + duration('1h2m3.5s') == timestamp('2020-01-01T01:02:03.5Z')",
        "int(duration('1s')) == 1000000000",
        # Arithmetic on the types that have it.
        "timestamp('2020-01-01T00:00:00Z') + duration('1h') == timestamp('2020-01-01T01:00:00Z')",
        "duration('1h') + timestamp('2020-01-01T00:00:00Z') == timestamp('2020-01-01T01:00:00Z')",
        "timestamp('2020-01-02T00:00:00Z') - timestamp('2020-01-01T00:00:00Z') == duration('24h')",
        "[1] + [2] == [1, 2] && b'a' + b'b' == b'ab' && 'a' + 'b' == 'ab'",
        "-dyn(duration('1s')) == duration('-1s')",
        "dyn(quantity('1')) != dyn(-1)",  # != answers; == has no overload
        # Kubernetes' float of a quantity: its digits times a power of ten, in float64.
        "quantity('1.23456789').asApproximateFloat() == 1.2345678900000001",
        "quantity('0.1').sub(quantity('1.5')).asApproximateFloat() == -1.4000000000000001",
        "quantity('0.1').add(quantity('1Gi')).asApproximateFloat() == 1073741824.1000001",
        "quantity('500m').asApproximateFloat() == 0.5 && quantity('1G').asApproximateFloat() == 1e9",
    ],
)
def test_true(engine: CelEngine, expression: str) -> None:
    true(engine, expression)


_DURATION_ERROR = "type conversion error from 'string' to 'google.protobuf.Duration'"
_TIMESTAMP_ERROR = "type conversion error from 'string' to 'google.protobuf.Timestamp'"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("duration('1d') == duration('24h')", _DURATION_ERROR),
        ("duration('1') == duration('1s')", _DURATION_ERROR),
        ("duration(' 1s') == duration('1s')", _DURATION_ERROR),
        ("duration('1S') == duration('1s')", _DURATION_ERROR),
        ("duration('.s') == duration('1s')", _DURATION_ERROR),
        ("duration('2562048h') > duration('1h')", _DURATION_ERROR),
        ("duration(dyn(1)) == duration('1s')", "no such overload: duration(int)"),
        ("timestamp('2020-01-01') < timestamp('2021-01-01T00:00:00Z')", _TIMESTAMP_ERROR),
        ("timestamp('2020-01-01t00:00:00Z') < timestamp('2021-01-01T00:00:00Z')", _TIMESTAMP_ERROR),
        ("timestamp('2020-02-30T00:00:00Z') < timestamp('2021-01-01T00:00:00Z')", _TIMESTAMP_ERROR),
        (
            "timestamp('2020-01-01T00:00:00+25:00') < timestamp('2021-01-01T00:00:00Z')",
            _TIMESTAMP_ERROR,
        ),
        (
            "timestamp('0000-01-01T00:00:00Z') < timestamp('2021-01-01T00:00:00Z')",
            "timestamp overflow",
        ),
        (
            "timestamp('9999-12-31T23:00:00-01:00') < timestamp('2021-01-01T00:00:00Z')",
            "timestamp overflow",
        ),
        ("timestamp(253402300800) < timestamp('2021-01-01T00:00:00Z')", "timestamp overflow"),
        (
            "timestamp(dyn(2u)) < timestamp('2021-01-01T00:00:00Z')",
            "no such overload: timestamp(uint)",
        ),
        # Go's durations are int64 nanoseconds; timestamps end with year 9999.
        ("duration('2562047h') + duration('2562047h') > duration('1h')", "integer overflow"),
        (
            "timestamp('9999-12-31T23:59:59Z') - timestamp('0001-01-01T00:00:00Z') > duration('1h')",
            "integer overflow",
        ),
        (
            "timestamp('9999-12-31T23:59:59Z') + duration('1h') > timestamp('2020-01-01T00:00:00Z')",
            "timestamp overflow",
        ),
        # Conversions take only what cel-go converts.
        ("int(dyn(true)) == 1", "no such overload: int(bool)"),
        ("int(dyn(null)) == 0", "no such overload: int(null_type)"),
        ("double(dyn(true)) == 1.0", "no such overload: double(bool)"),
        (
            "uint(dyn(timestamp('2020-01-01T00:00:00Z'))) == 1u",
            "no such overload: uint(google.protobuf.Timestamp)",
        ),
        ("bytes(dyn([])) == b''", "no such overload: bytes(list)"),
        # Operators: no overload for these operands. cel-go names the operator when the
        # left operand's type has none of it at all.
        ("dyn(1) + dyn(true) == 2", "no such overload"),
        ("dyn(true) + dyn(1) == 2", "no such overload: _+_"),
        ("dyn('a') % dyn([1]) == 'a'", "no such overload"),
        ("dyn(b'x') % dyn([1]) == b'x'", "no such overload: _%_"),
        ("dyn(1.5) % dyn(1.0) == 0.5", "no such overload: _%_"),
        ("dyn(duration('1s')) * dyn(2) == duration('2s')", "no such overload"),
        ("dyn([1]) * dyn(2) == [1, 1]", "no such overload: _*_"),
        ("dyn({}) < dyn(1)", "no such overload: _<_"),
        ("dyn(null) >= dyn(1)", "no such overload: _>=_"),
        ("dyn(true) < dyn(1)", "no such overload"),
        ("dyn(quantity('1')) < dyn(quantity('2'))", "no such overload: _<_"),
        ("-dyn(2u) == 1u", "no such overload: -_"),
        ("-dyn('a') == 'a'", "no such overload"),
        ("dyn(quantity('1')) == dyn(-1)", "no such overload"),
        # Indexing a value that holds nothing; contains and friends of strings only.
        ("dyn(1)[0] == 1", "no such key: 0"),
        ("dyn({'a': 1})[2.0] == 1", "no such key: 2"),
        ("dyn(b'x').contains(dyn(b'x'))", "no such overload"),
        ("dyn([1]).contains(dyn(1))", "no such overload"),
        ("'abc'.matches(dyn(1))", "no such overload"),
        (
            "dyn(timestamp('2020-01-01T00:00:00Z')).getHours('Mars/Olympus') == 0",
            "unknown time zone Mars/Olympus",
        ),
        (
            "dyn(duration('1s')).getHours('UTC') == 0",
            "no such overload: getHours(google.protobuf.Duration, string)",
        ),
        ("dyn(1.5).family() == 1", "no such overload: family(double)"),
        ("dyn('a').containsIP('1.2.3.4')", "no such overload: containsIP(string, string)"),
    ],
)
def test_errors(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression) == message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # A regex's backslash must be escaped or raw, as cel-go's lexer wants it.
        (
            "object.metadata.name.matches('\\d+')",
            "ERROR: <input>:1:30: Syntax error: token recognition error at: ''\\d'",
        ),
        (
            "'a\\x4' == 'a'",
            "ERROR: <input>:1:1: Syntax error: token recognition error at: ''a\\x4''",
        ),
        ("'\\18' == 'a'", "ERROR: <input>:1:1: Syntax error: token recognition error at: ''\\18'"),
        ("dyn() == 1", "ERROR: <input>:1:4: found no matching overload for 'dyn' applied to '()'"),
        (
            "string('a', 'b') == ''",
            "ERROR: <input>:1:7: found no matching overload for 'string' applied to '(string, string)'",
        ),
    ],
)
def test_compile_errors(engine: CelEngine, expression: str, message: str) -> None:
    assert error(engine, expression).split("\n", 1)[0] == message


@pytest.mark.parametrize(
    "expression",
    [
        "object.metadata.name.matches('\\\\w+') && object.metadata.name.matches(r'\\w+')",
        "'\\x41\\u00e9\\101' == 'Aé' + 'A'",
        # Field names in backquotes, for keys that are not identifiers.
        "object.metadata.labels.`app` == 'web' && !has(object.metadata.labels.`app.kubernetes.io/name`)",
        "object.metadata.?labels.?`tier`.orValue('') == 'Front'",
    ],
)
def test_literals_and_field_names(engine: CelEngine, expression: str) -> None:
    true(engine, expression)
