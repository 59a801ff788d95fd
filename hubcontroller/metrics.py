"""The hub manager's work-level Prometheus series (docs/metrics.md has the reference table).

ManifestWorkReplicaSets by rollout state are a view of the replica set
cache, computed at scrape time; works created and deleted by the replica set
controller and works deleted by the TTL garbage collector are counted where
the API server accepted the request.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Mapping
from typing import Any, Final

from prometheus_client import Counter

from hubcontroller.controllers.replicaset_works import find_condition, is_deleting
from ocmkit.runtime import Informer
from ocmkit.runtime.metrics import Sample, ScrapeGauge
from schemas.wire import CONDITION_PLACEMENT_ROLLED_OUT

#: Rollout states of ``work_hub_manifestworkreplicasets{state}``.
STATE_COMPLETE: Final = "Complete"
STATE_PROGRESSING: Final = "Progressing"
STATE_DELETING: Final = "Deleting"
STATE_UNKNOWN: Final = "Unknown"
ROLLOUT_STATES: Final = (STATE_COMPLETE, STATE_PROGRESSING, STATE_DELETING, STATE_UNKNOWN)

REPLICA_SETS = ScrapeGauge(
    "work_hub_manifestworkreplicasets",
    "ManifestWorkReplicaSets by rollout state: Complete (PlacementRolledOut=True), "
    "Progressing (PlacementRolledOut=False), Deleting, or Unknown (not rolled out yet, "
    "e.g. its placement is missing).",
)
WORKS_CREATED = Counter(
    "work_hub_replicaset_works_created",
    "ManifestWorks created by the ManifestWorkReplicaSet controller.",
)
WORKS_DELETED = Counter(
    "work_hub_replicaset_works_deleted",
    "ManifestWorks deleted by the ManifestWorkReplicaSet controller.",
)
TTL_DELETIONS = Counter(
    "work_hub_ttl_deletions",
    "Completed ManifestWorks deleted by the garbage collector after ttlSecondsAfterFinished.",
)


def rollout_state(replica_set: Mapping[str, Any]) -> str:
    """The rollout state of one ManifestWorkReplicaSet, from its PlacementRolledOut condition."""
    if is_deleting(replica_set):
        return STATE_DELETING
    rolled_out = find_condition(replica_set, CONDITION_PLACEMENT_ROLLED_OUT)
    if rolled_out is None:
        return STATE_UNKNOWN
    return STATE_COMPLETE if rolled_out.get("status") == "True" else STATE_PROGRESSING


class ReplicaSetMetrics:
    """The source of ``work_hub_manifestworkreplicasets`` over a replica set informer."""

    def __init__(self, replica_sets: Informer) -> None:
        self._replica_sets = replica_sets

    def samples(self) -> list[Sample]:
        """One sample per rollout state (zero included, so alerts see the series)."""
        counts = Tally(dict.fromkeys(ROLLOUT_STATES, 0))
        counts.update(rollout_state(rs) for rs in self._replica_sets.store.list())
        return [({"state": state}, float(n)) for state, n in sorted(counts.items())]

    def attach(self) -> None:
        """Become the gauge's source."""
        REPLICA_SETS.set_source(self.samples)

    async def detach(self) -> None:
        """Stop being the gauge's source (a closer of the manager)."""
        REPLICA_SETS.clear_source(self.samples)
