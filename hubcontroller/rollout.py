"""The rollout algorithm of a ManifestWorkReplicaSet placement (spec/hub.md section 2.5).

A pure module: no I/O and no clock of its own; every function that needs the
time takes ``now`` (:func:`compute_rollout` is the entry point).

The semantics are OCM's (sdk-go ``rollout.go``), with these deliberate
differences, each in favour of the user:

* **Mandatory groups look only at their own clusters.** OCM's mandatory phase
  also counts clusters of the other groups, so one cluster still progressing
  outside the mandatory groups turns a Progressive rollout into batches, and
  one timed-out cluster anywhere blocks the rollout forever.
* **A group waits for its non-failed clusters.** OCM moves on to the next
  group when ``in flight - failures > 0`` is false; its failures include
  timed-out clusters, which are not in flight, so a timed-out cluster in an
  earlier group let two later groups start at once. Here the rollout moves on
  when no in-flight cluster is anything but ``Failed`` (failures themselves
  are judged by maxFailures).
* **Thresholds above the total are clamped, not zeroed.** OCM turns a
  maxFailures larger than the number of clusters (or of a group's clusters)
  into 0, so ``maxFailures: 2`` on a group of one tolerated nothing; here it
  means "all of them". maxConcurrency behaves as in OCM (above the total means
  all). A digit-only string (``"3"``, which the CRD pattern allows) is read as
  the integer instead of being refused.
* **Every decision group counts.** OCM only walks group indexes ``0..n-1`` and
  keys groups by (name, index); here groups are keyed by index (the name comes
  from the decision labels) and all indexes are walked in ascending order. A
  cluster listed in several groups belongs to the lowest index.
* **``rolloutType`` is accepted** (see :func:`strategy_from_wire`).
* **Clear errors.** Every :class:`RolloutConfigError` names the field and the
  fix, so the controller can put it in a condition message. Values are quoted
  as Go quotes them (``"10mins"``; a missing label reads ``""``).

A negative ``minSuccessTime`` is no soak time, as in OCM: a success is over
at once (spec/hub.md 2.5, *classify*).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from ocmkit.durations import DurationError, parse_duration
from schemas.cluster_v1alpha1 import (
    MandatoryDecisionGroup,
    RolloutConfig,
    RolloutStrategy,
    RolloutType,
)
from schemas.errors import SchemaValidationError
from schemas.wire import DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL

#: OCM's progressDeadline check (unanchored search, like Go's MatchString).
_TIMEOUT_PATTERN = re.compile(r"^(([0-9])+[h|m|s])|None$")
_PERCENT = re.compile(r"^[0-9]+(\.[0-9]+)?%$")
_DIGITS = re.compile(r"^[0-9]+$")
#: What Go's strconv.Atoi accepts.
_GROUP_INDEX = re.compile(r"^[+-]?[0-9]+$")


class RolloutStatus(StrEnum):
    """Where one cluster stands in a rollout."""

    TO_APPLY = "ToApply"
    """The cluster's ManifestWork must be created or updated."""
    PROGRESSING = "Progressing"
    """Applied, not yet successful."""
    SUCCEEDED = "Succeeded"
    """Applied and successful."""
    FAILED = "Failed"
    """Applied and failing."""
    TIME_OUT = "TimeOut"
    """Progressing or failing for longer than the progress deadline."""
    SKIP = "Skip"
    """Left out of the rollout."""


class RolloutConfigError(ValueError):
    """A rollout strategy that cannot be used; the message says what to fix."""


class InvalidDecisionError(ValueError):
    """A PlacementDecision whose group labels cannot be read."""


@dataclass(frozen=True, order=True)
class GroupKey:
    """A decision group: its index (the order of the rollout) and its name."""

    index: int
    name: str = ""


@dataclass(frozen=True)
class ClusterRolloutStatus:
    """The rollout status of one cluster.

    ``last_transition_time`` is when the status began (soak and deadlines
    count from it; None means "now"); ``recheck_time`` is set by the
    algorithm: when the soak or the deadline of an in-flight cluster ends.
    """

    cluster: str
    status: RolloutStatus
    last_transition_time: datetime | None = None
    recheck_time: datetime | None = None


