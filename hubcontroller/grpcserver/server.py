"""``hubcontroller grpc-server``: the hub's CloudEvents gRPC server, as a process.

Serves OCM's CloudEventService over TLS on ``server_bind_port`` (every
interface, as OCM, unless ``--bind-address`` names one), backed by the hub
API server named by ``--kubeconfig``; the serving certificate and the client
CA are re-read when their files change (checked every
``cert_watch_interval``). ``--listen`` serves /metrics and the probes, over
HTTPS unless ``--insecure-serving`` (as the agent and the hub manager).

The certificate files are checked (readable PEM, key matching the
certificate) and the port is bound before the process serves anything: a
failure ends it with exit code 1 and one line naming the file or the port.
gRPC core is handed checked files only, since it reports a bad key as a
failure to bind.
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import socket
import ssl
import time
from pathlib import Path
from typing import Any

import grpc
import structlog
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from hubcontroller.grpcserver.broker import CloudEventBroker
from hubcontroller.grpcserver.config import GrpcServerConfig, GrpcServerSettings, load_server_config
from hubcontroller.grpcserver.tlsfront import BACKEND_HOST, TLSFront
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import add_CloudEventServiceServicer_to_server
from ocmkit.command import EXIT_FAILURE
from ocmkit.kube import KubeClient
from ocmkit.runtime import Manager, run_main
from ocmkit.runtime.tls import pem_file

log = structlog.get_logger(__name__)

#: User-Agent of the hub client: the hub names the works' finalizer and status
#: writers in managedFields after it, ``server`` as for OCM's ``server grpc``.
HUB_USER_AGENT = "server"

MANAGER_NAME = "grpc-server"
#: Calls gRPC core holds for the application before it cancels new ones.
PENDING_CALLS = 65536


class ServingError(Exception):
    """The gRPC port cannot serve: a certificate file that does not load, a port that
    cannot be bound (the message names the file or the port)."""


def _public_key_der(key: Any) -> bytes:
    return bytes(
        key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def check_serving_files(
    config: GrpcServerConfig, cert: bytes, key: bytes, ca: bytes | None
) -> None:
    """Raise ServingError unless the files' content is a PEM certificate with its own
    private key (and, when set, a PEM client CA bundle)."""
    what = "cannot load the gRPC serving certificate"
    try:
        leaf = x509.load_pem_x509_certificates(cert)[0]
    except ValueError as err:
        raise ServingError(f"{what}: {config.tls_cert_file}: {err}") from None
    try:
        private = serialization.load_pem_private_key(key, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as err:
        raise ServingError(f"{what}: {config.tls_key_file}: {err}") from None
    if _public_key_der(private) != _public_key_der(leaf):
        # Go's words, as OCM's server says it.
        raise ServingError(
            f"{what}: {config.tls_key_file} is not the key of {config.tls_cert_file}: "
            "private key does not match public key"
        )
    if ca is not None:
        try:
            x509.load_pem_x509_certificates(ca)
        except ValueError as err:
            raise ServingError(
                f"cannot load the gRPC client CA: {config.client_ca_file}: {err}"
            ) from None


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise ServingError(f"cannot load the gRPC {what}: {err}") from None


def _bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound, as the OS says it; None when it can.

    Asked before gRPC core binds: its own failure names no cause on the
    Python side and writes a C-core line to stderr.
    """
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # gRPC core binds with SO_REUSEADDR too: only a real listener is in the way.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as err:
        if err.errno == errno.EAFNOSUPPORT and host == "::":
            return _bind_problem("0.0.0.0", port)  # no IPv6: gRPC core falls back so
        return (err.strerror or str(err)).lower()
    return None


