"""Pydantic models of the OCM work API, and the CRDs generated from them.

Modules, one per API group/version:

* :mod:`schemas.work_v1`: ManifestWork, AppliedManifestWork
* :mod:`schemas.work_v1alpha1`: ManifestWorkReplicaSet
* :mod:`schemas.cluster_v1alpha1`: rollout strategy types
* :mod:`schemas.cluster_v1beta1`: Placement, PlacementDecision
* :mod:`schemas.cluster_v1`: ManagedCluster
* :mod:`schemas.meta`: ObjectMeta, Condition, timestamps

Read objects with ``Model.from_wire(raw)`` or :func:`parse_object`, write
them with ``obj.to_wire()``; :func:`validate_object` adds the hub's admission
rules. Wire strings live in :mod:`schemas.wire`; CRD generation in
:mod:`schemas.crdgen` (``python -m schemas crds --out DIR``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schemas.cluster_v1 import ManagedCluster
    from schemas.cluster_v1beta1 import Placement, PlacementDecision
    from schemas.errors import FieldProblem, SchemaValidationError
    from schemas.meta import Condition, KubeObject, ObjectMeta
    from schemas.registry import KINDS, model_for
    from schemas.validation import parse_object, validate_object
    from schemas.work_v1 import AppliedManifestWork, ManifestWork
    from schemas.work_v1alpha1 import ManifestWorkReplicaSet

# Where each name lives. Imported on first use: building a pydantic model costs
# memory and start-up time, and the agent needs only the work API's models.
_HOMES = {
    "ManagedCluster": "cluster_v1",
    "Placement": "cluster_v1beta1",
    "PlacementDecision": "cluster_v1beta1",
    "FieldProblem": "errors",
    "SchemaValidationError": "errors",
    "Condition": "meta",
    "KubeObject": "meta",
    "ObjectMeta": "meta",
    "KINDS": "registry",
    "model_for": "registry",
    "parse_object": "validation",
    "validate_object": "validation",
    "AppliedManifestWork": "work_v1",
    "ManifestWork": "work_v1",
    "ManifestWorkReplicaSet": "work_v1alpha1",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"schemas.{home}"), name)


__all__ = [
    "KINDS",
    "AppliedManifestWork",
    "Condition",
    "FieldProblem",
    "KubeObject",
    "ManagedCluster",
    "ManifestWork",
    "ManifestWorkReplicaSet",
    "ObjectMeta",
    "Placement",
    "PlacementDecision",
    "SchemaValidationError",
    "model_for",
    "parse_object",
    "validate_object",
]
