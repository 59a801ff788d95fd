"""What a soak run found: counts, convergence times, violations, memory and CPU."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from tests.soak.agent import Sample

#: Samples of a process's first minute are left out of its RSS slope: imports,
#: first lists and caches filling up are growth, but not a leak.
WARMUP_SECONDS = 60.0
#: Samples of a process's first seconds are left out of the RSS extremes: the
#: interpreter is still importing, a size no running agent has.
STARTUP_SECONDS = 10.0


@dataclass(frozen=True)
class Violation:
    """An invariant found broken: when (seconds into the soak), which check, what."""

    t: float
    check: str
    details: list[str]


@dataclass(frozen=True)
class Checkpoint:
    """The agent right after a convergence check passed."""

    t: float
    pid: int | None
    rss_kib: int | None
    works: int
    seconds_to_converge: float


@dataclass(frozen=True)
class Segment:
    """The life of one agent process, as sampled."""

    pid: int
    start: float
    end: float
    samples: int
    rss_first_kib: int
    rss_min_kib: int
    rss_max_kib: int
    rss_last_kib: int
    rss_slope_mib_per_hour: float | None
    cpu_seconds: float


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x (None with fewer than two distinct x)."""
    if len(points) < 2:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def segments(samples: list[Sample]) -> list[Segment]:
    """Samples grouped by agent process, in order of start."""
    by_pid: dict[int, list[Sample]] = {}
    for s in samples:
        by_pid.setdefault(s.pid, []).append(s)
    out = []
    for pid, group in by_pid.items():
        rss = [s.rss_kib for s in group]
        settled = [s for s in group if s.t - group[0].t >= WARMUP_SECONDS]
        per_hour = slope([(s.t / 3600, s.rss_kib / 1024) for s in settled])
        out.append(
            Segment(
                pid=pid,
                start=round(group[0].t, 1),
                end=round(group[-1].t, 1),
                samples=len(group),
                rss_first_kib=rss[0],
                rss_min_kib=min(rss),
                rss_max_kib=max(rss),
                rss_last_kib=rss[-1],
                rss_slope_mib_per_hour=None if per_hour is None else round(per_hour, 2),
                cpu_seconds=round(group[-1].cpu_seconds, 2),
            )
        )
    return sorted(out, key=lambda seg: seg.start)


def _mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.1f} MiB"


@dataclass
class Report:
    """Everything a soak run counted; :meth:`to_json` is the file written at the end."""

    seed: int
    planned_seconds: float
    started_at: str
    elapsed_seconds: float = 0.0
    rounds: int = 0
    operations: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    convergence_checks: int = 0
    continuous_checks: int = 0
    converge_seconds: list[float] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    agent_starts: int = 0
    agent_exit_code: int | None = None
    agent_log: str = ""
    #: Stopped early (SIGINT or SIGTERM): the figures cover a shorter run.
    interrupted: bool = False
    #: Every operation and fault as (seconds into the soak, what), to set beside the
    #: agent's log when a check fails.
    timeline: list[tuple[float, str]] = field(default_factory=list)

    def violate(self, t: float, check: str, details: list[str]) -> Violation:
        """Record a violation."""
        violation = Violation(round(t, 1), check, details)
        self.violations.append(violation)
        return violation

    def memory(self) -> dict[str, Any]:
        """RSS and CPU: start and end (first and last convergence), extremes (after startup), slope."""
        segs = segments(self.samples)
        first_seen: dict[int, float] = {}
        for s in self.samples:
            first_seen.setdefault(s.pid, s.t)
        rss = [s.rss_kib for s in self.samples if s.t - first_seen[s.pid] >= STARTUP_SECONDS]
        marks = [c for c in self.checkpoints if c.rss_kib is not None]
        longest = max(segs, key=lambda seg: seg.end - seg.start, default=None)
        return {
            "rss_start_kib": marks[0].rss_kib if marks else None,
            "rss_end_kib": marks[-1].rss_kib if marks else None,
            "rss_min_kib": min(rss, default=None),
            "rss_max_kib": max(rss, default=None),
            "longest_process": None if longest is None else asdict(longest),
            "rss_slope_mib_per_hour": None if longest is None else longest.rss_slope_mib_per_hour,
            "cpu_seconds": round(sum(seg.cpu_seconds for seg in segs), 2),
            "processes": [asdict(seg) for seg in segs],
        }

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (samples included, for plotting)."""
        times = self.converge_seconds
        return {
            "seed": self.seed,
            "planned_seconds": self.planned_seconds,
            "started_at": self.started_at,
            "elapsed_seconds": round(self.elapsed_seconds, 1),
            "interrupted": self.interrupted,
            "rounds": self.rounds,
            "operations": dict(sorted(self.operations.items())),
            "operations_total": sum(self.operations.values()),
            "faults": dict(sorted(self.faults.items())),
            "faults_total": sum(self.faults.values()),
            "convergence_checks": self.convergence_checks,
            "continuous_checks": self.continuous_checks,
            "converge_seconds": {
                "mean": round(statistics.fmean(times), 2) if times else None,
                "max": round(max(times), 2) if times else None,
            },
            "violations": [asdict(v) for v in self.violations],
            "agent_starts": self.agent_starts,
            "agent_exit_code": self.agent_exit_code,
            "agent_log": self.agent_log,
            "memory": self.memory(),
            "checkpoints": [asdict(c) for c in self.checkpoints],
            "timeline": [[round(t, 2), what] for t, what in self.timeline],
            "samples": [
                [round(s.t, 1), s.pid, s.rss_kib, round(s.cpu_seconds, 2)] for s in self.samples
            ],
        }

    def summary(self) -> str:
        """The final report, for people."""
        mem = self.memory()
        data = self.to_json()
        ops = ", ".join(f"{k} {n}" for k, n in data["operations"].items())
        faults = ", ".join(f"{k} {n}" for k, n in data["faults"].items())
        slope_text = mem["rss_slope_mib_per_hour"]
        lines = [
            f"soak: seed {self.seed}, {self.elapsed_seconds:.0f} s "
            f"(planned {self.planned_seconds:.0f} s{', INTERRUPTED' if self.interrupted else ''}), "
            f"{self.rounds} rounds",
            f"  operations: {data['operations_total']} ({ops})",
            f"  faults injected: {data['faults_total']} ({faults})",
            f"  convergence checks: {self.convergence_checks} "
            f"(mean {data['converge_seconds']['mean']} s, max {data['converge_seconds']['max']} s); "
            f"continuous checks: {self.continuous_checks}",
            f"  agent processes: {self.agent_starts}; final exit code {self.agent_exit_code}",
            f"  RSS: start {_mib(mem['rss_start_kib'])}, end {_mib(mem['rss_end_kib'])}, "
            f"min {_mib(mem['rss_min_kib'])}, max {_mib(mem['rss_max_kib'])}; slope of the "
            f"longest-lived process {'-' if slope_text is None else f'{slope_text} MiB/h'}",
            f"  CPU: {mem['cpu_seconds']} s (all agent processes)",
            f"  violations: {len(self.violations)}",
        ]
        for v in self.violations:
            lines.append(f"    [{v.t:.0f}s] {v.check}: {len(v.details)} problem(s)")
            lines.extend(f"      {d}" for d in v.details[:10])
        return "\n".join(lines)
