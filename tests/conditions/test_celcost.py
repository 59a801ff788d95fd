"""OCM's CEL cost limits (spec/agent.md 13.2), as OCM's agent applies them.

OCM's agent builds each rule program with Kubernetes' per-call limit of
1,000,000 cel-go cost units: a run past it fails with cel-go's ``operation
cancelled: actual cost limit exceeded``. The costs of the runs that succeed
are taken from a budget of 10,000,000 that one manifest's rules share in one
sync; a run that costs more than what is left fails with ``CEL evaluation
budget exceeded``; message expressions are not costed. (Observed with OCM
v1.2.1's own ``ConditionReader``; the per-run costs are compared with cel-go's
by tests/conditions/test_cel_oracle.py.)

String functions are costed by their arguments' sizes, so a contains() of two
10,000-character strings costs a million units and takes microseconds: these
tests reach the limits without slow runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from celpy.adapter import json_to_cel

from tests.conditions.conftest import cel
from tests.conditions.test_cel_oracle import ask_oracle
from workagent.conditions import celcheck
from workagent.conditions.celcost import Budget, CostTracker, call_cost, size
from workagent.conditions.celengine import CelEngine, run_program
from workagent.conditions.kubevalues import parse_cidr, parse_ip
from workagent.conditions.protocol import ExpressionsOutcome
from workagent.conditions.reasons import (
    BUDGET,
    BUDGET_EXCEEDED_MESSAGE,
    LIMIT_MESSAGE,
    PER_CALL_LIMIT,
)
from workagent.conditions.rules import ConditionRuleEvaluator

#: ceil(10,010 / 10)**2 = 1,002,001 units: one run over the per-call limit.
OVER_LIMIT = "a" * 10_010
#: ceil(9,990 / 10)**2 = 998,001 units, plus 6 for the selections of NEARLY: ten
#: runs fit in the budget, the eleventh does not.
NEAR_LIMIT = "b" * 9_990
COSTLY = "object.data.big.contains(object.data.big)"
NEARLY = "object.data.near.contains(object.data.near)"


def configmap(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "costs", "namespace": "default", **extra},
        "data": {"big": OVER_LIMIT, "near": NEAR_LIMIT, "small": "x"},
    }


def outcome(engine: CelEngine, *expressions: str, budget: Budget | None = None) -> Any:
    return engine.evaluate_expressions(
        expressions, {"object": json_to_cel(configmap())}, budget=budget
    )


@pytest.fixture(scope="module")
def engine() -> CelEngine:
    return CelEngine()


# --------------------------------------------------------------------------
# Units
# --------------------------------------------------------------------------


def test_sizes_are_cel_go_sizes() -> None:
    assert size("héllo") == 5  # code points
    assert size(b"\x00\x01") == 2
    assert size([1, 2, 3]) == 3
    assert size({"a": 1}) == 1
    assert size(7) == 1
    assert size(parse_ip("1.2.3.4")) == 4  # bytes of the address
    assert size(parse_ip("::1")) == 16
    assert size(parse_cidr("10.0.0.0/9")) == 2  # bytes of the prefix


def test_call_costs() -> None:
    assert call_cost("size", ["abc"], 3, False) == 1
    # ceil(min(25, 1) / 10)
    assert call_cost("_==_", ["a" * 25, "b"], False, False) == 1
    assert call_cost("_==_", ["a" * 25, "a" * 25], True, False) == 3
    # Sized only where cel-go's checker bound the call to the string overload.
    assert call_cost("_+_", ["a" * 25, "a" * 25], "a" * 50, True) == 5
    assert call_cost("_+_", ["a" * 25, "a" * 25], "a" * 50, False) == 1
    # ceil((1 + 25) / 10) * ceil(3 / 4)
    assert call_cost("matches", ["a" * 25, "a+b"], False, False) == 3
    # cel-go's extended strings: the call, the traversal and the result's size.
    assert call_cost("upperAscii", ["xyz"], "XYZ", False) == 1 + 1 + 3


def test_tracker_stops_past_its_limit() -> None:
    tracker = CostTracker(limit=10)
    tracker.charge(10)
    with pytest.raises(Exception, match=LIMIT_MESSAGE):
        tracker.charge(1)


def test_budget_takes_what_succeeded_only() -> None:
    budget = Budget(units=100)
    assert budget.take(60, None) is None
    assert budget.left == 40
    assert budget.take(90, "no such key: x") == "[no such key: x, CEL evaluation budget exceeded]"
    assert budget.take(30, "no such key: x") == "no such key: x"
    assert budget.left == 40  # a failed run takes nothing
    assert budget.take(41, None) == BUDGET_EXCEEDED_MESSAGE
    assert budget.take(40, None) is None
    assert budget.left == 0
    assert Budget().left == BUDGET


# --------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------


def test_a_run_past_the_per_call_limit_is_cancelled(engine: CelEngine) -> None:
    assert outcome(engine, COSTLY) == ExpressionsOutcome(
        "False", "ConditionRuleExpressionError", LIMIT_MESSAGE
    )
    # An expression before it still decides: the rule stops at a false.
    assert outcome(engine, "false", COSTLY) == ExpressionsOutcome("False", "ConditionRuleEvaluated")
    # A comprehension stops at the element that crosses the limit.
    assert outcome(engine, f"[1, 2, 3].all(x, {COSTLY})").error == LIMIT_MESSAGE


def test_and_or_do_not_evaluate_what_cannot_change_the_result(engine: CelEngine) -> None:
    # cel-go stops at a deciding left operand, so the costly right side costs nothing.
    assert outcome(engine, f"object.data.small == 'y' && {COSTLY}").status == "False"
    assert outcome(engine, f"object.data.small == 'x' || {COSTLY}").status == "True"
    assert outcome(engine, f"object.data.small == 'x' && {COSTLY}").error == LIMIT_MESSAGE


def test_the_budget_is_shared_by_expressions(engine: CelEngine) -> None:
    budget = Budget()
    results = [outcome(engine, NEARLY, budget=budget) for _ in range(11)]
    assert [r.status for r in results[:10]] == ["True"] * 10
    assert results[10] == ExpressionsOutcome(
        "False", "ConditionRuleExpressionError", BUDGET_EXCEEDED_MESSAGE
    )
    assert budget.left == BUDGET - 10 * 998_007


def test_the_cost_limit_is_the_engines_setting() -> None:
    lenient = CelEngine(cost_limit=2 * PER_CALL_LIMIT)
    assert outcome(lenient, COSTLY).status == "True"


# --------------------------------------------------------------------------
# Through the worker processes
# --------------------------------------------------------------------------


@pytest.fixture
async def evaluator() -> AsyncIterator[ConditionRuleEvaluator]:
    evaluator = ConditionRuleEvaluator(workers=1)
    await evaluator.start()
    try:
        yield evaluator
    finally:
        await evaluator.aclose()


async def test_rules_of_a_manifest_share_the_budget(evaluator: ConditionRuleEvaluator) -> None:
    # As OCM v1.2.1 evaluates them: the failed run takes nothing, ten runs of
    # 998,007 units fit, the eleventh and twelfth do not; message expressions cost
    # nothing (and have no limit).
    rules = [
        cel("Limit", COSTLY),
        *(cel(f"R{i}", NEARLY) for i in range(12)),
        cel("M", "true", message_expression=f"{COSTLY} ? 'costly' : 'cheap'"),
    ]
    conditions = await evaluator.evaluate_rules(rules, configmap(), generation=1)
    summary = [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions]
    assert summary[0] == ("Limit", "False", "ConditionRuleExpressionError", LIMIT_MESSAGE)
    assert summary[1:11] == [
        (f"R{i}", "True", "ConditionRuleEvaluated", f"Manifest is R{i}") for i in range(10)
    ]
    assert summary[11:13] == [
        (f"R{i}", "False", "ConditionRuleExpressionError", BUDGET_EXCEEDED_MESSAGE)
        for i in (10, 11)
    ]
    # The budget was spent: the message expression runs anyway, uncosted.
    assert summary[13] == ("M", "True", "ConditionRuleEvaluated", "costly")


async def test_outcomes_are_kept_for_an_unchanged_object(
    evaluator: ConditionRuleEvaluator,
) -> None:
    rules = [cel("Small", "object.data.small == 'x'")]
    first = await evaluator.evaluate_rules(rules, configmap(), generation=1)
    assert first[0]["status"] == "True"
    # With its workers stopped, the evaluator still answers the same object and rules
    # (from what it kept), and anything else with the pool's own error.
    await evaluator.pool.aclose()
    assert await evaluator.evaluate_rules(rules, configmap(), generation=2) == [
        {**first[0], "observedGeneration": 2}
    ]
    changed = await evaluator.evaluate_rules(rules, configmap(resourceVersion="2"), generation=2)
    other_rule = await evaluator.evaluate_rules([cel("Small", "true")], configmap(), generation=2)
    for [condition] in (changed, other_rule):
        assert (condition["status"], condition["reason"]) == (
            "Unknown",
            "ConditionRuleInternalError",
        )


# --------------------------------------------------------------------------
# cel-go itself
# --------------------------------------------------------------------------

#: (expression, object): runs near and past the limit, compared with cel-go's.
LIMIT_CASES: list[tuple[str, dict[str, Any]]] = [
    ("object.s.contains(object.t)", {"s": "a" * 9_999, "t": "a" * 9_999}),
    ("object.s.contains(object.t)", {"s": "a" * 9_990, "t": "a" * 9_990}),
    ("object.s.contains(object.t)", {"s": "a" * 10_010, "t": "a"}),
    ("object.s.matches(object.t)", {"s": "a" * 40_000, "t": "a" * 400}),
    ("object.s.matches(object.t)", {"s": "a" * 39_990, "t": "a" * 400}),
    ("object.l.all(x, x >= 0)", {"l": list(range(50_000))}),
    ("object.l.map(x, x + 1).size() > 0", {"l": list(range(20_000))}),
    ("object.l.exists(x, object.s.startsWith(object.s))", {"l": [1, 2], "s": "a" * 9_000_000}),
    ("object.s + object.s != ''", {"s": "a" * 20_000}),
]


@pytest.mark.realkube
@pytest.mark.parametrize(("expression", "obj"), LIMIT_CASES, ids=range(len(LIMIT_CASES)))
def test_limits_and_costs_match_cel_go(engine: CelEngine, expression: str, obj: Any) -> None:
    [theirs] = ask_oracle([expression], obj, cost=True)
    tracker = CostTracker()
    program = engine.compile(expression, celcheck.RULE_VARIABLES)
    _, error = run_program(program, {"object": json_to_cel(obj)}, tracker)
    if "error" in theirs:
        assert error == theirs["error"]
    else:
        assert error is None
        assert tracker.cost == theirs["cost"]
