"""AppliedManifestWork bookkeeping (spec/agent.md section 4.6, "reconciler B").

After a work's manifests were applied, record what now lives on the managed
cluster in the AppliedManifestWork's ``status.appliedResources`` (with the
live UIDs) and delete what the work no longer contains. Nothing is deleted
while any manifest cannot be resolved for a reason other than NotFound: an
unknown kind or an unreachable server must never look like "the manifest was
removed".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from ocmkit.kube import KubeError, NotFound
from ocmkit.runtime import ItemExponentialFailureRateLimiter, Object
from schemas.wire import CONDITION_APPLIED
from workagent.controllers.apply_results import ManifestResult, object_identity
from workagent.controllers.conditions import work_condition
from workagent.controllers.deletion import DeletionFailed, delete_applied_resources
from workagent.controllers.deps import AgentDeps
from workagent.controllers.metrics import ORPHAN_REMOVED_FROM_WORK
from workagent.controllers.ownership import applied_work_owner

log = structlog.get_logger(__name__)

#: An entry's fields but its uid, in object_identity's order.
_ENTRY_FIELDS = ("group", "version", "resource", "namespace", "name")

#: Annotation of an AppliedManifestWork made by this agent: the resources recorded
#: when it was created (JSON list of appliedResources entries without ``uid``).
RECORDED_ANNOTATION = "workagent.ocmkit.io/recorded-resources"

#: Annotation of an AppliedManifestWork of a grpc/mqtt agent: the work generation
#: whose every manifest was last applied and reported. Works from those sources
#: arrive without status after a restart; this tells which ones changed meanwhile.
APPLIED_GENERATION_ANNOTATION = "workagent.ocmkit.io/applied-generation"


def applied_generation(applied_work: Mapping[str, Any]) -> int | None:
    """The generation :data:`APPLIED_GENERATION_ANNOTATION` records; None when it is
    absent or not a non-negative integer."""
    annotations = (applied_work.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(APPLIED_GENERATION_ANNOTATION)
    if not isinstance(raw, str) or not (raw.isascii() and raw.isdigit()):
        return None
    return int(raw)


def recorded_resources(applied_work: Object) -> list[dict[str, Any]]:
    """The resources an AppliedManifestWork records.

    ``status.appliedResources`` once a status write set it (even to an empty
    list); before that, the entries its creation recorded in
    :data:`RECORDED_ANNOTATION` (malformed ones are ignored).
    """
    status = applied_work.get("status") or {}
    if "appliedResources" in status:
        return list(status.get("appliedResources") or [])
    annotations = (applied_work.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(RECORDED_ANNOTATION)
    if not isinstance(raw, str) or not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [
        {f: item[f] for f in _ENTRY_FIELDS}
        for item in value
        if isinstance(item, dict)
        and all(isinstance(item.get(f), str) for f in _ENTRY_FIELDS)
        and item["resource"]
        and item["name"]
    ]


def recorded_elsewhere(applied_works: Iterable[Object], own: str, meta: Mapping[str, Any]) -> bool:
    """Whether an AppliedManifestWork other than the one named ``own`` records the
    resource of ``meta`` (any version): another work applies the object too."""
    group, _, resource, namespace, name = object_identity(dict(meta))
    wanted = (group, resource, namespace, name)
    for applied_work in applied_works:
        if (applied_work.get("metadata") or {}).get("name") == own:
            continue
        for entry in recorded_resources(applied_work):
            found = object_identity(entry)
            if (found[0], found[2], found[3], found[4]) == wanted:
                return True
    return False


@dataclass
class Bookkeeping:
    """What reconciler B decided.

    ``applied_resources`` is the new ``status.appliedResources`` (None: leave
    the AMW status alone); ``requeue_after`` asks for an earlier reconcile
    while deleted resources are still finalizing; ``error`` fails the sync.
    """

    applied_resources: list[dict[str, Any]] | None = None
    requeue_after: float | None = None
    error: Exception | None = None


class UnresolvedManifestError(Exception):
    """A manifest's live object cannot be identified; stale deletion is postponed."""


