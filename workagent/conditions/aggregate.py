"""Work-level conditions aggregated from manifest conditions (spec/agent.md 13.4 and 9).

Both functions are pure: they read the manifest conditions of
``status.resourceStatus.manifests`` (plain dicts, in manifest order) and
return new work-level condition dicts without ``lastTransitionTime``; the
status controller merges them with standard condition semantics and then
prunes work conditions whose reason starts with ``ConditionRule`` and whose
``observedGeneration`` is stale.
"""

from __future__ import annotations

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
    true: int = 0
    false: int = 0
    unknown: int = 0
    messages: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.messages)

    def add(self, condition: Mapping[str, Any]) -> None:
        status = condition.get("status")
        if status == TRUE:
            self.true += 1
        elif status == FALSE:
            self.false += 1
        elif status == UNKNOWN:
            self.unknown += 1
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
        if ctype == PROGRESSING:
            status = TRUE if tally.true else (UNKNOWN if tally.unknown else FALSE)
        elif tally.false:
            status = FALSE
        elif tally.unknown or not tally.true:
            status = UNKNOWN
        else:
            status = TRUE
        if tally.total == 1 and tally.messages[0]:
            message = tally.messages[0]
        else:
            message = f"Aggregated from {tally.total} manifest conditions"
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
    if tally.false:
        status, reason = FALSE, "ResourcesNotAvailable"
        message = f"{tally.false} of {total} resources are not available"
    elif tally.unknown:
        status, reason = UNKNOWN, "ResourcesStatusUnknown"
        message = f"{tally.unknown} of {total} resources have unknown status"
    elif not tally.true:
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
