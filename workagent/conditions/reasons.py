"""Wire constants of condition rules: reasons, statuses and fixed messages (spec/agent.md 13).

Every reason a rule produces starts with ``ConditionRule``: that prefix is how
the status controller recognises (and prunes) rule-generated conditions.
"""

from __future__ import annotations

from typing import Final

#: The expressions ran; the status is their result.
REASON_EVALUATED: Final = "ConditionRuleEvaluated"
#: The rule's type is not one this agent knows.
REASON_INVALID: Final = "ConditionRuleInvalid"
#: An expression did not compile, failed at run time, returned a non-bool or ran out of budget.
REASON_EXPRESSION_ERROR: Final = "ConditionRuleExpressionError"
#: Something the user cannot fix went wrong (the evaluator itself failed).
REASON_INTERNAL_ERROR: Final = "ConditionRuleInternalError"
#: The reason of every work-level condition aggregated from rule conditions.
REASON_AGGREGATED: Final = "ConditionRulesAggregated"
#: What every rule-generated reason starts with.
RULE_REASON_PREFIX: Final = "ConditionRule"

TRUE: Final = "True"
FALSE: Final = "False"
UNKNOWN: Final = "Unknown"

#: The message of a rule that exceeded the per-manifest evaluation budget.
BUDGET_EXCEEDED_MESSAGE: Final = "CEL evaluation budget exceeded"
#: cel-go's error when one run goes past its cost limit.
LIMIT_MESSAGE: Final = "operation cancelled: actual cost limit exceeded"
#: Kubernetes' per-call CEL cost limit (``k8s.io/apiserver/pkg/apis/cel.PerCallLimit``).
PER_CALL_LIMIT: Final = 1_000_000
#: Kubernetes' runtime budget (``RuntimeCELCostBudget``), shared by one manifest's rules.
BUDGET: Final = 10_000_000

#: metav1.Condition's ``message`` maxLength: a longer message makes the hub
#: reject the whole status patch, so rule messages are cut to this many characters.
MAX_MESSAGE_CHARS: Final = 32768


def cap_message(text: str) -> str:
    """``text`` cut to :data:`MAX_MESSAGE_CHARS` characters."""
    return text[:MAX_MESSAGE_CHARS]
