"""Decoding that keeps manifests' raw text, and Go's JSON encoding."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubcontroller.webhook.rawjson import parse_keeping_raw
from ocmkit.govalues import go_marshal, json_float

PATH = ("request", "object", "spec", "workload", "manifests")
OTHER = ("request", "object", "spec", "manifestWorkTemplate", "workload", "manifests")

_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda c: (
        st.lists(c, max_size=4)
        | st.dictionaries(
            st.sampled_from(["request", "object", "spec", "workload", "manifests", "x"])
            | st.text(max_size=4),
            c,
            max_size=4,
        )
    ),
    max_leaves=30,
)


def test_keeps_the_exact_text_of_each_item() -> None:
    text = (
        '{ "request" : {"object": {"spec": {"workload": {"manifests": '
        '[ {"a" : 1,  "b": [1, 2]} ,"s\\u00e9", 1.50 , null,{} ]}}}, "uid": "x"} }'
    )
    value, found = parse_keeping_raw(text, [PATH, OTHER])
    assert value == json.loads(text)
    assert found == {PATH: ['{"a" : 1,  "b": [1, 2]}', '"s\\u00e9"', "1.50", "null", "{}"]}


def test_absent_or_other_shapes_are_not_found() -> None:
    for text in (
        "[]",
        '{"request": 1}',
        '{"request": {"object": {"spec": {"workload": {"manifests": {}}}}}}',
        '{"request": {"object": {"spec": {"workload": {"manifests": null}}}}}',
    ):
        value, found = parse_keeping_raw(text, [PATH])
        assert value == json.loads(text)
        assert found == {}


def test_last_duplicate_key_wins() -> None:
    text = (
        '{"request": {"object": {"spec": {"workload": {"manifests": [1]}}}},'
        ' "request": {"object": {"spec": {"workload": {"manifests": [2,  3]}}}}}'
    )
    value, found = parse_keeping_raw(text, [PATH])
    assert value == json.loads(text)
    assert found == {PATH: ["2", "3"]}
    text = '{"request": {"object": {"spec": {"workload": {"manifests": [1]}}}}, "request": 5}'
    assert parse_keeping_raw(text, [PATH]) == (json.loads(text), {})


@pytest.mark.parametrize(
    "text",
    ["", "{", '{"a" 1}', '{"a":1,}', "[1,]", '{"a":1} 2', "NaN", '{"a":Infinity}', "{'a':1}",
     '{"request":{"object":[1 2]}}', '{"request":{"object":{"spec":{"workload":{"manifests":[1 2]}}}}}'],
)  # fmt: skip
def test_invalid_json_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_keeping_raw(text, [PATH, OTHER])


@settings(max_examples=300, deadline=None)
@given(doc=_json, indent=st.sampled_from([None, 0, 2]), manifests=st.lists(_json, max_size=4))
def test_matches_json_loads(doc: Any, indent: int | None, manifests: list[Any]) -> None:
    review = {"request": {"object": {"spec": {"workload": {"manifests": manifests}}}, "doc": doc}}
    for value in (doc, review):
        text = json.dumps(value, indent=indent)
        parsed, found = parse_keeping_raw(text, [PATH, OTHER])
        assert parsed == json.loads(text)
        if value is review:
            assert [json.loads(raw) for raw in found[PATH]] == manifests
            # Each raw text is exactly one JSON value, as it appears in the body.
            assert all(raw in text and raw == raw.strip() for raw in found[PATH])


def test_go_json_matches_go_encoding() -> None:
    value = {"b": 1, "a": [True, None, 1.0, 0.5, "x<y>&z\u2028", "é"], "c": {}}
    assert go_marshal(value, sort_keys=False) == (
        '{"b":1,"a":[true,null,1,0.5,"x\\u003cy\\u003e\\u0026z\\u2028","é"],"c":{}}'
    )


@pytest.mark.parametrize(
    ("number", "text"),
    [(1.0, "1"), (-0.0, "-0"), (0.0, "0"), (1.5, "1.5"), (1e20, "100000000000000000000"),
     (1e21, "1e+21"), (1.5e300, "1.5e+300"), (0.000001, "0.000001"), (1e-7, "1e-7"),
     (1.25e-10, "1.25e-10"), (123456789.125, "123456789.125"), (1e16, "10000000000000000"),
     (0.1, "0.1"), (-2.5e-5, "-0.000025")],
)  # fmt: skip
def test_go_float(number: float, text: str) -> None:
    assert json_float(number) == text
