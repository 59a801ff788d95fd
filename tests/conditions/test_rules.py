"""evaluate_rules end to end, through real CEL worker processes (spec/agent.md 13.1-13.3).

One evaluator (two workers) serves the whole module, on a module-scoped
event loop, so that the workers start once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from schemas.work_v1 import ConditionRule, ConditionRuleType
from tests.conditions.conftest import (
    cel,
    deployment,
    job,
    job_complete,
    job_failed,
    job_running,
    job_succeeding,
    pod,
    well_known,
)
from workagent.conditions.rules import (
    ConditionRuleEvaluator,
    close_default_evaluator,
    default_evaluator,
    evaluate_rules,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

GENERATION = 7


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def evaluator() -> AsyncIterator[ConditionRuleEvaluator]:
    evaluator = ConditionRuleEvaluator()
    await evaluator.start()
    try:
        yield evaluator
    finally:
        await evaluator.aclose()


def cond(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": GENERATION,
    }


async def one(
    evaluator: ConditionRuleEvaluator, rule: ConditionRule, obj: dict[str, Any]
) -> dict[str, Any]:
    conditions = await evaluator.evaluate_rules([rule], obj, generation=GENERATION)
    assert len(conditions) == 1, conditions
    return conditions[0]


# --------------------------------------------------------------------------
# No rules
# --------------------------------------------------------------------------


async def test_no_rules(evaluator: ConditionRuleEvaluator) -> None:
    assert await evaluator.evaluate_rules(None, job_complete(), generation=1) == []
    assert await evaluator.evaluate_rules([], job_complete(), generation=1) == []


# --------------------------------------------------------------------------
# WellKnownConditions
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "status", "message"),
    [
        (job_complete(), "True", "Job is finished"),
        (job_failed(), "True", "Job is finished"),
        (job_running(), "False", "Job is not finished"),
        (job_succeeding(), "False", "Job is not finished"),
        (
            job({"conditions": [{"type": "Complete", "status": "False"}], "succeeded": 0}),
            "False",
            "Job is not finished",
        ),
    ],
    ids=["complete", "failed", "running", "success-criteria-met", "complete-false"],
)
async def test_job_complete(
    evaluator: ConditionRuleEvaluator, obj: dict[str, Any], status: str, message: str
) -> None:
    assert await one(evaluator, well_known(), obj) == cond(
        "Complete", status, "ConditionRuleEvaluated", message
    )


@pytest.mark.parametrize(
    ("phase", "status"),
    [("Succeeded", "True"), ("Failed", "True"), ("Running", "False"), ("Pending", "False")],
)
async def test_pod_complete(evaluator: ConditionRuleEvaluator, phase: str, status: str) -> None:
    assert await one(evaluator, well_known(), pod(phase)) == cond(
        "Complete", status, "ConditionRuleEvaluated", f"Pod is in phase {phase}"
    )


async def test_job_without_status_fails_as_in_ocm(evaluator: ConditionRuleEvaluator) -> None:
    obj = job_running()
    del obj["status"]
    assert await one(evaluator, well_known(), obj) == cond(
        "Complete", "False", "ConditionRuleExpressionError", "no such key: status"
    )


async def test_pod_without_phase_fails_as_in_ocm(evaluator: ConditionRuleEvaluator) -> None:
    assert await one(evaluator, well_known(), pod(None)) == cond(
        "Complete", "False", "ConditionRuleExpressionError", "no such key: phase"
    )


@pytest.mark.parametrize(
    ("obj", "condition"),
    [
        (deployment(), "Complete"),
        ({**job_complete(), "apiVersion": "batch/v1beta1"}, "Complete"),
        ({**pod("Succeeded"), "apiVersion": "apps/v1"}, "Complete"),
        (job_complete(), "Available"),
        (pod("Succeeded"), "Progressing"),
        ({"kind": "Job", "status": {}}, "Complete"),
    ],
    ids=[
        "deployment",
        "job-v1beta1",
        "pod-wrong-group",
        "job-available",
        "pod-progressing",
        "no-api-version",
    ],
)
async def test_well_known_without_a_rule_produces_nothing(
    evaluator: ConditionRuleEvaluator, obj: dict[str, Any], condition: str
) -> None:
    assert await evaluator.evaluate_rules([well_known(condition)], obj, generation=1) == []


async def test_well_known_user_message_expression_overrides(
    evaluator: ConditionRuleEvaluator,
) -> None:
    rule = well_known(message_expression="result ? 'done: ' + object.metadata.name : 'busy'")
    assert await one(evaluator, rule, job_complete()) == cond(
        "Complete", "True", "ConditionRuleEvaluated", "done: pi"
    )


async def test_well_known_user_message_loses_to_the_builtin_expression(
    evaluator: ConditionRuleEvaluator,
) -> None:
    # As in OCM: the user's message replaces the built-in (empty) message, but
    # the built-in messageExpression still yields a non-empty string first.
    rule = well_known(message="custom")
    assert (await one(evaluator, rule, job_complete()))["message"] == "Job is finished"


# --------------------------------------------------------------------------
# CEL: status and message
# --------------------------------------------------------------------------


async def test_cel_complete_and_incomplete_default_messages(
    evaluator: ConditionRuleEvaluator,
) -> None:
    done = cel("Complete", "object.status.succeeded >= 1")
    assert await one(evaluator, done, job_complete()) == cond(
        "Complete", "True", "ConditionRuleEvaluated", "Manifest is Complete"
    )
    busy = cel("Complete", "has(object.status.succeeded) && object.status.succeeded >= 1")
    assert await one(evaluator, busy, job_running()) == cond(
        "Complete", "False", "ConditionRuleEvaluated", "Manifest is not Complete"
    )


async def test_cel_static_message(evaluator: ConditionRuleEvaluator) -> None:
    rule = cel("Complete", "false", message="still running")
    assert await one(evaluator, rule, job_running()) == cond(
        "Complete", "False", "ConditionRuleEvaluated", "still running"
    )


async def test_cel_message_expression_sees_result_and_object(
    evaluator: ConditionRuleEvaluator,
) -> None:
    rule = cel(
        "Ready",
        "object.status.readyReplicas == object.status.replicas",
        message="static loses",
        message_expression=(
            "result ? 'all ready' : '%d of %d ready'.format("
            "[object.status.readyReplicas, object.status.replicas])"
        ),
    )
    assert await one(evaluator, rule, deployment(ready=1, replicas=2)) == cond(
        "Ready", "False", "ConditionRuleEvaluated", "1 of 2 ready"
    )
    assert await one(evaluator, rule, deployment(ready=2, replicas=2)) == cond(
        "Ready", "True", "ConditionRuleEvaluated", "all ready"
    )


async def test_empty_message_expression_result_falls_back(
    evaluator: ConditionRuleEvaluator,
) -> None:
    with_static = cel("Ready", "true", message="static", message_expression="''")
    assert (await one(evaluator, with_static, deployment()))["message"] == "static"
    without = cel("Ready", "true", message_expression="result ? '' : 'no'")
    assert (await one(evaluator, without, deployment()))["message"] == "Manifest is Ready"


async def test_message_expression_errors_keep_the_status(
    evaluator: ConditionRuleEvaluator,
) -> None:
    # (expression, message expression, status, message): a compile error, a runtime
    # error, a result that is not a string.
    cases = [
        (
            "true",
            "badcel",
            "True",
            "ERROR: <input>:1:1: undeclared reference to 'badcel' (in container '')",
        ),
        ("false", "object.status.nope", "False", "no such key: nope"),
        ("true", "result", "True", "expected message expression to have a string result, got bool"),
    ]
    for expression, message_expression, status, message in cases:
        rule = cel("Available", expression, message_expression=message_expression)
        assert await one(evaluator, rule, deployment()) == cond(
            "Available", status, "ConditionRuleEvaluated", message
        ), message_expression


async def test_no_expressions_is_true(evaluator: ConditionRuleEvaluator) -> None:
    assert await one(evaluator, cel("Complete"), deployment()) == cond(
        "Complete", "True", "ConditionRuleEvaluated", "Manifest is Complete"
    )
    rule = ConditionRule(
        condition="Complete", type=ConditionRuleType.CEL, message_expression="'by message'"
    )
    assert (await one(evaluator, rule, deployment()))["message"] == "by message"


async def test_expressions_are_anded_with_short_circuit(
    evaluator: ConditionRuleEvaluator,
) -> None:
    rule = cel("Complete", "true", "object.spec.replicas == 99", "object.missing")
    assert await one(evaluator, rule, deployment()) == cond(
        "Complete", "False", "ConditionRuleEvaluated", "Manifest is not Complete"
    )


# --------------------------------------------------------------------------
# CEL: errors
# --------------------------------------------------------------------------


async def test_compile_error(evaluator: ConditionRuleEvaluator) -> None:
    source = "object.status.phase == 'Succeeded' &&"
    rule = cel("Complete", source, message_expression="'x'")
    assert await one(evaluator, rule, pod("Running")) == cond(
        "Complete",
        "False",
        "ConditionRuleExpressionError",
        f"ERROR: <input>:1:{len(source) + 1}: Syntax error: mismatched input '<EOF>'\n"
        f" | {source}\n"
        f" | {'.' * len(source)}^",
    )


async def test_undeclared_function(evaluator: ConditionRuleEvaluator) -> None:
    rule = cel("Complete", "object.status.phase.toLower() == 'running'")
    assert await one(evaluator, rule, pod("Running")) == cond(
        "Complete",
        "False",
        "ConditionRuleExpressionError",
        "ERROR: <input>:1:28: undeclared reference to 'toLower' (in container '')\n"
        " | object.status.phase.toLower() == 'running'\n"
        " | ...........................^",
    )


async def test_runtime_error(evaluator: ConditionRuleEvaluator) -> None:
    assert await one(evaluator, cel("Available", "object.missing"), deployment()) == cond(
        "Available", "False", "ConditionRuleExpressionError", "no such key: missing"
    )


async def test_non_bool_result(evaluator: ConditionRuleEvaluator) -> None:
    rule = cel("Available", 'object.status.conditions.filter(c, c.type == "Available")[0].status')
    assert await one(evaluator, rule, deployment()) == cond(
        "Available", "False", "ConditionRuleExpressionError", "expected bool result, got string"
    )


async def test_unknown_rule_type(evaluator: ConditionRuleEvaluator) -> None:
    rule = ConditionRule.model_construct(condition="Complete", type="Bogus")
    assert await one(evaluator, rule, deployment()) == cond(
        "Complete", "Unknown", "ConditionRuleInvalid", "unrecognized condition rule type Bogus"
    )


async def test_rules_without_a_condition_type_produce_nothing(
    evaluator: ConditionRuleEvaluator,
) -> None:
    rules = [
        ConditionRule.model_construct(condition="", type="CEL", cel_expressions=["true"]),
        ConditionRule.model_construct(condition="", type="Bogus"),
        well_known(""),
    ]
    assert await evaluator.evaluate_rules(rules, job_complete(), generation=1) == []


async def test_long_messages_are_cut_to_the_api_limit(evaluator: ConditionRuleEvaluator) -> None:
    obj = {**deployment(), "data": {"blob": "x" * 40_000}}
    rule = cel("Available", "true", message_expression="object.data.blob")
    assert len((await one(evaluator, rule, obj))["message"]) == 32768


# --------------------------------------------------------------------------
# OCM's own reader test cases, verbatim
# --------------------------------------------------------------------------


async def test_ocm_reader_cases(evaluator: ConditionRuleEvaluator) -> None:
    obj = deployment()
    cases = [
        (
            cel(
                "Available",
                'object.status.conditions.exists(c, c.type == "Available" && c.status == "True")',
                message_expression='result ? "Deployment available" : "Deployment unavailable"',
            ),
            ("True", "ConditionRuleEvaluated", "Deployment available"),
        ),
        (
            cel(
                "HasConditions",
                """hasConditions(object.status)
                    && !hasConditions({})
                    && !hasConditions("badtype")
                    && !hasConditions({"conditions": []})
                    && !hasConditions({"conditions": null})""",
                message="should work",
            ),
            ("True", "ConditionRuleEvaluated", "should work"),
        ),
    ]
    for rule, (status, reason, message) in cases:
        assert await one(evaluator, rule, obj) == cond(rule.condition, status, reason, message)


# --------------------------------------------------------------------------
# Several condition types on one manifest
# --------------------------------------------------------------------------


async def test_multiple_condition_types_in_rule_order(evaluator: ConditionRuleEvaluator) -> None:
    rules = [
        well_known(),
        cel("Progressing", "has(object.status.active) && object.status.active > 0"),
        cel("Degraded", "has(object.status.failed) && object.status.failed > 0"),
        cel("example.com/Custom", "object.metadata.name.startsWith('p')", message="custom"),
        ConditionRule.model_construct(condition="Weird", type="Bogus"),
        well_known("Available"),  # no built-in rule: nothing
        cel("Broken", "object.status.nope"),
    ]
    assert await evaluator.evaluate_rules(rules, job_failed(), generation=GENERATION) == [
        cond("Complete", "True", "ConditionRuleEvaluated", "Job is finished"),
        cond("Progressing", "False", "ConditionRuleEvaluated", "Manifest is not Progressing"),
        cond("Degraded", "True", "ConditionRuleEvaluated", "Manifest is Degraded"),
        cond("example.com/Custom", "True", "ConditionRuleEvaluated", "custom"),
        cond("Weird", "Unknown", "ConditionRuleInvalid", "unrecognized condition rule type Bogus"),
        cond("Broken", "False", "ConditionRuleExpressionError", "no such key: nope"),
    ]


async def test_concurrent_evaluations_queue_for_workers(evaluator: ConditionRuleEvaluator) -> None:
    rule = cel("Ready", "object.status.readyReplicas == object.status.replicas")
    objects = [deployment(ready=i % 3, replicas=2) for i in range(24)]
    results = await asyncio.gather(
        *(evaluator.evaluate_rules([rule], o, generation=1) for o in objects)
    )
    assert [r[0]["status"] for r in results] == [
        "True" if i % 3 == 2 else "False" for i in range(24)
    ]


# --------------------------------------------------------------------------
# The module-level helper
# --------------------------------------------------------------------------


async def test_module_level_evaluate_rules_uses_a_default_evaluator() -> None:
    try:
        conditions = await evaluate_rules([well_known()], pod("Succeeded"), generation=3)
        assert conditions == [
            {
                "type": "Complete",
                "status": "True",
                "reason": "ConditionRuleEvaluated",
                "message": "Pod is in phase Succeeded",
                "observedGeneration": 3,
            }
        ]
        assert default_evaluator() is default_evaluator()
    finally:
        await close_default_evaluator()
