"""Hand-made valid objects that use every field of every kind.

Each function returns a fresh dict, so tests may mutate it.
"""

from __future__ import annotations

from typing import Any

from tests.support.manifests import configmap

T0 = "2024-05-06T07:08:09Z"


def condition(type_: str = "Applied", reason: str = "AppliedManifestComplete") -> dict[str, Any]:
    """A valid metav1.Condition."""
    return {
        "lastTransitionTime": T0,
        "message": "Apply manifest complete",
        "observedGeneration": 3,
        "reason": reason,
        "status": "True",
        "type": type_,
    }


def manifest_work_spec() -> dict[str, Any]:
    """A ManifestWork spec using every field."""
    return {
        "workload": {
            "manifests": [
                configmap("cm", a="b"),
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "hello", "namespace": "default"},
                    "spec": {"replicas": 2},
                },
            ]
        },
        "deleteOption": {
            "propagationPolicy": "SelectivelyOrphan",
            "selectivelyOrphans": {
                "orphaningRules": [
                    {"group": "", "resource": "configmaps", "namespace": "default", "name": "cm"}
                ]
            },
            "ttlSecondsAfterFinished": 300,
        },
        "manifestConfigs": [
            {
                "resourceIdentifier": {
                    "group": "apps",
                    "resource": "deployments",
                    "namespace": "default",
                    "name": "hello",
                },
                "feedbackRules": [
                    {"type": "WellKnownStatus"},
                    {
                        "type": "JSONPaths",
                        "jsonPaths": [
                            {"name": "ready", "path": ".status.readyReplicas"},
                            {"name": "avail", "version": "v1", "path": ".status.available"},
                        ],
                    },
                ],
                "updateStrategy": {
                    "type": "ServerSideApply",
                    "serverSideApply": {
                        "force": True,
                        "fieldManager": "work-agent-x",
                        "ignoreFields": [
                            {
                                "condition": "OnSpokeChange",
                                "jsonPaths": [".spec.replicas"],
                                "jsonPointers": ["/spec/replicas"],
                                "jqPathExpressions": [".spec.replicas"],
                            }
                        ],
                    },
                },
                "conditionRules": [
                    {"condition": "Complete", "type": "WellKnownConditions"},
                    {
                        "condition": "Ready",
                        "type": "CEL",
                        "celExpressions": ["object.status.readyReplicas > 0"],
                        "message": "ready",
                        "messageExpression": "result ? 'yes' : 'no'",
                    },
                ],
                "feedbackScrapeType": "Watch",
            }
        ],
        "executor": {
            "subject": {
                "type": "ServiceAccount",
                "serviceAccount": {"namespace": "default", "name": "executor1"},
            }
        },
    }


def manifest_work() -> dict[str, Any]:
    """A ManifestWork with spec and status."""
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {
            "name": "demo",
            "namespace": "cluster1",
            "uid": "0b6c9bd2-7b1f-4bd8-9a3e-1f7f0c0b8f00",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": T0,
            "labels": {"app.kubernetes.io/name": "demo"},
            "annotations": {"logging.open-cluster-management.io/trace": "1"},
            "finalizers": ["cluster.open-cluster-management.io/manifest-work-cleanup"],
        },
        "spec": manifest_work_spec(),
        "status": {
            "conditions": [
                condition("Applied", "AppliedManifestWorkComplete"),
                condition("Available", "ResourcesAvailable"),
            ],
            "resourceStatus": {
                "manifests": [
                    {
                        "resourceMeta": {
                            "ordinal": 1,
                            "group": "apps",
                            "version": "v1",
                            "kind": "Deployment",
                            "resource": "deployments",
                            "name": "hello",
                            "namespace": "default",
                        },
                        "statusFeedback": {
                            "values": [
                                {"name": "ready", "fieldValue": {"type": "Integer", "integer": 2}},
                                {"name": "s", "fieldValue": {"type": "String", "string": "x"}},
                                {"name": "b", "fieldValue": {"type": "Boolean", "boolean": False}},
                                {"name": "j", "fieldValue": {"type": "JsonRaw", "jsonRaw": "{}"}},
                            ]
                        },
                        "conditions": [condition()],
                    }
                ]
            },
        },
    }


def applied_manifest_work() -> dict[str, Any]:
    """An AppliedManifestWork with status."""
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "AppliedManifestWork",
        "metadata": {"name": "a" * 64 + "-demo"},
        "spec": {"hubHash": "a" * 64, "agentID": "agent-1", "manifestWorkName": "demo"},
        "status": {
            "appliedResources": [
                {
                    "group": "apps",
                    "version": "v1",
                    "resource": "deployments",
                    "namespace": "default",
                    "name": "hello",
                    "uid": "1234",
                }
            ],
            "evictionStartTime": T0,
        },
    }


