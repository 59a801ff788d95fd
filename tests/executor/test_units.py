"""Pure parts of the executor checks: wording, rule breakdown, aggregation, subjects, cache."""

from __future__ import annotations

import pytest

from ocmkit.durations import format_duration_seconds
from ocmkit.kube import CONFIGMAPS, NAMESPACES
from workagent.executor import (
    AccessCache,
    Dimension,
    ManifestTarget,
    NonResourceAccess,
    NotAllowedError,
    ResourceAccess,
    ServiceAccountExecutor,
)
from workagent.executor.aggregation import aggregated_rules, aggregators_of, selector_matches
from workagent.executor.escalation import breakdown
from workagent.executor.rbacindex import binding_subjects, role_ref_keys


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (60, "1m0s"),
        (0, "0s"),
        (1.5, "1.5s"),
        (30, "30s"),
        (0.25, "250ms"),
        (3600, "1h0m0s"),
        (3725.5, "1h2m5.5s"),
        (0.0000015, "1.5µs"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    # The retry delay of NotAllowed messages, as the Go agent spells it.
    assert format_duration_seconds(seconds) == text


def test_not_allowed_error_wording() -> None:
    err = NotAllowedError("not allowed to apply the resource apps deployments, ns web")
    assert (
        str(err)
        == "not allowed to apply the resource apps deployments, ns web, will try again in 1m0s"
    )
    assert str(NotAllowedError("x", requeue_after=0)) == "x"


def test_service_account_identity() -> None:
    sa = ServiceAccountExecutor("ns1", "sa1")
    assert sa.user == "system:serviceaccount:ns1:sa1"
    assert sa.groups == [
        "system:serviceaccounts",
        "system:authenticated",
        "system:serviceaccounts:ns1",
    ]
    assert ServiceAccountExecutor.from_key(sa.key) == sa


def test_manifest_target() -> None:
    cm = {"metadata": {"name": "c", "namespace": "n"}}
    assert ManifestTarget.of(CONFIGMAPS, cm) == ManifestTarget("", "v1", "configmaps", "n", "c")
    assert ManifestTarget.of(NAMESPACES, cm).namespace == ""
    assert ManifestTarget.of(CONFIGMAPS, {}).describe() == " configmaps,  "


def test_breakdown_follows_the_apiserver() -> None:
    rules = [
        {
            "apiGroups": ["", "apps"],
            "resources": ["pods/log"],
            "verbs": ["get"],
            "resourceNames": ["a", "b"],
        },
        {
            "apiGroups": [""],
            "resources": ["pods/log"],
            "verbs": ["get"],
            "resourceNames": ["a"],
        },  # duplicate
        {"verbs": ["get", "post"], "nonResourceURLs": ["/healthz"]},
        {"verbs": ["get"]},  # no groups: nothing
    ]
    assert breakdown(rules, "ns") == [
        ResourceAccess("get", "", "", "pods", "log", "ns", "a"),
        ResourceAccess("get", "", "", "pods", "log", "ns", "b"),
        ResourceAccess("get", "apps", "", "pods", "log", "ns", "a"),
        ResourceAccess("get", "apps", "", "pods", "log", "ns", "b"),
        NonResourceAccess("get", "/healthz"),
        NonResourceAccess("post", "/healthz"),
    ]


def test_label_selectors() -> None:
    labels = {"a": "1", "b": "2"}
    assert selector_matches({}, labels)
    assert selector_matches({"matchLabels": {"a": "1"}}, labels)
    assert not selector_matches({"matchLabels": {"a": "2"}}, labels)
    assert selector_matches(
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]}, labels
    )
    assert selector_matches(
        {"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["1"]}]}, labels
    )
    assert selector_matches({"matchExpressions": [{"key": "b", "operator": "Exists"}]}, labels)
    assert not selector_matches(
        {"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]}, labels
    )
    assert not selector_matches({"matchExpressions": [{"key": "b", "operator": "Bogus"}]}, labels)
    assert not selector_matches(None, labels)


def _cr(
    name: str, rules: list[str], labels: dict[str, str] | None = None, selects: str | None = None
) -> dict[str, object]:
    obj: dict[str, object] = {
        "metadata": {"name": name, "labels": labels or {}},
        "rules": [{"apiGroups": [""], "resources": [r], "verbs": ["get"]} for r in rules],
    }
    if selects is not None:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"agg": selects}}]}
    return obj


def test_aggregation_is_transitive() -> None:
    roles = [
        _cr("top", [], selects="top"),
        _cr("middle", ["pods"], labels={"agg": "top"}, selects="middle"),
        _cr("leaf", ["secrets"], labels={"agg": "middle"}),
        _cr("other", ["nodes"]),
    ]
    granted = aggregated_rules("top", roles)
    assert [r["resources"] for r in granted] == [["pods"], ["secrets"]]
    assert aggregators_of("leaf", [{"agg": "middle"}], roles) == {"middle", "top"}
    assert aggregators_of("other", [{}], roles) == set()


def test_binding_subjects_and_role_refs() -> None:
    binding = {
        "metadata": {"name": "b", "namespace": "ns"},
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "sa1"},  # namespace defaults to the binding's
            {"kind": "User", "name": "system:serviceaccount:x:sa2"},
            {"kind": "Group", "name": "system:serviceaccounts:team"},
        ],
    }
    subjects = binding_subjects(binding)
    assert (
        subjects.concerns("ns/sa1") and subjects.concerns("x/sa2") and subjects.concerns("team/any")
    )
    assert not subjects.concerns("ns/sa2")
    assert role_ref_keys(binding) == ["Role/ns/r"]
    everyone = binding_subjects({"subjects": [{"kind": "Group", "name": "system:authenticated"}]})
    assert everyone.concerns("any/one")
    # A ClusterRoleBinding cannot reference a Role.
    assert (
        role_ref_keys({"metadata": {"name": "c"}, "roleRef": {"kind": "Role", "name": "r"}}) == []
    )


def test_cache_drops_outcomes_computed_before_an_invalidation() -> None:
    cache = AccessCache()
    dim = Dimension(ManifestTarget("", "v1", "configmaps", "n", "c"), owned_by_work=False)
    allowed, epoch = cache.lookup("a/b", dim, now=0)
    assert allowed is None
    assert cache.invalidate("a/b")  # an RBAC change while the review runs
    assert not cache.store("a/b", dim, True, epoch)
    assert cache.get("a/b", dim) is None
    _, fresh = cache.lookup("a/b", dim, now=1)
    assert cache.store("a/b", dim, True, fresh)
    assert cache.get("a/b", dim) is True

    # Pruned and registered again: old epochs stay stale.
    assert cache.prune(unused_since=10) == 1
    cache.lookup("a/b", dim, now=11)
    assert not cache.store("a/b", dim, False, epoch)
    assert cache.get("a/b", dim) is None
