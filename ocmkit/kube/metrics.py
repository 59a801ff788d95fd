"""Prometheus metrics of the Kubernetes clients, on the default registry.

``client`` is the client's name (``hub``, ``spoke``); ``verb`` is the API verb
(get, list, watch, create, update, patch, delete); ``code`` is the HTTP status,
or ``<error>`` when no answer arrived (as client-go labels it).
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

REQUESTS = Counter(
    "kube_client_requests",
    "API requests sent by a Kubernetes client, by verb and HTTP status code.",
    ["client", "verb", "code"],
)

REQUEST_DURATION = Histogram(
    "kube_client_request_duration_seconds",
    "Time until the API server answered (for watches: until the stream opened).",
    ["client", "verb"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)

RATE_LIMITER_WAIT = Histogram(
    "kube_client_rate_limiter_wait_seconds",
    "Time requests waited for the client's QPS/burst token bucket.",
    ["client"],
    buckets=(0.0, 0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
