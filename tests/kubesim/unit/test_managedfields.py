"""Unit tests for kubesim.managedfields: managedFields bookkeeping and server-side apply.

The golden tests replay the managedFields that a real kube-apiserver v1.24
recorded (``tests/fixtures/apiserver``); timestamps are the recorded ones,
so entries compare exactly, including the order of keys.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.listtypes import SchemaListTypes, builtin_list_type
from kubesim.managedfields import (
    ApplyConflict,
    Conflict,
    conflict_causes,
    conflict_message,
    default_reset_fields,
    fieldset_from_object,
    format_field_path,
    from_fields_v1,
    server_side_apply,
    to_fields_v1,
    update_managed_fields,
)
from tests.fixtures import APISERVER_RECORDINGS

REFERENCE = APISERVER_RECORDINGS
T0 = "2026-11-22T06:23:58Z"
T1 = "2026-11-22T06:24:01Z"
T2 = "2026-11-22T07:00:00Z"

Obj = dict[str, Any]


def exchanges(name: str) -> list[Obj]:
    """The recorded request/response pairs of one reference file."""
    with (REFERENCE / name).open() as f:
        data: list[Obj] = json.load(f)["exchanges"]
    return data


def managed_of(obj: Obj) -> list[Obj]:
    """The managedFields of an object, [] when it has none."""
    entries: list[Obj] = obj.get("metadata", {}).get("managedFields", [])
    return entries


def same_json(a: Any, b: Any) -> bool:
    """Equal including the order of keys, as they would go on the wire."""
    return json.dumps(a) == json.dumps(b)


def update(
    old: Obj | None,
    new: Obj,
    managed: list[Obj],
    *,
    manager: str = "capture",
    api_version: str = "v1",
    subresource: str | None = None,
    now: str = T0,
    list_type: Any = builtin_list_type,
) -> list[Obj]:
    """update_managed_fields, checking that it leaves its arguments alone."""
    frozen = copy.deepcopy((old, new, managed))
    result = update_managed_fields(
        old,
        new,
        managed,
        manager=manager,
        api_version=api_version,
        subresource=subresource,
        now=now,
        list_type=list_type,
    )
    assert (old, new, managed) == frozen
    return result


def apply(
    live: Obj | None,
    applied: Obj,
    managed: list[Obj],
    *,
    manager: str,
    force: bool = False,
    api_version: str = "v1",
    subresource: str | None = None,
    now: str = T0,
    list_type: Any = builtin_list_type,
) -> tuple[Obj, list[Obj]]:
    """server_side_apply, checking that it leaves its arguments alone."""
    frozen = copy.deepcopy((live, applied, managed))
    result = server_side_apply(
        live,
        applied,
        managed,
        manager=manager,
        force=force,
        api_version=api_version,
        subresource=subresource,
        now=now,
        list_type=list_type,
    )
    assert (live, applied, managed) == frozen
    return result


def fields_of(managed: list[Obj], manager: str, operation: str = "Apply") -> Obj:
    """The fieldsV1 of one entry."""
    for entry in managed:
        if entry["manager"] == manager and entry["operation"] == operation:
            fields: Obj = entry["fieldsV1"]
            return fields
    raise AssertionError(f"no {operation} entry for {manager}: {managed}")


# --------------------------------------------------------------------------
# Golden: server-side-apply.json


def manager_of(request: Obj) -> tuple[str, bool]:
    """fieldManager and force of a recorded PATCH."""
    query = request["path"].partition("?")[2]
    params = dict(p.split("=", 1) for p in query.split("&") if p)
    return params["fieldManager"], params.get("force") == "true"


def test_golden_server_side_apply_sequence() -> None:
    steps = exchanges("server-side-apply.json")
    live: Obj | None = None
    managed: list[Obj] = []
    for step in steps[:4]:
        request, response = step["request"], step["response"]
        manager, force = manager_of(request)
        if response["status"] == 409:
            with pytest.raises(ApplyConflict) as raised:
                apply(live, request["body"], managed, manager=manager, force=force)
            assert raised.value.api_error().status() == response["body"]
            continue
        live, managed = apply(live, request["body"], managed, manager=manager, force=force)
        expected = response["body"]
        assert same_json(managed, managed_of(expected))
        assert live["data"] == expected["data"]
        assert live["metadata"]["managedFields"] == managed
    assert live is not None
    # The last apply of mgr-a (data: {}) leaves it owning the empty map.
    assert fields_of(managed, "mgr-a") == {"f:data": {}}
    assert live["data"] == {"key": "B"}


def test_golden_conflict_message_and_causes() -> None:
    step = exchanges("server-side-apply.json")[1]
    conflict = Conflict("mgr-a", ".data.key")
    assert conflict_message([conflict]) == step["response"]["body"]["message"]
    assert conflict_causes([conflict]) == step["response"]["body"]["details"]["causes"]


def test_golden_put_that_changes_nothing_keeps_managed_fields() -> None:
    steps = exchanges("server-side-apply.json")
    live = steps[3]["response"]["body"]
    put = steps[5]["request"]["body"]
    got = update(live, put, managed_of(live), manager="work-agent", now=T2)
    assert got == managed_of(steps[5]["response"]["body"])


# --------------------------------------------------------------------------
# Golden: crud-and-errors.json


def test_golden_namespace_create_owns_defaulted_label() -> None:
    step = exchanges("crud-and-errors.json")[0]
    created = step["response"]["body"]
    # What the field manager saw: the request after defaulting (the name
    # label); spec.finalizers and status are set later by the strategy.
    new = copy.deepcopy(step["request"]["body"])
    new["metadata"]["labels"] = created["metadata"]["labels"]
    assert same_json(update(None, new, []), managed_of(created))
    # status is never owned by writes to the main resource, whatever it holds.
    assert same_json(update(None, created | {"spec": {}}, []), managed_of(created))


def test_golden_configmap_writes() -> None:
    steps = exchanges("crud-and-errors.json")
    created = steps[1]["response"]["body"]
    assert same_json(update(None, steps[1]["request"]["body"], []), managed_of(created))
    # merge patch, JSON patch and strategic merge patch by the same manager
    previous = created
    for index in (8, 10, 11):
        new = steps[index]["response"]["body"]
        got = update(previous, new, managed_of(previous))
        assert same_json(got, managed_of(new))
        previous = new


def test_golden_listed_items_own_their_labels() -> None:
    steps = exchanges("crud-and-errors.json")
    items = steps[12]["response"]["body"]["items"] + steps[13]["response"]["body"]["items"]
    for item in items:
        new = {"apiVersion": "v1", "kind": "ConfigMap", **item}
        assert same_json(update(None, new, []), managed_of(item))


def test_golden_finalizers_are_a_set_and_removing_them_drops_the_entry() -> None:
    steps = exchanges("crud-and-errors.json")
    created = steps[16]["response"]["body"]
    # The request's "data: {}" is an empty Go map: gone before the field
    # manager looks, so not owned.
    assert same_json(update(None, steps[16]["request"]["body"], []), managed_of(created))
    terminating = steps[18]["response"]["body"]
    after = copy.deepcopy(terminating)
    del after["metadata"]["finalizers"]
    del after["metadata"]["managedFields"]
    assert update(terminating, after, managed_of(terminating)) == []
    assert "managedFields" not in steps[19]["response"]["body"]["metadata"]


# --------------------------------------------------------------------------
# Golden: defaulting-and-generation.json


def test_golden_deployment_create_and_patches() -> None:
    steps = exchanges("defaulting-and-generation.json")
    created = steps[0]["response"]["body"]
    got = update(None, created, [], api_version="apps/v1")
    assert same_json(got, managed_of(created))
    fields = got[0]["fieldsV1"]["f:spec"]
    assert fields["f:selector"] == {}  # a label selector is atomic
    assert "." not in fields["f:template"]["f:spec"]["f:containers"]
    previous = created
    for index in (4, 5):
        new = steps[index]["response"]["body"]
        got = update(previous, new, managed_of(previous), api_version="apps/v1")
        assert same_json(got, managed_of(new))
        previous = new


def test_golden_job_create() -> None:
    step = exchanges("defaulting-and-generation.json")[1]
    created = step["response"]["body"]
    # The selector and labels are generated by the strategy, after the field
    # manager ran: nobody owns them.
    new = copy.deepcopy(created)
    del new["spec"]["selector"]
    del new["metadata"]["labels"]
    del new["spec"]["template"]["metadata"]["labels"]
    assert same_json(update(None, new, [], api_version="batch/v1"), managed_of(created))


def test_golden_service_create() -> None:
    step = exchanges("defaulting-and-generation.json")[2]
    created = step["response"]["body"]
    # Cluster IPs and IP families are allocated after the field manager ran.
    new = copy.deepcopy(created)
    for allocated in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        del new["spec"][allocated]
    assert same_json(update(None, new, []), managed_of(created))


def test_golden_service_account_without_fields_has_no_entry() -> None:
    step = exchanges("defaulting-and-generation.json")[3]
    assert update(None, step["response"]["body"], []) == []
    assert "managedFields" not in step["response"]["body"]["metadata"]


# --------------------------------------------------------------------------
# Golden: crd-lifecycle.json


def test_golden_crd_create_and_status_update() -> None:
    steps = exchanges("crd-lifecycle.json")
    created = steps[0]["response"]["body"]
    got = update(None, created, [], api_version="apiextensions.k8s.io/v1")
    assert same_json(got, managed_of(created))
    established = steps[1]["response"]["body"]
    got = update(
        created,
        established,
        managed_of(created),
        manager="kube-apiserver",
        api_version="apiextensions.k8s.io/v1",
        subresource="status",
    )
    assert same_json(got, managed_of(established))


def test_golden_custom_resource_writes() -> None:
    steps = exchanges("crd-lifecycle.json")
    crd = steps[0]["response"]["body"]
    list_type = SchemaListTypes(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    version = "capture.example.com/v1"
    created = steps[3]["response"]["body"]
    got = update(None, created, [], api_version=version, now=T1, list_type=list_type)
    # Custom resources go out with sorted keys; the entries are the same.
    assert got == managed_of(created)
    # A main-resource patch of status is not owned (the strategy drops it too).
    patched = steps[4]["response"]["body"]
    with_status = patched | {"status": {"x": 1}}
    got = update(created, with_status, got, api_version=version, now=T1, list_type=list_type)
    assert got == managed_of(patched)
    # Through the status subresource only status is owned.
    status = steps[5]["response"]["body"]
    with_spec = status | {"spec": {"size": 3}}
    got = update(
        patched,
        with_spec,
        got,
        api_version=version,
        subresource="status",
        now=T1,
        list_type=list_type,
    )
    assert got == managed_of(status)


# --------------------------------------------------------------------------
# Golden: authorization.json, watch.json


def test_golden_subject_access_review_create() -> None:
    step = exchanges("authorization.json")[0]
    reviewed = step["response"]["body"]
    got = update(None, step["request"]["body"], [], api_version="authorization.k8s.io/v1", now=T1)
    assert same_json(got, managed_of(reviewed))
    # The answer (status) is the server's, never the creator's.
    got = update(None, reviewed, [], api_version="authorization.k8s.io/v1", now=T1)
    assert same_json(got, managed_of(reviewed))


def test_golden_watch_history_of_managed_fields() -> None:
    events = exchanges("watch.json")[1]["response"]["events"]
    history = [e["object"] for e in events if e["object"]["metadata"].get("name") == "c1"]
    previous: Obj | None = None
    managed: list[Obj] = []
    for obj in history:
        managed = update(previous, obj, managed)
        assert same_json(managed, managed_of(obj))
        previous = obj


# --------------------------------------------------------------------------
# FieldsV1


def test_fields_v1_round_trip_and_order() -> None:
    fs = frozenset(
        {
            ("f:spec", "f:ports"),
            ("f:spec", "f:ports", 'k:{"port":443,"protocol":"TCP"}'),
            ("f:spec", "f:ports", 'k:{"port":443,"protocol":"TCP"}', "f:port"),
            ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'),
            ("f:spec", "f:type"),
            ("f:metadata", "f:finalizers", 'v:"b"'),
            ("f:metadata", "f:finalizers", 'v:"a"'),
        }
    )
    encoded = to_fields_v1(fs)
    assert from_fields_v1(encoded) == fs
    assert list(encoded) == ["f:metadata", "f:spec"]
    ports = encoded["f:spec"]["f:ports"]
    # "." first, then items in value order (80 before 443, not string order)
    assert list(ports) == [
        ".",
        'k:{"port":80,"protocol":"TCP"}',
        'k:{"port":443,"protocol":"TCP"}',
    ]
    assert ports['k:{"port":443,"protocol":"TCP"}'] == {".": {}, "f:port": {}}
    assert list(encoded["f:metadata"]["f:finalizers"]) == ['v:"a"', 'v:"b"']


def test_from_fields_v1_dot_alone_is_a_member() -> None:
    assert from_fields_v1({"f:a": {".": {}}, "f:b": {}}) == {("f:a",), ("f:b",)}
    assert to_fields_v1(from_fields_v1({"f:a": {".": {}}})) == {"f:a": {}}


def test_format_field_path() -> None:
    assert format_field_path(("f:data", "f:key")) == ".data.key"
    assert (
        format_field_path(
            ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"c"}', "f:image")
        )
        == '.spec.template.spec.containers[name="c"].image'
    )
    assert format_field_path(("f:metadata", "f:finalizers", 'v:"x"')) == (
        '.metadata.finalizers[="x"]'
    )
    assert format_field_path(("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')) == (
        '.ports[containerPort=80,protocol="TCP"]'
    )


# --------------------------------------------------------------------------
# Field sets of objects


def pod(*containers: Obj, **extra: Any) -> Obj:
    """A Pod (built-in kind) with the given containers."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", **extra},
        "spec": {"containers": list(containers)},
    }


