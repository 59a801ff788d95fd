"""Update strategies: how a manifest is written to the managed cluster (spec/agent.md 5).

Build one :class:`Appliers` per agent and pick with
``appliers.for_strategy(manifest's updateStrategy)``; the contract
(:class:`ApplyRequest`, the :class:`Applier` protocol and its errors besides
``KubeError``) is in :mod:`workagent.apply.base`. Every applier drops
``metadata.uid`` from the manifest, never mutates the request, and never logs
manifests or Secret data (only resource, namespace and name).
"""

from workagent.apply.base import (
    Applier,
    ApplyRequest,
    IgnoreFieldsError,
    InvalidManifest,
    ServerSideApplyConflict,
)
from workagent.apply.create_only import CreateOnlyApplier
from workagent.apply.factory import Appliers
from workagent.apply.kinds import SERVICE_SPEC_HASH_ANNOTATION
from workagent.apply.read_only import ReadOnlyApplier
from workagent.apply.server_side import CONFIG_SPEC_HASH_ANNOTATION, ServerSideApplier
from workagent.apply.update import UpdateApplier

__all__ = [
    "CONFIG_SPEC_HASH_ANNOTATION",
    "SERVICE_SPEC_HASH_ANNOTATION",
    "Applier",
    "Appliers",
    "ApplyRequest",
    "CreateOnlyApplier",
    "IgnoreFieldsError",
    "InvalidManifest",
    "ReadOnlyApplier",
    "ServerSideApplier",
    "ServerSideApplyConflict",
    "UpdateApplier",
]
