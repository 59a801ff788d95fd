"""Both charts' values.schema.json: draft-07, and closed to unknown keys at every level."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from tests.charts.rendering import AGENT_CHART, HUB_CHART


def object_schemas(node: Any, path: str = "#") -> list[tuple[str, dict[str, Any]]]:
    """Every ``type: object`` schema in ``node``, with its JSON pointer."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append((path, node))
        for key, child in node.items():
            found += object_schemas(child, f"{path}/{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += object_schemas(child, f"{path}/{index}")
    return found


@pytest.mark.parametrize("chart", [AGENT_CHART, HUB_CHART], ids=lambda p: p.name)
def test_every_object_rejects_unknown_keys(chart: Path) -> None:
    """``additionalProperties`` is false, or a typed schema for maps (labels, quantities)."""
    with helm.Chart.load(chart) as loaded:
        schema = loaded.schema
    assert schema is not None
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    objects = object_schemas(schema)
    assert len(objects) > 10
    loose = [path for path, node in objects if node.get("additionalProperties", True) is True]
    # Only the affinity terms: Kubernetes objects passed through whole, which the
    # API server validates (the kubesim dry run proves the chart's use of them).
    assert loose == ["#/definitions/passthrough"]
    for path, node in objects:
        extra = node.get("additionalProperties")
        assert extra is False or isinstance(extra, dict) or path == "#/definitions/passthrough"
