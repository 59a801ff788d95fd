"""The objects the demo applies: the user documentation's examples, ready to send.

Each builder returns a fresh dict (callers may change it). The shapes follow
the examples in OCM's ManifestWork and ManifestWorkReplicaSet pages, with the
few changes a three-cluster emulator needs; each change says why.
"""

from __future__ import annotations

import copy
from typing import Any

from schemas.wire import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
)

WORK_API_VERSION = "work.open-cluster-management.io/v1"
REPLICA_SET_API_VERSION = "work.open-cluster-management.io/v1alpha1"
CLUSTER_API_VERSION = "cluster.open-cluster-management.io/v1beta1"

HELLO_WORK = "hello-work-demo"
HELLO_CLUSTER = "cluster1"
JOB_WORK = "pi-job"
JOB_CLUSTER = "cluster2"
#: Short, so that the demo shows the hub deleting the finished work (the docs use 300).
JOB_TTL_SECONDS = 5
#: Where the ManifestWorkReplicaSet and its Placement live on the hub.
REPLICA_SET_NAMESPACE = "demo"
REPLICA_SET = "web-rollout"
PLACEMENT = "demo-placement"
WEB_NAMESPACE = "web"
WEB_REPLICAS = 2


def hello_deployment(
    replicas: int | None = None, name: str = "hello", namespace: str = "default"
) -> dict[str, Any]:
    """The docs' ``hello`` Deployment (busybox saying hello, then sleeping).

    ``replicas`` None leaves the field out (the API server defaults it to 1);
    ``name`` names it and its ``app`` label.
    """
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "containers": [
                    {
                        "name": "hello",
                        "image": "quay.io/asmacdo/busybox",
                        "command": ["sh", "-c", 'echo "Hello, Kubernetes!" && sleep 3600'],
                    }
                ]
            },
        },
    }
    if replicas is not None:
        spec = {"replicas": replicas, **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def hello_feedback_rules() -> list[dict[str, Any]]:
    """The docs' "Fine-grained field values tracking" rules: WellKnownStatus and
    ``isAvailable``, the Deployment's Available condition."""
    available = '.status.conditions[?(@.type=="Available")].status'
    return [
        {"type": "WellKnownStatus"},
        {"type": "JSONPaths", "jsonPaths": [{"name": "isAvailable", "path": available}]},
    ]


def hello_work(replicas: int | None = None) -> dict[str, Any]:
    """``hello-work-demo``: a Deployment with WellKnownStatus and JSONPaths feedback, watched.

    The docs' example, with the feedback rules of "Fine-grained field values
    tracking" and ``feedbackScrapeType: Watch`` of "Feedback scrape types".
    ``replicas`` None leaves the field out (the API server defaults it to 1).
    """
    return {
        "apiVersion": WORK_API_VERSION,
        "kind": "ManifestWork",
        "metadata": {"namespace": HELLO_CLUSTER, "name": HELLO_WORK},
        "spec": {
            "workload": {"manifests": [hello_deployment(replicas)]},
            "manifestConfigs": [
                {
                    "resourceIdentifier": {
                        "group": "apps",
                        "resource": "deployments",
                        "namespace": "default",
                        "name": "hello",
                    },
                    "feedbackScrapeType": "Watch",
                    "feedbackRules": hello_feedback_rules(),
                }
            ],
        },
    }


def job_work() -> dict[str, Any]:
    """``pi-job``: a Job with a WellKnownConditions ``Complete`` rule, deleted after its TTL.

    The docs' ``example-job`` (``manualSelector`` so that the agent never
    fights the API server over a generated selector) plus
    ``deleteOption.ttlSecondsAfterFinished`` from "TTL and Automatic Garbage
    Collection".
    """
    labels = {"job": "pi-calculation"}
    return {
        "apiVersion": WORK_API_VERSION,
        "kind": "ManifestWork",
        "metadata": {"namespace": JOB_CLUSTER, "name": JOB_WORK},
        "spec": {
            "deleteOption": {"ttlSecondsAfterFinished": JOB_TTL_SECONDS},
            "workload": {
                "manifests": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {"name": "pi-calculation", "namespace": "default"},
                        "spec": {
                            "manualSelector": True,
                            "selector": {"matchLabels": dict(labels)},
                            "template": {
                                "metadata": {"labels": dict(labels)},
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "pi",
                                            "image": "perl:5.34.0",
                                            "command": [
                                                "perl",
                                                "-Mbignum=bpi",
                                                "-wle",
                                                "print bpi(2000)",
                                            ],
                                        }
                                    ],
                                    "restartPolicy": "Never",
                                },
                            },
                            "backoffLimit": 4,
                        },
                    }
                ]
            },
            "manifestConfigs": [
                {
                    "resourceIdentifier": {
                        "group": "batch",
                        "resource": "jobs",
                        "namespace": "default",
                        "name": "pi-calculation",
                    },
                    "conditionRules": [{"type": "WellKnownConditions", "condition": "Complete"}],
                }
            ],
        },
    }


