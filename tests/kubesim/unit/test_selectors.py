"""Label and field selectors: syntax, matching and the apiserver's error wording."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.errors import ApiError
from kubesim.selectors import (
    LabelSelector,
    field_support,
    label_selector_from_api,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "app.kubernetes.io/name": "shop", "n": "5"}

QNAME_HINT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _message(fn: Any, *args: Any) -> str:
    with pytest.raises(ApiError) as info:
        fn(*args)
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    return info.value.message


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),  # an absent label satisfies a negative term
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db, cache)", True),
        ("missing notin (x)", True),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("  app = web ,  tier in ( front , back )  ", True),
        ("app.kubernetes.io/name=shop", True),
        ("app.kubernetes.io/name in (shop)", True),
        ("n>3", True),
        ("n<3", False),
        ("app>3", False),  # not an integer label: never matches
        ("app=", False),
        ("empty=", False),
        ("in=x", False),  # "in" is an ordinary key outside operator position
    ],
)
def test_label_selector_matching(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


def test_label_selector_matches_none_labels() -> None:
    assert parse_label_selector("").matches(None)
    assert parse_label_selector("!a").matches(None)
    assert not parse_label_selector("a").matches(None)


def test_empty_value_matches_empty_label() -> None:
    assert parse_label_selector("a=").matches({"a": ""})
    assert parse_label_selector("a in ()").matches({"a": ""})
    assert parse_label_selector("a in (,x)").matches({"a": ""})


def test_selector_string_is_canonical_and_sorted() -> None:
    sel = parse_label_selector("z in (b,a,a), !y, x, w!=1, v==2")
    assert str(sel) == "v==2,w!=1,x,!y,z in (a,b)"
    assert parse_label_selector(str(sel)) == sel


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            "app:monolith",
            f'unable to parse requirement: <nil>: Invalid value: "app:monolith": name part '
            f"{QNAME_HINT}",
        ),
        (
            "a/b/c=x",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name '
            f"{QNAME_HINT} with an optional DNS subdomain prefix and '/' (e.g. "
            "'example.com/MyName')",
        ),
        (
            "a=b@",
            'unable to parse requirement: values[0][a]: Invalid value: "b@": a valid label must '
            "be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a,", "found '', expected: identifier after ','"),
        ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
        (
            "a<b",
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' "
            "operators, the value must be an integer",
        ),
    ],
)
def test_label_selector_errors(selector: str, message: str) -> None:
    assert _message(parse_label_selector, selector) == message


def test_long_label_key_name_part() -> None:
    msg = _message(parse_label_selector, "a" * 64)
    assert "name part must be no more than 63 bytes" in msg


def test_label_selector_from_api() -> None:
    assert label_selector_from_api(None).matches_nothing
    assert not label_selector_from_api(None).matches({})
    assert label_selector_from_api({}).empty
    assert label_selector_from_api({"matchLabels": {}}).matches({"x": "y"})
    sel = label_selector_from_api(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "app.kubernetes.io/name", "operator": "Exists"},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
            ],
        }
    )
    assert sel.matches(LABELS)
    assert not sel.matches({**LABELS, "canary": "1"})
    assert not sel.matches({**LABELS, "env": "prod"})
    assert (
        str(sel) == "app=web,app.kubernetes.io/name,!canary,env notin (prod),tier in (back,front)"
    )


def test_label_selector_from_api_errors() -> None:
    msg = _message(
        label_selector_from_api, {"matchExpressions": [{"key": "a", "operator": "Equals"}]}
    )
    assert msg == '"Equals" is not a valid pod selector operator'
    msg = _message(label_selector_from_api, {"matchExpressions": [{"key": "a", "operator": "In"}]})
    assert msg == (
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't "
        "be empty"
    )
    msg = _message(label_selector_from_api, {"matchLabels": {"bad key": "x"}})
    assert msg.startswith('key: Invalid value: "bad key": name part must consist')


def test_everything_and_nothing() -> None:
    assert LabelSelector.everything().matches({"a": "b"})
    assert not LabelSelector.nothing().matches({"a": "b"})
    assert LabelSelector.everything() != LabelSelector.nothing()


_KEY = st.from_regex(r"[a-z]([a-z0-9.-]{0,8}[a-z0-9])?", fullmatch=True).filter(
    lambda k: ".." not in k and ".-" not in k and "-." not in k
)
_VALUE = st.from_regex(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,8}[A-Za-z0-9])?)?", fullmatch=True)


@given(st.dictionaries(_KEY, _VALUE, min_size=1, max_size=5))
def test_equality_selector_built_from_labels_matches_them(labels: dict[str, str]) -> None:
    text = ",".join(f"{k}={v}" for k, v in labels.items())
    sel = parse_label_selector(text)
    assert sel.matches(labels)
    assert parse_label_selector(str(sel)) == sel
    first = next(iter(labels))
    assert not sel.matches({**labels, first: labels[first] + "x"})


# -- field selectors ----------------------------------------------------------------


def _pod(name: str, node: str = "", phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def test_field_selector_metadata() -> None:
    sel = parse_field_selector("metadata.name=a")
    assert sel.matches(_pod("a"))
    assert not sel.matches(_pod("b"))
    assert parse_field_selector("metadata.name==a,metadata.namespace=ns").matches(_pod("a"))
    assert parse_field_selector("metadata.name!=a").matches(_pod("b"))
    assert parse_field_selector("").matches(_pod("a"))
    assert parse_field_selector("").empty
    assert parse_field_selector("metadata.namespace=").matches({"metadata": {"name": "x"}})


def test_field_selector_with_kind_fields() -> None:
    support = field_support("", "Pod")
    unscheduled = parse_field_selector("spec.nodeName=", support.getter)
    assert unscheduled.matches(_pod("a"))
    assert not unscheduled.matches(_pod("a", node="n1"))
    running_elsewhere = parse_field_selector(
        "status.phase=Running,spec.nodeName!=n1", support.getter
    )
    assert running_elsewhere.matches(_pod("a", node="n2"))
    assert not running_elsewhere.matches(_pod("a", node="n1"))
    assert running_elsewhere.fields == {"status.phase", "spec.nodeName"}
    assert running_elsewhere.exact_value("status.phase") == "Running"
    assert running_elsewhere.exact_value("spec.nodeName") is None


def test_field_selector_dotted_path_fallback() -> None:
    assert parse_field_selector("status.phase=Running").matches(_pod("a"))
    assert parse_field_selector("spec.nodeName=").matches(_pod("a"))
    assert parse_field_selector("type=kubernetes.io/tls").matches({"type": "kubernetes.io/tls"})


def test_field_selector_check_wording() -> None:
    support = field_support("", "Pod")
    sel = parse_field_selector("spec.bogus=x", support.getter)
    assert _message(sel.check, support.fields) == "field label not supported: spec.bogus"
    generic = field_support("", "ConfigMap")
    assert not generic.custom
    sel = parse_field_selector("data.a=x")
    with pytest.raises(ApiError) as info:
        sel.check(generic.fields, generic=True)
    assert info.value.message == (
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    parse_field_selector("metadata.name=x,metadata.namespace=y").check(generic.fields)


def test_field_support_sets() -> None:
    assert "involvedObject.name" in field_support("", "Event").fields
    assert field_support("", "Secret").fields == {"metadata.name", "metadata.namespace", "type"}
    assert field_support("", "Namespace").fields == {"metadata.name", "status.phase"}
    cr = field_support("example.com", "Widget", namespaced=False, custom_resource=True)
    assert cr.fields == {"metadata.name"} and cr.custom
    event = {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "source": {"component": "kubelet"},
        "type": "Warning",
    }
    getter = field_support("", "Event").getter
    assert parse_field_selector("involvedObject.kind=Pod,source=kubelet", getter).matches(event)
    job = {"metadata": {"name": "j"}, "status": {"succeeded": 1}}
    assert parse_field_selector(
        "status.successful=1", field_support("batch", "Job").getter
    ).matches(job)


def test_field_selector_escapes_and_errors() -> None:
    sel = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert sel.matches({"metadata": {"name": "a,b=c\\d"}})
    assert str(sel) == r"metadata.name=a\,b\=c\\d"
    assert _message(parse_field_selector, "metadata.name") == (
        "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
    )
    assert _message(parse_field_selector, "a=b=c") == (
        "invalid field selector: unescaped character in value: ="
    )
    assert _message(parse_field_selector, r"a=b\x") == (
        r"invalid field selector: invalid escape sequence: \x"
    )
