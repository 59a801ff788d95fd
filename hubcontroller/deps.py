"""The frozen dependency object the hub controllers are built from."""

from __future__ import annotations

from dataclasses import dataclass

from ocmkit.kube import KubeClient
from ocmkit.runtime import Informer


@dataclass(frozen=True)
class HubDeps:
    """Clients and shared caches of the hub controller process.

    ``works`` caches every ManifestWork of the hub (all namespaces); the
    ManifestWorkReplicaSet controller and the garbage collector share it.
    ``gates`` are the enabled hub feature gates.
    """

    hub: KubeClient
    works: Informer
    gates: frozenset[str]
    workers: int = 5
