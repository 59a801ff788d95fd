"""Owner references of applied objects, including the removal marker (spec/agent.md 4.4, 5).

Every strategy that writes gives an applied object the AppliedManifestWork's
owner reference, unless the work orphans the object: then the reconciler
passes a *removal marker*, the same reference with ``-`` appended to its uid.
A marker is never written: objects are created without it, and a reference
matching it (same name, kind and API group, whatever its uid) is removed from
existing objects. These are library-go's ``MergeOwnerRefs`` rules, on which
OCM's wire behaviour rests.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ocmkit.kube import KubeClient, Resource, split_api_version

#: Suffix of an owner reference's uid that turns it into a removal marker.
REMOVAL_MARKER_SUFFIX = "-"


def is_removal_marker(ref: Mapping[str, Any]) -> bool:
    """Whether ``ref`` asks for the removal of a matching owner reference."""
    return str(ref.get("uid") or "").endswith(REMOVAL_MARKER_SUFFIX)


def _api_group(api_version: Any) -> str | None:
    """The group of an apiVersion (``""`` for the core group), None when malformed."""
    try:
        return split_api_version(str(api_version or ""))[0]
    except ValueError:
        return None


def same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two references name the same owner: name, kind and API group (not uid, version)."""
    if a.get("name") != b.get("name") or a.get("kind") != b.get("kind"):
        return False
    group_a, group_b = _api_group(a.get("apiVersion")), _api_group(b.get("apiVersion"))
    return group_a is not None and group_a == group_b


def merge_owner_refs(
    existing: Iterable[Mapping[str, Any]] | None, required: Iterable[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], bool]:
    """Merge ``required`` references into ``existing``; returns (merged list, modified).

    A required reference replaces the first existing one naming the same
    owner when they differ, or is appended; a removal marker deletes the
    first match instead and is itself never added.
    """
    merged = [dict(ref) for ref in existing or ()]
    modified = False
    for ref in required:
        index = next((i for i, have in enumerate(merged) if same_owner(ref, have)), None)
        if is_removal_marker(ref):
            if index is not None:
                del merged[index]
                modified = True
            continue
        if index is None:
            merged.append(dict(ref))
            modified = True
        elif merged[index] != dict(ref):
            merged[index] = dict(ref)
            modified = True
    return merged, modified


def without_removal_markers(refs: Iterable[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The references to create an object with: every removal marker dropped."""
    return [dict(ref) for ref in refs or () if not is_removal_marker(ref)]


async def ensure_owner(
    client: KubeClient, resource: Resource, obj: dict[str, Any], owner: Mapping[str, Any]
) -> dict[str, Any]:
    """Add (or, for a removal marker, strip) ``owner`` on a live object; returns the object.

    One JSON merge patch of ``metadata.ownerReferences`` carrying the
    object's uid and resourceVersion as preconditions, and only when the
    merged list differs (spec/agent.md 5.2, 5.4 step 6). A stale
    resourceVersion answers 409 Conflict, which the apply pass retries.
    """
    meta = obj.get("metadata") or {}
    merged, modified = merge_owner_refs(meta.get("ownerReferences"), [owner])
    if not modified:
        return obj
    patch = {
        "metadata": {
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            # A merge patch replaces lists whole: send the complete merged list.
            "ownerReferences": copy.deepcopy(merged),
        }
    }
    namespace = meta.get("namespace") if resource.namespaced else None
    return await client.patch(
        resource, str(meta.get("name") or ""), patch, namespace, patch_type="merge"
    )
