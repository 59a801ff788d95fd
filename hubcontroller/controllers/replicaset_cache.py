"""Per-work results the controller would otherwise recompute on every reconcile.

A replica set with 1,000 clusters is reconciled on every status event of any
of its works, and each reconcile looks at every work: whether its spec matches
the template and how far its rollout got. Both depend only on the work (and
the template), so they are remembered per work uid:

* the spec match per (generation, template digest): the API server bumps
  ``metadata.generation`` on every spec change;
* the rollout status and the set of True conditions per ``resourceVersion``:
  any change of the work changes it.

Entries go when the work's delete event arrives (:meth:`WorkJudgements.forget`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hubcontroller.controllers.replicaset_works import (
    cluster_rollout_status,
    comparable_spec,
    meta,
    template_of,
    true_conditions,
)
from hubcontroller.rollout import ClusterRolloutStatus

__all__ = ["Template", "WorkJudgements"]


@dataclass(frozen=True)
class Template:
    """A replica set's template in comparable form, with a digest of it."""

    comparable: Any
    digest: str

    @classmethod
    def of(cls, replica_set: Mapping[str, Any]) -> Template:
        """The template of ``replica_set``."""
        comparable = comparable_spec(template_of(replica_set))
        text = json.dumps(comparable, sort_keys=True, separators=(",", ":"))
        return cls(comparable, hashlib.sha256(text.encode()).hexdigest())


class WorkJudgements:
    """Remembered spec matches and rollout statuses, by work uid."""

    def __init__(self) -> None:
        self._matches: dict[str, tuple[int, str, bool]] = {}
        self._statuses: dict[str, tuple[str, ClusterRolloutStatus]] = {}
        self._conditions: dict[str, tuple[str, frozenset[str]]] = {}

    def matches(self, work: Mapping[str, Any], template: Template) -> bool:
        """Whether the work's spec equals the template (spec/hub.md 2.4.1)."""
        work_meta = meta(work)
        uid, generation = str(work_meta.get("uid", "")), work_meta.get("generation")
        if not uid or not isinstance(generation, int) or generation <= 0:
            return bool(comparable_spec(work.get("spec")) == template.comparable)
        known = self._matches.get(uid)
        if known is not None and known[0] == generation and known[1] == template.digest:
            return known[2]
        result = bool(comparable_spec(work.get("spec")) == template.comparable)
        self._matches[uid] = (generation, template.digest, result)
        return result

    def rollout_status(self, cluster: str, work: Mapping[str, Any]) -> ClusterRolloutStatus:
        """The work's cluster rollout status (spec/hub.md 2.4)."""
        work_meta = meta(work)
        uid, version = str(work_meta.get("uid", "")), str(work_meta.get("resourceVersion", ""))
        if not uid or not version:
            return cluster_rollout_status(cluster, work)
        known = self._statuses.get(uid)
        if known is not None and known[0] == version and known[1].cluster == cluster:
            return known[1]
        status = cluster_rollout_status(cluster, work)
        self._statuses[uid] = (version, status)
        return status

    def true_conditions(self, work: Mapping[str, Any]) -> frozenset[str]:
        """The types of the work's True conditions."""
        work_meta = meta(work)
        uid, version = str(work_meta.get("uid", "")), str(work_meta.get("resourceVersion", ""))
        if not uid or not version:
            return true_conditions(work)
        known = self._conditions.get(uid)
        if known is not None and known[0] == version:
            return known[1]
        result = true_conditions(work)
        self._conditions[uid] = (version, result)
        return result

    def forget(self, work: Mapping[str, Any]) -> None:
        """Drop what is remembered about a deleted work."""
        uid = str(meta(work).get("uid", ""))
        self._matches.pop(uid, None)
        self._statuses.pop(uid, None)
        self._conditions.pop(uid, None)

    def __len__(self) -> int:
        return len(self._matches.keys() | self._statuses.keys() | self._conditions.keys())
