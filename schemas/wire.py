"""Wire strings of the OCM work API: condition types, reasons, finalizers,
labels, annotations and feature gate names.

Values are verbatim from OCM (see ``../shared/spec/api.md``); an OCM hub and
its tools match on them, so never reword one.
"""

from __future__ import annotations

from typing import Final

# --- ManifestWork condition types (work level and manifest level) ------------

CONDITION_APPLIED: Final = "Applied"
CONDITION_AVAILABLE: Final = "Available"
CONDITION_PROGRESSING: Final = "Progressing"
CONDITION_DEGRADED: Final = "Degraded"
CONDITION_COMPLETE: Final = "Complete"
#: Work level only: set while the work is being deleted.
CONDITION_DELETING: Final = "Deleting"
#: Manifest level only (agent-internal).
CONDITION_STATUS_FEEDBACK_SYNCED: Final = "StatusFeedbackSynced"

WORK_CONDITION_TYPES: Final = (
    CONDITION_APPLIED,
    CONDITION_AVAILABLE,
    CONDITION_PROGRESSING,
    CONDITION_DEGRADED,
    CONDITION_COMPLETE,
    CONDITION_DELETING,
)
MANIFEST_CONDITION_TYPES: Final = (
    CONDITION_APPLIED,
    CONDITION_AVAILABLE,
    CONDITION_PROGRESSING,
    CONDITION_DEGRADED,
    CONDITION_COMPLETE,
    CONDITION_STATUS_FEEDBACK_SYNCED,
)

# --- Reasons declared as API constants ---------------------------------------

REASON_APPLIED_MANIFEST_COMPLETE: Final = "AppliedManifestComplete"
REASON_APPLIED_MANIFEST_FAILED: Final = "AppliedManifestFailed"
REASON_APPLIED_MANIFEST_SSA_IGNORE_FIELD_ERROR: Final = "AppliedManifestSSAIgnoreFieldError"

#: Every condition-rule reason starts with this; it marks rule-made conditions.
CONDITION_RULE_REASON_PREFIX: Final = "ConditionRule"
REASON_CONDITION_RULE_EVALUATED: Final = "ConditionRuleEvaluated"
REASON_CONDITION_RULE_INVALID: Final = "ConditionRuleInvalid"
REASON_CONDITION_RULE_EXPRESSION_ERROR: Final = "ConditionRuleExpressionError"
REASON_CONDITION_RULE_INTERNAL_ERROR: Final = "ConditionRuleInternalError"

# Work-level reasons the API declares but the current agent does not emit.
REASON_MANIFESTS_COMPLETE: Final = "ManifestsComplete"
REASON_APPLYING: Final = "Applying"
REASON_COMPLETED: Final = "Completed"
REASON_FAILED: Final = "Failed"

# --- Reasons the agent emits without an API constant -------------------------

REASON_APPLIED_MANIFEST_WORK_COMPLETE: Final = "AppliedManifestWorkComplete"
REASON_APPLIED_MANIFEST_WORK_FAILED: Final = "AppliedManifestWorkFailed"
REASON_RESOURCE_AVAILABLE: Final = "ResourceAvailable"
REASON_RESOURCE_NOT_AVAILABLE: Final = "ResourceNotAvailable"
REASON_FETCHING_RESOURCE_FAILED: Final = "FetchingResourceFailed"
REASON_INCOMPLETE_RESOURCE_META: Final = "IncompleteResourceMeta"
REASON_RESOURCES_AVAILABLE: Final = "ResourcesAvailable"
REASON_RESOURCES_NOT_AVAILABLE: Final = "ResourcesNotAvailable"
REASON_RESOURCES_STATUS_UNKNOWN: Final = "ResourcesStatusUnknown"
REASON_CONDITION_RULES_AGGREGATED: Final = "ConditionRulesAggregated"
REASON_NO_STATUS_FEEDBACK_SYNCED: Final = "NoStatusFeedbackSynced"
REASON_STATUS_FEEDBACK_SYNCED: Final = "StatusFeedbackSynced"
REASON_STATUS_FEEDBACK_SYNC_FAILED: Final = "StatusFeedbackSyncFailed"
REASON_WORK_DELETING: Final = "WorkDeleting"