@dataclass(frozen=True)
class RolloutResult:
    """What to do next for one placement.

    ``to_rollout`` holds every in-flight cluster; only those with status
    ``ToApply`` need a write (:meth:`clusters_to_apply`). ``removed`` are
    clusters with a status that no decision lists any more.
    """

    to_rollout: tuple[ClusterRolloutStatus, ...] = ()
    timed_out: tuple[ClusterRolloutStatus, ...] = ()
    removed: tuple[ClusterRolloutStatus, ...] = ()
    max_failure_breach: bool = False
    recheck_after: timedelta | None = None

    def clusters_to_apply(self) -> list[str]:
        """The clusters whose ManifestWork must be created or updated now."""
        return [s.cluster for s in self.to_rollout if s.status is RolloutStatus.TO_APPLY]


# -- decision groups --------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionGroups:
    """The clusters a placement selected, by decision group (ascending index)."""

    groups: Mapping[GroupKey, frozenset[str]] = field(default_factory=dict)
    _owner: dict[str, GroupKey] = field(init=False, repr=False, compare=False)
    #: Every selected cluster.
    clusters: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner: dict[str, GroupKey] = {}
        for key in sorted(self.groups, reverse=True):
            for cluster in self.groups[key]:
                owner[cluster] = key  # a cluster in several groups: the lowest index wins
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "clusters", frozenset(owner))

    @classmethod
    def from_decisions(cls, decisions: Iterable[Mapping[str, Any]]) -> DecisionGroups:
        """Group the clusters of PlacementDecision objects (wire dicts) by their labels.

        Raises InvalidDecisionError when a decision lacks a decimal
        ``decision-group-index`` label, as OCM refuses such a placement.
        """
        names: dict[int, str] = {}
        members: dict[int, set[str]] = {}
        ordered = sorted(decisions, key=lambda d: str((d.get("metadata") or {}).get("name", "")))
        for decision in ordered:
            meta = decision.get("metadata") or {}
            labels = meta.get("labels") or {}
            raw_index = labels.get(DECISION_GROUP_INDEX_LABEL)
            if not isinstance(raw_index, str) or not _GROUP_INDEX.match(raw_index):
                # An absent label reads as "", as Go's map lookup gives it.
                got = raw_index if isinstance(raw_index, str) else ""
                raise InvalidDecisionError(
                    f"PlacementDecision {_quote(str(meta.get('name', '')))} has no valid "
                    f"{DECISION_GROUP_INDEX_LABEL} label (got {_quote(got)}); "
                    "it must be a decimal integer"
                )
            index = int(raw_index)
            # The first decision (by name) names the group.
            names.setdefault(index, str(labels.get(DECISION_GROUP_NAME_LABEL, "")))
            group = members.setdefault(index, set())
            for item in (decision.get("status") or {}).get("decisions") or []:
                cluster = item.get("clusterName") if isinstance(item, Mapping) else None
                if cluster:
                    group.add(str(cluster))
        return cls(
            {GroupKey(i, names[i]): frozenset(members[i]) for i in sorted(members)},
        )

    def ordered_keys(self) -> list[GroupKey]:
        """The groups in rollout order (ascending index)."""
        return sorted(self.groups)

    def members(self, key: GroupKey) -> list[str]:
        """The clusters of one group, alphabetically."""
        return sorted(c for c in self.groups.get(key, ()) if self._owner.get(c) == key)

    def resolve(self, refs: Sequence[MandatoryDecisionGroup]) -> list[GroupKey]:
        """The existing groups named by mandatory group references.

        A reference with a ``groupName`` selects every index with that name;
        otherwise its ``groupIndex`` selects that index.
        """
        out: list[GroupKey] = []
        for ref in refs:
            if ref.group_name:
                matches = [k for k in self.ordered_keys() if k.name == ref.group_name]
            else:
                matches = [k for k in self.ordered_keys() if k.index == ref.group_index]
            out.extend(k for k in matches if k not in out)
        return out

    def split(self, keys: Iterable[GroupKey]) -> tuple[DecisionGroups, DecisionGroups]:
        """These groups, and every other group."""
        wanted = set(keys)
        chosen = {k: v for k, v in self.groups.items() if k in wanted}
        others = {k: v for k, v in self.groups.items() if k not in wanted}
        return DecisionGroups(chosen), DecisionGroups(others)


