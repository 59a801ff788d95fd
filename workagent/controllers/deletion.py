"""Deleting the resources a work applied (spec/agent.md section 8.3).

Used for two reasons: by the apply loop for resources a work no longer
contains (stale entries of ``status.appliedResources``), and by the
AppliedManifestWork finalizer for every resource when the work is deleted.
The rules that keep it safe:

- only objects that carry the AppliedManifestWork's owner reference (by UID)
  are touched, so orphaned, ReadOnly and foreign objects survive;
- an object other AppliedManifestWorks also own is disowned, not deleted;
- an object is deleted only if it is the instance that was recorded (for an
  entry recorded before its object existed, hence without a UID: the instance
  the AppliedManifestWork owns), unchanged since it was judged deletable (UID
  and resourceVersion preconditions), and it stays *pending* until it is known
  to be gone (the DELETE answered with a success Status rather than the
  object, or a later GET answered 404), so an object held by a foreign
  finalizer keeps the work alive.

docs/agent.md ("Deletion") says which version of an object is judged and
when a GET is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

import structlog
from prometheus_client import Counter

from ocmkit.kube import Conflict, KubeClient, NotFound, Resource
from ocmkit.kube.mergepatch import with_preconditions
from workagent.controllers.deps import AgentDeps
from workagent.controllers.metrics import ORPHAN_DELETIONS, ORPHAN_WORK_DELETED
from workagent.controllers.ownership import is_applied_work_reference

log = structlog.get_logger(__name__)

#: Entries handled at once; the spoke client's QPS limit still applies.
DELETE_CONCURRENCY = 16


class ResourceDeletionError(Exception):
    """Deleting (or disowning) one applied resource failed; ``cause`` is the API error.

    ``retry_after`` is copied from the cause so that a controller re-raising it
    honours a server's Retry-After.
    """

    def __init__(self, entry: Mapping[str, Any], action: str, cause: Exception) -> None:
        super().__init__(f"failed to {action} {describe_entry(entry)}: {cause}")
        self.entry = dict(entry)
        self.cause = cause
        self.retry_after: float | None = getattr(cause, "retry_after", None)


class DeletionFailed(Exception):
    """Several deletion errors, raised by a controller as one sync error."""

    def __init__(self, errors: list[Exception]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors
        delays = [
            float(delay)
            for e in errors
            if isinstance(delay := getattr(e, "retry_after", None), int | float)
        ]
        self.retry_after: float | None = max(delays) if delays else None


def describe_entry(entry: Mapping[str, Any]) -> str:
    """``deployments.apps/v1 ns/name`` for logs and error messages."""
    group, version = entry.get("group") or "", entry.get("version") or ""
    resource = f"{entry.get('resource')}.{group}" if group else str(entry.get("resource"))
    namespace, name = entry.get("namespace") or "", entry.get("name") or ""
    return f"{resource}/{version} {namespace + '/' if namespace else ''}{name}"


def resource_of(entry: Mapping[str, Any]) -> Resource:
    """The API resource of an applied-resource entry or a resourceMeta, without discovery.

    The entry names group, version and plural (a resourceMeta also the kind),
    and the apply loop records an empty namespace exactly for cluster-scoped
    resources, which is all a request path needs (the Go agent's dynamic
    client works from the same facts). No discovery also means a resource
    whose type has disappeared answers NotFound, which is what "already
    gone" should mean.
    """
    return Resource(
        group=str(entry.get("group") or ""),
        version=str(entry.get("version") or ""),
        plural=str(entry.get("resource") or ""),
        kind=str(entry.get("kind") or ""),
        namespaced=bool(entry.get("namespace")),
    )


async def delete_applied_resources(
    deps: AgentDeps,
    resources: list[dict[str, Any]],
    reason: str,
    owner: dict[str, Any],
    *,
    cause: str = ORPHAN_WORK_DELETED,
) -> tuple[list[dict[str, Any]], list[Exception]]:
    """Delete (or disown) ``resources``, the entries of an AppliedManifestWork's status.

    ``resources`` are ``{group, version, resource, namespace, name, uid}``
    dicts; ``owner`` is the owner reference to the AppliedManifestWork (its
    ``uid`` decides ownership); ``reason`` goes into the log lines, ``cause``
    labels ``work_agent_orphan_deletions_total`` (one per DELETE accepted).

    Returns ``(pending, errors)``. ``pending`` holds, in input order, the
    entries whose objects still exist and are being deleted, *and* the entries
    whose fate is unknown because a request failed (those also produce one
    error each). Unlike OCM, which forgets the latter in the AppliedManifestWork
    finalizer and may leak their objects, a caller writing ``pending`` back
    keeps tracking them and retries. Entries that are gone, not owned, disowned
    or replaced by another instance are dropped.
    """
    limit = asyncio.Semaphore(DELETE_CONCURRENCY)
    owner_uid = str(owner.get("uid") or "")
    deleted = ORPHAN_DELETIONS.labels(cause)

    async def one(entry: dict[str, Any]) -> tuple[bool, Exception | None]:
        res, name = resource_of(entry), str(entry.get("name") or "")
        namespace = str(entry.get("namespace") or "")
        async with limit:
            # The newest version a list or the apply loop saw, however old: the
            # resourceVersion precondition makes the server check it.
            known = deps.polled_reads.peek(res, namespace, name, demand=True)
            if known is None:
                # Else read like a status sync: where many entries of one namespace go
                # at once (a work's, many works'), they share a LIST.
                try:
                    known = await deps.polled_reads.read(
                        deps.status_client,
                        res,
                        namespace,
                        name,
                        interval=deps.settings.status_sync_interval,
                    )
                except Exception as exc:
                    return True, ResourceDeletionError(entry, "get", exc)
                if known is None:
                    return False, None
            meta = known.get("metadata") or {}
            if not meta.get("deletionTimestamp") and _ownership(known, entry, owner_uid) == "ours":
                # Deleted as seen, without reading it first: its UID and resourceVersion
                # go along as preconditions, so the server deletes exactly that version.
                seen = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
                outcome = await _send_delete(deps.spoke, entry, seen, reason, deleted)
                if outcome is not None:
                    return outcome
            # Changed since that read, being deleted, or not ours alone: judged on a GET.
            return await _delete_one(deps.spoke, entry, owner_uid, reason, deleted)

    outcomes = await asyncio.gather(*(one(entry) for entry in resources))
    pending: list[dict[str, Any]] = []
    errors: list[Exception] = []
    for entry, (keep, error) in zip(resources, outcomes, strict=True):
        if keep:
            pending.append(entry)
        if error is not None:
            errors.append(error)
    return pending, errors


def _ownership(
    obj: dict[str, Any], entry: dict[str, Any], owner_uid: str
) -> Literal["foreign", "shared", "replaced", "ours"]:
    """``obj`` as the AppliedManifestWork of ``owner_uid`` sees it: not its own (``foreign``),
    owned with other works, not the instance ``entry`` recorded, or ``ours`` alone."""
    meta = obj.get("metadata") or {}
    refs: list[dict[str, Any]] = list(meta.get("ownerReferences") or [])
    if not any(ref.get("uid") == owner_uid for ref in refs):
        return "foreign"
    if any(is_applied_work_reference(r) and r.get("uid") != owner_uid for r in refs):
        return "shared"
    recorded_uid = str(entry.get("uid") or "")
    # An entry without a UID was recorded before its object was created (an agent
    # stopped mid-apply never learnt the UID): the instance this record owns is it.
    if recorded_uid and str(meta.get("uid") or "") != recorded_uid:
        return "replaced"
    return "ours"


async def _send_delete(
    spoke: KubeClient,
    entry: dict[str, Any],
    preconditions: dict[str, Any],
    reason: str,
    deleted: Counter,
) -> tuple[bool, Exception | None] | None:
    """DELETE the entry's object: (still pending, error); None for a 409 (it changed)."""
    try:
        answer = await spoke.delete(
            resource_of(entry),
            str(entry.get("name") or ""),
            str(entry.get("namespace") or "") or None,
            propagation_policy="Background",
            preconditions=preconditions,
        )
    except NotFound:
        return False, None
    except Conflict:
        return None
    except Exception as exc:
        return True, ResourceDeletionError(entry, "delete", exc)
    deleted.inc()
    log.info("deleted resource", resource=describe_entry(entry), reason=reason)
    # A success Status (not the object) is the API server's word that the object
    # is gone; an object in the answer is still there (finalizers, a grace
    # period) and stays listed until a later GET says it is gone.
    return answer is not None, None


