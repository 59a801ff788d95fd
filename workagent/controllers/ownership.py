"""Which applied resources a work owns, and the owner references that record it.

spec/agent.md section 7: a resource applied for a ManifestWork is *owned by
the work* (it carries the AppliedManifestWork's owner reference and is deleted
with the work) unless the work's ``deleteOption`` orphans it. Orphaning is
implemented purely through owner references and re-evaluated on every apply:
a resource that becomes orphaned loses the reference (through a *removal
marker*, section 4.4 step 3.5), one that stops being orphaned gets it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ocmkit.kube import APPLIED_MANIFESTWORKS, split_api_version
from schemas.work_v1 import DeleteOption, DeletePropagationPolicyType
from workagent.apply.owners import REMOVAL_MARKER_SUFFIX

#: apiVersion and kind of an owner reference to an AppliedManifestWork.
APPLIED_WORK_API_VERSION = APPLIED_MANIFESTWORKS.api_version
APPLIED_WORK_KIND = APPLIED_MANIFESTWORKS.kind


def owned_by_the_work(
    group: str, resource: str, namespace: str, name: str, delete_option: DeleteOption | None
) -> bool:
    """Whether the resource (group, plural resource, namespace, name) is owned by the work.

    ``delete_option`` is the work's ``spec.deleteOption``. Absent, ``Foreground``,
    or ``SelectivelyOrphan`` without ``selectivelyOrphans``: owned. ``Orphan``:
    not owned. ``SelectivelyOrphan``: not owned when an orphaning rule equals
    all four fields exactly (orphaning rules have no wildcards, unlike
    ``manifestConfigs``). ``namespace`` is ``""`` for cluster-scoped resources.
    """
    if delete_option is None:
        return True
    policy = delete_option.propagation_policy
    if policy == DeletePropagationPolicyType.FOREGROUND:
        return True
    if policy == DeletePropagationPolicyType.ORPHAN:
        return False
    selective = delete_option.selectively_orphans
    if selective is None:
        return True
    wanted = (group, resource, namespace, name)
    rules = selective.orphaning_rules or []
    return all((r.group, r.resource, r.namespace, r.name) != wanted for r in rules)


def applied_work_owner(applied_work: Mapping[str, Any]) -> dict[str, Any]:
    """The owner reference applied resources get for an AppliedManifestWork object.

    A plain reference (no ``controller``, no ``blockOwnerDeletion``): several
    AppliedManifestWorks may own the same object, and the agent, not the
    garbage collector, decides when to delete it (section 8.2).
    """
    meta = applied_work.get("metadata") or {}
    return owner_reference(str(meta.get("name") or ""), str(meta.get("uid") or ""))


def owner_reference(applied_work_name: str, uid: str) -> dict[str, Any]:
    """The owner reference to the AppliedManifestWork ``applied_work_name`` with ``uid``."""
    return {
        "apiVersion": APPLIED_WORK_API_VERSION,
        "kind": APPLIED_WORK_KIND,
        "name": applied_work_name,
        "uid": uid,
    }


def owner_for(owner: Mapping[str, Any], owned: bool) -> dict[str, Any]:
    """The owner to apply a manifest with: ``owner`` itself, or its removal marker.

    A removal marker is the same reference with ``-`` appended to the uid: the
    appliers create without it and strip a matching reference from existing
    objects, which is how an orphaned resource loses ownership.
    """
    ref = dict(owner)
    if not owned:
        ref["uid"] = f"{ref.get('uid', '')}{REMOVAL_MARKER_SUFFIX}"
    return ref


def is_applied_work_reference(ref: Mapping[str, Any]) -> bool:
    """Whether an owner reference points at an AppliedManifestWork (of any version)."""
    if ref.get("kind") != APPLIED_WORK_KIND:
        return False
    try:
        group, _ = split_api_version(str(ref.get("apiVersion") or ""))
    except ValueError:
        return False
    return group == APPLIED_MANIFESTWORKS.group
