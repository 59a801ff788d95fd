"""``cluster.open-cluster-management.io/v1beta1``: Placement and PlacementDecision.

The hub work controller reads only a few of these fields (metadata,
``status.numberOfSelectedClusters``, ``status.decisionGroups`` and the
decisions); the rest is modelled so the generated CRDs match upstream.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from annotated_types import Ge, Le, MaxLen
from pydantic import StrictStr

from schemas.base import PrinterColumn, ResourceInfo, WireModel
from schemas.cluster_v1 import TaintEffect
from schemas.markers import AtomicList, AtomicMap, CRDRequired, Default, IntOrString, Pattern
from schemas.meta import CONDITION_TYPE_PATTERN, Conditions, Int32, Int64, KubeObject, Time

__all__ = [
    "AddOnScore",
    "CelSelector",
    "ClusterClaimSelector",
    "ClusterDecision",
    "ClusterPredicate",
    "ClusterSelector",
    "DecisionGroup",
    "DecisionGroupStatus",
    "DecisionStrategy",
    "GroupClusterSelector",
    "GroupStrategy",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Placement",
    "PlacementDecision",
    "PlacementDecisionStatus",
    "PlacementSpec",
    "PlacementStatus",
    "PrioritizerConfig",
    "PrioritizerPolicy",
    "ScoreCoordinate",
    "ScoreCoordinateType",
    "SortBy",
    "SpreadConstraintsTerm",
    "SpreadPolicy",
    "Toleration",
    "TopologyKeyType",
    "UnsatisfiableMaxSkewPolicy",
]

GROUP = "cluster.open-cluster-management.io"
VERSION = "v1beta1"

_GROUP_NAME_PATTERN = r"^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$"
_CLUSTERS_PER_GROUP_PATTERN = r"^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$"
# Unlike condition types, the name part here is not grouped; same language.
_TOPOLOGY_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)


class ScoreCoordinateType(StrEnum):
    """Where a prioritizer score comes from."""

    BUILT_IN = "BuiltIn"
    ADD_ON = "AddOn"


class TopologyKeyType(StrEnum):
    """Whether a spread topology key names a label or a claim."""

    LABEL = "Label"
    CLAIM = "Claim"


class UnsatisfiableMaxSkewPolicy(StrEnum):
    """What to do when a spread constraint cannot be met."""

    DO_NOT_SCHEDULE = "DoNotSchedule"
    SCHEDULE_ANYWAY = "ScheduleAnyway"


class SortBy(StrEnum):
    """How selected clusters are ordered."""

    CLUSTER_NAME = "ClusterName"
    SCORE = "Score"


class LabelSelectorRequirement(WireModel):
    """A key, an operator and values to match (labels or claims)."""

    key: StrictStr
    """The label or claim key."""
    operator: StrictStr
    """In, NotIn, Exists or DoesNotExist."""
    values: Annotated[list[StrictStr], AtomicList()] | None = None
    """Values for In and NotIn."""


class LabelSelector(WireModel):
    """Selects by labels (``metav1.LabelSelector``)."""

    match_labels: dict[str, StrictStr] | None = None
    """Labels that must all be present with these values."""
    match_expressions: Annotated[list[LabelSelectorRequirement], AtomicList()] | None = None
    """Requirements that must all hold."""


class ClusterClaimSelector(WireModel):
    """Selects clusters by their claims."""

    match_expressions: list[LabelSelectorRequirement] | None = None
    """Requirements that must all hold."""


class CelSelector(WireModel):
    """Selects clusters with CEL expressions."""

    cel_expressions: list[StrictStr] | None = None
    """Expressions that must all be true."""


class GroupClusterSelector(WireModel):
    """Selects the clusters of a decision group."""

    label_selector: Annotated[LabelSelector | None, AtomicMap()] = None
    """Select by cluster labels."""
    claim_selector: ClusterClaimSelector | None = None
    """Select by cluster claims."""


class ClusterSelector(GroupClusterSelector):
    """Selects clusters by labels, claims or CEL expressions."""

    cel_selector: CelSelector | None = None
    """Select by CEL expressions."""


class ClusterPredicate(WireModel):
    """A condition clusters must meet to be selected."""

    required_cluster_selector: ClusterSelector | None = None
    """The selector clusters must match."""


class AddOnScore(WireModel):
    """A score published by an add-on."""

    resource_name: StrictStr
    """The AddOnPlacementScore resource."""
    score_name: StrictStr
    """The score within that resource."""


class ScoreCoordinate(WireModel):
    """Names a prioritizer."""

    type: Annotated[ScoreCoordinateType, Default(ScoreCoordinateType.BUILT_IN), CRDRequired()] = (
        ScoreCoordinateType.BUILT_IN
    )
    """BuiltIn or AddOn."""
    built_in: StrictStr = ""
    """Name of a built-in prioritizer."""
    add_on: AddOnScore | None = None
    """The add-on score, when type is AddOn."""


class PrioritizerConfig(WireModel):
    """One prioritizer and its weight."""

    score_coordinate: ScoreCoordinate
    """The prioritizer."""
    weight: Annotated[Int32, Ge(-10), Le(10), Default(1)] = 1
    """Weight of its score, from -10 to 10."""


class PrioritizerPolicy(WireModel):
    """How clusters are scored."""

    mode: Annotated[StrictStr, Default("Additive")] = "Additive"
    """Additive or Exact."""
    configurations: list[PrioritizerConfig] | None = None
    """Prioritizers and weights."""


class SpreadConstraintsTerm(WireModel):
    """Spread selected clusters over the values of a topology key."""

    topology_key: Annotated[StrictStr, MaxLen(316), Pattern(_TOPOLOGY_KEY_PATTERN)]
    """Label or claim key that defines the topology."""
    topology_key_type: TopologyKeyType
    """Label or Claim."""
    max_skew: Annotated[Int32, Ge(1), Default(1)] = 1
    """Largest allowed difference in cluster count between topology values."""
    when_unsatisfiable: Annotated[
        UnsatisfiableMaxSkewPolicy, Default(UnsatisfiableMaxSkewPolicy.SCHEDULE_ANYWAY)
    ] = UnsatisfiableMaxSkewPolicy.SCHEDULE_ANYWAY
    """DoNotSchedule or ScheduleAnyway."""


class SpreadPolicy(WireModel):
    """How selected clusters are spread over topologies."""

    spread_constraints: Annotated[list[SpreadConstraintsTerm], MaxLen(8)] | None = None
    """Up to eight spread constraints."""


class Toleration(WireModel):
    """Lets a placement select clusters with a matching taint."""

    key: Annotated[StrictStr, MaxLen(316), Pattern(CONDITION_TYPE_PATTERN)] = ""
    """The taint key; empty matches every key."""
    operator: Annotated[StrictStr, Default("Equal")] = "Equal"
    """Equal or Exists."""
    value: Annotated[StrictStr, MaxLen(1024)] = ""
    """The taint value for Equal."""
    effect: TaintEffect | None = None
    """The taint effect to match; empty matches every effect."""
    toleration_seconds: Int64 | None = None
    """How long the toleration lasts after the taint is added."""


class DecisionGroup(WireModel):
    """A named group of selected clusters."""

    group_name: Annotated[StrictStr, Pattern(_GROUP_NAME_PATTERN)]
    """Name of the group."""
    group_cluster_selector: GroupClusterSelector
    """Which selected clusters belong to the group."""


class GroupStrategy(WireModel):
    """How selected clusters are split into decision groups."""

    decision_groups: list[DecisionGroup] | None = None
    """Explicit groups."""
    clusters_per_decision_group: Annotated[
        int | str, IntOrString(_CLUSTERS_PER_GROUP_PATTERN), Default("100%")
    ] = "100%"
    """Largest group size: a count or a percentage of the selected clusters."""


class DecisionStrategy(WireModel):
    """How decisions are divided into groups."""

    group_strategy: GroupStrategy | None = None
    """The grouping."""


class PlacementSpec(WireModel):
    """Which clusters to select, and how."""

    cluster_sets: list[StrictStr] | None = None
    """Cluster sets to select from; all bound sets when absent."""
    number_of_clusters: Int32 | None = None
    """How many clusters to select; all matching when absent."""
    predicates: list[ClusterPredicate] | None = None
    """Clusters must match one of these."""
    prioritizer_policy: PrioritizerPolicy | None = None
    """How clusters are ranked."""
    spread_policy: SpreadPolicy | None = None
    """How clusters are spread over topologies."""
    tolerations: list[Toleration] | None = None
    """Taints this placement tolerates."""
    decision_strategy: DecisionStrategy | None = None
    """How decisions are grouped."""
    score_rate_limit: Annotated[StrictStr, Pattern(r"^[0-9]+[hms]$"), Default("1m")] = "1m"
    """Shortest interval between rescheduling for score changes."""
    sort_by: Annotated[SortBy, Default(SortBy.CLUSTER_NAME)] = SortBy.CLUSTER_NAME
    """How selected clusters are ordered."""


class DecisionGroupStatus(WireModel):
    """A decision group and the PlacementDecisions that hold it."""

    decision_group_index: Int32 = 0
    """Index of the group."""
    decision_group_name: StrictStr = ""
    """Name of the group."""
    decisions: list[StrictStr] | None = None
    """Names of the PlacementDecisions of the group."""
    cluster_count: Annotated[Int32, Default(0)] = 0
    """Clusters in the group."""


class PlacementStatus(WireModel):
    """The observed state of a placement."""

    number_of_selected_clusters: Int32 = 0
    """Clusters selected."""
    decision_groups: list[DecisionGroupStatus] | None = None
    """Decision groups."""
    conditions: Conditions | None = None
    """PlacementSatisfied, PlacementMisconfigured."""
    last_score_update_time: Time | None = None
    """When scores were last taken into account."""


class Placement(KubeObject):
    """Selects managed clusters from the cluster sets bound to its namespace."""

    api_resource = ResourceInfo(
        group=GROUP,
        version=VERSION,
        kind="Placement",
        plural="placements",
        singular="placement",
        scope="Namespaced",
        printer_columns=(
            PrinterColumn(
                "Succeeded", '.status.conditions[?(@.type=="PlacementSatisfied")].status'
            ),
            PrinterColumn("Reason", '.status.conditions[?(@.type=="PlacementSatisfied")].reason'),
            PrinterColumn("SelectedClusters", ".status.numberOfSelectedClusters", "integer"),
        ),
    )

    spec: PlacementSpec
    """Selection rules."""
    status: PlacementStatus | None = None
    """Selection results."""


class ClusterDecision(WireModel):
    """One selected cluster."""

    cluster_name: StrictStr
    """Name of the ManagedCluster."""
    reason: StrictStr
    """Why it was selected."""
    score: Int64 | None = None
    """Its score, when scored."""


class PlacementDecisionStatus(WireModel):
    """A slice of a placement's decisions."""

    decisions: list[ClusterDecision]
    """The selected clusters."""


class PlacementDecision(KubeObject):
    """Holds part of a placement's selected clusters.

    Labelled with the placement name and the decision group index and name.
    """

    api_resource = ResourceInfo(
        group=GROUP,
        version=VERSION,
        kind="PlacementDecision",
        plural="placementdecisions",
        singular="placementdecision",
        scope="Namespaced",
    )

    status: PlacementDecisionStatus | None = None
    """The decisions."""
