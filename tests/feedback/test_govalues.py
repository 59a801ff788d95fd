"""Go's view of values: encoding/json text, reflect type names, fmt %v."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocmkit.govalues import (
    GoInt,
    GoJSONError,
    GoUint8,
    JSONTooLong,
    go_format_value,
    go_marshal,
    go_type_name,
)


def reference(value: Any) -> str:
    """Go's encoding of float-free data, built from Python's json module: the same
    compact form with sorted keys, plus Go's HTML and line-separator escapes."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


FLOAT_FREE = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=500, deadline=None)
@given(FLOAT_FREE)
def test_marshal_matches_reference(value: Any) -> None:
    encoded = go_marshal(value)
    assert encoded == reference(value)
    assert json.loads(encoded) == value


@settings(max_examples=1000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_encoding_round_trips_in_go_notation(number: float) -> None:
    encoded = go_marshal(number)
    assert float(encoded) == number
    magnitude = abs(number)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        mantissa, _, exponent = encoded.partition("e")
        assert exponent[0] in "+-"
        assert not exponent[1:].startswith("0")  # Go writes e-7, not e-07
        assert not mantissa.endswith(("0", "."))
    else:
        assert "e" not in encoded
        assert not encoded.endswith(".0")


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0.0, "0"),
        (-0.0, "-0"),
        (1.0, "1"),
        (2.5, "2.5"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-10, "1.5e-10"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.2345e25, "1.2345e+25"),
        (123456789012345678.0, "123456789012345680"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
    ],
)
def test_float_examples(number: float, text: str) -> None:
    assert go_marshal(number) == text


def test_integers_past_int64_encode_as_float64() -> None:
    assert go_marshal(2**63) == "9223372036854776000"
    assert go_marshal(10**30) == "1e+30"


def test_string_escapes() -> None:
    assert (
        go_marshal('a"b\\c\n\r\t\b\f\x01\x1f\x7f')
        == '"a\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\x7f"'
    )
    assert go_marshal("<script>&</script>") == '"\\u003cscript\\u003e\\u0026\\u003c/script\\u003e"'
    assert go_marshal("\u2028\u2029é日本") == '"\\u2028\\u2029é日本"'
    # A lone surrogate is invalid UTF-8 to Go: U+FFFD.
    assert go_marshal("a\ud800b") == '"a\ufffdb"'


def test_keys_sorted_and_escaped() -> None:
    assert go_marshal({"b": 1, "a<": 2, "é": 3, "Z": 4}) == '{"Z":4,"a\\u003c":2,"b":1,"é":3}'


def test_go_only_types() -> None:
    assert go_marshal([GoInt(5), GoUint8(97), True]) == "[5,97,true]"


@pytest.mark.parametrize(
    ("value", "text"), [(math.nan, "NaN"), (math.inf, "+Inf"), (-math.inf, "-Inf")]
)
def test_unsupported_floats(value: float, text: str) -> None:
    with pytest.raises(GoJSONError) as info:
        go_marshal({"x": [value]})
    assert str(info.value) == f"json: unsupported value: {text}"


def test_unsupported_type() -> None:
    with pytest.raises(GoJSONError, match=r"^json: unsupported type: set$"):
        go_marshal({"x": {1, 2}})


def test_length_limit_stops_early() -> None:
    assert go_marshal(["ab"], limit=6) == '["ab"]'
    with pytest.raises(JSONTooLong):
        go_marshal(["ab"], limit=5)
    with pytest.raises(JSONTooLong):
        go_marshal([["x" * 10] * 10**6], limit=100)


def test_deep_nesting_is_iterative() -> None:
    value: Any = 1
    for _ in range(10_000):
        value = [value]
    assert go_marshal(value) == "[" * 10_000 + "1" + "]" * 10_000
    assert go_format_value(value, limit=50).endswith("...")


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "<nil>"),
        (True, "bool"),
        (3, "int64"),
        (2**63, "float64"),
        (1.5, "float64"),
        ("s", "string"),
        ({}, "map[string]interface {}"),
        ([], "[]interface {}"),
        (GoInt(1), "int"),
        (GoUint8(1), "uint8"),
    ],
)
def test_type_names(value: Any, name: str) -> None:
    assert go_type_name(value) == name


def test_format_value() -> None:
    value = {"b": [1, "x", None, True], "a": {"z": 1e6, "y": 123456.0, "w": 1e-5, "v": 0.0001}}
    assert (
        go_format_value(value) == "map[a:map[v:0.0001 w:1e-05 y:123456 z:1e+06] b:[1 x <nil> true]]"
    )
    assert go_format_value([]) == "[]"
    assert go_format_value({}) == "map[]"
    assert go_format_value(1.23456789e8) == "1.23456789e+08"
    assert go_format_value("x" * 2000).endswith("x...")
    assert len(go_format_value("x" * 2000)) == 1024 + 3
