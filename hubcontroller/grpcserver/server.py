"""``hubcontroller grpc-server``: the hub's CloudEvents gRPC server, as a process.

Serves OCM's CloudEventService over TLS on ``server_bind_port`` (every
interface, as OCM, unless ``--bind-address`` names one), backed by the hub
API server named by ``--kubeconfig``; the serving certificate and the client
CA are re-read when their files change (checked every
``cert_watch_interval``). ``--listen`` serves /metrics and the probes, over
HTTPS unless ``--insecure-serving`` (as the agent and the hub manager).
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

import grpc
import structlog

from hubcontroller.grpcserver.broker import CloudEventBroker
from hubcontroller.grpcserver.config import GrpcServerConfig, GrpcServerSettings, load_server_config
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import add_CloudEventServiceServicer_to_server
from ocmkit.kube import KubeClient
from ocmkit.runtime import Manager, ManagerSettings, run_main

log = structlog.get_logger(__name__)

MANAGER_NAME = "grpc-server"


class _Certificates:
    """The serving pair and client CA, re-read when the files change."""

    def __init__(self, config: GrpcServerConfig) -> None:
        self._config = config
        self._seen: tuple[bytes, bytes, bytes | None] | None = None
        self._checked = 0.0

    def _files(self) -> tuple[bytes, bytes, bytes | None]:
        cert = Path(self._config.tls_cert_file).read_bytes()
        key = Path(self._config.tls_key_file).read_bytes()
        ca_path = self._config.client_ca_file
        ca = Path(ca_path).read_bytes() if ca_path else None
        return cert, key, ca

    def initial(self) -> tuple[grpc.ServerCertificateConfiguration, bool]:
        self._seen = cert, key, ca = self._files()
        self._checked = time.monotonic()
        return grpc.ssl_server_certificate_configuration([(key, cert)], ca), ca is not None

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """Called by gRPC on handshakes: a new configuration when the files changed."""
        now = time.monotonic()
        if now - self._checked < self._config.cert_watch_interval:
            return None
        self._checked = now
        try:
            files = self._files()
        except OSError as err:
            log.warning("cannot re-read the serving certificate", error=str(err))
            return None
        if files == self._seen:
            return None
        self._seen = cert, key, ca = files
        log.info("serving certificate reloaded")
        return grpc.ssl_server_certificate_configuration([(key, cert)], ca)


def _options(config: GrpcServerConfig) -> list[tuple[str, Any]]:
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", config.max_receive_message_size),
        ("grpc.max_send_message_length", config.max_send_message_size),
        ("grpc.max_concurrent_streams", min(config.max_concurrent_streams, 2**31 - 1)),
        ("grpc.keepalive_time_ms", int(config.server_ping_interval * 1000)),
        ("grpc.keepalive_timeout_ms", int(config.server_ping_timeout * 1000)),
        (
            "grpc.http2.min_ping_interval_without_data_ms",
            int(config.client_min_ping_interval * 1000),
        ),
        (
            "grpc.http2.min_recv_ping_interval_without_data_ms",
            int(config.client_min_ping_interval * 1000),
        ),
        ("grpc.keepalive_permit_without_calls", int(config.permit_ping_without_stream)),
        ("grpc.so_reuseport", 0),
    ]
    # Zero, as unset, means no limit (Go's keepalive semantics).
    if math.isfinite(config.max_connection_age) and config.max_connection_age > 0:
        options.append(("grpc.max_connection_age_ms", int(config.max_connection_age * 1000)))
    return options


class GrpcServerService:
    """The gRPC server as a manager service: started, health-checked, stopped."""

    name = "grpc-server"

    def __init__(
        self, settings: GrpcServerSettings, config: GrpcServerConfig, hub: KubeClient
    ) -> None:
        self.settings = settings
        self.config = config
        interval = None if settings.heartbeat_disabled else settings.heartbeat_interval
        self.broker = CloudEventBroker(hub, heartbeat_interval=interval)
        self._certs = _Certificates(config)
        self._server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        """Bind and serve (raises ValueError for unusable certificates or ports)."""
        try:
            initial, require_client_cert = self._certs.initial()
        except OSError as err:
            raise ValueError(f"serving certificate: {err}") from None
        credentials = grpc.dynamic_ssl_server_credentials(
            initial,
            # None from the fetcher means "unchanged" (gRPC's documented contract).
            self._certs.fetch,  # type: ignore[arg-type]
            require_client_authentication=require_client_cert,
        )
        server = grpc.aio.server(options=_options(self.config))
        add_CloudEventServiceServicer_to_server(self.broker, server)
        host = self.settings.bind_address or "[::]"
        self.port = server.add_secure_port(f"{host}:{self.config.port}", credentials)
        if self.port == 0:
            raise ValueError(f"cannot bind {host}:{self.config.port}")
        await server.start()
        self._server = server
        log.info(
            "serving CloudEvents over gRPC",
            address=f"{host}:{self.port}",
            client_certificates="required" if require_client_cert else "not requested",
        )

    async def stop(self) -> None:
        """Stop accepting calls, end the streams, stop the informers."""
        if self._server is not None:
            await self._server.stop(grace=5)
            self._server = None
        await self.broker.works.stop()

    def readiness_failure(self) -> str | None:
        """Not ready until serving."""
        return None if self._server is not None else "not serving yet"

    def liveness_failure(self) -> str | None:
        """A cluster informer whose watch is stuck."""
        return self.broker.works.ready_failure()


async def build_grpc_server(
    settings: GrpcServerSettings, *, handle_signals: bool = True
) -> tuple[Manager, GrpcServerService]:
    """The manager running the server (not started); raises ValueError/KubeConfigError."""
    settings.validate()
    config = load_server_config(settings.server_config)
    for key in config.unused:
        log.warning("server config key not applied (gRPC core chooses it)", key=key)
    serving_tls = settings.serving_tls()  # a bad pair is refused before any client is made
    hub = await KubeClient.connect(
        settings.kubeconfig, qps=settings.kube_api_qps, burst=settings.kube_api_burst, name="hub"
    )
    service = GrpcServerService(settings, config, hub)
    manager = Manager(
        MANAGER_NAME,
        settings=ManagerSettings(
            bind_address=settings.listen,
            ssl_context=serving_tls,
            auth_client=hub,
            handle_signals=handle_signals,
            build_info=settings.component_namespace,
        ),
    )
    manager.add_service(service)
    manager.add_closer("hub client", hub.close)
    return manager, service


def run(settings: GrpcServerSettings) -> int:
    """Run the server in a new event loop until SIGTERM; returns the exit code (2 for bad
    settings)."""

    async def build() -> Manager:
        manager, _ = await build_grpc_server(settings)
        return manager

    return asyncio.run(run_main(build, terminate_on_files=settings.terminate_on_files))