# -- the strategy ----------------------------------------------------------------------


_SUB_OBJECTS = (
    (RolloutType.PROGRESSIVE, "progressive"),
    (RolloutType.PROGRESSIVE_PER_GROUP, "progressivePerGroup"),
)


def strategy_from_wire(raw: Mapping[str, Any] | None) -> RolloutStrategy:
    """Parse ``placementRefs[].rolloutStrategy``, accepting OCM's documented misspelling.

    OCM's user documentation (and the ``mwrset-cronjob`` example) writes
    ``rolloutType:`` while the API field is ``type:``. An API server with the
    CRD prunes ``rolloutType`` and defaults ``type`` to ``All``, so OCM
    silently rolls such a strategy out to every cluster at once. We honour
    what the user wrote instead:

    1. ``rolloutType`` (when it survived, e.g. a server that does not prune)
       is used when ``type`` is absent or is the default ``All``;
    2. otherwise, when ``type`` is absent or ``All`` but there is no ``all``
       block and exactly one of ``progressive`` / ``progressivePerGroup`` is
       given, that block's type is used (the pruned ``rolloutType`` case; a
       strategy the server defaulted itself always carries an ``all`` block).

    Raises RolloutConfigError with the schema problems when the strategy is
    not valid.
    """
    if raw is None:
        return RolloutStrategy()
    data = dict(raw)
    alias = data.pop("rolloutType", None)
    declared = data.get("type")
    if alias is not None and (
        declared is None or (declared == RolloutType.ALL and alias != declared)
    ):
        data["type"] = alias
    elif alias is None and declared in (None, RolloutType.ALL) and data.get("all") is None:
        given = [kind for kind, name in _SUB_OBJECTS if data.get(name) is not None]
        if len(given) == 1:
            data["type"] = given[0].value
    try:
        return RolloutStrategy.from_wire(data)
    except SchemaValidationError as err:
        raise RolloutConfigError("invalid rolloutStrategy: " + "; ".join(err.lines())) from None


@dataclass(frozen=True)
class RolloutPlan:
    """A validated rollout strategy.

    ``timeout`` is the progress deadline (None: wait forever);
    ``max_failures`` and ``max_concurrency`` stay int-or-percent because they
    are sized against a total only known per round (and per group).
    """

    type: RolloutType = RolloutType.ALL
    timeout: timedelta | None = None
    min_success_time: timedelta = timedelta(0)
    max_failures: int | str = 0
    max_concurrency: int | str | None = None
    mandatory_groups: tuple[MandatoryDecisionGroup, ...] = ()

    @classmethod
    def from_strategy(cls, strategy: RolloutStrategy) -> RolloutPlan:
        """Validate the fields the strategy's type uses; RolloutConfigError if one is bad."""
        kind = strategy.type
        if kind is RolloutType.ALL:
            block: RolloutConfig = strategy.all or RolloutConfig()
            return cls(kind, timeout=_timeout(block, "all"))
        where = dict(_SUB_OBJECTS)[kind]
        progressive = strategy.progressive
        given = progressive if kind is RolloutType.PROGRESSIVE else strategy.progressive_per_group
        block = given or RolloutConfig()
        _check_size(block.max_failures, f"{where}.maxFailures")
        concurrency = None
        if kind is RolloutType.PROGRESSIVE and progressive is not None:
            concurrency = progressive.max_concurrency
            _check_size(concurrency, f"{where}.maxConcurrency")
        mandatory = given.mandatory_decision_groups if given is not None else None
        return cls(
            kind,
            timeout=_timeout(block, where),
            min_success_time=_min_success(block, where),
            max_failures=block.max_failures,
            max_concurrency=concurrency,
            mandatory_groups=tuple(mandatory or ()),
        )


def _timeout(block: RolloutConfig, where: str) -> timedelta | None:
    try:
        return parse_timeout(block.progress_deadline)
    except RolloutConfigError as err:
        raise RolloutConfigError(f"{where}.progressDeadline: {err}") from None


