"""Pure logic of the apply loop: condition merging, patches, configs, manifest order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ocmkit.kube.mergepatch import merge_patch, semantically_equal, with_preconditions
from ocmkit.runtime.recentwrites import RecentWrites
from schemas.work_v1 import ManifestConfigOption
from workagent.controllers.apply_results import empty_meta
from workagent.controllers.conditions import (
    merge_manifest_conditions,
    new_condition,
    set_condition,
)
from workagent.controllers.manifestconfig import find_manifest_config, wildcard_match
from workagent.controllers.manifests import ManifestError, kind_rank, parse_manifest

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 1, 2, tzinfo=UTC)


def applied(status: str, generation: int) -> dict[str, Any]:
    return new_condition("Applied", status, "R", "m", generation)


def test_set_condition_moves_transition_time_only_on_status_change() -> None:
    conditions: list[dict[str, Any]] = []
    times: list[Any] = []
    set_condition(conditions, applied("True", 1), T0)
    times.append(conditions[0]["lastTransitionTime"])
    set_condition(conditions, {**applied("True", 2), "message": "new"}, T1)
    times.append(conditions[0]["lastTransitionTime"])
    assert (conditions[0]["message"], conditions[0]["observedGeneration"]) == ("new", 2)
    set_condition(conditions, applied("False", 2), T1)
    times.append(conditions[0]["lastTransitionTime"])
    assert times == ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"]


def entry(ordinal: int, name: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    meta = {**empty_meta(ordinal), "version": "v1", "kind": "ConfigMap", "name": name}
    return {"resourceMeta": meta, "conditions": list(conditions)}


def test_merge_keeps_other_conditions_and_refreshes_applied_on_new_generation() -> None:
    available = {
        "type": "Available",
        "status": "True",
        "reason": "ResourceAvailable",
        "message": "Resource is available",
        "lastTransitionTime": "2023-12-01T00:00:00Z",
    }
    old_applied = {**applied("True", 1), "lastTransitionTime": "2023-12-01T00:00:00Z"}
    old = [entry(0, "a", old_applied, available)]
    # Same generation: Applied keeps its time and place.
    same = merge_manifest_conditions(old, [entry(0, "a", applied("True", 1))], T1)
    assert same == old
    # New generation: Applied is re-added last with a fresh time; Available untouched.
    bumped = merge_manifest_conditions(old, [entry(0, "a", applied("True", 2))], T1)
    types = [c["type"] for c in bumped[0]["conditions"]]
    assert types == ["Available", "Applied"]
    assert bumped[0]["conditions"][1]["lastTransitionTime"] == "2024-01-02T00:00:00Z"


def test_merge_matches_moved_manifests_and_drops_removed_ones() -> None:
    old = [entry(0, "a", applied("True", 1)), entry(1, "b", applied("True", 1))]
    for cond in (old[0]["conditions"][0], old[1]["conditions"][0]):
        cond["lastTransitionTime"] = "2023-12-01T00:00:00Z"
    merged = merge_manifest_conditions(old, [entry(0, "b", applied("True", 1))], T1)
    assert len(merged) == 1
    assert merged[0]["resourceMeta"]["ordinal"] == 0
    assert merged[0]["resourceMeta"]["name"] == "b"
    # Matched ignoring the ordinal: the old transition time survives.
    assert merged[0]["conditions"][0]["lastTransitionTime"] == "2023-12-01T00:00:00Z"
    fresh = merge_manifest_conditions(old, [entry(0, "c", applied("True", 1))], T1)
    assert fresh[0]["conditions"][0]["lastTransitionTime"] == "2024-01-02T00:00:00Z"


def test_merge_patch_and_semantic_equality() -> None:
    old = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]}
    new = {"a": 1, "b": {"c": 4}, "l": [1], "e": "x"}
    assert merge_patch(old, new) == {"b": {"c": 4, "d": None}, "l": [1], "e": "x"}
    assert semantically_equal({"x": [], "y": None, "z": {}}, {})
    assert not semantically_equal({"x": [1]}, {})
    obj = {"metadata": {"uid": "u", "resourceVersion": "7", "name": "n"}}
    assert with_preconditions(obj, {"status": {"a": 1}}) == {
        "status": {"a": 1},
        "metadata": {"uid": "u", "resourceVersion": "7"},
    }


def test_recent_writes_cover_only_versions_they_replaced() -> None:
    writes = RecentWrites()
    v1 = {"metadata": {"resourceVersion": "1"}}
    v2 = {"metadata": {"resourceVersion": "2"}}
    v3 = {"metadata": {"resourceVersion": "3"}}
    writes.remember("k", v1, v2)
    assert writes.latest("k", v1) is v2
    writes.remember("k", v2, v3)
    assert writes.latest("k", v1) is v3  # cache still behind both writes
    other = {"metadata": {"resourceVersion": "9"}}
    assert writes.latest("k", other) is other  # someone else wrote: trust the cache
    assert writes.latest("k", v1) is v1


def option(name: str, namespace: str = "*", **kw: Any) -> ManifestConfigOption:
    return ManifestConfigOption.model_validate(
        {
            "resourceIdentifier": {
                "group": "apps",
                "resource": "deployments",
                "namespace": namespace,
                "name": name,
            },
            **kw,
        }
    )


def test_manifest_config_first_match_for_rules_last_for_scrape_type() -> None:
    options = [
        option("web", feedbackRules=[{"type": "WellKnownStatus"}], feedbackScrapeType="Poll"),
        option("*", updateStrategy={"type": "ServerSideApply"}, feedbackScrapeType="Watch"),
        option("*", updateStrategy={"type": "ReadOnly"}),
    ]
    found = find_manifest_config(options, "apps", "deployments", "ns", "web")
    assert found is not None
    assert found.feedback_rules is not None and found.feedback_rules[0].type == "WellKnownStatus"
    assert found.update_strategy is not None and found.update_strategy.type == "ServerSideApply"
    assert found.feedback_scrape_type == "Poll"  # the last match (no explicit type: Poll)
    assert find_manifest_config(options, "", "deployments", "ns", "web") is None
    # A scrape type alone configures nothing.
    assert (
        find_manifest_config(
            [option("x", feedbackScrapeType="Watch")], "apps", "deployments", "n", "x"
        )
        is None
    )
    assert wildcard_match("web-*", "web-1")
    assert not wildcard_match("web-*", "api-1")
    assert wildcard_match("*", "")


def test_manifest_order_and_parse_errors() -> None:
    assert kind_rank("CustomResourceDefinition") < kind_rank("ClusterRole") < kind_rank("Secret")
    assert kind_rank("Service") < kind_rank("Deployment") < kind_rank("APIService")
    assert kind_rank("Widget") == 1000
    bad = parse_manifest(3, {"apiVersion": "v1", "metadata": {"name": "x"}})
    assert isinstance(bad.error, ManifestError)
    assert str(bad.error) == "Object 'Kind' is missing in the manifest"
    assert bad.rank == 1001 and bad.meta["ordinal"] == 3 and bad.meta["name"] == "x"
    ok = parse_manifest(
        0, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "uid": "u"}}
    )
    assert ok.error is None and ok.required is not None
    assert "uid" not in ok.required["metadata"]
    assert (ok.meta["group"], ok.meta["version"], ok.rank) == ("apps", "v1", 5)
