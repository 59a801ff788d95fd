"""Typed errors: every mapping from real kubesim answers, faults and transport failures."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from kubesim.sim import KubeSim
from ocmkit.kube import (
    CONFIGMAPS,
    NAMESPACES,
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeClient,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    Unreachable,
)
from ocmkit.kube.client import MAX_RETRIES
from ocmkit.kube.config import ClusterConfig
from ocmkit.kube.credentials import StaticCredentials
from ocmkit.kube.errors import error_from_status
from tests.kube.helpers import NS, FakeServer, cm, sample


async def test_not_found_already_exists_conflict_invalid_bad_request(client: KubeClient) -> None:
    with pytest.raises(NotFound) as nf:
        await client.get(CONFIGMAPS, "nope", NS)
    assert (nf.value.code, nf.value.reason) == (404, "NotFound")
    assert nf.value.status is not None and nf.value.status["details"]["name"] == "nope"

    made = await client.create(CONFIGMAPS, cm("a"), NS)
    with pytest.raises(AlreadyExists) as ae:
        await client.create(CONFIGMAPS, cm("a"), NS)
    assert (ae.value.code, ae.value.reason) == (409, "AlreadyExists")

    await client.patch(CONFIGMAPS, "a", {"data": {"x": "1"}}, NS)
    with pytest.raises(Conflict) as conflict:
        await client.update(CONFIGMAPS, made, NS)  # stale resourceVersion
    assert (conflict.value.code, conflict.value.reason) == (409, "Conflict")
    assert not isinstance(conflict.value, AlreadyExists)

    with pytest.raises(Invalid) as inv:
        await client.create(CONFIGMAPS, cm("Not_A_Valid_Name"), NS)
    assert inv.value.code == 422 and inv.value.status is not None
    assert inv.value.status["details"]["causes"][0]["field"] == "metadata.name"

    with pytest.raises(BadRequest) as bad:
        await client.list(CONFIGMAPS, NS, label_selector="a in (")
    assert bad.value.code == 400


async def test_forbidden_with_rbac(tmp_path: Path) -> None:
    async with KubeSim(enforce_rbac=True) as sim:
        token = sim.add_user("alice")
        sim.write_kubeconfig(tmp_path / "admin")
        sim.write_kubeconfig(tmp_path / "alice", token=token)
        async with (
            await KubeClient.from_kubeconfig(str(tmp_path / "admin"), qps=0) as admin,
            await KubeClient.from_kubeconfig(str(tmp_path / "alice"), qps=0) as alice,
        ):
            await admin.create(NAMESPACES, {"metadata": {"name": NS}})
            with pytest.raises(Forbidden) as exc:
                await alice.list(CONFIGMAPS, NS)
            assert exc.value.code == 403
            assert 'User "alice" cannot list resource "configmaps"' in exc.value.message
            with pytest.raises(Forbidden):
                async with alice.watch(CONFIGMAPS, NS, resource_version="0"):
                    pass


async def test_unauthorized_with_a_bad_token_over_tls(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        sim.write_kubeconfig(tmp_path / "good")
        sim.write_kubeconfig(tmp_path / "bad", token="not-a-token")
        async with await KubeClient.from_kubeconfig(str(tmp_path / "good"), qps=0) as good:
            assert good.config.host.startswith("https://")
            await good.create(NAMESPACES, {"metadata": {"name": NS}})
        async with await KubeClient.from_kubeconfig(str(tmp_path / "bad"), qps=0) as bad:
            with pytest.raises(Unauthorized) as exc:
                await bad.get(NAMESPACES, NS)
            assert exc.value.code == 401


@pytest.mark.parametrize(
    ("code", "error", "reason"),
    [
        (500, ServerError, "InternalError"),
        (503, ServerError, "ServiceUnavailable"),
        (409, Conflict, "Conflict"),
    ],
)
async def test_injected_faults(
    client: KubeClient, sim: KubeSim, code: int, error: type[KubeError], reason: str
) -> None:
    sim.inject(verb="get", resource="configmaps", code=code, count=2, retryAfter=3)
    before = sample(
        "kube_client_requests_total", {"client": "test", "verb": "get", "code": str(code)}
    )
    for _ in range(2):
        with pytest.raises(error) as exc:
            await client.get(CONFIGMAPS, "x", NS)
        assert (exc.value.code, exc.value.reason) == (code, reason)
    after = sample(
        "kube_client_requests_total", {"client": "test", "verb": "get", "code": str(code)}
    )
    assert after - before == 2
    # Without a Retry-After the client does not retry: the third request is the
    # first to succeed.
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "x", NS)


async def test_throttled_requests_are_sent_again_as_client_go_does(
    client: KubeClient, sim: KubeSim
) -> None:
    """A 429 with Retry-After is retried after the wait, up to MAX_RETRIES times."""

    def throttled() -> float:
        return sample(
            "kube_client_requests_total", {"client": "test", "verb": "get", "code": "429"}
        )

    host = urlsplit(client.config.host).netloc

    def retried() -> float:  # client-go's series
        return sample(
            "rest_client_request_retries_total", {"code": "429", "verb": "GET", "host": host}
        )

    before, retries_before = throttled(), retried()
    sim.inject(verb="get", resource="configmaps", code=429, count=2, retryAfter=0)
    with pytest.raises(NotFound):  # the third attempt reaches the (empty) namespace
        await client.get(CONFIGMAPS, "x", NS)
    assert throttled() - before == 2
    assert retried() - retries_before == 2

    # Throttled for good: the error (with the server's wait) once the retries are spent.
    sim.inject(verb="get", resource="configmaps", code=429, count=MAX_RETRIES + 5, retryAfter=0)
    with pytest.raises(TooManyRequests) as exc:
        await client.get(CONFIGMAPS, "x", NS)
    assert exc.value.retry_after == 0
    assert throttled() - before == 2 + MAX_RETRIES + 1
    assert retried() - retries_before == 2 + MAX_RETRIES  # the last answer is not retried
    sim.clear_faults()


async def test_a_get_whose_connection_is_reset_is_sent_again(fake_server: FakeServer) -> None:
    """client-go's rule: a GET (only) is sent again when the server drops the connection.

    aiohttp itself sends an idempotent request once more on a dropped
    connection, so the first two GETs are dropped: the third is ours, a second
    later, and counts as a retry in client-go's series.
    """
    methods: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        methods.append(request.method)
        if len(methods) in (1, 2, 4):  # two GETs and the POST: dropped
            assert request.transport is not None
            request.transport.abort()
            await asyncio.Event().wait()
        return web.json_response({"kind": "ConfigMap", "metadata": {"name": "x"}})

    fake_server.handler = handler
    async with fake_server.client() as client:
        labels = {"code": "<error>", "verb": "GET", "host": urlsplit(client.config.host).netloc}
        before = sample("rest_client_request_retries_total", labels)
        assert (await client.get(CONFIGMAPS, "x", NS))["metadata"]["name"] == "x"
        with pytest.raises(Unreachable):
            await client.create(CONFIGMAPS, cm("x"), NS)
    assert methods == ["GET", "GET", "GET", "POST"]
    assert sample("rest_client_request_retries_total", labels) - before == 1


async def test_retry_after_on_a_server_error_is_honoured_for_every_verb(
    fake_server: FakeServer,
) -> None:
    """client-go sends again any request a 429 or 5xx asked to wait for, writes too;
    a Retry-After it cannot read (not whole seconds) is not a request to wait."""
    answers: list[web.Response] = [
        web.Response(status=503, text="", headers={"Retry-After": "0"}),
        web.json_response({"kind": "ConfigMap", "metadata": {"name": "x"}}, status=201),
        web.Response(status=500, text="", headers={"Retry-After": "0"}),
        web.Response(status=504, text="", headers={"Retry-After": "0"}),
        web.json_response({"kind": "ConfigMap", "metadata": {"name": "x"}}),
        web.Response(status=503, text="", headers={"Retry-After": "1.5"}),
    ]
    methods: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        methods.append(request.method)
        return answers.pop(0)

    fake_server.handler = handler
    async with fake_server.client() as client:
        created = await client.create(CONFIGMAPS, cm("x"), NS)
        assert created["metadata"]["name"] == "x"
        assert (await client.get(CONFIGMAPS, "x", NS))["metadata"]["name"] == "x"
        with pytest.raises(ServerError) as unreadable:
            await client.get(CONFIGMAPS, "x", NS)
        assert unreadable.value.code == 503 and unreadable.value.retry_after == 1.5
    assert methods == ["POST", "POST", "GET", "GET", "GET", "GET"]


async def test_unreachable_when_the_server_is_stopped(tmp_path: Path) -> None:
    sim = KubeSim()
    await sim.start()
    sim.write_kubeconfig(tmp_path / "kc")
    async with await KubeClient.from_kubeconfig(str(tmp_path / "kc"), qps=0, name="gone") as c:
        await c.create(NAMESPACES, {"metadata": {"name": NS}})
        await sim.stop()
        with pytest.raises(Unreachable) as exc:
            await c.get(NAMESPACES, NS)
        assert exc.value.code == 0 and "Connect" in exc.value.message
        with pytest.raises(Unreachable):
            async with c.watch(CONFIGMAPS, NS, resource_version="0"):
                pass
        assert (
            sample(
                "kube_client_requests_total", {"client": "gone", "verb": "get", "code": "<error>"}
            )
            >= 1
        )
        # The same client works again once the server is back.
        await sim.start()
        try:
            assert (await c.get(NAMESPACES, NS))["metadata"]["name"] == NS
        finally:
            await sim.stop()


async def test_an_https_url_on_a_plain_http_port_says_so(fake_server: FakeServer) -> None:
    config = ClusterConfig(
        host=fake_server.url.replace("http://", "https://"),
        credentials=StaticCredentials("Bearer t"),
        ssl_context=ssl.create_default_context(),
    )
    async with KubeClient(config, qps=0, timeout=5.0, name="plain") as client:
        with pytest.raises(Unreachable) as exc:
            await client.get(CONFIGMAPS, "x", NS)
    port = urlsplit(fake_server.url).port
    assert f"cannot connect to 127.0.0.1:{port}: [SSL: WRONG_VERSION_NUMBER]" in exc.value.message
    assert "a plain-HTTP port?" in exc.value.message
    assert "SSLContext object" not in exc.value.message


async def test_a_port_that_never_answers_the_tls_handshake_fails_at_connect() -> None:
    """As client-go's TLS handshake timeout: the connection's own limit, not the request's."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # kept open, never answered

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = ClusterConfig(
        host=f"https://127.0.0.1:{port}",
        credentials=StaticCredentials("Bearer t"),
        ssl_context=ssl.create_default_context(),
    )
    try:
        async with KubeClient(
            config, qps=0, timeout=30.0, connect_timeout=0.2, name="silent"
        ) as client:
            with pytest.raises(Unreachable, match=r"timed out \(ConnectionTimeoutError"):
                await client.get(CONFIGMAPS, "x", NS)
            with pytest.raises(Unreachable, match=r"timed out \(ConnectionTimeoutError"):
                async with client.watch(CONFIGMAPS, NS, resource_version="1"):
                    pass
        assert accepted, "the client never reached the port"
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_request_timeout_is_unreachable(fake_server: FakeServer) -> None:
    async def hang(request: web.Request) -> web.StreamResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    fake_server.handler = hang
    async with fake_server.client(timeout=0.2) as client:
        with pytest.raises(Unreachable, match="timed out"):
            await client.get(CONFIGMAPS, "x", NS)
        # A watch may idle for minutes, but its response headers get the request timeout.
        with pytest.raises(Unreachable, match="timed out"):
            async with client.watch(CONFIGMAPS, NS, resource_version="1"):
                pass


