"""Every top-level kind we model, looked up by ``apiVersion`` and ``kind``."""

from __future__ import annotations

from typing import Final

from schemas.cluster_v1 import ManagedCluster
from schemas.cluster_v1beta1 import Placement, PlacementDecision
from schemas.meta import KubeObject
from schemas.work_v1 import AppliedManifestWork, ManifestWork
from schemas.work_v1alpha1 import ManifestWorkReplicaSet

__all__ = ["KINDS", "model_for"]

#: The kinds with a generated CRD, in a stable order.
KINDS: Final[tuple[type[KubeObject], ...]] = (
    ManifestWork,
    AppliedManifestWork,
    ManifestWorkReplicaSet,
    Placement,
    PlacementDecision,
    ManagedCluster,
)

_BY_TYPE: Final = {(k.api_resource.api_version, k.api_resource.kind): k for k in KINDS}


def model_for(api_version: str, kind: str) -> type[KubeObject] | None:
    """The model class for ``apiVersion``/``kind``, or None if we do not model it."""
    return _BY_TYPE.get((api_version, kind))
