"""The agent's work-level metric pieces, without a server: reasons, clocks, samples."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from prometheus_client import CollectorRegistry, generate_latest

from ocmkit.kube import MANIFESTWORKS, Forbidden, Invalid, KubeClient, Unreachable
from ocmkit.runtime import Informer
from ocmkit.runtime.metrics import ScrapeGauge
from workagent.apply import IgnoreFieldsError, InvalidManifest, ServerSideApplyConflict
from workagent.controllers.manifests import ManifestError, UnknownResourceType
from workagent.controllers.metrics import (
    TIME_TO_APPLIED,
    AppliedLatency,
    StatusSyncs,
    WorkMetrics,
    failure_reason,
)
from workagent.executor.base import InvalidExecutorError


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def work(name: str, generation: int, *conditions: tuple[str, str, str, int]) -> dict[str, Any]:
    """A cached work with work-level (type, status, reason, observedGeneration) conditions."""
    return {
        "metadata": {"name": name, "namespace": "cluster1", "generation": generation},
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": r, "observedGeneration": g}
                for t, s, r, g in conditions
            ],
            "resourceStatus": {
                "manifests": [
                    {"conditions": [{"type": "Applied", "status": "True", "reason": "Done"}]}
                ]
            },
        },
    }


def test_failure_reasons_are_a_small_fixed_set() -> None:
    cases: list[tuple[Exception, str]] = [
        (UnknownResourceType("no such kind"), "UnknownResourceType"),
        (ManifestError("no name"), "InvalidManifest"),
        (InvalidManifest("stringData and data disagree"), "InvalidManifest"),
        (InvalidExecutorError("no subject"), "InvalidExecutor"),
        (ServerSideApplyConflict("conflict"), "ServerSideApplyConflict"),
        (IgnoreFieldsError("bad path"), "IgnoreFieldsError"),
        (Forbidden(403, "Forbidden", "no"), "Forbidden"),
        (Invalid(422, "Invalid", "bad"), "Invalid"),
        (Unreachable("refused"), "Unreachable"),
        (RuntimeError("a bug"), "Unexpected"),
    ]
    for err, reason in cases:
        assert failure_reason(err) == reason, err


def test_time_to_applied_runs_from_first_sight_of_a_generation() -> None:
    clock = Clock()
    latency = AppliedLatency(clock)
    histogram_count = _histogram_count()
    latency.observe(work("w", 1))
    clock.now += 2.5
    latency.observe(work("w", 1, ("Applied", "False", "Failed", 1)))  # not yet
    clock.now += 1.5
    latency.observe(work("w", 1, ("Applied", "True", "Complete", 1)))
    assert _histogram_count() == histogram_count + 1
    # Seen again applied: nothing more; an already applied generation is never timed.
    latency.observe(work("w", 1, ("Applied", "True", "Complete", 1)))
    latency.observe(work("v", 3, ("Applied", "True", "Complete", 3)))
    # A new generation: Applied=True of the old one does not count.
    latency.observe(work("w", 2, ("Applied", "True", "Complete", 1)))
    clock.now += 1
    latency.observe(work("w", 2, ("Applied", "True", "Complete", 2)))
    assert _histogram_count() == histogram_count + 2
    # Deleted before applied: forgotten.
    latency.observe(work("x", 1))
    latency.forget(work("x", 1))
    latency.observe(work("x", 1, ("Applied", "True", "Complete", 1)))
    assert _histogram_count() == histogram_count + 2


def _histogram_count() -> float:
    for metric in TIME_TO_APPLIED.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count"):
                return float(sample.value)
    raise AssertionError("no _count sample")


def test_status_syncs_age_and_read_modes() -> None:
    clock = Clock()
    syncs = StatusSyncs(clock)
    assert syncs.oldest_age() == 0
    syncs.due("a")
    clock.now += 5
    syncs.due("a")  # still the first attempt's age
    syncs.synced("b", Counter({"watch": 2}))
    assert syncs.oldest_age() == 5
    syncs.synced("a", Counter({"poll": 3, "watch": 1}))
    clock.now += 1
    assert syncs.oldest_age() == 1
    assert syncs.resources() == Counter({"watch": 3, "poll": 3})
    syncs.forget("a")
    assert syncs.resources() == Counter({"watch": 2, "poll": 0})


def test_condition_gauges_with_and_without_work_labels() -> None:
    informer = Informer(cast(KubeClient, None), MANIFESTWORKS)
    informer.store.put("cluster1/a", work("a", 1, ("Applied", "True", "Complete", 1)))
    informer.store.put("cluster1/b", work("b", 1, ("Applied", "True", "Complete", 1)))
    plain = WorkMetrics(informer, StatusSyncs(), 30.0, per_work=False)
    labels = {"condition": "Applied", "status": "True", "reason": "Complete"}
    assert plain.works() == [(labels, 2.0)]
    assert plain.manifests() == [({**labels, "reason": "Done"}, 2.0)]
    per_work = WorkMetrics(informer, StatusSyncs(), 30.0, per_work=True)
    assert per_work.works() == [({**labels, "work": "a"}, 1.0), ({**labels, "work": "b"}, 1.0)]


def test_a_failing_source_costs_only_its_own_family() -> None:
    registry = CollectorRegistry()
    broken = ScrapeGauge("test_broken", "A source that raises.", registry=registry)
    fine = ScrapeGauge("test_fine", "A source that works.", registry=registry)

    def boom() -> list[tuple[dict[str, str], float]]:
        raise RuntimeError("cache gone")

    def ok() -> list[tuple[dict[str, str], float]]:
        return [({"k": "v"}, 3.0)]

    broken.set_source(boom)
    fine.set_source(ok)
    text = generate_latest(registry).decode()
    assert 'test_fine{k="v"} 3.0' in text
    assert "# TYPE test_broken gauge" in text
    fine.clear_source(boom)  # not its source: kept
    assert 'test_fine{k="v"} 3.0' in generate_latest(registry).decode()
    fine.clear_source(ok)
    assert "test_fine{" not in generate_latest(registry).decode()
