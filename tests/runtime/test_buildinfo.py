"""library-go's ``<component namespace>_build_info`` series."""

from __future__ import annotations

import platform

import structlog
from prometheus_client import CollectorRegistry

from ocmkit.runtime.buildinfo import LABELS, build_labels, export_build_info


def test_the_series_is_named_after_the_namespace_and_labelled_with_the_version() -> None:
    registry = CollectorRegistry()
    name = export_build_info("open-cluster-management-agent", "work-agent", "1.2.3", registry)
    assert name == "open_cluster_management_agent_build_info"
    labels = build_labels("1.2.3")
    assert set(labels) == set(LABELS)
    assert (labels["major"], labels["minor"], labels["gitVersion"]) == ("1", "2", "v1.2.3")
    assert labels["compiler"] == platform.python_implementation().lower()
    assert labels["platform"].startswith("linux/") and "x86_64" not in labels["platform"]
    assert registry.get_sample_value(name, labels) == 1.0
    # Again (a program restarted in one process): one series, the new version.
    assert export_build_info("open-cluster-management-agent", "work-agent", "2.0", registry)
    samples = [s for m in registry.collect() if m.name == name for s in m.samples]
    assert [(s.labels["gitVersion"], s.value) for s in samples] == [("v2.0", 1.0)]


def test_a_namespace_that_makes_no_metric_name_is_skipped_with_a_warning() -> None:
    registry = CollectorRegistry()
    with structlog.testing.capture_logs() as logs:
        assert export_build_info("1-starts-with-a-digit", "work-agent", "1.0", registry) is None
    assert [e["event"] for e in logs] == [
        "no build_info series: the namespace makes no metric name"
    ]
    assert list(registry.collect()) == []
