"""Writes of the ManifestWorkReplicaSet controller: generated works and its own object.

Every write of an existing object is a JSON merge patch (RFC 7386) computed
from the cached object, carrying ``metadata.uid`` and
``metadata.resourceVersion`` as preconditions: a stale cache gets a 409 and a
retry, never a blind overwrite, and an unchanged object costs no request.

:class:`WorkWriter` remembers the works it wrote until the shared informer
shows them (:mod:`replicaset_recent` says why).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

import structlog

from hubcontroller.controllers.replicaset_recent import RecentWrites
from hubcontroller.controllers.replicaset_works import comparable_spec, meta, owned_metadata
from hubcontroller.metrics import WORKS_CREATED, WORKS_DELETED
from ocmkit.kube import (
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    AlreadyExists,
    Conflict,
    KubeClient,
    KubeError,
    NotFound,
)
from ocmkit.kube.mergepatch import merge_patch, with_preconditions

log = structlog.get_logger(__name__)

#: Writes one reconcile has in flight at once.
WRITE_CONCURRENCY = 16

#: A write and how to name it in a message.
Write = tuple[str, Awaitable[None]]


def _applied_fields(work: Mapping[str, Any]) -> dict[str, Any]:
    """What the controller owns on a work: labels, annotations, ownerReferences, spec."""
    return {"metadata": owned_metadata(work), "spec": work.get("spec") or {}}


class WorkWriter:
    """Creates, patches and deletes generated ManifestWorks, remembering recent writes."""

    def __init__(self, client: KubeClient, recent: RecentWrites) -> None:
        self.client = client
        self.recent = recent

    async def apply(
        self, owner: str, desired: dict[str, Any], existing: Mapping[str, Any] | None
    ) -> None:
        """Create ``desired``, or merge-patch ``existing`` into it when they differ."""
        if existing is None:
            try:
                created = await self.client.create(MANIFESTWORKS, desired)
            except AlreadyExists:
                return  # as OCM's applier: someone else made it
            WORKS_CREATED.inc()
            self.recent.remember(owner, created, None)
            log.info(
                "created manifestwork",
                namespace=meta(created).get("namespace"),
                name=meta(created).get("name"),
            )
            return
        have, want = _applied_fields(existing), _applied_fields(desired)
        if comparable_spec(have["spec"]) == comparable_spec(want["spec"]):
            # Equal as Go reads them (e.g. OCM's zero values): keep the spec and its generation.
            want["spec"] = have["spec"]
        if have == want:
            return
        patch = merge_patch(have, want)
        work_meta = meta(existing)
        patched = await self.client.patch(
            MANIFESTWORKS,
            str(work_meta.get("name")),
            with_preconditions(existing, patch),
            str(work_meta.get("namespace")),
        )
        self.recent.remember(owner, patched, str(work_meta.get("resourceVersion", "")))
        log.info(
            "updated manifestwork", namespace=work_meta.get("namespace"), name=work_meta.get("name")
        )

    async def delete(self, owner: str, work: Mapping[str, Any]) -> None:
        """Delete a generated work (already gone is fine)."""
        work_meta = meta(work)
        uid = str(work_meta.get("uid", ""))
        try:
            answer = await self.client.delete(
                MANIFESTWORKS,
                str(work_meta.get("name")),
                str(work_meta.get("namespace")),
                preconditions={"uid": uid} if uid else None,
            )
        except NotFound:
            self.recent.remember_deleted(owner, uid)
            return
        except Conflict:
            return  # a newer object of that name (not ours to delete); the cache will show it
        WORKS_DELETED.inc()
        if answer is None:
            self.recent.remember_deleted(owner, uid)
        else:
            # Finalizers hold it (the agent is cleaning up): it now has a deletionTimestamp.
            self.recent.remember(owner, answer, str(work_meta.get("resourceVersion", "")))
        log.info(
            "deleted manifestwork",
            namespace=work_meta.get("namespace"),
            name=work_meta.get("name"),
        )


async def patch_finalizers(
    client: KubeClient, replica_set: Mapping[str, Any], finalizers: list[str]
) -> dict[str, Any]:
    """Set the replica set's finalizers (merge patch with preconditions)."""
    return await _patch(client, replica_set, {"metadata": {"finalizers": finalizers}})


async def patch_status(
    client: KubeClient, replica_set: Mapping[str, Any], old: Any, new: Any
) -> dict[str, Any]:
    """Send the merge patch from status ``old`` to ``new`` to the status subresource."""
    patch = {"status": merge_patch(old or {}, new)}
    return await _patch(client, replica_set, patch, subresource="status")


async def _patch(
    client: KubeClient, replica_set: Mapping[str, Any], patch: Any, subresource: str | None = None
) -> dict[str, Any]:
    rs_meta = meta(replica_set)
    body = with_preconditions(replica_set, patch)
    name, namespace = str(rs_meta.get("name")), str(rs_meta.get("namespace"))
    return await client.patch(
        MANIFESTWORK_REPLICASETS, name, body, namespace, subresource=subresource
    )


async def run_writes(writes: Sequence[Write]) -> list[tuple[str, KubeError]]:
    """Run writes with bounded concurrency; the API errors are returned, not raised.

    One failed write must not stop the others (a missing cluster namespace
    would otherwise block every cluster after it).
    """
    if not writes:
        return []
    gate = asyncio.Semaphore(WRITE_CONCURRENCY)
    failed: list[tuple[str, KubeError]] = []

    async def guarded(what: str, write: Awaitable[None]) -> None:
        async with gate:
            try:
                await write
            except KubeError as err:
                failed.append((what, err))

    await asyncio.gather(*(guarded(what, write) for what, write in writes))
    return failed
