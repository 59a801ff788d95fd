"""The agent process's /metrics and probe endpoint: HTTPS by default, as OCM's agent.

Each agent here is a real ``workagent agent`` process against the test hub and
spoke; the checks (tests/support/serving_endpoint.py) are the hub manager's too.
"""

from __future__ import annotations

from pathlib import Path

from ocmkit.kube import KubeClient
from tests.support.serving_endpoint import (
    AGENT,
    check_bad_tls_settings,
    check_default_https,
    check_given_certificate_tls13_only,
    check_insecure_serving,
)


async def test_default_flags_serve_https_with_a_self_signed_certificate(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    await check_default_https(AGENT, tmp_path)


async def test_given_certificate_is_served_and_tls13_floor_refuses_tls12(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    await check_given_certificate_tls13_only(AGENT, tmp_path)


async def test_insecure_serving_serves_plain_http(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    await check_insecure_serving(AGENT, tmp_path)


async def test_bad_tls_settings_end_the_agent_at_start_with_one_clear_line(
    tmp_path: Path,
) -> None:
    await check_bad_tls_settings(AGENT, tmp_path)