async def test_non_status_error_bodies_and_retry_after_header(fake_server: FakeServer) -> None:
    answers: list[web.Response] = [
        web.Response(status=502, text="<html>bad gateway</html>", content_type="text/html"),
        web.Response(status=503, text="", headers={"Retry-After": "7.5"}),
        web.Response(status=404, text="404 page not found"),
        web.Response(status=403, text="forbidden: User cannot get path"),
        web.Response(status=418, text=""),
        web.Response(status=200, text="not json"),
    ]

    async def handler(request: web.Request) -> web.StreamResponse:
        return answers.pop(0)

    fake_server.handler = handler
    async with fake_server.client() as client:
        with pytest.raises(ServerError) as gateway:
            await client.get(CONFIGMAPS, "x", NS)
        # client-go's messages: a body that is not a Status is no message, or only quoted.
        assert gateway.value.code == 502
        assert gateway.value.message == (
            'an error on the server ("<html>bad gateway</html>") has prevented the request '
            "from succeeding"
        )
        with pytest.raises(ServerError) as unavailable:
            await client.get(CONFIGMAPS, "x", NS)
        assert unavailable.value.retry_after == 7.5 and unavailable.value.status is None
        assert unavailable.value.message == "the server is currently unable to handle the request"
        with pytest.raises(NotFound) as not_found:
            await client.get(CONFIGMAPS, "x", NS)
        assert not_found.value.message == "the server could not find the requested resource"
        with pytest.raises(Forbidden) as forbidden:  # who may not do what: kept
            await client.get(CONFIGMAPS, "x", NS)
        assert forbidden.value.message == "forbidden: User cannot get path"
        with pytest.raises(KubeError) as teapot:
            await client.get(CONFIGMAPS, "x", NS)
        assert teapot.value.message == (
            "the server responded with the status code 418 but did not return more information"
        )
        with pytest.raises(ServerError, match="not JSON"):
            await client.get(CONFIGMAPS, "x", NS)


