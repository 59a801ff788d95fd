"""What every update strategy takes and returns (spec/agent.md section 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ocmkit.kube import Resource
from schemas.work_v1 import ManifestConfigOption


@dataclass(frozen=True)
class ApplyRequest:
    """One manifest to apply.

    ``owner`` is the ownerReference to the AppliedManifestWork; when its uid ends
    with ``-`` it is a *removal marker*: create without it, and strip a matching
    owner reference from an existing object (section 4.4 step 3.5).

    ``required`` is never modified by an applier (it may be shared with an
    informer cache). ``option`` is the manifest's effective config (section 6);
    ServerSideApply reads ``updateStrategy.serverSideApply`` from it.
    ``work_name`` scopes what the Update strategy remembers between applies.

    ``create_first`` says the agent has never seen the object exist (the
    AppliedManifestWork lists no UID for it): Update and CreateOnly then send
    the create without a GET before it, and fall back to reading the object
    when the create answers AlreadyExists (or Forbidden: an identity may be
    allowed to update an object it may not create). Only a hint for saving a
    request; the outcome is the same either way.

    ``known`` is the object as the agent read it less than half a status-sync
    interval ago (a coalesced list): Update compares with it instead of a GET
    (a drift that happened since is corrected by the next pass; a write it
    leads to carries its resourceVersion, so a stale one answers 409).

    ``may_have_changed`` says the work's status does not show this manifest
    applied at the work's generation: when Update has no memory of the
    manifest it applied last (a restart), it recalls it from the object
    (:mod:`workagent.apply.recall`) so keys dropped meanwhile are removed.
    """

    resource: Resource
    required: dict[str, Any]
    owner: dict[str, Any]
    option: ManifestConfigOption | None
    work_name: str
    create_first: bool = False
    known: dict[str, Any] | None = None
    may_have_changed: bool = False


class ServerSideApplyConflict(Exception):
    """A field-manager conflict: shown in the manifest's Applied condition, not retried."""


class IgnoreFieldsError(Exception):
    """ignoreFields could not be processed (reason AppliedManifestSSAIgnoreFieldError)."""


class InvalidManifest(Exception):
    """The manifest contradicts itself and was not sent (e.g. a Secret whose
    ``stringData`` and ``data`` disagree); reported like any apply failure."""


class Applier(Protocol):
    """An update strategy."""

    async def apply(self, request: ApplyRequest) -> dict[str, Any]:
        """Apply and return the live object (raises KubeError and the errors above)."""
        ...
