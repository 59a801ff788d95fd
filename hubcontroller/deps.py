"""The frozen dependency object the hub controllers are built from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from ocmkit.kube import KubeClient
from ocmkit.runtime import Informer

#: A wall clock (injectable for tests): rollouts, conditions and TTLs read the time through it.
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time, timezone-aware: the clock of rollouts, conditions and TTLs."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class HubDeps:
    """Clients and shared caches of the hub controller process.

    ``works`` caches every ManifestWork of the hub (all namespaces); the
    ManifestWorkReplicaSet controller and the garbage collector share it.
    """

    hub: KubeClient
    works: Informer
    workers: int = 5

    @property
    def works_client(self) -> KubeClient:
        """The client of ``works``, through which works are written: with
        ``--work-driver-config`` ManifestWorks live behind another kubeconfig."""
        client = self.works.client
        if not isinstance(client, KubeClient):
            raise TypeError("the works informer must read through a KubeClient")
        return client
