"""The HTTPS server: paths, TLS settings, certificate rotation, probes, metrics, entry point."""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import REGISTRY

from hubcontroller.webhook import (
    CertificateError,
    WebhookServer,
    WebhookSettings,
    run_webhook_server,
)
from hubcontroller.webhook.server import MAX_REQUEST_BYTES
from kubesim.sim import KubeSim
from ocmkit.command import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from schemas import wire
from tests.support.processes import free_port
from tests.webhook.conftest import client_context, local_settings, post, running
from tests.webhook.helpers import (
    MW_PATH,
    MWRS_PATH,
    RecordingAccess,
    ServingCert,
    bad_request,
    errored,
    executor,
    install_cert,
    make_cert,
    manifest_work,
    replica_set,
    review,
)


def _url(server: WebhookServer, path: str = MW_PATH) -> str:
    return f"https://127.0.0.1:{server.port}{path}"


async def test_admission_over_https(certdir: Path, serving_cert: ServingCert) -> None:
    access = RecordingAccess(allow=False)
    ctx = client_context(serving_cert)
    async with running(local_settings(certdir), access) as server:
        status, body = await post(_url(server), review("CREATE", manifest_work(), uid="u1"), ctx)
        assert status == 200
        assert body == {
            "kind": "AdmissionReview",
            "apiVersion": "admission.k8s.io/v1",
            "response": {"uid": "u1", "allowed": True, "status": {"metadata": {}, "code": 200}},
        }
        rev = review("CREATE", manifest_work(executor=executor("ns1", "sa1")), uid="u2")
        status, body = await post(_url(server), rev, ctx)
        assert status == 200
        assert body["response"] == {
            "uid": "u2",
            "allowed": False,
            "status": bad_request(
                "user alice cannot manipulate the Manifestwork with executor ns1/sa1 "
                "in namespace cluster1"
            ),
        }


async def test_replica_set_path_only_with_its_gate(
    certdir: Path, serving_cert: ServingCert
) -> None:
    ctx = client_context(serving_cert)
    rev = review("CREATE", replica_set(), kind="ManifestWorkReplicaSet", version="v1alpha1")
    async with running(local_settings(certdir)) as server:
        status, _ = await post(_url(server, MWRS_PATH), rev, ctx)
        assert status == 404
    gates = frozenset({wire.GATE_MANIFEST_WORK_REPLICA_SET})
    async with running(local_settings(certdir, feature_gates=gates)) as server:
        status, body = await post(_url(server, MWRS_PATH), rev, ctx)
        assert (status, body["response"]["allowed"]) == (200, True)
        # The ManifestWork path validates ManifestWorks only, whatever request.kind says.
        status, body = await post(_url(server, MW_PATH), rev, ctx)
        assert body["response"]["status"]["code"] == 400


async def test_request_level_errors(certdir: Path, serving_cert: ServingCert) -> None:
    ctx = client_context(serving_cert)
    async with running(local_settings(certdir)) as server:
        url = _url(server)
        rev = review("CREATE", manifest_work())
        status, body = await post(url, rev, ctx, content_type="text/plain")
        assert status == 200
        # Refused before a review is decoded: controller-runtime writes no kind or apiVersion.
        assert body == {
            "response": {
                "uid": "",
                "allowed": False,
                "status": errored("contentType=text/plain, expected application/json"),
            }
        }
        # The header is compared as sent, as controller-runtime does: no parameters.
        for sent in ("application/json; charset=utf-8", "Application/JSON"):
            status, body = await post(url, rev, ctx, content_type=sent)
            assert body["response"]["status"] == errored(
                f"contentType={sent}, expected application/json"
            )
        status, body = await post(url, None, ctx, raw=b"")
        assert body == {
            "response": {"uid": "", "allowed": False, "status": errored("request body is empty")}
        }
        status, body = await post(url, None, ctx, raw=b"not json")
        assert body["response"]["status"]["code"] == 400
        assert body["response"]["status"]["message"].startswith(
            "couldn't decode the AdmissionReview"
        )
        assert "kind" not in body and "apiVersion" not in body
        # Too large is told before a wrong content type, with code 413.
        too_large = b"x" * MAX_REQUEST_BYTES  # reaching the limit is too large, as in Go
        status, body = await post(url, None, ctx, raw=too_large, content_type="text/plain")
        assert body == {
            "response": {
                "uid": "",
                "allowed": False,
                "status": errored(
                    f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes", code=413
                ),
            }
        }
        async with aiohttp.ClientSession() as session, session.get(url, ssl=ctx) as resp:
            assert resp.status == 405


