"""The eviction decision (spec/agent.md section 15) with explicit times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.meta import format_time
from workagent.controllers.eviction import (
    Action,
    Decision,
    decide,
)
from workagent.settings import EVICTION_DISABLED_AT

HUB = "aaaa"
NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def _applied(name: str = f"{HUB}-work1", started: datetime | str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {"hubHash": HUB, "manifestWorkName": "work1", "agentID": "agent"},
    }
    if started is not None:
        value = started if isinstance(started, str) else format_time(started)
        obj["status"] = {"evictionStartTime": value}
    return obj


def _decide(applied: dict[str, Any], *, found: bool, grace: float = 60.0) -> Decision:
    return decide(applied, work_found=found, hub_hash=HUB, grace_seconds=grace, current_time=NOW)


def test_managed_work_is_left_alone() -> None:
    assert _decide(_applied(), found=True) == Decision(Action.NOTHING)


def test_managed_again_clears_the_start_time() -> None:
    assert _decide(_applied(started=NOW), found=True) == Decision(Action.CLEAR_START)


def test_missing_work_starts_the_grace_period() -> None:
    assert _decide(_applied(), found=False) == Decision(Action.START)


def test_same_named_work_of_another_hub_does_not_count() -> None:
    applied = _applied(name="bbbb-work1")
    assert _decide(applied, found=True) == Decision(Action.START)


def test_waits_for_exactly_the_remaining_time() -> None:
    started = NOW - timedelta(seconds=20)
    assert _decide(_applied(started=started), found=False) == Decision(Action.WAIT, 40.0)


def test_evicts_once_the_grace_period_is_over() -> None:
    started = NOW - timedelta(seconds=60)
    assert _decide(_applied(started=started), found=False) == Decision(Action.EVICT)
    older = NOW - timedelta(days=3)
    assert _decide(_applied(started=older), found=False) == Decision(Action.EVICT)


def test_unreadable_start_time_restarts_the_grace_period() -> None:
    assert _decide(_applied(started="yesterday"), found=False) == Decision(Action.START)


def test_a_hundred_years_disables_eviction() -> None:
    grace = EVICTION_DISABLED_AT
    assert _decide(_applied(), found=False, grace=grace) == Decision(Action.NOTHING)
    old = NOW - timedelta(days=365)
    assert _decide(_applied(started=old), found=False, grace=grace) == Decision(Action.CLEAR_START)
    # Just below the threshold eviction still runs.
    below = _decide(_applied(started=old), found=False, grace=grace - 1)
    assert below.action is Action.WAIT
