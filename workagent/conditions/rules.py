"""Manifest conditions from condition rules (spec/agent.md 13.1-13.3).

:meth:`ConditionRuleEvaluator.evaluate_rules` turns the ``conditionRules`` of a
manifest's config and the live object into manifest condition dicts
(``type``, ``status``, ``reason``, ``message``, ``observedGeneration``; the
caller adds ``lastTransitionTime`` with standard condition semantics):

* ``WellKnownConditions``: the built-in CEL for the object's exact GVK and the
  rule's condition (:mod:`workagent.conditions.wellknown`); none ⇒ no
  condition. A user ``message`` / ``messageExpression`` replaces the built-in
  one, exactly as OCM does it: a user ``message`` alone does not win over the
  built-in message expression (it yields a non-empty string).
* ``CEL``: the rule's own expressions and messages.
* any other type: ``Unknown`` / ``ConditionRuleInvalid`` /
  ``unrecognized condition rule type <type>``.
* a rule with an empty ``condition`` yields nothing (OCM drops such results);
  nor does one whose ``condition`` is no valid condition type (at most 316
  characters, an optionally prefixed qualified name): the CRD accepts any
  string there, but a status condition of that type would make the hub
  refuse the work's whole status, on every sync (OCM writes it and does so).

All CEL of one manifest runs in one request to a worker process
(:mod:`workagent.conditions.pool`), under OCM's cost limits and, as a
backstop, a wall-clock budget per rule (default :data:`DEFAULT_BUDGET_SECONDS`);
expressions that are too long, too deep, slow or otherwise broken become
conditions, never exceptions.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from schemas.meta import CONDITION_TYPE_PATTERN
from workagent.conditions.pool import DEFAULT_WORKERS, CelWorkerPool
from workagent.conditions.protocol import CelProgram, ExpressionsOutcome, ProgramOutcome
from workagent.conditions.reasons import (
    REASON_EVALUATED,
    REASON_INVALID,
    TRUE,
    UNKNOWN,
    cap_message,
)
from workagent.conditions.wellknown import well_known_rule

if TYPE_CHECKING:
    from schemas.work_v1 import ConditionRule

#: Wall-clock seconds each CEL rule of a manifest may take in one sync (the pool gives
#: the rules of a manifest three of them in all): a backstop, the cost limits
#: (:mod:`workagent.conditions.celcost`) come first; a run to the per-call limit takes
#: one to four seconds, depending on the expression.
DEFAULT_BUDGET_SECONDS: Final = 10.0

_WELL_KNOWN: Final = "WellKnownConditions"
_CEL: Final = "CEL"
#: metav1.Condition's limits on a type, which the CRD's status schema enforces.
MAX_CONDITION_TYPE_LENGTH: Final = 316
_CONDITION_TYPE: Final = re.compile(CONDITION_TYPE_PATTERN)


def is_condition_type(condition: str) -> bool:
    """Whether ``condition`` may be the type of a status condition."""
    return len(condition) <= MAX_CONDITION_TYPE_LENGTH and bool(
        _CONDITION_TYPE.fullmatch(condition)
    )


@dataclass(frozen=True)
class _Pending:
    """A rule waiting for its CEL program's outcome."""

    condition: str
    program: CelProgram
    message: str


class ConditionRuleEvaluator:
    """Evaluates condition rules; owns the CEL worker processes.

    Build one per agent (or use :func:`evaluate_rules`, which keeps one per
    event loop), ``await start()`` to start the workers ahead of the first
    sync (optional) and ``await aclose()`` at shutdown.
    """

    def __init__(
        self,
        *,
        budget: float = DEFAULT_BUDGET_SECONDS,
        workers: int = DEFAULT_WORKERS,
        pool: CelWorkerPool | None = None,
    ) -> None:
        if budget <= 0:
            raise ValueError("the CEL evaluation budget must be positive")
        self.budget = budget
        self.pool = pool if pool is not None else CelWorkerPool(size=workers)

    async def start(self) -> None:
        """Start the worker processes now rather than on the first evaluation."""
        await self.pool.start()

    async def aclose(self) -> None:
        """Stop the worker processes."""
        await self.pool.aclose()

    async def evaluate_rules(
        self,
        rules: Sequence[ConditionRule] | None,
        obj: Mapping[str, Any],
        *,
        generation: int,
    ) -> list[dict[str, Any]]:
        """The manifest conditions of ``rules`` for the live object ``obj``, in rule order."""
        if not rules:
            return []
        # Each entry is a finished condition or a rule waiting for its CEL.
        slots: list[dict[str, Any] | _Pending] = []
        for rule in rules:
            slot = _resolve(rule, obj)
            if slot is not None:
                slots.append(slot)
        pending = [s for s in slots if isinstance(s, _Pending) and _needs_cel(s.program)]
        outcomes = iter(
            await self.pool.evaluate(obj, [p.program for p in pending], budget=self.budget)
        )
        results: list[dict[str, Any]] = []
        for slot in slots:
            if isinstance(slot, dict):
                condition = slot
            else:
                outcome = next(outcomes) if _needs_cel(slot.program) else _TRIVIAL
                condition = _condition(slot, outcome)
            condition["observedGeneration"] = generation
            results.append(condition)
        return results


