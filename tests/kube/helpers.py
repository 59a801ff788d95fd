"""Helpers shared by the client tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client import REGISTRY

from ocmkit.kube import KubeClient, Resource
from ocmkit.kube.config import ClusterConfig
from ocmkit.kube.credentials import StaticCredentials
from tests.support.crds import ANY_CONTENT, crd, object_schema

NS = "demo"

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)
WIDGET_CRD = crd(
    "example.com",
    "Widget",
    list_kind=True,
    schema=object_schema(spec=ANY_CONTENT),
)


def cm(name: str, **data: str) -> dict[str, Any]:
    """A ConfigMap body."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def sample(name: str, labels: dict[str, str]) -> float:
    """The current value of a metric sample on the default registry (0 when absent)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


@dataclass
class FakeServer:
    """A tiny HTTP server answering every request with ``handler`` (for transport faults)."""

    handler: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None
    queries: list[str] = field(default_factory=list)
    url: str = ""

    def client(self, *, timeout: float = 5.0) -> KubeClient:
        """A client pointed at this server."""
        config = ClusterConfig(host=self.url, credentials=StaticCredentials("Bearer t"))
        return KubeClient(config, qps=0, timeout=timeout, name="fake")
