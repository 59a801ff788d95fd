"""Condition-rule evaluation rates: the CEL engine alone, and evaluate_rules through workers.

A benchmark, not a test: it prints figures and never fails on a timing.

* engine: evaluations/s of a typical rule (a Job's ``Complete`` well-known
  expression) in-process, the ceiling set by celpy's interpreter;
* evaluate_rules: manifest syncs/s (one well-known rule + one CEL rule with a
  message expression each) through the worker pool, sequentially and with 16
  in flight, including the JSON round trip to the worker (each sync a changed
  object), and of an unchanged object (whose outcomes the pool kept);
* cost limit: how long a runaway comprehension takes to reach OCM's per-call
  limit of 1,000,000 cost units;
* compile: expressions/s compiled (parse + compile-time checks), what a cold
  cache costs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from celpy.adapter import json_to_cel

from schemas.work_v1 import ConditionRule, ConditionRuleType
from tests.conditions.conftest import job_complete
from workagent.conditions.celcheck import RULE_VARIABLES
from workagent.conditions.celengine import CelEngine
from workagent.conditions.rules import ConditionRuleEvaluator
from workagent.conditions.wellknown import well_known_rule

ENGINE_EVALUATIONS = 2_000
SYNCS = 1_000
CONCURRENCY = 16
COMPILES = 300


def engine_bench() -> None:
    engine = CelEngine()
    obj = job_complete()
    rule = well_known_rule(obj, "Complete")
    assert rule is not None
    activation = {"object": json_to_cel(obj)}
    outcome = engine.evaluate_expressions(rule.expressions, activation)
    assert outcome.status == "True", outcome
    t0 = time.perf_counter()
    for _ in range(ENGINE_EVALUATIONS):
        engine.evaluate_expressions(rule.expressions, activation)
    seconds = time.perf_counter() - t0
    print(
        f"engine: {ENGINE_EVALUATIONS / seconds:,.0f} evaluations/s of the Job Complete rule "
        f"({seconds / ENGINE_EVALUATIONS * 1e3:.2f} ms each)"
    )

    t0 = time.perf_counter()
    for i in range(COMPILES):
        engine.compile(
            f"object.status.succeeded >= {i} && hasConditions(object.status)", RULE_VARIABLES
        )
    seconds = time.perf_counter() - t0
    print(
        f"compile: {COMPILES / seconds:,.0f} expressions/s ({seconds / COMPILES * 1e3:.1f} ms each)"
    )

    runaway = "object.items.all(x, object.items.all(y, x + y >= 0))"
    activation = {"object": json_to_cel({"items": list(range(2_000))})}
    t0 = time.perf_counter()
    outcome = engine.evaluate_expressions([runaway], activation)
    print(f"cost limit: {outcome.error!r} after {time.perf_counter() - t0:.2f} s")


async def rules_bench() -> None:
    rules = [
        ConditionRule(condition="Complete", type=ConditionRuleType.WELL_KNOWN_CONDITIONS),
        ConditionRule(
            condition="Succeeded",
            type=ConditionRuleType.CEL,
            cel_expressions=["object.status.succeeded >= object.spec.completions"],
            message_expression="'%d of %d'.format([object.status.succeeded, object.spec.completions])",
        ),
    ]
    obj: dict[str, Any] = job_complete()
    evaluator = ConditionRuleEvaluator()
    t0 = time.perf_counter()
    await evaluator.start()
    print(f"worker start: {time.perf_counter() - t0:.2f} s for {evaluator.pool.size} workers")
    try:
        first = await evaluator.evaluate_rules(rules, obj, generation=1)
        assert [c["status"] for c in first] == ["True", "True"], first

        t0 = time.perf_counter()
        for i in range(SYNCS):
            await evaluator.evaluate_rules(rules, changed(obj, i), generation=1)
        seconds = time.perf_counter() - t0
        print(
            f"evaluate_rules sequential: {SYNCS / seconds:,.0f} manifest syncs/s "
            f"({seconds / SYNCS * 1e3:.2f} ms each, 2 rules)"
        )

        sem = asyncio.Semaphore(CONCURRENCY)

        async def one(i: int) -> None:
            async with sem:
                await evaluator.evaluate_rules(rules, changed(obj, SYNCS + i), generation=1)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(SYNCS)))
        seconds = time.perf_counter() - t0
        print(
            f"evaluate_rules {CONCURRENCY} in flight: {SYNCS / seconds:,.0f} manifest syncs/s "
            f"({evaluator.pool.size} workers)"
        )

        t0 = time.perf_counter()
        for _ in range(SYNCS):
            await evaluator.evaluate_rules(rules, obj, generation=1)
        seconds = time.perf_counter() - t0
        print(
            f"evaluate_rules unchanged object: {SYNCS / seconds:,.0f} manifest syncs/s "
            f"({seconds / SYNCS * 1e3:.3f} ms each, outcomes kept)"
        )
    finally:
        await evaluator.aclose()


def changed(obj: dict[str, Any], version: int) -> dict[str, Any]:
    """``obj`` at another resourceVersion: a sync the pool has not seen."""
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(version)}}


def main() -> None:
    engine_bench()
    asyncio.run(rules_bench())


if __name__ == "__main__":
    main()
