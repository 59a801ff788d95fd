"""Safety of user expressions: budgets, runaway evaluations, broken workers, limits.

Timing assertions are deliberately generous (a slow CI machine must pass):
the point is "seconds, not minutes" and "the loop keeps ticking".
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from prometheus_client import REGISTRY

from tests.conditions.conftest import cel
from tests.support.loop_lag import LoopLag
from workagent.conditions.pool import CPU_LIMIT_SECONDS, CelWorkerPool
from workagent.conditions.rules import ConditionRuleEvaluator

T = TypeVar("T")

# 200**3 = 8 million comprehension steps: minutes for celpy.
RUNAWAY = "object.items.all(a, object.items.all(b, object.items.all(c, a + b + c >= 0)))"
CHEAP = "object.kind == 'ConfigMap'"
OBJ: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "big", "namespace": "default"},
    "items": list(range(200)),
}
BUDGET_CONDITION = {
    "type": "Complete",
    "status": "False",
    "reason": "ConditionRuleExpressionError",
    "message": "CEL evaluation budget exceeded",
    "observedGeneration": 1,
}
OK_CONDITION = {
    "type": "Complete",
    "status": "True",
    "reason": "ConditionRuleEvaluated",
    "message": "Manifest is Complete",
    "observedGeneration": 1,
}


#: A cost limit no test expression reaches: these tests are about the wall-clock
#: budget, the backstop behind the cost limits (tests/conditions/test_celcost.py).
NO_COST_LIMIT = 2**62


@pytest.fixture
async def evaluator() -> AsyncIterator[ConditionRuleEvaluator]:
    pool = CelWorkerPool(size=2, cost_limit=NO_COST_LIMIT)
    evaluator = ConditionRuleEvaluator(budget=1.0, pool=pool)
    await evaluator.start()
    try:
        yield evaluator
    finally:
        await evaluator.aclose()


async def timed(work: Awaitable[T]) -> tuple[T, float]:
    loop = asyncio.get_running_loop()
    start = loop.time()
    result = await work
    return result, loop.time() - start


def worker_processes() -> list[int]:
    """Live CEL worker processes that are children of this test process (Linux)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == os.getpid() and state != "Z" and b"workagent.conditions.worker" in cmdline:
            found.append(int(entry.name))
    return sorted(found)


linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


# --------------------------------------------------------------------------
# Runaway expressions
# --------------------------------------------------------------------------


def restarts(reason: str) -> float:
    """``work_agent_condition_rule_worker_restarts_total{reason}`` as scraped."""
    value = REGISTRY.get_sample_value(
        "work_agent_condition_rule_worker_restarts_total", {"reason": reason}
    )
    assert value is not None, "the series exists from the start"
    return value


async def test_runaway_is_cut_at_the_budget_while_others_proceed(
    evaluator: ConditionRuleEvaluator,
) -> None:
    budget_restarts = restarts("budget")
    with LoopLag(period=0.01) as ticker:
        runaway = asyncio.create_task(
            timed(evaluator.evaluate_rules([cel("Complete", RUNAWAY)], OBJ, generation=1))
        )
        # The runaway now holds one worker.
        await asyncio.sleep(0.1)  # sleep-ok: lets the runaway start
        cheap, cheap_seconds = await timed(
            evaluator.evaluate_rules([cel("Complete", CHEAP)], OBJ, generation=1)
        )
        result, runaway_seconds = await runaway
    assert result == [BUDGET_CONDITION]
    assert 0.9 <= runaway_seconds < 2.5
    assert cheap == [OK_CONDITION]
    # Milliseconds on an idle machine; it never waits for the runaway's budget.
    assert cheap_seconds < 0.8
    assert ticker.worst < 0.25
    # The worker stopped the rule itself: it is kept, nothing was killed.
    assert evaluator.pool.kills == 0
    assert restarts("budget") == budget_restarts
    # Evaluations go on (other objects: one seen before would be answered from
    # the pool's memory).
    for version in range(3):
        changed = {**OBJ, "metadata": {**OBJ["metadata"], "resourceVersion": str(version)}}
        assert await evaluator.evaluate_rules([cel("Complete", CHEAP)], changed, generation=1) == [
            OK_CONDITION
        ]


