"""The generated CRDs served by kubesim: objects go in and come back as models."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from schemas import (
    ManifestWork,
    ManifestWorkReplicaSet,
    Placement,
    SchemaValidationError,
    parse_object,
)
from schemas.crdgen import crd_for
from schemas.meta import Condition, ConditionStatus, parse_time
from schemas.registry import KINDS, model_for
from schemas.work_v1 import ManifestWorkStatus
from tests.conftest import Raw, eventually
from tests.schemas import samples

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def _install(raw: Raw) -> None:
    for model in KINDS:
        status, body = await raw.request("POST", CRDS, crd_for(model))
        assert status == 201, body
    status, body = await raw.request(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cluster1"}},
    )
    assert status == 201, body

    async def served() -> bool:
        for model in KINDS:
            info = model.api_resource
            status, _ = await raw.request("GET", f"/apis/{info.api_version}/{info.plural}")
            if status != 200:
                return False
        return True

    await eventually(served, what="the CRDs to be served")


def _path(obj: dict[str, Any], namespace: str = "cluster1") -> str:
    model = model_for(obj["apiVersion"], obj["kind"])
    assert model is not None
    info = model.api_resource
    if info.scope == "Cluster":
        return f"/apis/{info.api_version}/{info.plural}"
    return f"/apis/{info.api_version}/namespaces/{namespace}/{info.plural}"


async def test_every_sample_is_stored_and_read_back(raw: Raw) -> None:
    await _install(raw)
    for build in samples.ALL.values():
        obj = build()
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "labels")}
        obj.pop("status", None)
        status, body = await raw.request("POST", _path(obj), obj)
        assert status == 201, body
        model = parse_object(body)
        assert model.to_wire() == body
        assert model.metadata.uid


def _unsaved(obj: dict[str, Any], name: str) -> dict[str, Any]:
    """A sample as a client sends it: named ``name``, no other metadata, no status."""
    del obj["status"]
    obj["metadata"] = {"name": name}
    return obj


async def test_status_written_from_a_model(raw: Raw) -> None:
    await _install(raw)
    obj = _unsaved(samples.manifest_work(), "demo")
    status, body = await raw.request("POST", _path(obj), obj)
    assert status == 201, body

    work = ManifestWork.from_wire(body)
    work.status = ManifestWorkStatus(
        conditions=[
            Condition(
                type="Applied",
                status=ConditionStatus.TRUE,
                reason="AppliedManifestWorkComplete",
                message="Apply manifest work complete",
                last_transition_time=parse_time("2024-01-02T03:04:05Z"),
                observed_generation=work.metadata.generation,
            )
        ]
    )
    status, body = await raw.request("PUT", f"{_path(obj)}/demo/status", work.to_wire())
    assert status == 200, body
    stored = ManifestWork.from_wire(body)
    assert stored.status is not None and stored.status.conditions is not None
    assert stored.status.conditions[0].reason == "AppliedManifestWorkComplete"
    assert stored.to_wire() == body


async def test_server_defaults_read_the_same_as_model_defaults(raw: Raw) -> None:
    await _install(raw)
    mwrs = _unsaved(samples.manifest_work_replica_set(), "mwrs")
    status, body = await raw.request("POST", _path(mwrs), mwrs)
    assert status == 201, body
    ours = ManifestWorkReplicaSet.from_wire(mwrs)
    served = ManifestWorkReplicaSet.from_wire(body)
    assert ours.spec is not None and served.spec is not None
    for mine, theirs in zip(ours.spec.placement_refs, served.spec.placement_refs, strict=True):
        # The server defaults an absent strategy; the model reads it as None
        # (All), and a given one with every default filled in.
        assert theirs.rollout_strategy is not None
        if mine.rollout_strategy is not None:
            assert mine.rollout_strategy.model_dump() == theirs.rollout_strategy.model_dump()
    placement = samples.placement()
    del placement["status"]
    placement["metadata"] = {"name": "placement"}
    status, body = await raw.request("POST", _path(placement), placement)
    assert status == 201, body
    served_spec = Placement.from_wire(body).spec.model_dump()
    assert served_spec == Placement.from_wire(placement).spec.model_dump()


async def test_rejections_name_the_same_field(raw: Raw) -> None:
    await _install(raw)
    obj = _unsaved(copy.deepcopy(samples.manifest_work()), "bad")
    del obj["spec"]["workload"]["manifests"][1]["kind"]
    obj["spec"]["manifestConfigs"][0]["conditionRules"][1]["condition"] = ""
    status, body = await raw.request("POST", _path(obj), obj)
    assert status == 422, body
    fields = {c["field"] for c in body["details"]["causes"]}
    assert "spec.workload.manifests[1].kind" in fields
    with pytest.raises(SchemaValidationError) as err:
        parse_object(obj)
    assert err.value.lines() == [
        "spec.workload.manifests[1]: kind is required",
        "spec.manifestConfigs[0].conditionRules[1]: Condition is required for CEL rules",
    ]

    # With the schema error fixed the server runs the CEL rule too.
    obj["spec"]["workload"]["manifests"][1]["kind"] = "Deployment"
    status, body = await raw.request("POST", _path(obj), obj)
    assert status == 422, body
    causes = body["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.manifestConfigs[0].conditionRules[1]"]
    assert "Condition is required for CEL rules" in causes[0]["message"]
