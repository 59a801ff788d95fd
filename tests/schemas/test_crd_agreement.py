"""Behaviour on the same inputs: upstream CRD, generated CRD and models.

kubesim's :class:`CRDSchema` does what kube-apiserver does with a CRD schema
(prune, default, validate including CEL). Both CRDs must treat every input
identically, and whatever the upstream CRD rejects the models reject too,
naming the same field.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubesim.crdschema import CRDSchema
from schemas import SchemaValidationError, parse_object
from schemas.crdgen import crd_for
from schemas.meta import KubeObject
from schemas.registry import model_for
from tests.schemas import samples
from tests.schemas.upstream import openapi_schema, upstream_crds

Path = tuple[str | int, ...]


@functools.cache
def _schemas(model: type[KubeObject]) -> tuple[CRDSchema, CRDSchema]:
    ours = CRDSchema(openapi_schema(crd_for(model)))
    theirs = CRDSchema(openapi_schema(upstream_crds()[model.api_resource.crd_name]))
    return ours, theirs


def _server(schema: CRDSchema, obj: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    stored = schema.default(schema.prune(obj))
    return stored, schema.causes(stored)


def _model(obj: dict[str, Any]) -> type[KubeObject]:
    model = model_for(obj["apiVersion"], obj["kind"])
    assert model is not None
    return model


def same_outcome(obj: dict[str, Any]) -> list[Any]:
    """Stores ``obj`` through our CRD and the upstream one: the same result both ways
    (asserted); returns the causes of rejection, [] if accepted."""
    ours, theirs = _schemas(_model(obj))
    ours_out, theirs_out = _server(ours, obj), _server(theirs, obj)
    assert ours_out == theirs_out
    return theirs_out[1]


# ---------------------------------------------------------------------------
# Valid inputs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(samples.ALL))
def test_samples_behave_the_same(kind: str) -> None:
    obj = samples.ALL[kind]()
    assert same_outcome(obj) == []
    stored, _ = _server(_schemas(_model(obj))[1], obj)
    # What the API server stores (pruned and defaulted) still parses and
    # round-trips through the model.
    assert parse_object(stored).to_wire() == stored


# ---------------------------------------------------------------------------
# Invalid inputs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """A sample broken one way, and the problem the model must report."""

    name: str
    kind: str
    path: Path
    value: Any  # _DELETE removes the field instead
    problem: str

    def build(self) -> dict[str, Any]:
        obj = samples.ALL[self.kind]()
        _set(obj, self.path, self.value)
        return obj


_DELETE = object()


def _set(obj: Any, path: Path, value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    if value is _DELETE:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


def _mw(*path: str | int) -> Path:
    return ("spec", *path)


MC0 = ("spec", "manifestConfigs", 0)
SSA = (*MC0, "updateStrategy", "serverSideApply")
COND0 = ("status", "conditions", 0)
RS0 = ("status", "resourceStatus", "manifests", 0)
REF1 = ("spec", "placementRefs", 1)
PROG = (*REF1, "rolloutStrategy", "progressive")
P = ("spec",)
MW, AMW, MWRS = "ManifestWork", "AppliedManifestWork", "ManifestWorkReplicaSet"
PL, PD, MC = "Placement", "PlacementDecision", "ManagedCluster"

_LONG = "x" * 1025

BAD = [
    # ManifestWork spec
    Bad("manifest-no-kind", MW, _mw("workload", "manifests", 0, "kind"), _DELETE,
        "spec.workload.manifests[0]: kind is required"),
    Bad("manifest-empty-apiversion", MW, _mw("workload", "manifests", 1, "apiVersion"), "",
        "spec.workload.manifests[1]: apiVersion is required"),
    Bad("manifest-bad-kind", MW, _mw("workload", "manifests", 1, "kind"), "Bad Kind",
        "spec.workload.manifests[1]: kind must be at most 63 letters, digits and '-', "
        "starting with a letter"),
    Bad("manifest-not-object", MW, _mw("workload", "manifests", 0), "text",
        "spec.workload.manifests[0]: must be an object"),
    Bad("manifests-not-array", MW, _mw("workload", "manifests"), {"a": 1},
        "spec.workload.manifests: must be an array"),
    Bad("propagation-policy", MW, _mw("deleteOption", "propagationPolicy"), "Background",
        "spec.deleteOption.propagationPolicy: must be 'Foreground', 'Orphan' or "
        "'SelectivelyOrphan'"),
    Bad("orphaning-rule-no-resource", MW,
        _mw("deleteOption", "selectivelyOrphans", "orphaningRules", 0, "resource"), _DELETE,
        "spec.deleteOption.selectivelyOrphans.orphaningRules[0]: resource is required"),
    Bad("ttl-string", MW, _mw("deleteOption", "ttlSecondsAfterFinished"), "30",
        "spec.deleteOption.ttlSecondsAfterFinished: must be an integer"),
    Bad("ttl-float", MW, _mw("deleteOption", "ttlSecondsAfterFinished"), 1.5,
        "spec.deleteOption.ttlSecondsAfterFinished: must be an integer"),
    Bad("config-no-identifier", MW, (*MC0, "resourceIdentifier"), _DELETE,
        "spec.manifestConfigs[0]: resourceIdentifier is required"),
    Bad("identifier-no-name", MW, (*MC0, "resourceIdentifier", "name"), _DELETE,
        "spec.manifestConfigs[0].resourceIdentifier: name is required"),
    Bad("feedback-type", MW, (*MC0, "feedbackRules", 0, "type"), "Everything",
        "spec.manifestConfigs[0].feedbackRules[0].type: must be 'WellKnownStatus' or "
        "'JSONPaths'"),
    Bad("jsonpath-no-path", MW, (*MC0, "feedbackRules", 1, "jsonPaths", 0, "path"), _DELETE,
        "spec.manifestConfigs[0].feedbackRules[1].jsonPaths[0]: path is required"),
    Bad("jsonpath-duplicate", MW, (*MC0, "feedbackRules", 1, "jsonPaths", 1, "name"), "ready",
        "spec.manifestConfigs[0].feedbackRules[1].jsonPaths[1]: duplicate entry "
        "(name='ready'); already at index 0"),
    Bad("scrape-type", MW, (*MC0, "feedbackScrapeType"), "Push",
        "spec.manifestConfigs[0].feedbackScrapeType: must be 'Poll' or 'Watch'"),
    Bad("update-type", MW, (*MC0, "updateStrategy", "type"), "Patch",
        "spec.manifestConfigs[0].updateStrategy.type: must be 'Update', 'CreateOnly', "
        "'ServerSideApply' or 'ReadOnly'"),
    Bad("field-manager", MW, (*SSA, "fieldManager"), "my-manager",
        "spec.manifestConfigs[0].updateStrategy.serverSideApply.fieldManager: must match the "
        "pattern ^work-agent"),
    Bad("force-string", MW, (*SSA, "force"), "true",
        "spec.manifestConfigs[0].updateStrategy.serverSideApply.force: must be a boolean"),
    Bad("ignore-condition", MW, (*SSA, "ignoreFields", 0, "condition"), "Never",
        "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].condition: "
        "must be 'OnSpokePresent' or 'OnSpokeChange'"),
    Bad("ignore-duplicate-defaulted", MW, (*SSA, "ignoreFields"),
        [{"jsonPaths": [".a"]}, {"condition": "OnSpokePresent"}],
        "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[1]: duplicate "
        "entry (condition='OnSpokePresent'); already at index 0"),
    Bad("cel-rule-without-condition", MW, (*MC0, "conditionRules", 1, "condition"), "",
        "spec.manifestConfigs[0].conditionRules[1]: Condition is required for CEL rules"),
    Bad("condition-rule-duplicate", MW, (*MC0, "conditionRules", 1, "condition"), "Complete",
        "spec.manifestConfigs[0].conditionRules[1]: duplicate entry (condition='Complete'); "
        "already at index 0"),
    Bad("condition-rule-no-type", MW, (*MC0, "conditionRules", 0, "type"), _DELETE,
        "spec.manifestConfigs[0].conditionRules[0]: type is required"),
    Bad("executor-type", MW, _mw("executor", "subject", "type"), "User",
        "spec.executor.subject.type: must be 'ServiceAccount'"),
    Bad("executor-sa-name", MW, _mw("executor", "subject", "serviceAccount", "name"), "Bad_Name",
        "spec.executor.subject.serviceAccount.name: must match the pattern "
        r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$"),
    Bad("executor-sa-namespace-empty", MW,
        _mw("executor", "subject", "serviceAccount", "namespace"), "",
        "spec.executor.subject.serviceAccount.namespace: must be at least 1 character long"),
    Bad("executor-sa-name-long", MW, _mw("executor", "subject", "serviceAccount", "name"),
        "a" * 254, "spec.executor.subject.serviceAccount.name: must be at most 253 characters "
        "long"),
    # ManifestWork status
    Bad("condition-reason-empty", MW, (*COND0, "reason"), "",
        "status.conditions[0].reason: must be at least 1 character long"),
    Bad("condition-reason-pattern", MW, (*COND0, "reason"), "1Bad",
        r"status.conditions[0].reason: must match the pattern "
        r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
    Bad("condition-status", MW, (*COND0, "status"), "Yes",
        "status.conditions[0].status: must be 'True', 'False' or 'Unknown'"),
    Bad("condition-time", MW, (*COND0, "lastTransitionTime"), "yesterday",
        "status.conditions[0].lastTransitionTime: must be an RFC 3339 date-time, such as "
        "2006-01-02T15:04:05Z"),
    Bad("condition-no-time", MW, (*COND0, "lastTransitionTime"), _DELETE,
        "status.conditions[0]: lastTransitionTime is required"),
    Bad("condition-generation", MW, (*COND0, "observedGeneration"), -1,
        "status.conditions[0].observedGeneration: must be greater than or equal to 0"),
    Bad("condition-type-long", MW, (*COND0, "type"), "A" * 317,
        "status.conditions[0].type: must be at most 316 characters long"),
    Bad("condition-message-long", MW, (*COND0, "message"), "m" * 32769,
        "status.conditions[0].message: must be at most 32768 characters long"),
    Bad("condition-duplicate", MW, ("status", "conditions", 1, "type"), "Applied",
        "status.conditions[1]: duplicate entry (type='Applied'); already at index 0"),
    Bad("manifest-status-no-meta", MW, (*RS0, "resourceMeta"), _DELETE,
        "status.resourceStatus.manifests[0]: resourceMeta is required"),
    Bad("manifest-status-no-conditions", MW, (*RS0, "conditions"), _DELETE,
        "status.resourceStatus.manifests[0]: conditions is required"),
    Bad("resource-meta-no-ordinal", MW, (*RS0, "resourceMeta", "ordinal"), _DELETE,
        "status.resourceStatus.manifests[0].resourceMeta: ordinal is required"),
    Bad("feedback-duplicate", MW, (*RS0, "statusFeedback", "values", 1, "name"), "ready",
        "status.resourceStatus.manifests[0].statusFeedback.values[1]: duplicate entry "
        "(name='ready'); already at index 0"),
    Bad("feedback-json-raw-long", MW,
        (*RS0, "statusFeedback", "values", 3, "fieldValue", "jsonRaw"), _LONG,
        "status.resourceStatus.manifests[0].statusFeedback.values[3].fieldValue.jsonRaw: must "
        "be at most 1024 characters long"),
    Bad("feedback-value-type", MW, (*RS0, "statusFeedback", "values", 0, "fieldValue", "type"),
        "Float",
        "status.resourceStatus.manifests[0].statusFeedback.values[0].fieldValue.type: must be "
        "'Integer', 'String', 'Boolean' or 'JsonRaw'"),
    Bad("feedback-no-value", MW, (*RS0, "statusFeedback", "values", 0, "fieldValue"), _DELETE,
        "status.resourceStatus.manifests[0].statusFeedback.values[0]: fieldValue is required"),
    # AppliedManifestWork
    Bad("amw-no-hub-hash", AMW, ("spec", "hubHash"), _DELETE, "spec: hubHash is required"),
    Bad("amw-resource-no-version", AMW, ("status", "appliedResources", 0, "version"), _DELETE,
        "status.appliedResources[0]: version is required"),
    Bad("amw-eviction-time", AMW, ("status", "evictionStartTime"), "soon",
        "status.evictionStartTime: must be an RFC 3339 date-time, such as "
        "2006-01-02T15:04:05Z"),
    # ManifestWorkReplicaSet
    Bad("mwrs-no-refs", MWRS, ("spec", "placementRefs"), [],
        "spec.placementRefs: must have at least 1 item"),
    Bad("mwrs-refs-missing", MWRS, ("spec", "placementRefs"), _DELETE,
        "spec: placementRefs is required"),
    Bad("mwrs-ref-name-empty", MWRS, (*REF1, "name"), "",
        "spec.placementRefs[1].name: must be at least 1 character long"),
    Bad("mwrs-cascade", MWRS, ("spec", "cascadeDeletionPolicy"), "Orphan",
        "spec.cascadeDeletionPolicy: must be 'Background' or 'Foreground'"),
    Bad("mwrs-rollout-type", MWRS, (*REF1, "rolloutStrategy", "type"), "Canary",
        "spec.placementRefs[1].rolloutStrategy.type: must be 'All', 'Progressive' or "
        "'ProgressivePerGroup'"),
    Bad("mwrs-max-failures-pattern", MWRS, (*PROG, "maxFailures"), "150%",
        "spec.placementRefs[1].rolloutStrategy.progressive.maxFailures: must match the pattern "
        "^((100|[0-9]{1,2})%|[0-9]+)$"),
    Bad("mwrs-max-concurrency-bool", MWRS, (*PROG, "maxConcurrency"), True,
        "spec.placementRefs[1].rolloutStrategy.progressive.maxConcurrency: must be an integer "
        "or a string"),
    Bad("mwrs-progress-deadline", MWRS, (*PROG, "progressDeadline"), "soon",
        "spec.placementRefs[1].rolloutStrategy.progressive.progressDeadline: must match the "
        "pattern ^(([0-9])+[h|m|s])|None$"),
    Bad("mwrs-group-index-string", MWRS, (*PROG, "mandatoryDecisionGroups", 1, "groupIndex"),
        "1", "spec.placementRefs[1].rolloutStrategy.progressive.mandatoryDecisionGroups[1]"
        ".groupIndex: must be an integer"),
    Bad("mwrs-summary-string", MWRS, ("status", "summary", "total"), "3",
        "status.summary.total: must be an integer"),
    Bad("mwrs-template-manifest", MWRS,
        ("spec", "manifestWorkTemplate", "workload", "manifests", 0, "apiVersion"), _DELETE,
        "spec.manifestWorkTemplate.workload.manifests[0]: apiVersion is required"),
    # Placement
    Bad("placement-no-spec", PL, ("spec",), _DELETE, "(root): spec is required"),
    Bad("placement-weight", PL, (*P, "prioritizerPolicy", "configurations", 0, "weight"), 11,
        "spec.prioritizerPolicy.configurations[0].weight: must be less than or equal to 10"),
    Bad("placement-spread-too-many", PL, (*P, "spreadPolicy", "spreadConstraints"),
        [{"topologyKey": f"k{i}", "topologyKeyType": "Label"} for i in range(9)],
        "spec.spreadPolicy.spreadConstraints: must have at most 8 items"),
    Bad("placement-max-skew", PL, (*P, "spreadPolicy", "spreadConstraints", 0, "maxSkew"), 0,
        "spec.spreadPolicy.spreadConstraints[0].maxSkew: must be greater than or equal to 1"),
    Bad("placement-group-name", PL,
        (*P, "decisionStrategy", "groupStrategy", "decisionGroups", 0, "groupName"), "-bad",
        "spec.decisionStrategy.groupStrategy.decisionGroups[0].groupName: must match the "
        "pattern ^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$"),
    Bad("placement-clusters-per-group", PL,
        (*P, "decisionStrategy", "groupStrategy", "clustersPerDecisionGroup"), "0%",
        "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup: must match the pattern "
        "^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$"),
    Bad("placement-toleration-effect", PL, (*P, "tolerations", 0, "effect"), "Evict",
        "spec.tolerations[0].effect: must be 'NoSelect', 'PreferNoSelect' or 'NoSelectIfNew'"),
    Bad("placement-sort-by", PL, (*P, "sortBy"), "Random",
        "spec.sortBy: must be 'ClusterName' or 'Score'"),
    Bad("placement-score-rate", PL, (*P, "scoreRateLimit"), "1d",
        "spec.scoreRateLimit: must match the pattern ^[0-9]+[hms]$"),
    Bad("placement-addon-score", PL,
        (*P, "prioritizerPolicy", "configurations", 1, "scoreCoordinate", "addOn", "scoreName"),
        _DELETE,
        "spec.prioritizerPolicy.configurations[1].scoreCoordinate.addOn: scoreName is "
        "required"),
    Bad("placement-selector-values", PL,
        (*P, "predicates", 0, "requiredClusterSelector", "labelSelector", "matchExpressions",
         0, "values"), "a",
        "spec.predicates[0].requiredClusterSelector.labelSelector.matchExpressions[0].values: "
        "must be an array"),
    # PlacementDecision
    Bad("decision-no-decisions", PD, ("status", "decisions"), _DELETE,
        "status: decisions is required"),
    Bad("decision-no-cluster", PD, ("status", "decisions", 0, "clusterName"), _DELETE,
        "status.decisions[0]: clusterName is required"),
    # ManagedCluster
    Bad("cluster-taint-effect", MC, ("spec", "taints", 0, "effect"), _DELETE,
        "spec.taints[0]: effect is required"),
    Bad("cluster-ca-bundle", MC, ("spec", "managedClusterClientConfigs", 0, "caBundle"),
        "not base64!", "spec.managedClusterClientConfigs[0].caBundle: must be base64-encoded "
        "data"),
    Bad("cluster-quantity", MC, ("status", "capacity", "cpu"), "lots",
        "status.capacity.cpu: must match the pattern " + r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|"
        r"(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"),
    Bad("cluster-namespace-duplicate", MC, ("status", "managedNamespaces"),
        [{"clusterSet": "a", "name": "x"}, {"clusterSet": "a", "name": "x"}],
        "status.managedNamespaces[1]: duplicate entry (clusterSet='a', name='x'); already at "
        "index 0"),
    Bad("cluster-claim-empty", MC, ("status", "clusterClaims", 0, "name"), "",
        "status.clusterClaims[0].name: must be at least 1 character long"),
    Bad("cluster-lease-string", MC, ("spec", "leaseDurationSeconds"), "60",
        "spec.leaseDurationSeconds: must be an integer"),
]  # fmt: skip


def _covers(field: str, problem_path: str) -> bool:
    if not problem_path:  # the object itself
        return True
    return field == problem_path or field.startswith((problem_path + ".", problem_path + "["))


@pytest.mark.parametrize("bad", BAD, ids=lambda b: f"{b.kind}-{b.name}")
def test_bad_input_rejected_everywhere(bad: Bad) -> None:
    obj = bad.build()
    causes = same_outcome(obj)
    assert causes, "the upstream CRD accepts this input"

    with pytest.raises(SchemaValidationError) as err:
        parse_object(obj)
    assert bad.problem in err.value.lines()

    path = bad.problem.split(": ", 1)[0]
    path = "" if path == "(root)" else path
    fields = [c["field"] for c in causes]
    assert any(_covers(f, path) for f in fields), f"CRD fields {fields} vs model path {path}"


def test_bad_cases_have_unique_names() -> None:
    names = [(b.kind, b.name) for b in BAD]
    assert len(names) == len(set(names))


# ---------------------------------------------------------------------------
# Where the model is deliberately more lenient than the API server
# ---------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]


def _unknown_field(obj: dict[str, Any]) -> None:
    obj["spec"]["deleteOption"]["fromNewerHub"] = {"x": 1}


def _null_optional(obj: dict[str, Any]) -> None:
    obj["spec"]["manifestConfigs"][0]["conditionRules"][0]["celExpressions"] = None


@pytest.mark.parametrize("mutate", [_unknown_field, _null_optional])
def test_pruned_input_is_accepted_by_both(mutate: Mutation) -> None:
    """Unknown fields and nulls are dropped by the server and kept by the model."""
    obj = samples.manifest_work()
    mutate(obj)
    assert same_outcome(obj) == []
    assert parse_object(obj).to_wire() == obj
