"""read_feedback: values, typing, the feature gate and the exact StatusFeedbackSynced
condition of spec/agent.md section 11 (OCM statusfeedback/reader.go)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.work_v1 import FeedbackRule, FeedbackValue
from workagent.conditions.reasons import MAX_MESSAGE_CHARS
from workagent.feedback import FeedbackResult, read_feedback

WELL_KNOWN = FeedbackRule.model_validate({"type": "WellKnownStatus"})
MAX = 1024


def paths(*items: tuple[str, str] | tuple[str, str, str]) -> FeedbackRule:
    """A JSONPaths rule from (name, path[, version]) tuples."""
    json_paths: list[dict[str, str]] = []
    for item in items:
        entry = {"name": item[0], "path": item[1]}
        if len(item) == 3:
            entry["version"] = item[2]
        json_paths.append(entry)
    return FeedbackRule.model_validate({"type": "JSONPaths", "jsonPaths": json_paths})


def read(
    rules: list[FeedbackRule] | None, obj: dict[str, Any], raw: bool = False
) -> FeedbackResult:
    result = read_feedback(rules, obj, raw_json=raw, max_json_raw_length=MAX)
    for value in result.values:
        # Every value is a valid wire-form FeedbackValue.
        FeedbackValue.model_validate(value)
    return result


def integer(name: str, value: int) -> dict[str, Any]:
    return {"name": name, "fieldValue": {"type": "Integer", "integer": value}}


def string(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "fieldValue": {"type": "String", "string": value}}


def boolean(name: str, value: bool) -> dict[str, Any]:
    return {"name": name, "fieldValue": {"type": "Boolean", "boolean": value}}


def raw(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "fieldValue": {"type": "JsonRaw", "jsonRaw": value}}


SYNCED = ("True", "StatusFeedbackSynced", "")


def failed(message: str) -> tuple[str, str, str]:
    return (
        "False",
        "StatusFeedbackSyncFailed",
        f"Sync status feedback failed with error {message}",
    )


def deployment(
    status: dict[str, Any] | None = None, api_version: str = "apps/v1"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3},
    }
    if status is not None:
        obj["status"] = status
    return obj


def workload(
    api_version: str, kind: str, status: dict[str, Any], *, name: str = "test"
) -> dict[str, Any]:
    """A ``kind`` object named ``name`` with ``status`` (no spec: the reader ignores it)."""
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "status": status}


# --- no rules -------------------------------------------------------------------


@pytest.mark.parametrize("rules", [None, []])
def test_no_rules_is_no_status_feedback_synced(rules: list[FeedbackRule] | None) -> None:
    result = read(rules, deployment({"replicas": 1}))
    assert result == FeedbackResult([], ("True", "NoStatusFeedbackSynced", ""))


def test_empty_json_paths_rule_is_synced_with_no_values() -> None:
    rule = FeedbackRule.model_validate({"type": "JSONPaths"})
    assert read([rule], deployment()) == FeedbackResult([], SYNCED)


# --- WellKnownStatus --------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "values"),
    [
        pytest.param(
            deployment({"readyReplicas": 1, "replicas": 2, "availableReplicas": 1}),
            [integer("ReadyReplicas", 1), integer("Replicas", 2), integer("AvailableReplicas", 1)],
            id="deployment",
        ),
        # OCM's own test: no availableReplicas, so two values and no error.
        pytest.param(
            deployment({"readyReplicas": 1, "replicas": 2}),
            [integer("ReadyReplicas", 1), integer("Replicas", 2)],
            id="deployment-partial-status",
        ),
        pytest.param(
            workload(
                "apps/v1",
                "DaemonSet",
                {"numberReady": 2, "desiredNumberScheduled": 3, "numberAvailable": 1},
                name="ds",
            ),
            [
                integer("NumberReady", 2),
                integer("DesiredNumberScheduled", 3),
                integer("NumberAvailable", 1),
            ],
            id="daemonset",
        ),
        pytest.param(
            workload(
                "batch/v1",
                "Job",
                {
                    "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True"},
                        {"status": "True", "type": "Complete"},
                    ],
                    "succeeded": 1,
                },
            ),
            [string("JobComplete", "True"), integer("JobSucceeded", 1)],
            id="job",
        ),
        pytest.param(
            workload(
                "v1",
                "Pod",
                {"conditions": [{"status": "False", "type": "Ready"}], "phase": "Succeeded"},
            ),
            [string("PodReady", "False"), string("PodPhase", "Succeeded")],
            id="pod",
        ),
    ],
)
def test_well_known_values(obj: dict[str, Any], values: list[dict[str, Any]]) -> None:
    result = read([WELL_KNOWN], obj)
    assert result.values == values
    assert result.condition == SYNCED


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("apps/v1", "Deployment"), ("apps/v1", "DaemonSet"), ("batch/v1", "Job"), ("v1", "Pod")],
)
@pytest.mark.parametrize("status", [None, {}, {"conditions": []}])
def test_well_known_fresh_object_has_no_values_and_no_error(
    api_version: str, kind: str, status: dict[str, Any] | None
) -> None:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    if status is not None:
        obj["status"] = status
    assert read([WELL_KNOWN], obj) == FeedbackResult([], SYNCED)


@pytest.mark.parametrize(
    ("obj", "gvk"),
    [
        ({"apiVersion": "v1", "kind": "ServiceAccount"}, "/v1, Kind=ServiceAccount"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "/v1, Kind=ConfigMap"),
        ({"apiVersion": "extensions/v1", "kind": "Deployment"}, "extensions/v1, Kind=Deployment"),
        # The version is part of the match.
        ({"apiVersion": "apps/v1beta2", "kind": "Deployment"}, "apps/v1beta2, Kind=Deployment"),
        ({"apiVersion": "batch/v1beta1", "kind": "Job"}, "batch/v1beta1, Kind=Job"),
        # Go cannot parse a group version with two slashes: group and version are empty.
        ({"apiVersion": "a/b/c", "kind": "Pod"}, "/, Kind=Pod"),
        ({"kind": "Pod"}, "/, Kind=Pod"),
        ({"apiVersion": 3, "kind": None}, "/, Kind="),
    ],
)
def test_well_known_unknown_gvk(obj: dict[str, Any], gvk: str) -> None:
    result = read([WELL_KNOWN], obj)
    assert result.values == []
    assert result.condition == failed(
        f"cannot find the wellknown statuses for resource with gvk {gvk}"
    )


def test_well_known_job_condition_with_null_type_is_an_evaluation_error() -> None:
    # client-go cannot compare nil with a string.
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "status": {"conditions": [{"type": None, "status": "True"}], "succeeded": 2},
    }
    result = read([WELL_KNOWN], obj)
    assert result.values == [integer("JobSucceeded", 2)]
    assert result.condition == failed(
        "failed to find value for JobComplete with error: invalid type for comparison"
    )


# --- JSONPaths: typing --------------------------------------------------------------

OBJ: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "labels": {"app.kubernetes.io/name": "shop", "team": "a"},
        "annotations": {"example.com/owner": "ops"},
    },
    "spec": {"replicas": 3, "paused": False, "ratio": 1.5, "whole": 2.0},
    "data": {"test": "value"},
    "status": {
        "replicas": 3,
        "readyReplicas": 2,
        "observedGeneration": 9223372036854775807,
        "huge": 9223372036854775808,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "lastTransitionTime": None,
                "lastUpdateTime": None,
            },
            {"type": "Progressing", "status": "False", "reason": "Timeout"},
        ],
        "empty": [],
        "nothing": None,
    },
}


@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.replicas", integer("v", 3)),
        (".status.observedGeneration", integer("v", 9223372036854775807)),
        (".metadata.name", string("v", "web")),
        (".data.test", string("v", "value")),
        (".spec.paused", boolean("v", False)),
        ('.status.conditions[?(@.type=="Available")].status', string("v", "True")),
        (".status.conditions[?(@.type=='Progressing')].reason", string("v", "Timeout")),
        (".status.conditions[0].type", string("v", "Available")),
        (".status.conditions[-1].type", string("v", "Progressing")),
        (".status.conditions[1:].status", string("v", "False")),
        (r".metadata.labels.app\.kubernetes\.io/name", string("v", "shop")),
        (".metadata.annotations.example\\.com/owner", string("v", "ops")),
        ("$.metadata.name", string("v", "web")),
        ("['metadata']['name']", string("v", "web")),
        (".status.readyReplicas ", integer("v", 2)),
    ],
)
def test_json_paths_scalar_values(path: str, expected: dict[str, Any], gate: bool) -> None:
    result = read([paths(("v", path))], OBJ, raw=gate)
    assert result.values == [expected]
    assert result.condition == SYNCED


@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize(
    "path",
    [
        ".status.missing",
        ".nope.deeper.still",
        ".status.nothing",  # JSON null
        ".status.conditions[0].lastTransitionTime",  # null inside a list item
        '.status.conditions[?(@.type=="Degraded")].status',  # filter matches nothing
        ".status.empty[*]",  # empty match
        ".status.empty[0:0]",
        ".metadata.labels.nope",
        ".spec.replicas.deeper",  # a field of a number is nothing
    ],
)
def test_json_paths_no_match_or_null_gives_nothing(path: str, gate: bool) -> None:
    assert read([paths(("v", path))], OBJ, raw=gate) == FeedbackResult([], SYNCED)


@pytest.mark.parametrize(
    ("path", "go_type", "json_raw"),
    [
        (
            ".status.conditions[1]",
            "map[string]interface {}",
            '{"reason":"Timeout","status":"False","type":"Progressing"}',
        ),
        (".status.empty", "[]interface {}", "[]"),
        (
            ".metadata.labels",
            "map[string]interface {}",
            '{"app.kubernetes.io/name":"shop","team":"a"}',
        ),
        (".spec.ratio", "float64", "1.5"),
        (".spec.whole", "float64", "2"),
        # Past int64, Go's JSON decoder gives a float64.
        (".status.huge", "float64", "9223372036854776000"),
        # A path's integer literal is a Go int, not the int64 of JSON data.
        ("5", "int", "5"),
    ],
)
def test_json_paths_non_scalar_needs_the_gate(path: str, go_type: str, json_raw: str) -> None:
    off = read([paths(("v", path))], OBJ, raw=False)
    assert off.values == []
    assert off.condition == failed(f"the type {go_type} of the value for v is not found")

    on = read([paths(("v", path))], OBJ, raw=True)
    assert on.values == [raw("v", json_raw)]
    assert on.condition == SYNCED


def test_json_raw_spec_example() -> None:
    obj = deployment(
        {
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "lastUpdateTime": None,
                    "lastTransitionTime": None,
                }
            ]
        }
    )
    result = read([paths(("conditions", ".status.conditions"))], obj, raw=True)
    assert result.values == [
        raw(
            "conditions",
            '[{"lastTransitionTime":null,"lastUpdateTime":null,"status":"True","type":"Available"}]',
        )
    ]
    assert result.condition == SYNCED


MULTI = deployment(
    {
        "conditions": [
            {"type": "Cond1", "status": "true"},
            {"type": "Cond2", "status": "false"},
            {"type": "Cond3", "status": "true"},
        ]
    }
)


def test_several_matches_with_the_gate_are_one_json_list() -> None:
    rule = paths(("conditions", '.status.conditions[?(@.status=="true")].type'))
    result = read([rule], MULTI, raw=True)
    assert result.values == [raw("conditions", '["Cond1","Cond3"]')]
    assert result.condition == SYNCED


def test_several_matches_without_the_gate_take_the_first() -> None:
    rule = paths(("conditions", '.status.conditions[?(@.status=="true")].type'))
    result = read([rule], MULTI, raw=False)
    assert result.values == [string("conditions", "Cond1")]
    assert result.condition == SYNCED


def test_several_matches_with_the_gate_keep_nulls() -> None:
    obj = deployment({"items": [{"a": 1}, {"a": None}, {"a": "x"}]})
    result = read([paths(("v", ".status.items[*].a"))], obj, raw=True)
    assert result.values == [raw("v", '[1,null,"x"]')]


def test_several_matches_without_the_gate_first_null_gives_nothing() -> None:
    obj = deployment({"items": [{"a": None}, {"a": 1}]})
    assert read([paths(("v", ".status.items[*].a"))], obj) == FeedbackResult([], SYNCED)


# --- JsonRaw encoding and length ---------------------------------------------------------


def test_json_raw_is_go_encoding() -> None:
    obj = deployment({"x": {"z": "<a&b>", "a": "é\u2028", "m": [1, 2.5, True, None, 1e21, 1e-7]}})
    result = read([paths(("v", ".status.x"))], obj, raw=True)
    assert result.values == [
        raw("v", '{"a":"é\\u2028","m":[1,2.5,true,null,1e+21,1e-7],"z":"\\u003ca\\u0026b\\u003e"}')
    ]


def test_json_raw_length_limit() -> None:
    text = "a" * 98
    obj = deployment({"x": [text]})  # encodes as ["aaa..."]: 98 + 4 = 102 bytes
    rule = [paths(("big", ".status.x"))]

    at = read_feedback(rule, obj, raw_json=True, max_json_raw_length=102)
    assert at.values == [raw("big", json.dumps([text]))]
    assert at.condition == SYNCED

    over = read_feedback(rule, obj, raw_json=True, max_json_raw_length=101)
    assert over.values == []
    assert over.condition == failed(
        "the length of returned json raw string for name big is larger than the maximum length 101"
    )


def test_json_raw_length_counts_utf8_bytes() -> None:
    obj = deployment({"x": ["é" * 50]})  # 54 characters, 104 bytes
    rule = [paths(("big", ".status.x"))]
    assert read_feedback(rule, obj, raw_json=True, max_json_raw_length=104).condition == SYNCED
    result = read_feedback(rule, obj, raw_json=True, max_json_raw_length=103)
    assert result.condition == failed(
        "the length of returned json raw string for name big is larger than the maximum length 103"
    )


def test_json_raw_of_a_huge_object_stops_early() -> None:
    obj = deployment({"x": [{"k": "v" * 100}] * 100_000})
    result = read([paths(("big", ".status.x"))], obj, raw=True)
    assert result.condition == failed(
        "the length of returned json raw string for name big is larger than the maximum length 1024"
    )


def test_json_raw_unsupported_value() -> None:
    obj = deployment({"x": [float("nan")]})
    result = read([paths(("v", ".status.x"))], obj, raw=True)
    assert result.condition == failed(
        "failed to parse the resource to json string for name v: json: unsupported value: NaN"
    )


# --- versions -----------------------------------------------------------------------------


def test_version_mismatch() -> None:
    rule = paths(("available", ".status.conditions", "v1beta1"), ("replicas", ".status.replicas"))
    result = read([rule], OBJ)
    # The other path is still read (OCM's "wrong version set for jsonpaths" case).
    assert result.values == [integer("replicas", 3)]
    assert result.condition == failed(
        "version set in the path available is not matched for the related resource"
    )


def test_version_match() -> None:
    result = read([paths(("replicas", ".status.replicas", "v1"))], OBJ)
    assert result == FeedbackResult([integer("replicas", 3)], SYNCED)


def test_version_of_a_core_object() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running"}}
    assert read([paths(("p", ".status.phase", "v1"))], pod).values == [string("p", "Running")]
    assert read([paths(("p", ".status.phase", "v2"))], pod).condition == failed(
        "version set in the path p is not matched for the related resource"
    )


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ('.status.conditions[?(@.type=="Available"', "unterminated filter"),
        (".status.conditions[0", "unterminated array"),
        ("{.status.replicas}", "unrecognized character in action: U+007B '{'"),
        ("*", "unrecognized character in action: U+002A '*'"),
        ("!", "unrecognized character in action: U+0021 '!'"),
        ("\t.a", "unrecognized character in action: U+0009"),
        (".a\n", "unclosed action"),
        (".status.replicas\\", "unclosed action"),
        ("......", "invalid multiple recursive descent"),
        ("+12.3.0", "cannot parse number +12.3.0"),
        ('.items["a"]', 'invalid array index "a"'),
        (".items[x]", "invalid array index x"),
        (".items[-]", "array index - is not a number"),
        (".items[?(@.a==1)", "unclosed array expect ]"),
        ("'\\q'", "unquote string '\\q' error invalid syntax"),
        ('"abc', "unterminated quoted string"),
    ],
)
def test_parse_errors(path: str, error: str) -> None:
    result = read([paths(("name", path))], OBJ)
    assert result.values == []
    assert result.condition == failed(
        f"failed to parse json path {path} of name with error: {error}"
    )


@pytest.mark.parametrize(
    ("path", "error"),
    [
        (".status.conditions[3]", "array index out of bounds: index 3, length 2"),
        (".status.conditions[-3]", "array index out of bounds: index -1, length 2"),
        (".status.empty[0]", "array index out of bounds: index 0, length 0"),
        (".status.conditions[0:5]", "array index out of bounds: index 4, length 2"),
        (".status.conditions[1:0]", "starting index 1 is greater than ending index 0"),
        (".status.conditions[0:2:0]", "step must be > 0"),
        (".metadata[0]", "map[string]interface {} is not array or slice"),
        (".metadata.name[0]", "string is not array or slice"),
        (".spec.replicas[0]", "int64 is not array or slice"),
        (
            ".metadata.labels[?(@.x)]",
            "map[app.kubernetes.io/name:shop team:a] is not array or slice and cannot be filtered",
        ),
        (".status.conditions[?(@.type > 1)]", "incompatible types for comparison"),
        (".status.conditions[?(@.lastUpdateTime == 'x')]", "invalid type for comparison"),
        (".status.conditions[?(@.type =~ 'A')]", "unrecognized filter operator =~"),
        (".status.conditions[?(@.* == 'x')]", "can only compare one element at a time"),
        ("range .status.conditions[*]}{.type}{end}{end", "not in range, nothing to end"),
        (".metadata.name where", "unrecognized identifier where"),
    ],
)
def test_evaluation_errors(path: str, error: str) -> None:
    result = read([paths(("name", path))], OBJ)
    assert result.values == []
    assert result.condition == failed(f"failed to find value for name with error: {error}")


def test_several_errors_are_bracketed_and_values_still_reported() -> None:
    rule = paths(
        ("available", ".status.conditions"),
        ("replicas", ".status.replicas"),
        ("bad", ".status.conditions[9]"),
    )
    result = read([rule, WELL_KNOWN], OBJ)
    assert result.values == [
        integer("replicas", 3),
        integer("ReadyReplicas", 2),
        integer("Replicas", 3),
    ]
    assert result.condition == failed(
        "[the type []interface {} of the value for available is not found, "
        "failed to find value for bad with error: array index out of bounds: index 9, length 2]"
    )


def test_identical_errors_are_reported_once() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}
    result = read([WELL_KNOWN, WELL_KNOWN], config_map)
    assert result.condition == failed(
        "cannot find the wellknown statuses for resource with gvk /v1, Kind=ConfigMap"
    )


def test_values_in_rule_then_path_order() -> None:
    rules = [
        paths(("b", ".status.replicas"), ("a", ".metadata.name")),
        WELL_KNOWN,
        paths(("c", ".spec.paused")),
    ]
    result = read(rules, OBJ)
    assert [value["name"] for value in result.values] == [
        "b",
        "a",
        "ReadyReplicas",
        "Replicas",
        "c",
    ]
    assert result.condition == SYNCED


# --- hostile input ---------------------------------------------------------------------------


def test_over_long_path_is_a_parse_error() -> None:
    path = ".a" * 600
    result = read([paths(("long", path))], OBJ)
    assert result.condition == failed(
        f"failed to parse json path {path[:128]}... of long with error: "
        "the path is 1200 characters long, more than the limit of 1024"
    )


def test_path_at_the_length_limit_is_accepted() -> None:
    path = ".metadata.name" + " " * (1024 - len(".metadata.name"))
    assert read([paths(("n", path))], OBJ).values == [string("n", "web")]


def test_exponential_unions_hit_the_work_limit() -> None:
    nested: Any = "leaf"
    for _ in range(40):
        nested = [nested]
    path = ".x" + "[0,0,0,0]" * 40
    result = read([paths(("n", path))], deployment() | {"x": nested})
    assert result.condition == failed(
        "failed to find value for n with error: the path produces more than 1000000 intermediate values"
    )


def test_condition_message_is_capped() -> None:
    rule = paths(*[(f"name{i}-" + "x" * 300, f".a[{i}") for i in range(200)])
    result = read([rule], OBJ)
    status, reason, message = result.condition
    assert (status, reason) == ("False", "StatusFeedbackSyncFailed")
    assert len(message) == MAX_MESSAGE_CHARS
    assert message.endswith(" ... (truncated)")


def test_unexpected_object_content_never_raises() -> None:
    class Weird:
        pass

    obj = deployment({"x": [Weird()], "y": {1: "a"}})
    result = read([paths(("x", ".status.x"), ("y", ".status.y"))], obj, raw=True)
    assert result.condition[0] == "False"
    assert result.condition[2].startswith("Sync status feedback failed with error [")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
PATH_CHARS = st.sampled_from(list(".[]?()@$*'\"=!<>~,:-+0123456789abcxyz \\{}\t\nrangend"))


@settings(max_examples=400, deadline=None)
@given(
    path=st.text(PATH_CHARS, max_size=40) | st.text(max_size=40),
    body=JSON,
    gate=st.booleans(),
    limit=st.integers(min_value=0, max_value=64),
)
def test_read_feedback_never_raises(path: str, body: Any, gate: bool, limit: int) -> None:
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "status": body}
    result = read_feedback(
        [paths(("v", path)), WELL_KNOWN], obj, raw_json=gate, max_json_raw_length=limit
    )
    status, reason, message = result.condition
    assert (status, reason, message) == SYNCED or (
        status == "False"
        and reason == "StatusFeedbackSyncFailed"
        and message.startswith("Sync status feedback failed with error ")
    )
    assert "internal error" not in message
    for value in result.values:
        FeedbackValue.model_validate(value)


def test_json_raw_length_is_capped_at_the_hub_limit() -> None:
    """A --max-json-raw-length above the CRD's 1024 would get every status patch refused:
    the longer value is this value's error instead."""
    obj = deployment({"x": ["a" * 1100]})
    rule = [paths(("big", ".status.x"))]
    result = read_feedback(rule, obj, raw_json=True, max_json_raw_length=4096)
    assert result.values == []
    assert result.condition == failed(
        "the length of returned json raw string for name big is larger than the maximum length 1024"
    )
    fits = deployment({"x": ["a" * 1020]})  # 1024 bytes encoded
    assert read_feedback(rule, fits, raw_json=True, max_json_raw_length=4096).condition == SYNCED


def test_several_result_sets_are_one_value_only_without_the_gate() -> None:
    """``{.a}{.b}`` gives two result sets of one value: Go's reader keeps the first value
    without the gate, and with it the list of the first set's values."""
    rule = paths(("two", ".metadata.name}{.metadata.namespace"))
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "b"}}
    assert read([rule], obj, raw=False).values == [string("two", "a")]
    on = read([rule], obj, raw=True)
    assert on.values == [raw("two", '["a"]')]
    assert on.condition == SYNCED
