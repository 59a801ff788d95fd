"""The merge rules of the Update strategy (spec/agent.md 5.1), as pure functions."""

from __future__ import annotations

from typing import Any

from workagent.apply.merge import (
    MISSING,
    Prune,
    covers,
    for_create,
    merge_object_meta,
    merge_string_map,
    overlay,
    semantic_equal,
)
from workagent.apply.owners import merge_owner_refs, same_owner
from workagent.quantity import parse_quantity, same_quantity

AMW = {
    "apiVersion": "work.open-cluster-management.io/v1",
    "kind": "AppliedManifestWork",
    "name": "h-w",
    "uid": "u1",
}
OTHER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u9"}


def test_string_map_adds_overwrites_and_removes_dash_keys() -> None:
    merged, modified = merge_string_map({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"})
    assert modified and merged == {"a": "1", "b": "3", "c": "4"}
    merged, modified = merge_string_map({"a": "1", "b": "2"}, {"b-": "", "zz-": ""})
    assert modified and merged == {"a": "1"}
    # Go TrimRight strips every trailing dash.
    merged, modified = merge_string_map({"k": "v"}, {"k--": ""})
    assert modified and merged == {}
    merged, modified = merge_string_map({"a": "1"}, {"a": "1", "x-": ""})
    assert not modified and merged == {"a": "1"}


def test_object_meta_merge_keeps_everything_else() -> None:
    live = {
        "name": "n",
        "namespace": "ns",
        "labels": {"keep": "1", "drop": "x"},
        "finalizers": ["f"],
        "ownerReferences": [OTHER],
        "resourceVersion": "7",
    }
    meta, modified = merge_object_meta(
        live, {"name": "n", "labels": {"new": "2", "drop-": ""}, "ownerReferences": [AMW]}
    )
    assert modified
    assert meta["labels"] == {"keep": "1", "new": "2"}
    assert meta["finalizers"] == ["f"] and meta["resourceVersion"] == "7"
    assert meta["ownerReferences"] == [OTHER, AMW]
    assert live["labels"] == {"keep": "1", "drop": "x"}, "the input is not mutated"
    _, modified = merge_object_meta(meta, {"name": "n", "labels": {"new": "2"}})
    assert not modified


def test_owner_refs_match_by_name_kind_group_and_markers_remove() -> None:
    moved = {**AMW, "apiVersion": "work.open-cluster-management.io/v2", "uid": "u2"}
    assert same_owner(AMW, moved)
    assert not same_owner(AMW, {**AMW, "name": "other"})
    assert not same_owner(AMW, {**AMW, "apiVersion": "other.io/v1"})
    merged, modified = merge_owner_refs([OTHER, AMW], [AMW])
    assert not modified and merged == [OTHER, AMW]
    merged, modified = merge_owner_refs([OTHER, AMW], [moved])
    assert modified and merged == [OTHER, moved]
    # A marker removes the matching reference whatever its uid, and is never added.
    merged, modified = merge_owner_refs([OTHER, moved], [{**AMW, "uid": "u1-"}])
    assert modified and merged == [OTHER]
    merged, modified = merge_owner_refs([OTHER], [{**AMW, "uid": "u1-"}])
    assert not modified and merged == [OTHER]


def test_for_create_drops_removal_keys_and_markers() -> None:
    body = for_create(
        {
            "metadata": {
                "name": "n",
                "labels": {"a": "1", "b-": ""},
                "annotations": {"x-": ""},
                "ownerReferences": [{**AMW, "uid": "u1-"}],
            }
        }
    )
    assert body["metadata"] == {"name": "n", "labels": {"a": "1"}}


LIVE_DEPLOYMENT: dict[str, Any] = {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "web"}},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
    "template": {
        "metadata": {"labels": {"app": "web"}, "creationTimestamp": None},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx:1",
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "hostNetwork": False,
        },
    },
}
MANIFEST_DEPLOYMENT: dict[str, Any] = {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "web"}},
    "template": {
        "metadata": {"labels": {"app": "web"}, "creationTimestamp": None},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx:1",
                    "resources": {"limits": {"cpu": "0.5", "memory": "1073741824"}},
                    "ports": [{"containerPort": 80}],
                    "args": [],
                }
            ],
            "hostNetwork": False,
        },
    },
}


def test_covers_ignores_defaults_nulls_empties_and_quantity_spelling() -> None:
    assert covers(LIVE_DEPLOYMENT, MANIFEST_DEPLOYMENT)
    assert overlay(LIVE_DEPLOYMENT, MANIFEST_DEPLOYMENT) == LIVE_DEPLOYMENT
    changed = {**MANIFEST_DEPLOYMENT, "replicas": 3}
    assert not covers(LIVE_DEPLOYMENT, changed)
    # Quantities only compare by value where quantities live.
    assert not covers({"version": "1.10"}, {"version": "1.1"})
    assert covers({"requests": {"cpu": "100m"}}, {"requests": {"cpu": "0.1"}})
    assert covers({"limits": {"cpu": "2"}}, {"limits": {"cpu": 2}})
    quota = {"hard": {"cpu": "500m", "pods": "10"}}
    assert overlay(quota, {"hard": {"cpu": "0.5"}}) == quota
    assert not covers({"flag": 1}, {"flag": True})


