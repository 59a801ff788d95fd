"""Watches: events, bookmarks, 410 Gone, server-side close, refusals, read timeouts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web

from kubesim.sim import KubeSim
from ocmkit.kube import (
    CONFIGMAPS,
    NAMESPACES,
    Gone,
    KubeClient,
    NotFound,
    Resource,
    ServerError,
    TooManyRequests,
    Unreachable,
    WatchEvent,
)
from ocmkit.kube import client as client_module
from tests.conftest import eventually
from tests.kube.helpers import NS, FakeServer, cm


async def _open_watches(sim: KubeSim, n: int = 1) -> None:
    async def opened() -> bool:
        return sim.store.watch_count() >= n

    await eventually(opened, what=f"{n} open watch(es)")


async def test_watch_streams_added_modified_deleted(client: KubeClient, sim: KubeSim) -> None:
    rv = (await client.list(CONFIGMAPS, NS))["metadata"]["resourceVersion"]
    seen: list[WatchEvent] = []
    async with client.watch(CONFIGMAPS, NS, resource_version=rv, timeout_seconds=30) as events:
        await client.create(CONFIGMAPS, cm("w", a="1"), NS)
        await client.patch(CONFIGMAPS, "w", {"data": {"a": "2"}}, NS)
        await client.delete(CONFIGMAPS, "w", NS)
        async for event in events:
            seen.append(event)
            if event.type == "DELETED":
                break
    assert [e.type for e in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert seen[1].object["data"] == {"a": "2"}
    assert all(e.object["kind"] == "ConfigMap" for e in seen)


async def test_watch_ends_when_the_server_closes_the_stream(
    client: KubeClient, sim: KubeSim
) -> None:
    rv = (await client.list(CONFIGMAPS, NS))["metadata"]["resourceVersion"]
    async with client.watch(CONFIGMAPS, NS, resource_version=rv) as events:
        await _open_watches(sim)
        sim.close_watches()
        assert [e async for e in events] == []


async def test_watch_with_label_selector_across_namespaces(client: KubeClient) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "other"}})
    rv = (await client.list(CONFIGMAPS))["metadata"]["resourceVersion"]
    async with client.watch(
        CONFIGMAPS, resource_version=rv, label_selector="pick=yes", timeout_seconds=30
    ) as events:
        await client.create(CONFIGMAPS, cm("skip"), NS)
        body = cm("take")
        body["metadata"]["labels"] = {"pick": "yes"}
        await client.create(CONFIGMAPS, body, "other")
        first = await anext(aiter(events))
    assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "take")


async def test_bookmarks(tmp_path: Path) -> None:
    async with KubeSim(bookmark_interval=0.05) as sim:
        sim.write_kubeconfig(tmp_path / "kc")
        async with await KubeClient.from_kubeconfig(str(tmp_path / "kc"), qps=0) as client:
            await client.create(NAMESPACES, {"metadata": {"name": NS}})
            rv = (await client.list(CONFIGMAPS, NS))["metadata"]["resourceVersion"]
            # Bookmarks report progress: the cluster moves on (another resource here).
            await client.create(NAMESPACES, {"metadata": {"name": "elsewhere"}})
            async with client.watch(CONFIGMAPS, NS, resource_version=rv) as events:
                first = await anext(aiter(events))
            assert first.type == "BOOKMARK"
            assert int(first.object["metadata"]["resourceVersion"]) > int(rv)


async def test_too_old_resource_version_raises_gone(client: KubeClient, sim: KubeSim) -> None:
    rv = (await client.list(CONFIGMAPS, NS))["metadata"]["resourceVersion"]
    await client.create(CONFIGMAPS, cm("later"), NS)
    sim.store.compact()
    with pytest.raises(Gone) as exc:
        async with client.watch(CONFIGMAPS, NS, resource_version=rv) as events:
            async for _ in events:
                pass
    assert exc.value.code == 410 and exc.value.reason == "Expired"


async def test_expired_open_watch_raises_gone(client: KubeClient, sim: KubeSim) -> None:
    rv = (await client.list(CONFIGMAPS, NS))["metadata"]["resourceVersion"]
    with pytest.raises(Gone):
        async with client.watch(CONFIGMAPS, NS, resource_version=rv) as events:
            await _open_watches(sim)
            sim.expire_watches()
            async for _ in events:
                pass


async def test_refused_watches_raise_on_enter(client: KubeClient, sim: KubeSim) -> None:
    missing = Resource("example.com", "v1", "nothings", "Nothing", True)
    with pytest.raises(NotFound):
        async with client.watch(missing, NS, resource_version="0"):
            pass
    sim.inject(verb="watch", resource="configmaps", code=429, count=1, retryAfter=4)
    with pytest.raises(TooManyRequests) as exc:
        async with client.watch(CONFIGMAPS, NS, resource_version="0"):
            pass
    assert exc.value.retry_after == 4


async def test_large_objects_in_a_watch(client: KubeClient) -> None:
    rv = (await client.list(CONFIGMAPS, NS))["metadata"]["resourceVersion"]
    big = "x" * 900_000  # far beyond aiohttp's readline limit
    async with client.watch(CONFIGMAPS, NS, resource_version=rv, timeout_seconds=30) as events:
        await client.create(CONFIGMAPS, cm("big", blob=big), NS)
        event = await anext(aiter(events))
    assert event.object["data"]["blob"] == big


async def test_watch_parameters_are_fresh_and_errors_in_stream(fake_server: FakeServer) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        added = {"type": "ADDED", "object": {"metadata": {"name": "a"}}}
        error = {
            "type": "ERROR",
            "object": {"kind": "Status", "code": 500, "reason": "InternalError", "message": "boom"},
        }
        # One event split across writes, then an in-stream error.
        raw = json.dumps(added).encode() + b"\n"
        await resp.write(raw[:10])
        await resp.write(raw[10:] + json.dumps(error).encode() + b"\n")
        await resp.write_eof()
        return resp

    fake_server.handler = handler
    async with fake_server.client() as client:
        for rv in ("5", "9"):
            events: list[WatchEvent] = []
            with pytest.raises(ServerError, match="boom"):
                async with client.watch(
                    CONFIGMAPS, NS, resource_version=rv, label_selector="a=b"
                ) as stream:
                    async for event in stream:
                        events.append(event)
            assert events == [
                WatchEvent(
                    "ADDED", {"metadata": {"name": "a"}, "apiVersion": "v1", "kind": "ConfigMap"}
                )
            ]
    assert fake_server.queries == [
        f"watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=300"
        "&labelSelector=a%3Db"
        for rv in ("5", "9")
    ]


async def test_silent_watch_times_out_as_unreachable(
    fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await asyncio.Event().wait()  # a stuck server: headers, then nothing, ever
        return resp

    fake_server.handler = handler
    # Read timeout = timeoutSeconds + margin; shrink the margin to keep the test quick.
    monkeypatch.setattr(client_module, "WATCH_READ_MARGIN", -0.8)
    async with fake_server.client() as client:
        with pytest.raises(Unreachable, match=r"timed out|Timeout"):
            async with client.watch(CONFIGMAPS, NS, resource_version="1", timeout_seconds=1) as ev:
                async for _ in ev:
                    pass
