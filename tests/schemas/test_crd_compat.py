"""The generated CRDs against the upstream OCM CRDs (tests/fixtures/crds/), path by path.

Everything in the CRD ``spec`` is compared (names, scope, versions, printer
columns, subresources and the whole OpenAPI schema: property names, types,
formats, enums, required lists, defaults, limits, patterns, list and map
types, preserve-unknown-fields, embedded resources, CEL rules), except
descriptions. Accepted differences go in ``crd_compat_allowlist.yaml``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from schemas.crdgen import crd_for
from schemas.meta import KubeObject
from schemas.registry import KINDS
from tests.schemas.upstream import compare_crds, load_allowlist, upstream_crds

ALLOWLIST = Path(__file__).with_name("crd_compat_allowlist.yaml")


def _allowed() -> set[tuple[str, str]]:
    return {(e["crd"], e["path"]) for e in load_allowlist(ALLOWLIST)}


def test_every_upstream_crd_is_generated() -> None:
    ours = {m.api_resource.crd_name for m in KINDS}
    assert ours == set(upstream_crds())


@pytest.mark.parametrize("model", KINDS, ids=lambda m: m.__name__)
def test_generated_crd_matches_upstream(model: type[KubeObject]) -> None:
    theirs = upstream_crds()[model.api_resource.crd_name]
    differences = compare_crds(crd_for(model), theirs)
    unexplained = [str(d) for d in differences if (d.crd, d.path) not in _allowed()]
    assert not unexplained, "differences not in the allowlist:\n" + "\n".join(unexplained)


def test_allowlist_entries_are_explained_and_still_needed() -> None:
    actual = {
        (d.crd, d.path)
        for model in KINDS
        for d in compare_crds(crd_for(model), upstream_crds()[model.api_resource.crd_name])
    }
    for entry in load_allowlist(ALLOWLIST):
        assert set(entry) == {"crd", "path", "reason"}, entry
        reason = entry["reason"].strip()
        assert reason, f"{entry['path']}: a reason is required"
        assert "\n" not in reason, f"{entry['path']}: the reason must be one line"
        assert (entry["crd"], entry["path"]) in actual, f"stale allowlist entry: {entry}"


def _schema_props(crd: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    return props


def test_comparison_reports_each_kind_of_difference() -> None:
    """The comparison itself must not be blind: mutate upstream and look."""
    theirs = upstream_crds()["manifestworks.work.open-cluster-management.io"]
    ours = copy.deepcopy(theirs)
    spec = _schema_props(ours)["spec"]["properties"]
    delete = spec["deleteOption"]["properties"]
    delete["propagationPolicy"]["enum"].append("Background")
    delete["propagationPolicy"]["default"] = "Orphan"
    delete["ttlSecondsAfterFinished"]["format"] = "int32"
    configs = spec["manifestConfigs"]["items"]
    configs["required"] = []
    configs["properties"]["conditionRules"]["x-kubernetes-list-type"] = "atomic"
    del spec["workload"]["properties"]["manifests"]["items"]["x-kubernetes-preserve-unknown-fields"]
    spec["extra"] = {"type": "string"}
    ours["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "ignored"

    found = {
        d.path.rsplit("properties.spec.properties.", 1)[-1] for d in compare_crds(ours, theirs)
    }
    assert found == {
        "deleteOption.properties.propagationPolicy.enum",
        "deleteOption.properties.propagationPolicy.default",
        "deleteOption.properties.ttlSecondsAfterFinished.format",
        "manifestConfigs.items.required",
        "manifestConfigs.items.properties.conditionRules.x-kubernetes-list-type",
        "workload.properties.manifests.items.x-kubernetes-preserve-unknown-fields",
        "extra",
    }


def test_comparison_distinguishes_int_from_bool_and_string() -> None:
    theirs = upstream_crds()["placements.cluster.open-cluster-management.io"]
    ours = copy.deepcopy(theirs)
    status = _schema_props(ours)["status"]["properties"]
    status["decisionGroups"]["items"]["properties"]["clusterCount"]["default"] = False
    spec = _schema_props(ours)["spec"]["properties"]
    spec["prioritizerPolicy"]["properties"]["configurations"]["items"]["properties"]["weight"][
        "default"
    ] = "1"
    assert len(compare_crds(ours, theirs)) == 2
