"""The hub manager's /metrics and probe endpoint: HTTPS by default, as OCM's manager.

Each manager here is a real ``hubcontroller manager`` process against a
kubesim hub; the checks (tests/support/serving_endpoint.py) are the agent's
too: both processes build their endpoint with the same ``serving_context``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ocmkit.kube import KubeClient
from tests.support.serving_endpoint import (
    MANAGER,
    check_bad_tls_settings,
    check_default_https,
    check_given_certificate_tls13_only,
    check_insecure_serving,
)

# The subject is the manager's own endpoint; which API server it watches changes nothing.
pytestmark = pytest.mark.kubesim_only(
    "the manager's TLS endpoint is the same against any hub: covered on a real apiserver by "
    "test_manager_process.py (HTTPS probes of a manager process); 4-5 s a test there"
)


async def test_default_flags_serve_https_with_a_self_signed_certificate(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    await check_default_https(MANAGER, tmp_path)


async def test_given_certificate_is_served_and_tls13_floor_refuses_tls12(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    await check_given_certificate_tls13_only(MANAGER, tmp_path)


async def test_insecure_serving_serves_plain_http(hub_client: KubeClient, tmp_path: Path) -> None:
    await check_insecure_serving(MANAGER, tmp_path)


async def test_bad_tls_settings_end_the_manager_at_start_with_one_clear_line(
    tmp_path: Path,
) -> None:
    await check_bad_tls_settings(MANAGER, tmp_path)
