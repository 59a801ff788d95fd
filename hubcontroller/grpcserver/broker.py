"""The CloudEventService: Subscribe and Publish, as OCM's hub gRPC server answers them.

Nothing is kept for an agent that is not connected (it resyncs when it comes
back), and a subscriber that cannot keep up loses its stream (and resyncs)
instead of growing a queue. Refusals use OCM's status codes.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog
from google.protobuf.empty_pb2 import Empty

from hubcontroller.grpcserver.auth import (
    WATCH_ACTION,
    AccessDenied,
    Authenticator,
    AuthError,
    Authorizer,
    parse_event_type,
)
from hubcontroller.grpcserver.works import WorkService
from ocmkit.cloudevents import CloudEvent, EventDecodeError
from ocmkit.cloudevents.event import (
    EXT_CLUSTER_NAME,
    MANIFEST_BUNDLES,
    RESYNC_REQUEST,
    SPEC,
    STATUS,
    UPDATE_REQUEST,
)
from ocmkit.cloudevents.pb.cloudevent_pb2 import CloudEvent as PbCloudEvent
from ocmkit.cloudevents.pb.cloudevent_pb2 import PublishRequest, SubscriptionRequest
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceServicer
from ocmkit.cloudevents.protobuf import PREFIX, SUBSCRIPTION_ID_HEADER, from_pb, heartbeat_pb, to_pb
from ocmkit.cloudevents.statuserror import status_error_text
from ocmkit.cloudevents.works import decode_status_event, resync_versions
from ocmkit.kube import KubeClient, KubeError

log = structlog.get_logger(__name__)

#: Events waiting for one subscriber before it is cut off as too slow.
QUEUE_LIMIT = 1000

Context = grpc.aio.ServicerContext[Any, Any]


@dataclass
class Subscriber:
    """One open Subscribe stream."""

    id: str
    cluster: str
    queue: asyncio.Queue[PbCloudEvent | None] = field(
        default_factory=lambda: asyncio.Queue(QUEUE_LIMIT)
    )


class CloudEventBroker(CloudEventServiceServicer):
    """The servicer; one per server process."""

    def __init__(
        self,
        hub: KubeClient,
        *,
        heartbeat_interval: float | None,
    ) -> None:
        self.authenticator = Authenticator(hub)
        self.authorizer = Authorizer(hub)
        self.works = WorkService(hub, self.send)
        self.heartbeat_interval = heartbeat_interval
        self.subscribers: dict[str, Subscriber] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- fan-out --------------------------------------------------------------------------
    def send(self, cluster: str, event: CloudEvent) -> None:
        """Queue ``event`` for every subscriber of ``cluster``."""
        message = to_pb(event)
        for sub in list(self.subscribers.values()):
            if sub.cluster != cluster:
                continue
            try:
                sub.queue.put_nowait(message)
            except asyncio.QueueFull:
                log.warning(
                    "subscriber too slow, closing its stream", cluster=cluster, subscription=sub.id
                )
                self.subscribers.pop(sub.id, None)
                while not sub.queue.empty():
                    sub.queue.get_nowait()
                sub.queue.put_nowait(None)

    # -- RPCs -------------------------------------------------------------------------------
    async def Subscribe(
        self, request: SubscriptionRequest, context: Context
    ) -> AsyncIterator[PbCloudEvent]:
        """Stream the spec events of one cluster."""
        try:
            who = await self.authenticator.authenticate(context)
            data_type = parse_event_type(f"{request.data_type}.spec.{WATCH_ACTION}")
            await self.authorizer.authorize(who, request.cluster_name, data_type)
        except AuthError as err:
            await context.abort(err.code, str(err))
        if not request.cluster_name:
            await context.abort(
                grpc.StatusCode.UNKNOWN, "invalid subscription request: missing cluster name"
            )
        if request.data_type != MANIFEST_BUNDLES:
            await context.abort(
                grpc.StatusCode.UNKNOWN,
                f"invalid subscription request: no service for data type {request.data_type}",
            )
        sub = Subscriber(str(uuid.uuid4()), request.cluster_name)
        await context.send_initial_metadata(((SUBSCRIPTION_ID_HEADER, sub.id),))
        self.subscribers[sub.id] = sub
        log.info("subscriber registered", cluster=sub.cluster, subscription=sub.id, user=who.user)
        try:
            # The cluster's informer starts now: its first list arrives as create events.
            task = asyncio.get_running_loop().create_task(self._ensure(sub.cluster))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            async for message in self._stream(sub):
                yield message
        finally:
            self.subscribers.pop(sub.id, None)
            log.info("subscriber gone", cluster=sub.cluster, subscription=sub.id)

    async def _ensure(self, cluster: str) -> None:
        try:
            await self.works.ensure(cluster)
        except (TimeoutError, KubeError) as err:
            log.warning("cannot serve the works of a cluster", cluster=cluster, error=str(err))

    async def _stream(self, sub: Subscriber) -> AsyncGenerator[PbCloudEvent, None]:
        loop = asyncio.get_running_loop()
        interval = self.heartbeat_interval
        next_beat = loop.time() + interval if interval else None
        while True:
            timeout = None if next_beat is None else max(next_beat - loop.time(), 0.0)
            try:
                async with asyncio.timeout(timeout):  # not wait_for: on 3.11 it can lose a cancel
                    message = await sub.queue.get()
            except TimeoutError:
                assert interval is not None
                next_beat = loop.time() + interval
                yield heartbeat_pb(str(uuid.uuid4()))
                continue
            if message is None:
                return
            yield message

    async def Publish(self, request: PublishRequest, context: Context) -> Empty:
        """Take one agent event: a spec resync request or a status update."""
        pb = request.event
        try:
            who = await self.authenticator.authenticate(context)
            kind = parse_event_type(pb.type)
            attr = pb.attributes.get(PREFIX + EXT_CLUSTER_NAME)
            if attr is None:
                raise AccessDenied("missing ce-clustername in event attributes")
            if attr.WhichOneof("attr") != "ce_string":
                raise AccessDenied("ce-clustername in event attributes is not a string")
            cluster = attr.ce_string
            await self.authorizer.authorize(who, cluster, kind)
        except AuthError as err:
            await context.abort(err.code, str(err))
        try:
            event = from_pb(pb)
        except EventDecodeError as err:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"failed to convert protobuf to cloudevent: {err}"
            )
        if kind.data_type != MANIFEST_BUNDLES:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"failed to find service for event type {kind.data_type}",
            )
        if kind.action == RESYNC_REQUEST and kind.subresource == SPEC:
            await self._resync(event, cluster, context)
            return Empty()
        if kind.subresource != STATUS or kind.action != UPDATE_REQUEST:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                json.dumps(f"unsupported action {kind.action} for work"),
            )
        try:
            update = decode_status_event(event)
            outcome = await self.works.apply_status(update)
        except KubeError as err:
            # The API error itself, as OCM's server encodes it: agents read it back.
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, status_error_text(err))
        except (EventDecodeError, TimeoutError) as err:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, json.dumps(str(err)))
        log.debug(
            "status event",
            cluster=cluster,
            resource_id=update.uid,
            generation=update.generation,
            outcome=outcome,
        )
        return Empty()

    async def _resync(self, event: CloudEvent, cluster: str, context: Context) -> None:
        try:
            versions = resync_versions(event)
            answer = await self.works.resync(cluster, versions)
        except (EventDecodeError, KubeError, TimeoutError) as err:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"failed to respond resync spec request: {err}",
            )
        for reply in answer:
            self.send(cluster, reply)
        log.info("answered a spec resync request", cluster=cluster, events=len(answer))
