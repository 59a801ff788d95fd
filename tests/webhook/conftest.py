"""Fixtures for the webhook tests: serving certificates and a running HTTPS webhook."""

from __future__ import annotations

import contextlib
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hubcontroller.webhook import AccessCheck, WebhookServer, WebhookSettings
from tests.webhook.helpers import RecordingAccess, ServingCert, install_cert, make_cert


@pytest.fixture
def serving_cert() -> ServingCert:
    """The certificate the webhook starts with."""
    return make_cert("webhook-a")


@pytest.fixture
def certdir(tmp_path: Path, serving_cert: ServingCert) -> Path:
    """A ``--certdir`` holding ``serving_cert``."""
    path = tmp_path / "certs"
    install_cert(path, serving_cert)
    return path


def local_settings(certdir: Path, **overrides: Any) -> WebhookSettings:
    """Settings for an in-test server: loopback, a free webhook port, no probe/metrics ports."""
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "free_port": True,
        "metrics_port": 0,
        "health_probe_port": 0,
        "certdir": str(certdir),
    }
    values.update(overrides)
    return WebhookSettings(**values)


@contextlib.asynccontextmanager
async def running(
    settings: WebhookSettings, access: AccessCheck | None = None
) -> AsyncIterator[WebhookServer]:
    """A started WebhookServer, stopped on exit."""
    server = WebhookServer(settings, access=access or RecordingAccess())
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def client_context(
    ca: ServingCert, *, maximum: ssl.TLSVersion | None = None, ciphers: str | None = None
) -> ssl.SSLContext:
    """A client context that trusts only ``ca``."""
    ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    if maximum is not None:
        ctx.maximum_version = maximum
    if ciphers is not None:
        ctx.set_ciphers(ciphers)
    return ctx


async def post(
    url: str,
    body: Any,
    ctx: ssl.SSLContext,
    *,
    content_type: str = "application/json",
    raw: bytes | None = None,
) -> tuple[int, Any]:
    """POST on a new connection (a new session each time); returns (status, JSON or text)."""
    data = raw if raw is not None else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=data, headers={"Content-Type": content_type}, ssl=ctx) as resp,
    ):
        text = await resp.text()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text
