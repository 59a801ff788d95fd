"""Fixtures for the runtime tests: a client for kubesim and informers that clean up."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, KubeClient, Resource
from ocmkit.runtime import Informer, Object
from tests.support.simclient import sim_client

NS = "demo"


@pytest.fixture
async def kube(sim: KubeSim, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """An admin client for ``sim`` (no client-side QPS limit) with namespace ``demo``."""
    async with sim_client(tmp_path, "work-agent-test", "runtime-test", NS) as client:
        yield client


@dataclass
class Recorder:
    """Event handlers that record what they see, in order."""

    events: list[tuple[str, str, Any]] = field(default_factory=list)

    def on_add(self, obj: Object) -> None:
        self.events.append(("add", obj["metadata"]["name"], obj.get("data")))

    def on_update(self, old: Object, new: Object) -> None:
        self.events.append(("update", new["metadata"]["name"], new.get("data")))

    def on_delete(self, obj: Object) -> None:
        self.events.append(("delete", obj["metadata"]["name"], obj.get("data")))

    def attach(self, informer: Informer) -> Recorder:
        informer.add_handler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)
        return self

    def of(self, name: str) -> list[tuple[str, Any]]:
        return [(kind, data) for kind, n, data in self.events if n == name]


InformerFactory = Callable[..., Informer]


@pytest.fixture
async def informers(kube: KubeClient) -> AsyncIterator[InformerFactory]:
    """Build informers on ``kube`` with fast backoff (stopped at teardown)."""
    made: list[Informer] = []

    def make(resource: Resource = CONFIGMAPS, namespace: str | None = NS, **kw: Any) -> Informer:
        kw.setdefault("backoff_initial", 0.05)
        kw.setdefault("backoff_max", 0.4)
        informer = Informer(kube, resource, namespace, **kw)
        made.append(informer)
        return informer

    try:
        yield make
    finally:
        for informer in made:
            await informer.stop()


async def recorded(informers: InformerFactory, name: str, **kw: Any) -> tuple[Informer, Recorder]:
    """Informer ``name`` (``kw`` as for :func:`informers`) with a Recorder, started and synced."""
    informer = informers(name=name, **kw)
    rec = Recorder().attach(informer)
    await informer.start()
    assert await informer.wait_synced(10)
    return informer, rec


def sample(metric: str, **labels: str) -> float:
    """A metric sample on the default registry (0 when absent)."""
    return REGISTRY.get_sample_value(metric, labels) or 0.0


def cm(name: str, **data: str) -> dict[str, Any]:
    """A ConfigMap body (no ``data`` field when no data is given)."""
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    if data:
        body["data"] = data
    return body
