"""A CloudEvents work source over MQTT, publishing as OCM's sdk-go sources do.

It holds ManifestWorks by UID, publishes spec events to
``sources/<source>/consumers/<cluster>/sourceevents`` in binary mode, answers
the agent's spec resync requests, records the agent's status events and
forgets a work once the agent confirms its deletion (``Deleted``).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from ocmkit.cloudevents import CloudEvent, EventType
from ocmkit.cloudevents.event import (
    RESYNC_REQUEST,
    RESYNC_RESPONSE,
    SPEC,
    STATUS,
    format_time,
    utcnow,
)
from ocmkit.cloudevents.mqttcodec import from_mqtt, to_mqtt
from ocmkit.cloudevents.works import (
    StatusUpdate,
    decode_status_event,
    resync_versions,
    spec_event,
)

SOURCE = "maestro"


def topics() -> dict[str, str]:
    """The ``topics`` of an agent config for this source."""
    return {
        "sourceEvents": f"sources/{SOURCE}/consumers/+/sourceevents",
        "agentEvents": f"sources/{SOURCE}/consumers/+/agentevents",
        "sourceBroadcast": "sources/+/sourcebroadcast",
    }


@dataclass
class MqttWorkSource:
    """The test's work source (one broker, any number of clusters)."""

    host: str
    port: int
    works: dict[str, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[str, list[StatusUpdate]] = field(default_factory=dict)
    #: Every status event as received, with the topic it came on.
    status_events: list[tuple[str, CloudEvent]] = field(default_factory=list)
    resync_requests: int = 0
    _client: aiomqtt.Client | None = None
    _task: asyncio.Task[None] | None = None
    _connected: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> None:
        """Connect (and keep reconnecting) in the background."""
        self._task = asyncio.create_task(self._run())
        await asyncio.wait_for(self._connected.wait(), 15)

    async def stop(self) -> None:
        """Disconnect for good."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def wait_connected(self) -> None:
        """Until the source is connected again (after a broker restart)."""
        await asyncio.wait_for(self._connected.wait(), 30)

    async def _run(self) -> None:
        while True:
            try:
                async with aiomqtt.Client(
                    self.host,
                    self.port,
                    identifier=f"{SOURCE}-source-{uuid.uuid4().hex[:6]}",
                    protocol=aiomqtt.ProtocolVersion.V5,
                ) as client:
                    await client.subscribe(f"sources/{SOURCE}/consumers/+/agentevents", qos=1)
                    self._client = client
                    self._connected.set()
                    async for message in client.messages:
                        props = message.properties
                        event = from_mqtt(
                            message.payload if isinstance(message.payload, bytes) else b"",
                            getattr(props, "ContentType", None),
                            getattr(props, "UserProperty", None) or [],
                        )
                        await self._handle(event, str(message.topic))
            except aiomqtt.MqttError:
                self._client = None
                self._connected.clear()
                await asyncio.sleep(0.1)  # sleep-ok: reconnect pacing of the test source

    async def _handle(self, event: CloudEvent, topic: str) -> None:
        kind = EventType.parse(event.type)
        if kind.subresource == SPEC and kind.action == RESYNC_REQUEST:
            self.resync_requests += 1
            cluster = event.ext_str("clustername")
            versions = resync_versions(event)
            for work in list(self.works.values()):
                meta = work["metadata"]
                if meta["namespace"] != cluster:
                    continue
                gen = int(meta.get("generation") or 0)
                if meta.get("deletionTimestamp") or gen > versions.get(meta["uid"], 0):
                    await self.publish(work, RESYNC_RESPONSE)
        elif kind.subresource == STATUS:
            self.status_events.append((topic, event))
            update = decode_status_event(event)
            self.statuses.setdefault(update.uid, []).append(update)
            held = self.works.get(update.uid)
            if update.deleted and held is not None and held["metadata"].get("deletionTimestamp"):
                del self.works[update.uid]

    async def publish(self, work: dict[str, Any], action: str) -> None:
        """Publish the spec event of ``work`` to its cluster's sourceevents topic."""
        client = self._client
        if client is None:
            raise aiomqtt.MqttError("the test source is not connected")
        event = spec_event(work, action, SOURCE)
        payload, content_type, user = to_mqtt(event)
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.UserProperty = user
        if content_type:
            props.ContentType = content_type
        cluster = work["metadata"]["namespace"]
        await client.publish(
            f"sources/{SOURCE}/consumers/{cluster}/sourceevents", payload, qos=1, properties=props
        )

    async def request_statuses(self, hashes: dict[str, str] | None = None) -> None:
        """Broadcast a status resync request (empty: every status)."""
        client = self._client
        assert client is not None
        event = CloudEvent.new(
            SOURCE,
            "io.open-cluster-management.works.v1alpha1.manifestbundles.status.resync_request",
            {"clustername": "", "originalsource": ""},
        )
        event.set_json(
            {
                "statusHashes": [
                    {"resourceID": k, "statusHash": v} for k, v in (hashes or {}).items()
                ]
            }
        )
        payload, content_type, user = to_mqtt(event)
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.UserProperty = user
        if content_type:
            props.ContentType = content_type
        await client.publish(f"sources/{SOURCE}/sourcebroadcast", payload, qos=1, properties=props)

    # -- the source's own API ------------------------------------------------------------
    async def create(
        self, cluster: str, name: str, manifests: list[dict[str, Any]], **spec: Any
    ) -> str:
        """A new work; returns its UID."""
        uid = str(uuid.uuid4())
        self.works[uid] = {
            "metadata": {"name": name, "namespace": cluster, "uid": uid, "generation": 1},
            "spec": {"workload": {"manifests": manifests}, **spec},
        }
        await self.publish(self.works[uid], "create_request")
        return uid

    async def update(
        self, uid: str, manifests: list[dict[str, Any]], *, publish: bool = True
    ) -> None:
        """A new generation of the work's manifests."""
        work = self.works[uid]
        work["metadata"]["generation"] += 1
        work["spec"]["workload"]["manifests"] = manifests
        if publish:
            await self.publish(work, "update_request")

    async def delete(self, uid: str) -> None:
        """Mark the work deleting; it goes once the agent confirms."""
        work = self.works[uid]
        work["metadata"]["deletionTimestamp"] = format_time(utcnow())
        await self.publish(work, "update_request")

    def last_status(self, uid: str) -> StatusUpdate | None:
        """The newest status the agent reported for ``uid``."""
        updates = self.statuses.get(uid) or []
        return updates[-1] if updates else None
