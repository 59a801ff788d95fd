"""``cluster.open-cluster-management.io/v1alpha1`` rollout strategy types.

These types are not served on their own; ManifestWorkReplicaSet embeds them
in ``spec.placementRefs[].rolloutStrategy``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import StrictStr

from schemas.base import WireModel
from schemas.markers import Default, GoDuration, IntOrString, Pattern
from schemas.meta import Int32

__all__ = [
    "MAX_FAILURES_PATTERN",
    "PROGRESS_DEADLINE_PATTERN",
    "MandatoryDecisionGroup",
    "RolloutAll",
    "RolloutConfig",
    "RolloutProgressive",
    "RolloutProgressivePerGroup",
    "RolloutStrategy",
    "RolloutType",
]

#: A count or a percentage (``0``-``100%``).
MAX_FAILURES_PATTERN = r"^((100|[0-9]{1,2})%|[0-9]+)$"
#: A number of hours, minutes or seconds, or ``None``. The alternation binds
#: loosely, so the API server accepts anything that starts with digits and a
#: unit or ends with ``None``; kept as is for compatibility.
PROGRESS_DEADLINE_PATTERN = r"^(([0-9])+[h|m|s])|None$"


class RolloutType(StrEnum):
    """How a rollout proceeds over the selected clusters."""

    ALL = "All"
    PROGRESSIVE = "Progressive"
    PROGRESSIVE_PER_GROUP = "ProgressivePerGroup"


class RolloutConfig(WireModel):
    """Timing and failure tolerance shared by every rollout type."""

    min_success_time: Annotated[StrictStr, GoDuration(), Default("0")] = "0"
    """How long a successful cluster must stay successful before the rollout moves on
    (a Go duration such as ``90s``)."""
    progress_deadline: Annotated[StrictStr, Pattern(PROGRESS_DEADLINE_PATTERN), Default("None")] = (
        "None"
    )
    """How long to wait for a cluster to succeed before counting it as failed, or None
    to wait forever."""
    max_failures: Annotated[int | str, IntOrString(MAX_FAILURES_PATTERN), Default(0)] = 0
    """Failed clusters tolerated before the rollout stops: a count or a percentage."""


class MandatoryDecisionGroup(WireModel):
    """A decision group that must be rolled out first; groupName wins over groupIndex."""

    group_name: StrictStr = ""
    """Name of the decision group."""
    group_index: Int32 = 0
    """Index of the decision group."""


class RolloutAll(RolloutConfig):
    """Roll out to every selected cluster at once."""


class RolloutProgressivePerGroup(RolloutConfig):
    """Roll out one decision group at a time."""

    mandatory_decision_groups: list[MandatoryDecisionGroup] | None = None
    """Groups that go first, in order."""


class RolloutProgressive(RolloutConfig):
    """Roll out to at most maxConcurrency clusters at a time."""

    mandatory_decision_groups: list[MandatoryDecisionGroup] | None = None
    """Groups that go first, in order."""
    max_concurrency: Annotated[int | str, IntOrString(MAX_FAILURES_PATTERN)] | None = None
    """Clusters updated at once: a count or a percentage; all when absent."""


class RolloutStrategy(WireModel):
    """How to roll a change out to the clusters a placement selects."""

    type: Annotated[RolloutType, Default(RolloutType.ALL)] = RolloutType.ALL
    """All, Progressive or ProgressivePerGroup."""
    all: RolloutAll | None = None
    """Settings when type is All."""
    progressive: RolloutProgressive | None = None
    """Settings when type is Progressive."""
    progressive_per_group: RolloutProgressivePerGroup | None = None
    """Settings when type is ProgressivePerGroup."""
