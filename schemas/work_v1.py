"""``work.open-cluster-management.io/v1``: ManifestWork and AppliedManifestWork."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Self

from annotated_types import MaxLen, MinLen
from pydantic import Field, StrictBool, StrictStr, model_validator
from pydantic_core import PydanticCustomError

from schemas.base import ResourceInfo, WireModel
from schemas.markers import (
    CELRule,
    CRDRequired,
    Default,
    EmbeddedResource,
    ListMap,
    Pattern,
    PreserveUnknownFields,
)
from schemas.meta import DNS1123_SUBDOMAIN_PATTERN, Conditions, Int32, Int64, KubeObject, Time

__all__ = [
    "AppliedManifestResourceMeta",
    "AppliedManifestWork",
    "AppliedManifestWorkSpec",
    "AppliedManifestWorkStatus",
    "ConditionRule",
    "ConditionRuleType",
    "DeleteOption",
    "DeletePropagationPolicyType",
    "ExecutorSubjectType",
    "FeedbackRule",
    "FeedbackRuleType",
    "FeedbackScrapeType",
    "FeedbackValue",
    "FieldValue",
    "FieldValueType",
    "IgnoreField",
    "IgnoreFieldsCondition",
    "JsonPath",
    "Manifest",
    "ManifestCondition",
    "ManifestConfigOption",
    "ManifestResourceMeta",
    "ManifestResourceStatus",
    "ManifestWork",
    "ManifestWorkExecutor",
    "ManifestWorkExecutorSubject",
    "ManifestWorkSpec",
    "ManifestWorkStatus",
    "ManifestsTemplate",
    "OrphaningRule",
    "ResourceIdentifier",
    "SelectivelyOrphan",
    "ServerSideApplyConfig",
    "ServiceAccountSubject",
    "StatusFeedbackResult",
    "UpdateStrategy",
    "UpdateStrategyType",
]

GROUP = "work.open-cluster-management.io"
VERSION = "v1"

# ---------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------


class DeletePropagationPolicyType(StrEnum):
    """What happens to applied resources when the work is deleted."""

    FOREGROUND = "Foreground"
    ORPHAN = "Orphan"
    SELECTIVELY_ORPHAN = "SelectivelyOrphan"


class UpdateStrategyType(StrEnum):
    """How the agent writes a manifest to the managed cluster."""

    UPDATE = "Update"
    CREATE_ONLY = "CreateOnly"
    SERVER_SIDE_APPLY = "ServerSideApply"
    READ_ONLY = "ReadOnly"


class FeedbackRuleType(StrEnum):
    """Which status values a feedback rule reports."""

    WELL_KNOWN_STATUS = "WellKnownStatus"
    JSON_PATHS = "JSONPaths"


class FeedbackScrapeType(StrEnum):
    """How the agent notices changes to feedback values."""

    POLL = "Poll"
    WATCH = "Watch"


class IgnoreFieldsCondition(StrEnum):
    """When server-side apply leaves ignored fields alone."""

    ON_SPOKE_PRESENT = "OnSpokePresent"
    ON_SPOKE_CHANGE = "OnSpokeChange"


class ConditionRuleType(StrEnum):
    """How a condition rule computes its condition."""

    WELL_KNOWN_CONDITIONS = "WellKnownConditions"
    CEL = "CEL"


class ExecutorSubjectType(StrEnum):
    """The kind of identity a work is applied as."""

    SERVICE_ACCOUNT = "ServiceAccount"


class FieldValueType(StrEnum):
    """The type of a status feedback value."""

    INTEGER = "Integer"
    STRING = "String"
    BOOLEAN = "Boolean"
    JSON_RAW = "JsonRaw"


# ---------------------------------------------------------------------------
# Spec
# ---------------------------------------------------------------------------

#: One manifest: a whole Kubernetes object, kept exactly as given.
Manifest = Annotated[dict[str, Any], EmbeddedResource(), PreserveUnknownFields()]


class ManifestsTemplate(WireModel):
    """The resources a work deploys."""

    manifests: list[Manifest] | None = None
    """The Kubernetes objects to apply on the managed cluster, in this order of ordinals."""


class ResourceIdentifier(WireModel):
    """Identifies one resource on the managed cluster by group, resource, namespace and name."""

    go_always = frozenset({"group", "namespace"})

    group: StrictStr = ""
    """API group of the resource; empty for the core group."""
    resource: StrictStr
    """Lowercase plural resource name, such as ``deployments`` (not the kind)."""
    name: StrictStr
    """Name of the resource."""
    namespace: StrictStr = ""
    """Namespace of the resource; empty for cluster-scoped resources."""


class OrphaningRule(ResourceIdentifier):
    """A resource left in place when the work is deleted (exact match, no wildcards)."""


class SelectivelyOrphan(WireModel):
    """The resources to orphan under the SelectivelyOrphan policy."""

    orphaning_rules: list[OrphaningRule] | None = None
    """Resources that are kept when the work is deleted."""


class DeleteOption(WireModel):
    """What to do with applied resources when the work is deleted."""

    go_always = frozenset({"propagation_policy"})

    propagation_policy: Annotated[
        DeletePropagationPolicyType, Default(DeletePropagationPolicyType.FOREGROUND)
    ] = DeletePropagationPolicyType.FOREGROUND
    """Foreground deletes applied resources, Orphan keeps them all, SelectivelyOrphan
    keeps those listed in selectivelyOrphans."""
    selectively_orphans: SelectivelyOrphan | None = None
    """The resources kept under the SelectivelyOrphan policy."""
    ttl_seconds_after_finished: Int64 | None = None
    """Seconds after the work's Complete condition turns True before the hub deletes
    the work; 0 deletes it at once. Absent: never."""


class JsonPath(WireModel):
    """One value to report back, selected with a Kubernetes JSONPath."""

    name: StrictStr
    """Name of the reported value."""
    version: StrictStr = ""
    """If set, the rule applies only when the resource is served at this version."""
    path: StrictStr
    """JSONPath without braces, such as ``.status.readyReplicas``."""


class FeedbackRule(WireModel):
    """Which status values of a resource the agent reports back."""

    type: FeedbackRuleType
    """WellKnownStatus reports a built-in set for common kinds; JSONPaths reports jsonPaths."""
    json_paths: Annotated[list[JsonPath], ListMap("name")] | None = None
    """The values to report when type is JSONPaths."""


class IgnoreField(WireModel):
    """Fields server-side apply does not push to the managed cluster."""

    condition: Annotated[
        IgnoreFieldsCondition, Default(IgnoreFieldsCondition.ON_SPOKE_PRESENT), CRDRequired()
    ] = IgnoreFieldsCondition.ON_SPOKE_PRESENT
    """OnSpokePresent ignores the fields while the resource exists; OnSpokeChange
    ignores them only when something on the managed cluster changed them."""
    json_paths: list[StrictStr] | None = None
    """Fields to ignore, as Kubernetes JSONPaths."""
    json_pointers: list[StrictStr] | None = None
    """Fields to ignore, as RFC 6901 JSON pointers."""
    jq_path_expressions: list[StrictStr] | None = None
    """Fields to ignore, as jq path expressions."""


class ServerSideApplyConfig(WireModel):
    """Options of the ServerSideApply strategy."""

    go_always = frozenset({"force"})

    force: StrictBool = False
    """Take over fields owned by other managers instead of reporting a conflict."""
    field_manager: Annotated[StrictStr, Pattern(r"^work-agent"), Default("work-agent")] = (
        "work-agent"
    )
    """Field manager name; must start with ``work-agent``."""
    ignore_fields: Annotated[list[IgnoreField], ListMap("condition")] | None = None
    """Fields to leave alone, at most one entry per condition."""


class UpdateStrategy(WireModel):
    """How the agent writes a resource to the managed cluster."""

    type: Annotated[UpdateStrategyType, Default(UpdateStrategyType.UPDATE), CRDRequired()] = (
        UpdateStrategyType.UPDATE
    )
    """Update, CreateOnly, ServerSideApply or ReadOnly."""
    server_side_apply: ServerSideApplyConfig | None = None
    """Options used when type is ServerSideApply."""


class ConditionRule(WireModel):
    """Produces a condition on a manifest from the state of its resource."""

    go_always = frozenset({"cel_expressions"})
    crd_validations = (
        CELRule(
            rule="self.type != 'CEL' || self.condition != \"\"",
            message="Condition is required for CEL rules",
        ),
    )

    condition: StrictStr
    """The condition type to set; Complete marks the manifest as finished."""
    type: ConditionRuleType
    """WellKnownConditions uses built-in logic; CEL evaluates celExpressions."""
    cel_expressions: list[StrictStr] | None = None
    """CEL expressions over ``object``; the condition is True when all are true."""
    message: StrictStr = ""
    """A fixed message for the condition."""
    message_expression: StrictStr = ""
    """A CEL expression producing the message; used instead of message when non-empty."""

    @model_validator(mode="after")
    def _condition_for_cel(self) -> Self:
        # The CRD's x-kubernetes-validations rule, checked the same way here.
        if self.type == ConditionRuleType.CEL and self.condition == "":
            raise PydanticCustomError("cel_rule", "Condition is required for CEL rules")
        return self


class ManifestConfigOption(WireModel):
    """Per-resource settings: feedback, update strategy and condition rules."""

    resource_identifier: ResourceIdentifier
    """The resources these settings apply to; namespace and name accept ``*`` wildcards."""
    feedback_rules: list[FeedbackRule] | None = None
    """Status values to report back in statusFeedback."""
    update_strategy: UpdateStrategy | None = None
    """How to write the resource; Update when absent."""
    condition_rules: Annotated[list[ConditionRule], ListMap("condition")] | None = None
    """Conditions to compute for the resource, at most one per condition type."""
    feedback_scrape_type: Annotated[FeedbackScrapeType, Default(FeedbackScrapeType.POLL)] = (
        FeedbackScrapeType.POLL
    )
    """Poll the resource periodically, or Watch it for changes."""


_SA_NAME = Annotated[StrictStr, MinLen(1), MaxLen(253), Pattern(DNS1123_SUBDOMAIN_PATTERN)]


class ServiceAccountSubject(WireModel):
    """A service account on the managed cluster."""

    namespace: _SA_NAME
    """Namespace of the service account."""
    name: _SA_NAME
    """Name of the service account."""


class ManifestWorkExecutorSubject(WireModel):
    """The identity a work is applied as."""

    type: ExecutorSubjectType
    """The kind of subject; only ServiceAccount is supported."""
    service_account: ServiceAccountSubject | None = None
    """The service account, required when type is ServiceAccount."""


class ManifestWorkExecutor(WireModel):
    """Who applies a work's manifests; the agent checks that subject's permissions first."""

    subject: ManifestWorkExecutorSubject | None = None
    """The identity to apply as."""


class ManifestWorkSpec(WireModel):
    """What to deploy to a managed cluster, and how."""

    workload: ManifestsTemplate | None = None
    """The resources to deploy."""
    delete_option: DeleteOption | None = None
    """What happens to applied resources on deletion; Foreground when absent."""
    manifest_configs: list[ManifestConfigOption] | None = None
    """Per-resource settings."""
    executor: ManifestWorkExecutor | None = None
    """The identity to apply the manifests as; absent means the agent's own."""


