"""The charts' PrometheusRules and Grafana dashboards, checked with the real promtool.

``promtool`` comes from Debian's ``prometheus`` package (``make setup-debian``).
The rules are rendered from the charts, their ``spec`` (a Prometheus rule file)
written out, and checked with ``promtool check rules``; ``promtool test rules``
runs the unit tests of ``rules_test.yaml`` (each alert fires when it should,
with its labels and annotations, and stays quiet otherwise). The dashboards'
queries are checked the same way, as recording rules, and against the series
docs/metrics.md documents.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.charts.rendering import (
    AGENT_ALL_OPTIONS,
    AGENT_MINIMAL,
    HUB_ALL_OPTIONS,
    MONITORING,
    Rendered,
    Values,
    merged,
    render_agent,
    render_hub,
)
from tests.metrics_reference import METRICS_DOC, documented_series

RULES_TEST = Path(__file__).with_name("rules_test.yaml")
AGENT_RULES = "work-agent-rules.yaml"
HUB_RULES = "hub-controller-rules.yaml"


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the real promtool (installed by the test setup; its absence is a failure)."""
    binary = shutil.which("promtool")
    assert binary, "promtool is missing: run `make setup-debian` (Debian package prometheus)"
    return subprocess.run(
        [binary, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def rule_file(rendered: Rendered) -> dict[str, Any]:
    """The PrometheusRule's spec: a Prometheus rule file."""
    spec: dict[str, Any] = rendered.one("PrometheusRule")["spec"]
    return spec


def write_rules(tmp_path: Path, agent: Values, hub: Values) -> None:
    """The two charts' rules, rendered with these values, as rules_test.yaml names them."""
    (tmp_path / AGENT_RULES).write_text(yaml.safe_dump(rule_file(render_agent(agent))))
    (tmp_path / HUB_RULES).write_text(yaml.safe_dump(rule_file(render_hub(hub))))
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)


def test_rules_are_off_by_default() -> None:
    for rendered in (render_agent(AGENT_MINIMAL), render_hub({})):
        assert rendered.of_kind("PrometheusRule") == []
        assert rendered.of_kind("ConfigMap") == []


def test_promtool_checks_the_rules(tmp_path: Path) -> None:
    for name, agent, hub in (
        ("defaults", merged(AGENT_MINIMAL, MONITORING), MONITORING),
        ("all-options", AGENT_ALL_OPTIONS, HUB_ALL_OPTIONS),
    ):
        write_rules(tmp_path, agent, hub)
        result = promtool("check", "rules", AGENT_RULES, HUB_RULES, cwd=tmp_path)
        assert result.returncode == 0, f"{name}:\n{result.stdout}{result.stderr}"
        assert "SUCCESS: 5 rules found" in result.stdout
        assert "SUCCESS: 2 rules found" in result.stdout


def test_promtool_unit_tests_of_the_rules(tmp_path: Path) -> None:
    write_rules(tmp_path, merged(AGENT_MINIMAL, MONITORING), MONITORING)
    result = promtool("test", "rules", RULES_TEST.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_unit_tests_catch_a_changed_rule(tmp_path: Path) -> None:
    """The unit tests have teeth: a longer ``for`` makes the failing-work test fail."""
    slower = merged(MONITORING, {"prometheusRule": {"for": {"failingToApply": "20m"}}})
    write_rules(tmp_path, merged(AGENT_MINIMAL, slower), MONITORING)
    result = promtool("test", "rules", RULES_TEST.name, cwd=tmp_path)
    assert result.returncode != 0
    assert "WorkAgentManifestWorkFailingToApply" in result.stdout + result.stderr


def test_rule_values_reach_the_rules() -> None:
    spec = rule_file(render_agent(AGENT_ALL_OPTIONS))
    rules = {r["alert"]: r for g in spec["groups"] for r in g["rules"]}
    assert rules["WorkAgentManifestWorkFailingToApply"]["for"] == "5m"
    assert rules["WorkAgentNoLeader"]["for"] == "2m"
    assert rules["WorkAgentConditionRuleWorkersFailing"]["for"] == "1m"
    assert {r["labels"]["severity"] for r in rules.values()} == {"critical"}
    labels = render_agent(AGENT_ALL_OPTIONS).one("PrometheusRule")["metadata"]["labels"]
    assert labels["release"] == "prometheus"
    hub = {
        r["alert"]: r for g in rule_file(render_hub(HUB_ALL_OPTIONS))["groups"] for r in g["rules"]
    }
    assert "< 30 * 86400" in hub["WorkWebhookCertificateExpiresSoon"]["expr"]


def test_the_alerts_are_the_documented_ones() -> None:
    section = METRICS_DOC.read_text().split("## Alerts", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))
    shipped = set()
    for rendered in (render_agent(merged(AGENT_MINIMAL, MONITORING)), render_hub(MONITORING)):
        shipped |= {r["alert"] for g in rule_file(rendered)["groups"] for r in g["rules"]}
    assert shipped == documented


# -- dashboards ---------------------------------------------------------------------------

#: A metric name directly before a selector or a range: ``name{`` or ``name[``.
_SELECTED = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]")
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def dashboard_queries(rendered: Rendered) -> list[str]:
    """Every query of the chart's dashboard ConfigMap (one JSON document)."""
    (configmap,) = rendered.of_kind("ConfigMap")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    ((_, text),) = configmap["data"].items()
    board = json.loads(text)
    return [t["expr"] for panel in board["panels"] for t in panel["targets"]]


def test_dashboards_query_documented_series_with_valid_promql(tmp_path: Path) -> None:
    documented = {row.name for row in documented_series()}
    for name, rendered in (
        ("agent", render_agent(merged(AGENT_MINIMAL, MONITORING))),
        ("hub", render_hub(MONITORING)),
    ):
        queries = dashboard_queries(rendered)
        assert len(queries) >= 8, name
        for query in queries:
            for metric in _SELECTED.findall(query):
                base = metric
                for suffix in _HISTOGRAM_SUFFIXES:
                    if metric.endswith(suffix) and metric.removesuffix(suffix) in documented:
                        base = metric.removesuffix(suffix)
                assert base in documented, f"{name} dashboard: {metric} is not documented"
        # Grafana's variables replaced by values, every query must parse as PromQL.
        rules = {
            "groups": [
                {
                    "name": f"{name}-dashboard",
                    "rules": [
                        {
                            "record": f"dashboard:query{i}",
                            "expr": q.replace("$namespace", "ns").replace("$job", "job"),
                        }
                        for i, q in enumerate(queries)
                    ],
                }
            ]
        }
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(rules))
        result = promtool("check", "rules", f"{name}.yaml", cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
