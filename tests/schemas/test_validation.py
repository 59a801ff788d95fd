"""parse_object / validate_object: every problem reported as ``path: message``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from schemas import (
    ManifestWork,
    ManifestWorkReplicaSet,
    Placement,
    SchemaValidationError,
    parse_object,
    validate_object,
)
from schemas.errors import FieldProblem, format_path, problems_from_pydantic
from schemas.validation import manifest_problems
from tests.schemas import samples


def _problems(raw: Any, admission: bool = True) -> list[str]:
    with pytest.raises(SchemaValidationError) as err:
        (validate_object if admission else parse_object)(raw)
    return err.value.lines()


def _work(*manifests: Any) -> dict[str, Any]:
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "w", "namespace": "cluster1"},
        "spec": {"workload": {"manifests": list(manifests)}},
    }


def _cm(name: str | None = "cm", **meta: Any) -> dict[str, Any]:
    metadata = dict(meta)
    if name is not None:
        metadata["name"] = name
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def test_the_issue_example() -> None:
    bad = _cm("third")
    del bad["kind"]
    assert _problems(_work(_cm("a"), _cm("b"), bad)) == [
        "spec.workload.manifests[2]: kind is required"
    ]


def test_every_problem_is_listed() -> None:
    no_kind = _cm("a")
    del no_kind["kind"]
    raw = _work(no_kind, _cm(None), _cm("c", generateName="c-"), "text", _cm("c"))
    raw["spec"]["deleteOption"] = {"propagationPolicy": "Never"}
    raw["spec"]["executor"] = {"subject": {"type": "ServiceAccount"}}
    assert _problems(raw) == [
        "spec.workload.manifests[0]: kind is required",
        "spec.workload.manifests[3]: must be an object",
        "spec.deleteOption.propagationPolicy: must be 'Foreground', 'Orphan' or "
        "'SelectivelyOrphan'",
        "spec.workload.manifests[1]: metadata.name is required",
        "spec.workload.manifests[2]: metadata.generateName must not be set",
        "spec.workload.manifests[4]: duplicate manifest for resource /c with resource type "
        "v1.ConfigMap (same as manifests[2])",
    ]


def test_admission_rules_on_a_schema_valid_work() -> None:
    raw = _work(_cm(None), _cm("c", generateName="c-"), _cm("c", namespace="ns"), _cm("c"))
    raw["spec"]["executor"] = {"subject": {"type": "ServiceAccount"}}
    assert parse_object(raw).to_wire() == raw  # the API server would store it
    assert _problems(raw) == [
        "spec.workload.manifests[0]: metadata.name is required",
        "spec.workload.manifests[1]: metadata.generateName must not be set",
        "spec.workload.manifests[3]: duplicate manifest for resource /c with resource type "
        "v1.ConfigMap (same as manifests[1])",
        "spec.executor.subject: serviceAccount is required when type is ServiceAccount",
    ]


def test_same_object_under_two_api_versions_is_not_a_duplicate() -> None:
    # The hub keys duplicates on the literal apiVersion, and so do we.
    a = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    b = {"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": "d"}}
    validate_object(_work(a, b))


@pytest.mark.parametrize(
    "spec",
    [{}, {"workload": {}}, {"workload": {"manifests": []}}, {"workload": {"manifests": None}}],
)
def test_empty_workload_is_rejected_at_admission(spec: dict[str, Any]) -> None:
    raw = _work()
    raw["spec"] = spec
    parse_object(raw)
    assert _problems(raw) == ["spec.workload.manifests: must not be empty"]


def test_replica_set_template_is_checked() -> None:
    raw = samples.manifest_work_replica_set()
    manifests = raw["spec"]["manifestWorkTemplate"]["workload"]["manifests"]
    manifests[1]["metadata"] = {"namespace": "default"}
    assert _problems(raw) == [
        "spec.manifestWorkTemplate.workload.manifests[1]: metadata.name is required"
    ]
    del raw["spec"]["manifestWorkTemplate"]
    assert _problems(raw) == ["spec.manifestWorkTemplate.workload.manifests: must not be empty"]


def test_replica_set_schema_and_admission_problems_together() -> None:
    raw = samples.manifest_work_replica_set()
    raw["spec"]["placementRefs"] = []
    raw["spec"]["manifestWorkTemplate"]["workload"]["manifests"][0]["metadata"] = {}
    assert _problems(raw) == [
        "spec.placementRefs: must have at least 1 item",
        "spec.manifestWorkTemplate.workload.manifests[0]: metadata.name is required",
    ]


def test_other_kinds_have_no_admission_rules() -> None:
    raw = samples.placement()
    assert isinstance(validate_object(raw), Placement)


def test_samples_pass_admission() -> None:
    for build in samples.ALL.values():
        validate_object(build())


def test_kind_is_chosen_from_the_object() -> None:
    assert isinstance(parse_object(samples.manifest_work()), ManifestWork)
    assert isinstance(parse_object(samples.manifest_work_replica_set()), ManifestWorkReplicaSet)


def test_explicit_model_checks_kind_and_api_version() -> None:
    raw = samples.manifest_work()
    assert _problems(raw | {"kind": "Other"}, admission=False) == [
        "(root): unsupported apiVersion/kind work.open-cluster-management.io/v1/Other"
    ]
    with pytest.raises(SchemaValidationError) as err:
        parse_object(raw | {"apiVersion": "work.open-cluster-management.io/v2"}, ManifestWork)
    assert err.value.lines() == ["apiVersion: must be work.open-cluster-management.io/v1"]
    with pytest.raises(SchemaValidationError) as err:
        parse_object(samples.placement(), ManifestWork)
    assert err.value.lines()[:2] == [
        "apiVersion: must be work.open-cluster-management.io/v1",
        "kind: must be ManifestWork",
    ]


def test_not_an_object() -> None:
    assert _problems(["a"]) == ["(root): must be an object"]
    with pytest.raises(SchemaValidationError) as err:
        parse_object("text", ManifestWork)
    assert err.value.lines() == ["(root): must be an object"]


def test_error_text() -> None:
    one = SchemaValidationError("ManifestWork", [FieldProblem("spec", "x is required")])
    assert str(one) == "ManifestWork is invalid: spec: x is required"
    two = SchemaValidationError("ManifestWork", [FieldProblem("a", "b"), FieldProblem("c", "d")])
    assert str(two) == "ManifestWork is invalid:\n  a: b\n  c: d"
    assert isinstance(two, ValueError)


def test_from_wire_raises_schema_validation_error() -> None:
    with pytest.raises(SchemaValidationError) as err:
        ManifestWork.from_wire({"spec": {"workload": {"manifests": [{}]}}})
    assert err.value.kind == "ManifestWork"
    assert err.value.lines() == [
        "spec.workload.manifests[0]: apiVersion is required",
    ]


def test_model_validate_still_raises_pydantic_errors() -> None:
    with pytest.raises(ValidationError) as err:
        ManifestWork.model_validate({"spec": {"deleteOption": {"ttlSecondsAfterFinished": "1"}}})
    problems = problems_from_pydantic(err.value, prefix=("items", 3))
    assert [str(p) for p in problems] == [
        "items[3].spec.deleteOption.ttlSecondsAfterFinished: must be an integer"
    ]


@pytest.mark.parametrize(
    ("loc", "text"),
    [
        ((), "(root)"),
        (("spec",), "spec"),
        (("spec", "manifests", 2, "kind"), "spec.manifests[2].kind"),
        (
            ("metadata", "labels", "app.kubernetes.io/name"),
            "metadata.labels[app.kubernetes.io/name]",
        ),
        (("status", "capacity", "cpu"), "status.capacity.cpu"),
    ],
)
def test_format_path(loc: tuple[str | int, ...], text: str) -> None:
    assert format_path(loc) == text


def test_label_value_problem_path() -> None:
    raw = samples.manifest_work()
    raw["metadata"]["labels"]["app.kubernetes.io/name"] = 3
    assert _problems(raw, admission=False) == [
        "metadata.labels[app.kubernetes.io/name]: must be a string"
    ]


def test_manifest_problems_directly() -> None:
    assert manifest_problems([], ("x",)) == [FieldProblem("x", "must not be empty")]
    assert [str(p) for p in manifest_problems([_cm(None)], ("m",))] == [
        "m[0]: metadata.name is required"
    ]
