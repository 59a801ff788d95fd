"""The gRPC server's /metrics and probe endpoint: HTTPS by default, as OCM's ``server grpc``.

OCM's operator probes its gRPC server with ``scheme: HTTPS`` on port 8443, as
it does the manager; ours serves alike. Each server here is a real
``hubcontroller grpc-server`` process against a kubesim hub; the checks are the
agent's and the manager's (tests/support/serving_endpoint.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ocmkit.kube import KubeClient
from tests.support.serving_endpoint import (
    GRPC_SERVER,
    check_bad_tls_settings,
    check_default_https,
    check_given_certificate_tls13_only,
    check_insecure_serving,
)

pytestmark = pytest.mark.kubesim_only(
    "the endpoint is the same against any hub; tests/peers/test_grpc_server_side_by_side.py "
    "probes ours and OCM's on a real apiserver"
)


async def test_default_flags_serve_https_with_a_self_signed_certificate(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    await check_default_https(GRPC_SERVER, tmp_path)


async def test_given_certificate_is_served_and_tls13_floor_refuses_tls12(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    await check_given_certificate_tls13_only(GRPC_SERVER, tmp_path)


async def test_insecure_serving_serves_plain_http(hub_client: KubeClient, tmp_path: Path) -> None:
    await check_insecure_serving(GRPC_SERVER, tmp_path)


async def test_bad_tls_settings_end_the_server_at_start_with_one_clear_line(
    tmp_path: Path,
) -> None:
    await check_bad_tls_settings(GRPC_SERVER, tmp_path)
