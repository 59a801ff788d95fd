"""The agent's local work store: the hub API's verbs, served from spec events."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ocmkit.kube import (
    ADDED,
    DELETED,
    MANIFESTWORKS,
    MODIFIED,
    Conflict,
    Gone,
    NotFound,
    Unreachable,
)
from ocmkit.kube.mergepatch import apply_merge_patch
from workagent.sources.store import LocalWorkStore

FINALIZER = "cluster.open-cluster-management.io/manifest-work-cleanup"


def work(name: str = "w1", uid: str = "u1", generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {
            "name": name,
            "namespace": "cluster1",
            "uid": uid,
            "generation": generation,
            "resourceVersion": "",
            "labels": {"cloudevents.open-cluster-management.io/originalsource": "kube"},
        },
        "spec": {"workload": {"manifests": [{"kind": "ConfigMap"}]}, **spec},
    }


class Publisher:
    """Records published works; fails while ``down``."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.down = False

    async def __call__(self, obj: dict[str, Any]) -> None:
        if self.down:
            raise Unreachable("the cloudevents client is not ready")
        self.sent.append(copy.deepcopy(obj))


def _by_uid(store: LocalWorkStore, uid: str) -> dict[str, Any] | None:
    return next((w for w in store.works() if w["metadata"]["uid"] == uid), None)


@pytest.fixture
def publisher() -> Publisher:
    return Publisher()


@pytest.fixture
def store(publisher: Publisher) -> LocalWorkStore:
    return LocalWorkStore("cluster1", publisher)


def test_merge_rules(store: LocalWorkStore) -> None:
    assert store.apply_spec(work(generation=2)) == "added"
    assert store.apply_spec(work(generation=1)) == "stale"
    assert store.apply_spec(work(generation=2)) == "unchanged"
    cached = _by_uid(store, "u1")
    assert cached is not None
    cached["metadata"]["finalizers"] = [FINALIZER]
    cached["status"] = {"conditions": [{"type": "Applied"}]}
    store._objects["w1"] = cached  # as a controller's patches would leave it
    newer = work(generation=3, deleteOption={"propagationPolicy": "Orphan"})
    assert store.apply_spec(newer) == "updated"
    kept = _by_uid(store, "u1")
    assert kept is not None
    assert kept["metadata"]["finalizers"] == [FINALIZER]
    assert kept["status"] == {"conditions": [{"type": "Applied"}]}
    assert kept["spec"]["deleteOption"] == {"propagationPolicy": "Orphan"}
    deleting = work(generation=3)
    deleting["metadata"]["deletionTimestamp"] = "2026-08-11T09:00:00Z"
    deleting["spec"] = {}
    assert store.apply_spec(deleting) == "deleting"
    marked = _by_uid(store, "u1")
    assert marked is not None and marked["metadata"]["deletionTimestamp"]
    assert marked["spec"]["deleteOption"] == {"propagationPolicy": "Orphan"}  # spec kept
    # A deletion that names the work by its UID only (a resync answer) is that work.
    by_uid = work(name="u1", generation=0)
    by_uid["metadata"]["deletionTimestamp"] = "2026-08-11T09:05:00Z"
    by_uid["spec"] = {}
    assert store.apply_spec(by_uid) == "unchanged"  # already deleting
    assert [w["metadata"]["name"] for w in store.works()] == ["w1"]
    fresh = LocalWorkStore("cluster1", Publisher())
    fresh.apply_spec(work(generation=2))
    assert fresh.apply_spec(by_uid) == "deleting"
    marked_by_uid = _by_uid(fresh, "u1")
    assert marked_by_uid is not None and marked_by_uid["metadata"]["name"] == "w1"
    assert marked_by_uid["metadata"]["generation"] == 2
    # Same UID under a new name: the old one goes.
    assert store.apply_spec(work(name="renamed", generation=4)) == "added"
    assert [w["metadata"]["name"] for w in store.works()] == ["renamed"]


