"""The demo's terminal view: what the works and replica sets on the hub report, as it changes.

Two modes, chosen by whether the output is a terminal:

- **live** (a TTY): step messages scroll as usual and a table of every
  ManifestWork and ManifestWorkReplicaSet is redrawn below them whenever one
  changes, with plain ANSI cursor movements (no curses);
- **plain** (a pipe, a file, CI logs): one timestamped line per change of a
  row, and the whole table once at the end.

Rows are summaries computed by pure functions (:func:`work_row`,
:func:`replica_set_row`) from the objects as the hub serves them, so what is
shown is exactly what a ``kubectl get -o yaml`` would say.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from schemas.wire import (
    CONDITION_APPLIED,
    CONDITION_AVAILABLE,
    CONDITION_COMPLETE,
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PLACEMENT_VERIFIED,
    MANIFEST_WORK_REPLICA_SET_LABEL,
)

#: Shown for a condition a work does not have (yet).
ABSENT = "-"
#: Longest feedback value shown (JsonRaw values can be long).
MAX_VALUE_LENGTH = 40


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = obj.get("status") or {}
    return {c.get("type", ""): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}


def _status_of(conditions: Mapping[str, Mapping[str, Any]], ctype: str) -> str:
    cond = conditions.get(ctype)
    return str(cond.get("status", ABSENT)) if cond else ABSENT


def format_value(field_value: Mapping[str, Any]) -> str:
    """A feedback ``fieldValue`` as text: ``3``, ``True``, ``true``, or (shortened) raw JSON."""
    kind = field_value.get("type")
    if kind == "Integer":
        return str(field_value.get("integer"))
    if kind == "Boolean":
        return "true" if field_value.get("boolean") else "false"
    if kind == "JsonRaw":
        raw = str(field_value.get("jsonRaw", ""))
        return raw if len(raw) <= MAX_VALUE_LENGTH else raw[: MAX_VALUE_LENGTH - 3] + "..."
    return str(field_value.get("string", ""))


def _manifest_statuses(work: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = work.get("status") or {}
    return list((status.get("resourceStatus") or {}).get("manifests") or [])


def feedback_values(work: Mapping[str, Any]) -> dict[str, str]:
    """Every feedback value the work reports, ``name -> text``, over all its manifests."""
    out: dict[str, str] = {}
    for entry in _manifest_statuses(work):
        for value in (entry.get("statusFeedback") or {}).get("values") or []:
            out[str(value.get("name"))] = format_value(value.get("fieldValue") or {})
    return out


def condition_status(obj: Mapping[str, Any], ctype: str) -> str:
    """The status of condition ``ctype`` (``True``, ``False``, ``Unknown``), or ``-``."""
    return _status_of(_conditions(obj), ctype)


def feedback_text(work: Mapping[str, Any]) -> str:
    """Every manifest's feedback values as ``Name=value`` pairs (prefixed by the
    resource's name when more than one manifest reports values)."""
    reporting: list[tuple[str, list[str]]] = []
    for entry in _manifest_statuses(work):
        values = (entry.get("statusFeedback") or {}).get("values") or []
        if values:
            pairs = [f"{v.get('name')}={format_value(v.get('fieldValue') or {})}" for v in values]
            reporting.append((str((entry.get("resourceMeta") or {}).get("name", "")), pairs))
    if len(reporting) == 1:
        return " ".join(reporting[0][1])
    return " ".join(f"{name}:{pair}" for name, pairs in reporting for pair in pairs)


@dataclass(frozen=True)
class WorkRow:
    """What the demo shows of one ManifestWork."""

    cluster: str
    name: str
    applied: str
    available: str
    complete: str
    detail: str  # feedback values, or why the work is not applied
    deleting: bool
    replica_set: str  # "<namespace>.<name>" of the owning ManifestWorkReplicaSet, or ""

    @property
    def key(self) -> str:
        """``cluster/name``."""
        return f"{self.cluster}/{self.name}"

    def line(self) -> str:
        """The row as one line of text (plain mode)."""
        parts = [f"Applied={self.applied}", f"Available={self.available}"]
        if self.complete != ABSENT:
            parts.append(f"Complete={self.complete}")
        if self.deleting:
            parts.append("(deleting)")
        if self.detail:
            parts.append(f"| {self.detail}")
        return f"work {self.key}: {' '.join(parts)}"


