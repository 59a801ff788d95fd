"""docs/metrics.md's reference table, read by the tests, and helpers to check a scrape against it.

The table is the documentation operators read; the tests take the series
they check from it, so a series added to the code without a row, or a row
without a series, fails a test.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

METRICS_DOC = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"
_NAME = re.compile(r"`([a-z_:*]+)`")


@dataclass(frozen=True)
class Documented:
    """One row of the reference table."""

    name: str  # as written: ``_total`` for counters; may end in ``*``
    type: str  # gauge, counter, histogram, or "" (collector families)
    labels: tuple[str, ...]
    served_by: frozenset[str]

    @property
    def family(self) -> str:
        """The family name a parser reports (counters without ``_total``)."""
        if self.type == "counter" and self.name.endswith("_total"):
            return self.name[: -len("_total")]
        return self.name


def documented_series() -> list[Documented]:
    """Every row of the table under ``## Reference`` (one row may name several series)."""
    text = METRICS_DOC.read_text()
    section = text.split("## Reference", 1)[1].split("\n## ", 1)[0]
    rows: list[Documented] = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names, kind, labels, served = cells[0], cells[1], cells[2], cells[3]
        label_names = tuple(_NAME.findall(labels))
        by = frozenset(s.strip() for s in served.split(","))
        for name in _NAME.findall(names):
            rows.append(Documented(name, kind, label_names, by))
    assert rows, f"no reference table found in {METRICS_DOC}"
    return rows


def served_by(component: str) -> list[Documented]:
    """The documented series of one component (``agent``, ``hub``, ``webhook``)."""
    return [row for row in documented_series() if component in row.served_by]


def parse_scrape(text: str) -> dict[str, Metric]:
    """The families of a Prometheus text-format scrape, by name."""
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(families: Mapping[str, Metric], sample: str, **labels: str) -> float | None:
    """The value of the sample ``sample`` with exactly these labels, None if absent."""
    for family in families.values():
        for s in family.samples:
            if s.name == sample and s.labels == labels:
                return float(s.value)
    return None


def samples(
    families: Mapping[str, Metric], sample: str
) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample named ``sample``: sorted label pairs -> value."""
    found = {}
    for family in families.values():
        for s in family.samples:
            if s.name == sample:
                found[tuple(sorted(s.labels.items()))] = float(s.value)
    return found


def undocumented_or_missing(
    families: Mapping[str, Metric], component: str, *, exhaustive: bool = True
) -> list[str]:
    """Problems between a scrape of ``component`` and the table: each row's family must be
    there with the documented type and labels and, when ``exhaustive`` (a process that
    runs only that component), each family of the scrape documented."""
    problems: list[str] = []
    rows = served_by(component)
    for row in rows:
        if "*" in row.name:
            if not any(fnmatch.fnmatchcase(name, row.name) for name in families):
                problems.append(f"{row.name}: no family of the scrape matches")
            continue
        family = families.get(row.family)
        if family is None:
            problems.append(f"{row.name}: not in the scrape")
            continue
        if row.type and family.type != row.type:
            problems.append(f"{row.name}: documented as {row.type}, served as {family.type}")
        seen = {k for s in family.samples for k in s.labels if k not in ("le", "quantile")}
        # Rows without a type are the client library's collectors: labels not listed.
        if row.type and seen - set(row.labels) - {"work"}:
            problems.append(f"{row.name}: undocumented labels {sorted(seen - set(row.labels))}")
    for name in families if exhaustive else ():
        base = name.removesuffix("_created")
        if name != base and base in families:
            continue  # prometheus-client's creation time of a documented family
        if not any(
            (row.family == name) or ("*" in row.name and fnmatch.fnmatchcase(name, row.name))
            for row in rows
        ):
            problems.append(f"{name}: served but not documented for {component}")
    return problems