async def _live_uid(deps: AgentDeps, result: ManifestResult) -> str | None:
    """The UID of the object a manifest stands for; None when it does not exist.

    Raises UnresolvedManifestError (or the API error) when it cannot be told.
    """
    if result.error is None and result.obj is not None:
        uid = (result.obj.get("metadata") or {}).get("uid")
        if uid:
            return str(uid)
    meta = result.meta
    resource = result.resource
    if (
        resource is None
        or not meta.get("version")
        or not meta.get("name")
        or (resource.namespaced and not meta.get("namespace"))
    ):
        raise UnresolvedManifestError(
            f"cannot resolve manifest {meta.get('ordinal')}: "
            "its resource, version, namespace or name is unknown"
        )
    try:
        live = await deps.status_client.get(resource, meta["name"], meta.get("namespace") or None)
    except NotFound:
        return None
    return str((live.get("metadata") or {}).get("uid") or "")


#: (group, resource, namespace, name) of an applied resource.
Identity = tuple[str, str, str, str]


def entry_identity(entry: dict[str, Any]) -> Identity:
    """Which object an applied-resource entry names.

    Stale detection ignores the version: the same object served at another
    version is still the same object.
    """
    return (
        str(entry.get("group") or ""),
        str(entry.get("resource") or ""),
        str(entry.get("namespace") or ""),
        str(entry.get("name") or ""),
    )


def sort_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sorted by group, version, resource, namespace, name (the order OCM writes)."""
    return sorted(entries, key=object_identity)


async def sync_applied_resources(
    deps: AgentDeps,
    work: dict[str, Any],
    applied_work: dict[str, Any],
    results: list[ManifestResult],
    pending_backoff: ItemExponentialFailureRateLimiter,
) -> Bookkeeping:
    """Compute the new applied list, delete stale resources, and say what to write."""
    name = work["metadata"]["name"]
    if (applied_work.get("metadata") or {}).get("deletionTimestamp"):
        return Bookkeeping()
    # Until the work was applied once there is nothing to compare against: after a
    # hub switch with the same hash this keeps us from deleting everything.
    if work_condition(work, CONDITION_APPLIED) is None:
        return Bookkeeping()

    applied: list[dict[str, Any]] = []
    absent: set[Identity] = set()
    unresolved: Exception | None = None
    for result in results:
        try:
            uid = await _live_uid(deps, result)
        except (UnresolvedManifestError, KubeError) as err:
            unresolved = unresolved or err
            continue
        meta = result.meta
        if uid is None:
            absent.add(entry_identity(meta))
            continue
        applied.append({**dict(zip(_ENTRY_FIELDS, object_identity(meta), strict=True)), "uid": uid})

    old = recorded_resources(applied_work)
    if unresolved is not None:
        # Nothing is deleted while a manifest is unresolved (OCM skips the whole
        # step). Recording what did resolve, on top of the old list, is a safe
        # superset: a manifest removed later is then found stale and deleted
        # instead of leaking. Entries of objects just found absent (recorded
        # before a create that failed) go: there is nothing to delete.
        log.info("not deleting stale resources: a manifest is unresolved", error=str(unresolved))
        fresh = {entry_identity(entry) for entry in applied} | absent
        kept = [entry for entry in old if entry_identity(entry) not in fresh]
        return Bookkeeping(
            applied_resources=_sorted_unique([*applied, *kept]),
            error=unresolved if isinstance(unresolved, KubeError) else None,
        )

    current = {entry_identity(entry) for entry in applied}
    stale = [entry for entry in old if entry_identity(entry) not in current]

    if stale and deps.watch_pool is not None:
        # Step 6: a resource the work no longer maintains is no longer watched for it.
        for entry in stale:
            group, resource, namespace, obj_name = entry_identity(entry)
            await deps.watch_pool.unregister(group, resource, namespace, obj_name, name)

    pending: list[dict[str, Any]] = []
    if stale:
        pending, errors = await delete_applied_resources(
            deps,
            stale,
            f"no longer maintained by manifestwork {name}",
            applied_work_owner(applied_work),
            cause=ORPHAN_REMOVED_FROM_WORK,
        )
        if errors:
            return Bookkeeping(error=errors[0] if len(errors) == 1 else DeletionFailed(errors))

    new_list = _sorted_unique([*applied, *pending])
    if pending:
        return Bookkeeping(applied_resources=new_list, requeue_after=pending_backoff.when(name))
    pending_backoff.forget(name)
    return Bookkeeping(applied_resources=new_list)


def _sorted_unique(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sorted by group, version, resource, namespace, name; an object listed twice
    (two manifests naming it) is recorded once."""
    unique: dict[tuple[str, ...], dict[str, Any]] = {}
    for entry in entries:
        unique.setdefault((*object_identity(entry), str(entry.get("uid") or "")), entry)
    return sort_entries(list(unique.values()))