def work_row(work: Mapping[str, Any]) -> WorkRow:
    """The summary of a ManifestWork as the hub serves it."""
    meta = work.get("metadata") or {}
    conditions = _conditions(work)
    detail = feedback_text(work)
    applied = conditions.get(CONDITION_APPLIED)
    if applied is not None and applied.get("status") == "False":
        # Why it failed is more useful than feedback that is stale anyway, and the
        # failing manifest's own message says more than the work-level one.
        detail = f"{applied.get('reason', '')}: {applied.get('message', '')}"
        for entry in _manifest_statuses(work):
            for cond in entry.get("conditions") or []:
                if cond.get("type") == CONDITION_APPLIED and cond.get("status") == "False":
                    meta_of = entry.get("resourceMeta") or {}
                    detail = f"{meta_of.get('kind', '')} {meta_of.get('name', '')}: " + str(
                        cond.get("message", "")
                    )
                    break
            else:
                continue
            break
    return WorkRow(
        cluster=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        applied=_status_of(conditions, CONDITION_APPLIED),
        available=_status_of(conditions, CONDITION_AVAILABLE),
        complete=_status_of(conditions, CONDITION_COMPLETE),
        detail=detail,
        deleting=bool(meta.get("deletionTimestamp")),
        replica_set=str((meta.get("labels") or {}).get(MANIFEST_WORK_REPLICA_SET_LABEL, "")),
    )


@dataclass(frozen=True)
class ReplicaSetRow:
    """What the demo shows of one ManifestWorkReplicaSet."""

    namespace: str
    name: str
    verified: str
    rolled_out: str
    rolled_out_reason: str
    applied: str
    summary: str

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def line(self) -> str:
        """The row as one line of text (plain mode)."""
        return (
            f"replicaset {self.key}: PlacementVerified={self.verified} "
            f"PlacementRolledOut={self.rolled_out} ({self.rolled_out_reason or ABSENT}) "
            f"ManifestworkApplied={self.applied} | {self.summary}"
        )


def replica_set_row(replica_set: Mapping[str, Any]) -> ReplicaSetRow:
    """The summary of a ManifestWorkReplicaSet as the hub serves it."""
    meta = replica_set.get("metadata") or {}
    conditions = _conditions(replica_set)
    summary = (replica_set.get("status") or {}).get("summary") or {}
    rolled_out = conditions.get(CONDITION_PLACEMENT_ROLLED_OUT) or {}
    return ReplicaSetRow(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        verified=_status_of(conditions, CONDITION_PLACEMENT_VERIFIED),
        rolled_out=_status_of(conditions, CONDITION_PLACEMENT_ROLLED_OUT),
        rolled_out_reason=str(rolled_out.get("reason", "")),
        applied=_status_of(conditions, CONDITION_MANIFESTWORK_APPLIED),
        summary=(
            f"works {summary.get('total', 0)}, applied {summary.get('applied', 0)}, "
            f"available {summary.get('available', 0)}, progressing "
            f"{summary.get('progressing', 0)}, degraded {summary.get('degraded', 0)}"
        ),
    )


def _columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        out.append("  ".join(cells).rstrip())
    return out


def render_table(works: Sequence[WorkRow], replica_sets: Sequence[ReplicaSetRow]) -> list[str]:
    """The table of every row, works first (by cluster and name), then replica sets."""
    lines: list[str] = []
    if works:
        rows = [
            [
                w.cluster,
                w.name + (" (deleting)" if w.deleting else ""),
                w.applied,
                w.available,
                w.complete,
                w.detail or ABSENT,
            ]
            for w in sorted(works, key=lambda w: (w.cluster, w.name))
        ]
        header = ["CLUSTER", "MANIFESTWORK", "APPLIED", "AVAILABLE", "COMPLETE", "FEEDBACK"]
        lines += _columns(header, rows)
    else:
        lines.append("(no ManifestWorks on the hub)")
    if replica_sets:
        rows = [
            [
                r.key,
                r.verified,
                f"{r.rolled_out} ({r.rolled_out_reason or ABSENT})",
                r.applied,
                r.summary,
            ]
            for r in sorted(replica_sets, key=lambda r: r.key)
        ]
        header = ["MANIFESTWORKREPLICASET", "VERIFIED", "ROLLED OUT", "APPLIED", "SUMMARY"]
        lines.append("")
        lines += _columns(header, rows)
    return lines


