"""The recall hint of the apply loop: what the status and the AppliedManifestWork's
applied generation say about a manifest changed while the agent was down."""

from __future__ import annotations

from typing import Any

import pytest

from workagent.controllers.applied import APPLIED_GENERATION_ANNOTATION, applied_generation
from workagent.controllers.manifestwork import _may_have_changed


def _amw(value: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "annotations": {APPLIED_GENERATION_ANNOTATION: value}}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("3", 3), ("0", 0), ("", None), ("-1", None), ("3.0", None), ("²", None), (3, None)],
)
def test_the_annotation_is_read_as_a_non_negative_integer(value: Any, expected: int | None) -> None:
    assert applied_generation(_amw(value)) == expected


def test_no_annotation_records_nothing() -> None:
    assert applied_generation({"metadata": {"name": "x"}}) is None


def _applied(status: str, generation: int) -> dict[str, Any]:
    return {"conditions": [{"type": "Applied", "status": status, "observedGeneration": generation}]}


WORK = {"metadata": {"name": "w", "generation": 4}}


@pytest.mark.parametrize(
    ("entry", "applied_at", "expected"),
    [
        # The status tells, whatever the AppliedManifestWork records.
        (_applied("True", 4), 2, False),
        (_applied("True", 3), 4, True),
        (_applied("False", 4), 4, True),
        # No status (grpc/mqtt after a restart): the record tells.
        (None, 4, False),
        (None, 3, True),
        (None, 5, True),
        # Nothing recorded, or not a restart (kube driver, a new work or manifest): no recall.
        (None, None, False),
    ],
)
def test_the_status_tells_first_then_the_recorded_generation(
    entry: dict[str, Any] | None, applied_at: int | None, expected: bool
) -> None:
    assert _may_have_changed(WORK, entry, applied_at) is expected