def test_fieldset_from_object_with_and_without_dots() -> None:
    obj = pod(
        {"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
        labels={"a": "1"},
    )
    obj["metadata"]["uid"] = "u"
    obj["metadata"]["resourceVersion"] = "1"
    item = ("f:spec", "f:containers", 'k:{"name":"c"}')
    port = (*item, "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')
    applied = fieldset_from_object(obj, builtin_list_type, with_dots=False)
    assert applied == {
        ("f:metadata", "f:labels", "f:a"),
        item,
        (*item, "f:name"),
        (*item, "f:image"),
        port,
        (*port, "f:containerPort"),
        (*port, "f:protocol"),
    }
    created = fieldset_from_object(obj, builtin_list_type, with_dots=True)
    # Update-style: maps and lists that appear are owned too, except the
    # containers a Pod always has (spec, spec.containers, metadata).
    assert created == applied | {("f:metadata", "f:labels"), (*item, "f:ports")}


def test_empty_maps_are_leaves_and_nulls_are_not_owned_in_built_in_kinds() -> None:
    obj = pod({"name": "c", "resources": {}, "securityContext": None})
    fs = fieldset_from_object(obj, builtin_list_type, with_dots=True)
    item = ("f:spec", "f:containers", 'k:{"name":"c"}')
    assert fs == {item, (*item, "f:name"), (*item, "f:resources")}


def test_reset_fields_defaults() -> None:
    assert default_reset_fields(None) == {"status"}
    assert default_reset_fields("status") == {"spec"}
    assert default_reset_fields("scale") == frozenset()


# --------------------------------------------------------------------------
# Update operations


def cm(data: Obj | None = None, **meta: Any) -> Obj:
    """A ConfigMap."""
    obj: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta}}
    if data is not None:
        obj["data"] = data
    return obj


