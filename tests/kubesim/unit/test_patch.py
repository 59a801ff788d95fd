"""Unit tests for kubesim.patch: merge patch, JSON patch, strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.errors import ApiError
from kubesim.listtypes import SchemaListTypes, builtin_list_type
from kubesim.patch import (
    APPLY_PATCH_YAML,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)

REJECTED = "the server rejected our request due to an error in our request"


def dollar_keys(value: Any, where: str = "") -> list[str]:
    """Every ``$``-prefixed key anywhere in ``value``, with its location."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, child in value.items():
            if key.startswith("$"):
                found.append(f"{where}/{key}")
            found.extend(dollar_keys(child, f"{where}/{key}"))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found.extend(dollar_keys(child, f"{where}/{i}"))
    return found


def smp(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Strategic merge patch with built-in list types, checking inputs stay intact."""
    before_original = copy.deepcopy(original)
    before_patch = copy.deepcopy(patch)
    result = strategic_merge_patch(original, patch, builtin_list_type)
    assert original == before_original
    assert patch == before_patch
    assert dollar_keys(result) == []
    return result


def cause(err: ApiError) -> str:
    """The library reason of a 422 from JSON patch (kept on the error, not answered)."""
    assert err.details == {}  # v1.35 answers the generic message alone
    return err.detail


def deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "finalizers": ["a", "b"]},
        "spec": {
            "replicas": 1,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": list(containers)},
            },
        },
    }


def containers_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return result


def spec_patch(**fields: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": fields}}}


# --------------------------------------------------------------------------
# JSON merge patch
# --------------------------------------------------------------------------


def test_merge_patch_null_deletes_and_objects_merge() -> None:
    original = {"data": {"a": "1", "b": "2"}, "keep": True}
    result = merge_patch(original, {"data": {"a": None, "c": "3"}})
    assert result == {"data": {"b": "2", "c": "3"}, "keep": True}
    assert original == {"data": {"a": "1", "b": "2"}, "keep": True}


def test_merge_patch_lists_and_scalars_replace() -> None:
    original = {"items": [1, 2, 3], "obj": {"x": 1}}
    assert merge_patch(original, {"items": [4], "obj": "flat"}) == {"items": [4], "obj": "flat"}


def test_merge_patch_non_object_patch_replaces_document() -> None:
    assert merge_patch({"a": 1}, ["x"]) == ["x"]
    assert merge_patch({"a": 1}, "s") == "s"


def test_merge_patch_drops_nested_nulls_of_new_values() -> None:
    # RFC 7386 appendix: {} + {"a":{"bb":{"ccc":null}}} -> {"a":{"bb":{}}}
    assert merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}
    assert merge_patch({"a": "x"}, {"a": {"b": None, "c": 1}}) == {"a": {"c": 1}}


def test_merge_patch_does_not_alias_patch_values() -> None:
    patch = {"spec": {"list": [{"k": "v"}]}}
    result = merge_patch({}, patch)
    result["spec"]["list"][0]["k"] = "changed"
    assert patch == {"spec": {"list": [{"k": "v"}]}}


_json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    original=st.dictionaries(st.text(max_size=4), _json_values, max_size=5),
    additions=st.dictionaries(
        st.text(max_size=4), _json_values.filter(lambda v: v is not None), max_size=5
    ),
)
def test_merge_patch_with_new_keys_is_a_superset(
    original: dict[str, Any], additions: dict[str, Any]
) -> None:
    new_keys = {k: v for k, v in additions.items() if k not in original}
    snapshot = copy.deepcopy(original)
    result = merge_patch(original, new_keys)
    assert original == snapshot
    assert set(result) == set(original) | set(new_keys)
    for key, value in original.items():
        assert result[key] == value
    # Idempotent: applying the same patch again changes nothing.
    assert merge_patch(result, new_keys) == result


# --------------------------------------------------------------------------
# JSON patch
# --------------------------------------------------------------------------


def test_json_patch_add_to_object_and_array() -> None:
    doc = {"data": {"a": "1"}, "list": ["x", "z"]}
    ops = [
        {"op": "add", "path": "/data/b", "value": "2"},
        {"op": "add", "path": "/list/1", "value": "y"},
        {"op": "add", "path": "/list/-", "value": "end"},
    ]
    assert json_patch(doc, ops) == {"data": {"a": "1", "b": "2"}, "list": ["x", "y", "z", "end"]}
    assert doc == {"data": {"a": "1"}, "list": ["x", "z"]}


def test_json_patch_add_replaces_existing_member() -> None:
    assert json_patch({"a": 1}, [{"op": "add", "path": "/a", "value": 2}]) == {"a": 2}


def test_json_patch_remove_replace() -> None:
    doc = {"data": {"a": "1", "b": "2"}, "list": [1, 2, 3]}
    ops = [
        {"op": "remove", "path": "/data/a"},
        {"op": "replace", "path": "/data/b", "value": "two"},
        {"op": "remove", "path": "/list/0"},
        {"op": "replace", "path": "/list/1", "value": 30},
    ]
    assert json_patch(doc, ops) == {"data": {"b": "two"}, "list": [2, 30]}


def test_json_patch_move_and_copy() -> None:
    doc = {"a": {"x": [1]}, "b": {}}
    ops = [
        {"op": "copy", "from": "/a/x", "path": "/b/y"},
        {"op": "move", "from": "/a/x", "path": "/b/z"},
    ]
    result = json_patch(doc, ops)
    assert result == {"a": {}, "b": {"y": [1], "z": [1]}}
    # The copy is a distinct value, not an alias of the source.
    result["b"]["y"].append(2)
    assert result["b"]["z"] == [1]


def test_json_patch_test_op_passes_and_fails() -> None:
    doc = {"data": {"a": "1", "n": 1, "flag": True}}
    ok = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "test", "path": "/data/missing", "value": None},
    ]
    assert json_patch(doc, ok) == doc
    with pytest.raises(ApiError) as info:
        json_patch(doc, [{"op": "test", "path": "/data/a", "value": "2"}])
    err = info.value
    assert (err.code, err.reason, err.message) == (422, "Invalid", REJECTED)
    assert cause(err) == "testing value /data/a failed: test failed"
    # JSON true is not the number 1.
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "test", "path": "/data/n", "value": True}])


def test_json_patch_pointer_escaping() -> None:
    doc = {"metadata": {"annotations": {"example.com/a~b": "x"}}}
    ops = [
        {"op": "test", "path": "/metadata/annotations/example.com~1a~0b", "value": "x"},
        {"op": "add", "path": "/metadata/annotations/k8s.io~1c", "value": "y"},
        {"op": "remove", "path": "/metadata/annotations/example.com~1a~0b"},
    ]
    assert json_patch(doc, ops) == {"metadata": {"annotations": {"k8s.io/c": "y"}}}
    # "~01" decodes to "~1", not "/".
    assert json_patch({}, [{"op": "add", "path": "/~01", "value": 1}]) == {"~1": 1}


def test_json_patch_remove_missing_key_is_422() -> None:
    with pytest.raises(ApiError) as info:
        json_patch({"data": {}}, [{"op": "remove", "path": "/data/x"}])
    assert info.value.code == 422
    assert info.value.reason == "Invalid"
    assert cause(info.value) == (
        "error in remove for path: '/data/x': Unable to remove nonexistent key: x: missing value"
    )
    assert info.value.status()["details"] == {}


def test_json_patch_remove_missing_parent_is_422() -> None:
    with pytest.raises(ApiError) as info:
        json_patch({}, [{"op": "remove", "path": "/data/x"}])
    assert cause(info.value) == (
        'remove operation does not apply: doc is missing path: "/data/x": missing value'
    )


def test_json_patch_replace_missing_is_422() -> None:
    with pytest.raises(ApiError) as info:
        json_patch({"data": {}}, [{"op": "replace", "path": "/data/x", "value": 1}])
    assert info.value.code == 422
    assert cause(info.value) == (
        "replace operation does not apply: doc is missing key: /data/x: missing value"
    )


@pytest.mark.parametrize(
    ("ops", "reason"),
    [
        ([{"op": "add", "path": "/list/5", "value": 1}], "Unable to access invalid index: 5"),
        ([{"op": "add", "path": "/list/x", "value": 1}], "value was not a proper array index"),
        ([{"op": "remove", "path": "/list/9"}], "Unable to access invalid index: 9"),
        ([{"op": "add", "path": "/a/b/c", "value": 1}], "doc is missing path"),
        ([{"op": "add", "path": "", "value": {}}], "doc is missing path"),
        ([{"op": "move", "from": "/nope/x", "path": "/y"}], "doc is missing from path"),
        ([{"op": "copy", "from": "/nope", "path": "/y"}], "unable to get nonexistent key"),
        ([{"op": "copy", "from": "/list", "path": "/a/b/c"}], "missing destination path"),
        ([{"op": "remove"}], "remove operation failed to decode path"),
        ([{"op": "move", "path": "/x"}], "missing from field"),
        ([{"op": "frob", "path": "/x"}], "Unexpected kind: frob"),
        ([{"path": "/x"}], "Unexpected kind: unknown"),
    ],
)
def test_json_patch_ops_that_do_not_apply(ops: list[dict[str, Any]], reason: str) -> None:
    doc = {"list": [1, 2]}
    with pytest.raises(ApiError) as info:
        json_patch(doc, ops)
    assert info.value.code == 422
    assert info.value.message == REJECTED
    assert reason in cause(info.value)
    assert doc == {"list": [1, 2]}


def test_json_patch_negative_index_counts_from_end() -> None:
    # The apiserver's library counts negative add indices from one past the end.
    add = [{"op": "add", "path": "/l/-2", "value": 9}]
    assert json_patch({"l": [1, 2]}, add) == {"l": [1, 9, 2]}
    assert json_patch({"l": [1, 2]}, [{"op": "remove", "path": "/l/-1"}]) == {"l": [1]}


def test_json_patch_is_all_or_nothing() -> None:
    doc = {"a": 1}
    ops = [{"op": "add", "path": "/b", "value": 2}, {"op": "test", "path": "/a", "value": 0}]
    with pytest.raises(ApiError):
        json_patch(doc, ops)
    assert doc == {"a": 1}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("x", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        (["add"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
    ],
)
def test_json_patch_malformed_body_is_400(body: Any, message: str) -> None:
    with pytest.raises(ApiError) as info:
        json_patch({}, body)
    assert (info.value.code, info.value.reason, info.value.message) == (400, "BadRequest", message)


def test_json_patch_too_many_operations_is_413() -> None:
    ops = [{"op": "test", "path": "/a", "value": 1}] * 10001
    with pytest.raises(ApiError) as info:
        json_patch({"a": 1}, ops)
    assert info.value.code == 413


def test_json_patch_null_body_is_a_no_op() -> None:
    assert json_patch({"a": 1}, None) == {"a": 1}


# --------------------------------------------------------------------------
# Strategic merge patch: keyed, set and atomic lists
# --------------------------------------------------------------------------


def test_smp_null_deletes_keys() -> None:
    original = deployment({"name": "app", "image": "nginx:1", "imagePullPolicy": "Always"})
    result = smp(
        original,
        {
            "metadata": {"labels": None},
            "spec": {
                "replicas": None,
                "template": {"spec": {"containers": [{"name": "app", "imagePullPolicy": None}]}},
            },
        },
    )
    assert "replicas" not in result["spec"]
    assert containers_of(result) == [{"name": "app", "image": "nginx:1"}]


def test_smp_merges_containers_by_name() -> None:
    original = deployment(
        {"name": "app", "image": "nginx:1", "args": ["a"]},
        {"name": "sidecar", "image": "envoy:1"},
    )
    result = smp(original, spec_patch(containers=[{"name": "app", "image": "nginx:2"}]))
    assert containers_of(result) == [
        {"name": "app", "image": "nginx:2", "args": ["a"]},
        {"name": "sidecar", "image": "envoy:1"},
    ]


def test_smp_new_container_goes_before_server_only_items() -> None:
    # kube-apiserver places items new to the live list ahead of the live
    # items the patch does not mention (see the kubectl patch docs).
    original = deployment({"name": "app", "image": "nginx"})
    result = smp(original, spec_patch(containers=[{"name": "redis", "image": "redis"}]))
    assert [c["name"] for c in containers_of(result)] == ["redis", "app"]


def test_smp_new_items_after_patched_live_items_keep_patch_order() -> None:
    original = deployment({"name": "a"}, {"name": "b"})
    patch = spec_patch(containers=[{"name": "a", "image": "i"}, {"name": "x"}, {"name": "y"}])
    result = smp(original, patch)
    assert [c["name"] for c in containers_of(result)] == ["a", "x", "y", "b"]


def test_smp_merges_ports_env_and_recurses_into_items() -> None:
    original = deployment(
        {
            "name": "app",
            "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        }
    )
    patch = spec_patch(
        containers=[
            {
                "name": "app",
                "ports": [{"containerPort": 80, "name": "http"}],
                "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}],
            }
        ]
    )
    (app,) = containers_of(smp(original, patch))
    assert app["ports"] == [
        {"containerPort": 80, "protocol": "TCP", "name": "http"},
        {"containerPort": 443},
    ]
    assert app["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "two"},
        {"name": "C", "value": "3"},
    ]


def test_smp_merges_conditions_by_type() -> None:
    original = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "Available", "status": "True"},
            ]
        }
    }
    result = smp(original, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert result["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Available", "status": "True"},
    ]


def test_smp_finalizers_merge_as_a_set() -> None:
    original = deployment()
    result = smp(original, {"metadata": {"finalizers": ["a", "c", "c"]}})
    # Union without duplicates; "c" is new so it lands before server-only "b".
    assert result["metadata"]["finalizers"] == ["a", "c", "b"]


def test_smp_delete_from_primitive_list() -> None:
    original = deployment()
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}}
    assert smp(original, patch)["metadata"]["finalizers"] == ["b"]


def test_smp_delete_from_primitive_list_runs_after_additions() -> None:
    patch = {
        "metadata": {
            "finalizers": ["c"],
            "$deleteFromPrimitiveList/finalizers": ["b"],
        }
    }
    assert smp(deployment(), patch)["metadata"]["finalizers"] == ["c", "a"]


def test_smp_atomic_lists_are_replaced() -> None:
    original = deployment({"name": "app", "args": ["--a", "--b"], "command": ["run"]})
    original["spec"]["template"]["spec"]["tolerations"] = [{"key": "x", "operator": "Exists"}]
    patch = spec_patch(
        containers=[{"name": "app", "args": ["--c"]}],
        tolerations=[{"key": "y", "operator": "Exists", "value": None}],
    )
    result = smp(original, patch)
    assert containers_of(result)[0]["args"] == ["--c"]
    assert containers_of(result)[0]["command"] == ["run"]
    assert result["spec"]["template"]["spec"]["tolerations"] == [{"key": "y", "operator": "Exists"}]


def test_smp_new_fields_are_taken_without_nulls_or_directives() -> None:
    original: dict[str, Any] = {"spec": {}}
    patch = {
        "spec": {
            "template": {
                "metadata": {"labels": {"a": "1", "b": None}},
                "spec": {
                    "$setElementOrder/containers": [{"name": "app"}],
                    "containers": [
                        {"name": "app", "image": "x"},
                        {"name": "gone", "$patch": "delete"},
                    ],
                },
            }
        }
    }
    result = smp(original, patch)
    assert result["spec"]["template"] == {
        "metadata": {"labels": {"a": "1"}},
        "spec": {"containers": [{"name": "app", "image": "x"}]},
    }


def test_smp_type_change_replaces_value() -> None:
    assert smp({"a": {"b": 1}}, {"a": "flat"}) == {"a": "flat"}
    assert smp({"a": "flat"}, {"a": {"b": 1, "c": None}}) == {"a": {"b": 1}}


# --------------------------------------------------------------------------
# Strategic merge patch: directives
# --------------------------------------------------------------------------


def test_smp_patch_replace_in_map() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}}
    patch = {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}
    assert smp(original, patch) == {"metadata": {"labels": {"c": "3"}}}


def test_smp_patch_delete_in_map() -> None:
    original = {"metadata": {"labels": {"a": "1"}, "name": "x"}}
    assert smp(original, {"metadata": {"labels": {"$patch": "delete"}}}) == {
        "metadata": {"name": "x"}
    }


def test_smp_patch_delete_list_item() -> None:
    original = deployment({"name": "app"}, {"name": "sidecar"}, {"name": "other"})
    patch = spec_patch(containers=[{"name": "sidecar", "$patch": "delete"}])
    assert [c["name"] for c in containers_of(smp(original, patch))] == ["app", "other"]


def test_smp_patch_replace_list_item_replaces_whole_list() -> None:
    original = deployment({"name": "app", "image": "a"}, {"name": "sidecar"})
    patch = spec_patch(containers=[{"$patch": "replace"}, {"name": "only", "image": "o"}])
    assert containers_of(smp(original, patch)) == [{"name": "only", "image": "o"}]


def test_smp_retain_keys() -> None:
    original = {
        "spec": {
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1},
            }
        }
    }
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert smp(original, patch) == {"spec": {"strategy": {"type": "Recreate"}}}


def test_smp_retain_keys_keeps_listed_fields_merged() -> None:
    original = {"v": {"name": "vol", "emptyDir": {}, "hostPath": {"path": "/x"}}}
    patch = {"v": {"$retainKeys": ["name", "hostPath"], "hostPath": {"type": "Directory"}}}
    assert smp(original, patch) == {
        "v": {"name": "vol", "hostPath": {"path": "/x", "type": "Directory"}}
    }


def test_smp_retain_keys_must_cover_patch_content() -> None:
    patch = {"spec": {"$retainKeys": ["type"], "type": "Recreate", "other": 1}}
    with pytest.raises(ApiError) as info:
        strategic_merge_patch({"spec": {}}, patch, builtin_list_type)
    assert info.value.code == 422
    assert cause(info.value) == "patch content doesn't match retainKeys list"


def test_smp_set_element_order_reorders_keyed_list() -> None:
    original = deployment({"name": "a"}, {"name": "b"}, {"name": "c"})
    patch = spec_patch(
        **{"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]}
    )
    assert [c["name"] for c in containers_of(smp(original, patch))] == ["c", "a", "b"]


def test_smp_set_element_order_keeps_server_only_items_in_place() -> None:
    # "injected" is not in the client's config; it keeps its place relative
    # to the items around it in the live list.
    original = deployment({"name": "app"}, {"name": "injected"}, {"name": "web"})
    patch = spec_patch(
        **{
            "$setElementOrder/containers": [{"name": "app"}, {"name": "web"}, {"name": "new"}],
            "containers": [{"name": "new", "image": "n"}],
        }
    )
    names = [c["name"] for c in containers_of(smp(original, patch))]
    assert names == ["app", "injected", "web", "new"]


def test_smp_set_element_order_for_primitive_list() -> None:
    original = {"metadata": {"finalizers": ["a", "b", "c"]}}
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"]}}
    assert smp(original, patch)["metadata"]["finalizers"] == ["c", "b", "a"]


def test_smp_kubectl_client_side_apply_shape() -> None:
    """The patch kubectl apply sends when only a container image changed."""
    last_applied = '{"apiVersion":"apps/v1","kind":"Deployment"}'
    original = deployment(
        {"name": "app", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
        {"name": "istio-proxy", "image": "proxyv2"},
    )
    original["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "other": "x",
    }
    patch = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied}
        },
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "app"}],
                    "containers": [{"image": "nginx:1.27", "name": "app"}],
                }
            }
        },
    }
    result = smp(original, patch)
    assert result["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": last_applied,
        "other": "x",
    }
    assert containers_of(result) == [
        {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
        {"name": "istio-proxy", "image": "proxyv2"},
    ]
    assert result["spec"]["replicas"] == 1
    assert dollar_keys(result) == []


def test_smp_unknown_dollar_keys_are_never_stored() -> None:
    patch = {"$unknown": 1, "metadata": {"$foo": {"x": 1}, "labels": {"$bar": "y", "a": "b"}}}
    result = smp({"metadata": {}}, patch)
    assert result == {"metadata": {"labels": {"a": "b"}}}


def test_smp_root_directives() -> None:
    assert smp({"a": 1, "b": 2}, {"$patch": "replace", "c": 3}) == {"c": 3}
    assert smp({"a": 1}, {"$patch": "delete"}) == {}


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"metadata": {"$patch": "bogus"}}, "unknown patch type: bogus in map: map[$patch:bogus]"),
        (spec_patch(containers=[{"name": "x", "$patch": "bogus"}]), "unknown patch type: bogus"),
        (spec_patch(containers=[{"name": "x", "$patch": "merge"}]), "merging lists cannot yet"),
        (
            spec_patch(containers=[{"$patch": "delete"}]),
            "does not contain declared merge key: name",
        ),
        (
            spec_patch(containers=[{"image": "x"}]),
            "map: map[image:x] does not contain declared merge",
        ),
        ({"metadata": {"$retainKeys": "name"}}, "invalid patch format of retainKeys"),
        (
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
            "invalid patch format of primitive",
        ),
        (
            {"metadata": {"$setElementOrder/finalizers": "a"}},
            "invalid patch format of setElementOrder",
        ),
        (
            spec_patch(
                **{
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "b"}, {"name": "a"}],
                }
            ),
            "doesn't match $setElementOrder list",
        ),
    ],
)
def test_smp_malformed_directives_are_400(patch: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ApiError) as info:
        strategic_merge_patch(deployment({"name": "a"}, {"name": "b"}), patch, builtin_list_type)
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    assert fragment in info.value.message


def test_smp_lists_of_lists_are_422() -> None:
    with pytest.raises(ApiError) as info:
        strategic_merge_patch(
            {"metadata": {"finalizers": ["a"]}},
            {"metadata": {"finalizers": [["b"]]}},
            builtin_list_type,
        )
    assert info.value.code == 422
    assert cause(info.value) == "lists of lists are not supported"


# --------------------------------------------------------------------------
# apply_patch dispatch
# --------------------------------------------------------------------------


def test_apply_patch_dispatches_each_type() -> None:
    original = {"metadata": {"name": "x", "finalizers": ["a"]}, "data": {"k": "v"}}
    merged = apply_patch(
        MERGE_PATCH + "; charset=utf-8",
        original,
        {"metadata": {"finalizers": ["b"]}},
        builtin_list_type,
        builtin=True,
    )
    assert merged["metadata"]["finalizers"] == ["b"]
    strategic = apply_patch(
        STRATEGIC_MERGE_PATCH,
        original,
        {"metadata": {"finalizers": ["b"]}},
        builtin_list_type,
        builtin=True,
    )
    assert strategic["metadata"]["finalizers"] == ["b", "a"]
    patched = apply_patch(
        JSON_PATCH,
        original,
        [{"op": "replace", "path": "/data/k", "value": "w"}],
        builtin_list_type,
        builtin=False,
    )
    assert patched["data"] == {"k": "w"}
    assert original["data"] == {"k": "v"}


def test_apply_patch_merge_patch_for_custom_resources() -> None:
    resolver = SchemaListTypes(None)
    result = apply_patch(
        MERGE_PATCH, {"spec": {"a": 1, "b": 2}}, {"spec": {"a": None}}, resolver, builtin=False
    )
    assert result == {"spec": {"b": 2}}


def test_apply_patch_refuses_strategic_merge_for_custom_resources() -> None:
    with pytest.raises(ApiError) as info:
        apply_patch(STRATEGIC_MERGE_PATCH, {}, {}, SchemaListTypes(None), builtin=False)
    err = info.value
    assert (err.code, err.reason) == (415, "UnsupportedMediaType")
    assert err.message == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    assert str(err) == err.message


def test_apply_patch_unknown_content_type_is_415() -> None:
    with pytest.raises(ApiError) as info:
        apply_patch("text/plain", {}, {}, builtin_list_type, builtin=True)
    assert info.value.code == 415
    # No patch type at all: v1.35's bare answer.
    assert info.value.status()["message"] == "415: Unsupported Media Type"


def test_apply_patch_leaves_server_side_apply_to_the_caller() -> None:
    with pytest.raises(ValueError, match="server-side apply"):
        apply_patch(APPLY_PATCH_YAML + "; charset=utf-8", {}, {}, builtin_list_type, builtin=True)


@pytest.mark.parametrize("body", [None, ["x"], "s"])
def test_apply_patch_merge_patch_needs_an_object(body: Any) -> None:
    with pytest.raises(ApiError) as info:
        apply_patch(MERGE_PATCH, {}, body, builtin_list_type, builtin=True)
    assert (info.value.code, info.value.message) == (400, "Invalid JSON Patch")


def test_apply_patch_strategic_merge_body_must_be_an_object() -> None:
    with pytest.raises(ApiError) as info:
        apply_patch(STRATEGIC_MERGE_PATCH, {}, [1], builtin_list_type, builtin=True)
    assert info.value.code == 400
    assert info.value.message == (
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    )
