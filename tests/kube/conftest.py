"""Fixtures for the client tests: a client for the ``sim`` fixture and a fake server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from kubesim.sim import KubeSim
from ocmkit.kube import KubeClient
from tests.kube.helpers import NS, FakeServer
from tests.support.simclient import sim_client


@pytest.fixture
async def client(sim: KubeSim, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A client for ``sim`` (admin token, User-Agent ``work-agent``, unlimited QPS) with the
    namespace ``demo`` created."""
    async with sim_client(tmp_path, "work-agent", "test", NS) as kube:
        yield kube


@pytest.fixture
async def fake_server() -> AsyncIterator[FakeServer]:
    """A FakeServer on a free loopback port; set ``.handler`` before use."""
    server = FakeServer()

    async def dispatch(request: web.Request) -> web.StreamResponse:
        server.queries.append(request.query_string)
        assert server.handler is not None
        return await server.handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", dispatch)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []
    server.url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        await runner.cleanup()