def _status(code: int, reason: str, **details: Any) -> dict[str, Any]:
    return {"kind": "Status", "code": code, "reason": reason, "message": "m", "details": details}


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (409, "", Conflict),
        (410, "Expired", Gone),
        (410, "Gone", Gone),
        (500, "Expired", Gone),  # the reason wins over the code
        (403, "Forbidden", Forbidden),
        (401, "", Unauthorized),
        (422, "Invalid", Invalid),
        (400, "BadRequest", BadRequest),
        (504, "Timeout", ServerError),
        (502, "", ServerError),
        (405, "MethodNotAllowed", KubeError),
    ],
)
def test_error_mapping(code: int, reason: str, expected: type[KubeError]) -> None:
    err = error_from_status(code, _status(code, reason))
    assert type(err) is expected and err.code == code


def test_retry_after_sources() -> None:
    body = _status(429, "TooManyRequests", retryAfterSeconds=2)
    assert error_from_status(429, body).retry_after == 2
    assert error_from_status(429, body, retry_after=5).retry_after == 5  # header wins
    assert error_from_status(429, None).retry_after is None
    # A watch ERROR event's Status carries the code; the HTTP code is 200 there.
    in_stream = error_from_status(0, _status(410, "Expired"))
    assert isinstance(in_stream, Gone) and in_stream.code == 410