# A CEL rule without expressions or message expression is True with no evaluation.
_TRIVIAL: Final = ProgramOutcome(ExpressionsOutcome(TRUE, REASON_EVALUATED))


def _needs_cel(program: CelProgram) -> bool:
    return bool(program.expressions or program.message_expression)


def _resolve(rule: ConditionRule, obj: Mapping[str, Any]) -> dict[str, Any] | _Pending | None:
    """What a rule stands for: a finished condition, CEL to run, or nothing."""
    condition = rule.condition or ""
    if not condition or not is_condition_type(condition):
        return None
    rule_type = str(getattr(rule.type, "value", rule.type))
    if rule_type == _WELL_KNOWN:
        builtin = well_known_rule(obj, condition)
        if builtin is None:
            return None
        program = CelProgram(
            builtin.expressions, rule.message_expression or builtin.message_expression
        )
        return _Pending(condition, program, rule.message or "")
    if rule_type == _CEL:
        program = CelProgram(tuple(rule.cel_expressions or ()), rule.message_expression or "")
        return _Pending(condition, program, rule.message or "")
    return {
        "type": condition,
        "status": UNKNOWN,
        "reason": REASON_INVALID,
        "message": cap_message(f"unrecognized condition rule type {rule_type}"),
    }


def _condition(pending: _Pending, outcome: ProgramOutcome) -> dict[str, Any]:
    return {
        "type": pending.condition,
        "status": outcome.expressions.status,
        "reason": outcome.expressions.reason,
        "message": cap_message(_message(pending, outcome)),
    }


def _message(pending: _Pending, outcome: ProgramOutcome) -> str:
    """The expressions' error; else (spec 13.3) the message expression, the static
    message, the default."""
    if outcome.expressions.error is not None:
        return outcome.expressions.error
    if outcome.message is not None:
        if outcome.message.message:
            return outcome.message.message
        if outcome.message.error:
            return outcome.message.error
    if pending.message:
        return pending.message
    if outcome.expressions.status == TRUE:
        return f"Manifest is {pending.condition}"
    return f"Manifest is not {pending.condition}"


# One evaluator per event loop for the module-level helpers: its worker pipes
# belong to the loop that started them. A process-wide resource, like a
# metrics registry, hence the module-level registry.
_defaults: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ConditionRuleEvaluator] = (
    weakref.WeakKeyDictionary()
)


def default_evaluator() -> ConditionRuleEvaluator:
    """The evaluator :func:`evaluate_rules` uses on the running event loop."""
    loop = asyncio.get_running_loop()
    evaluator = _defaults.get(loop)
    if evaluator is None:
        evaluator = _defaults[loop] = ConditionRuleEvaluator()
    return evaluator


async def close_default_evaluator() -> None:
    """Stop the running loop's default evaluator's workers (at shutdown)."""
    evaluator = _defaults.pop(asyncio.get_running_loop(), None)
    if evaluator is not None:
        await evaluator.aclose()


async def evaluate_rules(
    rules: Sequence[ConditionRule] | None,
    obj: Mapping[str, Any],
    *,
    generation: int,
    evaluator: ConditionRuleEvaluator | None = None,
) -> list[dict[str, Any]]:
    """Manifest conditions from ``rules`` (see :meth:`ConditionRuleEvaluator.evaluate_rules`).

    Without ``evaluator``, the running loop's :func:`default_evaluator` is used.
    """
    chosen = evaluator if evaluator is not None else default_evaluator()
    return await chosen.evaluate_rules(rules, obj, generation=generation)
