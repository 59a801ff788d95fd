"""Indexes and event mapping of the ManifestWorkReplicaSet controller (spec/hub.md 2.1).

Events of works, placements and decisions reach replica sets through these
indexes: by the work's owner label, by the placement (a decision's through its label).

**Deviation.** OCM maps a work back by splitting the owner label
``<namespace>.<name>`` on ``.`` and drops works whose replica set name has
a dot, so their status only refreshed on resync. We look the label value up
in an index of the replica sets instead, which works for every name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hubcontroller.controllers.replicaset_works import meta, owner_of
from schemas.wire import MANIFEST_WORK_REPLICA_SET_LABEL, PLACEMENT_LABEL

#: Replica sets by ``<namespace>/<placement name>`` of each placementRef.
REPLICA_SETS_BY_PLACEMENT = "replicaset-by-placement"
#: Replica sets by their owner label value ``<namespace>.<name>``.
REPLICA_SETS_BY_OWNER = "replicaset-by-owner"
#: ManifestWorks by the owner label value (only labelled works are indexed).
WORKS_BY_OWNER = "manifestwork-by-replicaset"
#: PlacementDecisions by ``<namespace>/<placement label>``.
DECISIONS_BY_PLACEMENT = "decision-by-placement"


def placement_key(namespace: str, placement: str) -> str:
    """The index value of a placement: ``<namespace>/<name>``."""
    return f"{namespace}/{placement}"


def replica_sets_by_placement(replica_set: dict[str, Any]) -> list[str]:
    """Index function: the placements a replica set refers to."""
    namespace = str(meta(replica_set).get("namespace", ""))
    refs = (replica_set.get("spec") or {}).get("placementRefs") or []
    names = {ref.get("name") for ref in refs if isinstance(ref, Mapping)}
    return sorted(placement_key(namespace, n) for n in names if isinstance(n, str) and n)


def replica_sets_by_owner(replica_set: dict[str, Any]) -> list[str]:
    """Index function: the owner label value the replica set's works carry."""
    return [owner_of(replica_set)]


def work_owner(work: Mapping[str, Any]) -> str | None:
    """The owner label value of a generated work (None for other works)."""
    value = (meta(work).get("labels") or {}).get(MANIFEST_WORK_REPLICA_SET_LABEL)
    return value if isinstance(value, str) and value else None


def works_by_owner(work: dict[str, Any]) -> list[str]:
    """Index function: the owner label value, for generated works only."""
    owner = work_owner(work)
    return [owner] if owner else []


def decision_placement_key(decision: Mapping[str, Any]) -> str | None:
    """The placement a PlacementDecision belongs to, as an index value."""
    decision_meta = meta(decision)
    placement = (decision_meta.get("labels") or {}).get(PLACEMENT_LABEL)
    if not isinstance(placement, str) or not placement:
        return None
    return placement_key(str(decision_meta.get("namespace", "")), placement)


def decisions_by_placement(decision: dict[str, Any]) -> list[str]:
    """Index function: the decision's placement."""
    key = decision_placement_key(decision)
    return [key] if key else []
