"""Informer against kubesim: sync, ordered events, drops, 410 relists, 429s, restarts."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, NAMESPACES, KubeClient
from ocmkit.runtime import Object
from tests.conftest import eventually
from tests.runtime.conftest import NS, InformerFactory, Recorder, cm, recorded, sample


async def test_initial_sync_fills_the_cache_and_delivers_adds(
    kube: KubeClient, informers: InformerFactory
) -> None:
    for i in range(3):
        await kube.create(CONFIGMAPS, cm(f"pre-{i}", n=str(i)), NS)
    await kube.create(NAMESPACES, {"metadata": {"name": "elsewhere"}})
    await kube.create(CONFIGMAPS, cm("other-ns"), "elsewhere")
    informer = informers(name="t-sync")
    informer.add_indexer("by-n", lambda obj: [obj.get("data", {}).get("n", "")])
    rec = Recorder().attach(informer)
    assert informer.readiness_failure() == "not started"
    await informer.start()
    assert await informer.wait_synced(10)
    assert informer.has_synced() and informer.readiness_failure() is None
    assert sorted(informer.store.list_keys()) == [f"{NS}/pre-{i}" for i in range(3)]
    got = informer.store.get(f"{NS}/pre-1")
    assert got is not None and got["kind"] == "ConfigMap" and got["apiVersion"] == "v1"
    assert [o["metadata"]["name"] for o in informer.store.by_index("by-n", "2")] == ["pre-2"]
    assert informer.resource_version
    await informer.wait_handlers_idle()
    assert sorted(name for _, name, _ in rec.events) == ["pre-0", "pre-1", "pre-2"]
    assert {kind for kind, _, _ in rec.events} == {"add"}
    assert sample("informer_synced", informer="t-sync") == 1
    assert sample("informer_cache_objects", informer="t-sync") == 3


async def test_cluster_scoped_keys_and_all_namespaces(
    kube: KubeClient, informers: InformerFactory
) -> None:
    namespaces = informers(NAMESPACES, None, name="t-namespaces")
    everything = informers(CONFIGMAPS, None, name="t-all-cms")
    everything.add_indexer("namespace", lambda obj: [obj["metadata"]["namespace"]])
    await kube.create(CONFIGMAPS, cm("x"), NS)
    await namespaces.start()
    await everything.start()
    assert await namespaces.wait_synced(10) and await everything.wait_synced(10)
    assert namespaces.store.get(NS) is not None, "cluster-scoped objects are keyed by name"
    assert [o["metadata"]["name"] for o in everything.store.by_index("namespace", NS)] == ["x"]


async def test_add_update_delete_arrive_in_order_after_the_cache(
    kube: KubeClient, informers: InformerFactory
) -> None:
    informer = informers(name="t-order")
    seen_in_cache: list[bool] = []
    rec = Recorder()

    def on_update(old: Object, new: Object) -> None:
        cached = informer.store.get(f"{NS}/{new['metadata']['name']}")
        seen_in_cache.append(cached is not None and _rv(cached) >= _rv(new))
        rec.on_update(old, new)

    informer.add_handler(on_add=rec.on_add, on_update=on_update, on_delete=rec.on_delete)
    await informer.start()
    assert await informer.wait_synced(10)
    await kube.create(CONFIGMAPS, cm("x", v="1"), NS)
    for v in ("2", "3", "4"):
        await kube.patch(CONFIGMAPS, "x", {"data": {"v": v}}, NS)
    await kube.delete(CONFIGMAPS, "x", NS)

    async def all_seen() -> bool:
        return len(rec.of("x")) == 5

    await eventually(all_seen, what="five events for x")
    assert rec.of("x") == [
        ("add", {"v": "1"}),
        ("update", {"v": "2"}),
        ("update", {"v": "3"}),
        ("update", {"v": "4"}),
        ("delete", {"v": "4"}),
    ]
    assert all(seen_in_cache), "handlers run after the cache is updated"
    assert informer.store.get(f"{NS}/x") is None


async def test_watch_closed_by_the_server_resumes_without_relist(
    sim: KubeSim, kube: KubeClient, informers: InformerFactory
) -> None:
    informer, rec = await recorded(informers, "t-closed")
    reconnects = sample("informer_watch_reconnects_total", informer="t-closed")

    async def watching() -> bool:
        return informer._phase == "watching" and (await _open_watches(sim)) >= 1

    await eventually(watching)
    sim.close_watches()
    await kube.create(CONFIGMAPS, cm("after-drop"), NS)

    async def delivered() -> bool:
        return rec.of("after-drop") == [("add", None)]

    await eventually(delivered, what="an event after the watch was dropped")
    assert sample("informer_watch_reconnects_total", informer="t-closed") > reconnects
    assert sample("informer_relists_total", informer="t-closed") == 0


async def test_410_relist_delivers_a_delete_missed_during_the_gap(
    sim: KubeSim, kube: KubeClient, informers: InformerFactory
) -> None:
    for name in ("victim", "changed", "stable"):
        await kube.create(CONFIGMAPS, cm(name, v="old"), NS)
    informer, rec = await recorded(informers, "t-gone")
    await informer.wait_handlers_idle()
    rec.events.clear()
    # Keep the informer off the watch (throttled) while things change...
    sim.inject(verb="watch", resource="configmaps", code=429, retryAfter=1)
    sim.close_watches()

    async def throttled() -> bool:
        return sample("informer_errors_total", informer="t-gone", verb="watch", code="429") >= 1

    await eventually(throttled, what="the watch to be refused")
    await kube.delete(CONFIGMAPS, "victim", NS)
    await kube.patch(CONFIGMAPS, "changed", {"data": {"v": "new"}}, NS)
    await kube.create(CONFIGMAPS, cm("newcomer"), NS)
    # ... then compact the history, so resuming from the old resourceVersion is 410.
    sim.expire_watches()
    sim.clear_faults()

    async def relisted() -> bool:
        return sample("informer_relists_total", informer="t-gone") >= 1 and len(rec.events) == 3

    await eventually(relisted, timeout=15, what="a relist with the differences")
    assert sample("informer_errors_total", informer="t-gone", verb="watch", code="410") == 1
    assert rec.of("victim") == [("delete", {"v": "old"})], "the last known object"
    assert rec.of("changed") == [("update", {"v": "new"})]
    assert rec.of("newcomer") == [("add", None)]
    assert rec.of("stable") == [], "unchanged objects are not re-delivered"
    assert sorted(informer.store.list_keys()) == [f"{NS}/changed", f"{NS}/newcomer", f"{NS}/stable"]


async def test_delete_while_list_and_watch_fail_is_delivered_after_recovery(
    sim: KubeSim, kube: KubeClient, informers: InformerFactory
) -> None:
    await kube.create(CONFIGMAPS, cm("victim", v="last"), NS)
    informer, rec = await recorded(informers, "t-gap")
    sim.inject(verb="watch", resource="configmaps", code=500)
    sim.inject(verb="list", resource="configmaps", code=500)
    sim.close_watches()

    async def failing() -> bool:
        return sample("informer_errors_total", informer="t-gap", verb="list", code="500") >= 1

    await eventually(failing, what="list and watch to fail")
    assert informer.last_error is not None and informer.last_error.code == 500
    assert informer.readiness_failure() is None, "a synced cache stays ready while retrying"
    await kube.delete(CONFIGMAPS, "victim", NS)
    sim.expire_watches()
    sim.clear_faults()

    async def deleted() -> bool:
        return ("delete", {"v": "last"}) in rec.of("victim")

    await eventually(deleted, what="the missed delete")
    assert informer.store.get(f"{NS}/victim") is None


async def test_429_storm_is_ridden_out_honouring_retry_after(
    sim: KubeSim, kube: KubeClient, informers: InformerFactory
) -> None:
    _, rec = await recorded(informers, "t-429")
    sim.inject(verb="watch", resource="configmaps", code=429, count=3, retryAfter=1)
    with structlog.testing.capture_logs() as logs:
        sim.close_watches()
        await kube.create(CONFIGMAPS, cm("during-storm"), NS)

        async def delivered() -> bool:
            return rec.of("during-storm") == [("add", None)]

        await eventually(delivered, timeout=20, what="delivery after the 429 storm")
    retries = [e for e in logs if e["event"] == "watch failed, retrying"]
    assert len(retries) == 3
    assert all(e["retry_in_seconds"] >= 1.0 for e in retries), "Retry-After is honoured"
    assert all("429" in e["error"] for e in retries)
    assert sample("informer_errors_total", informer="t-429", verb="watch", code="429") == 3
    assert sample("informer_relists_total", informer="t-429") == 0, "429 retries the watch"


async def test_apiserver_restart_is_survived(
    sim: KubeSim, kube: KubeClient, informers: InformerFactory
) -> None:
    informer, rec = await recorded(informers, "t-restart")
    await sim.restart(downtime=0.3)
    await kube.create(CONFIGMAPS, cm("after-restart"), NS)

    async def delivered() -> bool:
        return rec.of("after-restart") == [("add", None)]

    await eventually(delivered, timeout=15, what="an event after the restart")
    assert informer.readiness_failure() is None
    assert informer.liveness_failure() is None


async def test_slow_handler_does_not_stall_intake_or_other_handlers(
    kube: KubeClient, informers: InformerFactory
) -> None:
    informer = informers(name="t-slow")
    gate = asyncio.Event()
    slow_seen: list[str] = []

    async def slow(obj: Object) -> None:
        await gate.wait()
        slow_seen.append(obj["metadata"]["name"])

    informer.add_handler(on_add=slow)
    fast = Recorder().attach(informer)
    await informer.start()
    assert await informer.wait_synced(10)
    for i in range(5):
        await kube.create(CONFIGMAPS, cm(f"o{i}"), NS)

    async def fast_saw_all() -> bool:
        return len(fast.events) == 5 and len(informer.store) == 5

    await eventually(fast_saw_all, what="intake and the fast handler to proceed")
    assert slow_seen == []
    assert sample("informer_pending_notifications", informer="t-slow") >= 4
    gate.set()

    async def slow_caught_up() -> bool:
        return slow_seen == [f"o{i}" for i in range(5)]

    await eventually(slow_caught_up, what="the slow handler, in order")


async def test_failing_handler_does_not_stop_delivery(
    kube: KubeClient, informers: InformerFactory
) -> None:
    informer = informers(name="t-bad-handler")
    seen: list[str] = []

    def flaky(obj: Object) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("handler bug")

    informer.add_handler(on_add=flaky)
    await informer.start()
    assert await informer.wait_synced(10)
    await kube.create(CONFIGMAPS, cm("bad"), NS)
    await kube.create(CONFIGMAPS, cm("good"), NS)

    async def both() -> bool:
        return seen == ["bad", "good"]

    await eventually(both)


async def test_handler_added_after_start_gets_existing_objects(
    kube: KubeClient, informers: InformerFactory
) -> None:
    await kube.create(CONFIGMAPS, cm("existing"), NS)
    informer = informers(name="t-late-handler")
    await informer.start()
    assert await informer.wait_synced(10)
    late = Recorder().attach(informer)

    async def replayed() -> bool:
        return late.events == [("add", "existing", None)]

    await eventually(replayed)


async def test_resync_redelivers_cached_objects_as_updates(
    kube: KubeClient, informers: InformerFactory
) -> None:
    await kube.create(CONFIGMAPS, cm("r", v="1"), NS)
    informer = informers(name="t-resync", resync_seconds=0.05)
    updates: list[tuple[str, bool]] = []
    informer.add_handler(
        on_update=lambda old, new: updates.append((new["metadata"]["name"], old is new))
    )
    await informer.start()

    async def resynced() -> bool:
        return len(updates) >= 2

    await eventually(resynced)
    assert set(updates) == {("r", True)}


async def test_watchdog_reports_and_replaces_a_stuck_watch(
    sim: KubeSim, kube: KubeClient, informers: InformerFactory
) -> None:
    informer, rec = await recorded(
        informers, "t-stuck", watch_timeout_seconds=1, stall_grace_seconds=0.3
    )
    assert informer.liveness_failure() is None
    # Every new watch hangs before answering: the connection is open but silent.
    sim.inject(verb="watch", resource="configmaps", latency=30)
    sim.close_watches()

    async def stuck() -> bool:
        # Liveness reports the silence as soon as it passes the limit; the watchdog
        # counts the stall when it abandons the watch, an instant later.
        stalls = sample("informer_watch_stalls_total", informer="t-stuck")
        return informer.liveness_failure() is not None and stalls >= 1

    await eventually(stuck, what="the watchdog to notice and abandon the watch")
    failure = informer.liveness_failure()
    assert failure is not None and failure.startswith("watch stalled")
    sim.clear_faults()
    await kube.create(CONFIGMAPS, cm("after-stall"), NS)

    async def recovered() -> bool:
        return informer.liveness_failure() is None and rec.of("after-stall") == [("add", None)]

    await eventually(recovered, what="a fresh watch")


async def test_stop_ends_everything(kube: KubeClient, informers: InformerFactory) -> None:
    informer = informers(name="t-stop")
    await informer.start()
    assert await informer.wait_synced(10)
    await informer.stop()
    await informer.stop()  # idempotent
    assert informer.has_synced(), "the cache keeps its last state"
    assert informer.liveness_failure() is None


def _rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def _open_watches(sim: KubeSim) -> int:
    return sim.store.watch_count()