def _min_success(block: RolloutConfig, where: str) -> timedelta:
    """The soak time; a negative one is kept (a success is then over at once, as in OCM)."""
    try:
        nanoseconds = parse_duration(block.min_success_time)
    except DurationError as err:
        raise RolloutConfigError(f"{where}.minSuccessTime: {err}") from None
    return timedelta(microseconds=nanoseconds // 1000)


def _check_size(value: int | str | None, where: str) -> None:
    try:
        rollout_size(value, 1, 0)
    except RolloutConfigError as err:
        raise RolloutConfigError(f"{where}: {err}") from None


def _quote(text: str) -> str:
    """``text`` quoted as Go's ``%q`` would (messages must not look like Python)."""
    return json.dumps(text, ensure_ascii=False)


def parse_timeout(text: str | None) -> timedelta | None:
    """A progressDeadline: ``""`` or ``None`` mean no deadline (None).

    Otherwise it must match OCM's pattern and be a Go duration (``90s``,
    ``10m``, ``1h30m``); RolloutConfigError if not.
    """
    if text is None or text in ("", "None"):
        return None
    if not _TIMEOUT_PATTERN.search(text):
        raise RolloutConfigError(
            f"invalid progress deadline {_quote(text)}: "
            "use a duration such as 90s, 10m or 2h, or None"
        )
    try:
        nanoseconds = parse_duration(text)
    except DurationError as err:
        raise RolloutConfigError(f"invalid progress deadline {_quote(text)}: {err}") from None
    return timedelta(microseconds=nanoseconds // 1000)


def rollout_size(value: int | str | None, total: int, default: int) -> int:
    """How many of ``total`` clusters a count or percentage (rounded up) allows, at most ``total``.

    ``default`` for None or a result of 0 or less; RolloutConfigError for anything but
    an int, ``"p%"`` or a digit-only string.
    """
    if value is None:
        return default
    if isinstance(value, bool):
        raise RolloutConfigError(f"{str(value).lower()} is not a count or a percentage")
    if isinstance(value, int):
        size = value
    elif _PERCENT.match(value):
        size = math.ceil(float(value[:-1]) / 100 * total)
    elif _DIGITS.match(value):
        size = int(value)
    else:
        raise RolloutConfigError(
            f"{_quote(value)} is an invalid maximum threshold value: "
            'use a count such as 3 or a percentage such as "25%"'
        )
    if size <= 0:
        return default
    return min(size, total)


# -- the algorithm ---------------------------------------------------------------------

_FAILURES = (RolloutStatus.FAILED, RolloutStatus.TIME_OUT)


def compute_rollout(
    plan: RolloutPlan,
    groups: DecisionGroups,
    existing: Iterable[ClusterRolloutStatus],
    now: datetime,
) -> RolloutResult:
    """Decide the next step of a rollout (see the module docstring).

    ``existing`` holds the status of every cluster that has an up-to-date
    ManifestWork; clusters not in any decision come back as ``removed``.
    """
    selected = groups.clusters
    current = [s for s in existing if s.cluster in selected]
    removed = tuple(sorted((s for s in existing if s.cluster not in selected), key=_by_cluster))

    if plan.type is RolloutType.ALL:
        # No soak: from_strategy leaves an All plan's min_success_time at zero, as OCM's All.
        size = len(selected)
        result = _per_cluster(groups, current, size, size, plan, now)
        return replace(result, removed=removed)

    mandatory = groups.resolve(plan.mandatory_groups)
    first, rest = groups.split(mandatory)
    if mandatory:
        mine = [s for s in current if s.cluster in first.clusters]
        result = _per_group(first, mine, 0, plan, now)
        if result.to_rollout or result.timed_out:
            return replace(result, removed=removed)

    theirs = [s for s in current if s.cluster in rest.clusters]
    if plan.type is RolloutType.PROGRESSIVE:
        max_failures = rollout_size(plan.max_failures, len(selected), 0)
        count = len(rest.clusters)
        size = rollout_size(plan.max_concurrency, count, count)
        result = _per_cluster(rest, theirs, size, max_failures, plan, now)
    else:
        result = _per_group(rest, theirs, plan.max_failures, plan, now)
    return replace(result, removed=removed)


def _by_cluster(status: ClusterRolloutStatus) -> str:
    return status.cluster


def _classify(
    status: ClusterRolloutStatus, plan: RolloutPlan, now: datetime
) -> tuple[ClusterRolloutStatus, bool]:
    """The status (possibly converted to TimeOut) and whether the cluster is in flight."""
    if status.status is RolloutStatus.TO_APPLY:
        return status, True
    since = status.last_transition_time or now
    if status.status is RolloutStatus.SUCCEEDED:
        # A success must hold for minSuccessTime (the soak) before it frees a slot.
        soak_end = since + plan.min_success_time
        if now < soak_end:
            return replace(status, recheck_time=soak_end), True
        return status, False
    if status.status in (RolloutStatus.TIME_OUT, RolloutStatus.SKIP):
        return status, False
    # Progressing or Failed: in flight until the deadline, then timed out.
    if plan.timeout is None:
        return status, True
    deadline = since + plan.timeout
    if now < deadline:
        return replace(status, recheck_time=deadline), True
    return replace(status, status=RolloutStatus.TIME_OUT, recheck_time=deadline), False


def _result(
    in_flight: list[ClusterRolloutStatus],
    timed_out: list[ClusterRolloutStatus],
    breach: bool,
    now: datetime,
) -> RolloutResult:
    waits = [
        s.recheck_time - now
        for s in in_flight
        if s.recheck_time is not None and s.recheck_time > now
    ]
    return RolloutResult(
        to_rollout=tuple(in_flight),
        timed_out=tuple(timed_out),
        max_failure_breach=breach,
        recheck_after=min(waits) if waits else None,
    )


def _per_cluster(
    groups: DecisionGroups,
    statuses: Sequence[ClusterRolloutStatus],
    rollout_size_: int,
    max_failures: int,
    plan: RolloutPlan,
    now: datetime,
) -> RolloutResult:
    """Keep at most ``rollout_size_`` clusters in flight, alphabetically; stop past maxFailures."""
    in_flight: list[ClusterRolloutStatus] = []
    timed_out: list[ClusterRolloutStatus] = []
    seen: set[str] = set()
    failures = 0
    breach = False
    for status in sorted(statuses, key=_by_cluster):
        seen.add(status.cluster)
        judged = status
        # After a breach, clusters not yet applied stay untouched.
        if not (breach and status.status is RolloutStatus.TO_APPLY):
            judged, flying = _classify(status, plan, now)
            if flying:
                in_flight.append(judged)
            elif judged.status is RolloutStatus.TIME_OUT:
                timed_out.append(judged)
        if judged.status in _FAILURES:
            failures += 1
            breach = failures > max_failures
        if len(in_flight) >= rollout_size_:
            return _result(in_flight, timed_out, breach, now)
    if breach:
        return _result(in_flight, timed_out, breach, now)
    for cluster in sorted(groups.clusters - seen):
        in_flight.append(ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY))
        if len(in_flight) >= rollout_size_:
            break
    return _result(in_flight, timed_out, breach, now)


def _per_group(
    groups: DecisionGroups,
    statuses: Sequence[ClusterRolloutStatus],
    max_failures: int | str,
    plan: RolloutPlan,
    now: datetime,
) -> RolloutResult:
    """Roll out one decision group at a time, in index order.

    A group is done when none of its clusters is in flight other than failed
    ones within maxFailures (sized per group).
    """
    in_flight: list[ClusterRolloutStatus] = []
    timed_out: list[ClusterRolloutStatus] = []
    known: dict[str, RolloutStatus] = {}
    for status in sorted(statuses, key=_by_cluster):
        # ToApply clusters are handed out again below, group by group.
        if status.status is RolloutStatus.TO_APPLY:
            continue
        judged, flying = _classify(status, plan, now)
        if flying:
            in_flight.append(judged)
        elif judged.status is RolloutStatus.TIME_OUT:
            timed_out.append(judged)
        known[status.cluster] = judged.status

    breach = False
    for key in groups.ordered_keys():
        members = groups.members(key)
        limit = rollout_size(max_failures, len(members), 0)
        group_failures = 0
        for cluster in members:
            state = known.get(cluster)
            if state is None:
                in_flight.append(ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY))
            elif state in _FAILURES:
                group_failures += 1
                breach = breach or group_failures > limit
        waiting = any(s.status is not RolloutStatus.FAILED for s in in_flight)
        if waiting or breach:
            return _result(in_flight, timed_out, breach, now)
    return _result(in_flight, timed_out, breach, now)
