"""The agent process's /metrics and probe endpoint: HTTPS by default, as OCM's agent.

Each agent here is a real ``workagent agent`` process against the test hub and
spoke; clients connect over real TCP with Python's ``ssl``. The operator's
probes (``httpGet``, ``scheme: HTTPS``, port 8443, no verification) are what
the default must satisfy.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import socket
import ssl
from pathlib import Path
from typing import Protocol

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ocmkit.kube import KubeClient
from tests.conftest import eventually
from tests.support.processes import ProgramProcess, start_agent_process

SERVING = "serving metrics and health probes"


def base_args(tmp_path: Path) -> list[str]:
    """An agent for cluster1 on the test clusters, its endpoint on a free loopback port."""
    return [
        "--spoke-cluster-name=cluster1",
        f"--workload-source-config={tmp_path / 'hub.kubeconfig'}",
        f"--spoke-kubeconfig={tmp_path / 'spoke.kubeconfig'}",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
    ]


def log_records_of(output: str) -> list[dict[str, object]]:
    """The JSON log records in a process's output (other lines skipped)."""
    records = []
    for line in output.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


class ServingProcess(Protocol):
    """A component process that logs where it serves (the agent's, the manager's)."""

    process: asyncio.subprocess.Process

    def log(self) -> str:
        """What the process wrote so far."""
        ...


def log_records(process: ServingProcess) -> list[dict[str, object]]:
    """The process's JSON log records so far."""
    return log_records_of(process.log())


async def serving_address(process: ServingProcess) -> tuple[str, int, str]:
    """(host, port, scheme) of the endpoint, as the process logs it once listening."""
    found: dict[str, object] = {}

    async def listening() -> bool:
        if process.process.returncode is not None:
            raise AssertionError(f"the process exited:\n{process.log()}")
        for record in log_records(process):
            if record.get("event") == SERVING:
                found.update(record)
                return True
        return False

    await eventually(listening, timeout=60, what="the process to serve its endpoint")
    host, _, port = str(found["address"]).rpartition(":")
    return host, int(port), str(found["scheme"])


async def started(tmp_path: Path, *extra: str) -> tuple[ProgramProcess, str, int, str]:
    """A running agent with these extra flags, and where it serves."""
    process = await start_agent_process(tmp_path, *base_args(tmp_path), *extra)
    try:
        host, port, scheme = await serving_address(process)
    except BaseException:
        await process.terminate()
        raise
    return process, host, port, scheme


def unverified(
    maximum: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED,
) -> ssl.SSLContext:
    """A client context that checks no certificate (as kubelet's HTTPS probes)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = maximum
    return ctx


async def get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    """GET ``url``; (status, body)."""
    timeout = aiohttp.ClientTimeout(total=10)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(url, ssl=context if context is not None else True) as response,
    ):
        return response.status, await response.text()


async def handshake(host: str, port: int, context: ssl.SSLContext) -> tuple[str | None, bytes]:
    """A TLS handshake with the endpoint: (negotiated version, server certificate DER)."""
    _reader, writer = await asyncio.open_connection(host, port, ssl=context)
    try:
        tls = writer.get_extra_info("ssl_object")
        assert isinstance(tls, ssl.SSLObject)
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        return tls.version(), der
    finally:
        writer.close()
        await writer.wait_closed()


async def plain_http_fails(url: str) -> None:
    """A plain-HTTP request (or a TLS one, the other way round) gets no HTTP answer."""
    with pytest.raises(aiohttp.ClientError):
        await get(url, unverified())


# -- default: HTTPS with a self-signed certificate --------------------------------------------


async def test_default_flags_serve_https_with_a_self_signed_certificate(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    process, host, port, scheme = await started(tmp_path)
    try:
        assert scheme == "https"
        status, body = await get(f"https://{host}:{port}/healthz", unverified())
        assert status == 200, body
        assert body.endswith("livez check passed\n")
        status, metrics = await get(f"https://{host}:{port}/metrics", unverified())
        assert status == 200
        assert "workqueue_adds_total" in metrics

        version, der = await handshake(host, port, unverified())
        assert version == "TLSv1.3"
        cert = x509.load_der_x509_certificate(der)
        assert cert.issuer == cert.subject  # self-signed
        key = cert.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey)
        assert key.curve.name == "secp256r1"
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert {"localhost", socket.gethostname()} <= set(names.get_values_for_type(x509.DNSName))
        assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert datetime.timedelta(days=365) <= lifetime <= datetime.timedelta(days=366)
        # A TLS 1.2 client (an older Prometheus, say) is served too: 1.2 is the floor.
        version, _ = await handshake(host, port, unverified(ssl.TLSVersion.TLSv1_2))
        assert version == "TLSv1.2"

        # Nobody can verify this certificate, and plain HTTP gets no answer.
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await get(f"https://{host}:{port}/healthz")
        await plain_http_fails(f"http://{host}:{port}/healthz")
        warnings = [r for r in log_records(process) if r.get("level") == "warning"]
        assert any(r["event"] == "Using insecure, self-signed certificates" for r in warnings)
    finally:
        assert await process.terminate() == 0, process.log()


# -- a given certificate, TLS 1.3 only ----------------------------------------------------------


def issue(tmp_path: Path) -> tuple[bytes, Path, Path]:
    """A CA and a serving certificate it signed for 127.0.0.1: (CA PEM, cert file, key file)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test serving CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "work-agent")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca.public_bytes(serialization.Encoding.PEM), cert_file, key_file


async def test_given_certificate_is_served_and_tls13_floor_refuses_tls12(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
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
        # Refused in the handshake (an alert or a reset, depending on timing) ...
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            await handshake(host, port, unverified(ssl.TLSVersion.TLSv1_2))
        # ... while the endpoint goes on serving TLS 1.3.
        assert (await handshake(host, port, verifying))[0] == "TLSv1.3"
        assert not any(
            r["event"] == "Using insecure, self-signed certificates" for r in log_records(process)
        )
    finally:
        assert await process.terminate() == 0, process.log()


# -- --insecure-serving -------------------------------------------------------------------------


async def test_insecure_serving_serves_plain_http(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    process, host, port, scheme = await started(tmp_path, "--insecure-serving")
    try:
        assert scheme == "http"
        status, body = await get(f"http://{host}:{port}/healthz")
        assert status == 200, body
        await plain_http_fails(f"https://{host}:{port}/healthz")
    finally:
        assert await process.terminate() == 0, process.log()


# -- start-up errors ----------------------------------------------------------------------------


async def exit_of(tmp_path: Path, *extra: str) -> tuple[int, str]:
    """Exit code and output of an agent that must not start."""
    process = await start_agent_process(tmp_path, *base_args(tmp_path), *extra)
    code = await asyncio.wait_for(process.process.wait(), timeout=60)
    return code, process.log()


async def test_bad_tls_settings_end_the_agent_at_start_with_one_clear_line(
    tmp_path: Path,
) -> None:
    code, output = await exit_of(tmp_path, "--tls-min-version=VersionTLS14")
    assert code == 2
    assert output.strip().splitlines() == [
        "workagent: --tls-min-version: unknown tls version 'VersionTLS14' "
        "(one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13)"
    ]

    code, output = await exit_of(tmp_path, "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_999_GCM")
    assert code == 2
    assert "Cipher suite TLS_ECDHE_RSA_WITH_AES_999_GCM not supported" in output

    # A key that is not the certificate's: refused before any connection is made.
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