async def test_status_patch_publishes_first_and_stores_only_on_success(
    store: LocalWorkStore, publisher: Publisher
) -> None:
    store.apply_spec(work())
    cached = await store.get(MANIFESTWORKS, "w1", "cluster1")
    body = {
        "metadata": {"uid": "u1", "resourceVersion": cached["metadata"]["resourceVersion"]},
        "status": {"conditions": [{"type": "Applied", "status": "True"}]},
    }
    publisher.down = True
    with pytest.raises(Unreachable):
        await store.patch(MANIFESTWORKS, "w1", body, "cluster1", subresource="status")
    assert "status" not in await store.get(MANIFESTWORKS, "w1")
    publisher.down = False
    written = await store.patch(MANIFESTWORKS, "w1", body, "cluster1", subresource="status")
    assert written["status"]["conditions"][0]["status"] == "True"
    assert len(publisher.sent) == 1
    # The same status again: nothing sent.
    body["metadata"]["resourceVersion"] = written["metadata"]["resourceVersion"]
    await store.patch(MANIFESTWORKS, "w1", body, "cluster1", subresource="status")
    assert len(publisher.sent) == 1
    # A stale resourceVersion is a conflict.
    body["metadata"]["resourceVersion"] = cached["metadata"]["resourceVersion"]
    body["status"] = {"conditions": []}
    with pytest.raises(Conflict):
        await store.patch(MANIFESTWORKS, "w1", body, "cluster1", subresource="status")


async def test_finalizer_patches_stay_local_and_signal_the_end(
    store: LocalWorkStore, publisher: Publisher
) -> None:
    finalized: list[bool] = []
    store.on_finalized(lambda: finalized.append(True))
    store.apply_spec(work())
    cached = await store.get(MANIFESTWORKS, "w1")
    meta = {"uid": "u1", "resourceVersion": cached["metadata"]["resourceVersion"]}
    added = await store.patch(
        MANIFESTWORKS, "w1", {"metadata": {**meta, "finalizers": [FINALIZER]}}, "cluster1"
    )
    assert added["metadata"]["finalizers"] == [FINALIZER]
    assert publisher.sent == []
    deleting = work()
    deleting["metadata"]["deletionTimestamp"] = "2026-08-11T09:00:00Z"
    store.apply_spec(deleting)
    latest = await store.get(MANIFESTWORKS, "w1")
    meta["resourceVersion"] = latest["metadata"]["resourceVersion"]
    await store.patch(MANIFESTWORKS, "w1", {"metadata": {**meta, "finalizers": None}}, "cluster1")
    assert finalized == [True]
    assert [w["metadata"]["name"] for w in store.finalized()] == ["w1"]
    store.remove_uid("u1")
    with pytest.raises(NotFound):
        await store.get(MANIFESTWORKS, "w1")


def test_priming_tells_its_listeners_once(store: LocalWorkStore) -> None:
    calls: list[str] = []
    store.on_primed(lambda: calls.append("primed"))
    assert not store.primed
    store.prime()
    store.prime()
    assert store.primed and calls == ["primed"]


async def test_watch_resumes_from_a_resource_version(publisher: Publisher) -> None:
    store = LocalWorkStore("cluster1", publisher, history=8)
    listed = await store.list(MANIFESTWORKS, "cluster1")
    start = listed["metadata"]["resourceVersion"]
    store.apply_spec(work())
    store.apply_spec(work(generation=2))
    store.remove_uid("u1")
    seen = []
    async with store.watch(
        MANIFESTWORKS, "cluster1", resource_version=start, timeout_seconds=1
    ) as events:
        async for event in events:
            seen.append(event.type)
    assert seen == [ADDED, MODIFIED, DELETED]
    for i in range(10):
        store.apply_spec(work(uid=f"x{i}", name=f"x{i}"))
    with pytest.raises(Gone):
        async with store.watch(MANIFESTWORKS, resource_version=start):
            pass


def test_merge_patch_semantics() -> None:
    assert apply_merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {
        "a": {"c": 2, "d": 3}
    }
    assert apply_merge_patch({"a": [1]}, {"a": [2]}) == {"a": [2]}