# ---------------------------------------------------------------------------
# Status
# ---------------------------------------------------------------------------


class ManifestResourceMeta(WireModel):
    """Which resource a manifest turned out to be."""

    go_always = frozenset({"group", "version", "kind", "resource", "name", "namespace"})

    ordinal: Int32
    """Index of the manifest in spec.workload.manifests."""
    group: StrictStr = ""
    """API group of the resource."""
    version: StrictStr = ""
    """API version of the resource."""
    kind: StrictStr = ""
    """Kind of the resource."""
    resource: StrictStr = ""
    """Plural resource name; empty when the kind could not be mapped."""
    name: StrictStr = ""
    """Name of the resource."""
    namespace: StrictStr = ""
    """Namespace of the resource; empty for cluster-scoped resources."""


class FieldValue(WireModel):
    """A typed value; exactly the field named by type is set."""

    type: FieldValueType
    """Integer, String, Boolean or JsonRaw."""
    integer: Int64 | None = None
    """The value when type is Integer."""
    string: StrictStr | None = None
    """The value when type is String."""
    boolean: StrictBool | None = None
    """The value when type is Boolean."""
    json_raw: Annotated[StrictStr, MaxLen(1024)] | None = None
    """The value as JSON text when type is JsonRaw."""


class FeedbackValue(WireModel):
    """One reported status value."""

    name: StrictStr
    """Name of the value (a JSONPaths name or a well-known name)."""
    field_value: FieldValue
    """The value."""