def test_update_takes_changed_fields_from_other_managers() -> None:
    managed = update(None, cm({"a": "1", "b": "2"}), [], manager="one")
    managed = update(cm({"a": "1", "b": "2"}), cm({"a": "x", "b": "2"}), managed, manager="two")
    assert fields_of(managed, "one", "Update") == {"f:data": {".": {}, "f:b": {}}}
    assert fields_of(managed, "two", "Update") == {"f:data": {"f:a": {}}}


def test_update_keeps_previous_fields_of_the_same_manager() -> None:
    managed = update(None, cm({"a": "1"}), [], manager="one", now=T0)
    managed = update(cm({"a": "1"}), cm({"a": "1", "b": "2"}), managed, manager="one", now=T2)
    assert managed == [
        {
            "manager": "one",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T2,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}, "f:b": {}}},
        }
    ]


def test_update_that_only_removes_keeps_the_time() -> None:
    managed = update(None, cm({"a": "1", "b": "2"}), [], manager="one", now=T0)
    managed = update(cm({"a": "1", "b": "2"}), cm({"a": "1"}), managed, manager="two", now=T2)
    assert managed == [
        {
            "manager": "one",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}},
        }
    ]


def test_update_entries_per_api_version_and_subresource() -> None:
    managed = update(None, cm({"a": "1"}), [], manager="m", api_version="v1", now=T0)
    managed = update(
        cm({"a": "1"}), cm({"a": "1", "b": "2"}), managed, manager="m", api_version="v2", now=T0
    )
    managed = update(
        cm({"a": "1", "b": "2"}),
        cm({"a": "1", "b": "2"}) | {"status": {"s": "x"}},
        managed,
        manager="m",
        subresource="status",
        now=T0,
    )
    assert [(e["apiVersion"], e.get("subresource")) for e in managed] == [
        ("v1", None),
        ("v1", "status"),
        ("v2", None),
    ]


