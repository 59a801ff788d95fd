"""Update strategies: how a manifest is written to the managed cluster (spec/agent.md 5).

Exported API:

* :class:`Appliers` -- the four strategies for one spoke client. Build one
  per agent and use ``appliers.for_strategy(strategy)`` (``strategy`` is a
  manifest's ``updateStrategy``, None for the default Update), e.g.
  ``AgentDeps(applier_for=appliers.for_strategy, ...)``.
* The contract (:mod:`workagent.apply.base`): :class:`ApplyRequest`, the
  :class:`Applier` protocol (``await applier.apply(request)`` returns the
  live object), and the errors it may raise besides ``KubeError``:
  :class:`ServerSideApplyConflict` (a field-manager conflict: reason
  ``AppliedManifestFailed``, not retried), :class:`IgnoreFieldsError`
  (reason ``AppliedManifestSSAIgnoreFieldError``) and
  :class:`InvalidManifest` (the manifest contradicts itself).
* The strategies, for tests and special wiring: :class:`UpdateApplier`,
  :class:`CreateOnlyApplier`, :class:`ReadOnlyApplier`,
  :class:`ServerSideApplier`.
* Wire constants: :data:`CONFIG_SPEC_HASH_ANNOTATION`,
  :data:`SERVICE_SPEC_HASH_ANNOTATION`, :data:`DEFAULT_FIELD_MANAGER`,
  :data:`REMOVAL_MARKER_SUFFIX`.

Every applier drops ``metadata.uid`` from the manifest, never mutates the
request, and never logs manifests or Secret data (only resource, namespace
and name).
"""

from workagent.apply.base import (
    Applier,
    ApplyRequest,
    IgnoreFieldsError,
    InvalidManifest,
    ServerSideApplyConflict,
)
from workagent.apply.cache import ApplyCache
from workagent.apply.create_only import CreateOnlyApplier
from workagent.apply.factory import Appliers
from workagent.apply.kinds import SERVICE_SPEC_HASH_ANNOTATION
from workagent.apply.owners import REMOVAL_MARKER_SUFFIX, is_removal_marker
from workagent.apply.read_only import ReadOnlyApplier
from workagent.apply.server_side import (
    CONFIG_SPEC_HASH_ANNOTATION,
    DEFAULT_FIELD_MANAGER,
    ServerSideApplier,
)
from workagent.apply.update import UpdateApplier

__all__ = [
    "CONFIG_SPEC_HASH_ANNOTATION",
    "DEFAULT_FIELD_MANAGER",
    "REMOVAL_MARKER_SUFFIX",
    "SERVICE_SPEC_HASH_ANNOTATION",
    "Applier",
    "Appliers",
    "ApplyCache",
    "ApplyRequest",
    "CreateOnlyApplier",
    "IgnoreFieldsError",
    "InvalidManifest",
    "ReadOnlyApplier",
    "ServerSideApplier",
    "ServerSideApplyConflict",
    "UpdateApplier",
    "is_removal_marker",
]
