"""Work-level aggregation of manifest conditions (spec/agent.md 13.4 and 9)."""

from __future__ import annotations

from typing import Any

import pytest

from workagent.conditions.aggregate import aggregate, aggregate_available


def mc(
    ctype: str, status: str, message: str = "", reason: str = "ConditionRuleEvaluated"
) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 4,
        "lastTransitionTime": "2025-02-20T18:53:40Z",
    }


def applied() -> dict[str, Any]:
    return mc("Applied", "True", "Apply manifest complete", reason="AppliedManifestComplete")


def available(status: str) -> dict[str, Any]:
    return mc("Available", status, "Resource is available", reason="ResourceAvailable")


def work(ctype: str, status: str, message: str, generation: int = 9) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": "ConditionRulesAggregated",
        "message": message,
        "observedGeneration": generation,
    }


def statuses(ctype: str, *values: str) -> list[list[dict[str, Any]]]:
    return [[applied(), mc(ctype, v, f"m{i}")] for i, v in enumerate(values)]


def test_no_manifests_no_rule_conditions() -> None:
    assert aggregate([], generation=1) == []
    assert aggregate([[applied(), available("True")]], generation=1) == []


def test_single_manifest_keeps_its_message() -> None:
    manifests = [[applied(), available("True"), mc("Complete", "True", "Job is finished")]]
    assert aggregate(manifests, generation=9) == [work("Complete", "True", "Job is finished")]


def test_single_manifest_with_empty_message() -> None:
    manifests = [[mc("Complete", "True", "")]]
    assert aggregate(manifests, generation=9) == [
        work("Complete", "True", "Aggregated from 1 manifest conditions")
    ]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (("True", "True"), "True"),
        (("True", "False"), "False"),
        (("True", "Unknown"), "Unknown"),
        (("Unknown", "False"), "False"),
        (("Unknown", "Unknown"), "Unknown"),
        (("False", "False"), "False"),
    ],
)
def test_ordinary_types_need_every_manifest_true(values: tuple[str, ...], expected: str) -> None:
    assert aggregate(statuses("Complete", *values), generation=9) == [
        work("Complete", expected, f"Aggregated from {len(values)} manifest conditions")
    ]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (("False", "True"), "True"),
        (("Unknown", "True", "False"), "True"),
        (("False", "Unknown"), "Unknown"),
        (("False", "False"), "False"),
    ],
)
def test_progressing_is_true_when_any_manifest_progresses(
    values: tuple[str, ...], expected: str
) -> None:
    assert aggregate(statuses("Progressing", *values), generation=9) == [
        work("Progressing", expected, f"Aggregated from {len(values)} manifest conditions")
    ]


def test_odd_statuses_never_make_true() -> None:
    # Neither True, False nor Unknown: "none True" makes it Unknown.
    assert aggregate([[mc("Complete", "Maybe", "x")]], generation=9) == [
        work("Complete", "Unknown", "x")
    ]


def test_manifests_without_the_rule_do_not_vote() -> None:
    manifests = [
        [applied(), available("True"), mc("Complete", "True", "Job is finished")],
        [applied(), available("True")],  # a ConfigMap without a Complete rule
    ]
    assert aggregate(manifests, generation=9) == [work("Complete", "True", "Job is finished")]


def test_only_rule_generated_conditions_are_aggregated() -> None:
    manifests = [
        [
            applied(),
            available("False"),
            mc("StatusFeedbackSynced", "True", reason="StatusFeedbackSynced"),
            mc("Degraded", "True", "by a controller", reason="SomethingElse"),
        ]
    ]
    assert aggregate(manifests, generation=9) == []


def test_rule_generated_available_is_left_to_aggregate_available() -> None:
    manifests = [[mc("Available", "True", "Deployment available")]]
    assert aggregate(manifests, generation=9) == []
    assert aggregate_available(manifests, generation=9)["status"] == "True"


def test_every_reason_starting_with_condition_rule_counts() -> None:
    manifests = [
        [mc("Complete", "False", "no such key: x", reason="ConditionRuleExpressionError")],
        [mc("Complete", "Unknown", "oops", reason="ConditionRuleInternalError")],
        [mc("Complete", "Unknown", "bad type", reason="ConditionRuleInvalid")],
    ]
    assert aggregate(manifests, generation=9) == [
        work("Complete", "False", "Aggregated from 3 manifest conditions")
    ]


def test_sorted_by_type_with_generation() -> None:
    manifests = [
        [
            mc("Progressing", "True", "rolling"),
            mc("Complete", "False"),
            mc("Degraded", "False", "ok"),
        ],
        [mc("Complete", "True"), mc("example.com/Ready", "True", "yes")],
    ]
    assert aggregate(manifests, generation=12) == [
        work("Complete", "False", "Aggregated from 2 manifest conditions", 12),
        work("Degraded", "False", "ok", 12),
        work("Progressing", "True", "rolling", 12),
        work("example.com/Ready", "True", "yes", 12),
    ]


# --------------------------------------------------------------------------
# Available
# --------------------------------------------------------------------------


def avail(status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": "Available",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 9,
    }


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((), avail("Unknown", "ResourcesStatusUnknown", "cannot get any available resource ")),
        (("True", "True"), avail("True", "ResourcesAvailable", "All resources are available")),
        (
            ("True", "False", "Unknown"),
            avail("False", "ResourcesNotAvailable", "1 of 3 resources are not available"),
        ),
        (
            ("True", "Unknown", "Unknown"),
            avail("Unknown", "ResourcesStatusUnknown", "2 of 3 resources have unknown status"),
        ),
        (
            (None, None),
            avail("Unknown", "ResourcesStatusUnknown", "cannot get any available resource "),
        ),
        (("True", None), avail("True", "ResourcesAvailable", "All resources are available")),
    ],
)
def test_available(values: tuple[str | None, ...], expected: dict[str, Any]) -> None:
    manifests = [[applied()] + ([available(v)] if v else []) for v in values]
    assert aggregate_available(manifests, generation=9) == expected
