"""Which rules may read managedFields, and remembered writes that go when the cache catches up."""

from __future__ import annotations

from typing import Any

import pytest

from ocmkit.runtime.recentwrites import RecentWrites
from schemas.work_v1 import ManifestConfigOption
from workagent.controllers.managedfields import (
    cel_reads_managed_fields,
    path_reads_managed_fields,
    reads_managed_fields,
)


@pytest.mark.parametrize(
    ("path", "reads"),
    [
        (".status.readyReplicas", False),
        (".metadata.name", False),
        (".metadata.labels.app", False),
        (".metadata.managedFields[0].manager", True),
        (".metadata.managedFields", True),
        (".metadata", True),  # the whole metadata, as raw JSON
        (".", True),
        ("..manager", True),
        (".metadata.*", True),
        ('.status.conditions[?(@.type=="Ready")].status', True),  # not a plain chain
        (".status[", False),  # does not parse: never evaluated
    ],
)
def test_feedback_paths(path: str, reads: bool) -> None:
    assert path_reads_managed_fields(path) is reads


@pytest.mark.parametrize(
    ("expression", "reads"),
    [
        ("object.status.readyReplicas == object.spec.replicas", False),
        ("object.metadata.labels['app'] == 'web'", False),
        ("has(object.metadata.annotations)", False),
        ("object['status']['phase'] == 'Running'", False),
        ("object.metadata.managedFields.size() > 1", True),
        ("size(object.metadata) > 3", True),
        ("object.metadata[k] == 1", True),
        ("object.all(k, object[k] != null)", True),
        ("dyn(object) != null", True),
        ("object.metadata['managed' + 'Fields'] != null", True),
    ],
)
def test_cel_expressions(expression: str, reads: bool) -> None:
    assert cel_reads_managed_fields(expression) is reads


def option(**fields: Any) -> ManifestConfigOption:
    identifier = {"group": "", "resource": "configmaps", "namespace": "*", "name": "*"}
    return ManifestConfigOption.model_validate({"resourceIdentifier": identifier, **fields})


def test_options() -> None:
    assert not reads_managed_fields(None)
    assert not reads_managed_fields(option(feedbackRules=[{"type": "WellKnownStatus"}]))
    paths = [{"name": "m", "path": ".metadata.managedFields[0].manager"}]
    assert reads_managed_fields(option(feedbackRules=[{"type": "JSONPaths", "jsonPaths": paths}]))
    rule = {"type": "CEL", "condition": "Owned", "celExpressions": ["object.status.x == 1"]}
    assert not reads_managed_fields(option(conditionRules=[rule]))
    message = {**rule, "messageExpression": "string(size(object.metadata.managedFields))"}
    assert reads_managed_fields(option(conditionRules=[message]))
    well_known = {"type": "WellKnownConditions", "condition": "Complete"}
    assert not reads_managed_fields(option(conditionRules=[well_known]))


def test_recent_writes_go_when_the_cache_shows_them() -> None:
    cache: dict[str, dict[str, Any]] = {}
    writes = RecentWrites(cache.get)
    v1 = {"metadata": {"resourceVersion": "1"}}
    v2 = {"metadata": {"resourceVersion": "2"}}
    cache["k"] = v1
    writes.remember("k", v1, v2)
    writes.settle("k")
    assert len(writes) == 1  # the cache is behind: the write is still needed
    assert writes.latest("k", cache["k"]) is v2
    cache["k"] = v2
    writes.settle("k")
    assert len(writes) == 0
    # The informer delivered the write before it was remembered: nothing is kept.
    v3 = {"metadata": {"resourceVersion": "3"}}
    cache["k"] = v3
    writes.remember("k", v2, v3)
    assert len(writes) == 0
    assert writes.latest("k", cache["k"]) is v3