async def test_a_rule_cut_by_the_clock_is_evaluated_again(
    evaluator: ConditionRuleEvaluator,
) -> None:
    # The wall-clock budget can be the machine's load, not the rule: such an outcome
    # must not answer every later sync of the unchanged object.
    rules = [cel("Complete", RUNAWAY)]
    assert await evaluator.evaluate_rules(rules, OBJ, generation=1) == [BUDGET_CONDITION]
    # With its workers stopped, only a kept outcome could answer the same request.
    await evaluator.pool.aclose()
    [again] = await evaluator.evaluate_rules(rules, OBJ, generation=1)
    assert (again["status"], again["reason"]) == ("Unknown", "ConditionRuleInternalError")


async def test_two_runaways_do_not_starve_later_evaluations(
    evaluator: ConditionRuleEvaluator,
) -> None:
    runaways = [
        asyncio.create_task(evaluator.evaluate_rules([cel("Complete", RUNAWAY)], OBJ, generation=1))
        for _ in range(2)
    ]
    await asyncio.sleep(0.1)  # sleep-ok: lets the runaways occupy the workers
    # Both workers are stuck: this one waits for a freed worker (the budget),
    # then for a replacement to start (~0.5 s, more on a loaded machine).
    cheap, seconds = await timed(
        evaluator.evaluate_rules([cel("Complete", CHEAP)], OBJ, generation=1)
    )
    assert cheap == [OK_CONDITION]
    assert seconds < 5.0
    assert [await r for r in runaways] == [[BUDGET_CONDITION], [BUDGET_CONDITION]]


async def test_a_slow_rule_costs_only_its_own_outcome(
    evaluator: ConditionRuleEvaluator,
) -> None:
    """Each rule has the budget: the rules after a runaway are evaluated (as in OCM,
    where a run cut at the cost limit leaves the others alone)."""
    rules = [
        cel("Before", CHEAP),
        cel("Runaway", RUNAWAY),
        cel("After", CHEAP),
        cel("Again", RUNAWAY),
        cel("Last", CHEAP),
    ]
    conditions, seconds = await timed(evaluator.evaluate_rules(rules, OBJ, generation=1))
    assert seconds < 4.0
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
        ("Before", "True", "ConditionRuleEvaluated", "Manifest is Before"),
        ("Runaway", "False", "ConditionRuleExpressionError", "CEL evaluation budget exceeded"),
        ("After", "True", "ConditionRuleEvaluated", "Manifest is After"),
        ("Again", "False", "ConditionRuleExpressionError", "CEL evaluation budget exceeded"),
        ("Last", "True", "ConditionRuleEvaluated", "Manifest is Last"),
    ]
    assert evaluator.pool.kills == 0


@linux_only
async def test_a_worker_that_does_not_answer_is_killed_at_the_backstop() -> None:
    """What the worker cannot stop itself (here: a stopped process) is killed one budget
    after the rule's time; the unfinished rules get the budget outcome."""
    evaluator = ConditionRuleEvaluator(budget=0.5, pool=CelWorkerPool(size=1))
    await evaluator.start()
    try:
        (stuck,) = evaluator.pool.worker_pids
        budget_restarts = restarts("budget")
        os.kill(stuck, signal.SIGSTOP)
        rules = [cel("Complete", CHEAP), cel("Other", CHEAP)]
        conditions, seconds = await timed(evaluator.evaluate_rules(rules, OBJ, generation=1))
        assert [c["message"] for c in conditions] == ["CEL evaluation budget exceeded"] * 2
        assert 0.9 <= seconds < 3.0
        assert evaluator.pool.kills == 1
        assert restarts("budget") == budget_restarts + 1
        changed = {**OBJ, "metadata": {**OBJ["metadata"], "resourceVersion": "1"}}
        assert await evaluator.evaluate_rules([cel("Complete", CHEAP)], changed, generation=1) == [
            OK_CONDITION
        ]
        assert stuck not in evaluator.pool.worker_pids
    finally:
        await evaluator.aclose()


