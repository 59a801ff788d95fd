"""Status feedback throughput: evaluations/s of read_feedback for the Deployment
WellKnownStatus rule and for a filter JSONPath, plus JSONPath parse costs.

A benchmark, not a test: it prints figures and never fails on a timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from schemas.work_v1 import FeedbackRule
from workagent.feedback import read_feedback
from workagent.feedback.jsonpath import _compile, compile_path

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "labels": {"app.kubernetes.io/name": "web"},
        "annotations": {"deployment.kubernetes.io/revision": "3"},
    },
    "spec": {"replicas": 3},
    "status": {
        "observedGeneration": 3,
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "conditions": [
            {
                "type": "Progressing",
                "status": "True",
                "reason": "NewReplicaSetAvailable",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            },
            {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            },
        ],
    },
}

WELL_KNOWN = [FeedbackRule.model_validate({"type": "WellKnownStatus"})]
FILTER = [
    FeedbackRule.model_validate(
        {
            "type": "JSONPaths",
            "jsonPaths": [
                {"name": "available", "path": '.status.conditions[?(@.type=="Available")].status'}
            ],
        }
    )
]
FILTER_PATH = '.status.conditions[?(@.type=="Available")].status'


def rate(label: str, call: Callable[[], object], seconds: float = 1.0) -> None:
    """Print calls per second of ``call``: the best of five runs of ``seconds / 5``
    each, so that a busy machine disturbs the figure less."""
    best = float("inf")
    for _ in range(5):
        count = 0
        start = time.perf_counter()
        while True:
            for _ in range(100):
                call()
            count += 100
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / 5:
                break
        best = min(best, elapsed / count)
    print(f"{label:<58} {1 / best:>12,.0f} /s   {best * 1e6:8.2f} µs each")


def main() -> None:
    assert read_feedback(WELL_KNOWN, DEPLOYMENT, raw_json=False, max_json_raw_length=1024).values
    assert read_feedback(FILTER, DEPLOYMENT, raw_json=False, max_json_raw_length=1024).values

    rate(
        "read_feedback, Deployment WellKnownStatus (3 values)",
        lambda: read_feedback(WELL_KNOWN, DEPLOYMENT, raw_json=False, max_json_raw_length=1024),
    )
    rate(
        "read_feedback, JSONPaths filter (1 value)",
        lambda: read_feedback(FILTER, DEPLOYMENT, raw_json=False, max_json_raw_length=1024),
    )
    conditions = [
        FeedbackRule.model_validate(
            {"type": "JSONPaths", "jsonPaths": [{"name": "c", "path": ".status.conditions"}]}
        )
    ]
    rate(
        "read_feedback, JSONPaths .status.conditions as JsonRaw",
        lambda: read_feedback(conditions, DEPLOYMENT, raw_json=True, max_json_raw_length=1024),
    )
    template = compile_path(FILTER_PATH)
    rate(
        "find_results only, filter path (parsed, cached)", lambda: template.find_results(DEPLOYMENT)
    )
    rate("compile_path, cache hit", lambda: compile_path(FILTER_PATH))
    # __wrapped__ bypasses the LRU cache: the cost of a first sight of a path.
    rate("parse without the cache, filter path", lambda: _compile.__wrapped__(FILTER_PATH))
    try:
        from jsonpath_ng.ext.parser import parse as ng_parse
    except ImportError:  # pragma: no cover - jsonpath-ng is a dependency
        return
    rate(
        "for reference: jsonpath_ng.ext.parse of the same filter",
        lambda: ng_parse('$.status.conditions[?(@.type=="Available")].status'),
        seconds=0.5,
    )


if __name__ == "__main__":
    main()
