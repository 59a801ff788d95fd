"""Prometheus metrics of the Kubernetes clients, on the default registry.

Ours (``kube_client_*``): ``client`` is the client's name (``hub``,
``spoke``); ``verb`` is the API verb (get, list, watch, create, update,
patch, delete); ``code`` is the HTTP status, or ``<error>`` when no answer
arrived (as client-go labels it).

client-go's (``rest_client_*``), with its names, labels and buckets, so that
dashboards and alerts written for OCM's Go programs work unchanged: ``host``
is the API server's ``host:port``, ``method``/``verb`` the HTTP method. As in
client-go, a watch counts in ``rest_client_requests_total`` only.
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


_REST_SECONDS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
_REST_BYTES = (64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)

REST_REQUESTS = Counter(
    "rest_client_requests",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
)
REST_REQUEST_DURATION = Histogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_REST_SECONDS,
)
REST_RATE_LIMITER_DURATION = Histogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_REST_SECONDS,
)
REST_REQUEST_SIZE = Histogram(
    "rest_client_request_size_bytes",
    "Request size in bytes. Broken down by verb and host.",
    ["verb", "host"],
    buckets=_REST_BYTES,
)
REST_RESPONSE_SIZE = Histogram(
    "rest_client_response_size_bytes",
    "Response size in bytes. Broken down by verb and host.",
    ["verb", "host"],
    buckets=_REST_BYTES,
)
REST_RETRIES = Counter(
    "rest_client_request_retries",
    "Number of request retries, partitioned by status code, verb, and host.",
    ["code", "verb", "host"],
)
