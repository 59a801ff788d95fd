"""Work-level conditions aggregated from manifest conditions (spec/agent.md 13.4 and 9).

Both functions are pure: they read the manifest conditions of
``status.resourceStatus.manifests`` (plain dicts, in manifest order) and
return new work-level condition dicts without ``lastTransitionTime``; the
status controller merges them with standard condition semantics and then
prunes work conditions whose reason starts with ``ConditionRule`` and whose
``observedGeneration`` is stale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from workagent.conditions.reasons import (
    FALSE,
    REASON_AGGREGATED,
    RULE_REASON_PREFIX,
    TRUE,
    UNKNOWN,
)

AVAILABLE: Final = "Available"
PROGRESSING: Final = "Progressing"


@dataclass
class _Tally:
    """How many conditions of one type have each status, and their messages."""

    statuses: Counter[Any] = field(default_factory=Counter)
    messages: list[str] = field(default_factory=list)

    def add(self, condition: Mapping[str, Any]) -> None:
        self.statuses[condition.get("status")] += 1
        self.messages.append(str(condition.get("message") or ""))


def _rule_conditions(
    manifest_conditions: Sequence[Sequence[Mapping[str, Any]]],
) -> dict[str, _Tally]:
    tallies: dict[str, _Tally] = {}
    for conditions in manifest_conditions:
        for condition in conditions:
            ctype = condition.get("type")
            reason = condition.get("reason")
            # Available is aggregated on its own (aggregate_available), even
            # when a rule produced it.
            if not isinstance(ctype, str) or ctype == AVAILABLE:
                continue
            if not isinstance(reason, str) or not reason.startswith(RULE_REASON_PREFIX):
                continue
            tallies.setdefault(ctype, _Tally()).add(condition)
    return tallies


def aggregate(
    manifest_conditions: Sequence[Sequence[Mapping[str, Any]]], *, generation: int
) -> list[dict[str, Any]]:
    """The work-level condition of every rule-generated manifest condition type, sorted by type.

    ``Progressing`` is True when any manifest is progressing; every other type
    is True only when no manifest is False or Unknown (manifests without a
    rule for the type do not vote). The message is the manifest's own when a
    single manifest has the type, otherwise ``Aggregated from <n> manifest
    conditions``.
    """
    out: list[dict[str, Any]] = []
    for ctype, tally in sorted(_rule_conditions(manifest_conditions).items()):
        counts = tally.statuses
        if ctype == PROGRESSING:
            status = TRUE if counts[TRUE] else (UNKNOWN if counts[UNKNOWN] else FALSE)
        elif counts[FALSE]:
            status = FALSE
        elif counts[UNKNOWN] or not counts[TRUE]:
            status = UNKNOWN
        else:
            status = TRUE
        if len(tally.messages) == 1 and tally.messages[0]:
            message = tally.messages[0]
        else:
            message = f"Aggregated from {len(tally.messages)} manifest conditions"
        out.append(
            {
                "type": ctype,
                "status": status,
                "reason": REASON_AGGREGATED,
                "message": message,
                "observedGeneration": generation,
            }
        )
    return out


def aggregate_available(
    manifest_conditions: Sequence[Sequence[Mapping[str, Any]]], *, generation: int
) -> dict[str, Any]:
    """The work-level ``Available`` condition (always produced, even for no manifests).

    ``<total>`` in the messages is the number of manifest entries.
    """
    tally = _Tally()
    for conditions in manifest_conditions:
        for condition in conditions:
            if condition.get("type") == AVAILABLE:
                tally.add(condition)
    total = len(manifest_conditions)
    counts = tally.statuses
    if counts[FALSE]:
        status, reason = FALSE, "ResourcesNotAvailable"
        message = f"{counts[FALSE]} of {total} resources are not available"
    elif counts[UNKNOWN]:
        status, reason = UNKNOWN, "ResourcesStatusUnknown"
        message = f"{counts[UNKNOWN]} of {total} resources have unknown status"
    elif not counts[TRUE]:
        # The trailing space is OCM's: keep the wire text identical.
        status, reason, message = (
            UNKNOWN,
            "ResourcesStatusUnknown",
            "cannot get any available resource ",
        )
    else:
        status, reason, message = TRUE, "ResourcesAvailable", "All resources are available"
    return {
        "type": AVAILABLE,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
    }
