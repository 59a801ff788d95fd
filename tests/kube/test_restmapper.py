"""RESTMapper: built-in kinds, CRDs created after discovery, rate-limited rediscovery."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import (
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    KubeClient,
    NoKindMatch,
    NotFound,
    Resource,
    RESTMapper,
    ServerError,
)
from ocmkit.kube.config import load_kubeconfig
from tests.kube.helpers import NS, WIDGET_CRD


class FakeTime:
    """A manual clock; sleeping advances it and is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


async def test_builtin_kinds_and_plurals(client: KubeClient) -> None:
    mapper = RESTMapper(client, min_refresh_interval=0.0)
    assert await mapper.resource_for("v1", "ConfigMap") == CONFIGMAPS
    assert await mapper.resource_for("apps/v1", "Deployment") == DEPLOYMENTS
    assert await mapper.resource_for("apiextensions.k8s.io/v1", "CustomResourceDefinition") == CRDS
    assert await mapper.resource_for_plural("apps", "v1", "deployments") == DEPLOYMENTS
    assert mapper.discoveries == 1
    # Subresources are not resources of their own (the miss rediscovers once).
    with pytest.raises(NoKindMatch):
        await mapper.resource_for_plural("apps", "v1", "deployments/status")
    assert mapper.discoveries == 2


async def test_crd_created_after_discovery_becomes_usable(client: KubeClient) -> None:
    mapper = RESTMapper(client, min_refresh_interval=0.0)
    await mapper.resource_for("v1", "ConfigMap")
    await client.create(CRDS, WIDGET_CRD)
    widgets = await mapper.resource_for("example.com/v1", "Widget")
    assert widgets == Resource("example.com", "v1", "widgets", "Widget", True)
    assert mapper.discoveries == 2
    made = await client.create(
        widgets, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, NS
    )
    assert made["metadata"]["name"] == "w"
    assert await mapper.resource_for_plural("example.com", "v1", "widgets") == widgets
    assert mapper.discoveries == 2


async def test_unknown_kind_is_no_kind_match_a_not_found(client: KubeClient) -> None:
    mapper = RESTMapper(client, min_refresh_interval=0.0)
    with pytest.raises(NoKindMatch) as exc:
        await mapper.resource_for("example.com/v1", "Gadget")
    assert isinstance(exc.value, NotFound) and exc.value.code == 404
    assert 'kind "Gadget" in version "example.com/v1"' in exc.value.message
    # The first lookup's discovery began after the call: no second one was needed.
    assert mapper.discoveries == 1
    with pytest.raises(NoKindMatch, match="invalid apiVersion"):
        await mapper.resource_for("a/b/c", "X")


async def test_a_lookup_without_rediscovery_uses_only_what_is_known(
    client: KubeClient,
) -> None:
    mapper = RESTMapper(client, min_refresh_interval=0.0)
    # The first lookup still loads discovery: there is nothing cached to go on.
    assert await mapper.resource_for("v1", "ConfigMap", rediscover=False) == CONFIGMAPS
    assert mapper.discoveries == 1
    await client.create(CRDS, WIDGET_CRD)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for("example.com/v1", "Widget", rediscover=False)
    assert mapper.discoveries == 1
    # A normal lookup finds it, and from then on it is known without rediscovery.
    widgets = await mapper.resource_for("example.com/v1", "Widget")
    assert await mapper.resource_for("example.com/v1", "Widget", rediscover=False) == widgets
    assert mapper.discoveries == 2


async def test_rediscovery_is_rate_limited_and_shared(client: KubeClient) -> None:
    t = FakeTime()
    mapper = RESTMapper(client, min_refresh_interval=5.0, clock=t.clock, sleep=t.sleep)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for("example.com/v1", "Gadget")
    assert mapper.discoveries == 1 and t.slept == []
    # Five concurrent misses right away: one shared discovery, held back to the interval.
    results = await asyncio.gather(
        *(mapper.resource_for("example.com/v1", f"Gadget{i}") for i in range(5)),
        return_exceptions=True,
    )
    assert all(isinstance(r, NoKindMatch) for r in results)
    assert mapper.discoveries == 2 and t.slept == [5.0]
    # Known kinds never trigger discovery.
    for _ in range(3):
        await mapper.resource_for("v1", "ConfigMap")
    assert mapper.discoveries == 2


async def test_invalidate_forces_rediscovery(client: KubeClient) -> None:
    mapper = RESTMapper(client, min_refresh_interval=0.0)
    await mapper.resource_for("v1", "ConfigMap")
    mapper.invalidate()
    await mapper.resource_for("v1", "ConfigMap")
    assert mapper.discoveries == 2


class FlakyDiscovery(KubeClient):
    """Fails discovery of chosen group-versions."""

    failing: set[str] = set()

    async def get_raw(self, path: str) -> dict[str, object]:
        if path in self.failing:
            raise ServerError(503, "ServiceUnavailable", f"{path} is down")
        return await super().get_raw(path)


async def test_a_failing_group_version_keeps_what_was_known(sim: KubeSim, tmp_path: Path) -> None:
    config = await load_kubeconfig(str(tmp_path / "kubeconfig"))
    async with FlakyDiscovery(config, qps=0) as client:
        mapper = RESTMapper(client, min_refresh_interval=0.0)
        assert await mapper.resource_for("apps/v1", "Deployment") == DEPLOYMENTS
        client.failing = {"/apis/apps/v1"}
        mapper.invalidate()
        # apps/v1 is down now, but its earlier answer is kept and other groups refresh.
        assert await mapper.resource_for("apps/v1", "Deployment") == DEPLOYMENTS
        assert await mapper.resource_for("batch/v1", "Job")
        # Without the core documents there is no discovery at all: the error surfaces.
        client.failing = {"/api/v1"}
        mapper.invalidate()
        with pytest.raises(ServerError):
            await mapper.resource_for("v1", "ConfigMap")
        client.failing = set()
        assert await mapper.resource_for("v1", "ConfigMap") == CONFIGMAPS
