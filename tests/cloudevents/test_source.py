"""The CloudEvents work source's event handling, over an in-memory transport.

The transport is a stand-in for the network (the drivers have their own
end-to-end tests against a real server and broker); the source and its
store are the real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from structlog.testing import capture_logs

from ocmkit.cloudevents import CloudEvent
from ocmkit.cloudevents.works import spec_event
from tests.conftest import eventually
from workagent.sources.cloudevents import CloudEventsWorkSource


class MemoryTransport:
    """Delivers queued events to one subscription; records what is published."""

    name = "memory"
    endpoint = "memory:0"

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[CloudEvent] = asyncio.Queue()
        self.published: list[CloudEvent] = []

    @contextlib.asynccontextmanager
    async def subscription(self) -> AsyncIterator[AsyncIterator[CloudEvent]]:
        yield self._events()

    async def _events(self) -> AsyncIterator[CloudEvent]:
        while True:
            yield await self.incoming.get()

    async def publish(self, event: CloudEvent) -> None:
        self.published.append(event)


def hub_work(name: str, cluster: str = "cluster1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": cluster, "uid": f"uid-{name}", "generation": 1},
        "spec": {"workload": {"manifests": [{"kind": "ConfigMap", "metadata": {"name": "c"}}]}},
    }


async def test_bad_and_foreign_events_are_dropped_without_reconnecting() -> None:
    transport = MemoryTransport()
    with capture_logs() as logs:
        source = CloudEventsWorkSource(
            transport, cluster="cluster1", client_id="cluster1-work-agent", reconnect_initial=0.05
        )
        await _drop_bad_events(transport, source)
    # Each bad event is named with its error, except another cluster's (skipped quietly).
    errors = [r["error"] for r in logs if r["event"] == "dropping a spec event"]
    assert len(errors) == 4, errors
    assert "manifests should not be empty" in errors
    assert "manifests must be a list, not object" in errors
    assert any("extension 'resourceid' is empty" in e for e in errors), errors
    assert "missing extension 'clustername'" in errors


async def _drop_bad_events(transport: MemoryTransport, source: CloudEventsWorkSource) -> None:
    await source.start()
    try:
        await eventually(lambda: _true(source.subscribed), what="subscribed")
        # The first thing published after subscribing is the spec resync request.
        await eventually(lambda: _true(len(transport.published) == 1), what="the resync request")
        assert transport.published[0].type.endswith(".spec.resync_request")
        bad = spec_event(hub_work("bad"), "create_request")
        bad.extensions["clustername"] = True  # not a string
        undecodable = CloudEvent.new("kube", "not-a-type")
        foreign = spec_event(hub_work("theirs", cluster="cluster2"), "create_request")
        rejected = spec_event(hub_work("empty"), "create_request")
        rejected.set_json({"manifests": []})
        not_a_list = spec_event(hub_work("object"), "create_request")
        not_a_list.set_json({"manifests": {"kind": "ConfigMap"}})
        no_uid = spec_event(hub_work("no-uid"), "create_request")
        no_uid.extensions["resourceid"] = ""
        no_cluster = spec_event(hub_work("nowhere"), "create_request")
        del no_cluster.extensions["clustername"]
        good = spec_event(hub_work("mine"), "create_request")
        events = (bad, undecodable, foreign, rejected, not_a_list, no_uid, no_cluster, good)
        for event in events:
            transport.incoming.put_nowait(event)
        await eventually(
            lambda: _true([w["metadata"]["name"] for w in source.store.works()] == ["mine"]),
            what="only cluster1's valid work cached",
        )
        assert source.subscriptions == 1
    finally:
        await source.stop()


async def _true(value: bool) -> bool:
    return value
