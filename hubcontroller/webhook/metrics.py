"""Prometheus metrics of the webhook server, on the default registry.

The first four are controller-runtime's webhook series (flags.md §5), label
``webhook`` = the path, so dashboards built for OCM's Go webhook keep
working (a "panic" is an unexpected exception answered with a 500); the
certificate counters are controller-runtime's certwatcher series. The
decision counter and the expiry gauge are ours. Module-level metric objects
are the one kind of global the house style allows.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# prometheus.DefBuckets, as controller-runtime uses for the latency histogram.
_GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUEST_LATENCY = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
    buckets=_GO_DEFAULT_BUCKETS,
)
REQUEST_TOTAL = Counter(
    "controller_runtime_webhook_requests_total",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
)
REQUEST_IN_FLIGHT = Gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Current number of admission requests being served.",
    ["webhook"],
)
PANICS = Counter(
    "controller_runtime_webhook_panics",
    "Total number of webhook panics",
)
DECISIONS = Counter(
    "work_webhook_admission_decisions_total",
    "Admission answers by webhook, operation, verdict and status code "
    "(400 BadRequest and 403 denials, 400/500 for malformed requests and internal errors).",
    ["webhook", "operation", "allowed", "code"],
)
CERT_READS = Counter(
    "certwatcher_read_certificate_total",
    "Total number of certificate reads",
)
CERT_READ_ERRORS = Counter(
    "certwatcher_read_certificate_errors_total",
    "Total number of certificate read errors",
)
CERT_EXPIRY = Gauge(
    "work_webhook_certificate_expiration_timestamp_seconds",
    "Expiry (Unix time) of the serving certificate in use.",
)
