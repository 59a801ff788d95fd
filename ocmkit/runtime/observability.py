"""The endpoint for probes and scrapes: /metrics, /livez, /readyz, /healthz.

Served by aiohttp on the process's own event loop (no thread): answering at
all proves the loop is alive. The paths answer as library-go's (a generic
API server's) do: any method, each check at its own path, and for any other
path a 404 listing the paths served.
"""

from __future__ import annotations

import functools
import json
import ssl

import structlog
from aiohttp import web
from prometheus_client import REGISTRY
from prometheus_client.aiohttp import make_aiohttp_handler

from ocmkit.command import DEFAULT_LISTEN
from ocmkit.runtime.endpointauth import DelegatedAuth
from ocmkit.runtime.health import CheckResult, HealthChecks, Report

log = structlog.get_logger(__name__)

#: The probe paths, each also serving its checks at ``/<probe>/<check>``.
PROBES = ("healthz", "livez", "readyz")
#: The checks a generic API server's probes list first (a live loop answers them).
BUILTIN_CHECKS = (CheckResult("ping", None), CheckResult("log", None))
PROBE_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


def parse_bind_address(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``; empty host = all interfaces) -> (host, port).

    An empty address is library-go's default, ``0.0.0.0:8443``.
    """
    host, sep, port_text = (address or DEFAULT_LISTEN).rpartition(":")
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


def probe_response(report: Report, request: web.Request, *, verdict: str = "") -> web.Response:
    """A probe's answer, as kube-apiserver's: 200 ``ok`` or 500 with one line per check
    (the lines on success too with ``?verbose``; ``?exclude=<check>`` skips a check),
    never cached. ``verdict``: see :meth:`Report.render`."""
    report = report.excluding(request.query.getall("exclude", []))
    return web.Response(
        status=200 if report.ok else 500,
        text=report.render(verbose="verbose" in request.query, verdict=verdict),
        content_type="text/plain",
        headers=PROBE_HEADERS,
    )


def check_response(result: CheckResult) -> web.Response:
    """One check at its own path (``/readyz/<check>``): ``ok``, or 500 with the reason."""
    if result.ok:
        return web.Response(text="ok", content_type="text/plain", headers=PROBE_HEADERS)
    return web.Response(
        status=500,
        text=f"internal server error: {result.failure}\n",
        content_type="text/plain",
        headers=PROBE_HEADERS,
    )


async def not_found(request: web.Request) -> web.Response:
    """Go's ``http.NotFound``: what a Go server's mux answers for a path it does not serve."""
    return web.Response(
        status=404,
        text="404 page not found\n",
        content_type="text/plain",
        headers={"X-Content-Type-Options": "nosniff"},
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
        app.router.add_route("*", "/metrics", make_aiohttp_handler(REGISTRY))
        for probe in PROBES:
            app.router.add_route("*", f"/{probe}", functools.partial(self._probe, probe))
            check = functools.partial(self._check, probe)
            app.router.add_route("*", f"/{probe}/{{check:.+}}", check)
        app.router.add_route("*", "/{path:.*}", self._index)
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

    def report(self, probe: str) -> Report:
        """The checks of ``probe`` (healthz: the liveness checks, under kube-apiserver's
        older name), after the built-in ones."""
        checks = self.checks.readyz() if probe == "readyz" else self.checks.livez()
        return Report(probe, (*BUILTIN_CHECKS, *checks.results))

    async def _probe(self, probe: str, request: web.Request) -> web.Response:
        report = self.report(probe)
        # Log transitions only: probes come every few seconds.
        if self._last.get(probe) != report.ok:
            self._last[probe] = report.ok
            if report.ok:
                log.info(f"{probe} passing")
            else:
                failed = [r.described() for r in report.results if not r.ok]
                log.warning(f"{probe} failing", checks=failed)
        return probe_response(report, request)

    async def _check(self, probe: str, request: web.Request) -> web.Response:
        result = self.report(probe).result(request.match_info["check"])
        return check_response(result) if result is not None else await self._index(request)

    async def _index(self, request: web.Request) -> web.Response:
        """The paths served, as JSON: 200 at ``/`` and ``/index.html``, else a 404."""
        paths = {"/metrics"}
        for probe in PROBES:
            paths.add(f"/{probe}")
            paths.update(f"/{probe}/{r.name}" for r in self.report(probe).results)
        return web.Response(
            status=200 if request.path in ("/", "/index.html") else 404,
            body=json.dumps({"paths": sorted(paths)}, indent=2, ensure_ascii=False).encode(),
            content_type="application/json",
        )
