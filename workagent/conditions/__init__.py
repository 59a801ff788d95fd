"""Condition rules: WellKnownConditions and CEL (spec/agent.md 13), and their aggregation.

Exported API:

* :func:`evaluate_rules` -- ``await evaluate_rules(rules, obj, generation=g)``:
  the manifest conditions (dicts with ``type``, ``status``, ``reason``,
  ``message``, ``observedGeneration``) of a manifest's ``conditionRules`` for
  its live object. Never raises for a user's rule or expression; every
  failure is a condition. Uses the running loop's :func:`default_evaluator`
  unless given ``evaluator=``.
* :class:`ConditionRuleEvaluator` -- the same with explicit settings
  (``budget`` seconds per manifest sync, ``workers``) and lifecycle
  (``start()``, ``aclose()``); :func:`close_default_evaluator` stops the
  default one.
* :func:`is_condition_type` -- whether a rule's ``condition`` can be written
  as a status condition type (rules whose condition cannot yield nothing).
* :func:`aggregate` -- the work-level ``ConditionRulesAggregated`` conditions
  (13.4), sorted by type; :func:`aggregate_available` -- the work-level
  ``Available`` condition (9, 13.4).
* Reasons and messages: :data:`REASON_EVALUATED`, :data:`REASON_INVALID`,
  :data:`REASON_EXPRESSION_ERROR`, :data:`REASON_INTERNAL_ERROR`,
  :data:`REASON_AGGREGATED`, :data:`RULE_REASON_PREFIX`,
  :data:`BUDGET_EXCEEDED_MESSAGE`.

CEL runs in worker processes (:mod:`workagent.conditions.pool` explains why),
which import only :mod:`~workagent.conditions.protocol`,
:mod:`~workagent.conditions.celengine` and their helpers. This package
therefore resolves its exports lazily, so that a worker does not pay for the
agent-side modules (structlog, pydantic models) at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from workagent.conditions.aggregate import aggregate, aggregate_available
    from workagent.conditions.reasons import (
        BUDGET_EXCEEDED_MESSAGE,
        REASON_AGGREGATED,
        REASON_EVALUATED,
        REASON_EXPRESSION_ERROR,
        REASON_INTERNAL_ERROR,
        REASON_INVALID,
        RULE_REASON_PREFIX,
    )
    from workagent.conditions.rules import (
        DEFAULT_BUDGET_SECONDS,
        ConditionRuleEvaluator,
        close_default_evaluator,
        default_evaluator,
        evaluate_rules,
        is_condition_type,
    )

__all__ = [
    "BUDGET_EXCEEDED_MESSAGE",
    "DEFAULT_BUDGET_SECONDS",
    "REASON_AGGREGATED",
    "REASON_EVALUATED",
    "REASON_EXPRESSION_ERROR",
    "REASON_INTERNAL_ERROR",
    "REASON_INVALID",
    "RULE_REASON_PREFIX",
    "ConditionRuleEvaluator",
    "aggregate",
    "aggregate_available",
    "close_default_evaluator",
    "default_evaluator",
    "evaluate_rules",
    "is_condition_type",
]

_HOMES: Final = {
    "aggregate": "aggregate",
    "aggregate_available": "aggregate",
    "BUDGET_EXCEEDED_MESSAGE": "reasons",
    "REASON_AGGREGATED": "reasons",
    "REASON_EVALUATED": "reasons",
    "REASON_EXPRESSION_ERROR": "reasons",
    "REASON_INTERNAL_ERROR": "reasons",
    "REASON_INVALID": "reasons",
    "RULE_REASON_PREFIX": "reasons",
    "DEFAULT_BUDGET_SECONDS": "rules",
    "ConditionRuleEvaluator": "rules",
    "close_default_evaluator": "rules",
    "default_evaluator": "rules",
    "evaluate_rules": "rules",
    "is_condition_type": "rules",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
