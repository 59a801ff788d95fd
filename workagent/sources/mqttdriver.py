"""The mqtt driver: manifestbundle CloudEvents over MQTT v5 topics (OCM's sdk-go layout).

Subscribe to ``topics.sourceEvents`` with its last ``+`` set to the cluster
(and ``sourceBroadcast`` as written); publish status events to
``agentEvents`` with the last ``+`` set to the cluster and any other ``+`` to
the work's original source, and the spec resync request to
``agentBroadcast`` (first ``+`` = cluster) when configured, else to
``agentEvents``. Client id ``<cloudevents-client-id>-client``, clean start,
QoS from ``pubQoS``/``subQoS``; TLS 1.3 when a client certificate and key
are configured.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import AsyncIterator

import aiomqtt
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from ocmkit.cloudevents import CloudEvent, EventDecodeError
from ocmkit.cloudevents.event import EXT_ORIGINAL_SOURCE
from ocmkit.cloudevents.mqttcodec import from_mqtt, to_mqtt
from ocmkit.kube import Unreachable
from ocmkit.kube.certpair import CertificatePairError, load_cert_pair
from workagent.sources.config import (
    MqttConfig,
    MqttTopics,
    TLSMaterial,
    load_mqtt_config,
    strip_share,
)
from workagent.sources.transport import NotReady, SubscriptionFailed

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


class MqttTransport:
    """An MQTT v5 client of one broker for one cluster."""

    name = "mqtt"

    def __init__(self, config_path: str, cluster: str, client_id: str) -> None:
        self.config: MqttConfig = load_mqtt_config(config_path)
        self.endpoint = self.config.broker_host
        self.cluster = cluster
        self.client_id = client_id
        self._client: aiomqtt.Client | None = None

    def _new_client(self) -> aiomqtt.Client:
        config = self.config
        tls = None
        if config.tls.cert and config.tls.key:
            try:
                tls = _client_tls(config.tls)
            except (OSError, CertificatePairError) as err:
                raise SubscriptionFailed(f"mqtt TLS: {err}") from None
        return aiomqtt.Client(
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
            async with self._new_client():
                pass
        except aiomqtt.MqttError as err:
            raise ValueError(f"cannot connect to the MQTT broker {self.endpoint}: {err}") from None

    @contextlib.asynccontextmanager
    async def subscription(self) -> AsyncIterator[AsyncIterator[CloudEvent]]:
        """Connect, subscribe for the cluster, and yield the received events."""
        client = self._new_client()
        try:
            async with client:
                for topic in subscribe_topics(self.config.topics, self.cluster):
                    await client.subscribe(topic, qos=self.config.sub_qos)
                self._client = client
                try:
                    yield self._events(client)
                finally:
                    self._client = None
        except aiomqtt.MqttError as err:
            raise SubscriptionFailed(f"mqtt: {err}") from None

    @staticmethod
    async def _events(client: aiomqtt.Client) -> AsyncIterator[CloudEvent]:
        try:
            async for message in client.messages:
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
        raise SubscriptionFailed("mqtt: the connection ended")

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
            await client.publish(topic, payload, qos=self.config.pub_qos, properties=props)
        except aiomqtt.MqttError as err:
            raise Unreachable(f"mqtt publish: {err}") from None