async def test_tls_floor(certdir: Path, serving_cert: ServingCert) -> None:
    rev = review("CREATE", manifest_work())
    tls12 = client_context(serving_cert, maximum=ssl.TLSVersion.TLSv1_2)
    async with running(local_settings(certdir)) as server:
        status, _ = await post(_url(server), rev, tls12)  # the default floor is 1.2
        assert status == 200
    async with running(local_settings(certdir, tls_min_version="VersionTLS13")) as server:
        with pytest.raises(aiohttp.ClientError):
            await post(_url(server), rev, tls12)
        status, _ = await post(_url(server), rev, client_context(serving_cert))
        assert status == 200


async def test_cipher_suites(certdir: Path, serving_cert: ServingCert) -> None:
    rev = review("CREATE", manifest_work())
    settings = local_settings(certdir, tls_cipher_suites="TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
    async with running(settings) as server:
        other = client_context(
            serving_cert, maximum=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256"
        )
        with pytest.raises(aiohttp.ClientError):
            await post(_url(server), rev, other)
        chosen = client_context(serving_cert, maximum=ssl.TLSVersion.TLSv1_2)
        assert (await post(_url(server), rev, chosen))[0] == 200
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=chosen)
        try:
            assert writer.get_extra_info("cipher")[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
        finally:
            writer.close()
            await writer.wait_closed()


@pytest.mark.parametrize("atomic", [True, False], ids=["renamed", "rewritten-in-place"])
async def test_certificate_rotation(certdir: Path, serving_cert: ServingCert, atomic: bool) -> None:
    rev = review("CREATE", manifest_work())
    async with running(local_settings(certdir)) as server:
        assert (await post(_url(server), rev, client_context(serving_cert)))[0] == 200
        rotated = make_cert("webhook-b", key_type="rsa")
        install_cert(certdir, rotated, atomic=atomic)
        # The next connection gets the new certificate, without a restart...
        assert (await post(_url(server), rev, client_context(rotated)))[0] == 200
        # ...and the old one is no longer served.
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await post(_url(server), rev, client_context(serving_cert))
        assert server.certificates.reloads == 1


async def test_broken_rotation_keeps_the_current_certificate(
    certdir: Path, serving_cert: ServingCert
) -> None:
    rev = review("CREATE", manifest_work())
    async with running(local_settings(certdir)) as server:
        new = make_cert("webhook-b")
        # Half a rotation: the new certificate with the old key.
        (certdir / "tls.crt").write_bytes(new.cert_pem)
        assert (await post(_url(server), rev, client_context(serving_cert)))[0] == 200
        # Garbage, then missing files: still the old certificate.
        (certdir / "tls.key").write_bytes(b"not a key")
        assert (await post(_url(server), rev, client_context(serving_cert)))[0] == 200
        (certdir / "tls.key").unlink()
        assert (await post(_url(server), rev, client_context(serving_cert)))[0] == 200
        assert server.certificates.reloads == 0
        # The rotation completes: the new certificate is served.
        (certdir / "tls.key").write_bytes(new.key_pem)
        assert (await post(_url(server), rev, client_context(new)))[0] == 200
        assert server.certificates.reloads == 1


async def test_reloader_check_without_connections(certdir: Path) -> None:
    async with running(local_settings(certdir)) as server:
        assert server.certificates.check() is False
        install_cert(certdir, make_cert("webhook-c"))
        assert server.certificates.check() is True
        assert server.certificates.check() is False


async def test_missing_certificate_fails_start(tmp_path: Path) -> None:
    server = WebhookServer(local_settings(tmp_path / "empty"), access=RecordingAccess())
    with pytest.raises(CertificateError, match=r"tls\.crt"):
        await server.start()
    await server.stop()


async def test_unloadable_certificate_fails_start_naming_the_bad_half(certdir: Path) -> None:
    """Not OpenSSL's ``[SSL] PEM lib``: which file is wrong (controller-runtime says as much)."""
    (certdir / "tls.crt").write_bytes(b"garbage\n")
    server = WebhookServer(local_settings(certdir), access=RecordingAccess())
    with pytest.raises(CertificateError, match="holds no readable PEM certificate"):
        await server.start()
    await server.stop()


async def test_health_probes(certdir: Path) -> None:
    server = WebhookServer(local_settings(certdir), access=RecordingAccess())
    async with TestClient(TestServer(server.health_app())) as client:

        async def answer(path: str, method: str = "GET") -> tuple[int, str]:
            async with client.request(method, path) as resp:
                return resp.status, await resp.text()

        # As controller-runtime's: "ok", the lines with ?verbose (by name, ending
        # "healthz check ..." for every probe), any method, each check at its own path.
        assert await answer("/healthz") == (200, "ok")
        assert await answer("/healthz?verbose") == (
            200,
            "[+]healthz-ping ok\nhealthz check passed\n",
        )
        assert await answer("/healthz?verbose&exclude=nothing") == (
            200,
            "[+]healthz-ping ok\n"
            'warn: some health checks cannot be excluded: no matches for "nothing"\n'
            "healthz check passed\n",
        )
        assert await answer("/healthz/healthz-ping", "POST") == (200, "ok")
        assert await answer("/healthz/") == (200, "ok")
        status, body = await answer("/readyz")
        assert status == 500
        assert "[-]webhook failed: reason withheld\nhealthz check failed\n" in body
        assert await answer("/readyz/webhook") == (
            500,
            "internal server error: the webhook server is not serving yet\n",
        )
        await server.start()
        assert await answer("/readyz") == (200, "ok")
        assert await answer("/readyz?verbose=true") == (
            200,
            "[+]readyz-ping ok\n[+]webhook ok\nhealthz check passed\n",
        )
        await server.stop()
        assert await answer("/readyz") == (
            500,
            "[+]readyz-ping ok\n[-]webhook failed: reason withheld\nhealthz check failed\n",
        )
        assert await answer("/readyz/webhook") == (500, "internal server error: shutting down\n")
        # Go's mux for what it does not serve.
        for path in ("/readyz/nothing", "/nothing", "/", "/metrics"):
            assert await answer(path) == (404, "404 page not found\n"), path


async def test_metrics(certdir: Path, serving_cert: ServingCert) -> None:
    labels = {"webhook": MW_PATH, "code": "200"}
    before = REGISTRY.get_sample_value("controller_runtime_webhook_requests_total", labels) or 0.0
    denied = {"webhook": MW_PATH, "operation": "CREATE", "allowed": "false", "code": "400"}
    denied_before = (
        REGISTRY.get_sample_value("work_webhook_admission_decisions_total", denied) or 0.0
    )
    async with running(local_settings(certdir)) as server:
        ctx = client_context(serving_cert)
        await post(_url(server), review("CREATE", manifest_work()), ctx)
        await post(_url(server), review("CREATE", manifest_work([])), ctx)
        async with TestClient(TestServer(server.metrics_app())) as client:
            resp = await client.get("/metrics")
            text = await resp.text()
    assert resp.status == 200
    after = REGISTRY.get_sample_value("controller_runtime_webhook_requests_total", labels)
    assert after == before + 2
    assert REGISTRY.get_sample_value("work_webhook_admission_decisions_total", denied) == (
        denied_before + 1
    )
    for name in (
        "controller_runtime_webhook_requests_total",
        "controller_runtime_webhook_latency_seconds_bucket",
        "controller_runtime_webhook_requests_in_flight",
        "certwatcher_read_certificate_total",
        "work_webhook_certificate_expiration_timestamp_seconds",
    ):
        assert name in text


async def test_run_webhook_server(
    sim: KubeSim, tmp_path: Path, certdir: Path, serving_cert: ServingCert
) -> None:
    settings = local_settings(
        certdir,
        kubeconfig=str(tmp_path / "kubeconfig"),
        health_probe_port=free_port(),
        metrics_port=free_port(),
    )
    stop = asyncio.Event()
    started: asyncio.Future[WebhookServer] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        run_webhook_server(settings, stop=stop, on_started=started.set_result)
    )
    server = await asyncio.wait_for(started, 10)
    try:
        rev = review("CREATE", manifest_work(executor=executor()))
        _, body = await post(_url(server), rev, client_context(serving_cert))
        # kubesim's RBAC grants alice nothing: the SubjectAccessReview went to the hub.
        assert body["response"]["status"]["message"].startswith("user alice cannot manipulate")
        async with aiohttp.ClientSession() as session:
            base = "http://127.0.0.1"
            async with session.get(f"{base}:{settings.health_probe_port}/readyz") as resp:
                assert resp.status == 200
            async with session.get(f"{base}:{settings.metrics_port}/metrics") as resp:
                assert "controller_runtime_webhook_requests_total" in await resp.text()
    finally:
        stop.set()
    assert await asyncio.wait_for(task, 15) == EXIT_OK


