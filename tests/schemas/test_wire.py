"""Wire constants are spelled exactly as the API specification spells them."""

from __future__ import annotations

import re

import pytest

from schemas import wire
from schemas.cluster_v1 import TaintEffect
from schemas.cluster_v1alpha1 import RolloutType
from schemas.work_v1 import (
    ConditionRuleType,
    DeletePropagationPolicyType,
    ExecutorSubjectType,
    FeedbackRuleType,
    FeedbackScrapeType,
    FieldValueType,
    IgnoreFieldsCondition,
    UpdateStrategyType,
)
from schemas.work_v1alpha1 import CascadeDeletionPolicy
from tests.schemas.seeds import SHARED

API_MD = SHARED / "spec" / "api.md"

pytestmark = pytest.mark.skipif(
    not API_MD.is_file(), reason=f"{API_MD} not found (../shared is kept outside the repository)"
)


def _quoted_strings() -> set[str]:
    """Every backticked string in api.md, split at ``|`` and ``=`` as tables use them."""
    found: set[str] = set()
    for text in re.findall(r"`([^`]+)`", API_MD.read_text(encoding="utf-8")):
        found.add(text.strip())
        found.update(part.strip() for part in re.split(r"[|=]", text))
    return found


def _constants() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(wire).items()
        if name.isupper() and isinstance(value, str)
    }


def test_every_wire_constant_is_in_the_spec() -> None:
    quoted = _quoted_strings()
    missing = {name: value for name, value in _constants().items() if value not in quoted}
    assert not missing


def test_constant_groups() -> None:
    assert wire.WORK_CONDITION_TYPES[-1] == "Deleting"
    assert wire.MANIFEST_CONDITION_TYPES[-1] == "StatusFeedbackSynced"
    assert wire.CONDITION_MANIFESTWORK_APPLIED == "ManifestworkApplied"
    rule_reasons = [v for k, v in _constants().items() if k.startswith("REASON_CONDITION_RULE_")]
    assert len(rule_reasons) == 4
    assert all(r.startswith(wire.CONDITION_RULE_REASON_PREFIX) for r in rule_reasons)


@pytest.mark.parametrize(
    "enum",
    [
        DeletePropagationPolicyType,
        UpdateStrategyType,
        FeedbackRuleType,
        FeedbackScrapeType,
        IgnoreFieldsCondition,
        ConditionRuleType,
        ExecutorSubjectType,
        FieldValueType,
        RolloutType,
        CascadeDeletionPolicy,
    ],
)
def test_enum_values_are_in_the_spec(enum: type) -> None:
    quoted = _quoted_strings()
    assert {m.value for m in enum} <= quoted  # type: ignore[attr-defined]


def test_taint_effects() -> None:
    assert [e.value for e in TaintEffect] == ["NoSelect", "PreferNoSelect", "NoSelectIfNew"]
