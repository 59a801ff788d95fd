"""Building objects in code: defaults, Go's always-written fields, helpers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from schemas import (
    AppliedManifestWork,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    ObjectMeta,
    Placement,
    PlacementDecision,
    model_for,
)
from schemas.cluster_v1alpha1 import RolloutStrategy, RolloutType
from schemas.cluster_v1beta1 import PlacementSpec
from schemas.meta import format_time, now, parse_time
from schemas.work_v1 import (
    ConditionRule,
    ConditionRuleType,
    DeleteOption,
    DeletePropagationPolicyType,
    IgnoreField,
    ManifestConfigOption,
    ManifestResourceMeta,
    ManifestsTemplate,
    ManifestWorkSpec,
    ResourceIdentifier,
    ServerSideApplyConfig,
    UpdateStrategy,
    UpdateStrategyType,
)
from schemas.work_v1alpha1 import (
    LocalPlacementReference,
    ManifestWorkReplicaSetSpec,
    ManifestWorkReplicaSetStatus,
)


def test_new_object_gets_api_version_kind_and_metadata() -> None:
    work = ManifestWork(metadata=ObjectMeta(name="w", namespace="cluster1"))
    assert work.to_wire() == {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "w", "namespace": "cluster1"},
        "spec": {},
    }


def test_wire_object_gets_nothing_added() -> None:
    raw = {"metadata": {"name": "w"}}
    assert ManifestWork.from_wire(raw).to_wire() == raw


def test_go_always_fields_are_written_for_new_objects() -> None:
    # OCM's Go types write these even when empty; so do objects built in code.
    assert ResourceIdentifier(resource="deployments", name="d").to_wire() == {
        "group": "",
        "resource": "deployments",
        "name": "d",
        "namespace": "",
    }
    assert ManifestResourceMeta(ordinal=0, kind="ConfigMap").to_wire() == {
        "ordinal": 0,
        "group": "",
        "version": "",
        "kind": "ConfigMap",
        "resource": "",
        "name": "",
        "namespace": "",
    }
    assert DeleteOption().to_wire() == {"propagationPolicy": "Foreground"}
    assert ServerSideApplyConfig().to_wire() == {"force": False}
    assert ConditionRule(
        condition="Complete", type=ConditionRuleType.WELL_KNOWN_CONDITIONS
    ).to_wire() == {
        "condition": "Complete",
        "type": "WellKnownConditions",
        "celExpressions": None,
    }
    assert ManifestWorkReplicaSetStatus().to_wire() == {
        "summary": {
            "total": 0,
            "progressing": 0,
            "available": 0,
            "degraded": 0,
            "applied": 0,
            "desiredTotal": 0,
            "updated": 0,
        },
        "placementSummary": None,
    }


def test_the_same_fields_are_not_added_when_read() -> None:
    raw = {"resource": "deployments", "name": "d"}
    assert ResourceIdentifier.from_wire(raw).to_wire() == raw


def test_defaults_read_as_the_api_server_would_default_them() -> None:
    config = ManifestConfigOption.from_wire(
        {"resourceIdentifier": {"resource": "r", "name": "n"}, "updateStrategy": {}}
    )
    assert config.feedback_scrape_type == "Poll"
    assert config.update_strategy is not None
    assert config.update_strategy.type == UpdateStrategyType.UPDATE
    assert IgnoreField.from_wire({}).condition == "OnSpokePresent"
    assert ServerSideApplyConfig.from_wire({}).field_manager == "work-agent"
    strategy = RolloutStrategy.from_wire({"progressive": {}})
    assert strategy.type == RolloutType.ALL
    assert strategy.progressive is not None
    assert strategy.progressive.progress_deadline == "None"
    assert strategy.progressive.max_failures == 0
    assert strategy.progressive.min_success_time == "0"
    assert strategy.progressive.max_concurrency is None


def test_enum_values_compare_as_strings() -> None:
    option = DeleteOption.from_wire({"propagationPolicy": "Orphan"})
    assert option.propagation_policy == "Orphan"
    assert option.propagation_policy is DeletePropagationPolicyType.ORPHAN


def test_snake_case_and_camel_case_names() -> None:
    config = ManifestConfigOption(
        resource_identifier=ResourceIdentifier(resource="jobs", name="pi", group="batch"),
        update_strategy=UpdateStrategy(type=UpdateStrategyType.SERVER_SIDE_APPLY),
    )
    wire = config.to_wire()
    assert wire["resourceIdentifier"]["group"] == "batch"
    assert wire["updateStrategy"] == {"type": "ServerSideApply"}
    amw = AppliedManifestWork.from_wire(
        {"spec": {"hubHash": "h", "agentID": "a", "manifestWorkName": "w"}}
    )
    assert amw.spec is not None and amw.spec.agent_id == "a"
    assert amw.to_wire()["spec"]["agentID"] == "a"


def test_construction_is_validated() -> None:
    with pytest.raises(ValidationError):
        ServerSideApplyConfig(field_manager="someone-else")
    with pytest.raises(ValidationError):
        ConditionRule(condition="", type=ConditionRuleType.CEL)
    with pytest.raises(ValidationError):
        ManifestsTemplate(manifests=[{"apiVersion": "v1", "metadata": {"name": "x"}}])


def test_assigning_marks_a_field_for_writing() -> None:
    work = ManifestWork.from_wire({"metadata": {"name": "w"}, "spec": {}})
    work.spec.workload = ManifestsTemplate(manifests=[{"apiVersion": "v1", "kind": "Secret"}])
    assert work.to_wire()["spec"] == {
        "workload": {"manifests": [{"apiVersion": "v1", "kind": "Secret"}]}
    }


def test_replica_set_spec() -> None:
    spec = ManifestWorkReplicaSetSpec(
        manifest_work_template=ManifestWorkSpec(),
        placement_refs=[LocalPlacementReference(name="p")],
    )
    mwrs = ManifestWorkReplicaSet(metadata=ObjectMeta(name="m", namespace="ns"), spec=spec)
    assert mwrs.to_wire()["spec"] == {"manifestWorkTemplate": {}, "placementRefs": [{"name": "p"}]}
    assert spec.cascade_deletion_policy == "Background"


def test_placement_requires_spec() -> None:
    with pytest.raises(ValidationError):
        Placement.model_validate({"metadata": {"name": "p"}})
    assert Placement(spec=PlacementSpec()).to_wire()["spec"] == {}


def test_resource_info() -> None:
    info = ManifestWorkReplicaSet.api_resource
    assert info.api_version == "work.open-cluster-management.io/v1alpha1"
    assert info.list_kind == "ManifestWorkReplicaSetList"
    assert info.crd_name == "manifestworkreplicasets.work.open-cluster-management.io"
    assert info.short_names == ("mwrs",)
    assert AppliedManifestWork.api_resource.scope == "Cluster"
    assert ManagedCluster.api_resource.scope == "Cluster"
    assert PlacementDecision.api_resource.plural == "placementdecisions"


def test_model_for() -> None:
    assert model_for("work.open-cluster-management.io/v1", "ManifestWork") is ManifestWork
    assert model_for("work.open-cluster-management.io/v1", "Placement") is None


def test_time_helpers() -> None:
    assert parse_time("2024-01-02T03:04:05Z") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    plus2 = timezone(timedelta(hours=2))
    assert format_time(datetime(2024, 1, 2, 5, 4, 5, tzinfo=plus2)) == "2024-01-02T03:04:05Z"
    assert format_time(datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05Z"  # naive = UTC
    assert format_time(datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)) == (
        "2024-01-02T03:04:05.12Z"
    )
    stamp = now()
    assert stamp.microsecond == 0 and stamp.tzinfo is UTC


@pytest.mark.parametrize(
    "bad", ["2024-01-02", "2024-01-02 03:04:05Z", "2024-13-02T03:04:05Z", "1704164645", 1704164645]
)
def test_bad_timestamps(bad: object) -> None:
    with pytest.raises(ValidationError):
        AppliedManifestWork.model_validate({"status": {"evictionStartTime": bad}})
