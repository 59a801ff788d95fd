"""TLS in front of the gRPC server when a client CA is set: a certificate asked for, not required.

OCM's server verifies a client certificate if the client gives one (Go's
``VerifyClientCertIfGiven``), so agents that authenticate with a bearer token
connect without a certificate next to agents with one. Python's gRPC can only
require a certificate or not ask for one. With a client CA the server
therefore listens here: each connection's TLS ends in this front (the
certificate asked for and verified against the CA when given), and its bytes
go on to the gRPC server on a loopback port. The front remembers the verified
certificate by the forwarded connection's source port, which is the peer
address the gRPC server reports for the call (``ipv4:127.0.0.1:<port>``).

A process on the same host that connects to the loopback port directly has
no certificate on record, so it can only authenticate with a bearer token, as
through the front.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

#: The gRPC server's loopback address behind the front.
BACKEND_HOST = "127.0.0.1"
#: Bytes read from one side before they are written to the other.
CHUNK = 64 * 1024
#: How long a client may take to finish its handshake (gRPC-Go's default
#: ``ConnectionTimeout``, OCM's ``connection_timeout``).
HANDSHAKE_SECONDS = 120.0


def backend_peer(port: int) -> str:
    """The peer the gRPC server reports for a call over the front's connection from ``port``."""
    return f"ipv4:{BACKEND_HOST}:{port}"


class TLSFront:
    """Terminates TLS on ``sock`` with the context ``contexts()`` gives for each new
    connection, and forwards the bytes to the gRPC server on ``backend_port``."""

    def __init__(
        self, sock: socket.socket, contexts: Callable[[], ssl.SSLContext], backend_port: int
    ) -> None:
        self._sock = sock
        self._contexts = contexts
        self._backend_port = backend_port
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        #: DER client certificates (None: none given) by the backend peer they reach.
        self._peers: dict[str, bytes | None] = {}

    def peer_certificate(self, peer: str) -> bytes | None:
        """The verified client certificate (DER) of the call from ``peer``; None: none."""
        return self._peers.get(peer)

    async def start(self) -> None:
        """Accept connections on the socket."""
        self._server = await asyncio.start_server(self._accept, sock=self._sock, limit=CHUNK)

    def stop_accepting(self) -> None:
        """Refuse new connections; the open ones go on (gRPC ends them gracefully)."""
        if self._server is not None:
            self._server.close()

    async def stop(self) -> None:
        """Stop accepting and close every forwarded connection."""
        self.stop_accepting()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._forward(reader, writer)
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, TimeoutError) as err:
            # A refused handshake (no TLS, a certificate the CA did not sign) or a
            # dropped connection: the client sees it; the server goes on.
            log.debug("gRPC connection ended", peer=writer.get_extra_info("peername"), error=err)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await writer.start_tls(self._contexts(), ssl_handshake_timeout=HANDSHAKE_SECONDS)
        tls = writer.get_extra_info("ssl_object")
        certificate = tls.getpeercert(binary_form=True) if tls is not None else None
        back_reader, back_writer = await asyncio.open_connection(
            BACKEND_HOST, self._backend_port, limit=CHUNK
        )
        peer = backend_peer(back_writer.get_extra_info("sockname")[1])
        # On record before the first byte reaches the server, so no call can miss it.
        self._peers[peer] = certificate
        try:
            pumps = [
                asyncio.ensure_future(_pump(reader, back_writer)),
                asyncio.ensure_future(_pump(back_reader, writer)),
            ]
            try:
                # Either side closing ends the connection (HTTP/2 has no half-close).
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            self._peers.pop(peer, None)
            back_writer.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy ``reader`` to ``writer`` until end of stream or a broken connection."""
    with contextlib.suppress(OSError, ssl.SSLError):
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
