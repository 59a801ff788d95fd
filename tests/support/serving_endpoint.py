"""The programs' /metrics and probe endpoint, checked from outside: HTTPS by default, as OCM's.

The agent, the hub manager and the gRPC server build their endpoint with the
same ``serving_context``, so one set of checks serves the three suites
(``tests/integration/test_serving_tls.py``, ``tests/hub_manager/test_serving_tls.py``,
``tests/cloudevents/test_grpc_server_serving.py``);
:class:`ServedProgram` says which program, how it starts and what it serves.
Each check runs the real program as a process and connects over real TCP
with Python's ``ssl``. The operator's probes (``httpGet``, ``scheme: HTTPS``,
port 8443, no verification) are what the default must satisfy.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aiohttp
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.conftest import eventually
from tests.support.processes import (
    ProgramProcess,
    start_agent_process,
    start_grpc_server_process,
    start_manager_process,
)
from tests.support.throwaway_pki import new_key, pem, pem_key, signed_certificate

SERVING = "serving metrics and health probes"
SELF_SIGNED = "Using insecure, self-signed certificates"


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


def unverified(
    maximum: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED,
) -> ssl.SSLContext:
    """A client context that checks no certificate (as kubelet's HTTPS probes)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = maximum
    return ctx


async def get(
    url: str,
    context: ssl.SSLContext | None = None,
    *,
    token: str | None = None,
    method: str = "GET",
) -> tuple[int, str]:
    """GET (or ``method``) ``url``, with ``token`` as bearer token when given; (status, body)."""
    timeout = aiohttp.ClientTimeout(total=10)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.request(
            method, url, ssl=context if context is not None else True, headers=headers
        ) as response,
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


def issue(tmp_path: Path) -> tuple[bytes, Path, Path]:
    """A CA and a serving certificate it signed for 127.0.0.1: (CA PEM, cert file, key file)."""
    ca_key = new_key()
    ca = signed_certificate(
        "test serving CA", ca_key, (x509.BasicConstraints(ca=True, path_length=0), True)
    )
    key = new_key()
    leaf = signed_certificate(
        "work-agent",
        key,
        (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False),
        (x509.BasicConstraints(ca=False, path_length=None), True),
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
        issuer=ca.subject,
        signer=ca_key,
    )
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_file.write_bytes(pem(leaf))
    key_file.write_bytes(pem_key(key))
    return pem(ca), cert_file, key_file


@dataclass(frozen=True)
class ServedProgram:
    """A program with the endpoint: how to start it on the suite's clusters, what it serves."""

    command: str
    start: Callable[..., Awaitable[ProgramProcess]]
    base_args: Callable[[Path], list[str]]
    #: The self-signed certificate's common name is ``<cert_name>@<unix time>``.
    cert_name: str
    #: A sample its /metrics has once its controllers run.
    metric: str
    #: The kubeconfig (in ``tmp_path``) of the API server that reviews the endpoint's
    #: callers: the program's own ``--kubeconfig`` cluster.
    reviewer: str

    def admin_token(self, tmp_path: Path) -> str:
        """The bearer token of ``reviewer``'s kubeconfig (an admin: ``system:masters``)."""
        config = yaml.safe_load((tmp_path / self.reviewer).read_text())
        token = config["users"][0]["user"]["token"]
        assert isinstance(token, str) and token
        return token

    async def started(self, tmp_path: Path, *extra: str) -> tuple[ProgramProcess, str, int, str]:
        """A running process with these extra flags, and (host, port, scheme) it serves."""
        process = await self.start(tmp_path, *self.base_args(tmp_path), *extra)
        try:
            host, port, scheme = await serving_address(process)
        except BaseException:
            await process.terminate()
            raise
        return process, host, port, scheme

    async def exit_of(self, tmp_path: Path, *extra: str) -> tuple[int, str]:
        """Exit code and output of a process that must not start."""
        process = await self.start(tmp_path, *self.base_args(tmp_path), *extra)
        code = await asyncio.wait_for(process.process.wait(), timeout=60)
        return code, process.log()


#: The agent for cluster1 on tests/integration's hub and spoke (kubeconfigs in tmp_path).
AGENT = ServedProgram(
    command="workagent",
    start=start_agent_process,
    base_args=lambda tmp_path: [
        "--spoke-cluster-name=cluster1",
        f"--workload-source-config={tmp_path / 'hub.kubeconfig'}",
        f"--spoke-kubeconfig={tmp_path / 'spoke.kubeconfig'}",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
    ],
    cert_name="work-agent",
    metric="workqueue_adds_total",
    reviewer="spoke.kubeconfig",
)

#: The manager (GC gate on) on tests/hub_manager's hub (``tmp_path/kubeconfig``).
MANAGER = ServedProgram(
    command="hubcontroller",
    start=start_manager_process,
    base_args=lambda tmp_path: [
        f"--kubeconfig={tmp_path / 'kubeconfig'}",
        "--feature-gates=CleanUpCompletedManifestWork=true",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
    ],
    cert_name="work-manager",
    metric='workqueue_adds_total{name="ManifestWorkGarbageCollectionController"}',
    reviewer="kubeconfig",
)


def grpc_server_args(tmp_path: Path) -> list[str]:
    """The gRPC server on tests/cloudevents' hub (``tmp_path/hub.kubeconfig``), serving
    gRPC on a free loopback port with a certificate of its own (in ``tmp_path/grpc``)."""
    folder = tmp_path / "grpc"
    folder.mkdir(exist_ok=True)
    _, cert_file, key_file = issue(folder)
    config = folder / "server-config.yaml"
    config.write_text(
        json.dumps(
            {
                "tls_cert_file": str(cert_file),
                "tls_key_file": str(key_file),
                "client_ca_file": "",
                "server_bind_port": "0",
            }
        )
    )
    return [
        f"--kubeconfig={tmp_path / 'hub.kubeconfig'}",
        f"--server-config={config}",
        "--bind-address=127.0.0.1",
        "--listen=127.0.0.1:0",
    ]


#: ``hubcontroller grpc-server`` (OCM's ``server grpc`` serves HTTPS on --listen too).
GRPC_SERVER = ServedProgram(
    command="hubcontroller",
    start=start_grpc_server_process,
    base_args=grpc_server_args,
    cert_name="grpc-server",
    metric="process_resident_memory_bytes",
    reviewer="hub.kubeconfig",
)


async def check_default_https(program: ServedProgram, tmp_path: Path) -> None:
    """Default flags: HTTPS with a fresh self-signed certificate, TLS 1.2 the floor."""
    process, host, port, scheme = await program.started(tmp_path)
    try:
        assert scheme == "https"
        base = f"https://{host}:{port}"

        async def ready() -> bool:
            return (await get(f"{base}/readyz", unverified()))[0] == 200

        # What the operator's probes do: HTTPS, nothing verified.
        await eventually(ready, timeout=30, what="/readyz over HTTPS to pass")
        assert await get(f"{base}/healthz", unverified()) == (200, "ok")
        status, body = await get(f"{base}/healthz?verbose", unverified())
        assert status == 200, body
        assert body.endswith("healthz check passed\n")
        # /metrics only for callers the API server vouches for, as library-go's
        # delegated authentication; the probes for everyone.
        status, body = await get(f"{base}/metrics", unverified())
        assert (status, json.loads(body)["message"]) == (
            403,
            'forbidden: User "system:anonymous" cannot get path "/metrics"',
        )
        assert (await get(f"{base}/readyz", unverified(), token="not-a-token"))[0] == 401
        status, metrics = await get(
            f"{base}/metrics", unverified(), token=program.admin_token(tmp_path)
        )
        assert status == 200
        assert program.metric in metrics

        version, der = await handshake(host, port, unverified())
        assert version == "TLSv1.3"
        cert = x509.load_der_x509_certificate(der)
        assert cert.issuer == cert.subject  # self-signed
        (common_name,) = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        assert str(common_name.value).startswith(f"{program.cert_name}@")
        key = cert.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey)
        assert key.curve.name == "secp256r1"
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert {"localhost", socket.gethostname()} <= set(names.get_values_for_type(x509.DNSName))
        assert ipaddress.ip_address("127.0.0.1") in names.get_values_for_type(x509.IPAddress)
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert datetime.timedelta(days=365) <= lifetime <= datetime.timedelta(days=366)
        # A TLS 1.2 client (an older Prometheus, say) is served too: 1.2 is the floor, as
        # library-go's.
        version, _ = await handshake(host, port, unverified(ssl.TLSVersion.TLSv1_2))
        assert version == "TLSv1.2"

        # Nobody can verify this certificate, and plain HTTP gets no answer.
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await get(f"{base}/healthz")
        await plain_http_fails(f"http://{host}:{port}/healthz")
        warnings = [r for r in log_records(process) if r.get("level") == "warning"]
        assert any(r["event"] == SELF_SIGNED for r in warnings)
    finally:
        assert await process.terminate() == 0, process.log()