def test_entries_are_sorted_apply_first_then_by_time() -> None:
    managed = update(None, cm({"a": "1"}), [], manager="zz-early", now=T0)
    obj, managed = apply(cm({"a": "1"}), cm({"b": "2"}), managed, manager="late-applier", now=T2)
    managed = update(
        obj, obj | {"data": {"a": "1", "b": "2", "c": "3"}}, managed, manager="aa", now=T1
    )
    assert [(e["operation"], e["manager"]) for e in managed] == [
        ("Apply", "late-applier"),
        ("Update", "zz-early"),
        ("Update", "aa"),
    ]


# --------------------------------------------------------------------------
# Server-side apply


def deployment(*containers: Obj, replicas: int | None = None) -> Obj:
    """An applied Deployment configuration."""
    spec: Obj = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": list(containers)},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": spec,
    }


CONTAINERS = ("f:spec", "f:template", "f:spec", "f:containers")


def test_apply_keyed_lists_with_one_and_two_keys() -> None:
    config = deployment(
        {
            "name": "c",
            "image": "nginx:1",
            "ports": [
                {"containerPort": 80, "protocol": "TCP"},
                {"containerPort": 80, "protocol": "UDP"},
            ],
        }
    )
    obj, managed = apply(None, config, [], manager="a", api_version="apps/v1")
    assert fields_of(managed, "a") == {
        "f:spec": {
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"c"}': {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                    "f:protocol": {},
                                },
                                'k:{"containerPort":80,"protocol":"UDP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                    "f:protocol": {},
                                },
                            },
                        }
                    }
                },
            },
        }
    }
    # A second applier adds a container and a port: items merge by key.
    other = deployment(
        {"name": "c", "ports": [{"containerPort": 443, "protocol": "TCP"}]},
        {"name": "sidecar", "image": "envoy"},
    )
    obj, managed = apply(obj, other, managed, manager="b", api_version="apps/v1")
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["c", "sidecar"]
    assert [(p["containerPort"], p["protocol"]) for p in containers[0]["ports"]] == [
        (80, "TCP"),
        (80, "UDP"),
        (443, "TCP"),
    ]
    assert containers[0]["image"] == "nginx:1"
    # A changed image conflicts, with the keyed path in the message.
    changed = deployment({"name": "c", "image": "nginx:2"})
    with pytest.raises(ApplyConflict) as raised:
        apply(obj, changed, managed, manager="b", api_version="apps/v1")
    assert raised.value.conflicts == [("a", '.spec.template.spec.containers[name="c"].image')]
    assert raised.value.message == (
        'Apply failed with 1 conflict: conflict with "a": '
        '.spec.template.spec.containers[name="c"].image'
    )