async def test_runaway_message_expression_keeps_the_status(
    evaluator: ConditionRuleEvaluator,
) -> None:
    rule = cel("Complete", CHEAP, message_expression=f"{RUNAWAY} ? 'done' : 'not done'")
    conditions, seconds = await timed(evaluator.evaluate_rules([rule], OBJ, generation=1))
    assert seconds < 2.0
    assert conditions == [
        {**OK_CONDITION, "message": "CEL evaluation budget exceeded"},
    ]


@linux_only
async def test_cancelled_caller_kills_its_worker(evaluator: ConditionRuleEvaluator) -> None:
    before = set(evaluator.pool.worker_pids)
    task = asyncio.create_task(
        evaluator.evaluate_rules([cel("Complete", RUNAWAY)], OBJ, generation=1)
    )
    await asyncio.sleep(0.2)  # sleep-ok: lets the runaway start
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await evaluator.evaluate_rules([cel("Complete", CHEAP)], OBJ, generation=1) == [
        OK_CONDITION
    ]
    # One of the original workers is gone for good; no runaway keeps burning CPU.
    await asyncio.sleep(0.5)  # sleep-ok: a killed worker must have had time to burn CPU
    alive = set(worker_processes())
    assert len(before - alive) == 1
    assert len(alive) <= evaluator.pool.size


# --------------------------------------------------------------------------
# Too long, too deep
# --------------------------------------------------------------------------


async def test_too_long_and_too_deep_expressions_are_conditions(
    evaluator: ConditionRuleEvaluator,
) -> None:
    too_long = "true && " * 1000 + "true"
    too_deep = "(" * 100 + "true" + ")" * 100
    conditions = await evaluator.evaluate_rules(
        [cel("Long", too_long), cel("Deep", too_deep)], OBJ, generation=1
    )
    assert conditions[0]["status"] == "False"
    assert conditions[0]["reason"] == "ConditionRuleExpressionError"
    assert conditions[0]["message"] == (
        f"ERROR: <input>:-1:0: expression code point size exceeds limit: size: {len(too_long)}, "
        "limit 4096"
    )
    assert conditions[1]["reason"] == "ConditionRuleExpressionError"
    assert "expression recursion limit exceeded" in conditions[1]["message"]


# --------------------------------------------------------------------------
# Broken workers
# --------------------------------------------------------------------------


def fake_python(tmp_path: Path, body: str) -> str:
    """A stand-in for the worker's interpreter: a shell script ignoring its arguments."""
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


async def evaluate_with(pool: CelWorkerPool) -> list[dict[str, Any]]:
    evaluator = ConditionRuleEvaluator(pool=pool)
    try:
        return await evaluator.evaluate_rules(
            [cel("Complete", CHEAP), cel("Other", CHEAP)], OBJ, generation=1
        )
    finally:
        await evaluator.aclose()


def internal(message: str) -> dict[str, Any]:
    return {
        "status": "Unknown",
        "reason": "ConditionRuleInternalError",
        "message": message,
    }


def without_type(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: c[k] for k in ("status", "reason", "message")} for c in conditions]


async def test_worker_that_cannot_start(tmp_path: Path) -> None:
    pool = CelWorkerPool(python=str(tmp_path / "no-such-python"))
    conditions = await evaluate_with(pool)
    assert [c["status"] for c in conditions] == ["Unknown", "Unknown"]
    assert all(c["reason"] == "ConditionRuleInternalError" for c in conditions)
    assert conditions[0]["message"].startswith("CEL evaluator unavailable: ")


