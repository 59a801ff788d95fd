"""The mqtt driver: manifestbundle CloudEvents over MQTT v5 topics (OCM's sdk-go layout).

Subscribe to ``topics.sourceEvents`` with its last ``+`` set to the cluster
(and ``sourceBroadcast`` as written); publish status events to
``agentEvents`` with the last ``+`` set to the cluster and any other ``+`` to
the work's original source, and the spec resync request to
``agentBroadcast`` (first ``+`` = cluster) when configured, else to
``agentEvents``. Client id ``<cloudevents-client-id>-client``, clean start,
QoS from ``pubQoS``/``subQoS``; TLS 1.3 when a client certificate and key
are configured. Client certificate files are checked every 5 min, and a
change reconnects with the new pair, as OCM's agent does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import aiomqtt
import structlog
from paho.mqtt import client as paho
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from ocmkit.cloudevents import CloudEvent, EventDecodeError
from ocmkit.cloudevents.event import EXT_ORIGINAL_SOURCE
from ocmkit.cloudevents.mqttcodec import from_mqtt, to_mqtt
from ocmkit.kube import Unreachable
from ocmkit.kube.certpair import CertificatePairError, load_cert_pair
from ocmkit.runtime.manager import file_fingerprint
from workagent.sources.config import (
    MqttConfig,
    MqttTopics,
    TLSMaterial,
    load_mqtt_config,
    strip_share,
)
from workagent.sources.transport import (
    CERTIFICATE_CHANGED,
    NotReady,
    SubscriptionFailed,
    certificate_changed,
)

log = structlog.get_logger(__name__)


def _replace_last(topic: str, value: str) -> str:
    head, sep, tail = topic.rpartition("+")
    return head + value + tail if sep else topic


def subscribe_topics(topics: MqttTopics, cluster: str) -> list[str]:
    """What the agent subscribes to."""
    wanted = [_replace_last(topics.source_events, cluster)]
    if topics.source_broadcast:
        wanted.append(topics.source_broadcast)
    return wanted


def publish_topic(topics: MqttTopics, cluster: str, original_source: str) -> str:
    """Where the agent publishes an event for ``original_source`` ("" = all sources)."""
    if not original_source and topics.agent_broadcast:
        return strip_share(topics.agent_broadcast).replace("+", cluster, 1)
    topic = _replace_last(strip_share(topics.agent_events), cluster)
    topic = _replace_last(topic, original_source)
    if "+" in topic or "//" in topic:
        raise EventDecodeError(
            f"cannot publish for source {original_source!r}: topic {topic!r} is not concrete"
        )
    return topic


def _client_tls(tls: TLSMaterial) -> ssl.SSLContext:
    """An SSL context for the broker (TLS 1.3), from files or in-memory PEM."""
    context = ssl.create_default_context(cadata=tls.ca.decode() if tls.ca else None)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    if tls.cert_file and tls.key_file:
        load_cert_pair(context, tls.cert_file, tls.key_file)
        return context
    # The ssl module loads a certificate chain from files only.
    with tempfile.TemporaryDirectory(prefix="mqtt-tls-") as tmp:
        cert_file = os.path.join(tmp, "tls.crt")
        key_file = os.path.join(tmp, "tls.key")
        for path, data in ((cert_file, tls.cert), (key_file, tls.key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data or b"")
        load_cert_pair(context, cert_file, key_file)
    return context


class PublishRefused(aiomqtt.MqttError):
    """The broker answered a QoS 1/2 PUBLISH with a failure reason code (≥ 0x80)."""


class _Client(aiomqtt.Client):
    """aiomqtt's client, with a broker's refusal of a publish raised.

    aiomqtt 2.5 completes a QoS 1/2 publish on any PUBACK/PUBREC, refusals
    included (``Not authorized`` from a broker ACL): the status would count as
    sent and never be sent again. paho.golang, under OCM's agent, returns them
    as errors (``error publishing: The PUBLISH is not authorized.``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refusals: dict[int, ReasonCode] = {}
        self._first_error = ""
        self._connecting = False
        self._client.on_log = self._on_log

    async def __aenter__(self) -> _Client:
        self._connecting = True
        self._first_error = ""
        try:
            await super().__aenter__()
        finally:
            self._connecting = False
        return self

    def _on_log(self, client: paho.Client, userdata: Any, level: int, text: str) -> None:
        # The first error of a connection attempt is its cause (a TLS alert); what
        # follows as the socket closes (an EOF) would hide it.
        if level == paho.MQTT_LOG_ERR and not self._first_error:
            self._first_error = text

    def _on_disconnect(
        self,
        client: paho.Client,
        userdata: Any,
        flags: paho.DisconnectFlags,
        reason_code: ReasonCode,
        properties: Properties | None = None,
    ) -> None:
        # aiomqtt ignores a connection lost before CONNACK and waits out its
        # timeout (dialTimeout, 60 s): a broker refusing our client certificate
        # would be reported a minute late as "Operation timed out".
        if self._connecting and not self._connected.done():
            cause = self._first_error or "the broker closed the connection"
            self._connected.set_exception(
                aiomqtt.MqttError(f"connection lost before the broker answered: {cause}")
            )
            return
        super()._on_disconnect(client, userdata, flags, reason_code, properties)

    def _on_publish(
        self,
        client: paho.Client,
        userdata: Any,
        mid: int,
        reason_code: ReasonCode,
        properties: Properties,
    ) -> None:
        if reason_code.is_failure:
            self._refusals[mid] = reason_code
        super()._on_publish(client, userdata, mid, reason_code, properties)

    async def publish_acknowledged(
        self, topic: str, payload: bytes, qos: int, properties: Properties
    ) -> None:
        """Publish and wait for the broker's acknowledgement (QoS 1/2);
        raises :class:`PublishRefused` when it refuses the message."""
        info = self._client.publish(topic, payload, qos, False, properties)
        if info.rc != paho.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
        try:
            if not info.is_published():
                confirmation = asyncio.Event()
                with self._pending_call(info.mid, confirmation, self._pending_publishes):
                    await self._wait_for(confirmation.wait(), timeout=None)
        finally:  # never left for a later message with the same (recycled) id
            refused = self._refusals.pop(info.mid, None)
        if refused is not None:
            raise PublishRefused(f"the broker refused the message on {topic!r}: {refused}")


async def _first_or_rotated(
    received: Awaitable[aiomqtt.Message], rotated: asyncio.Task[None]
) -> aiomqtt.Message:
    """The next message, unless the client certificate changes first."""
    task = asyncio.ensure_future(received)
    try:
        await asyncio.wait((task, rotated), return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            raise SubscriptionFailed(CERTIFICATE_CHANGED)
        return task.result()
    finally:
        task.cancel()  # no-op when done; else the read must not outlive the wait


class MqttTransport:
    """An MQTT v5 client of one broker for one cluster."""

    name = "mqtt"
    #: How often the client certificate files are checked for rotation (OCM: 5 min).
    cert_check_seconds = 300.0

    def __init__(self, config_path: str, cluster: str, client_id: str) -> None:
        self.config: MqttConfig = load_mqtt_config(config_path)
        self.endpoint = self.config.broker_host
        self.cluster = cluster
        self.client_id = client_id
        self._client: _Client | None = None

    def _new_client(self) -> _Client:
        config = self.config
        tls = None
        if config.tls.cert and config.tls.key:
            try:
                tls = _client_tls(config.tls)
            except (OSError, CertificatePairError) as err:
                raise SubscriptionFailed(f"mqtt TLS: {err}") from None
        return _Client(
            config.host,
            config.port,
            identifier=f"{self.client_id}-client",
            protocol=aiomqtt.ProtocolVersion.V5,
            username=config.username or None,
            password=config.password or None,
            keepalive=config.keep_alive,
            timeout=config.dial_timeout,
            tls_context=tls,
        )

    async def check(self) -> None:
        """Connect once: a broker that cannot be reached at start is fatal, as in OCM."""
        try:
            client = self._new_client()
        except SubscriptionFailed as err:  # a client certificate pair that does not load
            raise ValueError(str(err)) from None
        try:
            async with client:
                pass
        except aiomqtt.MqttError as err:
            raise ValueError(f"cannot connect to the MQTT broker {self.endpoint}: {err}") from None

    @contextlib.asynccontextmanager
    async def subscription(self) -> AsyncIterator[AsyncIterator[CloudEvent]]:
        """Connect, subscribe for the cluster, and yield the received events."""
        tls = self.config.tls
        cert_files = tuple(f for f in (tls.cert_file, tls.key_file) if f)
        seen = file_fingerprint(*cert_files)  # before reading them: a change then is seen
        client = self._new_client()
        rotated: asyncio.Task[None] | None = None
        try:
            async with client:
                for topic in subscribe_topics(self.config.topics, self.cluster):
                    granted = await client.subscribe(topic, qos=self.config.sub_qos)
                    refused = [c for c in granted if isinstance(c, ReasonCode) and c.is_failure]
                    if refused:
                        # As paho.golang under OCM's agent: a refused subscription
                        # would leave the agent "subscribed" and deaf.
                        raise SubscriptionFailed(
                            f"mqtt: the broker refused the subscription to {topic!r}: {refused[0]}"
                        )
                if cert_files:
                    rotated = asyncio.create_task(
                        certificate_changed(cert_files, seen, self.cert_check_seconds),
                        name="mqtt-certificate-watch",
                    )
                self._client = client
                try:
                    yield self._events(client, rotated)
                finally:
                    self._client = None
        except aiomqtt.MqttError as err:
            raise SubscriptionFailed(f"mqtt: {err}") from None
        finally:
            if rotated is not None:
                rotated.cancel()
                await asyncio.gather(rotated, return_exceptions=True)

    @staticmethod
    async def _events(
        client: aiomqtt.Client, rotated: asyncio.Task[None] | None
    ) -> AsyncIterator[CloudEvent]:
        messages = aiter(client.messages)
        try:
            while True:
                if rotated is None:
                    message = await anext(messages)
                else:
                    message = await _first_or_rotated(anext(messages), rotated)
                content = getattr(message.properties, "ContentType", None)
                user = getattr(message.properties, "UserProperty", None)
                payload = message.payload
                raw = payload if isinstance(payload, bytes) else str(payload or "").encode()
                try:
                    yield from_mqtt(raw, content, user or [])
                except EventDecodeError as err:
                    log.warning(
                        "dropping an undecodable MQTT message",
                        topic=str(message.topic),
                        error=str(err),
                    )
        except aiomqtt.MqttError as err:
            raise SubscriptionFailed(f"mqtt: {err}") from None

    async def publish(self, event: CloudEvent) -> None:
        """Publish to the topic of the event's original source."""
        client = self._client
        if client is None:
            raise NotReady()
        original = event.ext_str(EXT_ORIGINAL_SOURCE, "")
        topic = publish_topic(self.config.topics, self.cluster, original)
        payload, content_type, user = to_mqtt(event)
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.UserProperty = user
        if content_type:
            props.ContentType = content_type
        try:
            await client.publish_acknowledged(topic, payload, self.config.pub_qos, props)
        except aiomqtt.MqttError as err:
            raise Unreachable(f"mqtt publish: {err}") from None
