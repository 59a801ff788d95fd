"""Reading an object and writing it back changes nothing, unknown fields included."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from schemas import KINDS, ManifestWork, parse_object
from schemas.meta import Condition, ConditionStatus
from schemas.work_v1 import ManifestWorkStatus
from tests.schemas import samples

Path = tuple[str | int, ...]


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _assert_round_trip(raw: dict[str, Any]) -> None:
    original = copy.deepcopy(raw)
    obj = parse_object(raw)
    assert raw == original, "parsing must not change the input"
    written = obj.to_wire()
    assert written == raw
    assert _canonical(written) == _canonical(raw)
    # Model -> JSON -> model -> JSON is stable too.
    again = type(obj).model_validate_json(json.dumps(written))
    assert again.to_wire() == written
    assert again == obj


@pytest.mark.parametrize("kind", sorted(samples.ALL))
def test_samples_round_trip(kind: str) -> None:
    _assert_round_trip(samples.ALL[kind]())


def test_every_kind_has_a_sample() -> None:
    assert {m.api_resource.kind for m in KINDS} == set(samples.ALL)


def _add(obj: Any, path: Path, key: str, value: Any) -> None:
    for part in path:
        obj = obj[part]
    obj[key] = value


UNKNOWN = {"newerHubField": {"nested": [1, "two", None, {"deep": True}]}}

#: (kind, path to an object) pairs covering every depth of every kind.
UNKNOWN_AT: list[tuple[str, Path]] = [
    ("ManifestWork", ()),
    ("ManifestWork", ("metadata",)),
    ("ManifestWork", ("spec",)),
    ("ManifestWork", ("spec", "workload")),
    ("ManifestWork", ("spec", "workload", "manifests", 0)),
    ("ManifestWork", ("spec", "workload", "manifests", 0, "metadata")),
    ("ManifestWork", ("spec", "deleteOption")),
    ("ManifestWork", ("spec", "deleteOption", "selectivelyOrphans")),
    ("ManifestWork", ("spec", "deleteOption", "selectivelyOrphans", "orphaningRules", 0)),
    ("ManifestWork", ("spec", "manifestConfigs", 0)),
    ("ManifestWork", ("spec", "manifestConfigs", 0, "resourceIdentifier")),
    ("ManifestWork", ("spec", "manifestConfigs", 0, "feedbackRules", 1)),
    ("ManifestWork", ("spec", "manifestConfigs", 0, "feedbackRules", 1, "jsonPaths", 0)),
    ("ManifestWork", ("spec", "manifestConfigs", 0, "updateStrategy")),
    ("ManifestWork", ("spec", "manifestConfigs", 0, "updateStrategy", "serverSideApply")),
    (
        "ManifestWork",
        ("spec", "manifestConfigs", 0, "updateStrategy", "serverSideApply", "ignoreFields", 0),
    ),
    ("ManifestWork", ("spec", "manifestConfigs", 0, "conditionRules", 1)),
    ("ManifestWork", ("spec", "executor")),
    ("ManifestWork", ("spec", "executor", "subject")),
    ("ManifestWork", ("spec", "executor", "subject", "serviceAccount")),
    ("ManifestWork", ("status",)),
    ("ManifestWork", ("status", "conditions", 0)),
    ("ManifestWork", ("status", "resourceStatus")),
    ("ManifestWork", ("status", "resourceStatus", "manifests", 0)),
    ("ManifestWork", ("status", "resourceStatus", "manifests", 0, "resourceMeta")),
    ("ManifestWork", ("status", "resourceStatus", "manifests", 0, "statusFeedback")),
    (
        "ManifestWork",
        ("status", "resourceStatus", "manifests", 0, "statusFeedback", "values", 2, "fieldValue"),
    ),
    ("AppliedManifestWork", ("spec",)),
    ("AppliedManifestWork", ("status", "appliedResources", 0)),
    ("ManifestWorkReplicaSet", ("spec", "placementRefs", 1, "rolloutStrategy")),
    ("ManifestWorkReplicaSet", ("spec", "placementRefs", 1, "rolloutStrategy", "progressive")),
    (
        "ManifestWorkReplicaSet",
        (
            "spec",
            "placementRefs",
            1,
            "rolloutStrategy",
            "progressive",
            "mandatoryDecisionGroups",
            0,
        ),
    ),
    ("ManifestWorkReplicaSet", ("spec", "manifestWorkTemplate", "manifestConfigs", 0)),
    ("ManifestWorkReplicaSet", ("status", "placementSummary", 0, "summary")),
    ("Placement", ("spec", "predicates", 0, "requiredClusterSelector", "labelSelector")),
    ("Placement", ("spec", "decisionStrategy", "groupStrategy", "decisionGroups", 0)),
    ("Placement", ("status", "decisionGroups", 0)),
    ("PlacementDecision", ("status", "decisions", 0)),
    ("ManagedCluster", ("spec", "taints", 0)),
    ("ManagedCluster", ("status", "managedNamespaces", 0, "conditions", 0)),
]


@pytest.mark.parametrize(("kind", "path"), UNKNOWN_AT, ids=str)
def test_unknown_fields_survive(kind: str, path: Path) -> None:
    raw = samples.ALL[kind]()
    _add(raw, path, "newerHubField", copy.deepcopy(UNKNOWN["newerHubField"]))
    _assert_round_trip(raw)


def test_unknown_fields_everywhere_at_once_survive_an_update() -> None:
    raw = samples.manifest_work()
    for kind, path in UNKNOWN_AT:
        if kind == "ManifestWork":
            _add(raw, path, "newerHubField", copy.deepcopy(UNKNOWN["newerHubField"]))
    work = ManifestWork.from_wire(raw)
    # A typical read-modify-write: the agent replaces the status conditions.
    assert work.status is not None
    conditions = list(work.status.conditions or [])
    conditions[0] = conditions[0].model_copy(update={"message": "changed"})
    work.status.conditions = conditions
    written = work.to_wire()
    expected = copy.deepcopy(raw)
    expected["status"]["conditions"][0]["message"] = "changed"
    assert written == expected


def test_snake_case_keys_on_the_wire_are_unknown_fields() -> None:
    raw = samples.manifest_work()
    ssa = raw["spec"]["manifestConfigs"][0]["updateStrategy"]["serverSideApply"]
    del ssa["fieldManager"]
    ssa["field_manager"] = "not-a-field"
    work = ManifestWork.from_wire(raw)
    assert work.spec.manifest_configs is not None
    strategy = work.spec.manifest_configs[0].update_strategy
    assert strategy is not None and strategy.server_side_apply is not None
    assert strategy.server_side_apply.field_manager == "work-agent"
    assert work.to_wire() == raw


def test_explicit_nulls_and_empty_values_survive() -> None:
    raw = samples.manifest_work()
    raw["spec"]["manifestConfigs"][0]["conditionRules"][0]["celExpressions"] = None
    raw["spec"]["manifestConfigs"][0]["feedbackRules"][0]["jsonPaths"] = []
    raw["metadata"]["creationTimestamp"] = None
    raw["metadata"]["labels"] = {}
    raw["status"]["resourceStatus"]["manifests"][0]["resourceMeta"]["group"] = ""
    _assert_round_trip(raw)


def test_absent_defaults_are_not_written() -> None:
    raw = {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "w", "namespace": "c1"},
        "spec": {
            "deleteOption": {},
            "manifestConfigs": [
                {
                    "resourceIdentifier": {"resource": "configmaps", "name": "x"},
                    "updateStrategy": {"serverSideApply": {"ignoreFields": [{}]}},
                }
            ],
        },
    }
    work = ManifestWork.from_wire(raw)
    assert work.spec.delete_option is not None
    assert work.spec.delete_option.propagation_policy == "Foreground"
    _assert_round_trip(raw)


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("2021-06-15T02:26:02Z", "2021-06-15T02:26:02Z"),
        ("2021-06-15T02:26:02.5Z", "2021-06-15T02:26:02.5Z"),
        ("2021-06-15T02:26:02.123456Z", "2021-06-15T02:26:02.123456Z"),
        # Beyond microseconds and non-UTC offsets are normalised, as Go does.
        ("2021-06-15T02:26:02.123456789Z", "2021-06-15T02:26:02.123456Z"),
        ("2021-06-15T04:26:02+02:00", "2021-06-15T02:26:02Z"),
        ("2021-06-15t02:26:02z", "2021-06-15T02:26:02Z"),
    ],
)
def test_timestamps(text: str, written: str) -> None:
    raw = samples.applied_manifest_work()
    raw["status"]["evictionStartTime"] = text
    obj = parse_object(raw)
    assert obj.to_wire()["status"]["evictionStartTime"] == written


def test_condition_built_in_code_is_written_like_go() -> None:
    status = ManifestWorkStatus(
        conditions=[
            Condition(
                type="Applied",
                status=ConditionStatus.TRUE,
                reason="AppliedManifestWorkComplete",
                message="",
                last_transition_time=datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
            )
        ]
    )
    assert status.to_wire() == {
        "conditions": [
            {
                "type": "Applied",
                "status": "True",
                "reason": "AppliedManifestWorkComplete",
                "message": "",
                "lastTransitionTime": "2024-01-02T03:04:05Z",
            }
        ]
    }


Builder = Callable[[], dict[str, Any]]


@pytest.mark.parametrize("build", list(samples.ALL.values()), ids=list(samples.ALL))
def test_parsing_does_not_share_state_with_the_input(build: Builder) -> None:
    raw = build()
    obj = parse_object(raw)
    raw["metadata"]["name"] = "changed"
    assert obj.metadata.name != "changed"
