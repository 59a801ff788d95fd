"""The endpoint for probes and scrapes: /metrics, /livez, /readyz, /healthz.

Served by aiohttp on the process's own event loop (no thread): answering at
all proves the loop is alive.
"""

from __future__ import annotations

import ssl

import structlog
from aiohttp import web
from prometheus_client import REGISTRY
from prometheus_client.aiohttp import make_aiohttp_handler

from ocmkit.command import DEFAULT_LISTEN
from ocmkit.runtime.endpointauth import DelegatedAuth
from ocmkit.runtime.health import HealthChecks, Report

log = structlog.get_logger(__name__)


def parse_bind_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``; empty host = all interfaces) -> (host, port)."""
    host, sep, port_text = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must be host:port")
    host = host.strip("[]") or "0.0.0.0"  # empty host: all interfaces
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"bind address {address!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"bind address {address!r}: port {port} out of range")
    return host, port


async def serve(
    app: web.Application,
    host: str | None,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    shutdown_timeout: float = 1.0,
) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on ``host:port``: its runner, and the port bound (``port`` 0 picks one).

    OSError names the address when it cannot listen.
    """
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    try:
        await site.start()
    except OSError as err:
        await runner.cleanup()
        raise OSError(err.errno, f"cannot listen on {host or ''}:{port}: {err.strerror}") from err
    sockets = getattr(site._server, "sockets", None) or []
    return runner, int(sockets[0].getsockname()[1]) if sockets else port


def probe_response(report: Report, request: web.Request) -> web.Response:
    """A probe's answer, as kube-apiserver's: 200 ``ok`` or 500 with one line per check
    (the lines on success too with ``?verbose``; ``?exclude=<check>`` skips a check),
    never cached."""
    report = report.excluding(request.query.getall("exclude", []))
    return web.Response(
        status=200 if report.ok else 500,
        text=report.render(verbose="verbose" in request.query),
        content_type="text/plain",
        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"},
    )


class ObservabilityServer:
    """Serves metrics and health probes on ``bind_address`` (``127.0.0.1:0`` picks a port),
    to the callers ``auth`` allows (everyone when None)."""

    def __init__(
        self,
        bind_address: str = DEFAULT_LISTEN,
        *,
        checks: HealthChecks | None = None,
        ssl_context: ssl.SSLContext | None = None,
        auth: DelegatedAuth | None = None,
    ) -> None:
        self.host, self.port = parse_bind_address(bind_address)
        self.checks = checks or HealthChecks()
        self._ssl = ssl_context
        self._auth = auth
        self._runner: web.AppRunner | None = None
        self._last: dict[str, bool] = {}

    @property
    def url(self) -> str:
        """Base URL (valid once started; the real port when 0 was asked for)."""
        scheme = "https" if self._ssl is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> None:
        """Start listening."""
        if self._runner is not None:
            return
        app = web.Application(middlewares=[self._auth.middleware] if self._auth else [])
        app.router.add_get("/metrics", make_aiohttp_handler(REGISTRY))
        app.router.add_get("/livez", self._livez)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        self._runner, self.port = await serve(app, self.host, self.port, ssl_context=self._ssl)
        log.info(
            "serving metrics and health probes",
            address=f"{self.host}:{self.port}",
            scheme="https" if self._ssl is not None else "http",
            authorization="delegated" if self._auth is not None else "none",
        )

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _livez(self, request: web.Request) -> web.Response:
        return self._answer(self.checks.livez(), request)

    async def _healthz(self, request: web.Request) -> web.Response:
        # The liveness checks, under kube-apiserver's older name.
        return self._answer(Report("healthz", self.checks.livez().results), request)

    async def _readyz(self, request: web.Request) -> web.Response:
        return self._answer(self.checks.readyz(), request)

    def _answer(self, report: Report, request: web.Request) -> web.Response:
        # Log transitions only: probes come every few seconds.
        if self._last.get(report.kind) != report.ok:
            self._last[report.kind] = report.ok
            failed = [r.line() for r in report.results if not r.ok]
            if report.ok:
                log.info(f"{report.kind} passing")
            else:
                log.warning(f"{report.kind} failing", checks=failed)
        return probe_response(report, request)
