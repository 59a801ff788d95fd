"""``cluster.open-cluster-management.io/v1``: ManagedCluster."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from annotated_types import MaxLen, MinLen
from pydantic import Field, StrictBool, StrictStr

from schemas.base import PrinterColumn, ResourceInfo, WireModel
from schemas.markers import Default, Format, IntOrString, ListMap, Nullable, Pattern
from schemas.meta import CONDITION_TYPE_PATTERN, Conditions, Int32, KubeObject, Time

__all__ = [
    "QUANTITY_PATTERN",
    "ClientConfig",
    "ManagedCluster",
    "ManagedClusterClaim",
    "ManagedClusterSpec",
    "ManagedClusterStatus",
    "ManagedClusterVersion",
    "ManagedNamespaceConfig",
    "Quantity",
    "Taint",
    "TaintEffect",
]

#: A Kubernetes resource quantity in its string form (``100m``, ``2Gi``, ``1e3``).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
#: A resource quantity: an integer or a quantity string.
Quantity = Annotated[int | str, IntOrString(QUANTITY_PATTERN)]

#: Label/taint keys: an optional DNS subdomain prefix and a qualified name.
TAINT_KEY_PATTERN = CONDITION_TYPE_PATTERN


class TaintEffect(StrEnum):
    """What a taint does to placements that do not tolerate it."""

    NO_SELECT = "NoSelect"
    PREFER_NO_SELECT = "PreferNoSelect"
    NO_SELECT_IF_NEW = "NoSelectIfNew"


class ClientConfig(WireModel):
    """How to reach a managed cluster's API server."""

    url: StrictStr
    """URL of the API server."""
    ca_bundle: Annotated[StrictStr, Format("byte")] | None = None
    """PEM CA bundle, base64-encoded."""


class Taint(WireModel):
    """Keeps placements off a cluster unless they tolerate it."""

    key: Annotated[StrictStr, MaxLen(316), Pattern(TAINT_KEY_PATTERN)]
    """The taint key."""
    value: Annotated[StrictStr, MaxLen(1024)] = ""
    """The taint value."""
    effect: TaintEffect
    """NoSelect, PreferNoSelect or NoSelectIfNew."""
    time_added: Annotated[Time | None, Nullable()] = None
    """When the taint was added."""


class ManagedClusterSpec(WireModel):
    """Desired state of a managed cluster, as set on the hub."""

    managed_cluster_client_configs: list[ClientConfig] | None = None
    """How to reach the cluster's API server."""
    hub_accepts_client: StrictBool = False
    """Whether the hub accepts the cluster's agents."""
    lease_duration_seconds: Annotated[Int32, Default(60)] = 60
    """How often the agent renews its lease."""
    taints: list[Taint] | None = None
    """Taints on the cluster."""


class ManagedClusterVersion(WireModel):
    """Versions of software on the cluster."""

    kubernetes: StrictStr = ""
    """The Kubernetes version."""


class ManagedClusterClaim(WireModel):
    """A fact the cluster reports about itself."""

    name: Annotated[StrictStr, MinLen(1), MaxLen(253)] | None = None
    """Name of the claim."""
    value: Annotated[StrictStr, MinLen(1), MaxLen(1024)] | None = None
    """Value of the claim."""


class ManagedNamespaceConfig(WireModel):
    """A namespace on the cluster managed for a cluster set."""

    cluster_set: StrictStr
    """The cluster set the namespace belongs to."""
    name: Annotated[StrictStr, MaxLen(63), Pattern(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]
    """Name of the namespace."""
    conditions: Conditions | None = None
    """State of the namespace."""


class ManagedClusterStatus(WireModel):
    """Observed state of a managed cluster, reported by its agents."""

    conditions: Conditions | None = None
    """ManagedClusterJoined, ManagedClusterConditionAvailable and more."""
    capacity: dict[str, Quantity] | None = None
    """Total resources of the cluster."""
    allocatable: dict[str, Quantity] | None = None
    """Resources available for scheduling."""
    version: ManagedClusterVersion | None = None
    """Software versions."""
    cluster_claims: list[ManagedClusterClaim] | None = None
    """Claims reported by the cluster."""
    managed_namespaces: Annotated[list[ManagedNamespaceConfig], ListMap("clusterSet", "name")] | (
        None
    ) = None
    """Namespaces managed for cluster sets."""


_CONDITION = '.status.conditions[?(@.type=="{}")].status'


class ManagedCluster(KubeObject):
    """A cluster registered with the hub. Cluster scoped; named after the cluster."""

    api_resource = ResourceInfo(
        group="cluster.open-cluster-management.io",
        version="v1",
        kind="ManagedCluster",
        plural="managedclusters",
        singular="managedcluster",
        scope="Cluster",
        short_names=("mcl", "mcls"),
        printer_columns=(
            PrinterColumn("Hub Accepted", ".spec.hubAcceptsClient", "boolean"),
            PrinterColumn("Managed Cluster URLs", ".spec.managedClusterClientConfigs[*].url"),
            PrinterColumn("Joined", _CONDITION.format("ManagedClusterJoined")),
            PrinterColumn("Available", _CONDITION.format("ManagedClusterConditionAvailable")),
            PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        ),
    )
    go_always = KubeObject.go_always | {"spec"}

    spec: ManagedClusterSpec = Field(default_factory=ManagedClusterSpec)
    """Desired state."""
    status: ManagedClusterStatus | None = None
    """Observed state."""
