"""Wire constants and enum values are spelled exactly as the API specification spells them."""

from __future__ import annotations

import re

import pytest

from conformance.shared import SPEC
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
from tests.schemas.test_wire import wire_constants

API_MD = SPEC / "api.md"


def _quoted_strings() -> set[str]:
    """Every backticked string in api.md, split at ``|`` and ``=`` as tables use them."""
    found: set[str] = set()
    for text in re.findall(r"`([^`]+)`", API_MD.read_text(encoding="utf-8")):
        found.add(text.strip())
        found.update(part.strip() for part in re.split(r"[|=]", text))
    return found


def test_every_wire_constant_is_in_the_spec() -> None:
    quoted = _quoted_strings()
    missing = {name: value for name, value in wire_constants().items() if value not in quoted}
    assert not missing


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
