"""The gRPC server's /metrics and probe endpoint: HTTPS by default, as OCM's ``server grpc``.

OCM's operator probes its gRPC server with ``scheme: HTTPS`` on port 8443, as
it does the manager; ours serves alike. Each server here is a real
``hubcontroller grpc-server`` process against a kubesim hub; the checks are the
agent's and the manager's (tests/support/serving_endpoint.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from hubcontroller.grpcserver.config import DEFAULT_CLIENT_CA_FILE
from ocmkit.kube import KubeClient
from tests.support.processes import start_grpc_server_process
from tests.support.serving_endpoint import (
    GRPC_SERVER,
    check_bad_tls_settings,
    check_default_https,
    check_given_certificate_tls13_only,
    check_insecure_serving,
    grpc_server_args,
    issue,
    log_records_of,
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


async def exit_with_config(tmp_path: Path, name: str, config: dict[str, Any]) -> tuple[int, str]:
    """Exit code and output of the server with this ``--server-config`` (in ``tmp_path/name``)."""
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "server-config.yaml"
    path.write_text(json.dumps(config))
    args = [a for a in grpc_server_args(tmp_path) if not a.startswith("--server-config=")]
    process = await start_grpc_server_process(
        # Plain HTTP for the endpoint: its self-signed certificate's warning is not at stake.
        folder,
        *args,
        f"--server-config={path}",
        "--insecure-serving",
    )
    code = await asyncio.wait_for(process.process.wait(), timeout=60)
    return code, process.log()


async def test_unusable_grpc_files_or_port_end_the_server_with_one_clear_line(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    # As OCM's server ("failed to create certificate watcher", "failed to listen"):
    # the process ends before serving, exit code 1, one line naming the file or port.
    grpc_server_args(tmp_path)  # a good pair in tmp_path/grpc, as the other tests use
    good = json.loads((tmp_path / "grpc" / "server-config.yaml").read_text())
    cert = good["tls_cert_file"]
    other = tmp_path / "other"
    other.mkdir()
    _, _, wrong_key = issue(other)
    no_ca_key = {k: v for k, v in good.items() if k != "client_ca_file"}
    missing = "[Errno 2] No such file or directory"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        busy_port = busy.getsockname()[1]
        cases: dict[str, tuple[dict[str, Any], str]] = {
            "cert": (
                {**good, "tls_cert_file": "/nonexistent.crt"},
                f"cannot load the gRPC serving certificate: {missing}: '/nonexistent.crt'",
            ),
            "key": (
                {**good, "tls_key_file": "/nonexistent.key"},
                f"cannot load the gRPC serving certificate: {missing}: '/nonexistent.key'",
            ),
            "ca": (
                {**good, "client_ca_file": "/nonexistent-ca.crt"},
                f"cannot load the gRPC client CA: {missing}: '/nonexistent-ca.crt'",
            ),
            "default-ca": (
                no_ca_key,
                f"cannot load the gRPC client CA: {missing}: '{DEFAULT_CLIENT_CA_FILE}'",
            ),
            # gRPC core would report this one as a failure to bind a free port.
            "mismatch": (
                {**good, "tls_key_file": str(wrong_key)},
                f"cannot load the gRPC serving certificate: {wrong_key} is not the key of "
                f"{cert}: private key does not match public key",
            ),
            "busy": (
                {**good, "server_bind_port": str(busy_port)},
                f"cannot listen on 127.0.0.1:{busy_port}: address already in use",
            ),
        }
        results = await asyncio.gather(
            *(exit_with_config(tmp_path, name, config) for name, (config, _) in cases.items())
        )
    for (name, (_, message)), (code, output) in zip(cases.items(), results, strict=True):
        assert code == 1, (name, output)
        (line,) = output.strip().splitlines()  # nothing else: no traceback, no "stopped"
        (record,) = log_records_of(line)
        assert (record["event"], record["level"], record["error"]) == (
            "cannot serve gRPC",
            "error",
            message,
        ), name
