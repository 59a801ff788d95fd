"""A real Prometheus scrapes a running agent and evaluates the chart's alerts.

Everything is real: kubesim hub and spoke, the ``workagent agent`` process
serving HTTPS with its self-signed certificate, and Debian's ``prometheus``
server (``make setup-debian``) on a free loopback port with a temporary data
directory, scraping ``/metrics`` every second with ``insecure_skip_verify``
(as the chart's ServiceMonitor does) and evaluating, every second, the rules
rendered from the work-agent chart. The test copy of the rules differs from
the shipped ones only by a value: ``prometheusRule.for.failingToApply=5s``
instead of ``10m`` (rendered by the chart, not edited by hand).

One work succeeds, one fails (its ConfigMap's namespace does not exist).
Prometheus's HTTP API must show the expected values of the work series and
the failing-work alert firing; after the work is fixed, the alert resolves.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from ocmkit.kube import MANIFESTWORKS, KubeClient
from tests.charts.rendering import AGENT_MINIMAL, MONITORING, merged, render_agent
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    update_work,
    wait_applied,
    work_body,
)
from tests.support.processes import free_port
from tests.support.serving_endpoint import AGENT

ALERT = "WorkAgentManifestWorkFailingToApply"
#: The target's namespace label, as a Kubernetes scrape would attach it.
NAMESPACE = "open-cluster-management-agent"


@dataclass
class Prometheus:
    """A running ``prometheus`` process and its HTTP API."""

    process: asyncio.subprocess.Process
    url: str
    log_path: Path

    async def api(self, path: str, **params: str) -> Any:
        """GET an API path; the ``data`` of a successful answer."""
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
            session.get(self.url + path, params=params) as response,
        ):
            body = await response.json()
        assert body["status"] == "success", body
        return body["data"]

    async def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's vector."""
        data = await self.api("/api/v1/query", query=expr)
        result: list[dict[str, Any]] = data["result"]
        return result

    async def alerts(self) -> list[dict[str, Any]]:
        """The active (pending and firing) alerts."""
        data = await self.api("/api/v1/alerts")
        alerts: list[dict[str, Any]] = data["alerts"]
        return alerts

    def log(self) -> str:
        """What the server wrote so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextlib.asynccontextmanager
async def prometheus(
    tmp_path: Path, target: str, rules: dict[str, Any], token: str
) -> AsyncIterator[Prometheus]:
    """Start Prometheus scraping ``target`` over HTTPS with bearer ``token`` (the
    endpoint reviews it with the cluster's API server) and ``rules``; stop it afterwards."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus is missing: run `make setup-debian` (Debian package prometheus)"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
        "rule_files": [str(tmp_path / "rules.yaml")],
        "scrape_configs": [
            {
                "job_name": "work-agent-metrics",
                "scheme": "https",
                "tls_config": {"insecure_skip_verify": True},
                "authorization": {"credentials": token},
                "static_configs": [{"targets": [target], "labels": {"namespace": NAMESPACE}}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log_path = tmp_path / "prometheus.log"
    with log_path.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
        )
    server = Prometheus(process, f"http://127.0.0.1:{port}", log_path)
    try:

        async def ready() -> bool:
            if process.returncode is not None:
                raise AssertionError(f"prometheus exited:\n{server.log()}")
            try:
                async with (
                    aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
                    session.get(server.url + "/-/ready") as response,
                ):
                    return response.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(ready, timeout=60, what="prometheus to be ready")
        yield server
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), timeout=30)
            except TimeoutError:
                process.kill()
                await process.wait()


def scalar(vector: list[dict[str, Any]]) -> float | None:
    """The value of a one-sample vector (None when empty)."""
    if not vector:
        return None
    assert len(vector) == 1, vector
    return float(vector[0]["value"][1])


@pytest.mark.timeout(300)
async def test_prometheus_scrapes_the_agent_and_the_failing_work_alert_fires_and_resolves(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    values = merged(
        merged(AGENT_MINIMAL, MONITORING), {"prometheusRule": {"for": {"failingToApply": "5s"}}}
    )
    rules = render_agent(values).one("PrometheusRule")["spec"]
    agent, host, port, scheme = await AGENT.started(tmp_path, "--status-sync-interval=1s")
    assert scheme == "https"
    try:
        async with prometheus(
            tmp_path, f"{host}:{port}", rules, AGENT.admin_token(tmp_path)
        ) as server:

            async def scraped() -> bool:
                return scalar(await server.query('up{job="work-agent-metrics"}')) == 1

            await eventually(scraped, timeout=60, what="prometheus to scrape the agent")

            await hub_client.create(MANIFESTWORKS, work_body("good", [configmap("ok")]))
            await hub_client.create(MANIFESTWORKS, work_body("bad", [configmap("x", "missing")]))
            await wait_applied(hub_client, "good")
            await wait_applied(hub_client, "bad", status="False")

            applied = 'work_agent_manifestworks{condition="Applied",status="%s"}'
            failures = 'sum(work_agent_manifest_apply_failures_total{reason="NotFound"})'

            async def series() -> bool:
                return (
                    scalar(await server.query(applied % "True")) == 1
                    and scalar(await server.query(applied % "False")) == 1
                    and (scalar(await server.query(failures)) or 0) >= 1
                    and scalar(await server.query("work_agent_status_sync_interval_seconds")) == 1
                )

            await eventually(series, timeout=60, what="the work series in prometheus")
            (sample,) = await server.query(applied % "False")
            assert sample["metric"]["reason"] == "AppliedManifestWorkFailed"
            assert sample["metric"]["namespace"] == NAMESPACE

            firing: list[dict[str, Any]] = []

            async def fires() -> bool:
                firing[:] = [
                    a
                    for a in await server.alerts()
                    if a["labels"]["alertname"] == ALERT and a["state"] == "firing"
                ]
                return bool(firing)

            await eventually(fires, timeout=60, what=f"{ALERT} to fire")
            (alert,) = firing
            assert alert["labels"]["namespace"] == NAMESPACE
            assert alert["labels"]["job"] == "work-agent-metrics"
            assert alert["labels"]["severity"] == "warning"
            assert float(alert["value"]) == 1
            assert (
                "1 ManifestWork(s) reported Applied=False for 5s"
                in (alert["annotations"]["description"])
            )
            # Only the failing work: the other work alerts stay quiet.
            active = {a["labels"]["alertname"] for a in await server.alerts()}
            assert "WorkAgentNoLeader" not in active

            # The fix: the ConfigMap goes to a namespace that exists.
            def fix(work: dict[str, Any]) -> None:
                work["spec"]["workload"]["manifests"] = [configmap("x")]

            await update_work(hub_client, "bad", fix)
            await wait_applied(hub_client, "bad", generation=2)

            async def resolved() -> bool:
                alerts = await server.alerts()
                return not any(a["labels"]["alertname"] == ALERT for a in alerts) and (
                    scalar(await server.query(applied % "True")) == 2
                )

            await eventually(resolved, timeout=60, what=f"{ALERT} to resolve")
            assert await server.query(f'ALERTS{{alertname="{ALERT}"}}') == []
    finally:
        assert await agent.terminate() == 0