def test_apply_removes_items_the_applier_dropped_unless_another_applier_has_them() -> None:
    first = deployment({"name": "c", "image": "i"}, {"name": "d", "image": "j"})
    obj, managed = apply(None, first, [], manager="a", api_version="apps/v1")
    obj, managed = apply(
        obj, deployment({"name": "d", "image": "j"}), managed, manager="b", api_version="apps/v1"
    )
    # "a" stops applying both containers: "c" goes, "d" stays for "b".
    obj, managed = apply(obj, deployment(), managed, manager="a", api_version="apps/v1")
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert containers == [{"name": "d", "image": "j"}]
    assert 'k:{"name":"c"}' not in json.dumps(managed)


def test_apply_sets_union_and_prune() -> None:
    obj, managed = apply(None, cm(finalizers=["x"]), [], manager="a")
    obj, managed = apply(obj, cm(finalizers=["y"]), managed, manager="b")
    assert obj["metadata"]["finalizers"] == ["x", "y"]
    assert fields_of(managed, "a") == {"f:metadata": {"f:finalizers": {'v:"x"': {}}}}
    # Both apply "y": shared, no conflict.
    obj, managed = apply(obj, cm(finalizers=["x", "y"]), managed, manager="a")
    obj, managed = apply(obj, cm(finalizers=[]), managed, manager="b")
    assert obj["metadata"]["finalizers"] == ["x", "y"]
    obj, managed = apply(obj, cm(finalizers=["y"]), managed, manager="a")
    assert obj["metadata"]["finalizers"] == ["y"]
    assert [e["manager"] for e in managed] == ["a"]


