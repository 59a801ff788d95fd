"""The ``webhook-server`` process: HTTPS admission endpoints, health probes and metrics.

Three aiohttp servers on one event loop (docs/architecture.md, "The webhook
server"); :func:`run_webhook_server` is the entry point the CLI calls.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import ssl
import time
from collections.abc import Callable
from typing import Final

import structlog
from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

from hubcontroller.webhook import metrics
from hubcontroller.webhook.access import AccessCheck, HubAccessReviewer
from hubcontroller.webhook.admission import UNTYPED, Errored
from hubcontroller.webhook.certs import CertificateError, CertificateReloader
from hubcontroller.webhook.core import AdmissionValidator, Verdict
from hubcontroller.webhook.resources import MANIFESTWORK, MANIFESTWORK_REPLICASET, WebhookResource
from hubcontroller.webhook.settings import WebhookSettings
from ocmkit.command import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from ocmkit.kube import KubeClient, KubeConfigError
from ocmkit.runtime import HealthChecks, Report
from ocmkit.runtime.manager import install_signal_handlers, remove_signal_handlers
from ocmkit.runtime.observability import check_response, not_found, probe_response, serve
from ocmkit.runtime.tls import TLSConfigError, server_context
from schemas import wire

log = structlog.get_logger(__name__)

#: controller-runtime's limit on an admission request body (7 MiB): an UPDATE
#: carries the object twice, each up to the API server's own limit.
MAX_REQUEST_BYTES: Final = 7 * 1024 * 1024
#: How long in-flight admissions may finish on shutdown (the API server's timeout is 10 s).
SHUTDOWN_GRACE: Final = 10.0
# controller-runtime's default rest config limits for the SubjectAccessReview client.
HUB_QPS: Final = 20.0
HUB_BURST: Final = 30
USER_AGENT: Final = "work-webhook"


def served_resources(settings: WebhookSettings) -> tuple[WebhookResource, ...]:
    """The kinds with a path: ManifestWork always, ManifestWorkReplicaSet behind its gate."""
    if wire.GATE_MANIFEST_WORK_REPLICA_SET in settings.feature_gates:
        return (MANIFESTWORK, MANIFESTWORK_REPLICASET)
    return (MANIFESTWORK,)


class WebhookServer:
    """The webhook, probe and metrics servers of one process.

    ``access`` answers the ``execute-as`` checks (a :class:`HubAccessReviewer`
    in production). After :meth:`start`, :attr:`port`, :attr:`health_port` and
    :attr:`metrics_port` hold the ports actually bound (``port`` 0 picks one).
    """

    def __init__(
        self,
        settings: WebhookSettings,
        *,
        access: AccessCheck,
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self.settings = settings
        self.validator = AdmissionValidator(settings.validation_options(), access)
        self.certificates = CertificateReloader(
            settings.cert_file,
            settings.key_file,
            lambda: server_context(settings.tls_min_version, settings.tls_cipher_suites),
        )
        self.resources = served_resources(settings)
        self.checks = HealthChecks()
        # OCM registers one ping check of each kind; readiness also says whether we serve.
        self.checks.add_liveness("healthz-ping", lambda: None)
        self.checks.add_readiness("readyz-ping", lambda: None)
        self.checks.add_readiness("webhook", self._serving_failure)
        self.port = settings.listen_port
        self.health_port = settings.health_probe_port
        self.metrics_port = settings.metrics_port
        self._registry = registry
        self._runners: list[web.AppRunner] = []
        self._serving = False
        self._stopping = False

    # -- applications ---------------------------------------------------------------------
    def webhook_app(self) -> web.Application:
        """The admission endpoints (usable with aiohttp's test client, without TLS)."""
        # aiohttp refuses what exceeds its limit; Go refuses a body that reaches it.
        app = web.Application(client_max_size=MAX_REQUEST_BYTES - 1)
        for resource in self.resources:
            app.router.add_post(resource.path, functools.partial(self._admit, resource=resource))
        return app

    def health_app(self) -> web.Application:
        """``/healthz`` and ``/readyz``, each check also at ``/<probe>/<check>``, any
        method (as controller-runtime's)."""
        app = web.Application()
        for probe in ("healthz", "readyz"):
            handler = functools.partial(self._probe, probe)
            app.router.add_route("*", f"/{probe}", handler)
            app.router.add_route("*", f"/{probe}/", handler)
            check = functools.partial(self._check, probe)
            app.router.add_route("*", f"/{probe}/{{check:.+}}", check)
        app.router.add_route("*", "/{path:.*}", not_found)
        return app

    def metrics_app(self) -> web.Application:
        """``/metrics`` in the Prometheus text format."""
        app = web.Application()
        app.router.add_route("*", "/metrics", make_aiohttp_handler(self._registry))
        app.router.add_route("*", "/{path:.*}", not_found)
        return app

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """Listen for probes and metrics, load the certificate, listen for admissions.

        Raises CertificateError, TLSConfigError (TLS settings the local OpenSSL
        cannot honour) or OSError (a port); whatever had started is closed again.
        """
        host = self.settings.host or None  # None: every interface, IPv4 and IPv6
        try:
            if self.settings.health_probes_enabled:
                self.health_port = await self._listen(self.health_app(), host, self.health_port)
            if self.settings.metrics_enabled:
                self.metrics_port = await self._listen(self.metrics_app(), host, self.metrics_port)
            self.certificates.load()
            self.port = await self._listen(
                self.webhook_app(), host, self.port, self.certificates.context
            )
        except BaseException:
            await self.stop()
            raise
        self._serving = True
        log.info(
            "serving admission webhooks",
            port=self.port,
            paths=[r.path for r in self.resources],
            health_probe_port=self.health_port if self.settings.health_probes_enabled else None,
            metrics_port=self.metrics_port if self.settings.metrics_enabled else None,
        )

    async def stop(self) -> None:
        """Fail readiness, let in-flight admissions finish, close every listener."""
        self._stopping = True
        self._serving = False
        # Reverse order: the webhook stops first, the probes last.
        while self._runners:
            await self._runners.pop().cleanup()

    async def _listen(
        self,
        app: web.Application,
        host: str | None,
        port: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> int:
        runner, bound = await serve(
            app, host, port, ssl_context=ssl_context, shutdown_timeout=SHUTDOWN_GRACE
        )
        self._runners.append(runner)
        return bound

    # -- admission --------------------------------------------------------------------------
    async def _admit(self, request: web.Request, resource: WebhookResource) -> web.Response:
        path = resource.path
        metrics.REQUEST_IN_FLIGHT.labels(path).inc()
        started = time.perf_counter()
        # The verdict, even a malformed-request one, is in the review: HTTP 200. Only a
        # failure to answer at all (a bug) leaves aiohttp to send a 500.
        code = "500"
        try:
            verdict = await self._verdict(request, resource)
            self._record(resource, verdict)
            body = json.dumps(verdict.answer, separators=(",", ":"), ensure_ascii=False)
            code = "200"
            return web.Response(text=body, content_type="application/json")
        finally:
            metrics.REQUEST_IN_FLIGHT.labels(path).dec()
            metrics.REQUEST_LATENCY.labels(path).observe(time.perf_counter() - started)
            metrics.REQUEST_TOTAL.labels(path, code).inc()

    async def _verdict(self, request: web.Request, resource: WebhookResource) -> Verdict:
        # The request-level failures controller-runtime checks before decoding, in its order.
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            message = f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes"
            return _refused(message, code=413)
        if not body:
            return _refused("request body is empty")
        # The header as sent: controller-runtime takes no parameters, no other case.
        content_type = request.headers.get("Content-Type", "")
        if content_type != "application/json":
            return _refused(f"contentType={content_type}, expected application/json")
        return await self.validator.review_json(body, resource)

    def _record(self, resource: WebhookResource, verdict: Verdict) -> None:
        metrics.DECISIONS.labels(
            resource.path, verdict.operation, str(verdict.allowed).lower(), str(verdict.code)
        ).inc()
        fields = {
            "webhook": resource.kind,
            "uid": verdict.uid,
            "operation": verdict.operation,
            "code": verdict.code,
        }
        if verdict.allowed:
            log.debug("admission allowed", **fields)
        elif verdict.code >= 500:
            log.error("admission failed", message=verdict.message, **fields)
        else:
            # The message names user, executor and namespace; never manifests' contents.
            log.info("admission denied", message=verdict.message, **fields)

    # -- probes -----------------------------------------------------------------------------
    def _serving_failure(self) -> str | None:
        if self._stopping:
            return "shutting down"
        if not self._serving:
            return "the webhook server is not serving yet"
        return None

    def report(self, probe: str) -> Report:
        """The checks of ``probe`` (healthz: the liveness checks), by name as
        controller-runtime lists them."""
        checks = self.checks.readyz() if probe == "readyz" else self.checks.livez()
        return Report(probe, tuple(sorted(checks.results, key=lambda r: r.name)))

    async def _probe(self, probe: str, request: web.Request) -> web.Response:
        # controller-runtime ends every probe's lines with "healthz check passed|failed".
        return probe_response(self.report(probe), request, verdict="healthz")

    async def _check(self, probe: str, request: web.Request) -> web.Response:
        result = self.report(probe).result(request.match_info["check"])
        return check_response(result) if result is not None else await not_found(request)


def _refused(message: str, code: int = 400) -> Verdict:
    # Before a review is decoded, controller-runtime answers one without kind and apiVersion.
    return Verdict.refused(Errored(code, message), UNTYPED, "", "")


async def hub_client(kubeconfig: str) -> KubeClient:
    """The client for SubjectAccessReviews, found as controller-runtime finds its config.

    ``--kubeconfig``, else ``$KUBECONFIG``, else in-cluster, else
    ``~/.kube/config``. Raises KubeConfigError.
    """
    in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if not kubeconfig and not os.environ.get("KUBECONFIG") and in_cluster:
        return await KubeClient.in_cluster(
            qps=HUB_QPS, burst=HUB_BURST, user_agent=USER_AGENT, name="hub"
        )
    return await KubeClient.from_kubeconfig(
        kubeconfig or None, qps=HUB_QPS, burst=HUB_BURST, user_agent=USER_AGENT, name="hub"
    )


async def run_webhook_server(
    settings: WebhookSettings,
    *,
    stop: asyncio.Event | None = None,
    on_started: Callable[[WebhookServer], object] | None = None,
) -> int:
    """Serve until SIGTERM/SIGINT (or ``stop`` is set); returns the process exit code.

    0 after a clean stop; 2 when the kubeconfig or the TLS settings are
    unusable; 1 when the certificate does not load or a port cannot be bound.
    Each failure is logged as one line that says what to fix. ``on_started``
    is called once everything listens (embedding and tests learn the ports).
    """
    stop = stop or asyncio.Event()
    try:
        hub = await hub_client(settings.kubeconfig)
    except KubeConfigError as err:
        log.error("invalid kubeconfig", error=str(err))
        return EXIT_USAGE
    server = WebhookServer(settings, access=HubAccessReviewer(hub))
    installed = install_signal_handlers(lambda _signal: stop.set())
    try:
        try:
            await server.start()
        except CertificateError as err:
            log.error(
                "cannot load the serving certificate",
                certdir=str(settings.cert_dir),
                error=str(err),
            )
            return EXIT_FAILURE
        except (ssl.SSLError, TLSConfigError) as err:
            log.error(
                "unusable TLS settings",
                error=str(err),
                tls_cipher_suites=settings.tls_cipher_suites,
            )
            return EXIT_USAGE
        except OSError as err:
            log.error("cannot listen", error=str(err))
            return EXIT_FAILURE
        if on_started is not None:
            on_started(server)
        await stop.wait()
        log.info("shutting down")
        return EXIT_OK
    finally:
        await server.stop()
        await hub.close()
        remove_signal_handlers(installed)
