"""Per-work results the controller would otherwise recompute on every reconcile.

A replica set with 1,000 clusters is reconciled on every status event of any
of its works, and each reconcile looks at every work: whether its spec matches
the template and how far its rollout got. Both depend only on the work (and
the template), so they are remembered per work uid:

* the spec match per (generation, template digest): the API server bumps
  ``metadata.generation`` on every spec change;
* the rollout status and the set of True conditions per ``resourceVersion``:
  any change of the work changes it;
* when the spec of each generation was written, as first seen: the relabelling
  of a work (same generation) moves its ``managedFields`` time, and must not
  restart its minSuccessTime or progressDeadline.

Entries go when the work's delete event arrives (:meth:`WorkJudgements.forget`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from hubcontroller.controllers.replicaset_works import (
    cluster_rollout_status,
    comparable_spec,
    meta,
    spec_written_at,
    template_of,
    true_conditions,
)
from hubcontroller.rollout import ClusterRolloutStatus


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
        self._matches: dict[str, tuple[object, bool]] = {}
        self._statuses: dict[str, tuple[object, ClusterRolloutStatus]] = {}
        self._conditions: dict[str, tuple[object, frozenset[str]]] = {}
        self._written: dict[str, tuple[object, datetime | None]] = {}

    def matches(self, work: Mapping[str, Any], template: Template) -> bool:
        """Whether the work's spec equals the template (spec/hub.md 2.4.1)."""
        generation = meta(work).get("generation")
        valid = isinstance(generation, int) and generation > 0
        return _remembered(
            self._matches,
            work,
            (generation, template.digest) if valid else None,
            lambda: bool(comparable_spec(work.get("spec")) == template.comparable),
        )

    def rollout_status(self, cluster: str, work: Mapping[str, Any]) -> ClusterRolloutStatus:
        """The work's cluster rollout status (spec/hub.md 2.4)."""
        version = meta(work).get("resourceVersion")
        stamp = (version, cluster) if version else None
        generation = meta(work).get("generation")
        written = _remembered(self._written, work, generation, lambda: spec_written_at(work))
        return _remembered(
            self._statuses, work, stamp, lambda: cluster_rollout_status(cluster, work, written)
        )

    def true_conditions(self, work: Mapping[str, Any]) -> frozenset[str]:
        """The types of the work's True conditions."""
        version = meta(work).get("resourceVersion")
        return _remembered(self._conditions, work, version, lambda: true_conditions(work))

    def forget(self, work: Mapping[str, Any]) -> None:
        """Drop what is remembered about a deleted work."""
        uid = str(meta(work).get("uid", ""))
        self._matches.pop(uid, None)
        self._statuses.pop(uid, None)
        self._conditions.pop(uid, None)
        self._written.pop(uid, None)


_T = TypeVar("_T")


def _remembered(
    cache: dict[str, tuple[object, _T]],
    work: Mapping[str, Any],
    stamp: object,
    compute: Callable[[], _T],
) -> _T:
    """``compute()``, remembered by the work's uid while ``stamp`` stays the same.

    Without a uid or a stamp nothing is remembered.
    """
    uid = str(meta(work).get("uid", ""))
    if not uid or not stamp:
        return compute()
    known = cache.get(uid)
    if known is not None and known[0] == stamp:
        return known[1]
    value = compute()
    cache[uid] = (stamp, value)
    return value
