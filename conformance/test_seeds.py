"""Every ManifestWork / ManifestWorkReplicaSet example in the user docs parses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.seeds import Example, work_examples, work_lines_not_extracted
from conformance.shared import SEEDS
from schemas import ManifestWork, ManifestWorkReplicaSet, SchemaValidationError, validate_object
from schemas.cluster_v1alpha1 import RolloutType

WORK = work_examples()

#: Examples the API server rejects too, so our models must reject them: the
#: documentation is wrong. Each maps to (reason, the problems we report).
KNOWN_DOC_ERRORS: dict[str, tuple[str, list[str]]] = {
    "004_cee3fc6a6c270161.txt:405": (
        "celExpressions written as {expression: ...} objects; the API takes plain strings",
        [
            "spec.manifestConfigs[0].conditionRules[0].celExpressions[0]: must be a string",
            "spec.manifestConfigs[0].conditionRules[1].celExpressions[0]: must be a string",
        ],
    ),
}

#: ``kind: ManifestWork`` lines that are not in any example: plain-text renders
#: that lost their line breaks or indentation, so no YAML is left to read.
#: The same objects appear as proper examples elsewhere in the seeds.
RENDERING_DEBRIS = {
    "003_7e79aefd00f2d27c.txt:30": "a whole ManifestWork flattened onto one line",
    "003_7e79aefd00f2d27c.txt:44": "a ManifestWork whose indentation was lost",
}


def _ids(item: tuple[Example, dict[str, Any]]) -> str:
    return item[0].id


def test_examples_are_found() -> None:
    assert len(WORK) >= 50
    sources = {example.source for example, _ in WORK}
    for path in SEEDS.glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        if "\nkind: ManifestWork" in text and path.name != "003_7e79aefd00f2d27c.txt":
            assert path.name in sources
    kinds = {doc["kind"] for _, doc in WORK}
    assert kinds == {"ManifestWork", "ManifestWorkReplicaSet"}


def test_every_work_in_the_seeds_is_an_example_or_known_debris() -> None:
    assert work_lines_not_extracted() == sorted(RENDERING_DEBRIS)


@pytest.mark.parametrize("item", WORK, ids=_ids)
def test_example_parses_and_round_trips(item: tuple[Example, dict[str, Any]]) -> None:
    example, doc = item
    known = KNOWN_DOC_ERRORS.get(example.id)
    if known is not None:
        with pytest.raises(SchemaValidationError) as err:
            validate_object(doc)
        assert err.value.lines() == known[1]
        return
    obj = validate_object(doc)
    assert obj.to_wire() == doc
    assert json.dumps(obj.to_wire(), sort_keys=True) == json.dumps(doc, sort_keys=True)


def test_known_doc_errors_still_exist() -> None:
    assert set(KNOWN_DOC_ERRORS) <= {example.id for example, _ in WORK}


def _find(predicate: str) -> list[dict[str, Any]]:
    return [doc for example, doc in WORK if predicate in example.text]


def test_rollout_type_in_the_docs_is_an_unknown_field() -> None:
    # The docs write rolloutType; the API field is type, so the API server
    # prunes rolloutType and defaults type to All. We keep it as unknown.
    docs = _find("rolloutType: Progressive")
    assert docs
    mwrs = ManifestWorkReplicaSet.from_wire(docs[0])
    assert mwrs.spec is not None
    progressive = mwrs.spec.placement_refs[1].rollout_strategy
    assert progressive is not None
    assert progressive.type == RolloutType.ALL
    assert progressive.model_extra == {"rolloutType": "Progressive"}
    assert progressive.progressive is not None
    assert progressive.progressive.max_failures == "5%"
    assert progressive.progressive.mandatory_decision_groups is not None


def test_misplaced_force_in_the_docs_is_an_unknown_field() -> None:
    docs = _find("        force: true\n        serverSideApply:")
    assert docs
    work = ManifestWork.from_wire(docs[0])
    assert work.spec.manifest_configs is not None
    strategy = work.spec.manifest_configs[0].update_strategy
    assert strategy is not None
    assert strategy.model_extra == {"force": True}
    assert strategy.server_side_apply is not None
    assert strategy.server_side_apply.force is False
    assert strategy.server_side_apply.field_manager == "work-agent"
