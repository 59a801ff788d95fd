"""Writes that send nothing when nothing changed (spec/agent.md section 4.7).

Every write the agent makes to an object it does not own the spec of (the
hub ManifestWork's finalizers and status, the AppliedManifestWork's spec and
status) is a JSON merge patch (RFC 7386) computed between the cached object
and the desired one, carrying ``metadata.uid`` and ``metadata.resourceVersion``
as preconditions. A stale cache therefore gets a 409 and a retry, never a
blind overwrite, and an unchanged object costs no request at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ocmkit.kube import Resource
from ocmkit.kube.mergepatch import merge_patch, semantically_equal, with_preconditions
from workagent.sources.base import WorkClient


async def patch_status(
    client: WorkClient,
    res: Resource,
    obj: dict[str, Any],
    new_status: dict[str, Any],
) -> dict[str, Any] | None:
    """Patch ``status`` of ``obj`` to ``new_status`` if it differs; returns the new object.

    Returns None and sends nothing when the statuses are semantically equal.
    """
    old_status = obj.get("status") or {}
    if semantically_equal(old_status, new_status):
        return None
    body = with_preconditions(obj, {"status": merge_patch(old_status, new_status)})
    meta = obj["metadata"]
    return await client.patch(
        res, meta["name"], body, meta.get("namespace"), patch_type="merge", subresource="status"
    )


async def patch_metadata_and_spec(
    client: WorkClient,
    res: Resource,
    obj: dict[str, Any],
    *,
    finalizers: list[str] | None = None,
    labels: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Patch finalizers, labels and/or spec of ``obj`` to the given values if they differ.

    Arguments left as None are not touched. Returns None and sends nothing
    when every given part already has the wanted value.
    """
    meta = obj.get("metadata") or {}
    old: dict[str, Any] = {"metadata": {}}
    new: dict[str, Any] = {"metadata": {}}
    if finalizers is not None:
        old["metadata"]["finalizers"] = list(meta.get("finalizers") or [])
        new["metadata"]["finalizers"] = list(finalizers)
    if labels is not None:
        old["metadata"]["labels"] = dict(meta.get("labels") or {})
        new["metadata"]["labels"] = dict(labels)
    if spec is not None:
        old["spec"] = obj.get("spec") or {}
        new["spec"] = spec
    if semantically_equal(old, new):
        return None
    patch = merge_patch(old, new)
    if not patch.get("metadata"):
        patch.pop("metadata", None)
    body = with_preconditions(obj, patch)
    return await client.patch(res, meta["name"], body, meta.get("namespace"), patch_type="merge")


def _rv(obj: dict[str, Any] | None) -> str | None:
    return None if obj is None else str((obj.get("metadata") or {}).get("resourceVersion") or "")


class RecentWrites:
    """Our own last write per key, for as long as the informer has not caught up.

    A reconcile that follows our own write quickly (a retry, a new spec) would
    otherwise read the pre-write object from the cache and fail its
    resourceVersion precondition with a pointless 409. The written object is
    used instead only while the cache still shows a version it replaced, so
    no resourceVersion ordering is assumed.

    ``cached`` (when given) returns what the informer holds for a key: an
    entry is then dropped as soon as the informer shows our write, by
    :meth:`settle` from its event handler, or never stored when the event came
    first. Without it an entry lives until the next :meth:`latest` of its key,
    which for a work that is never reconciled again (idle) means for ever: a
    whole object per work.
    """

    def __init__(self, cached: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        # key -> (versions our write superseded, the object the server returned)
        self._writes: dict[str, tuple[frozenset[str | None], dict[str, Any]]] = {}
        self._cached = cached

    def __len__(self) -> int:
        return len(self._writes)

    def latest(self, key: str, cached: dict[str, Any] | None) -> dict[str, Any] | None:
        """``cached``, or our newer write if the cache has not seen it yet."""
        entry = self._writes.get(key)
        if entry is None:
            return cached
        superseded, written = entry
        if _rv(cached) in superseded:
            return written
        del self._writes[key]  # the cache caught up (or someone else wrote)
        return cached

    def remember(self, key: str, based_on: dict[str, Any] | None, written: dict[str, Any]) -> None:
        """Record that ``written`` replaced ``based_on`` (None: it was created)."""
        entry = self._writes.get(key)
        superseded = {_rv(based_on)}
        if entry is not None and entry[1] is based_on:
            superseded |= entry[0]
        if self._cached is not None and _rv(self._cached(key)) not in superseded:
            # The informer already shows our write (or a later one): nothing to bridge.
            self._writes.pop(key, None)
            return
        self._writes[key] = (frozenset(superseded), written)

    def settle(self, key: str) -> None:
        """Drop the entry of ``key`` if the informer caught up (call on its events)."""
        if self._cached is not None and key in self._writes:
            self.latest(key, self._cached(key))

    def forget(self, key: str) -> None:
        """Drop what is remembered for ``key``."""
        self._writes.pop(key, None)
