"""Liveness and readiness checks, composed from named check functions.

A check returns ``None`` when healthy and a reason otherwise; the report
is kube-apiserver's: ``ok`` when every check passes, one line per check when
asked (``?verbose``) and always when one fails, naming the failed checks. The
reasons are withheld there (the probe paths need no authorization); they are
logged, and served at each check's own path to authorized callers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

log = structlog.get_logger(__name__)

Check = Callable[[], str | None]


class HealthSource(Protocol):
    """Anything that can say whether it is alive and ready."""

    @property
    def name(self) -> str:
        """Name shown in the report."""
        ...

    def liveness_failure(self) -> str | None:
        """None if alive, else why not."""
        ...

    def readiness_failure(self) -> str | None:
        """None if ready, else why not."""
        ...


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one named check; an excluded one (``?exclude=``) counts as passed."""

    name: str
    failure: str | None
    excluded: bool = False

    @property
    def ok(self) -> bool:
        """True if the check passed (or was excluded)."""
        return self.failure is None or self.excluded

    def line(self) -> str:
        """``[+]name ok``, ``[+]name excluded: ok`` or ``[-]name failed: reason withheld``
        (a probe's line: the reason is for logs and authorized callers)."""
        if self.excluded:
            return f"[+]{self.name} excluded: ok"
        return f"[+]{self.name} ok" if self.ok else f"[-]{self.name} failed: reason withheld"

    def described(self) -> str:
        """``name: reason`` (``name: ok`` when it passed), for logs."""
        return f"{self.name}: {'ok' if self.ok else self.failure}"


@dataclass(frozen=True)
class Report:
    """All check results of one probe (``kind``: livez, readyz or healthz)."""

    kind: str
    results: tuple[CheckResult, ...]
    #: the names ``?exclude=`` asked for that no check has
    unmatched: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True if every check passed."""
        return all(r.ok for r in self.results)

    def result(self, name: str) -> CheckResult | None:
        """The result of the check ``name`` (None: there is none)."""
        return next((r for r in self.results if r.name == name), None)

    def excluding(self, names: Collection[str]) -> Report:
        """This report with the checks ``names`` excluded (kube-apiserver's ``?exclude=``)."""
        results = tuple(replace(r, excluded=r.name in names) for r in self.results)
        unmatched = sorted(set(names) - {r.name for r in self.results})
        return Report(self.kind, results, tuple(unmatched))

    def render(self, *, verbose: bool = True, verdict: str = "") -> str:
        """The probe's response body: ``ok`` if passing and not ``verbose``, else the lines,
        a warning for ``unmatched`` and ``<verdict> check passed|failed`` (``verdict``:
        the kind unless given; controller-runtime says ``healthz`` for every probe)."""
        if self.ok and not verbose:
            return "ok"
        lines = [r.line() for r in self.results]
        if self.unmatched:
            names = ",".join(json.dumps(name, ensure_ascii=False) for name in self.unmatched)
            lines.append(f"warn: some health checks cannot be excluded: no matches for {names}")
        lines.append(f"{verdict or self.kind} check {'passed' if self.ok else 'failed'}")
        return "\n".join(lines) + "\n"


class HealthChecks:
    """The registry of liveness and readiness checks behind /livez and /readyz."""

    def __init__(self) -> None:
        self._liveness: dict[str, Check] = {}
        self._readiness: dict[str, Check] = {}

    def add_liveness(self, name: str, check: Check) -> None:
        """Register (or replace) a liveness check."""
        self._liveness[name] = check

    def add_readiness(self, name: str, check: Check) -> None:
        """Register (or replace) a readiness check."""
        self._readiness[name] = check

    def remove(self, name: str) -> None:
        """Unregister a check of either kind."""
        self._liveness.pop(name, None)
        self._readiness.pop(name, None)

    def add_source(
        self, source: HealthSource, *, prefix: str, gate: Callable[[], str | None] | None = None
    ) -> None:
        """Register both checks of a health source as ``<prefix> <source.name>``.

        ``gate``, when it returns a string, makes the readiness check pass with
        nothing to check (e.g. informers do not run on a standby replica).
        """
        name = f"{prefix} {source.name}"
        self.add_liveness(name, source.liveness_failure)

        def ready() -> str | None:
            if gate is not None and gate() is not None:
                return None
            return source.readiness_failure()

        self.add_readiness(name, ready)

    def livez(self) -> Report:
        """Run the liveness checks."""
        return Report("livez", self._run(self._liveness))

    def readyz(self) -> Report:
        """Run the readiness checks."""
        return Report("readyz", self._run(self._readiness))

    @staticmethod
    def _run(checks: dict[str, Check]) -> tuple[CheckResult, ...]:
        results = []
        for name, check in checks.items():
            try:
                failure = check()
            except Exception as err:
                # A broken check is a failed check, with the reason shown.
                log.exception("health check raised", check=name)
                failure = f"check raised {err!r}"
            results.append(CheckResult(name, failure))
        return tuple(results)


class LoopMonitor:
    """Measures event-loop lag with a ticking task: the 'loop' liveness check.

    If the loop is blocked outright, nothing answers the probe and it fails by
    timeout; this check catches the slower death of a loop that only lags.
    """

    def __init__(self, interval: float = 1.0, max_lag: float = 30.0) -> None:
        self.interval = interval
        self.max_lag = max_lag
        self.lag = 0.0
        self._last_tick = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start ticking (needs a running loop)."""
        if self._task is None:
            self._last_tick = asyncio.get_running_loop().time()
            self._task = asyncio.create_task(self._tick(), name="loop-monitor")

    async def stop(self) -> None:
        """Stop ticking."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def liveness_failure(self) -> str | None:
        """Fails when the ticker is more than ``max_lag`` late."""
        if self._task is None:
            return None
        if self._task.done():
            return "loop monitor stopped"
        late = asyncio.get_running_loop().time() - self._last_tick - self.interval
        lag = max(self.lag, late)
        if lag > self.max_lag:
            return f"event loop lagging {lag:.1f}s (limit {self.max_lag:.0f}s)"
        return None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            now = loop.time()
            self.lag = max(now - self._last_tick - self.interval, 0.0)
            self._last_tick = now