def test_apply_atomic_list_is_replaced_and_owned_whole() -> None:
    config = deployment({"name": "c", "image": "i", "args": ["--a", "--b"]})
    obj, managed = apply(None, config, [], manager="a", api_version="apps/v1")
    item = fields_of(managed, "a")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert item['k:{"name":"c"}']["f:args"] == {}
    with pytest.raises(ApplyConflict) as raised:
        apply(
            obj,
            deployment({"name": "c", "args": ["--a"]}),
            managed,
            manager="b",
            api_version="apps/v1",
        )
    assert raised.value.conflicts == [("a", '.spec.template.spec.containers[name="c"].args')]
    obj, managed = apply(
        obj,
        deployment({"name": "c", "args": ["--a"]}),
        managed,
        manager="b",
        force=True,
        api_version="apps/v1",
    )
    assert obj["spec"]["template"]["spec"]["containers"][0]["args"] == ["--a"]


def test_conflicts_with_several_managers() -> None:
    obj, managed = apply(None, cm({"a": "1", "b": "1"}), [], manager="mgr-b")
    obj, managed = apply(obj, cm({"c": "1"}), managed, manager="mgr-a")
    managed = update(obj, obj | {"data": {**obj["data"], "d": "1"}}, managed, manager="editor")
    obj["data"]["d"] = "1"
    new = cm({"a": "2", "b": "2", "c": "2", "d": "2"})
    with pytest.raises(ApplyConflict) as raised:
        apply(obj, new, managed, manager="mine")
    err = raised.value
    assert err.conflicts == [
        ("editor", ".data.d"),
        ("mgr-a", ".data.c"),
        ("mgr-b", ".data.a"),
        ("mgr-b", ".data.b"),
    ]
    assert err.message == (
        "Apply failed with 4 conflicts: "
        'conflicts with "editor" using v1:\n- .data.d\n'
        'conflicts with "mgr-a":\n- .data.c\n'
        'conflicts with "mgr-b":\n- .data.a\n- .data.b'
    )
    assert err.causes == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "editor" using v1',
            "field": ".data.d",
        },
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr-a"', "field": ".data.c"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr-b"', "field": ".data.a"},
        {"reason": "FieldManagerConflict", "message": 'conflict with "mgr-b"', "field": ".data.b"},
    ]
    assert str(err) == err.message
    status = err.api_error().status()
    assert status["code"] == 409
    assert status["reason"] == "Conflict"
    assert status["details"] == {"causes": err.causes}


def test_force_takes_ownership_from_every_manager() -> None:
    obj, managed = apply(None, cm({"a": "1", "b": "1"}), [], manager="mgr-b")
    managed = update(obj, obj | {"data": {"a": "1", "b": "1", "e": "1"}}, managed, manager="editor")
    obj["data"]["e"] = "1"
    obj, managed = apply(obj, cm({"a": "2", "e": "2"}), managed, manager="mine", force=True)
    assert obj["data"] == {"a": "2", "b": "1", "e": "2"}
    assert fields_of(managed, "mgr-b") == {"f:data": {"f:b": {}}}
    assert fields_of(managed, "mine") == {"f:data": {"f:a": {}, "f:e": {}}}
    # The editor owned only "e" (and the map it did not create): entry gone.
    assert [e["manager"] for e in managed] == ["mgr-b", "mine"]


def test_shared_ownership_with_equal_values() -> None:
    obj, managed = apply(None, cm({"a": "1"}), [], manager="one")
    obj, managed = apply(obj, cm({"a": "1"}), managed, manager="two")
    assert fields_of(managed, "one") == fields_of(managed, "two") == {"f:data": {"f:a": {}}}
    # "one" lets go: "two" still owns it, so the value stays.
    obj, managed = apply(obj, cm(), managed, manager="one")
    assert obj["data"] == {"a": "1"}
    assert [e["manager"] for e in managed] == ["two"]
    # Now "two" changes it freely.
    obj, managed = apply(obj, cm({"a": "2"}), managed, manager="two")
    assert obj["data"] == {"a": "2"}


