"""The hub manager's /metrics and probe endpoint: HTTPS by default, as OCM's manager.

Each manager here is a real ``hubcontroller manager`` process against a
kubesim hub; clients connect over real TCP with Python's ``ssl``. The
cluster-manager operator's probes (``httpGet``, ``scheme: HTTPS``, port 8443,
no verification) are what the default must satisfy. The TLS helpers are the
agent's tests' (tests/integration/test_serving_tls.py): both processes build
their endpoint with the same ``serving_context``.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ocmkit.kube import KubeClient
from tests.conftest import eventually
from tests.integration.test_serving_tls import (
    get,
    handshake,
    issue,
    log_records,
    log_records_of,
    plain_http_fails,
    serving_address,
    unverified,
)
from tests.support.processes import ProgramProcess, start_manager_process

# The subject is the manager's own endpoint; which API server it watches changes nothing.
pytestmark = pytest.mark.kubesim_only(
    "the manager's TLS endpoint is the same against any hub: covered on a real apiserver by "
    "test_manager_process.py (HTTPS probes of a manager process); 4-5 s a test there"
)

SERVING = "serving metrics and health probes"
SELF_SIGNED = "Using insecure, self-signed certificates"


def base_args(tmp_path: Path) -> list[str]:
    """A manager on the test hub (GC gate on), its endpoint on a free loopback port."""
    return [
        f"--kubeconfig={tmp_path / 'kubeconfig'}",
        "--feature-gates=CleanUpCompletedManifestWork=true",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
    ]


async def started(tmp_path: Path, *extra: str) -> tuple[ProgramProcess, str, int, str]:
    """A running manager with these extra flags, and where it serves."""
    process = await start_manager_process(tmp_path, *base_args(tmp_path), *extra)
    try:
        host, port, scheme = await serving_address(process)
    except BaseException:
        await process.terminate()
        raise
    return process, host, port, scheme


# -- default: HTTPS with a self-signed certificate --------------------------------------------


async def test_default_flags_serve_https_with_a_self_signed_certificate(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    process, host, port, scheme = await started(tmp_path)
    try:
        assert scheme == "https"
        base = f"https://{host}:{port}"

        async def ready() -> bool:
            return (await get(f"{base}/readyz", unverified()))[0] == 200

        # What the operator's probes do: HTTPS, nothing verified.
        await eventually(ready, timeout=30, what="/readyz over HTTPS to pass")
        status, body = await get(f"{base}/healthz", unverified())
        assert status == 200, body
        assert body.endswith("livez check passed\n")
        status, metrics = await get(f"{base}/metrics", unverified())
        assert status == 200
        assert 'workqueue_adds_total{name="ManifestWorkGarbageCollectionController"}' in metrics

        version, der = await handshake(host, port, unverified())
        assert version == "TLSv1.3"
        cert = x509.load_der_x509_certificate(der)
        assert cert.issuer == cert.subject  # self-signed
        (common_name,) = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        assert str(common_name.value).startswith("work-manager@")
        assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
        # TLS 1.2 is the floor, as library-go's.
        assert (await handshake(host, port, unverified(ssl.TLSVersion.TLSv1_2)))[0] == "TLSv1.2"

        # Nobody can verify this certificate, and plain HTTP gets no answer.
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await get(f"{base}/healthz")
        await plain_http_fails(f"http://{host}:{port}/healthz")
        warnings = [r for r in log_records(process) if r.get("level") == "warning"]
        assert any(r["event"] == SELF_SIGNED for r in warnings)
    finally:
        assert await process.terminate() == 0, process.log()


# -- a given certificate, TLS 1.3 only ----------------------------------------------------------


async def test_given_certificate_is_served_and_tls13_floor_refuses_tls12(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    ca_pem, cert_file, key_file = issue(tmp_path)
    process, host, port, scheme = await started(
        tmp_path,
        f"--tls-cert-file={cert_file}",
        f"--tls-private-key-file={key_file}",
        "--tls-min-version=VersionTLS13",
    )
    try:
        assert scheme == "https"
        verifying = ssl.create_default_context(cadata=ca_pem.decode())
        status, body = await get(f"https://{host}:{port}/healthz", verifying)
        assert status == 200, body
        version, der = await handshake(host, port, verifying)
        assert version == "TLSv1.3"
        assert der == x509.load_pem_x509_certificate(cert_file.read_bytes()).public_bytes(
            serialization.Encoding.DER
        )
        # Refused in the handshake (an alert or a reset, depending on timing).
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            await handshake(host, port, unverified(ssl.TLSVersion.TLSv1_2))
        assert not any(r["event"] == SELF_SIGNED for r in log_records(process))
    finally:
        assert await process.terminate() == 0, process.log()


# -- --insecure-serving -------------------------------------------------------------------------


async def test_insecure_serving_serves_plain_http(hub_client: KubeClient, tmp_path: Path) -> None:
    process, host, port, scheme = await started(tmp_path, "--insecure-serving")
    try:
        assert scheme == "http"
        status, body = await get(f"http://{host}:{port}/healthz")
        assert status == 200, body
        await plain_http_fails(f"https://{host}:{port}/healthz")
        assert not any(r["event"] == SELF_SIGNED for r in log_records(process))
    finally:
        assert await process.terminate() == 0, process.log()


# -- start-up errors ----------------------------------------------------------------------------


async def exit_of(tmp_path: Path, *extra: str) -> tuple[int, str]:
    """Exit code and output of a manager that must not start (no hub needed)."""
    process = await start_manager_process(tmp_path, *base_args(tmp_path), *extra)
    code = await asyncio.wait_for(process.process.wait(), timeout=60)
    return code, process.log()


async def test_bad_tls_settings_end_the_manager_at_start_with_one_clear_line(
    tmp_path: Path,
) -> None:
    code, output = await exit_of(tmp_path, "--tls-min-version=VersionTLS14")
    assert code == 2
    assert output.strip().splitlines() == [
        "hubcontroller: --tls-min-version: unknown tls version 'VersionTLS14' "
        "(one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13)"
    ]

    # A key that is not the certificate's: refused before any client is made.
    _, cert_file, _ = issue(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, _, wrong_key = issue(other)
    code, output = await exit_of(
        tmp_path, f"--tls-cert-file={cert_file}", f"--tls-private-key-file={wrong_key}"
    )
    assert code == 2, output
    (line,) = [r for r in log_records_of(output) if r.get("level") == "error"]
    assert line["event"] == "invalid settings"
    assert str(line["error"]).startswith(
        f"--tls-cert-file/--tls-private-key-file: cannot load {cert_file} with {wrong_key}"
    )
    assert "Traceback" not in output
