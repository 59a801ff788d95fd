"""Work statuses where OCM's agent lags ours for a documented reason.

Two come from OCM's apply loop skipping a ``Complete`` work (docs/compatibility.md):
"a generation whose rules complete the work at once" (OCM's status controller can
complete it before its apply controller applies that generation) and "a work that
stops being Complete" (OCM applies the new spec only at its periodic resync); the
third, "a new generation of a failing work", seen over grpc and mqtt. The
generation is read from ``Applied``'s ``observedGeneration``, which every
transport's status carries.
"""

from __future__ import annotations

from typing import Any


def _conditions(work: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list(((work or {}).get("status") or {}).get("conditions") or [])


def complete(work: dict[str, Any] | None) -> bool:
    """Whether the work-level ``Complete`` is True."""
    return any(c.get("type") == "Complete" and c.get("status") == "True" for c in _conditions(work))


def applied_at(work: dict[str, Any] | None) -> int:
    """The generation of the work's ``Applied`` condition (0: none)."""
    applied = [c for c in _conditions(work) if c.get("type") == "Applied"]
    return int((applied[0].get("observedGeneration") or 0) if applied else 0)


def known_lag(
    late: dict[str, Any] | None, ahead: dict[str, Any] | None, was_complete: bool
) -> str | None:
    """The row that explains ``late`` (OCM's agent) having applied an older generation
    than ``ahead``, given whether the work was seen ``Complete`` before; None if none."""
    if late is None or ahead is None or applied_at(late) >= applied_at(ahead):
        return None
    if complete(late):
        return "a generation whose rules complete the work at once"
    if was_complete:
        return "a work that stops being Complete"
    if any(c.get("type") == "Applied" and c.get("status") == "False" for c in _conditions(late)):
        return "a new generation of a failing work"
    return None
