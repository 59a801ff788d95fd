"""The client-go JSONPath port: parsing, result sets, quirks, and properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ocmkit.govalues import GoInt, GoUint8
from workagent.feedback import jsonpath
from workagent.feedback.jsonpath import (
    MAX_PATH_LENGTH,
    JSONPathError,
    JSONPathEvalError,
    JSONPathParseError,
    Template,
    compile_path,
)

STORE: dict[str, Any] = {
    "kind": "Store",
    "book": [
        {"category": "reference", "author": "Nigel Rees", "price": 8.95, "n": 1},
        {"category": "fiction", "author": "Evelyn Waugh", "price": 12.99, "n": 2},
        {"category": "fiction", "author": "Herman Melville", "price": 8.99, "n": 3},
    ],
    "bicycle": {"color": "red", "price": 19.95},
    "labels": {"a.b": "dotted", "a": {"b": "nested"}, "x/y": "slash", "where": "kw", "*": "star"},
}


def results(path: str, data: Any = STORE) -> list[list[Any]]:
    return compile_path(path).find_results(data)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".kind", [["Store"]]),
        ("$.kind", [["Store"]]),
        ("@.kind", [["Store"]]),
        (".book[0].author", [["Nigel Rees"]]),
        (".book[-1].author", [["Herman Melville"]]),
        (".book[*].n", [[1, 2, 3]]),
        (".book[1:].n", [[2, 3]]),
        (".book[:2].n", [[1, 2]]),
        (".book[::2].n", [[1, 3]]),
        (".book[-2:].n", [[2, 3]]),
        (".book[0:0].n", [[]]),
        (".book[2,0].n", [[3, 1]]),
        (".book[?(@.category=='fiction')].n", [[2, 3]]),
        ('.book[?(@.category!="fiction")].n', [[1]]),
        (".book[?(@.price<9.0)].n", [[1, 3]]),
        (".book[?(@.price<=8.99)].n", [[1, 3]]),
        (".book[?(@.price>9.0)].n", [[2]]),
        (".book[?(@.price>=8.99)].n", [[2, 3]]),
        (".book[?(@.n==2)].author", [["Evelyn Waugh"]]),
        (".book[?(@.n > 1)].n", [[2, 3]]),
        (".book[?(@.price)].n", [[1, 2, 3]]),
        (".book[?(@.isbn)].n", [[]]),
        # Map entries in key order: bicycle before book.
        ("..price", [[19.95, 8.95, 12.99, 8.99]]),
        (".bicycle.*", [["red", 19.95]]),  # map values in key order
        (r".labels.a\.b", [["dotted"]]),
        (".labels.a.b", [["nested"]]),
        # ['a.b'] is parsed as .a.b, as in client-go.
        (".labels['a.b']", [["nested"]]),
        (".labels.x/y", [["slash"]]),
        (".labels.where", [["kw"]]),
        (r".labels.\*", [["star"]]),
        # An empty subscript is the first item.
        (".book[].n", [[1]]),
        # Text outside the action and several actions give several result sets.
        (".kind} and {.bicycle.color", [["Store"], [" and "], ["red"]]),
        ('"quoted"', [["quoted"]]),
        ("true", [[True]]),
        ("1.5", [[1.5]]),
        ("range .book[*]}{.n}{end", [[1], [2], [3]]),
        ("range .book[*]}[{.n}]{end", [["["], [1], ["]"], ["["], [2], ["]"], ["["], [3], ["]"]]),
        ("range .nothing[*]}{.n}{end}{.kind", [["Store"]]),
        ("", [[STORE]]),
    ],
)
def test_evaluation(path: str, expected: list[list[Any]]) -> None:
    assert results(path) == expected


def test_literals_have_go_types() -> None:
    (value,) = results("7")[0]
    assert isinstance(value, GoInt)
    assert results(".kind.*")[0][:2] == [GoUint8(ord("S")), GoUint8(ord("t"))]
    assert all(isinstance(byte, GoUint8) for byte in results(".kind.*")[0])


def test_recursive_descent_yields_containers_in_pre_order() -> None:
    inner: list[Any] = [1, {"c": "x"}]
    data: dict[str, Any] = {"a": {"b": inner}, "d": ""}
    assert results("..", data) == [[data, data["a"], inner, {"c": "x"}, "x"]]


def test_array_stops_at_an_empty_selection() -> None:
    # client-go returns from evalArray as soon as one value selects nothing.
    data = {"lists": [[1, 2], [], [3, 4]]}
    assert results(".lists[*][0:0]", data) == [[]]
    assert results(".lists[*][*]", data) == [[1, 2]]


def test_exists_filter_keeps_items_whose_left_side_errors() -> None:
    # client-go ignores the error of an exists filter and keeps what came back.
    data = {"items": [{"a": [1]}, {"b": 2}]}
    assert results(".items[?(@.a[5])]", data) == [[{"a": [1]}]]


def test_filter_compares_across_int_signedness_only() -> None:
    data = {"items": [{"n": 116}]}
    assert results(".items[?(@.n == 116)].n", data) == [[116]]
    with pytest.raises(JSONPathEvalError, match=r"^incompatible types for comparison$"):
        results(".items[?(@.n == 116.0)]", data)
    with pytest.raises(JSONPathEvalError, match=r"^invalid type for comparison$"):
        results(".items[?(@.n < true)]", {"items": [{"n": False}]})


def test_filter_on_null_is_an_error() -> None:
    with pytest.raises(
        JSONPathEvalError, match=r"^<nil> is not array or slice and cannot be filtered$"
    ):
        results(".a[?(@.x)]", {"a": None})


def test_missing_list_filters_to_nothing() -> None:
    assert results(".a[?(@.x)]", {}) == [[]]


def test_compile_is_cached() -> None:
    assert compile_path(".status.replicas") is compile_path(".status.replicas")


def test_field_chain_fast_path() -> None:
    assert compile_path(".status.readyReplicas").fields == ("status", "readyReplicas")
    assert compile_path(".a[0]").fields is None
    assert compile_path("range .a}{end").fields is None


def test_simple_filters_take_the_shortcut() -> None:
    (steps,) = compile_path('.status.conditions[?(@.type=="Complete")].status').nodes
    assert isinstance(steps, jsonpath._List)
    condition_filter = steps.nodes[2]
    assert isinstance(condition_filter, jsonpath._Filter)
    assert condition_filter.left_chain == ("type",)
    assert condition_filter.right_constant == ("Complete",)


def test_parse_error_is_cached_and_re_raised_fresh() -> None:
    for _ in range(3):
        with pytest.raises(JSONPathParseError, match=r"^unterminated array$") as info:
            compile_path(".a[")
        assert info.value.__traceback__ is not None


def test_path_length_limit() -> None:
    compile_path("." + "a" * (MAX_PATH_LENGTH - 1))
    with pytest.raises(JSONPathParseError, match="more than the limit of 1024"):
        compile_path("." + "a" * MAX_PATH_LENGTH)


def test_deep_object_does_not_exhaust_the_stack() -> None:
    data: Any = "leaf"
    for _ in range(5000):
        data = {"a": data}
    found = results("..", data)[0]
    assert len(found) == 5001
    assert found[-2:] == [{"a": "leaf"}, "leaf"]


# --- properties --------------------------------------------------------------------------------

# Characters that end a field name in client-go; they must be escaped with "\".
TERMINATORS = " \t\r\n.,[]$@{}"
KEYS = st.text(
    st.characters(exclude_characters="\\", exclude_categories=["Cs"]), min_size=1, max_size=8
)


def escape(key: str) -> str:
    if key == "*":
        return "\\*"
    return "".join("\\" + char if char in TERMINATORS else char for char in key)


@st.composite
def object_and_chain(draw: st.DrawFn) -> tuple[Any, list[str], Any]:
    """A nested object, a chain of keys present in it, and the value at its end."""
    keys = draw(st.lists(KEYS, min_size=1, max_size=5))
    leaf = draw(
        st.none()
        | st.integers()
        | st.text(max_size=5)
        | st.booleans()
        | st.lists(st.integers(), max_size=3)
    )
    value: Any = leaf
    for key in reversed(keys):
        siblings = draw(st.dictionaries(KEYS, st.integers(), max_size=3))
        siblings[key] = value
        value = siblings
    return value, keys, leaf


def general(template: Template) -> Template:
    """The template without its shortcuts: the field-chain fast path and the
    simple-filter path."""

    def strip(node: Any) -> Any:
        if isinstance(node, jsonpath._List):
            return jsonpath._List(tuple(strip(child) for child in node.nodes))
        if isinstance(node, jsonpath._Union):
            return jsonpath._Union(tuple(strip(child) for child in node.lists))
        if isinstance(node, jsonpath._Filter):
            return jsonpath._Filter(strip(node.left), strip(node.right), node.operator)
        return node

    return Template(tuple(strip(node) for node in template.nodes), None)


@settings(max_examples=300, deadline=None)
@given(object_and_chain())
def test_escaped_field_chains_find_the_value(case: tuple[Any, list[str], Any]) -> None:
    data, keys, leaf = case
    template = compile_path("".join("." + escape(key) for key in keys))
    assert template.fields == tuple(keys)
    assert template.find_results(data) == [[leaf]]
    # The general evaluator agrees with the dictionary-lookup fast path.
    assert general(template).find_results(data) == [[leaf]]


@settings(max_examples=300, deadline=None)
@given(
    data=st.recursive(
        st.none() | st.integers() | st.text(max_size=3),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
        ),
        max_leaves=12,
    ),
    chain=st.lists(st.sampled_from("abcd"), max_size=4),
)
def test_fast_path_matches_general_evaluator(data: Any, chain: list[str]) -> None:
    template = compile_path("".join("." + key for key in chain))
    assert template.find_results(data) == general(template).find_results(data)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(st.integers(), max_size=6), index=st.integers(min_value=-8, max_value=8))
def test_index_matches_python_or_is_out_of_bounds(items: list[int], index: int) -> None:
    data = {"a": items}
    if -len(items) <= index < len(items):
        assert results(f".a[{index}]", data) == [[items[index]]]
    else:
        with pytest.raises(
            JSONPathEvalError, match=r"^array index out of bounds: index -?[0-9]+, length [0-9]+$"
        ):
            results(f".a[{index}]", data)


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.integers(), max_size=6),
    start=st.integers(min_value=0, max_value=6),
    stop=st.integers(min_value=0, max_value=6),
    step=st.integers(min_value=1, max_value=3),
)
def test_in_range_slices_match_python(items: list[int], start: int, stop: int, step: int) -> None:
    assume(start <= stop <= len(items) and (start < len(items) or start == stop))
    assert results(f".a[{start}:{stop}:{step}]", {"a": items}) == [items[start:stop:step]]


@settings(max_examples=300, deadline=None)
@given(
    conditions=st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["A", "B", "C"]), "status": st.text(max_size=4)}
        ),
        max_size=6,
    ),
    wanted=st.sampled_from(["A", "B", "C"]),
)
def test_filter_selects_matching_items_in_order(
    conditions: list[dict[str, str]], wanted: str
) -> None:
    path = f'.status.conditions[?(@.type=="{wanted}")].status'
    expected = [c["status"] for c in conditions if c["type"] == wanted]
    assert results(path, {"status": {"conditions": conditions}}) == [expected]


@settings(max_examples=1000, deadline=None)
@given(
    path=st.text(
        st.sampled_from(list(".[]?()@$*'\"=!<>,:-+0123456789abc \\{}\trangend")), max_size=30
    )
    | st.text(max_size=30),
    data=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
        ),
        max_leaves=10,
    ),
)
def test_arbitrary_paths_raise_only_jsonpath_errors(path: str, data: Any) -> None:
    try:
        compile_path(path).find_results(data)
    except JSONPathError as exc:
        assert str(exc)


def outcome(template: Template, data: Any) -> Any:
    try:
        return template.find_results(data)
    except JSONPathEvalError as exc:
        return str(exc)


LITERALS = st.sampled_from(["'A'", '"B"', "1", "2", "1.5", "true", "false", "'1'"])
ITEM_VALUES = (
    st.none() | st.sampled_from(["A", "B", "1"]) | st.integers(0, 3) | st.booleans() | st.just(1.5)
)


@settings(max_examples=500, deadline=None)
@given(
    items=st.lists(
        st.one_of(
            st.none(),
            st.integers(0, 2),
            st.dictionaries(
                st.sampled_from(["x", "y"]),
                ITEM_VALUES | st.dictionaries(st.just("z"), ITEM_VALUES),
                max_size=2,
            ),
        ),
        max_size=5,
    ),
    left=st.sampled_from(["@.x", "@.y", "@.x.z", "@", "@.*"]),
    operator=st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "=~", None]),
    literal=LITERALS,
)
def test_filter_shortcut_matches_general_evaluator(
    items: list[Any], left: str, operator: str | None, literal: str
) -> None:
    condition = left if operator is None else f"{left} {operator} {literal}"
    template = compile_path(f".items[?({condition})]")
    assert outcome(template, {"items": items}) == outcome(general(template), {"items": items})
