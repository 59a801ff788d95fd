"""The grpc driver: OCM's CloudEventService over gRPC (docs/cloudevents.md).

Every subscription opens a new channel, so rotated client certificate files
are read afresh on each reconnect; while subscribed, a change of the files
ends the subscription. ``tokenFile`` is read again for each new channel,
after a refused publish and at least every minute, and its current token goes
with every call, so an open stream's publishes follow a rotation too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import structlog

from ocmkit.cloudevents import MANIFEST_BUNDLES, CloudEvent, EventDecodeError
from ocmkit.cloudevents.pb.cloudevent_pb2 import CloudEvent as PbCloudEvent
from ocmkit.cloudevents.pb.cloudevent_pb2 import PublishRequest, SubscriptionRequest
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceStub
from ocmkit.cloudevents.protobuf import SUBSCRIPTION_ID_HEADER, from_pb, is_heartbeat, to_pb
from ocmkit.cloudevents.statuserror import kube_error_from_text
from ocmkit.kube import KubeError, Unreachable
from ocmkit.kube.credentials import TokenFileCredentials
from ocmkit.kube.errors import KubeConfigError, error_from_status
from ocmkit.runtime.manager import file_fingerprint
from workagent.sources.config import GrpcConfig, load_grpc_config
from workagent.sources.transport import (
    CERTIFICATE_CHANGED,
    NotReady,
    SubscriptionFailed,
    certificate_changed,
)

if TYPE_CHECKING:
    from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceAsyncStub

    SubscribeCall = grpc.aio.UnaryStreamCall[SubscriptionRequest, PbCloudEvent]

#: The stream's messages, and then why it ended (or why the subscription must end).
Received = asyncio.Queue[PbCloudEvent | SubscriptionFailed]

log = structlog.get_logger(__name__)

#: How long the subscription's response headers may take. The server sends them after
#: its token and access reviews, which take seconds on a busy hub (OCM's agent waits as
#: long as the stream lives); the bound only stops a hung server from stalling us forever.
HEADER_TIMEOUT = 60.0
#: How long a stream that came without a subscription id may take to give its status.
REFUSAL_TIMEOUT = 5.0
PUBLISH_TIMEOUT = 30.0
#: The server refuses larger messages (4 MiB); stay below it.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

#: gRPC refusals as the HTTP status the controllers understand (else 500).
_HTTP_STATUS = {
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
}
_UNREACHABLE = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
)


def publish_error(err: grpc.aio.AioRpcError) -> KubeError:
    """A failed Publish as the typed error the controllers understand."""
    code = err.code()
    carried = kube_error_from_text(err.details() or "")
    if carried is not None:  # the hub's own answer, passed on by the server
        return carried
    detail = f"publish: {code.name}: {err.details() or ''}".strip()
    if code in _UNREACHABLE:
        return Unreachable(detail)
    return error_from_status(_HTTP_STATUS.get(code, 500), None, text=detail)


class _TokenFileAuth(grpc.AuthMetadataPlugin):
    """The token file's current token on every call (Subscribe and each Publish)."""

    def __init__(self, token: TokenFileCredentials) -> None:
        self._token = token

    def __call__(
        self, context: grpc.AuthMetadataContext, callback: grpc.AuthMetadataPluginCallback
    ) -> None:
        # Runs on a gRPC thread: current() reads the file synchronously when due.
        callback((("authorization", self._token.current()),), None)