def test_update_managers_share_with_appliers_but_do_not_keep_fields() -> None:
    obj, managed = apply(None, cm({"a": "1"}), [], manager="applier")
    # An Update that writes the same value changes nothing: no ownership.
    assert update(obj, copy.deepcopy(obj), managed, manager="editor") == managed
    # An Update that changes the value takes it.
    edited = obj | {"data": {"a": "2"}}
    managed = update(obj, edited, managed, manager="editor")
    assert [e["manager"] for e in managed] == ["editor"]
    # Re-applying the old value conflicts with the Update manager...
    with pytest.raises(ApplyConflict) as raised:
        apply(edited, cm({"a": "1"}), managed, manager="applier")
    assert raised.value.conflicts == [("editor", ".data.a")]
    # ...applying the edited value shares it; dropping it later removes it
    # although the editor owns it too (only appliers keep fields).
    obj, managed = apply(edited, cm({"a": "2"}), managed, manager="applier")
    assert fields_of(managed, "editor", "Update") == {"f:data": {"f:a": {}}}
    obj, managed = apply(obj, cm({"b": "1"}), managed, manager="applier")
    assert obj["data"] == {"b": "1"}
    assert [e["manager"] for e in managed] == ["applier"]


def test_apply_conflicts_with_own_update_entry() -> None:
    managed = update(None, cm({"a": "1"}), [], manager="tool")
    with pytest.raises(ApplyConflict) as raised:
        apply(cm({"a": "1"}), cm({"a": "2"}), managed, manager="tool")
    assert raised.value.message == (
        'Apply failed with 1 conflict: conflict with "tool" using v1: .data.a'
    )


def test_labels_annotations_and_owner_references_take_part() -> None:
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"}
    config = cm(labels={"l": "1"}, annotations={"n": "1"}, ownerReferences=[owner])
    obj, managed = apply(None, config, [], manager="a")
    assert fields_of(managed, "a") == {
        "f:metadata": {
            "f:annotations": {"f:n": {}},
            "f:labels": {"f:l": {}},
            "f:ownerReferences": {
                'k:{"uid":"u1"}': {
                    ".": {},
                    "f:apiVersion": {},
                    "f:kind": {},
                    "f:name": {},
                    "f:uid": {},
                }
            },
        }
    }
    obj, managed = apply(obj, cm(labels={"l": "1"}), managed, manager="a")
    assert "annotations" not in json.dumps(managed)
    assert obj["metadata"]["annotations"] == {}
    assert obj["metadata"]["ownerReferences"] == []
    assert obj["metadata"]["labels"] == {"l": "1"}


def test_no_op_apply_keeps_time_and_server_fields() -> None:
    live, managed = apply(None, cm({"a": "1"}), [], manager="a", now=T0)
    live["metadata"] |= {"uid": "u", "resourceVersion": "7", "creationTimestamp": T0}
    config = cm({"a": "1"}, resourceVersion="1", uid="other")
    obj, again = apply(live, config, managed, manager="a", now=T2)
    assert again == managed
    assert obj["metadata"]["resourceVersion"] == "7"
    assert obj["metadata"]["uid"] == "u"


def test_applied_null_unsets_the_field() -> None:
    obj, managed = apply(None, cm({"a": "1", "b": "2"}), [], manager="a")
    obj, managed = apply(obj, cm({"a": None, "b": "2"}), managed, manager="a")
    assert obj["data"] == {"b": "2"}


def test_apply_through_status_subresource_owns_only_status() -> None:
    live = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1},
    }
    config = live | {"spec": {"replicas": 5}, "status": {"replicas": 1}}
    obj, managed = apply(
        live, config, [], manager="ctl", subresource="status", api_version="apps/v1"
    )
    assert obj["spec"] == {"replicas": 1}
    assert obj["status"] == {"replicas": 1}
    assert managed[0]["subresource"] == "status"
    assert managed[0]["fieldsV1"] == {"f:status": {"f:replicas": {}}}


def test_custom_resource_apply_undeclared_maps_are_members() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer"},
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object"},
                    },
                    "labels": {"type": "object", "x-kubernetes-map-type": "atomic"},
                },
                "x-kubernetes-preserve-unknown-fields": True,
            }
        },
    }
    list_type = SchemaListTypes(schema)
    config = {
        "apiVersion": "x.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {
            "size": 1,
            "items": [{"name": "a", "v": 1}],
            "labels": {"k": "v"},
            "extra": {"deep": 1},
        },
    }
    _, managed = apply(None, config, [], manager="a", list_type=list_type)
    assert fields_of(managed, "a") == {
        "f:spec": {
            "f:extra": {".": {}, "f:deep": {}},
            "f:items": {'k:{"name":"a"}': {".": {}, "f:name": {}, "f:v": {}}},
            "f:labels": {},
            "f:size": {},
        }
    }


