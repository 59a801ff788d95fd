"""Writes that send nothing when nothing changed (spec/agent.md section 4.7).

Every write the agent makes to an object it does not own the spec of (the
hub ManifestWork's finalizers and status, the AppliedManifestWork's spec and
status) is a JSON merge patch (RFC 7386) computed between the cached object
and the desired one, carrying ``metadata.uid`` and ``metadata.resourceVersion``
as preconditions. A stale cache therefore gets a 409 and a retry, never a
blind overwrite, and an unchanged object costs no request at all.
"""

from __future__ import annotations

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