async def test_run_webhook_server_failures(sim: KubeSim, tmp_path: Path, certdir: Path) -> None:
    missing = local_settings(certdir, kubeconfig=str(tmp_path / "nope"))
    assert await run_webhook_server(missing) == EXIT_USAGE
    no_cert = local_settings(tmp_path / "empty", kubeconfig=str(tmp_path / "kubeconfig"))
    assert await run_webhook_server(no_cert) == EXIT_FAILURE
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = local_settings(
            certdir,
            kubeconfig=str(tmp_path / "kubeconfig"),
            port=busy.getsockname()[1],
            free_port=False,
        )
        assert await run_webhook_server(taken) == EXIT_FAILURE
    rc4 = local_settings(
        certdir,
        kubeconfig=str(tmp_path / "kubeconfig"),
        tls_cipher_suites="TLS_RSA_WITH_RC4_128_SHA",
    )
    assert await run_webhook_server(rc4) == EXIT_USAGE


def test_settings_defaults_and_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", "/var/tmp/x")
    settings = WebhookSettings()
    assert (settings.port, settings.metrics_port, settings.health_probe_port) == (9443, 8080, 8000)
    assert settings.manifest_limit == 512000
    assert settings.cert_file == Path("/var/tmp/x/k8s-webhook-server/serving-certs/tls.crt")
    assert settings.key_file.name == "tls.key"
    assert WebhookSettings(metrics_port=-1).metrics_enabled is False
    assert WebhookSettings(health_probe_port=0).health_probes_enabled is False
    # controller-runtime's readings: a port not above 0 is its default, 9443; a
    # probe port not above 0 turns the probes off.
    assert [WebhookSettings(port=p).listen_port for p in (0, -1, 8443)] == [9443, 9443, 8443]
    assert WebhookSettings(port=8443, free_port=True).listen_port == 0
    assert WebhookSettings(health_probe_port=-1).health_probes_enabled is False
    bad: list[dict[str, Any]] = [
        {"port": 70000},
        {"health_probe_port": 65536},
        {"manifest_limit": -1},
        {"feature_gates": frozenset({"NoSuchGate"})},
        {"tls_min_version": "VersionTLS14"},
        {"tls_cipher_suites": "TLS_FAKE"},
    ]
    for values in bad:
        with pytest.raises(ValueError):
            WebhookSettings(**values)
    assert (
        WebhookSettings(
            tls_cipher_suites="TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
        )
        .validation_options()
        .manifest_limit
        == 512000
    )


