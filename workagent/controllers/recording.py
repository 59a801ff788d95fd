"""Recording a resource in the AppliedManifestWork before it is first created.

OCM records only after a whole apply pass, so an agent killed mid-pass leaks
what it created. Here a manifest not yet recorded is added (with every other
unrecorded one cached discovery resolves) before it is applied; a new work's
AppliedManifestWork is created with them in :data:`RECORDED_ANNOTATION`.
docs/compatibility.md ("recording applied resources") has the rules; an entry
without a ``uid`` is filled in or dropped by :mod:`workagent.controllers.applied`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    KubeClient,
    KubeError,
    NoKindMatch,
    Resource,
    RESTMapper,
    split_api_version,
)
from ocmkit.runtime import Object
from workagent.controllers.applied import (
    Identity,
    entry_identity,
    recorded_resources,
    sort_entries,
)
from workagent.controllers.apply_results import ManifestResult
from workagent.controllers.patcher import patch_status

log = structlog.get_logger(__name__)

#: A longer record goes through a status write instead (annotations total <= 256 KiB).
MAX_ANNOTATION_BYTES = 64 * 1024


async def creation_record(
    mapper: RESTMapper,
    results: list[ManifestResult],
    creates: Callable[[dict[str, Any]], bool],
) -> str | None:
    """The :data:`RECORDED_ANNOTATION` value for a new AppliedManifestWork.

    Lists every manifest of ``results`` (parsed) that may create its object
    and that cached discovery resolves; None when there is none or the list is
    too long for an annotation (those are then recorded by a status write).
    """
    entries: dict[Identity, dict[str, Any]] = {}
    for result in results:
        entry = await _cached_entry(mapper, result)
        if entry is not None and creates(entry):
            entries.setdefault(entry_identity(entry), entry)
    if not entries:
        return None
    value = json.dumps(sort_entries(list(entries.values())), separators=(",", ":"))
    return value if len(value.encode()) <= MAX_ANNOTATION_BYTES else None


class RecordingFailed(Exception):
    """The AppliedManifestWork could not be written; nothing new may be created."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"cannot record resources in the AppliedManifestWork: {cause}")
        self.cause = cause
        # A throttled write waits for the server's Retry-After, not just the backoff.
        self.retry_after: float | None = getattr(cause, "retry_after", None)


async def _cached_entry(mapper: RESTMapper, result: ManifestResult) -> dict[str, Any] | None:
    """The applied-resource entry of a manifest not mapped yet, from cached discovery only.

    None when the kind is not known yet (a CR of a CRD this work is about to
    create: it is recorded right before its own apply) or the manifest is
    unusable (its apply reports why).
    """
    required = result.required
    if required is None:
        return None
    meta = result.meta
    try:
        resource = await mapper.resource_for(
            str(required.get("apiVersion") or ""), str(meta.get("kind") or ""), rediscover=False
        )
        group, version = split_api_version(str(required.get("apiVersion") or ""))
    except (NoKindMatch, ValueError):
        return None
    return _entry(meta, resource, group, version)


def _mapped_entry(result: ManifestResult) -> dict[str, Any] | None:
    """The applied-resource entry of a manifest the apply loop mapped (None: unusable)."""
    meta, resource = result.meta, result.resource
    if resource is None:
        return None
    return _entry(meta, resource, str(meta.get("group") or ""), str(meta.get("version") or ""))


def _entry(
    meta: dict[str, Any], resource: Resource, group: str, version: str
) -> dict[str, Any] | None:
    """A manifest's entry; None without a name, or a namespace if ``resource`` needs one."""
    namespace = str(meta.get("namespace") or "") if resource.namespaced else ""
    name = str(meta.get("name") or "")
    if not name or (resource.namespaced and not namespace):
        return None
    return {
        "group": group,
        "version": version,
        "resource": resource.plural,
        "namespace": namespace,
        "name": name,
    }


@dataclass
class AppliedRecord:
    """The AppliedManifestWork of one reconcile, kept listing what is about to be created.

    ``applied_work`` is the latest version this reconcile read or wrote (the
    bookkeeping and the final status write start from it). ``creates`` says
    whether applying the manifest of an entry may create its object (ReadOnly
    never does: such a manifest needs no record beforehand); ``retrying`` whether
    a manifest's last apply at this generation failed: its retry is recorded by
    the pass's bookkeeping, as in OCM, since a record before it would be dropped
    again when the create fails (two AppliedManifestWork writes per retry);
    ``on_written`` is told of every write as ``(before, after)``.
    """

    applied_work: Object
    mapper: RESTMapper
    spoke: KubeClient
    creates: Callable[[dict[str, Any]], bool] = field(kw_only=True)
    retrying: Callable[[ManifestResult], bool] = field(kw_only=True)
    on_written: Callable[[Object, Object], None] = field(kw_only=True)

    def __post_init__(self) -> None:
        entries = recorded_resources(self.applied_work)
        self._recorded = {entry_identity(e) for e in entries}
        # Entries with a UID were seen to exist by an earlier pass's bookkeeping.
        self._seen = {entry_identity(e) for e in entries if e.get("uid")}
        # A deleting record is being torn down by its finalizer, which owns its status.
        self._frozen = bool((self.applied_work.get("metadata") or {}).get("deletionTimestamp"))

    def seen_existing(self, result: ManifestResult) -> bool:
        """Whether the object of ``result`` (mapped) has been seen to exist.

        False means no pass has ever recorded its UID, so it most likely does not
        exist yet and the applier may create it without a GET first.
        """
        mine = _mapped_entry(result)
        return mine is None or entry_identity(mine) in self._seen

    async def ensure(self, result: ManifestResult, results: list[ManifestResult]) -> None:
        """Make sure ``result`` (mapped, about to be applied) is recorded if it may create.

        When it is not, records it together with every other unrecorded manifest
        of ``results`` that may create and that cached discovery can resolve.
        Raises RecordingFailed when the write fails.
        """
        mine = _mapped_entry(result)
        if (
            mine is None
            or self._frozen
            or entry_identity(mine) in self._recorded
            or not self.creates(mine)
            or self.retrying(result)
        ):
            return
        new: dict[Identity, dict[str, Any]] = {entry_identity(mine): mine}
        for other in results:
            if other is result:
                continue
            entry = (
                _mapped_entry(other)
                if other.resource is not None
                else await _cached_entry(self.mapper, other)
            )
            if entry is None:
                continue
            key = entry_identity(entry)
            if key not in self._recorded and self.creates(entry) and not self.retrying(other):
                new.setdefault(key, entry)
        await self._write(list(new.values()))
        self._recorded.update(new)

    async def _write(self, entries: list[dict[str, Any]]) -> None:
        before = self.applied_work
        status = copy.deepcopy(before.get("status") or {})
        status["appliedResources"] = sort_entries([*recorded_resources(before), *entries])
        try:
            written = await patch_status(self.spoke, APPLIED_MANIFESTWORKS, before, status)
        except KubeError as err:
            raise RecordingFailed(err) from err
        if written is not None:
            self.applied_work = written
            self.on_written(before, written)
            log.info("recorded resources before applying them", count=len(entries))