async def _delete_one(
    spoke: KubeClient, entry: dict[str, Any], owner_uid: str, reason: str, deleted: Counter
) -> tuple[bool, Exception | None]:
    """One entry of the algorithm: (still pending, error)."""
    what = describe_entry(entry)
    res = resource_of(entry)
    namespace = str(entry.get("namespace") or "") or None
    name = str(entry.get("name") or "")
    try:
        live = await spoke.get(res, name, namespace)
    except NotFound:
        return False, None
    except Exception as exc:
        return True, ResourceDeletionError(entry, "get", exc)

    meta = live.get("metadata") or {}
    ownership = _ownership(live, entry, owner_uid)
    if ownership == "foreign":
        log.debug("not owned by this work, leaving it", resource=what, reason=reason)
        return False, None
    if ownership == "shared":
        # Another work still wants the object.
        remaining = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner_uid]
        try:
            await spoke.patch(
                res,
                name,
                with_preconditions(live, {"metadata": {"ownerReferences": remaining}}),
                namespace,
                patch_type="merge",
            )
        except NotFound:
            return False, None
        except Exception as exc:
            return True, ResourceDeletionError(entry, "remove the owner reference from", exc)
        log.info("removed owner reference, other works still own it", resource=what, reason=reason)
        return False, None

    if ownership == "replaced":
        # The recorded instance is gone; this one is another object of the same name.
        log.debug("recorded instance is gone", resource=what, live_uid=meta.get("uid"))
        return False, None

    if meta.get("deletionTimestamp"):
        return True, None

    # The resourceVersion too (OCM sends only the UID): the decision above holds
    # only for the object as read. Another work may have adopted it meanwhile,
    # and a UID-only delete would then delete an object that work now owns.
    preconditions = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
    outcome = await _send_delete(spoke, entry, preconditions, reason, deleted)
    if outcome is None:
        # Replaced or changed since it was read: pending, decided again on a fresh read.
        log.debug("changed since it was read, deciding again", resource=what)
        return True, None
    return outcome