async def _served_common_name(port: int, ca: ServingCert, server_hostname: str) -> str:
    ctx = client_context(ca)
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=ctx, server_hostname=server_hostname
    )
    try:
        cert = writer.get_extra_info("peercert")
        return str(dict(pair[0] for pair in cert["subject"])["commonName"])
    finally:
        writer.close()
        await writer.wait_closed()


async def test_rotation_with_sni(certdir: Path, serving_cert: ServingCert) -> None:
    # The API server names the service (SNI); the handshake hook sees it and swaps all the same.
    async with running(local_settings(certdir)) as server:
        assert await _served_common_name(server.port, serving_cert, "localhost") == "webhook-a"
        rotated = make_cert("webhook-b")
        install_cert(certdir, rotated)
        assert await _served_common_name(server.port, rotated, "localhost") == "webhook-b"
        assert await _served_common_name(server.port, rotated, "127.0.0.1") == "webhook-b"


async def test_hub_client_configuration_order(
    sim: KubeSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hubcontroller.webhook.server import hub_client
    from ocmkit.kube import KubeConfigError

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    client = await hub_client("")  # $KUBECONFIG wins over in-cluster
    async with client:
        assert client.config.host == sim.url
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeConfigError):  # in-cluster, but no service account here
        await hub_client("")
