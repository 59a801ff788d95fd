"""The feedback watch pool (spec/agent.md section 12) against one kubesim."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, NAMESPACES, KubeClient, Resource
from ocmkit.runtime import HealthChecks
from tests.conftest import eventually
from workagent.watchpool import FeedbackWatchPool, WatchKey

CM_V1 = CONFIGMAPS


@pytest.fixture
async def client(sim: KubeSim, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A client of ``sim`` with namespaces ``a``, ``b`` and ``c``."""
    kube = await KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"), qps=0, name="test")
    for name in ("a", "b", "c"):
        await kube.create(NAMESPACES, {"metadata": {"name": name}})
    try:
        yield kube
    finally:
        await kube.close()


def fallbacks() -> float:
    return REGISTRY.get_sample_value("feedback_watch_fallbacks_total") or 0.0


def gauge(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


async def test_one_informer_per_resource_and_namespace(client: KubeClient) -> None:
    """Registrations share an informer; the last one to go stops it."""
    checks = HealthChecks()
    pool = FeedbackWatchPool(client, 5, checks=checks)
    try:
        assert await pool.register(CM_V1, "a", "one", "w1")
        assert await pool.register(CM_V1, "a", "one", "w1")  # idempotent
        assert await pool.register(CM_V1, "a", "two", "w1")
        assert await pool.register(CM_V1, "a", "one", "w2")
        assert pool.watched() == {WatchKey("", "v1", "configmaps", "a")}
        assert len(pool.registrations()) == 3
        assert gauge("feedback_watch_pool_informers") == 1
        assert gauge("feedback_watch_pool_registrations") == 3
        assert [r.name for r in checks.livez().results] == [
            "informer feedback-watch configmaps.v1 a"
        ]

        await pool.release_work("w1")
        assert pool.watched() and len(pool.registrations()) == 1
        await pool.unregister("", "configmaps", "a", "one", "w2")
        assert not pool.watched() and not pool.registrations()
        assert gauge("feedback_watch_pool_informers") == 0
        assert checks.livez().results == ()
    finally:
        await pool.stop()


async def test_full_pool_falls_back_once_and_promotes(client: KubeClient) -> None:
    """Past the limit nothing is created and the fallback is counted once; a freed slot
    lets the next registration in."""
    pool = FeedbackWatchPool(client, 2)
    before = fallbacks()
    try:
        assert await pool.register(CM_V1, "a", "x", "wa")
        assert await pool.register(CM_V1, "b", "x", "wb")
        assert await pool.register(CM_V1, "b", "y", "wb")  # same informer: no new slot
        assert not await pool.register(CM_V1, "c", "x", "wc")
        assert not await pool.register(CM_V1, "c", "x", "wc")
        assert fallbacks() - before == 1
        assert len(pool.watched()) == 2

        await pool.release_work("wa")
        assert await pool.register(CM_V1, "c", "x", "wc")
        assert pool.watched() == {
            WatchKey("", "v1", "configmaps", "b"),
            WatchKey("", "v1", "configmaps", "c"),
        }
        assert fallbacks() - before == 1
    finally:
        await pool.stop()
    assert not pool.watched()
    assert not await pool.register(CM_V1, "a", "x", "wa")  # stopped: polls


async def test_retain_and_versionless_unregister(client: KubeClient) -> None:
    """``retain`` keeps only what the work lists; ``unregister`` without a version matches
    every version (stale detection ignores versions)."""
    other_version = Resource("", "v2", "configmaps", "ConfigMap", True)
    pool = FeedbackWatchPool(client, 5)
    try:
        await pool.register(CM_V1, "a", "keep", "w")
        await pool.register(CM_V1, "a", "drop", "w")
        await pool.register(other_version, "b", "old", "w")
        await pool.retain(
            "w", {("", "v1", "configmaps", "a", "keep"), ("", "v2", "configmaps", "b", "old")}
        )
        assert {r.name for r in pool.registrations()} == {"keep", "old"}
        await pool.unregister("", "configmaps", "b", "old", "w")
        assert {r.name for r in pool.registrations()} == {"keep"}
        assert pool.watched() == {WatchKey("", "v1", "configmaps", "a")}
    finally:
        await pool.stop()


async def test_events_and_cache_reads(client: KubeClient) -> None:
    """Adds and updates reach the listeners; a synced informer answers reads."""
    seen: list[tuple[str, str, str, str]] = []

    def listener(group: str, version: str, resource: str, obj: dict[str, Any]) -> None:
        seen.append((group, version, resource, obj["metadata"]["name"]))

    pool = FeedbackWatchPool(client, 5)
    pool.add_listener(listener)
    await client.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "a"}})
    try:
        assert pool.lookup("", "v1", "configmaps", "a", "cm") is None  # not watched: GET
        await pool.register(CM_V1, "a", "cm", "w")

        async def cached() -> bool:
            found = pool.lookup("", "v1", "configmaps", "a", "cm")
            return found is not None and found.obj is not None

        await eventually(cached, what="the informer to cache the configmap")
        missing = pool.lookup("", "v1", "configmaps", "a", "nothing")
        assert missing is not None and missing.obj is None
        assert ("", "v1", "configmaps", "cm") in seen

        seen.clear()
        await client.patch(CONFIGMAPS, "cm", {"data": {"k": "v"}}, "a", patch_type="merge")

        async def updated() -> bool:
            return ("", "v1", "configmaps", "cm") in seen

        await eventually(updated, what="the update to reach the listener")
    finally:
        await pool.stop()
