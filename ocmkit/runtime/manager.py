"""The Manager: runs informers, controllers, leader election and the probe server.

The probes are served before anything else, so that a standby, or a process
waiting for an unreachable apiserver, still answers and says why it is not
ready; shutdown is the start-up in reverse (docs/runtime.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import structlog

from ocmkit.command import DEFAULT_LISTEN, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, version
from ocmkit.kube import KubeClient, KubeConfigError
from ocmkit.runtime.buildinfo import export_build_info
from ocmkit.runtime.controller import Controller
from ocmkit.runtime.endpointauth import DelegatedAuth
from ocmkit.runtime.health import HealthChecks, HealthSource, LoopMonitor
from ocmkit.runtime.informer import Informer
from ocmkit.runtime.leaderelection import LeaderElector
from ocmkit.runtime.observability import ObservabilityServer

log = structlog.get_logger(__name__)

# Limit of each shutdown step after the controllers drained (lease release, closers).
CLEANUP_TIMEOUT = 10.0
#: How often ``--terminate-on-files`` files are checked for changes.
FILE_CHECK_SECONDS = 5.0


@dataclass(frozen=True)
class ManagerSettings:
    """How the manager serves probes and shuts down."""

    bind_address: str = DEFAULT_LISTEN
    # HTTPS for /metrics and the probes when set (the agent's default); None: plain HTTP.
    ssl_context: ssl.SSLContext | None = None
    # With HTTPS, callers of the endpoint are reviewed through this client (library-go's
    # delegated authentication and authorization); plain HTTP serves everyone.
    auth_client: KubeClient | None = None
    shutdown_deadline: float = 30.0
    handle_signals: bool = True
    #: the component namespace naming the ``<namespace>_build_info`` series ("": none)
    build_info: str = ""


class Service(HealthSource, Protocol):
    """A background task set the manager runs while leading (e.g. a CloudEvents
    connection): started before the informers, stopped after them."""

    async def start(self) -> None:
        """Start in the background (returns at once)."""

    async def stop(self) -> None:
        """Stop; called once at shutdown."""


class Manager:
    """Owns the lifecycle of everything a controller process runs."""

    def __init__(
        self,
        name: str,
        *,
        settings: ManagerSettings | None = None,
        leader_elector: LeaderElector | None = None,
    ) -> None:
        self.name = name
        self.settings = settings or ManagerSettings()
        self.leader_elector = leader_elector
        tls, client = self.settings.ssl_context, self.settings.auth_client
        auth = None
        if tls is not None and client is not None:
            # A token bucket of its own: callers of the endpoint cannot use up the
            # program's budget (``<client>-endpoint`` in kube_client_* metrics).
            auth = DelegatedAuth(client.derive(f"{client.name}-endpoint"))
        self.observability = ObservabilityServer(
            self.settings.bind_address, ssl_context=tls, auth=auth
        )
        self.informers: list[Informer] = []
        self.services: list[Service] = []
        self.controllers: list[Controller] = []
        self._closers: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        self._loop_monitor = LoopMonitor()
        self._stop = asyncio.Event()
        self._stop_reason = ""
        self._exit_code = EXIT_OK
        self._stopping = False
        self._signals: list[signal.Signals] = []
        self._controller_tasks: dict[asyncio.Task[None], Controller] = {}
        self.checks.add_liveness("loop", self._loop_monitor.liveness_failure)
        self.checks.add_readiness(
            "shutdown", lambda: "shutting down" if self._stop.is_set() or self._stopping else None
        )
        if leader_elector is not None:
            self.checks.add_source(leader_elector, prefix="leader-election")

    # -- composition ----------------------------------------------------------------
    @property
    def checks(self) -> HealthChecks:
        """The health checks behind /livez and /readyz (add your own)."""
        return self.observability.checks

    def add_informer(self, informer: Informer) -> Informer:
        """Run this informer (started once leading); it becomes part of /readyz."""
        if informer not in self.informers:
            self.informers.append(informer)
            self.checks.add_source(informer, prefix="informer", gate=self._standby)
        return informer

    def add_service(self, service: Service) -> Service:
        """Run this background service while leading (started before the informers,
        stopped after them); its health checks join /livez and /readyz."""
        if service not in self.services:
            self.services.append(service)
            self.checks.add_source(service, prefix="service", gate=self._standby)
        return service

    def add_controller(self, controller: Controller) -> Controller:
        """Run this controller; informers it depends on are added too."""
        for source in controller.depends_on:
            if isinstance(source, Informer):
                self.add_informer(source)
        self.controllers.append(controller)
        return controller

    def add_closer(self, name: str, close: Callable[[], Awaitable[None]]) -> None:
        """Call ``close`` at the end of shutdown (e.g. a client's ``close``)."""
        self._closers.append((name, close))

    # -- running ----------------------------------------------------------------------
    def request_stop(self, reason: str = "requested", exit_code: int = EXIT_OK) -> None:
        """Begin a graceful shutdown (idempotent; the first reason wins)."""
        if not self._stop.is_set():
            self._stop_reason = reason
            self._exit_code = exit_code
            self._stop.set()

    @property
    def stopping(self) -> bool:
        """True once shutdown has begun."""
        return self._stopping

    async def run(self) -> int:
        """Run until stopped; returns the process exit code (0 after a clean stop)."""
        if self.settings.handle_signals:
            self._signals = install_signal_handlers(self._on_signal)
        self._loop_monitor.start()
        if self.settings.build_info:
            export_build_info(self.settings.build_info, self.name, version())
        try:
            try:
                await self.observability.start()
            except OSError as err:
                log.error("cannot serve metrics and health probes", error=str(err))
                self.request_stop("probe server failed", EXIT_FAILURE)
                return self._exit_code
            log.info(
                "starting",
                manager=self.name,
                informers=[i.name for i in self.informers],
                controllers=[c.name for c in self.controllers],
                leader_election=self.leader_elector is not None
                and not self.leader_elector.settings.disabled,
            )
            if await self._lead():
                await self._start_work()
                await self._wait_for_stop()
        except asyncio.CancelledError:
            self.request_stop("cancelled", EXIT_FAILURE)
            raise
        finally:
            await self._shutdown()
        return self._exit_code

    async def _lead(self) -> bool:
        """Wait until this process leads; False if a stop came first."""
        elector = self.leader_elector
        if elector is None:
            return True
        await elector.start()
        if elector.is_leader():
            return True
        if elector.state == "initializing":
            log.info("waiting for leadership", lease=elector.name)
        await _first([elector.wait_leading(), self._stop.wait()])
        return elector.is_leader() and not self._stop.is_set()

    async def _start_work(self) -> None:
        for service in self.services:
            await service.start()
        for informer in self.informers:
            await informer.start()
        for controller in self.controllers:
            task = asyncio.create_task(controller.run(), name=f"controller-{controller.name}")
            self._controller_tasks[task] = controller

    async def _wait_for_stop(self) -> None:
        waits: list[Awaitable[object]] = [self._stop.wait()]
        if self.leader_elector is not None and not self.leader_elector.settings.disabled:
            waits.append(self.leader_elector.wait_stopped_leading())
        await _first(waits, self._controller_tasks)
        if self.leader_elector is not None and self.leader_elector.state == "lost":
            self.request_stop("leadership lost", EXIT_FAILURE)
        for task, controller in self._controller_tasks.items():
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error(
                    "controller crashed", controller=controller.name, error=repr(task.exception())
                )
                self.request_stop(f"controller {controller.name} crashed", EXIT_FAILURE)
        self.request_stop("controller exited", EXIT_FAILURE)

    async def _shutdown(self) -> None:
        self._stopping = True
        reason = self._stop_reason or "stopped"
        log.info("shutting down", reason=reason, deadline_seconds=self.settings.shutdown_deadline)
        deadline = self.settings.shutdown_deadline
        results = await asyncio.gather(
            *(c.stop(deadline) for c in self.controllers), return_exceptions=True
        )
        for controller, result in zip(self.controllers, results, strict=True):
            if isinstance(result, BaseException):
                log.error("controller stop failed", controller=controller.name, error=repr(result))
        if self._controller_tasks:
            await asyncio.gather(*self._controller_tasks, return_exceptions=True)
        await asyncio.gather(*(i.stop() for i in self.informers), return_exceptions=True)
        for service in self.services:
            await _bounded(f"stopping {service.name}", service.stop())
        # Each remaining step is bounded: a hung apiserver must not eat the pod's
        # termination grace period.
        if self.leader_elector is not None:
            await _bounded("releasing the lease", self.leader_elector.stop())
        for name, close in self._closers:
            await _bounded(f"closing {name}", close())
        await self.observability.stop()
        await self._loop_monitor.stop()
        remove_signal_handlers(self._signals)
        log.info("stopped", reason=reason, exit_code=self._exit_code)

    # -- health --------------------------------------------------------------------
    def _standby(self) -> str | None:
        """Non-None while informers are not expected to run: standing by for the Lease."""
        elector = self.leader_elector
        if elector is not None and elector.state == "standby":
            return "standby"
        return None

    # -- signals -------------------------------------------------------------------
    def _on_signal(self, sig: signal.Signals) -> None:
        if self._stop.is_set():
            log.error("second signal during shutdown, exiting now", signal=sig.name)
            os._exit(EXIT_FAILURE)
        log.info("signal received, shutting down gracefully", signal=sig.name)
        self.request_stop(sig.name)


def install_signal_handlers(on_signal: Callable[[signal.Signals], None]) -> list[signal.Signals]:
    """Call ``on_signal`` on SIGTERM and SIGINT; returns the signals now handled."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # not the main thread or not supported: the caller stops otherwise
        installed.append(sig)
    return installed


def remove_signal_handlers(installed: list[signal.Signals]) -> None:
    """Undo :func:`install_signal_handlers` (and empty ``installed``)."""
    loop = asyncio.get_running_loop()
    for sig in installed:
        loop.remove_signal_handler(sig)
    installed.clear()


async def run_main(
    build: Callable[[], Awaitable[Manager]], *, terminate_on_files: Sequence[str] = ()
) -> int:
    """Build a manager and run it, turning configuration errors into one clear line.

    ``build`` creates clients (kubeconfigs), informers and controllers. A
    missing or invalid kubeconfig or invalid settings end the process with
    exit code 2 and a log line that names the problem, instead of a traceback.
    A change of one of ``terminate_on_files`` stops the manager (see
    :func:`stop_on_file_change`).
    """
    try:
        manager = await build()
    except KubeConfigError as err:
        log.error("invalid kubeconfig", error=str(err))
        return EXIT_USAGE
    except ValueError as err:
        log.error("invalid settings", error=str(err))
        return EXIT_USAGE
    if not terminate_on_files:
        return await manager.run()
    watcher = asyncio.create_task(stop_on_file_change(manager, tuple(terminate_on_files)))
    try:
        return await manager.run()
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


class Built(Protocol):
    """What a program's composition root returns: an object holding its manager."""

    @property
    def manager(self) -> Manager:
        """The manager that runs the program."""
        ...


BuiltT = TypeVar("BuiltT", bound=Built)


async def run_built(
    build: Callable[[], Awaitable[BuiltT]],
    on_built: Callable[[BuiltT], None] | None = None,
    *,
    terminate_on_files: Sequence[str] = (),
) -> int:
    """:func:`run_main` for a composition root; ``on_built`` sees what it built first.

    Tests pass ``on_built`` to reach the program's parts (its manager, its
    clients) while it runs.
    """

    async def manager() -> Manager:
        built = await build()
        if on_built is not None:
            on_built(built)
        return built.manager

    return await run_main(manager, terminate_on_files=terminate_on_files)


def file_fingerprint(*paths: str) -> str:
    """A digest of the files' content (a fixed marker while one cannot be read)."""
    digest = hashlib.sha256()
    try:
        for path in paths:
            digest.update(Path(path).read_bytes())
    except OSError:
        return "<unreadable>"
    return digest.hexdigest()


async def stop_on_file_change(manager: Manager, paths: tuple[str, ...]) -> None:
    """Stop the manager when a ``--terminate-on-files`` file changes (e.g. a rotated
    kubeconfig), so the pod restarts with the new content.

    The shutdown is the graceful one of SIGTERM and the exit code is 0
    (``EXIT_OK``): a restart was asked for, nothing failed, and the pod's
    ``restartPolicy: Always`` starts the program again, as library-go's
    ``--terminate-on-files`` does. Changes are noticed within ``FILE_CHECK_SECONDS``.
    """
    seen = {p: file_fingerprint(p) for p in paths}
    while True:
        await asyncio.sleep(FILE_CHECK_SECONDS)
        for path, before in seen.items():
            if file_fingerprint(path) != before:
                log.info("file changed, restarting", file=path)
                manager.request_stop(f"{path} changed")
                return


async def _first(
    waits: Sequence[Awaitable[object]], others: Iterable[asyncio.Future[Any]] = ()
) -> None:
    """Wait until one of ``waits`` or ``others`` completes; cancel what we wrapped.

    ``others`` are tasks owned elsewhere (controllers): watched, never cancelled here.
    """
    own: list[asyncio.Future[object]] = [asyncio.ensure_future(w) for w in waits]
    watched: list[asyncio.Future[object]] = [*own, *others]
    try:
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in own:
            task.cancel()


async def _bounded(what: str, step: Awaitable[None], timeout: float = CLEANUP_TIMEOUT) -> None:
    """Run one shutdown step with a time limit; log (never raise) its failure."""
    try:
        async with asyncio.timeout(timeout):
            await step
    except TimeoutError:
        log.error(f"{what} timed out", timeout_seconds=timeout)
    except Exception as err:
        log.error(f"{what} failed", error=repr(err))
