"""Unit tests of the pure rollout module (spec/hub.md section 2.5), with a fake clock.

``now`` is passed explicitly; "time passing" is a later ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hubcontroller.rollout import (
    ClusterRolloutStatus,
    DecisionGroups,
    GroupKey,
    InvalidDecisionError,
    RolloutConfigError,
    RolloutPlan,
    RolloutResult,
    RolloutStatus,
    compute_rollout,
    parse_timeout,
    rollout_size,
    strategy_from_wire,
)
from schemas.cluster_v1alpha1 import RolloutType
from schemas.wire import DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PLACEMENT_LABEL

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
S = RolloutStatus

# -- helpers -------------------------------------------------------------------------------


def clusters(n: int, prefix: str = "c") -> list[str]:
    """``c00 .. c<n-1>``, alphabetical."""
    return [f"{prefix}{i:02d}" for i in range(n)]


def one_group(names: Sequence[str]) -> DecisionGroups:
    return DecisionGroups({GroupKey(0, ""): frozenset(names)})


def grouped(*groups: tuple[int, str, Sequence[str]]) -> DecisionGroups:
    return DecisionGroups({GroupKey(i, n): frozenset(cs) for i, n, cs in groups})


def st(cluster: str, status: RolloutStatus, at: datetime | None = T0) -> ClusterRolloutStatus:
    return ClusterRolloutStatus(cluster, status, at)


def plan(raw: Mapping[str, Any] | None) -> RolloutPlan:
    return RolloutPlan.from_strategy(strategy_from_wire(raw))


def run(
    raw: Mapping[str, Any] | None,
    groups: DecisionGroups,
    existing: Sequence[ClusterRolloutStatus] = (),
    now: datetime = T0,
) -> RolloutResult:
    return compute_rollout(plan(raw), groups, existing, now)


def to_apply(result: RolloutResult) -> list[str]:
    return result.clusters_to_apply()


def in_flight(result: RolloutResult) -> list[str]:
    return [s.cluster for s in result.to_rollout]


def progressive(**fields: Any) -> dict[str, Any]:
    return {"type": "Progressive", "progressive": fields}


def per_group(**fields: Any) -> dict[str, Any]:
    return {"type": "ProgressivePerGroup", "progressivePerGroup": fields}


def succeed_all(names: Sequence[str], at: datetime = T0) -> list[ClusterRolloutStatus]:
    return [st(c, S.SUCCEEDED, at) for c in names]


# -- All -----------------------------------------------------------------------------------


class TestAll:
    def test_every_cluster_without_a_work_is_applied_at_once(self) -> None:
        result = run(None, one_group(clusters(10)))
        assert to_apply(result) == clusters(10)
        assert result.timed_out == () and result.removed == ()
        assert result.recheck_after is None
        assert not result.max_failure_breach

    def test_clusters_with_a_work_are_left_alone(self) -> None:
        existing = [st("c00", S.SUCCEEDED), st("c01", S.PROGRESSING), st("c02", S.FAILED)]
        result = run({"type": "All"}, one_group(clusters(5)), existing)
        assert to_apply(result) == ["c03", "c04"]
        # progressing and failed clusters are in flight, not re-applied
        assert in_flight(result) == ["c01", "c02", "c03", "c04"]

    def test_existing_to_apply_status_is_applied_again(self) -> None:
        result = run(None, one_group(["a", "b"]), [st("a", S.TO_APPLY, None)])
        assert to_apply(result) == ["a", "b"]

    def test_failures_never_stop_all(self) -> None:
        existing = [st(c, S.FAILED) for c in clusters(4)]
        result = run(None, one_group(clusters(6)), existing)
        assert to_apply(result) == ["c04", "c05"]
        assert not result.max_failure_breach

    def test_progress_deadline_times_out_and_rechecks(self) -> None:
        raw = {"type": "All", "all": {"progressDeadline": "10m"}}
        existing = [
            st("a", S.PROGRESSING, T0),
            st("b", S.PROGRESSING, T0 + timedelta(minutes=5)),
        ]
        result = run(raw, one_group(["a", "b"]), existing, now=T0 + timedelta(minutes=10))
        assert [s.cluster for s in result.timed_out] == ["a"]
        assert result.timed_out[0].status is S.TIME_OUT
        assert in_flight(result) == ["b"]
        assert result.recheck_after == timedelta(minutes=5)

    def test_no_deadline_means_waiting_forever(self) -> None:
        result = run(None, one_group(["a"]), [st("a", S.PROGRESSING, T0)], T0 + timedelta(days=9))
        assert in_flight(result) == ["a"] and result.timed_out == ()
        assert result.recheck_after is None

    def test_removed_clusters_are_reported(self) -> None:
        existing = [st("gone", S.SUCCEEDED), st("a", S.SUCCEEDED)]
        result = run(None, one_group(["a", "b"]), existing)
        assert [s.cluster for s in result.removed] == ["gone"]
        assert to_apply(result) == ["b"]

    def test_no_decisions_gives_nothing(self) -> None:
        result = run(None, DecisionGroups(), [st("old", S.SUCCEEDED)])
        assert result.to_rollout == ()
        assert [s.cluster for s in result.removed] == ["old"]

    def test_clusters_of_every_group_are_applied(self) -> None:
        groups = grouped((0, "a", ["x1"]), (1, "b", ["x2"]), (7, "c", ["x3"]))
        assert to_apply(run(None, groups)) == ["x1", "x2", "x3"]


# -- Progressive -----------------------------------------------------------------------------


class TestProgressive:
    def test_max_concurrency_count_takes_the_first_clusters_alphabetically(self) -> None:
        result = run(progressive(maxConcurrency=3), one_group(clusters(10)))
        assert to_apply(result) == ["c00", "c01", "c02"]

    @pytest.mark.parametrize(
        ("value", "expected"),
        [("25%", 3), ("10%", 1), ("1%", 1), ("100%", 10), ("50%", 5), ("0%", 10)],
    )
    def test_max_concurrency_percentage_rounds_up(self, value: str, expected: int) -> None:
        result = run(progressive(maxConcurrency=value), one_group(clusters(10)))
        assert len(to_apply(result)) == expected

    @pytest.mark.parametrize("value", [None, 0, 11, 1000])
    def test_max_concurrency_absent_zero_or_too_large_means_all(self, value: int | None) -> None:
        fields = {} if value is None else {"maxConcurrency": value}
        assert len(to_apply(run(progressive(**fields), one_group(clusters(10))))) == 10

    def test_digit_string_is_a_count(self) -> None:
        assert len(to_apply(run(progressive(maxConcurrency="4"), one_group(clusters(10))))) == 4

    def test_a_slot_frees_when_a_cluster_succeeds(self) -> None:
        names = clusters(6)
        raw = progressive(maxConcurrency=2)
        existing = [st("c00", S.SUCCEEDED), st("c01", S.PROGRESSING)]
        result = run(raw, one_group(names), existing)
        assert in_flight(result) == ["c01", "c02"]
        assert to_apply(result) == ["c02"]

    def test_walks_the_whole_rollout_batch_by_batch(self) -> None:
        names = clusters(7)
        raw = progressive(maxConcurrency=3)
        done: list[ClusterRolloutStatus] = []
        batches = []
        while True:
            result = run(raw, one_group(names), done)
            batch = to_apply(result)
            if not batch:
                break
            batches.append(batch)
            done += succeed_all(batch)
        assert batches == [names[0:3], names[3:6], names[6:7]]

    def test_min_success_time_holds_the_slot_until_the_soak_ends(self) -> None:
        raw = progressive(maxConcurrency=1, minSuccessTime="5m")
        existing = [st("c00", S.SUCCEEDED, T0)]
        during = run(raw, one_group(clusters(3)), existing, now=T0 + timedelta(minutes=2))
        assert to_apply(during) == []
        assert in_flight(during) == ["c00"]
        assert during.to_rollout[0].recheck_time == T0 + timedelta(minutes=5)
        assert during.recheck_after == timedelta(minutes=3)
        after = run(raw, one_group(clusters(3)), existing, now=T0 + timedelta(minutes=5))
        assert to_apply(after) == ["c01"]
        assert after.recheck_after is None

    def test_progress_deadline_turns_progressing_into_a_failure(self) -> None:
        raw = progressive(maxConcurrency=1, progressDeadline="10m")
        existing = [st("c00", S.PROGRESSING, T0)]
        before = run(raw, one_group(clusters(3)), existing, now=T0 + timedelta(minutes=9))
        assert in_flight(before) == ["c00"] and before.recheck_after == timedelta(minutes=1)
        after = run(raw, one_group(clusters(3)), existing, now=T0 + timedelta(minutes=10))
        assert [s.cluster for s in after.timed_out] == ["c00"]
        # maxFailures defaults to 0: one timeout is a breach and nothing new starts
        assert after.max_failure_breach
        assert to_apply(after) == []

    def test_a_tolerated_timeout_frees_its_slot(self) -> None:
        raw = progressive(maxConcurrency=1, progressDeadline="10m", maxFailures=1)
        existing = [st("c00", S.PROGRESSING, T0)]
        result = run(raw, one_group(clusters(3)), existing, now=T0 + timedelta(minutes=11))
        assert not result.max_failure_breach
        assert to_apply(result) == ["c01"]

    def test_failed_cluster_counts_at_once_and_stays_in_flight(self) -> None:
        raw = progressive(maxConcurrency=2, progressDeadline="1h")
        existing = [st("c00", S.FAILED, T0), st("c01", S.SUCCEEDED)]
        result = run(raw, one_group(clusters(5)), existing, now=T0 + timedelta(minutes=1))
        assert result.max_failure_breach
        assert in_flight(result) == ["c00"]
        assert to_apply(result) == []
        assert result.recheck_after == timedelta(minutes=59)

    @pytest.mark.parametrize(
        ("max_failures", "failed", "breach"),
        [(2, 2, False), (2, 3, True), ("20%", 2, False), ("20%", 3, True), ("15%", 2, False)],
    )
    def test_max_failures_counts_and_percentages(
        self, max_failures: int | str, failed: int, breach: bool
    ) -> None:
        # 10 clusters: 20% -> 2, 15% -> ceil(1.5) = 2
        names = clusters(10)
        existing = [st(c, S.FAILED) for c in names[:failed]]
        raw = progressive(maxConcurrency=5, maxFailures=max_failures)
        result = run(raw, one_group(names), existing)
        assert result.max_failure_breach is breach
        assert (to_apply(result) == []) is breach

    def test_max_failures_above_the_total_tolerates_every_failure(self) -> None:
        names = clusters(3)
        existing = [st(c, S.FAILED) for c in names[:2]]
        result = run(progressive(maxConcurrency=3, maxFailures=50), one_group(names), existing)
        assert not result.max_failure_breach
        assert to_apply(result) == ["c02"]

    def test_after_a_breach_unapplied_clusters_are_not_handed_out(self) -> None:
        existing = [st("a", S.FAILED), st("b", S.TO_APPLY, None), st("c", S.PROGRESSING)]
        result = run(progressive(maxConcurrency=5), one_group(["a", "b", "c", "d"]), existing)
        assert result.max_failure_breach
        assert in_flight(result) == ["a", "c"]
        assert to_apply(result) == []

    def test_mandatory_groups_go_first(self) -> None:
        groups = grouped((0, "canary", ["z1", "z2"]), (1, "rest", clusters(6)))
        raw = progressive(maxConcurrency=2, mandatoryDecisionGroups=[{"groupName": "canary"}])
        first = run(raw, groups)
        assert to_apply(first) == ["z1", "z2"]
        # one canary still progressing: the rest waits
        waiting = run(raw, groups, [st("z1", S.SUCCEEDED), st("z2", S.PROGRESSING)])
        assert to_apply(waiting) == []
        done = run(raw, groups, succeed_all(["z1", "z2"]))
        assert to_apply(done) == ["c00", "c01"]

    def test_mandatory_group_by_index(self) -> None:
        groups = grouped((0, "", ["a"]), (1, "", ["b"]), (2, "", ["c"]))
        raw = progressive(mandatoryDecisionGroups=[{"groupIndex": 2}])
        assert to_apply(run(raw, groups)) == ["c"]
        assert to_apply(run(raw, groups, succeed_all(["c"]))) == ["a", "b"]

    def test_mandatory_name_covers_every_index_with_that_name(self) -> None:
        groups = grouped((0, "prod", ["a"]), (1, "dev", ["b"]), (2, "prod", ["c"]))
        raw = progressive(mandatoryDecisionGroups=[{"groupName": "prod"}])
        assert to_apply(run(raw, groups)) == ["a"]  # per group: index 0 first
        assert to_apply(run(raw, groups, succeed_all(["a"]))) == ["c"]
        assert to_apply(run(raw, groups, succeed_all(["a", "c"]))) == ["b"]

    def test_unknown_mandatory_group_is_ignored(self) -> None:
        raw = progressive(maxConcurrency=1, mandatoryDecisionGroups=[{"groupName": "nope"}])
        assert to_apply(run(raw, one_group(["a", "b"]))) == ["a"]

    def test_mandatory_groups_tolerate_no_failure(self) -> None:
        groups = grouped((0, "canary", ["z1"]), (1, "rest", ["a", "b"]))
        raw = progressive(
            maxFailures="100%",
            progressDeadline="5m",
            mandatoryDecisionGroups=[{"groupName": "canary"}],
        )
        failed = run(raw, groups, [st("z1", S.FAILED, T0)], now=T0 + timedelta(minutes=1))
        assert to_apply(failed) == [] and in_flight(failed) == ["z1"]
        timed_out = run(raw, groups, [st("z1", S.PROGRESSING, T0)], T0 + timedelta(minutes=6))
        assert [s.cluster for s in timed_out.timed_out] == ["z1"]
        assert to_apply(timed_out) == []

    def test_work_outside_mandatory_groups_does_not_block_them(self) -> None:
        # A cluster moved into the rest group while still progressing does not
        # stall the mandatory phase, and after it the rest is a sliding window.
        groups = grouped((0, "canary", ["z1"]), (1, "rest", ["a", "b", "c"]))
        raw = progressive(maxConcurrency=2, mandatoryDecisionGroups=[{"groupName": "canary"}])
        assert to_apply(run(raw, groups, [st("a", S.PROGRESSING)])) == ["z1"]
        result = run(raw, groups, [st("a", S.PROGRESSING), st("z1", S.SUCCEEDED)])
        assert to_apply(result) == ["b"]

    def test_timeout_outside_mandatory_groups_does_not_block_forever(self) -> None:
        groups = grouped((0, "canary", ["z1"]), (1, "rest", ["a", "b", "c"]))
        raw = progressive(
            maxConcurrency=1,
            maxFailures=1,
            progressDeadline="1m",
            mandatoryDecisionGroups=[{"groupName": "canary"}],
        )
        existing = [st("z1", S.SUCCEEDED), st("a", S.PROGRESSING, T0)]
        result = run(raw, groups, existing, now=T0 + timedelta(minutes=2))
        assert [s.cluster for s in result.timed_out] == ["a"]
        assert to_apply(result) == ["b"]

    def test_cluster_added_mid_rollout_joins_in_alphabetical_order(self) -> None:
        raw = progressive(maxConcurrency=2)
        existing = succeed_all(["c00", "c01"])
        result = run(raw, one_group(["c00", "c01", "c05", "b99"]), existing)
        assert to_apply(result) == ["b99", "c05"]

    def test_cluster_removed_mid_rollout_frees_its_slot(self) -> None:
        raw = progressive(maxConcurrency=2)
        existing = [st("c00", S.PROGRESSING), st("c01", S.PROGRESSING)]
        result = run(raw, one_group(["c00", "c02", "c03"]), existing)
        assert [s.cluster for s in result.removed] == ["c01"]
        assert in_flight(result) == ["c00", "c02"]

    def test_removed_failures_do_not_count(self) -> None:
        existing = [st("gone", S.FAILED)]
        result = run(progressive(maxConcurrency=1), one_group(["a"]), existing)
        assert not result.max_failure_breach
        assert to_apply(result) == ["a"]

    def test_recheck_is_the_earliest_future_event(self) -> None:
        raw = progressive(minSuccessTime="10m", progressDeadline="1h")
        existing = [
            st("a", S.SUCCEEDED, T0),  # soak ends at +10m
            st("b", S.PROGRESSING, T0 - timedelta(minutes=55)),  # deadline at +5m
            st("c", S.PROGRESSING, T0),  # deadline at +1h
        ]
        result = run(raw, one_group(["a", "b", "c"]), existing)
        assert result.recheck_after == timedelta(minutes=5)

    def test_missing_transition_time_counts_from_now(self) -> None:
        raw = progressive(minSuccessTime="1m")
        result = run(raw, one_group(["a"]), [st("a", S.SUCCEEDED, None)])
        assert in_flight(result) == ["a"]
        assert result.recheck_after == timedelta(minutes=1)

    def test_skip_and_timeout_inputs_are_not_in_flight(self) -> None:
        existing = [st("a", S.SKIP), st("b", S.TIME_OUT)]
        result = run(progressive(maxFailures=5), one_group(["a", "b", "c"]), existing)
        assert to_apply(result) == ["c"]
        assert [s.cluster for s in result.timed_out] == ["b"]

    def test_no_progressive_block_rolls_out_to_all(self) -> None:
        assert len(to_apply(run({"type": "Progressive"}, one_group(clusters(4))))) == 4


# -- ProgressivePerGroup -------------------------------------------------------------------


THREE_GROUPS = grouped((0, "g0", ["a1", "a2"]), (1, "g1", ["b1", "b2", "b3"]), (2, "g2", ["c1"]))


class TestProgressivePerGroup:
    def test_one_group_at_a_time(self) -> None:
        raw = per_group()
        assert to_apply(run(raw, THREE_GROUPS)) == ["a1", "a2"]
        partial = [st("a1", S.SUCCEEDED), st("a2", S.PROGRESSING)]
        assert to_apply(run(raw, THREE_GROUPS, partial)) == []
        assert to_apply(run(raw, THREE_GROUPS, succeed_all(["a1", "a2"]))) == ["b1", "b2", "b3"]
        done = succeed_all(["a1", "a2", "b1", "b2", "b3"])
        assert to_apply(run(raw, THREE_GROUPS, done)) == ["c1"]
        assert run(raw, THREE_GROUPS, [*done, st("c1", S.SUCCEEDED)]).to_rollout == ()

    def test_min_success_time_holds_the_group(self) -> None:
        raw = per_group(minSuccessTime="30s")
        existing = succeed_all(["a1", "a2"])
        held = run(raw, THREE_GROUPS, existing, now=T0 + timedelta(seconds=10))
        assert to_apply(held) == [] and held.recheck_after == timedelta(seconds=20)
        assert to_apply(run(raw, THREE_GROUPS, existing, T0 + timedelta(seconds=30))) == [
            "b1",
            "b2",
            "b3",
        ]

    def test_max_failures_per_group(self) -> None:
        existing = [st("a1", S.FAILED), st("a2", S.SUCCEEDED)]
        strict = run(per_group(), THREE_GROUPS, existing)
        assert strict.max_failure_breach and to_apply(strict) == []
        tolerant = run(per_group(maxFailures=1), THREE_GROUPS, existing)
        assert not tolerant.max_failure_breach
        assert to_apply(tolerant) == ["b1", "b2", "b3"]

    def test_max_failures_percentage_is_sized_per_group(self) -> None:
        # 50% of a group of 2 is 1; of a group of 3 it is 2.
        existing = [st("a1", S.FAILED), st("a2", S.SUCCEEDED)]
        result = run(per_group(maxFailures="50%"), THREE_GROUPS, existing)
        assert to_apply(result) == ["b1", "b2", "b3"]
        existing += [st("b1", S.FAILED), st("b2", S.FAILED), st("b3", S.SUCCEEDED)]
        result = run(per_group(maxFailures="50%"), THREE_GROUPS, existing)
        assert not result.max_failure_breach and to_apply(result) == ["c1"]
        existing[-1] = st("b3", S.FAILED)
        result = run(per_group(maxFailures="50%"), THREE_GROUPS, existing)
        assert result.max_failure_breach and to_apply(result) == []

    def test_max_failures_larger_than_a_group_tolerates_it_all(self) -> None:
        # The seed example: maxFailures 2; a group of one cluster may fail.
        existing = [st("a1", S.FAILED), st("a2", S.FAILED)]
        result = run(per_group(maxFailures=2), THREE_GROUPS, existing)
        assert not result.max_failure_breach
        assert to_apply(result) == ["b1", "b2", "b3"]

    def test_timeout_in_an_earlier_group_does_not_start_two_groups(self) -> None:
        raw = per_group(maxFailures=1, progressDeadline="1m")
        groups = grouped((0, "", ["a1", "a2"]), (1, "", ["b1"]), (2, "", ["c1"]))
        existing = [st("a1", S.PROGRESSING, T0), st("a2", S.SUCCEEDED)]
        result = run(raw, groups, existing, now=T0 + timedelta(minutes=5))
        assert [s.cluster for s in result.timed_out] == ["a1"]
        assert to_apply(result) == ["b1"]

    def test_failed_within_deadline_in_a_tolerant_group_lets_the_next_start(self) -> None:
        raw = per_group(maxFailures=1, progressDeadline="1h")
        existing = [st("a1", S.FAILED, T0), st("a2", S.SUCCEEDED)]
        result = run(raw, THREE_GROUPS, existing, now=T0 + timedelta(minutes=1))
        assert in_flight(result) == ["a1", "b1", "b2", "b3"]
        assert to_apply(result) == ["b1", "b2", "b3"]

    def test_mandatory_groups_then_the_others_in_order(self) -> None:
        raw = per_group(mandatoryDecisionGroups=[{"groupName": "g2"}])
        assert to_apply(run(raw, THREE_GROUPS)) == ["c1"]
        assert to_apply(run(raw, THREE_GROUPS, succeed_all(["c1"]))) == ["a1", "a2"]

    def test_group_indexes_need_not_be_contiguous(self) -> None:
        groups = grouped((0, "", ["a"]), (5, "", ["b"]))
        assert to_apply(run(per_group(), groups, succeed_all(["a"]))) == ["b"]

    def test_cluster_added_to_a_finished_group_is_applied(self) -> None:
        groups = grouped((0, "", ["a1", "a2", "a3"]), (1, "", ["b1"]))
        existing = succeed_all(["a1", "a2", "b1"])
        assert to_apply(run(per_group(), groups, existing)) == ["a3"]

    def test_removed_clusters_are_reported(self) -> None:
        result = run(per_group(), THREE_GROUPS, [st("gone", S.PROGRESSING)])
        assert [s.cluster for s in result.removed] == ["gone"]
        assert to_apply(result) == ["a1", "a2"]


# -- sizes, deadlines, strategies ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "default", "expected"),
    [
        (None, 10, 7, 7),
        (3, 10, 0, 3),
        (0, 10, 4, 4),
        (-2, 10, 4, 4),
        (11, 10, 0, 10),
        ("30%", 10, 0, 3),
        ("33%", 10, 0, 4),
        ("5.5%", 100, 0, 6),
        ("0%", 10, 9, 9),
        ("100%", 7, 0, 7),
        ("150%", 10, 0, 10),
        ("12", 100, 0, 12),
        ("1%", 0, 0, 0),
    ],
)
def test_rollout_size(value: int | str | None, total: int, default: int, expected: int) -> None:
    assert rollout_size(value, total, default) == expected


@pytest.mark.parametrize("value", ["abc", "%", "5 %", "-5%", "1e2%", "ten", "5%%"])
def test_rollout_size_rejects_what_is_not_a_count_or_percentage(value: str) -> None:
    with pytest.raises(RolloutConfigError, match="invalid maximum threshold"):
        rollout_size(value, 10, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, None),
        ("", None),
        ("None", None),
        ("90s", timedelta(seconds=90)),
        ("10m", timedelta(minutes=10)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("0s", timedelta(0)),
    ],
)
def test_parse_timeout(text: str | None, expected: timedelta | None) -> None:
    assert parse_timeout(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10mins", 'unknown unit "mins"'),
        ("abc", "use a duration"),
        ("-5m", "use a duration"),
        ("5|", r"unknown unit \"\|\""),
    ],
)
def test_parse_timeout_errors(text: str, message: str) -> None:
    with pytest.raises(RolloutConfigError, match=message):
        parse_timeout(text)


def test_zero_deadline_times_out_at_once() -> None:
    raw = {"type": "All", "all": {"progressDeadline": "0s"}}
    result = run(raw, one_group(["a"]), [st("a", S.PROGRESSING, T0)])
    assert [s.cluster for s in result.timed_out] == ["a"]


class TestStrategyFromWire:
    def test_absent_strategy_is_all(self) -> None:
        assert strategy_from_wire(None).type is RolloutType.ALL

    def test_rollout_type_is_read_when_type_is_absent(self) -> None:
        strategy = strategy_from_wire({"rolloutType": "Progressive"})
        assert strategy.type is RolloutType.PROGRESSIVE

    def test_rollout_type_wins_over_the_defaulted_all(self) -> None:
        raw = {"type": "All", "rolloutType": "ProgressivePerGroup"}
        assert strategy_from_wire(raw).type is RolloutType.PROGRESSIVE_PER_GROUP

    def test_explicit_type_wins_over_rollout_type(self) -> None:
        raw = {"type": "Progressive", "rolloutType": "All"}
        assert strategy_from_wire(raw).type is RolloutType.PROGRESSIVE

    def test_pruned_rollout_type_is_inferred_from_the_only_block(self) -> None:
        # What an API server stores for the seed example: rolloutType pruned,
        # type defaulted to All, the progressive block kept.
        raw = {"type": "All", "progressive": {"maxFailures": "5%", "minSuccessTime": "5m"}}
        assert strategy_from_wire(raw).type is RolloutType.PROGRESSIVE
        raw = {"type": "All", "progressivePerGroup": {"maxFailures": 2}}
        assert strategy_from_wire(raw).type is RolloutType.PROGRESSIVE_PER_GROUP

    def test_all_block_keeps_all(self) -> None:
        raw = {"type": "All", "all": {"progressDeadline": "None"}, "progressive": {}}
        assert strategy_from_wire(raw).type is RolloutType.ALL

    def test_two_blocks_keep_the_declared_type(self) -> None:
        raw = {"type": "All", "progressive": {}, "progressivePerGroup": {}}
        assert strategy_from_wire(raw).type is RolloutType.ALL

    def test_seed_example_rolls_out_progressively(self) -> None:
        raw = {
            "rolloutType": "Progressive",
            "progressive": {
                "minSuccessTime": "5m",
                "progressDeadline": "10m",
                "maxFailures": "5%",
                "mandatoryDecisionGroups": [
                    {"groupName": "prod-canary-west"},
                    {"groupName": "prod-canary-east"},
                ],
            },
        }
        p = plan(raw)
        assert p.type is RolloutType.PROGRESSIVE
        assert p.timeout == timedelta(minutes=10)
        assert p.min_success_time == timedelta(minutes=5)
        groups = grouped(
            (0, "prod-canary-west", ["w1"]),
            (1, "prod-canary-east", ["e1"]),
            (2, "prod", ["p1", "p2"]),
        )
        assert to_apply(compute_rollout(p, groups, [], T0)) == ["w1"]

    def test_unknown_type_is_a_config_error(self) -> None:
        with pytest.raises(RolloutConfigError, match="invalid rolloutStrategy: type"):
            strategy_from_wire({"type": "Canary"})

    def test_invalid_threshold_pattern_is_a_config_error(self) -> None:
        with pytest.raises(RolloutConfigError, match="maxFailures"):
            strategy_from_wire({"type": "Progressive", "progressive": {"maxFailures": "x"}})


class TestPlanValidation:
    def test_bad_min_success_time(self) -> None:
        with pytest.raises(RolloutConfigError, match=r"progressive\.minSuccessTime: time: invalid"):
            plan(progressive(minSuccessTime="soon"))

    def test_negative_min_success_time_is_no_soak(self) -> None:
        # As OCM (spec 2.5 classify): a success is over once now >= time + minSuccessTime.
        raw = progressive(maxConcurrency=1, minSuccessTime="-5s")
        assert plan(raw).min_success_time == timedelta(seconds=-5)
        result = run(raw, one_group(clusters(3)), [st("c00", S.SUCCEEDED, T0)], now=T0)
        assert to_apply(result) == ["c01"]
        assert result.recheck_after is None

    def test_bad_progress_deadline_names_the_field(self) -> None:
        with pytest.raises(RolloutConfigError, match=r"progressivePerGroup\.progressDeadline"):
            plan(per_group(progressDeadline="10mins"))

    def test_all_ignores_unused_fields(self) -> None:
        p = plan({"type": "All", "all": {"minSuccessTime": "1h", "maxFailures": 3}})
        assert p.min_success_time == timedelta(0)

    def test_percentages_are_checked_up_front(self) -> None:
        p = RolloutPlan(RolloutType.PROGRESSIVE, max_concurrency="lots")
        with pytest.raises(RolloutConfigError, match="invalid maximum threshold"):
            compute_rollout(p, one_group(["a"]), [], T0)


# -- decision groups -----------------------------------------------------------------------


def decision(
    name: str, cluster_names: Sequence[str], index: str | None = "0", group: str | None = None
) -> dict[str, Any]:
    labels = {PLACEMENT_LABEL: "p"}
    if index is not None:
        labels[DECISION_GROUP_INDEX_LABEL] = index
    if group is not None:
        labels[DECISION_GROUP_NAME_LABEL] = group
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in cluster_names]},
    }


class TestDecisionGroups:
    def test_groups_by_index_label(self) -> None:
        groups = DecisionGroups.from_decisions(
            [
                decision("p-2", ["c3"], "1", "west"),
                decision("p-1", ["c1", "c2"], "0", "canary"),
                decision("p-3", ["c4"], "1", "west"),
            ]
        )
        assert groups.ordered_keys() == [GroupKey(0, "canary"), GroupKey(1, "west")]
        assert groups.members(GroupKey(1, "west")) == ["c3", "c4"]
        assert groups.clusters == {"c1", "c2", "c3", "c4"}

    @pytest.mark.parametrize("index", [None, "", "one", "1.5", " 1"])
    def test_missing_or_bad_index_is_refused(self, index: str | None) -> None:
        with pytest.raises(InvalidDecisionError, match="decision-group-index"):
            DecisionGroups.from_decisions([decision("p-1", ["c1"], index)])

    @pytest.mark.parametrize(("index", "shown"), [(None, '""'), ("one", '"one"')])
    def test_bad_index_message_quotes_as_go(self, index: str | None, shown: str) -> None:
        with pytest.raises(InvalidDecisionError) as caught:
            DecisionGroups.from_decisions([decision("p-1", ["c1"], index)])
        assert str(caught.value) == (
            f'PlacementDecision "p-1" has no valid {DECISION_GROUP_INDEX_LABEL} label '
            f"(got {shown}); it must be a decimal integer"
        )

    def test_cluster_in_two_groups_belongs_to_the_lower_index(self) -> None:
        groups = DecisionGroups.from_decisions(
            [decision("p-1", ["a", "dup"], "0"), decision("p-2", ["dup", "b"], "1")]
        )
        assert groups.members(GroupKey(0, "")) == ["a", "dup"]
        assert groups.members(GroupKey(1, "")) == ["b"]
        assert to_apply(run(per_group(), groups)) == ["a", "dup"]

    def test_empty_decisions(self) -> None:
        groups = DecisionGroups.from_decisions([decision("p-1", [])])
        assert groups.clusters == frozenset()
        assert run(None, groups).to_rollout == ()
