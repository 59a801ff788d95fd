"""The status a ManifestWorkReplicaSet reconcile builds (spec/hub.md sections 2.3 and 2.6).

:class:`StatusDraft` starts from the cached status and collects the changes
of one reconcile: conditions (standard semantics: ``lastTransitionTime``
moves only when the status does), the summary and the placement summaries.
The controller then patches what differs, once.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

from hubcontroller.controllers.replicaset_cache import Template, WorkJudgements
from hubcontroller.controllers.replicaset_works import is_deleting, meta
from ocmkit.kube.mergepatch import normalized
from schemas.meta import format_time
from schemas.wire import (
    CONDITION_APPLIED,
    CONDITION_AVAILABLE,
    CONDITION_DEGRADED,
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_VERIFIED,
    CONDITION_PROGRESSING,
    PLACEMENT_NAME_LABEL,
    REASON_AS_EXPECTED,
    REASON_NOT_AS_EXPECTED,
    REASON_PLACEMENT_DECISION_EMPTY,
    REASON_PROCESSING,
)
from schemas.work_v1alpha1 import ManifestWorkReplicaSetSummary, PlacementSummary


@dataclass(slots=True)
class Counts:
    """Work counts of one placement, or of the whole replica set.

    The fields are the summary's counted fields, under their wire names.
    """

    total: int = 0
    applied: int = 0
    available: int = 0
    progressing: int = 0
    degraded: int = 0

    def add(self, other: Counts) -> None:
        """Add ``other``'s counts to these."""
        for name in _COUNTED:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_wire(self) -> dict[str, Any]:
        """The ManifestWorkReplicaSetSummary (every field written, as OCM does)."""
        return ManifestWorkReplicaSetSummary(**asdict(self)).to_wire()


#: The summary fields a reconcile computes.
_COUNTED = tuple(field.name for field in fields(Counts))


@dataclass
class PlacementProgress:
    """One entry of ``status.placementSummary`` while it is being built."""

    name: str
    available_decision_groups: str
    counts: Counts

    def to_wire(self) -> dict[str, Any]:
        """The PlacementSummary."""
        summary = PlacementSummary(
            name=self.name, available_decision_groups=self.available_decision_groups
        ).to_wire()
        summary["summary"] = self.counts.to_wire()
        return summary


class StatusDraft:
    """The replica set's status as this reconcile leaves it."""

    def __init__(self, replica_set: Mapping[str, Any], now: datetime) -> None:
        old = replica_set.get("status")
        self.old: dict[str, Any] = copy.deepcopy(dict(old)) if isinstance(old, Mapping) else {}
        self.now = now
        self.generation = meta(replica_set).get("generation")
        self.conditions: list[dict[str, Any]] = [
            dict(c) for c in self.old.get("conditions") or [] if isinstance(c, Mapping)
        ]
        self.summary: dict[str, Any] = dict(self.old.get("summary") or {}) or Counts().to_wire()
        placement_summary = self.old.get("placementSummary")
        self.placement_summary: list[dict[str, Any]] | None = (
            copy.deepcopy(placement_summary) if isinstance(placement_summary, list) else None
        )

    # -- conditions --------------------------------------------------------------------
    def condition(self, condition_type: str) -> dict[str, Any] | None:
        """The condition of this type, if set."""
        for cond in self.conditions:
            if cond.get("type") == condition_type:
                return cond
        return None

    def set_condition(
        self, condition_type: str, status: bool, reason: str, message: str = ""
    ) -> None:
        """Set a condition; its transition time only changes when its status does."""
        value = "True" if status else "False"
        new: dict[str, Any] = {
            "type": condition_type,
            "status": value,
            "reason": reason,
            "message": message,
            # metav1.Time: whole seconds on the wire.
            "lastTransitionTime": format_time(self.now.replace(microsecond=0)),
        }
        if isinstance(self.generation, int):
            new["observedGeneration"] = self.generation
        for i, cond in enumerate(self.conditions):
            if cond.get("type") == condition_type:
                if cond.get("status") == value and cond.get("lastTransitionTime"):
                    new["lastTransitionTime"] = cond["lastTransitionTime"]
                self.conditions[i] = new
                return
        self.conditions.append(new)

    # -- summaries ---------------------------------------------------------------------
    def set_summary(self, counts: Counts) -> None:
        """Set the counts of ``status.summary``; fields we do not count keep their values.

        OCM sets the counted fields one by one, so ``desiredTotal`` and
        ``updated`` (which it never computes either) stay as someone wrote them.
        """
        kept = {k: v for k, v in self.summary.items() if k not in _COUNTED}
        self.summary = {**counts.to_wire(), **kept}

    def set_placement_summary(self, entries: list[PlacementProgress]) -> None:
        """Replace ``status.placementSummary`` (null when empty, as Go writes a nil slice)."""
        self.placement_summary = [e.to_wire() for e in entries] or None

    # -- output ------------------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        """The new status object (unknown fields of the old one kept)."""
        out = copy.deepcopy(self.old)
        out["conditions"] = self.conditions or None
        out["summary"] = self.summary
        out["placementSummary"] = self.placement_summary
        return {k: v for k, v in out.items() if v is not None}

    def changed(self) -> bool:
        """Whether the new status differs from the cached one."""
        return bool(normalized(self.old) != normalized(self.to_wire()))