class TerminalView:
    """Shows step messages and the rows, live on a terminal or as plain lines.

    Not thread-safe; everything runs on the demo's event loop.
    """

    def __init__(
        self,
        out: TextIO,
        *,
        live: bool,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] | None = None,
    ) -> None:
        self.out = out
        self.live = live
        self._clock = clock
        self._start = clock()
        self._width = width or (lambda: shutil.get_terminal_size((120, 24)).columns)
        self._works: dict[str, WorkRow] = {}
        self._replica_sets: dict[str, ReplicaSetRow] = {}
        self._drawn = 0  # table lines currently on screen (live mode)

    def elapsed(self) -> float:
        """Seconds since the view was created."""
        return self._clock() - self._start

    def _stamp(self, text: str) -> str:
        return f"[{self.elapsed():6.1f}s] {text}"

    # -- messages ------------------------------------------------------------------------
    def say(self, text: str) -> None:
        """A step message; in live mode it goes above the table."""
        self._erase()
        self.out.write(self._stamp(text) + "\n")
        self._draw()

    # -- rows ----------------------------------------------------------------------------
    def work_changed(self, work: Mapping[str, Any]) -> None:
        """A ManifestWork was added or changed on the hub."""
        row = work_row(work)
        if self._works.get(row.key) == row:
            return
        self._works[row.key] = row
        self._changed(row.line())

    def work_deleted(self, work: Mapping[str, Any]) -> None:
        """A ManifestWork is gone from the hub."""
        row = work_row(work)
        if self._works.pop(row.key, None) is not None:
            self._changed(f"work {row.key}: deleted")

    def replica_set_changed(self, replica_set: Mapping[str, Any]) -> None:
        """A ManifestWorkReplicaSet was added or changed."""
        row = replica_set_row(replica_set)
        if self._replica_sets.get(row.key) == row:
            return
        self._replica_sets[row.key] = row
        self._changed(row.line())

    def replica_set_deleted(self, replica_set: Mapping[str, Any]) -> None:
        """A ManifestWorkReplicaSet is gone."""
        row = replica_set_row(replica_set)
        if self._replica_sets.pop(row.key, None) is not None:
            self._changed(f"replicaset {row.key}: deleted")

    def row(self, key: str) -> WorkRow | None:
        """The last row shown for work ``cluster/name``."""
        return self._works.get(key)

    def table(self) -> list[str]:
        """The current table."""
        return render_table(list(self._works.values()), list(self._replica_sets.values()))

    def _changed(self, line: str) -> None:
        if self.live:
            self._erase()
            self._draw()
        else:
            self.out.write(self._stamp(line) + "\n")
            self.out.flush()

    # -- live drawing --------------------------------------------------------------------
    def _erase(self) -> None:
        if self.live and self._drawn:
            # Back to the table's first line, then clear to the end of the screen.
            self.out.write(f"\r\x1b[{self._drawn}A\x1b[J")
            self._drawn = 0

    def _draw(self) -> None:
        if not self.live:
            self.out.flush()
            return
        # Lines are cut to the terminal's width: a wrapped line would make the
        # next erase move up too few lines and leave debris behind.
        width = max(self._width() - 1, 20)
        lines = [self._stamp("hub state:"), *self.table()]
        for line in lines:
            self.out.write(line[:width] + "\n")
        self._drawn = len(lines)
        self.out.flush()

    def snapshot(self, title: str) -> None:
        """Print the current table once, above the live one (it stays in the scrollback)."""
        self._erase()
        self.out.write(self._stamp(title) + "\n")
        for line in self.table():
            self.out.write(f"    {line}".rstrip() + "\n")
        self._draw()

    def finish(self) -> None:
        """Stop drawing: remove the live table (the last snapshot stays)."""
        self._erase()
        self.live = False
        self.out.flush()