def test_list_merge_keeps_live_order_and_appends_new_items() -> None:
    live = pod({"name": "a", "image": "1"}, {"name": "b", "image": "1"})
    obj, _ = apply(
        live,
        pod({"name": "c", "image": "2"}, {"name": "a", "image": "2"}),
        [],
        manager="m",
    )
    assert obj["spec"]["containers"] == [
        {"name": "a", "image": "2"},
        {"name": "b", "image": "1"},
        {"name": "c", "image": "2"},
    ]


def test_conflict_helpers_accept_plain_tuples() -> None:
    conflicts = [("mgr-a", ".data.a"), ("mgr-a", ".data.b")]
    assert conflict_message(conflicts) == (
        'Apply failed with 2 conflicts: conflicts with "mgr-a":\n- .data.a\n- .data.b'
    )
    assert conflict_causes(conflicts)[1] == {
        "reason": "FieldManagerConflict",
        "message": 'conflict with "mgr-a"',
        "field": ".data.b",
    }
    status_conflict = Conflict(
        "kubelet", ".status.x", operation="Update", api_version="v1", subresource="status"
    )
    assert status_conflict == ("kubelet", ".status.x")
    assert conflict_message([status_conflict]) == (
        'Apply failed with 1 conflict: conflict with "kubelet" with subresource "status" '
        "using v1: .status.x"
    )


def test_built_in_empty_slices_and_go_maps_are_not_owned() -> None:
    obj = cm({}, finalizers=[], labels={})
    assert update(None, obj, []) == []
    # ...but an applied empty map is owned (the configuration is not decoded).
    _, managed = apply(None, obj, [], manager="a")
    assert fields_of(managed, "a") == {"f:data": {}, "f:metadata": {"f:labels": {}}}


def test_apply_keys_items_missing_a_defaulted_key() -> None:
    live = pod({"name": "c", "ports": [{"containerPort": 80, "protocol": "TCP"}]})
    config = pod({"name": "c", "ports": [{"containerPort": 80, "name": "http"}]})
    obj, managed = apply(live, config, [], manager="a")
    assert obj["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "protocol": "TCP", "name": "http"}
    ]
    ports = fields_of(managed, "a")["f:spec"]["f:containers"]['k:{"name":"c"}']["f:ports"]
    assert ports == {
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}, "f:name": {}}
    }
    # Dropping the port removes the whole item, found through its default key.
    obj, managed = apply(obj, pod({"name": "c"}), managed, manager="a")
    assert obj["spec"]["containers"][0]["ports"] == []


def test_custom_resource_without_declared_fields() -> None:
    crd = exchanges("crd-lifecycle.json")[0]["response"]["body"]
    list_type = SchemaListTypes(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    config = {
        "apiVersion": "capture.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}},
        "spec": {"size": 1, "list": [1, 2]},
    }
    _, managed = apply(None, config, [], manager="a", list_type=list_type)
    # Under x-kubernetes-preserve-unknown-fields every map is a map entry
    # (a member of the Apply set) and every list is atomic.
    assert fields_of(managed, "a") == {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {".": {}, "f:list": {}, "f:size": {}},
    }


ELEMENTS = st.one_of(
    st.text(min_size=1, max_size=5).map(lambda n: "f:" + n),
    st.integers(-3, 300).map(lambda n: 'k:{"port":' + str(n) + "}"),
    st.text(max_size=3).map(lambda v: "v:" + json.dumps(v)),
)


@given(st.frozensets(st.lists(ELEMENTS, min_size=1, max_size=4).map(tuple), max_size=8))
def test_fields_v1_round_trips(fs: frozenset[tuple[str, ...]]) -> None:
    encoded = to_fields_v1(fs)
    assert from_fields_v1(encoded) == fs
    assert to_fields_v1(from_fields_v1(encoded)) == encoded


def test_applying_twice_changes_nothing() -> None:
    config = deployment(
        {"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
        replicas=2,
    )
    obj, managed = apply(None, config, [], manager="a", api_version="apps/v1", now=T0)
    again, managed_again = apply(obj, config, managed, manager="a", api_version="apps/v1", now=T2)
    assert again == obj
    assert managed_again == managed