# --- Finalizers ----------------------------------------------------------------

#: On ManifestWork (hub), removed by the agent once cleanup is done.
MANIFEST_WORK_FINALIZER: Final = "cluster.open-cluster-management.io/manifest-work-cleanup"
#: On AppliedManifestWork (managed cluster).
APPLIED_MANIFEST_WORK_FINALIZER: Final = (
    "cluster.open-cluster-management.io/applied-manifest-work-cleanup"
)
#: On ManifestWorkReplicaSet (hub).
MANIFEST_WORK_REPLICA_SET_FINALIZER: Final = "work.open-cluster-management.io/manifest-work-cleanup"

# --- Annotations -----------------------------------------------------------------

#: Written on spoke resources applied with ServerSideApply and ignoreFields.
CONFIG_SPEC_HASH_ANNOTATION: Final = "open-cluster-management.io/config-spec-hash"
#: Declared by the API (ObjectSpecHash); not read or written by the agent.
OBJECT_SPEC_HASH_ANNOTATION: Final = "open-cluster-management.io/object-hash"
#: ManifestWork annotations with this prefix go (minus it) into the agent's log context.
LOGGING_ANNOTATION_PREFIX: Final = "logging.open-cluster-management.io/"

#: Default server-side apply field manager.
DEFAULT_FIELD_MANAGER: Final = "work-agent"

# --- ManifestWorkReplicaSet -------------------------------------------------------

CONDITION_PLACEMENT_VERIFIED: Final = "PlacementVerified"
CONDITION_PLACEMENT_ROLLED_OUT: Final = "PlacementRolledOut"
#: Note the lower-case ``w``.
CONDITION_MANIFESTWORK_APPLIED: Final = "ManifestworkApplied"

REASON_AS_EXPECTED: Final = "AsExpected"
REASON_PLACEMENT_DECISION_NOT_FOUND: Final = "PlacementDecisionNotFound"
REASON_PLACEMENT_DECISION_EMPTY: Final = "PlacementDecisionEmpty"
REASON_NOT_AS_EXPECTED: Final = "NotAsExpected"
REASON_PROCESSING: Final = "Processing"
REASON_PROGRESSING: Final = "Progressing"
REASON_COMPLETE: Final = "Complete"
REASON_INVALID_MANIFEST_WORK_NAME: Final = "InvalidManifestWorkName"

#: On generated ManifestWorks: ``<replica set namespace>.<replica set name>``.
MANIFEST_WORK_REPLICA_SET_LABEL: Final = "work.open-cluster-management.io/manifestworkreplicaset"
#: On generated ManifestWorks: the placement name.
PLACEMENT_NAME_LABEL: Final = "work.open-cluster-management.io/placementname"

# --- Placement / PlacementDecision -------------------------------------------------

#: On PlacementDecisions: the placement name.
PLACEMENT_LABEL: Final = "cluster.open-cluster-management.io/placement"
#: On PlacementDecisions: the decision group index (a decimal integer).
DECISION_GROUP_INDEX_LABEL: Final = "cluster.open-cluster-management.io/decision-group-index"
#: On PlacementDecisions: the decision group name (may be absent).
DECISION_GROUP_NAME_LABEL: Final = "cluster.open-cluster-management.io/decision-group-name"

CONDITION_PLACEMENT_SATISFIED: Final = "PlacementSatisfied"
CONDITION_PLACEMENT_MISCONFIGURED: Final = "PlacementMisconfigured"

# --- Feature gates -----------------------------------------------------------------

GATE_EXECUTOR_VALIDATING_CACHES: Final = "ExecutorValidatingCaches"
GATE_RAW_FEEDBACK_JSON_STRING: Final = "RawFeedbackJsonString"
GATE_NIL_EXECUTOR_VALIDATING: Final = "NilExecutorValidating"
GATE_MANIFEST_WORK_REPLICA_SET: Final = "ManifestWorkReplicaSet"
GATE_CLOUD_EVENTS_DRIVERS: Final = "CloudEventsDrivers"
GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK: Final = "CleanUpCompletedManifestWork"
