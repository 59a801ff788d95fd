"""The seam between where ManifestWorks come from and the agent's controllers.

A :class:`WorkSource` gives the agent a :data:`WorkClient` (the works
informer lists and watches through it; the controllers get and patch works
through it) and the hub hash; a source that needs a connection of its own
also gives a service for the manager to run. The kube source's client is the
hub's :class:`~ocmkit.kube.KubeClient` itself; the CloudEvents sources' is a
:class:`~workagent.sources.store.LocalWorkStore`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from ocmkit.kube import KubeClient
from workagent.identity import hub_hash
from workagent.sources.store import LocalWorkStore

if TYPE_CHECKING:
    from ocmkit.runtime.manager import Service

#: What the agent does with ManifestWorks: list and watch them (the works
#: informer), get and merge-patch them (the controllers).
WorkClient: TypeAlias = KubeClient | LocalWorkStore


@dataclass(frozen=True)
class WorkSource:
    """Where this agent's ManifestWorks come from.

    ``endpoint`` is the string the hub hash is computed from (the hub
    kubeconfig's server, the gRPC url or the MQTT broker host).
    """

    driver: str
    client: WorkClient
    endpoint: str
    service: Service | None = None

    @property
    def hub_hash(self) -> str:
        """The hash that names this agent's AppliedManifestWorks."""
        return hub_hash(self.endpoint)
