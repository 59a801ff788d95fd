"""What every randomized run shares: its seed, its time budget, its log and its findings.

A run is reproduced by its area and seed (``make fuzz-peers FUZZ_AREAS=hub
FUZZ_SEED=7``); the seed is printed at the start and in every failure. Findings
(divergences between OCM's program and ours that no row of docs/compatibility.md
explains) are collected, written to ``<out>/divergences.jsonl`` as they are
found, and fail the test together at the end.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass
class FuzzRun:
    """One area's run: seeded randomness, a deadline and a log under ``out``."""

    area: str
    seed: int
    budget: float
    out: Path
    started: float = field(default_factory=time.monotonic)
    findings: list[dict[str, Any]] = field(default_factory=list)

    def rng(self, salt: str = "") -> random.Random:
        """A random source determined by the seed (and ``salt``, for independent streams)."""
        return random.Random(f"{self.seed}/{salt}")

    def left(self) -> float:
        """Seconds of the budget that remain (never below zero)."""
        return max(0.0, self.budget - (time.monotonic() - self.started))

    def log(self, line: str) -> None:
        """Prints ``line`` and appends it to ``<out>/log.txt``."""
        stamped = f"{time.strftime('%H:%M:%S')} [{self.area} {self.seed}] {line}"
        print(stamped, flush=True)
        with (self.out / "log.txt").open("a", encoding="utf-8") as fh:
            fh.write(stamped + "\n")

    def finding(self, what: str, **details: Any) -> None:
        """Records a divergence (written at once, so a run cut short keeps it)."""
        entry = {"what": what, **details}
        self.findings.append(entry)
        self.log(f"FINDING {what}")
        with (self.out / "divergences.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, default=str, sort_keys=True) + "\n")

    def assert_none(self) -> None:
        """Fails with every finding of the run, and how to repeat it."""
        whats = [f"  - {f['what']}" for f in self.findings[:20]]
        if len(self.findings) > 20:
            whats.append(f"  (+{len(self.findings) - 20} more)")
        listed = "\n".join(whats)
        assert not self.findings, (
            f"{len(self.findings)} divergence(s) in the {self.area} run, seed {self.seed}:\n"
            f"{listed}\n"
            f"details: {self.out / 'divergences.jsonl'}; repeat with "
            f"make fuzz-peers FUZZ_AREAS={self.area} FUZZ_SEED={self.seed}"
        )


_STARTED: set[Path] = set()


def budget_of(default: float) -> float:
    """``FUZZ_BUDGET``, else ``default``: the seconds of random input of a run."""
    return float(os.environ.get("FUZZ_BUDGET") or default)


def fuzz_marks(default_budget: float, slack: float) -> list[pytest.MarkDecorator]:
    """A module's marks: real control planes, and a timeout of the budget plus ``slack``
    (starting the programs, finishing the scenario under way, the last comparisons)."""
    return [pytest.mark.realkube, pytest.mark.timeout(budget_of(default_budget) + slack)]


def fuzz_run(area: str, default_budget: float) -> FuzzRun:
    """The run of ``area`` as the environment sets it.

    ``FUZZ_SEED`` (default: random), ``FUZZ_BUDGET`` (seconds of scenarios; default
    ``default_budget``) and ``FUZZ_OUT`` (default ``/tmp/peer-fuzz``; the run writes
    into ``<FUZZ_OUT>/<area>-<seed>/``, replacing an earlier run's log and findings).
    """
    seed = int(os.environ.get("FUZZ_SEED") or random.randrange(2**31))
    budget = budget_of(default_budget)
    out = Path(os.environ.get("FUZZ_OUT") or "/tmp/peer-fuzz") / f"{area}-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    if out not in _STARTED:  # a seed run again starts afresh; a module's next test adds on
        _STARTED.add(out)
        for old in ("log.txt", "divergences.jsonl"):
            (out / old).unlink(missing_ok=True)
    run = FuzzRun(area=area, seed=seed, budget=budget, out=out)
    run.log(f"start: budget {budget:.0f} s, writing to {out}")
    return run