def _listening_socket(host: str, port: int, address: str) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``[::]``: every interface, IPv4 too);
    raises ServingError."""
    host = host.strip("[]")
    try:
        if host == "::" and socket.has_dualstack_ipv6():
            return socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True)
        if host == "::":
            host = "0.0.0.0"  # every interface, as asked; this host has no IPv6
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family)
    except OSError as err:
        # create_server words its own message; the OS's is the cause.
        cause = os.strerror(err.errno) if err.errno else str(err)
        raise ServingError(f"cannot listen on {address}: {cause.lower()}") from None


class _Certificates:
    """The serving pair and client CA, re-read when the files change."""

    def __init__(self, config: GrpcServerConfig) -> None:
        self._config = config
        self._seen: tuple[bytes, bytes, bytes | None] | None = None
        self._checked = 0.0
        self._context: ssl.SSLContext | None = None

    def _files(self) -> tuple[bytes, bytes, bytes | None]:
        """The files' content, checked; raises ServingError."""
        config = self._config
        cert = _read(config.tls_cert_file, "serving certificate")
        key = _read(config.tls_key_file, "serving certificate")
        ca = _read(config.client_ca_file, "client CA") if config.client_ca_file else None
        check_serving_files(config, cert, key, ca)
        return cert, key, ca

    def initial(self) -> tuple[grpc.ServerCertificateConfiguration, bool]:
        """The configuration to start with (and whether there is a client CA);
        raises ServingError."""
        self._seen = cert, key, ca = self._files()
        self._checked = time.monotonic()
        return grpc.ssl_server_certificate_configuration([(key, cert)], ca), ca is not None

    def _changed(self) -> tuple[bytes, bytes, bytes | None] | None:
        """The files when they changed since last seen (looked at once per
        ``cert_watch_interval``); None: unchanged, or not readable now."""
        now = time.monotonic()
        if now - self._checked < self._config.cert_watch_interval:
            return None
        self._checked = now
        try:
            files = self._files()
        except ServingError as err:
            # Half-written files during a rotation: keep serving the last good pair.
            log.warning("cannot re-read the serving certificate", error=str(err))
            return None
        if files == self._seen:
            return None
        self._seen = files
        log.info("serving certificate reloaded")
        return files

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """Called by gRPC on handshakes: a new configuration when the files changed."""
        files = self._changed()
        if files is None:
            return None
        cert, key, ca = files
        return grpc.ssl_server_certificate_configuration([(key, cert)], ca)

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS front's context for a new connection: the newest files, a client
        certificate asked for and verified when given, HTTP/2 by ALPN."""
        if self._context is None or self._changed() is not None:
            assert self._seen is not None, "initial() first"
            try:
                self._context = _front_context(*self._seen)
            except (ssl.SSLError, ValueError) as err:
                if self._context is None:
                    raise ServingError(f"cannot load the gRPC serving certificate: {err}") from None
                log.warning("cannot use the changed serving certificate", error=str(err))
        return self._context


def _front_context(cert: bytes, key: bytes, ca: bytes | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with pem_file(cert + key) as path:
        context.load_cert_chain(path)
    if ca is not None:
        context.load_verify_locations(cadata=ca.decode("ascii", errors="replace"))
        context.verify_mode = ssl.CERT_OPTIONAL
    context.set_alpn_protocols(["h2"])
    return context


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
        # gRPC core cancels calls that arrive while 1,000 wait for the application (its
        # default); Go's server has no such queue limit, and a hub restart brings every
        # agent's subscription and resync request at once.
        ("grpc.server.max_pending_requests", PENDING_CALLS),
        ("grpc.server.max_pending_requests_hard_limit", PENDING_CALLS),
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
        self._bound: grpc.aio.Server | None = None
        self._server: grpc.aio.Server | None = None
        self._front: TLSFront | None = None
        self.port = 0

    def bind(self) -> None:
        """Load the certificates and bind the port (not serving yet); raises ServingError.

        Without a client CA, gRPC core serves TLS itself (bearer tokens only).
        With one, :class:`TLSFront` serves it, since gRPC core cannot ask for a
        certificate without requiring it, and gRPC listens on loopback behind it.
        """
        initial, client_ca = self._certs.initial()
        server = grpc.aio.server(options=_options(self.config))
        add_CloudEventServiceServicer_to_server(self.broker, server)
        host = self.settings.bind_address or "[::]"
        # Go's notation: ":8090" for every interface.
        address = f"{self.settings.bind_address}:{self.config.port}"
        problem = _bind_problem(host, self.config.port)
        if problem is not None:
            raise ServingError(f"cannot listen on {address}: {problem}")
        if client_ca:
            self._certs.ssl_context()  # refused files fail the start, not the first client
            sock = _listening_socket(host, self.config.port, address)
            backend = server.add_insecure_port(f"{BACKEND_HOST}:0")
            if backend == 0:
                sock.close()
                raise ServingError(f"cannot listen on {BACKEND_HOST}: gRPC core could not bind it")
            self._front = TLSFront(sock, self._certs.ssl_context, backend)
            self.broker.authenticator.peer_certificate = self._front.peer_certificate
            self._bound, self.port = server, sock.getsockname()[1]
            return
        credentials = grpc.dynamic_ssl_server_credentials(
            initial,
            # None from the fetcher means "unchanged" (gRPC's documented contract).
            self._certs.fetch,  # type: ignore[arg-type]
            require_client_authentication=False,
        )
        try:
            port = server.add_secure_port(f"{host}:{self.config.port}", credentials)
        except RuntimeError:  # "Failed to bind to address ..." (taken since the check)
            port = 0
        if port == 0:
            raise ServingError(f"cannot listen on {address}: gRPC core could not bind it")
        self._bound, self.port = server, port

    async def start(self) -> None:
        """Serve (binding first unless :meth:`bind` was called); raises ServingError."""
        if self._bound is None:
            self.bind()
        assert self._bound is not None
        await self._bound.start()
        if self._front is not None:
            await self._front.start()
        self._server = self._bound
        log.info(
            "serving CloudEvents over gRPC",
            address=f"{self.settings.bind_address or '[::]'}:{self.port}",
            client_certificates="verified if given" if self._front else "not requested",
        )

    async def stop(self) -> None:
        """Stop accepting calls, end the streams, stop the informers."""
        if self._front is not None:
            self._front.stop_accepting()
        if self._bound is not None:
            # Through the front's open connections: gRPC's goodbye reaches the agents.
            await self._bound.stop(grace=5)
            self._bound = self._server = None
        if self._front is not None:
            await self._front.stop()
            self._front = None
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
    """The manager running the server (not started), its gRPC port bound.

    Raises ValueError/KubeConfigError for bad settings, ServingError for
    certificate files that do not load or a port that cannot be bound.
    """
    settings.validate()
    config = load_server_config(settings.server_config)
    for key in config.unused:
        log.warning("server config key not applied (gRPC core chooses it)", key=key)
    serving_tls = settings.serving_tls()  # a bad pair is refused before any client is made
    _Certificates(config).initial()  # likewise the gRPC port's files
    hub = await KubeClient.connect(
        settings.kubeconfig,
        qps=settings.kube_api_qps,
        burst=settings.kube_api_burst,
        user_agent=HUB_USER_AGENT,
        name="hub",
    )
    service = GrpcServerService(settings, config, hub)
    try:
        service.bind()
    except ServingError:
        await hub.close()
        raise
    manager = Manager(
        MANAGER_NAME,
        settings=settings.manager_settings(serving_tls, hub, handle_signals=handle_signals),
    )
    manager.add_service(service)
    manager.add_closer("hub client", hub.close)
    return manager, service


def run(settings: GrpcServerSettings) -> int:
    """Run the server in a new event loop until SIGTERM; returns the exit code (2 for bad
    settings, 1 for certificate files that do not load or a port that cannot be bound)."""

    async def build() -> Manager:
        manager, _ = await build_grpc_server(settings)
        return manager

    async def main() -> int:
        try:
            return await run_main(build, terminate_on_files=settings.terminate_on_files)
        except ServingError as err:
            log.error("cannot serve gRPC", error=str(err))
            return EXIT_FAILURE

    return asyncio.run(main())