async def check_given_certificate_tls13_only(program: ServedProgram, tmp_path: Path) -> None:
    """A given certificate is served; with the TLS 1.3 floor a TLS 1.2 client is refused."""
    ca_pem, cert_file, key_file = issue(tmp_path)
    process, host, port, scheme = await program.started(
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
        assert not any(r["event"] == SELF_SIGNED for r in log_records(process))
    finally:
        assert await process.terminate() == 0, process.log()


async def check_insecure_serving(program: ServedProgram, tmp_path: Path) -> None:
    """``--insecure-serving``: plain HTTP, no certificate made."""
    process, host, port, scheme = await program.started(tmp_path, "--insecure-serving")
    try:
        assert scheme == "http"
        status, body = await get(f"http://{host}:{port}/healthz")
        assert status == 200, body
        await plain_http_fails(f"https://{host}:{port}/healthz")
        assert not any(r["event"] == SELF_SIGNED for r in log_records(process))
    finally:
        assert await process.terminate() == 0, process.log()


async def check_bad_tls_settings(program: ServedProgram, tmp_path: Path) -> None:
    """Bad TLS flags end the program at start (exit 2) with one clear line, no traceback."""
    code, output = await program.exit_of(tmp_path, "--tls-min-version=VersionTLS14")
    assert code == 2
    assert output.strip().splitlines() == [
        f"{program.command}: --tls-min-version: unknown tls version 'VersionTLS14' "
        "(one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13)"
    ]

    code, output = await program.exit_of(
        tmp_path, "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_999_GCM"
    )
    assert code == 2
    assert "Cipher suite TLS_ECDHE_RSA_WITH_AES_999_GCM not supported" in output

    # A key that is not the certificate's: refused before any client is made.
    _, cert_file, _ = issue(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, _, wrong_key = issue(other)
    code, output = await program.exit_of(
        tmp_path, f"--tls-cert-file={cert_file}", f"--tls-private-key-file={wrong_key}"
    )
    assert code == 2, output
    (line,) = [r for r in log_records_of(output) if r.get("level") == "error"]
    assert line["event"] == "invalid settings"
    assert str(line["error"]).startswith(
        f"--tls-cert-file/--tls-private-key-file: cannot load {cert_file} with {wrong_key}"
    )
    assert "Traceback" not in output
