"""JSON merge patches (RFC 7386) between a cached object and the wanted one.

Both programs write objects they do not own the spec of (the agent a work's
finalizers and status, the hub its generated works and the replica set's
status) as a merge patch computed from the cache, carrying
``metadata.uid`` and ``metadata.resourceVersion`` as preconditions: a stale
cache gets a 409 and a retry, never a blind overwrite, and an unchanged
object costs no request.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

_Absent = object()


def _empty(value: Any) -> bool:
    return value is None or value in ({}, [])


def normalized(value: Any, drop: Callable[[Any], bool] = _empty) -> Any:
    """``value`` with Go's "empty is nil" semantics: empty and null fields dropped.

    Kubernetes compares with ``equality.Semantic``, for which a nil and an
    empty list or map are the same (Go decodes "absent" and "empty" into the
    same typed value); both sides are normalized before comparing. ``drop``
    says which (already normalized) field values go instead.
    """
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            norm = normalized(item, drop)
            if not drop(norm):
                out[key] = norm
        return out
    if isinstance(value, list):
        return [normalized(item, drop) for item in value]
    return value


def semantically_equal(old: Any, new: Any) -> bool:
    """Whether two JSON values are equal once empty fields are ignored."""
    return bool(normalized(old) == normalized(new))


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch that turns ``old`` into ``new``.

    Objects are diffed key by key (removed keys become ``null``); any other
    value, lists included, is replaced whole, as merge patches require.
    """
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    patch: dict[str, Any] = {}
    for key, value in new.items():
        before = old.get(key, _Absent)
        if before is _Absent:
            patch[key] = value
        elif before != value:
            both_maps = isinstance(before, Mapping) and isinstance(value, Mapping)
            patch[key] = merge_patch(before, value) if both_maps else value
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``target`` with the merge ``patch`` applied (null deletes, lists are replaced)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = apply_merge_patch(merged.get(key), value)
    return merged


def with_preconditions(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` plus the object's uid and resourceVersion as preconditions."""
    meta = obj.get("metadata") or {}
    body = dict(patch)
    body["metadata"] = {
        **(patch.get("metadata") or {}),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return body