class StatusFeedbackResult(WireModel):
    """Status values reported for one manifest."""

    values: Annotated[list[FeedbackValue], ListMap("name")] | None = None
    """The values, unique by name."""


class ManifestCondition(WireModel):
    """The state of one manifest of a work."""

    resource_meta: ManifestResourceMeta
    """Which resource this is."""
    status_feedback: StatusFeedbackResult | None = None
    """Values reported by the feedback rules."""
    conditions: Conditions
    """Conditions of this manifest (Applied, Available, rule-made ones)."""


class ManifestResourceStatus(WireModel):
    """The state of every manifest of a work."""

    manifests: list[ManifestCondition] | None = None
    """One entry per manifest, in spec order."""


class ManifestWorkStatus(WireModel):
    """The observed state of a work."""

    conditions: Conditions | None = None
    """Work-level conditions (Applied, Available, Progressing, Degraded, Complete, ...)."""
    resource_status: ManifestResourceStatus | None = None
    """Per-manifest state."""


class ManifestWork(KubeObject):
    """A set of Kubernetes resources for one managed cluster.

    A ManifestWork lives in the hub namespace named after the managed
    cluster; that cluster's work agent applies the manifests and reports
    their state back in status.
    """

    api_resource = ResourceInfo(
        group=GROUP,
        version=VERSION,
        kind="ManifestWork",
        plural="manifestworks",
        singular="manifestwork",
        scope="Namespaced",
    )
    go_always = KubeObject.go_always | {"spec"}

    spec: ManifestWorkSpec = Field(default_factory=ManifestWorkSpec)
    """What to deploy."""
    status: ManifestWorkStatus | None = None
    """What the agent observed."""