async def test_worker_that_never_gets_ready(tmp_path: Path) -> None:
    pool = CelWorkerPool(python=fake_python(tmp_path, "exec sleep 30\n"), spawn_timeout=0.5)
    conditions, seconds = await timed(evaluate_with(pool))
    assert seconds < 3.0
    assert (
        without_type(conditions)
        == [internal("CEL evaluator unavailable: worker did not start in time")] * 2
    )


async def test_worker_that_dies_mid_request(tmp_path: Path) -> None:
    body = "echo '{\"ready\": true}'\nread line\nexit 3\n"
    pool = CelWorkerPool(python=fake_python(tmp_path, body))
    failures = restarts("failure")
    assert (
        without_type(await evaluate_with(pool))
        == [internal("CEL evaluator exited unexpectedly")] * 2
    )
    assert restarts("failure") == failures + 1


async def test_worker_that_answers_nonsense(tmp_path: Path) -> None:
    body = "echo '{\"ready\": true}'\nread line\necho 'nonsense'\nexec sleep 30\n"
    pool = CelWorkerPool(python=fake_python(tmp_path, body))
    conditions = await evaluate_with(pool)
    assert conditions[0]["reason"] == "ConditionRuleInternalError"
    assert conditions[0]["message"].startswith("unreadable worker answer")


async def test_worker_that_answers_out_of_order(tmp_path: Path) -> None:
    body = (
        "echo '{\"ready\": true}'\nread line\n"
        'echo \'{"p": 1, "status": "True", "reason": "ConditionRuleEvaluated", "error": null}\'\n'
        "exec sleep 30\n"
    )
    pool = CelWorkerPool(python=fake_python(tmp_path, body))
    conditions = await evaluate_with(pool)
    assert (
        without_type(conditions)
        == [internal("worker answered out of order (expected program 0)")] * 2
    )


@linux_only
async def test_dead_idle_worker_is_replaced(evaluator: ConditionRuleEvaluator) -> None:
    for pid in evaluator.pool.worker_pids:
        os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.3)  # sleep-ok: let the kills land; the result must not depend on it
    assert await evaluator.evaluate_rules([cel("Complete", CHEAP)], OBJ, generation=1) == [
        OK_CONDITION
    ]


# --------------------------------------------------------------------------
# Process limits and isolation
# --------------------------------------------------------------------------


@linux_only
async def test_worker_runs_under_kernel_limits(evaluator: ConditionRuleEvaluator) -> None:
    # One request per worker arms the CPU limit in both.
    await asyncio.gather(
        *(evaluator.evaluate_rules([cel("Complete", CHEAP)], OBJ, generation=1) for _ in range(4))
    )
    for pid in evaluator.pool.worker_pids:
        limits = {
            line[:26].strip(): line[26:].split()
            for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]
        }
        address_space = limits["Max address space"][0]
        assert address_space != "unlimited" and int(address_space) <= 1024 * 1024 * 1024
        cpu = limits["Max cpu time"][0]
        # What the worker used so far (seconds), plus the per-request allowance.
        assert cpu != "unlimited" and CPU_LIMIT_SECONDS <= int(cpu) <= CPU_LIMIT_SECONDS + 30


def test_worker_and_agent_sides_import_only_what_they_need() -> None:
    root = str(Path(__file__).resolve().parents[2])
    worker_side = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, workagent.conditions.worker;"
            "print(sorted(m for m in ('pydantic', 'structlog', 'schemas', 'asyncio')"
            " if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    assert worker_side.stdout.strip() == "[]"
    agent_side = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, workagent.conditions.rules, workagent.conditions.aggregate;"
            "print('celpy' in sys.modules, sys.getrecursionlimit())",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    assert agent_side.stdout.split() == ["False", "1000"]
