"""The JSONPath work budget is shared by all feedback paths of one resource.

Without sharing, a rule listing N expensive paths cost N times the per-path
limit (seconds of CPU each), every status sync; with it, the whole rule costs
one budget and the paths past it fail at once with a message saying so.
"""

from __future__ import annotations

from typing import Any

from schemas.work_v1 import FeedbackRule
from workagent.feedback import is_cheap, read_feedback
from workagent.feedback.jsonpath import MAX_WORK, WorkBudget, compile_path

#: A ConfigMap whose recursive descent visits 600,000 string bytes.
BIG: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "big", "namespace": "default"},
    "data": {"a": "x" * 300_000, "b": "y" * 300_000, "k": "found"},
}


def json_paths(*pairs: tuple[str, str]) -> FeedbackRule:
    """A JSONPaths rule of (name, path) pairs."""
    return FeedbackRule.model_validate(
        {"type": "JSONPaths", "jsonPaths": [{"name": n, "path": p} for n, p in pairs]}
    )


def test_expensive_paths_share_one_budget() -> None:
    rule = json_paths(
        ("first", "..k..x"),
        ("second", "..k..x"),
        ("third", "..k..x"),
        ("plain", ".data.k"),
    )
    result = read_feedback([rule], BIG, raw_json=False, max_json_raw_length=1024)
    status, reason, message = result.condition
    assert (status, reason) == ("False", "StatusFeedbackSyncFailed")
    # The first path fits in the budget (600,004 values) and finds nothing; the
    # second runs out of what it left; the third is refused at once.
    together = (
        f"the paths of this resource produce more than {MAX_WORK} intermediate values "
        "together; this one was not evaluated to the end"
    )
    assert message == (
        "Sync status feedback failed with error ["
        f"failed to find value for second with error: {together}, "
        f"failed to find value for third with error: {together}]"
    )
    # A plain field chain costs nothing and is read whatever the budget.
    assert result.values == [{"name": "plain", "fieldValue": {"type": "String", "string": "found"}}]


def test_a_budget_is_drawn_from_and_exhausted() -> None:
    budget = WorkBudget(1000)
    template = compile_path("..k")
    template.find_results({"data": {"k": "v" * 100}}, budget)
    assert 0 < budget.remaining < 1000
    spent = 1000 - budget.remaining
    template.find_results({"data": {"k": "v" * 100}}, budget)
    assert budget.remaining == 1000 - 2 * spent


def test_a_path_on_its_own_keeps_the_per_path_limit() -> None:
    result = read_feedback(
        [json_paths(("only", "..k..x"))], BIG, raw_json=False, max_json_raw_length=1024
    )
    assert result.condition == ("True", "StatusFeedbackSynced", "")


def test_cheap_rules_are_recognised() -> None:
    well_known = FeedbackRule.model_validate({"type": "WellKnownStatus"})
    assert is_cheap(None)
    assert is_cheap([well_known])
    assert is_cheap([json_paths(("a", ".status.readyReplicas"), ("b", ".a[?(@.b <"))])
    assert not is_cheap([json_paths(("a", ".status.readyReplicas"), ("b", "..name"))])
    assert not is_cheap([json_paths(("a", ".items[*].name"))])
