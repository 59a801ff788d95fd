"""ignoreFields processing: JSONPaths, JSON pointers, jq (spec/agent.md 5.4 step 3.1)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from schemas.work_v1 import IgnoreField
from workagent.apply import IgnoreFieldsError
from workagent.apply.ignore_fields import (
    remove_by_jq,
    remove_by_jsonpath,
    remove_by_pointer,
    select_by_jsonpath,
    trim,
)
from workagent.apply.jq import JqParseError, delete_paths
from workagent.feedback.jsonpath import JSONPathError

DOC: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "annotations": {"a": "1", "b.c/d": "2"}},
    "spec": {
        "replicas": 3,
        "template": {
            "spec": {
                "containers": [
                    {"name": "app", "image": "app:1", "env": [{"name": "X", "value": "1"}]},
                    {"name": "side", "image": "side:1"},
                ]
            }
        },
    },
}


def doc() -> dict[str, Any]:
    return copy.deepcopy(DOC)


def test_jsonpath_selection() -> None:
    d = doc()
    assert list(select_by_jsonpath(d, ".spec.replicas")) == [3]
    assert list(select_by_jsonpath(d, "")) == [d]
    images = select_by_jsonpath(d, ".spec.template.spec.containers[*].image")
    assert list(images) == ["app:1", "side:1"]
    named = select_by_jsonpath(d, '.spec.template.spec.containers[?(@.name=="side")].image')
    assert list(named) == ["side:1"]
    assert list(select_by_jsonpath(d, "$..image")) == ["app:1", "side:1"]
    assert list(select_by_jsonpath(d, ".spec.template.spec.containers[-1].name")) == ["side"]
    assert list(select_by_jsonpath(d, ".metadata.annotations['a']")) == ["1"]
    # As in client-go (so in OCM), a bracketed key is a field path: 'b.c/d' is b, then c/d.
    assert list(select_by_jsonpath(d, ".metadata.annotations['b.c/d']")) == []
    assert list(select_by_jsonpath(d, ".spec.missing.deeper")) == []
    with pytest.raises(JSONPathError):
        select_by_jsonpath(d, "spec.replicas")


def test_remove_by_jsonpath_deletes_the_last_segment_from_selected_maps() -> None:
    d = doc()
    remove_by_jsonpath(d, ".spec.replicas")
    assert "replicas" not in d["spec"]
    remove_by_jsonpath(d, ".spec.template.spec.containers[*].image")
    assert [c.get("image") for c in d["spec"]["template"]["spec"]["containers"]] == [None, None]
    # Missing keys select nothing; malformed paths are only logged.
    before = copy.deepcopy(d)
    remove_by_jsonpath(d, ".spec.nothing.here")
    remove_by_jsonpath(d, "spec[?(oops")
    assert d == before
    # A top-level field: the parent path is empty and selects the object.
    remove_by_jsonpath(d, ".spec")
    assert "spec" not in d


def test_remove_by_pointer() -> None:
    d = doc()
    remove_by_pointer(d, "/spec/replicas")
    assert "replicas" not in d["spec"]
    remove_by_pointer(d, "/metadata/annotations/b.c~1d")
    assert d["metadata"]["annotations"] == {"a": "1"}
    remove_by_pointer(d, "/spec/template/spec/containers/0/env")
    assert "env" not in d["spec"]["template"]["spec"]["containers"][0]
    before = copy.deepcopy(d)
    for missing in ("/spec/replicas", "/nope/deeper", "/spec/template/spec/containers/9/image"):
        remove_by_pointer(d, missing)
    assert d == before
    with pytest.raises(IgnoreFieldsError) as err:
        remove_by_pointer(d, "/spec/template/spec/containers/5")
    assert str(err.value) == (
        "JSON Pointer error in '/spec/template/spec/containers/5': failed to apply JSON Pointer "
        "patch: error in remove for path: '/spec/template/spec/containers/5': Unable to access "
        "invalid index: 5"
    )


def test_jq_paths() -> None:
    d = doc()
    out = delete_paths(d, ".spec.replicas")
    assert "replicas" not in out["spec"] and d["spec"]["replicas"] == 3, "input untouched"
    out = delete_paths(d, '.spec.template.spec.containers[] | select(.name == "side") | .image')
    assert out["spec"]["template"]["spec"]["containers"][1] == {"name": "side"}
    out = delete_paths(d, '.metadata.annotations["b.c/d"], .spec.replicas')
    assert out["metadata"]["annotations"] == {"a": "1"} and "replicas" not in out["spec"]
    out = delete_paths(d, ".spec.template.spec.containers[0, 1]")
    assert out["spec"]["template"]["spec"]["containers"] == []
    out = delete_paths(
        d, '.spec.template.spec.containers[] | select(.name != "app" and has("image"))'
    )
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["app"]
    out = delete_paths(d, ".. | .value?")
    assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "X"}]
    assert delete_paths(d, ".spec.nothing.here") == d
    with pytest.raises(JqParseError):
        delete_paths(d, ".spec | map(.x)")


def test_remove_by_jq_errors_carry_ocm_messages() -> None:
    d = doc()
    with pytest.raises(
        IgnoreFieldsError, match=r"^JQ expression error in '\.spec\[': failed to parse"
    ):
        remove_by_jq(d, ".spec[")
    with pytest.raises(
        IgnoreFieldsError, match=r"jq expression returned error: cannot iterate over: null"
    ):
        remove_by_jq(d, ".spec.nothing[]")
    with pytest.raises(IgnoreFieldsError, match="jq expression result is not a valid object"):
        remove_by_jq(d, ".")


def test_trim_only_removes_on_spoke_present_fields() -> None:
    fields = [
        IgnoreField.model_validate(
            {"condition": "OnSpokePresent", "jsonPaths": [".spec.replicas"]}
        ),
        IgnoreField.model_validate(
            {"condition": "OnSpokeChange", "jsonPointers": ["/metadata/annotations/a"]}
        ),
    ]
    trimmed = trim(doc(), fields)
    assert "replicas" not in trimmed["spec"]
    assert trimmed["metadata"]["annotations"]["a"] == "1"
    with_jq = [IgnoreField.model_validate({"jqPathExpressions": [".metadata.annotations.a"]})]
    assert trim(doc(), with_jq)["metadata"]["annotations"] == {"b.c/d": "2"}