def test_overlay_keeps_generated_fields_and_replaces_changed_list_elements() -> None:
    live: dict[str, Any] = {
        "selector": {"matchLabels": {"controller-uid": "x"}},
        "template": {
            "metadata": {"labels": {"controller-uid": "x", "job-name": "j"}},
            "spec": {"containers": [{"name": "c", "image": "a", "imagePullPolicy": "Always"}]},
        },
        "parallelism": 1,
    }
    wanted = {
        "template": {"spec": {"containers": [{"name": "c", "image": "b"}]}},
        "parallelism": 3,
    }
    result: Any = overlay(live, wanted)
    assert result["selector"] == live["selector"]
    assert result["template"]["metadata"] == live["template"]["metadata"]
    assert result["template"]["spec"]["containers"] == [{"name": "c", "image": "b"}]
    assert result["parallelism"] == 3
    assert live["parallelism"] == 1, "the input is not mutated"


def test_overlay_pairs_named_list_elements_by_name() -> None:
    live = [{"name": "a", "image": "x", "d": 1}, {"name": "b", "image": "y", "d": 1}]
    wanted = [
        {"name": "b", "image": "y"},
        {"name": "new", "image": "z"},
        {"name": "a", "image": "x"},
    ]
    assert overlay(live, wanted) == [live[1], {"name": "new", "image": "z"}, live[0]]


def test_overlay_removes_what_the_last_manifest_set_and_the_new_one_does_not() -> None:
    last = {
        "spec": {"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "c", "args": ["-v"]}]}
    }
    new = {"spec": {"containers": [{"name": "c"}]}}
    live = {
        "spec": {
            "nodeSelector": {"disk": "ssd"},
            "containers": [{"name": "c", "args": ["-v"], "imagePullPolicy": "Always"}],
            "dnsPolicy": "ClusterFirst",
        }
    }
    # Without history a pure comparison cannot see removals.
    assert overlay(live, new) == live
    result = overlay(live, new, last)
    assert result == {"spec": {"containers": [{"name": "c"}], "dnsPolicy": "ClusterFirst"}}
    nulled = {"spec": {"nodeSelector": None, "containers": [{"name": "c", "args": ["-v"]}]}}
    assert "nodeSelector" not in overlay(live, nulled, last)["spec"]
    # History that equals the manifest changes nothing.
    assert overlay(live, new, new) == live
    assert overlay(live, new, MISSING) == live


def test_overlay_writes_an_empty_value_the_manifest_newly_sets() -> None:
    # automountServiceAccountToken is a pointer: absent means the token is mounted.
    last = {"spec": {"containers": [{"name": "c"}]}}
    new = {"spec": {"containers": [{"name": "c"}], "automountServiceAccountToken": False}}
    live = {"spec": {"containers": [{"name": "c", "imagePullPolicy": "Always"}]}}
    assert overlay(live, new, last)["spec"]["automountServiceAccountToken"] is False
    # Under a map the last manifest did not set, too (a custom resource's 0).
    live_cr: dict[str, Any] = {"spec": {"scaling": {}}}
    added = {"spec": {"scaling": {"minReplicas": 0}}}
    assert overlay(live_cr, added, {"spec": {}}) == added
    # Applied once, a value the server dropped (omitempty) is not written again,
    # and without history the old rule holds.
    assert overlay(live, new, new) == live
    assert overlay(live, new, MISSING) == live


def test_semantic_equal_treats_empty_as_absent() -> None:
    assert semantic_equal({"a": [], "b": None, "c": False, "d": {}}, {})
    assert not semantic_equal({"a": 0}, {})
    assert semantic_equal([{"verbs": ["get"], "resourceNames": []}], [{"verbs": ["get"]}])


def test_quantities() -> None:
    assert parse_quantity("1Gi") == 2**30
    assert parse_quantity("1e3") == 1000
    assert parse_quantity("nope") is None
    assert same_quantity("500m", "0.5")
    assert not same_quantity("1", "1Ki")


def test_overlay_prunes_only_the_marked_keys_below_a_key_the_manifest_dropped() -> None:
    live = {"strategy": {"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}}, "x": 1}
    last = {"x": 1, "strategy": Prune(rollingUpdate=Prune(maxSurge=True))}
    assert overlay(live, {"x": 1}, last) == {
        "strategy": {"rollingUpdate": {"maxUnavailable": 0}},
        "x": 1,
    }
    # An explicit null unsets the same way; a plain value in last removes the key whole.
    assert overlay(live, {"x": 1, "strategy": None}, last)["strategy"] == {
        "rollingUpdate": {"maxUnavailable": 0}
    }
    assert "strategy" not in overlay(live, {"x": 1}, {"x": 1, "strategy": True})
