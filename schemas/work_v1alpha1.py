"""``work.open-cluster-management.io/v1alpha1``: ManifestWorkReplicaSet."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from annotated_types import MinLen
from pydantic import Field, StrictInt, StrictStr

from schemas.base import PrinterColumn, ResourceInfo, WireModel
from schemas.cluster_v1alpha1 import RolloutStrategy
from schemas.markers import CRDRequired, Default
from schemas.meta import Conditions, KubeObject
from schemas.work_v1 import ManifestWorkSpec

__all__ = [
    "CascadeDeletionPolicy",
    "LocalPlacementReference",
    "ManifestWorkReplicaSet",
    "ManifestWorkReplicaSetSpec",
    "ManifestWorkReplicaSetStatus",
    "ManifestWorkReplicaSetSummary",
    "PlacementSummary",
]


class CascadeDeletionPolicy(StrEnum):
    """How generated ManifestWorks are deleted with their replica set."""

    BACKGROUND = "Background"
    FOREGROUND = "Foreground"


#: The server's default when a placement reference has no rolloutStrategy.
DEFAULT_ROLLOUT_STRATEGY = {"all": {"progressDeadline": "None"}, "type": "All"}


class LocalPlacementReference(WireModel):
    """A Placement in the replica set's namespace and how to roll out to it."""

    name: Annotated[StrictStr, MinLen(1)]
    """Name of the Placement."""
    rollout_strategy: Annotated[RolloutStrategy | None, Default(DEFAULT_ROLLOUT_STRATEGY)] = None
    """How to roll out to the selected clusters; All when absent."""


class ManifestWorkReplicaSetSpec(WireModel):
    """A ManifestWork template and the placements to deploy it to."""

    go_always = frozenset({"manifest_work_template"})

    manifest_work_template: ManifestWorkSpec = Field(default_factory=ManifestWorkSpec)
    """The spec of every generated ManifestWork."""
    placement_refs: Annotated[list[LocalPlacementReference], MinLen(1)]
    """The placements whose clusters get a ManifestWork."""
    cascade_deletion_policy: Annotated[
        CascadeDeletionPolicy, Default(CascadeDeletionPolicy.BACKGROUND), CRDRequired()
    ] = CascadeDeletionPolicy.BACKGROUND
    """Background or Foreground deletion of the generated ManifestWorks."""


class ManifestWorkReplicaSetSummary(WireModel):
    """Counts of generated ManifestWorks by state."""

    go_always = frozenset(
        {"total", "progressing", "available", "degraded", "applied", "desired_total", "updated"}
    )

    total: StrictInt = 0
    """ManifestWorks generated."""
    progressing: StrictInt = 0
    """ManifestWorks still progressing."""
    available: StrictInt = 0
    """ManifestWorks whose resources are available."""
    degraded: StrictInt = 0
    """ManifestWorks that are degraded."""
    applied: StrictInt = 0
    """ManifestWorks that are applied."""
    desired_total: StrictInt = 0
    """ManifestWorks wanted in total."""
    updated: StrictInt = 0
    """ManifestWorks at the current template."""


class PlacementSummary(WireModel):
    """Rollout progress for one placement."""

    go_always = frozenset({"name", "available_decision_groups", "summary"})

    name: StrictStr = ""
    """Name of the Placement."""
    available_decision_groups: StrictStr = ""
    """Decision groups reached, as ``<N> (<M> / <T> clusters applied)``."""
    summary: ManifestWorkReplicaSetSummary = Field(default_factory=ManifestWorkReplicaSetSummary)
    """Counts for this placement's ManifestWorks."""


class ManifestWorkReplicaSetStatus(WireModel):
    """The observed state of a replica set."""

    go_always = frozenset({"summary", "placement_summary"})

    conditions: Conditions | None = None
    """PlacementVerified, PlacementRolledOut and ManifestworkApplied."""
    summary: ManifestWorkReplicaSetSummary = Field(default_factory=ManifestWorkReplicaSetSummary)
    """Counts over all placements."""
    placement_summary: list[PlacementSummary] | None = None
    """Progress per placement."""


_CONDITION = '.status.conditions[?(@.type=="{}")].{}'


class ManifestWorkReplicaSet(KubeObject):
    """Deploys one ManifestWork template to every cluster selected by its placements."""

    api_resource = ResourceInfo(
        group="work.open-cluster-management.io",
        version="v1alpha1",
        kind="ManifestWorkReplicaSet",
        plural="manifestworkreplicasets",
        singular="manifestworkreplicaset",
        scope="Namespaced",
        short_names=("mwrs",),
        printer_columns=(
            PrinterColumn("Placement", _CONDITION.format("PlacementVerified", "reason")),
            PrinterColumn("Found", _CONDITION.format("PlacementVerified", "status")),
            PrinterColumn("ManifestWorks", _CONDITION.format("ManifestworkApplied", "reason")),
            PrinterColumn("Applied", _CONDITION.format("ManifestworkApplied", "status")),
        ),
    )

    spec: ManifestWorkReplicaSetSpec | None = None
    """The template and placements."""
    status: ManifestWorkReplicaSetStatus | None = None
    """Rollout progress."""
