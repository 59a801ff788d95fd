"""Fixtures for the condition-rule tests: the CEL engine, and live objects as an API
server returns them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from schemas.work_v1 import ConditionRule, ConditionRuleType
from workagent.conditions.celengine import CelEngine


@pytest.fixture(scope="module")
def engine() -> CelEngine:
    """The engine a worker runs, in-process (compiled programs cached per module)."""
    return CelEngine()


_JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "pi",
        "namespace": "default",
        "uid": "5b0e9a4c-2f1e-4f51-9d6b-0d6a4a0f1c11",
        "resourceVersion": "48213",
        "generation": 1,
        "creationTimestamp": "2025-02-20T18:52:58Z",
        "labels": {
            "batch.kubernetes.io/controller-uid": "5b0e9a4c-2f1e-4f51-9d6b-0d6a4a0f1c11",
            "batch.kubernetes.io/job-name": "pi",
            "controller-uid": "5b0e9a4c-2f1e-4f51-9d6b-0d6a4a0f1c11",
            "job-name": "pi",
        },
    },
    "spec": {
        "backoffLimit": 4,
        "completionMode": "NonIndexed",
        "completions": 1,
        "manualSelector": False,
        "parallelism": 1,
        "podReplacementPolicy": "TerminatingOrFailed",
        "selector": {
            "matchLabels": {
                "batch.kubernetes.io/controller-uid": "5b0e9a4c-2f1e-4f51-9d6b-0d6a4a0f1c11"
            }
        },
        "suspend": False,
        "template": {
            "metadata": {"labels": {"job-name": "pi"}},
            "spec": {
                "containers": [
                    {
                        "name": "pi",
                        "image": "perl:5.34.0",
                        "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
                        "imagePullPolicy": "IfNotPresent",
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                    }
                ],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Never",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30,
            },
        },
    },
    "status": {},
}


def job(status: dict[str, Any]) -> dict[str, Any]:
    """A Job with the given status."""
    obj = copy.deepcopy(_JOB)
    obj["status"] = status
    return obj


def job_running() -> dict[str, Any]:
    return job({"active": 1, "ready": 0, "startTime": "2025-02-20T18:52:58Z", "terminating": 0})


#: When the test Job's pods reached their completions, and when it gave up retrying.
_COMPLETED_AT = "2025-02-20T18:53:40Z"
_FAILED_AT = "2025-02-20T18:55:01Z"


def _job_condition(ctype: str, at: str, reason: str, message: str) -> dict[str, Any]:
    """A True Job condition as the Job controller writes it (probed when it turned)."""
    return {
        "lastProbeTime": at,
        "lastTransitionTime": at,
        "message": message,
        "reason": reason,
        "status": "True",
        "type": ctype,
    }


def _completions_reached(ctype: str) -> dict[str, Any]:
    return _job_condition(
        ctype, _COMPLETED_AT, "CompletionsReached", "Reached expected number of succeeded pods"
    )


def _backoff_limit(ctype: str) -> dict[str, Any]:
    return _job_condition(
        ctype, _FAILED_AT, "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    )


def job_complete() -> dict[str, Any]:
    return job(
        {
            "completionTime": _COMPLETED_AT,
            "conditions": [
                _completions_reached("SuccessCriteriaMet"),
                _completions_reached("Complete"),
            ],
            "ready": 0,
            "startTime": "2025-02-20T18:52:58Z",
            "succeeded": 1,
            "terminating": 0,
            "uncountedTerminatedPods": {},
        }
    )


def job_succeeding() -> dict[str, Any]:
    """Success criteria met, but the Job is not Complete yet (pods still terminating)."""
    return job(
        {
            "conditions": [_completions_reached("SuccessCriteriaMet")],
            "ready": 0,
            "startTime": "2025-02-20T18:52:58Z",
            "succeeded": 1,
            "terminating": 1,
        }
    )


def job_failed() -> dict[str, Any]:
    return job(
        {
            "conditions": [_backoff_limit("FailureTarget"), _backoff_limit("Failed")],
            "failed": 5,
            "ready": 0,
            "startTime": "2025-02-20T18:52:58Z",
            "terminating": 0,
        }
    )


def pod(phase: str | None) -> dict[str, Any]:
    """A Pod in ``phase`` (None: a status without a phase)."""
    status: dict[str, Any] = {
        "conditions": [
            {
                "lastProbeTime": None,
                "lastTransitionTime": "2025-02-20T18:52:59Z",
                "status": "True" if phase == "Running" else "False",
                "type": "Ready",
            },
            {
                "lastProbeTime": None,
                "lastTransitionTime": "2025-02-20T18:52:58Z",
                "status": "True",
                "type": "PodScheduled",
            },
        ],
        "hostIP": "172.18.0.2",
        "podIP": "10.244.0.12",
        "qosClass": "BestEffort",
        "startTime": "2025-02-20T18:52:58Z",
    }
    if phase is not None:
        status["phase"] = phase
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "hello",
            "namespace": "default",
            "uid": "0f6b7c9e-8a77-4a43-8a43-3a1a9d5e2b77",
            "resourceVersion": "48300",
            "creationTimestamp": "2025-02-20T18:52:58Z",
        },
        "spec": {
            "containers": [{"name": "hello", "image": "busybox:1.36", "command": ["true"]}],
            "restartPolicy": "Never",
            "nodeName": "kind-control-plane",
        },
        "status": status,
    }


def deployment(ready: int = 1, replicas: int = 2) -> dict[str, Any]:
    """OCM's reader test Deployment."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "test", "namespace": "default", "generation": 3},
        "spec": {"replicas": replicas},
        "status": {
            "readyReplicas": ready,
            "replicas": replicas,
            "observedGeneration": 3,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    }


def cel(
    condition: str, *expressions: str, message: str = "", message_expression: str = ""
) -> ConditionRule:
    """A CEL condition rule."""
    return ConditionRule(
        condition=condition,
        type=ConditionRuleType.CEL,
        cel_expressions=list(expressions),
        message=message,
        message_expression=message_expression,
    )


def well_known(
    condition: str = "Complete", *, message: str = "", message_expression: str = ""
) -> ConditionRule:
    """A WellKnownConditions rule."""
    return ConditionRule(
        condition=condition,
        type=ConditionRuleType.WELL_KNOWN_CONDITIONS,
        message=message,
        message_expression=message_expression,
    )
