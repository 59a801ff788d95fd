"""Condition bookkeeping on wire-form (dict) conditions.

Two rules live here:

- the standard Kubernetes semantics of ``meta.SetStatusCondition``
  (spec/agent.md section 9): a condition is matched by ``type``;
  ``lastTransitionTime`` moves only when ``status`` changes; reason, message
  and observedGeneration are always overwritten;
- OCM's ``MergeManifestConditions`` (section 4.5): how a freshly computed
  per-manifest list is merged with the one in the ManifestWork's status.

Conditions are plain dicts as the API server sends them, so what we did not
compute (a timestamp with a fraction, a field a newer API adds) goes back
unchanged and an unchanged status compares equal.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from schemas.meta import format_time

Condition = dict[str, Any]
ManifestCondition = dict[str, Any]

_META_FIELDS = ("group", "version", "kind", "resource", "name", "namespace")


def find_condition(conditions: list[Condition] | None, ctype: str) -> Condition | None:
    """The condition of type ``ctype``, or None."""
    for cond in conditions or []:
        if cond.get("type") == ctype:
            return cond
    return None


def work_condition(obj: dict[str, Any], ctype: str) -> Condition | None:
    """The condition of type ``ctype`` in ``obj``'s ``status.conditions``, or None."""
    return find_condition((obj.get("status") or {}).get("conditions"), ctype)


def manifest_statuses(work: dict[str, Any]) -> list[ManifestCondition]:
    """The work's ``status.resourceStatus.manifests`` (the entries themselves, not copies)."""
    return list(((work.get("status") or {}).get("resourceStatus") or {}).get("manifests") or [])


def is_condition_true(conditions: list[Condition] | None, ctype: str) -> bool:
    """Whether the condition of type ``ctype`` exists with status ``True``."""
    cond = find_condition(conditions, ctype)
    return cond is not None and cond.get("status") == "True"


def new_condition(
    ctype: str, status: str, reason: str, message: str, observed_generation: int | None
) -> Condition:
    """A condition without a transition time (set when it is merged in)."""
    cond: Condition = {"type": ctype, "status": status, "reason": reason, "message": message}
    if observed_generation:
        cond["observedGeneration"] = observed_generation
    return cond


def set_condition(conditions: list[Condition], new: Condition, now: datetime) -> None:
    """Merge ``new`` into ``conditions`` in place with Kubernetes condition semantics."""
    existing = find_condition(conditions, new["type"])
    if existing is None:
        added = dict(new)
        added.setdefault("lastTransitionTime", format_time(now))
        conditions.append(added)
        return
    if existing.get("status") != new["status"]:
        existing["status"] = new["status"]
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or format_time(now)
    existing["reason"] = new["reason"]
    existing["message"] = new["message"]
    if new.get("observedGeneration"):
        existing["observedGeneration"] = new["observedGeneration"]
    else:
        existing.pop("observedGeneration", None)


def remove_condition(conditions: list[Condition], ctype: str) -> None:
    """Drop the condition of type ``ctype`` in place, if present."""
    conditions[:] = [c for c in conditions if c.get("type") != ctype]


def _meta_key(meta: dict[str, Any], *, with_ordinal: bool) -> tuple[Any, ...]:
    key = tuple(str(meta.get(field) or "") for field in _META_FIELDS)
    return (meta.get("ordinal", 0), *key) if with_ordinal else key


def find_manifest_status(
    existing: list[ManifestCondition] | None, meta: dict[str, Any]
) -> ManifestCondition | None:
    """The existing entry for a resource: exact resourceMeta, else the same resource
    at another ordinal when that match is unambiguous (section 4.5)."""
    entries = existing or []
    exact = _meta_key(meta, with_ordinal=True)
    for entry in entries:
        if _meta_key(entry.get("resourceMeta") or {}, with_ordinal=True) == exact:
            return entry
    loose = _meta_key(meta, with_ordinal=False)
    matches = [
        entry
        for entry in entries
        if _meta_key(entry.get("resourceMeta") or {}, with_ordinal=False) == loose
    ]
    return matches[0] if len(matches) == 1 else None


def first_manifest_status(
    existing: list[ManifestCondition] | None, meta: dict[str, Any]
) -> ManifestCondition | None:
    """The first existing entry for the resource, ordinal ignored: what the apply loop
    asks whether a manifest is Complete (an object listed twice: the first entry)."""
    loose = _meta_key(meta, with_ordinal=False)
    for entry in existing or []:
        if _meta_key(entry.get("resourceMeta") or {}, with_ordinal=False) == loose:
            return entry
    return None


def merge_manifest_conditions(
    existing: list[ManifestCondition] | None,
    new_entries: list[ManifestCondition],
    now: datetime,
) -> list[ManifestCondition]:
    """The new ``resourceStatus.manifests``: one entry per new entry, in the new order.

    A matched entry keeps its statusFeedback and other conditions; each new
    condition is merged in, after dropping an old one of the same type whose
    observedGeneration differs (so a spec change refreshes its transition
    time and moves it last). Unmatched entries are new resources: their
    conditions all start now. Entries of manifests no longer in the spec go.
    """
    merged: list[ManifestCondition] = []
    for entry in new_entries:
        meta = entry["resourceMeta"]
        old = find_manifest_status(existing, meta)
        if old is None:
            fresh = copy.deepcopy(entry)
            for cond in fresh.get("conditions") or []:
                cond["lastTransitionTime"] = format_time(now)
            merged.append(fresh)
            continue
        result = copy.deepcopy(old)
        result["resourceMeta"] = copy.deepcopy(meta)
        conditions: list[Condition] = result.setdefault("conditions", [])
        for cond in entry.get("conditions") or []:
            previous = find_condition(conditions, cond["type"])
            if previous is not None and previous.get("observedGeneration", 0) != cond.get(
                "observedGeneration", 0
            ):
                remove_condition(conditions, cond["type"])
            set_condition(conditions, cond, now)
        merged.append(result)
    return merged