def placement() -> dict[str, Any]:
    """The Placement the replica set refers to (no predicates: the demo decides by hand)."""
    return {
        "apiVersion": CLUSTER_API_VERSION,
        "kind": "Placement",
        "metadata": {"namespace": REPLICA_SET_NAMESPACE, "name": PLACEMENT},
        "spec": {},
    }


def placement_decision_name() -> str:
    """The name of the one PlacementDecision (``<placement>-decision-1``, as OCM's scheduler)."""
    return f"{PLACEMENT}-decision-1"


def placement_decision() -> dict[str, Any]:
    """The PlacementDecision, labelled as OCM's scheduler labels it (decision group 0)."""
    return {
        "apiVersion": CLUSTER_API_VERSION,
        "kind": "PlacementDecision",
        "metadata": {
            "namespace": REPLICA_SET_NAMESPACE,
            "name": placement_decision_name(),
            "labels": {
                PLACEMENT_LABEL: PLACEMENT,
                DECISION_GROUP_INDEX_LABEL: "0",
                DECISION_GROUP_NAME_LABEL: "",
            },
        },
    }


def decision_status(clusters: list[str]) -> dict[str, Any]:
    """The PlacementDecision's status: the chosen clusters (the scheduler writes this)."""
    return {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}


def placement_status(clusters: list[str]) -> dict[str, Any]:
    """The Placement's status: how many clusters, in which decision group."""
    return {
        "numberOfSelectedClusters": len(clusters),
        "decisionGroups": [
            {
                "decisionGroupIndex": 0,
                "decisionGroupName": "",
                "decisions": [placement_decision_name()],
                "clusterCount": len(clusters),
            }
        ],
    }


_WEB_DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": WEB_NAMESPACE},
    "spec": {
        "replicas": WEB_REPLICAS,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
        },
    },
}


def replica_set() -> dict[str, Any]:
    """``web-rollout``: a Namespace and a Deployment, rolled out one cluster at a time.

    The docs' ``mwrset-cronjob`` shape (a Namespace plus a workload, feedback
    on the workload, one Placement) with a Deployment instead of the CronJob:
    the emulated clusters run no schedules, so a CronJob's
    ``lastScheduleTime`` would stay empty. ``Progressive`` with
    ``maxConcurrency: 1`` and a short ``minSuccessTime`` makes the rollout
    visible cluster by cluster.
    """
    return {
        "apiVersion": REPLICA_SET_API_VERSION,
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"namespace": REPLICA_SET_NAMESPACE, "name": REPLICA_SET},
        "spec": {
            "placementRefs": [
                {
                    "name": PLACEMENT,
                    "rolloutStrategy": {
                        "type": "Progressive",
                        # A cluster counts as done 2s after its work is available,
                        # so the rollout can be seen going one cluster at a time.
                        "progressive": {"maxConcurrency": 1, "minSuccessTime": "2s"},
                    },
                }
            ],
            "manifestWorkTemplate": {
                "workload": {
                    "manifests": [
                        {
                            "apiVersion": "v1",
                            "kind": "Namespace",
                            "metadata": {"name": WEB_NAMESPACE},
                        },
                        copy.deepcopy(_WEB_DEPLOYMENT),
                    ]
                },
                "manifestConfigs": [
                    {
                        "resourceIdentifier": {
                            "group": "apps",
                            "resource": "deployments",
                            "namespace": WEB_NAMESPACE,
                            "name": "web",
                        },
                        "feedbackRules": [{"type": "WellKnownStatus"}],
                    }
                ],
            },
        },
    }
