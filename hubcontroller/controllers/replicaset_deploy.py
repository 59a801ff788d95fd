"""The deploy step of the ManifestWorkReplicaSet controller (spec/hub.md section 2.3).

For each placement reference, in spec order: find the clusters that already
have an up-to-date ManifestWork and how far each got, run the rollout
algorithm over the placement's decision groups, create or update the works
of the clusters it hands out, and delete the works of clusters that left the
placement. Works of placements no longer referenced are deleted first.

Differences from OCM, in favour of the user:

* Problems the user must fix (a missing Placement, an unusable rollout
  strategy, a PlacementDecision without a group index, no selected cluster)
  are reported with a message on ``PlacementVerified``; OCM writes empty
  messages and overwrites the rollout-strategy error in the same pass, so it
  was never visible. Status and reason are OCM's final ones
  (``False``/``PlacementDecisionEmpty`` when no work exists, else
  ``True``/``AsExpected``), so clients that wait on them see what they see
  with OCM; only the message tells the problem. Such problems are not
  retried with backoff: the Placement, PlacementDecision or replica set
  update that fixes them triggers a new reconcile.
* Up-to-date works that OCM would judge ``ToApply`` (spec/hub.md 2.4: no
  ``Progressing`` condition for their generation, the usual case) get the
  replica set's labels re-applied, as OCM re-applies them; OCM does so only
  for the clusters a Progressive rollout hands out in that round, here for
  all of them at once.
* Works whose spec is outdated are deleted too when their cluster left the
  placement (OCM only deletes up-to-date ones, so a cluster that left during
  a template rollout kept its old work forever).
* Duplicate works for one cluster and placement (possible only after a lost
  race) are reduced to the oldest one.
* Works are written with bounded concurrency instead of one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from hubcontroller.controllers.replicaset_cache import Template, WorkJudgements
from hubcontroller.controllers.replicaset_index import DECISIONS_BY_PLACEMENT, placement_key
from hubcontroller.controllers.replicaset_status import (
    Counts,
    PlacementProgress,
    StatusDraft,
)
from hubcontroller.controllers.replicaset_works import (
    desired_work,
    is_deleting,
    meta,
    needs_relabel,
    owner_of,
)
from hubcontroller.controllers.replicaset_writes import WorkWriter, Write, run_writes
from hubcontroller.rollout import (
    DecisionGroups,
    InvalidDecisionError,
    RolloutConfigError,
    RolloutPlan,
    RolloutStatus,
    compute_rollout,
    strategy_from_wire,
)
from ocmkit.govalues import go_bytes
from ocmkit.kube import KubeError
from ocmkit.runtime import Store
from ocmkit.validation import label_value
from schemas.wire import (
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PLACEMENT_VERIFIED,
    PLACEMENT_NAME_LABEL,
    REASON_AS_EXPECTED,
    REASON_COMPLETE,
    REASON_INVALID_MANIFEST_WORK_NAME,
    REASON_PLACEMENT_DECISION_EMPTY,
    REASON_PLACEMENT_DECISION_NOT_FOUND,
    REASON_PROGRESSING,
)

log = structlog.get_logger(__name__)

Work = Mapping[str, Any]

#: Client errors that go away by themselves (stale cache, throttling).
_TRANSIENT = frozenset({409, 429})


@dataclass
class DeployOutcome:
    """What the deploy step leaves for the rest of the reconcile."""

    stop: bool = False
    """Skip the status step (the replica set cannot be deployed this round)."""
    errors: list[KubeError] = field(default_factory=list)
    """API errors to retry with backoff."""
    failures: list[tuple[str, str]] = field(default_factory=list)
    """Writes the API server refused for good (4xx other than 409/429) as
    (cluster, description for the user): a missing cluster namespace, a webhook
    denial, RBAC."""
    requeue_after: timedelta | None = None
    """When the rollout wants another look."""
    placements: list[PlacementProgress] = field(default_factory=list)
    """The placement summaries, counts filled by the status step."""

    def recheck(self, after: timedelta | None) -> None:
        """Ask for another look after ``after`` (the earliest request wins)."""
        if after is not None and (self.requeue_after is None or after < self.requeue_after):
            self.requeue_after = after


@dataclass(frozen=True)
class _Ref:
    name: str
    strategy: Mapping[str, Any] | None


def _placement_refs(replica_set: Mapping[str, Any]) -> list[_Ref]:
    refs = (replica_set.get("spec") or {}).get("placementRefs") or []
    out: list[_Ref] = []
    for ref in refs:
        if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str):
            continue
        strategy = ref.get("rolloutStrategy")
        out.append(_Ref(ref["name"], strategy if isinstance(strategy, Mapping) else None))
    return out


def _oldest_first(work: Work) -> tuple[bool, str, str]:
    work_meta = meta(work)
    return (
        is_deleting(work),
        str(work_meta.get("creationTimestamp", "")),
        str(work_meta.get("name", "")),
    )


def _deleting(work: Work) -> str:
    work_meta = meta(work)
    return f'deleting "{work_meta.get("namespace")}/{work_meta.get("name")}"'


def _cluster(work: Work) -> str:
    return str(meta(work).get("namespace", ""))


#: A write and the cluster it is for (failures are reported in cluster order).
_Job = tuple[str, Write]


class DeployStep:
    """Creates, updates and deletes a replica set's ManifestWorks."""

    def __init__(
        self,
        writer: WorkWriter,
        placements: Store,
        decisions: Store,
        judgements: WorkJudgements,
    ) -> None:
        self.writer = writer
        self.placements = placements
        self.decisions = decisions
        self.judgements = judgements

    async def run(
        self,
        replica_set: Mapping[str, Any],
        works: Sequence[Work],
        template: Template,
        draft: StatusDraft,
        now: datetime,
    ) -> DeployOutcome:
        """Deploy one replica set; ``works`` are its generated works as last seen."""
        outcome = DeployOutcome()
        namespace = str(meta(replica_set).get("namespace", ""))
        owner = owner_of(replica_set)
        problems = label_value(go_bytes(owner))
        if problems:
            draft.set_condition(
                CONDITION_MANIFESTWORK_APPLIED,
                False,
                REASON_INVALID_MANIFEST_WORK_NAME,
                f'ManifestWork owner reference "{owner}" (namespace.name) is not a valid label '
                f"value: {'; '.join(problems)}; recreate the ManifestWorkReplicaSet with a "
                "shorter namespace and/or name so the combined length is at most 63 characters",
            )
            outcome.stop = True
            return outcome

        refs = _placement_refs(replica_set)
        referenced = {ref.name for ref in refs}
        by_placement: dict[str, dict[str, list[Work]]] = {}
        stray: list[Work] = []
        for work in works:
            placement = (meta(work).get("labels") or {}).get(PLACEMENT_NAME_LABEL)
            if not placement or placement not in referenced:
                stray.append(work)
                continue
            cluster = str(meta(work).get("namespace", ""))
            by_placement.setdefault(placement, {}).setdefault(cluster, []).append(work)
        await self._run_all(
            outcome, [(_cluster(w), (_deleting(w), self._delete(owner, w))) for w in stray]
        )

        user_problems: list[str] = []
        selected_total = succeeded_total = existing_total = decided_total = 0
        for ref in refs:
            placement = self.placements.get(placement_key(namespace, ref.name))
            if placement is None:
                draft.set_condition(
                    CONDITION_PLACEMENT_VERIFIED,
                    False,
                    REASON_PLACEMENT_DECISION_NOT_FOUND,
                    f'Placement "{ref.name}" not found in namespace "{namespace}"',
                )
                outcome.stop = True
                return outcome
            result = await self._deploy_placement(
                replica_set,
                owner,
                ref,
                placement,
                by_placement.get(ref.name, {}),
                template,
                now,
                outcome,
            )
            if isinstance(result, str):
                user_problems.append(f'placement "{ref.name}": {result}')
                continue
            existing, succeeded, decided = result
            status = placement.get("status") or {}
            selected = int(status.get("numberOfSelectedClusters") or 0)
            groups = len(status.get("decisionGroups") or [])
            outcome.placements.append(
                PlacementProgress(
                    ref.name,
                    # OCM's progress text.
                    f"{groups} ({existing} / {selected} clusters applied)",
                    Counts(total=existing),
                )
            )
            selected_total += selected
            succeeded_total += succeeded
            existing_total += existing
            decided_total += decided

        if user_problems:
            # Status and reason are OCM's final ones (spec 2.3 step 5): PlacementDecisionEmpty
            # with no work at all, else True/AsExpected; the message says what is wrong.
            draft.set_condition(
                CONDITION_PLACEMENT_VERIFIED,
                existing_total > 0,
                REASON_AS_EXPECTED if existing_total > 0 else REASON_PLACEMENT_DECISION_EMPTY,
                "; ".join(user_problems),
            )
        elif existing_total == 0:
            names = ", ".join(f'"{ref.name}"' for ref in refs)
            message = (
                f"no cluster is selected by placement(s) {names}"
                if decided_total == 0
                else "no ManifestWork has been created for the selected clusters yet"
            )
            draft.set_condition(
                CONDITION_PLACEMENT_VERIFIED, False, REASON_PLACEMENT_DECISION_EMPTY, message
            )
        else:
            draft.set_condition(CONDITION_PLACEMENT_VERIFIED, True, REASON_AS_EXPECTED)
        # Succeeded works counted before this round's writes, as OCM does.
        if selected_total == succeeded_total:
            draft.set_condition(CONDITION_PLACEMENT_ROLLED_OUT, True, REASON_COMPLETE)
        else:
            draft.set_condition(CONDITION_PLACEMENT_ROLLED_OUT, False, REASON_PROGRESSING)
        return outcome

    async def _deploy_placement(
        self,
        replica_set: Mapping[str, Any],
        owner: str,
        ref: _Ref,
        placement: Mapping[str, Any],
        works: Mapping[str, list[Work]],
        template: Template,
        now: datetime,
        outcome: DeployOutcome,
    ) -> tuple[int, int, int] | str:
        """Roll one placement forward: (existing, succeeded, decided) counts, or a problem."""
        current: dict[str, Work] = {}
        duplicates: list[Work] = []
        for cluster, candidates in works.items():
            keep, *extra = sorted(candidates, key=_oldest_first)
            current[cluster] = keep
            duplicates.extend(w for w in extra if not is_deleting(w))
        judge = self.judgements
        up_to_date = {c: w for c, w in current.items() if judge.matches(w, template)}
        statuses = [judge.rollout_status(c, w) for c, w in sorted(up_to_date.items())]
        succeeded = sum(1 for s in statuses if s.status is RolloutStatus.SUCCEEDED)

        decisions = self.decisions.by_index(
            DECISIONS_BY_PLACEMENT,
            placement_key(str(meta(placement).get("namespace", "")), ref.name),
        )
        try:
            groups = DecisionGroups.from_decisions(decisions)
            plan = RolloutPlan.from_strategy(strategy_from_wire(ref.strategy))
        except (InvalidDecisionError, RolloutConfigError) as err:
            return str(err)
        result = compute_rollout(plan, groups, statuses, now)
        outcome.recheck(result.recheck_after)

        existing = set(up_to_date)
        selected = groups.clusters

        async def apply(cluster: str) -> None:
            old = current.get(cluster)
            name = str(meta(old).get("name", "")) if old is not None else None
            await self.writer.apply(owner, desired_work(replica_set, cluster, ref.name, name), old)
            existing.add(cluster)

        async def remove(cluster: str, work: Work) -> None:
            await self._delete(owner, work)
            existing.discard(cluster)

        to_apply = result.clusters_to_apply()
        # As OCM re-applies works it judges ToApply (their labels follow the replica set's).
        # The owned metadata is the same for every cluster: build one desired work.
        desired = desired_work(replica_set, "", ref.name, None)
        to_apply += [
            c
            for c, w in sorted(up_to_date.items())
            if c in selected
            and c not in to_apply
            and not is_deleting(w)
            and needs_relabel(w, desired)
        ]
        jobs: list[_Job] = [(c, (f'applying to cluster "{c}"', apply(c))) for c in to_apply]
        jobs += [
            (
                s.cluster,
                (_deleting(up_to_date[s.cluster]), remove(s.cluster, up_to_date[s.cluster])),
            )
            for s in result.removed
        ]
        # Outdated works of clusters that left the placement go as well.
        jobs += [
            (c, (_deleting(w), remove(c, w)))
            for c, w in current.items()
            if c not in selected and c not in up_to_date
        ]
        jobs += [(_cluster(w), (_deleting(w), self._delete(owner, w))) for w in duplicates]
        await self._run_all(outcome, jobs)
        return len(existing), succeeded, len(selected)

    async def _delete(self, owner: str, work: Work) -> None:
        if is_deleting(work):
            return  # already on its way out (the agent is cleaning up)
        await self.writer.delete(owner, work)

    @staticmethod
    async def _run_all(outcome: DeployOutcome, jobs: Sequence[_Job]) -> None:
        """Run writes; API errors are collected, the lasting ones described for the user."""
        cluster_of = {what: cluster for cluster, (what, _) in jobs}
        for what, err in await run_writes([write for _, write in jobs]):
            outcome.errors.append(err)
            if 400 <= err.code < 500 and err.code not in _TRANSIENT:
                outcome.failures.append((cluster_of.get(what, ""), f"{what}: {err.message or err}"))