def manifest_work_replica_set() -> dict[str, Any]:
    """A ManifestWorkReplicaSet with all three rollout types and status."""
    summary = {
        "total": 3,
        "progressing": 0,
        "available": 3,
        "degraded": 0,
        "applied": 3,
        "desiredTotal": 3,
        "updated": 3,
    }
    return {
        "apiVersion": "work.open-cluster-management.io/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "mwrs", "namespace": "ocm-ns"},
        "spec": {
            "manifestWorkTemplate": manifest_work_spec(),
            "placementRefs": [
                {"name": "all", "rolloutStrategy": {"type": "All", "all": {"maxFailures": 0}}},
                {
                    "name": "progressive",
                    "rolloutStrategy": {
                        "type": "Progressive",
                        "progressive": {
                            "minSuccessTime": "5m",
                            "progressDeadline": "10m",
                            "maxFailures": "5%",
                            "maxConcurrency": 2,
                            "mandatoryDecisionGroups": [
                                {"groupName": "canary"},
                                {"groupIndex": 1},
                            ],
                        },
                    },
                },
                {
                    "name": "per-group",
                    "rolloutStrategy": {
                        "type": "ProgressivePerGroup",
                        "progressivePerGroup": {"progressDeadline": "None", "maxFailures": 2},
                    },
                },
                {"name": "defaulted"},
            ],
            "cascadeDeletionPolicy": "Foreground",
        },
        "status": {
            "conditions": [condition("PlacementVerified", "AsExpected")],
            "summary": summary,
            "placementSummary": [
                {
                    "name": "all",
                    "availableDecisionGroups": "1 (3 / 3 clusters applied)",
                    "summary": dict(summary),
                }
            ],
        },
    }


def placement() -> dict[str, Any]:
    """A Placement using every field."""
    selector = {
        "labelSelector": {
            "matchLabels": {"env": "prod"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
        },
        "claimSelector": {"matchExpressions": [{"key": "region", "operator": "Exists"}]},
    }
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "placement", "namespace": "ocm-ns"},
        "spec": {
            "clusterSets": ["default"],
            "numberOfClusters": 3,
            "predicates": [
                {
                    "requiredClusterSelector": {
                        **selector,
                        "celSelector": {"celExpressions": ["managedCluster.metadata.name != ''"]},
                    }
                }
            ],
            "prioritizerPolicy": {
                "mode": "Exact",
                "configurations": [
                    {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"}, "weight": 2},
                    {
                        "scoreCoordinate": {
                            "type": "AddOn",
                            "addOn": {"resourceName": "score", "scoreName": "cpu"},
                        },
                        "weight": -1,
                    },
                ],
            },
            "spreadPolicy": {
                "spreadConstraints": [
                    {
                        "topologyKey": "topology.kubernetes.io/zone",
                        "topologyKeyType": "Label",
                        "maxSkew": 2,
                        "whenUnsatisfiable": "DoNotSchedule",
                    }
                ]
            },
            "tolerations": [
                {
                    "key": "cluster.open-cluster-management.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoSelect",
                    "tolerationSeconds": 60,
                },
                {"key": "gpu", "value": "true"},
            ],
            "decisionStrategy": {
                "groupStrategy": {
                    "decisionGroups": [
                        {"groupName": "canary", "groupClusterSelector": selector},
                    ],
                    "clustersPerDecisionGroup": "25%",
                }
            },
            "scoreRateLimit": "30s",
            "sortBy": "Score",
        },
        "status": {
            "numberOfSelectedClusters": 3,
            "decisionGroups": [
                {
                    "decisionGroupIndex": 0,
                    "decisionGroupName": "canary",
                    "decisions": ["placement-decision-1"],
                    "clusterCount": 3,
                }
            ],
            "conditions": [condition("PlacementSatisfied", "AllDecisionsScheduled")],
            "lastScoreUpdateTime": T0,
        },
    }


def placement_decision() -> dict[str, Any]:
    """A PlacementDecision with the labels the hub reads."""
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {
            "name": "placement-decision-1",
            "namespace": "ocm-ns",
            "labels": {
                "cluster.open-cluster-management.io/placement": "placement",
                "cluster.open-cluster-management.io/decision-group-index": "0",
                "cluster.open-cluster-management.io/decision-group-name": "canary",
            },
        },
        "status": {
            "decisions": [
                {"clusterName": "cluster1", "reason": "", "score": 10},
                {"clusterName": "cluster2", "reason": "picked"},
            ]
        },
    }


def managed_cluster() -> dict[str, Any]:
    """A ManagedCluster using every field."""
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "cluster1", "labels": {"cloud": "Amazon"}},
        "spec": {
            "hubAcceptsClient": True,
            "leaseDurationSeconds": 60,
            "managedClusterClientConfigs": [
                {"url": "https://cluster1.example.com:6443", "caBundle": "Y2EtZGF0YQ=="}
            ],
            "taints": [
                {
                    "key": "cluster.open-cluster-management.io/unavailable",
                    "value": "",
                    "effect": "NoSelect",
                    "timeAdded": T0,
                },
                {"key": "gpu", "effect": "PreferNoSelect", "timeAdded": None},
            ],
        },
        "status": {
            "conditions": [condition("ManagedClusterJoined", "ManagedClusterJoined")],
            "capacity": {"cpu": 8, "memory": "32Gi"},
            "allocatable": {"cpu": "7500m", "memory": "30Gi"},
            "version": {"kubernetes": "v1.30.0"},
            "clusterClaims": [{"name": "id.k8s.io", "value": "cluster1"}],
            "managedNamespaces": [
                {
                    "clusterSet": "default",
                    "name": "app-ns",
                    "conditions": [condition("NamespaceAvailable", "NamespaceReady")],
                }
            ],
        },
    }


#: Every sample, by kind.
ALL = {
    "ManifestWork": manifest_work,
    "AppliedManifestWork": applied_manifest_work,
    "ManifestWorkReplicaSet": manifest_work_replica_set,
    "Placement": placement,
    "PlacementDecision": placement_decision,
    "ManagedCluster": managed_cluster,
}
