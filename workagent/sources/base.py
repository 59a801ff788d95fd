"""The seam between where ManifestWorks come from and the agent's controllers.

A :class:`WorkSource` gives the agent a :data:`WorkClient` (the works
informer lists and watches through it; the controllers get and patch works
through it) and the hub hash; a source that needs a connection of its own
also gives a :class:`SourceService` for the manager to run. The kube source's
client is the hub's :class:`~ocmkit.kube.KubeClient` itself; the
CloudEvents sources' is a :class:`~workagent.sources.store.LocalWorkStore`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeAlias

from ocmkit.kube import KubeClient
from workagent.sources.store import LocalWorkStore

#: What the agent does with ManifestWorks: list and watch them (the works
#: informer), get and merge-patch them (the controllers).
WorkClient: TypeAlias = KubeClient | LocalWorkStore


class SourceService(Protocol):
    """A background connection the manager starts (while leading) and stops."""

    name: str

    async def start(self) -> None:
        """Start in the background (returns at once)."""

    async def stop(self) -> None:
        """Stop and close the connection."""

    def readiness_failure(self) -> str | None:
        """Why it is not ready (None when ready)."""

    def liveness_failure(self) -> str | None:
        """Why it is broken (None when healthy)."""


@dataclass(frozen=True)
class WorkSource:
    """Where this agent's ManifestWorks come from.

    ``endpoint`` is the string the hub hash is computed from (the hub
    kubeconfig's server, the gRPC url or the MQTT broker host).
    """

    driver: str
    client: WorkClient
    endpoint: str
    hub_hash: str
    service: SourceService | None = None