# ---------------------------------------------------------------------------
# AppliedManifestWork
# ---------------------------------------------------------------------------


class AppliedManifestWorkSpec(WireModel):
    """Which ManifestWork on which hub this record belongs to."""

    go_always = frozenset({"agent_id"})

    hub_hash: StrictStr
    """SHA-256 (hex) of the hub API server URL."""
    agent_id: StrictStr = Field(
        default="", validation_alias="agentID", serialization_alias="agentID"
    )
    """ID of the agent that owns this record."""
    manifest_work_name: StrictStr
    """Name of the ManifestWork on the hub."""


class AppliedManifestResourceMeta(WireModel):
    """A resource the agent applied, with the UID of the live object."""

    go_always = frozenset({"group", "namespace"})

    group: StrictStr = ""
    """API group of the resource; empty for the core group."""
    version: StrictStr
    """API version of the resource."""
    resource: StrictStr
    """Plural resource name."""
    name: StrictStr
    """Name of the resource."""
    namespace: StrictStr = ""
    """Namespace of the resource; empty for cluster-scoped resources."""
    uid: StrictStr = ""
    """UID of the live object."""


class AppliedManifestWorkStatus(WireModel):
    """The resources applied for a work."""

    applied_resources: list[AppliedManifestResourceMeta] | None = None
    """Resources the agent applied and still owns."""
    eviction_start_time: Time | None = None
    """When the record was scheduled for eviction."""


class AppliedManifestWork(KubeObject):
    """The managed cluster's record of what it applied for one ManifestWork.

    Cluster scoped; named ``<hub hash>-<manifest work name>``.
    """

    api_resource = ResourceInfo(
        group=GROUP,
        version=VERSION,
        kind="AppliedManifestWork",
        plural="appliedmanifestworks",
        singular="appliedmanifestwork",
        scope="Cluster",
    )

    spec: AppliedManifestWorkSpec | None = None
    """The ManifestWork this record belongs to."""
    status: AppliedManifestWorkStatus | None = None
    """What was applied."""
