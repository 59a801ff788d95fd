"""What holds of both charts: metadata, CRD copies, lint, a closed values schema, pod
security, names that stay valid and the program's serving options. Each test runs once
per chart (and value set)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from tests.charts.rendering import (
    AGENT,
    HUB,
    LONG_RELEASE,
    Chart,
    args_of,
    container,
    lint_findings,
)

CHARTS = pytest.mark.parametrize("chart", [AGENT, HUB], ids=lambda c: c.name)
#: (chart, value set name) for every value set of each chart.
VALUE_SETS = pytest.mark.parametrize(
    ("chart", "value_set"),
    [(chart, name) for chart in (AGENT, HUB) for name in sorted(chart.value_sets)],
    ids=lambda v: v.name if isinstance(v, Chart) else str(v),
)


@CHARTS
def test_chart_metadata(chart: Chart) -> None:
    with helm.Chart.load(chart.path) as loaded:
        assert loaded.metadata["name"] == chart.name
        # The image runs this distribution: keep the chart's appVersion in step with it.
        assert loaded.metadata["appVersion"] == metadata.version("ocm-work")
        assert loaded.schema is not None


@CHARTS
def test_crds_are_byte_identical_copies_of_the_generated_ones(chart: Chart) -> None:
    """Helm installs crds/ verbatim; the copies must not drift from charts/crds/."""
    chart_crds = sorted((chart.path / "crds").iterdir())
    assert [p.name for p in chart_crds] == list(chart.crds)
    for path in chart_crds:
        source = chart.path.parent / "crds" / path.name
        assert path.read_bytes() == source.read_bytes(), f"copy {source} to {path}"
    with helm.Chart.load(chart.path) as loaded:
        # What Helm will install: exactly those files.
        files = {c["filename"]: c["data"] for c in loaded.crds}
    assert files == {f"{chart.name}/crds/{p.name}": p.read_text() for p in chart_crds}


@VALUE_SETS
def test_strict_lint_is_clean(chart: Chart, value_set: str) -> None:
    assert lint_findings(chart.path, chart.value_sets[value_set], namespace=chart.namespace) == []


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


@CHARTS
def test_every_object_rejects_unknown_keys(chart: Chart) -> None:
    """``additionalProperties`` is false, or a typed schema for maps (labels, quantities)."""
    with helm.Chart.load(chart.path) as loaded:
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


@VALUE_SETS
def test_pods_meet_the_restricted_pod_security_standard(chart: Chart, value_set: str) -> None:
    values = chart.value_sets[value_set]
    user = values.get("securityContext", {}).get("runAsUser", 65532)
    deployments = chart.render(values).of_kind("Deployment")
    assert len(deployments) == chart.deployments
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == user
        assert isinstance(pod["securityContext"]["runAsGroup"], int)
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
        for box in pod["containers"]:
            context = box["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert "privileged" not in context
            # A read-only root filesystem needs somewhere to write temporary files.
            assert {"name": "tmp", "mountPath": "/tmp"} in box["volumeMounts"]
            assert box["resources"]["requests"]
        assert {v["name"] for v in pod["volumes"] if "emptyDir" in v} == {"tmp"}
        assert all("hostPath" not in v for v in pod["volumes"])


@CHARTS
def test_names_stay_valid_for_the_longest_release_name(chart: Chart) -> None:
    assert len(LONG_RELEASE) == 53
    rendered = chart.render(chart.minimal, release=LONG_RELEASE)
    for obj in rendered.objects:
        name = obj["metadata"]["name"]
        # Services are DNS-1035 labels; 63 characters is also the label value limit.
        limit = 63 if obj["kind"] in ("Service", "Deployment") else 253
        assert len(name) <= limit, (obj["kind"], name)
        assert not name.endswith("-"), name
    for deployment in rendered.of_kind("Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert all(len(value) <= 63 for value in labels.values())


@CHARTS
def test_plain_http_passes_insecure_serving(chart: Chart, tmp_path: Path) -> None:
    plain = chart.value_sets["plain-http"]
    assert "--insecure-serving" in args_of(chart.deployment(plain))
    assert "--insecure-serving" not in args_of(chart.deployment(chart.minimal))
    assert chart.command(plain, tmp_path).settings.insecure_serving


@CHARTS
def test_serving_certificate_secret_is_mounted_read_only(chart: Chart) -> None:
    deployment = chart.deployment(chart.value_sets["all-options"])
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "serving-cert", "secret": {"secretName": chart.serving_cert_secret}} in pod[
        "volumes"
    ]
    assert {
        "name": "serving-cert",
        "mountPath": chart.serving_cert_dir,
        "readOnly": True,
    } in container(deployment)["volumeMounts"]
    minimal = chart.deployment(chart.minimal)["spec"]["template"]["spec"]
    assert "serving-cert" not in {v["name"] for v in minimal["volumes"]}
