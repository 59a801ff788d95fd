"""OCM's gRPC server (``server grpc``) and ours, side by side, as one agent sees them.

Both servers stand in front of one real hub. A client holding a cluster's
certificate subscribes to each, as an agent does, and asks each for a spec
resync; then the hub's works are created, changed and deleted. Every spec
event each server sends must be the same, attribute by attribute, extension
by extension, payload included (event ids and times by their shape).

Runs in the real leg only; ``make ocm`` builds OCM's binary.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ocmkit.cloudevents import CloudEvent
from ocmkit.cloudevents.works import spec_resync_request
from ocmkit.kube import MANIFESTWORKS, KubeClient
from tests.conftest import eventually
from tests.integration.conftest import work_body
from tests.peers.test_agent_side_by_side import GrpcSetup, diff, hub_side
from tests.support.manifests import configmap
from tests.support.targets import PlanePool
from workagent.sources.grpcdriver import GrpcTransport

pytestmark = pytest.mark.realkube

CLUSTER = "cluster-seen"
CLIENT_ID = f"{CLUSTER}-work-agent"


@dataclass
class Subscriber:
    """One subscription, as an agent holds it, and the events it received."""

    transport: GrpcTransport
    events: list[CloudEvent] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    subscribed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        """Subscribe, ask for everything once, then record what comes."""
        async with self.transport.subscription() as events:
            self.subscribed.set()
            await self.transport.publish(spec_resync_request(CLIENT_ID, CLUSTER, {}))
            async for event in events:
                self.events.append(event)


@dataclass
class Servers:
    """The hub, and a subscriber of OCM's server and one of ours."""

    hub: KubeClient
    ocm: Subscriber
    ours: Subscriber


@contextlib.asynccontextmanager
async def subscribed(config: Path) -> AsyncIterator[Subscriber]:
    """A subscriber of the server ``config`` names, running."""
    subscriber = Subscriber(GrpcTransport(str(config), CLUSTER))
    subscriber.task = asyncio.create_task(subscriber.run())
    try:
        await asyncio.wait_for(subscriber.subscribed.wait(), 30)
        yield subscriber
    finally:
        subscriber.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await subscriber.task


@pytest.fixture
async def servers(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Servers]:
    """Both servers in front of one hub that already holds two works."""
    async with (
        hub_side(realkube_pool, tmp_path, [CLUSTER]) as (_, hub_path, hub),
        contextlib.AsyncExitStack() as stack,
    ):
        for name in ("first", "second"):
            await hub.create(MANIFESTWORKS, work(name), CLUSTER)
        grpc = GrpcSetup(hub, tmp_path)
        peer, url = await grpc.ocm_server(hub_path)
        stack.push_async_callback(peer.stop)
        ours = await grpc.our_server(hub_path)
        stack.push_async_callback(ours.stop)
        ocm_config = tmp_path / "ocm-agent.yaml"
        shutil.move(await grpc.agent_config(CLUSTER, url), ocm_config)
        our_config = await grpc.agent_config(CLUSTER, ours.url)
        ocm_sub = await stack.enter_async_context(subscribed(ocm_config))
        our_sub = await stack.enter_async_context(subscribed(our_config))
        yield Servers(hub, ocm_sub, our_sub)
        peer.check_alive()


def work(name: str) -> dict[str, Any]:
    """A one-ConfigMap work in the cluster's namespace."""
    body = work_body(name, [configmap(f"{name}-cm")])
    body["metadata"]["namespace"] = CLUSTER
    return body


#: OCM v1.2.1's server answers a resync with update events; later ones (and ours) with
#: resync_response (docs/compatibility.md).
OCM_V121_RESYNC = {".spec.resync_response": ".spec.update_request"}


def shape(event: CloudEvent, *, ours: bool) -> dict[str, Any]:
    """A spec event as comparable between the two servers: all of it but its id and time
    (their shape only), the payload decoded; the metadata without managedFields (our
    server's cache drops them, docs/compatibility.md)."""
    kind = event.type
    for new, old in OCM_V121_RESYNC.items():
        kind = kind.replace(new, old) if ours else kind
    extensions: dict[str, Any] = dict(sorted(event.extensions.items()))
    if "deletiontimestamp" in extensions:
        extensions["deletiontimestamp"] = "<time>"
    meta = json.loads(str(extensions.get("metadata") or "{}"))
    meta.pop("managedFields", None)
    extensions["metadata"] = meta
    return {
        "id": bool(event.id),
        "time": event.time is not None,
        "source": event.source,
        "type": kind,
        "specversion": event.spec_version,
        "datacontenttype": event.data_content_type,
        "dataschema": event.data_schema,
        "subject": event.subject,
        "extensions": extensions,
        "data": event.json_data() if event.data else None,
    }


def latest(subscriber: Subscriber, name: str, *, ours: bool) -> list[dict[str, Any]]:
    """The shapes of the events about work ``name`` so far."""
    return [
        shape(e, ours=ours)
        for e in subscriber.events
        if f'"name":"{name}"' in str(e.extensions.get("metadata", ""))
    ]


async def same_events(servers: Servers, name: str, count: int) -> None:
    """Wait until both subscribers have ``count`` events about ``name``; they must match."""

    def both() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return latest(servers.ocm, name, ours=False), latest(servers.ours, name, ours=True)

    async def arrived() -> bool:
        return all(len(events) >= count for events in both())

    await eventually(arrived, timeout=60, what=f"{count} events about {name!r} from both")
    ocm, ours = both()
    assert ocm == ours, f"{name}:\n{diff(ocm, ours)}"


async def test_same_spec_events(servers: Servers) -> None:
    hub = servers.hub
    # The answers to the resync: every work of the cluster.
    await same_events(servers, "first", 1)
    await same_events(servers, "second", 1)

    # A new work, a changed one, a deleted one.
    await hub.create(MANIFESTWORKS, work("third"), CLUSTER)
    await same_events(servers, "third", 1)
    first = await hub.get(MANIFESTWORKS, "first", CLUSTER)
    first["spec"]["workload"]["manifests"] = [configmap("first-cm", key="changed")]
    await hub.update(MANIFESTWORKS, first)
    await same_events(servers, "first", 2)
    await hub.delete(MANIFESTWORKS, "second", CLUSTER)
    await same_events(servers, "second", 2)
