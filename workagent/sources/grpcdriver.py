"""The grpc driver: OCM's CloudEventService over gRPC (docs/cloudevents.md).

Subscribe for the cluster, wait for the ``subscription-id`` header, then read
events (heartbeats are dropped; with ``serverHealthinessTimeout`` a silent
stream is abandoned). Every subscription opens a new channel, so the client
certificate and key files are read afresh on each reconnect; while
subscribed they are checked every ``cert_check_seconds`` and a change ends
the subscription (the source reconnects with the new pair).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import structlog

from ocmkit.cloudevents import MANIFEST_BUNDLES, CloudEvent, EventDecodeError
from ocmkit.cloudevents.pb.cloudevent_pb2 import CloudEvent as PbCloudEvent
from ocmkit.cloudevents.pb.cloudevent_pb2 import PublishRequest, SubscriptionRequest
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceStub
from ocmkit.cloudevents.protobuf import from_pb, is_heartbeat, to_pb
from ocmkit.cloudevents.statuserror import kube_error_from_text
from ocmkit.kube import BadRequest, Forbidden, KubeError, ServerError, Unauthorized, Unreachable
from workagent.sources.config import GrpcConfig, load_grpc_config
from workagent.sources.transport import NotReady, SubscriptionFailed

if TYPE_CHECKING:
    from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceAsyncStub

    SubscribeCall = grpc.aio.UnaryStreamCall[SubscriptionRequest, PbCloudEvent]

log = structlog.get_logger(__name__)

SUBSCRIPTION_ID_HEADER = "subscription-id"
#: How long the subscription's response headers may take.
HEADER_TIMEOUT = 5.0
PUBLISH_TIMEOUT = 30.0
#: How often the client certificate files are checked for rotation (OCM: 5 min).
CERT_CHECK_SECONDS = 300.0
#: The server refuses larger messages (4 MiB); stay below it.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024


def publish_error(err: grpc.aio.AioRpcError) -> KubeError:
    """A failed Publish as the typed error the controllers understand."""
    code = err.code()
    carried = kube_error_from_text(err.details() or "")
    if carried is not None:  # the hub's own answer, passed on by the server
        return carried
    detail = f"publish: {code.name}: {err.details() or ''}".strip()
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return Forbidden(403, "Forbidden", detail)
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return Unauthorized(401, "Unauthorized", detail)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return BadRequest(400, "BadRequest", detail)
    if code in (
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.CANCELLED,
    ):
        return Unreachable(detail)
    return ServerError(500, "InternalError", detail)


def _fingerprint(*paths: str) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with contextlib.suppress(OSError):
            digest.update(Path(path).read_bytes())
    return digest.hexdigest()


class GrpcTransport:
    """A gRPC client of OCM's CloudEventService for one cluster."""

    name = "grpc"

    def __init__(
        self,
        config_path: str,
        cluster: str,
        *,
        cert_check_seconds: float = CERT_CHECK_SECONDS,
    ) -> None:
        self.config_path = config_path
        self.config: GrpcConfig = load_grpc_config(config_path)
        self.endpoint = self.config.url
        self.cluster = cluster
        self.cert_check_seconds = cert_check_seconds
        self._channel: grpc.aio.Channel | None = None
        self._stub: CloudEventServiceAsyncStub | None = None
        self._ready = False
        self._cert_files: tuple[str, ...] = ()
        self._cert_fingerprint = ""

    async def check(self) -> None:
        """The config was read at construction: nothing more can be checked before
        connecting (gRPC channels are lazy)."""

    def _options(self) -> list[tuple[str, int | str]]:
        options: list[tuple[str, int | str]] = [
            ("grpc.max_receive_message_length", -1),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ]
        keep = self.config.keep_alive
        if keep.enable:
            options += [
                ("grpc.keepalive_time_ms", int(keep.time * 1000)),
                ("grpc.keepalive_timeout_ms", int(keep.timeout * 1000)),
                ("grpc.keepalive_permit_without_calls", int(keep.permit_without_stream)),
                ("grpc.http2.max_pings_without_data", 0),
            ]
        return options

    def _new_channel(self) -> grpc.aio.Channel:
        config = self.config
        if config.tls.cert_file or config.tls.key_file:
            # Re-read rotated files (the CSR-issued pair is renewed in place).
            try:
                config = load_grpc_config(self.config_path)
            except ValueError as err:
                raise SubscriptionFailed(str(err)) from None
            self.config = config
        # What a rotation is measured against: the pair this channel uses.
        self._cert_files = tuple(f for f in (config.tls.cert_file, config.tls.key_file) if f)
        self._cert_fingerprint = _fingerprint(*self._cert_files) if self._cert_files else ""
        if not config.secure:
            return grpc.aio.insecure_channel(config.url, options=self._options())
        creds = grpc.ssl_channel_credentials(
            root_certificates=config.tls.ca,
            private_key=config.tls.key,
            certificate_chain=config.tls.cert,
        )
        if config.token:
            creds = grpc.composite_channel_credentials(
                creds, grpc.access_token_call_credentials(config.token)
            )
        return grpc.aio.secure_channel(config.url, creds, options=self._options())

    @contextlib.asynccontextmanager
    async def subscription(self) -> AsyncIterator[AsyncIterator[CloudEvent]]:
        """Subscribe for the cluster; yields its events until the stream fails."""
        channel = self._new_channel()
        self._channel = channel
        stub = CloudEventServiceStub(channel)
        call = stub.Subscribe(
            SubscriptionRequest(source="", cluster_name=self.cluster, data_type=MANIFEST_BUNDLES)
        )
        try:
            try:
                async with asyncio.timeout(HEADER_TIMEOUT):
                    headers = await call.initial_metadata()
            except TimeoutError:
                raise SubscriptionFailed("no subscription headers from the server") from None
            except grpc.aio.AioRpcError as err:
                raise SubscriptionFailed(_describe(err)) from None
            sub_id = dict(headers or ()).get(SUBSCRIPTION_ID_HEADER)
            if not sub_id:
                raise SubscriptionFailed(await _status_of(call))
            log.debug("subscription open", subscription_id=sub_id, url=self.config.url)
            self._stub = stub
            self._ready = True
            yield self._events(call)
        finally:
            self._ready = False
            self._stub = None
            call.cancel()
            await channel.close()
            if self._channel is channel:
                self._channel = None

    async def _events(self, call: SubscribeCall) -> AsyncIterator[CloudEvent]:
        watched, fingerprint = self._cert_files, self._cert_fingerprint
        loop = asyncio.get_running_loop()
        next_check = loop.time() + self.cert_check_seconds
        silence = self.config.server_healthiness_timeout
        # A reader task feeds a queue: waiting on the queue with a timeout never
        # cancels a read of the stream (which would end the call).
        received: asyncio.Queue[PbCloudEvent | Exception | None] = asyncio.Queue()
        pump = asyncio.create_task(_pump(call, received), name="grpc-subscription-reader")
        last_message = loop.time()
        try:
            while True:
                timeout = None if silence is None else max(last_message + silence - loop.time(), 0)
                if watched:
                    until_check = max(next_check - loop.time(), 0.0)
                    timeout = until_check if timeout is None else min(timeout, until_check)
                try:
                    async with asyncio.timeout(timeout):  # not wait_for: it can lose a cancel
                        item = await received.get()
                except TimeoutError:
                    if watched and loop.time() >= next_check:
                        next_check = loop.time() + self.cert_check_seconds
                        if _fingerprint(*watched) != fingerprint:
                            raise SubscriptionFailed("the client certificate changed") from None
                    if silence is not None and loop.time() - last_message >= silence:
                        raise SubscriptionFailed(
                            f"no heartbeat from the server for {silence}s "
                            "(serverHealthinessTimeout)"
                        ) from None
                    continue
                if item is None:
                    raise SubscriptionFailed("the server closed the subscription")
                if isinstance(item, grpc.aio.AioRpcError):
                    raise SubscriptionFailed(_describe(item))
                if isinstance(item, Exception):
                    raise SubscriptionFailed(f"subscription stream failed: {item!r}")
                last_message = loop.time()
                if is_heartbeat(item):
                    continue
                try:
                    yield from_pb(item)
                except EventDecodeError as err:
                    log.warning("dropping an undecodable event", error=str(err))
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump

    async def publish(self, event: CloudEvent) -> None:
        """Publish one event (unary); raises NotReady while not subscribed."""
        stub = self._stub
        if stub is None or not self._ready:
            raise NotReady()
        try:
            await stub.Publish(PublishRequest(event=to_pb(event)), timeout=PUBLISH_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            raise publish_error(err) from None

    async def close(self) -> None:
        """Close the channel (ends a subscription in progress)."""
        channel, self._channel = self._channel, None
        self._ready = False
        if channel is not None:
            await channel.close()


async def _pump(
    call: SubscribeCall, received: asyncio.Queue[PbCloudEvent | Exception | None]
) -> None:
    """Move the stream's messages into ``received``; then None, or the error."""
    try:
        async for message in call:
            received.put_nowait(message)
    except asyncio.CancelledError:
        raise
    except Exception as err:
        received.put_nowait(err)
        return
    received.put_nowait(None)


def _describe(err: grpc.aio.AioRpcError) -> str:
    return f"{err.code().name}: {err.details() or ''}".strip()


async def _status_of(call: SubscribeCall) -> str:
    """The status a subscription without a subscription id ended with."""
    try:
        async with asyncio.timeout(HEADER_TIMEOUT):
            code = await call.code()
            details = await call.details()
    except TimeoutError:
        return "the server sent no subscription id"
    return f"subscription refused: {code.name}: {details or ''}".strip()