class GrpcTransport:
    """A gRPC client of OCM's CloudEventService for one cluster."""

    name = "grpc"
    #: How often the client certificate files are checked for rotation (OCM: 5 min).
    cert_check_seconds = 300.0

    def __init__(self, config_path: str, cluster: str) -> None:
        self.config_path = config_path
        self.config: GrpcConfig = load_grpc_config(config_path)
        self.endpoint = self.config.url
        self.cluster = cluster
        self._stub: CloudEventServiceAsyncStub | None = None
        self._token: TokenFileCredentials | None = None
        keep = self.config.keep_alive
        if keep.enable and keep.time != keep.configured_time:
            log.warning(
                "keepAliveConfig.time below the minimum, using the minimum",
                configured_seconds=keep.configured_time,
                used_seconds=keep.time,
            )

    def channel_options(self) -> list[tuple[str, int | str]]:
        """The options every channel of this transport is created with."""
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
        if not config.secure:
            return grpc.aio.insecure_channel(config.url, options=self.channel_options())
        creds = grpc.ssl_channel_credentials(
            root_certificates=config.tls.ca,
            private_key=config.tls.key,
            certificate_chain=config.tls.cert,
        )
        if config.token_file:
            creds = grpc.composite_channel_credentials(
                creds, grpc.metadata_call_credentials(_TokenFileAuth(self._token_file(config)))
            )
        elif config.token:
            creds = grpc.composite_channel_credentials(
                creds, grpc.access_token_call_credentials(config.token)
            )
        return grpc.aio.secure_channel(config.url, creds, options=self.channel_options())

    def _token_file(self, config: GrpcConfig) -> TokenFileCredentials:
        """``tokenFile``, read again for each new channel (a reconnect), after a
        refused publish, and at least every minute.

        A projected service-account token is replaced on disk before it
        expires; one read once at start would be refused after a reconnect
        (OCM v1.2.1's agent then stays unauthenticated until restarted), and a
        stream outlives its token: its publishes need the new one. A file that
        cannot be read mid-rotation leaves the last token in use.
        """
        if self._token is None or str(self._token.path) != config.token_file:
            try:
                self._token = TokenFileCredentials(config.token_file)
            except KubeConfigError as err:
                raise SubscriptionFailed(str(err)) from None
        else:
            self._token.invalidate()
        return self._token

    @contextlib.asynccontextmanager
    async def subscription(self) -> AsyncIterator[AsyncIterator[CloudEvent]]:
        """Subscribe for the cluster; yields its events until the stream fails."""
        channel = self._new_channel()
        # What a rotation is measured against: the pair this channel uses.
        tls = self.config.tls
        cert_files = tuple(f for f in (tls.cert_file, tls.key_file) if f)
        cert_fingerprint = file_fingerprint(*cert_files)
        stub = CloudEventServiceStub(channel)
        call = stub.Subscribe(
            SubscriptionRequest(source="", cluster_name=self.cluster, data_type=MANIFEST_BUNDLES)
        )
        # Tasks feed a queue: waiting on the queue with a timeout never cancels a
        # read of the stream (which would end the call).
        received: Received = asyncio.Queue()
        feeders: list[asyncio.Task[None]] = []
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
            feeders.append(
                asyncio.create_task(_pump(call, received), name="grpc-subscription-reader")
            )
            if cert_files:
                watch = _watch_certificate(
                    cert_files, cert_fingerprint, self.cert_check_seconds, received
                )
                feeders.append(asyncio.create_task(watch, name="grpc-certificate-watch"))
            self._stub = stub
            yield self._events(received)
        finally:
            self._stub = None
            for feeder in feeders:
                feeder.cancel()
            await asyncio.gather(*feeders, return_exceptions=True)
            call.cancel()
            await channel.close()

    async def _events(self, received: Received) -> AsyncIterator[CloudEvent]:
        silence = self.config.server_healthiness_timeout
        loop = asyncio.get_running_loop()
        # Only a heartbeat proves the server healthy (spec 3.5): spec events do not
        # move the deadline, as sdk-go's heartbeat watcher does not.
        deadline = None if silence is None else loop.time() + silence
        while True:
            try:
                async with asyncio.timeout_at(deadline):  # not wait_for: it can lose a cancel
                    item = await received.get()
            except TimeoutError:
                raise SubscriptionFailed(
                    f"no heartbeat from the server for {silence}s (serverHealthinessTimeout)"
                ) from None
            if isinstance(item, SubscriptionFailed):
                raise item
            if is_heartbeat(item):
                if silence is not None:
                    deadline = loop.time() + silence
                continue
            try:
                yield from_pb(item)
            except EventDecodeError as err:
                log.warning("dropping an undecodable event", error=str(err))

    async def publish(self, event: CloudEvent) -> None:
        """Publish one event (unary); raises NotReady while not subscribed."""
        stub = self._stub
        if stub is None:
            raise NotReady()
        try:
            await stub.Publish(PublishRequest(event=to_pb(event)), timeout=PUBLISH_TIMEOUT)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.UNAUTHENTICATED and self._token is not None:
                self._token.invalidate()  # rotated on disk? the retry reads it
            raise publish_error(err) from None


async def _pump(call: SubscribeCall, received: Received) -> None:
    """Move the stream's messages into ``received``, then why the stream ended."""
    try:
        async for message in call:
            received.put_nowait(message)
    except grpc.aio.AioRpcError as err:
        received.put_nowait(SubscriptionFailed(_describe(err)))
    except Exception as err:
        received.put_nowait(SubscriptionFailed(f"subscription stream failed: {err!r}"))
    else:
        received.put_nowait(SubscriptionFailed("the server closed the subscription"))


async def _watch_certificate(
    paths: tuple[str, ...],
    seen: str,
    every: float,
    received: Received,
) -> None:
    """Put a SubscriptionFailed into ``received`` once the files' fingerprint is not ``seen``."""
    await certificate_changed(paths, seen, every)
    received.put_nowait(SubscriptionFailed(CERTIFICATE_CHANGED))


def _describe(err: grpc.aio.AioRpcError) -> str:
    return f"{err.code().name}: {err.details() or ''}".strip()


async def _status_of(call: SubscribeCall) -> str:
    """The status a subscription without a subscription id ended with."""
    try:
        async with asyncio.timeout(REFUSAL_TIMEOUT):
            code = await call.code()
            details = await call.details()
    except TimeoutError:
        return "the server sent no subscription id"
    return f"subscription refused: {code.name}: {details or ''}".strip()