def summarize(
    draft: StatusDraft,
    placements: Sequence[PlacementProgress],
    works: Iterable[Mapping[str, Any]],
    judge: WorkJudgements,
    template: Template,
) -> None:
    """The status step (spec/hub.md 2.6): work counts and ``ManifestworkApplied``.

    Counts cover each placement's works that are not being deleted and match
    the template; a condition counts when its status is True, whatever
    generation it observed.
    """
    total = Counts()
    by_placement: dict[str, list[Mapping[str, Any]]] = {}
    for work in works:
        placement = (meta(work).get("labels") or {}).get(PLACEMENT_NAME_LABEL)
        if isinstance(placement, str):
            by_placement.setdefault(placement, []).append(work)
    for entry in placements:
        counts = entry.counts
        for work in by_placement.get(entry.name, ()):
            if is_deleting(work) or not judge.matches(work, template):
                continue
            true = judge.true_conditions(work)
            counts.applied += CONDITION_APPLIED in true
            counts.progressing += CONDITION_PROGRESSING in true
            counts.available += CONDITION_AVAILABLE in true
            counts.degraded += CONDITION_DEGRADED in true
        total.add(counts)
    draft.set_placement_summary(list(placements))
    if total.total == 0:
        # Nothing deployed: every count is zero, whatever the works say.
        draft.set_summary(Counts())
        verified = draft.condition(CONDITION_PLACEMENT_VERIFIED) or {}
        empty = verified.get("reason") == REASON_PLACEMENT_DECISION_EMPTY
        draft.set_condition(
            CONDITION_MANIFESTWORK_APPLIED,
            False,
            REASON_PLACEMENT_DECISION_EMPTY if empty else REASON_NOT_AS_EXPECTED,
            str(verified.get("message", "")) if empty else "",
        )
        return
    draft.set_summary(total)
    if total.available == total.total and total.progressing == 0 and total.degraded == 0:
        draft.set_condition(CONDITION_MANIFESTWORK_APPLIED, True, REASON_AS_EXPECTED)
    elif total.progressing > 0 and total.degraded == 0:
        draft.set_condition(CONDITION_MANIFESTWORK_APPLIED, False, REASON_PROCESSING)
    else:
        draft.set_condition(CONDITION_MANIFESTWORK_APPLIED, False, REASON_NOT_AS_EXPECTED)


def report_write_failures(draft: StatusDraft, failures: Sequence[tuple[str, str]]) -> None:
    """Put ManifestWork writes the API server refused into ``ManifestworkApplied``.

    ``failures`` are (cluster, description) pairs. **Deviation.** OCM only
    logs them and retries; the user then sees a replica set that never
    progresses. Here the condition turns False/NotAsExpected and says what was
    refused (the first few, by cluster). The order must not depend on which
    write finished first: a message that changed on every retry would be a
    status write, whose event starts the next reconcile at once, and each of
    those failures would lengthen the retry backoff.
    """
    ordered = [text for _, text in sorted(failures)]
    shown = "; ".join(ordered[:3])
    more = f"; and {len(failures) - 3} more" if len(failures) > 3 else ""
    draft.set_condition(
        CONDITION_MANIFESTWORK_APPLIED,
        False,
        REASON_NOT_AS_EXPECTED,
        f"the API server refused {len(failures)} ManifestWork write(s): {shown}{more}",
    )
