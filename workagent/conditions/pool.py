"""A small pool of CEL worker processes, driven from the event loop.

Why processes (and not a thread pool): condition-rule expressions come from
any hub user. OCM's cost limits (:mod:`workagent.conditions.celcost`) stop a
runaway, but a run to the per-call limit takes seconds of CPU in celpy, and
what costs little in cel-go's units may still be slow here. A Python thread
holding such a run would take a share of the GIL, slowing the event loop,
and can neither be interrupted nor killed. A worker process, in
contrast, is killed the moment its time is up, takes its CPU use and memory
with it, and never competes for the agent's GIL. The price is one JSON
round trip per manifest sync (~0.1 ms for a typical object) and ~40 MB and
~0.5 s of start-up per worker, paid once and again only after a kill.

How it behaves:

* at most ``size`` evaluations run at once, each in its own worker; more
  callers wait for a free worker (each is freed within the budget);
* a request carries every CEL program of one manifest; the worker streams
  results program by program. Each program has the budget (wall-clock
  seconds) and all of them together :data:`REQUEST_BUDGETS` budgets; the
  worker itself stops a program past its time, which then gets ``False`` /
  ``ConditionRuleExpressionError`` / ``CEL evaluation budget exceeded``, and
  goes on with the next, so a slow rule costs only its own outcome (and the
  programs of one manifest keep sharing OCM's cost budget);
* as a backstop for what the worker cannot stop (one long operation), a
  worker that is a further budget late with an answer is killed with SIGKILL:
  the programs not finished get that outcome (a message expression cut short
  keeps its rule's status and gets that message), and a replacement is
  started in the background so that the next caller does not wait for it;
* a worker that dies, answers out of protocol or cannot be started yields
  ``Unknown`` / ``ConditionRuleInternalError``; nothing here raises for a
  user's expression;
* a caller cancelled mid-request gets its worker killed too (its state is
  unknown); the cancellation propagates;
* outcomes are kept for the last :data:`KEPT_OUTCOMES` requests (object and
  programs): a status sync of an unchanged object evaluates nothing. Outcomes
  with an internal error (a worker that failed) are not kept, nor a budget
  exceeded when the clock may have been the cause (a loaded machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import sys
from collections import OrderedDict
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import structlog
from prometheus_client import Counter

from workagent.conditions.protocol import (
    CelProgram,
    ExpressionsOutcome,
    MessageOutcome,
    ProgramOutcome,
    ProtocolError,
    TimeLimits,
    budget_exceeded,
    decode_response,
    encode_request,
    expects_message_line,
    internal_error,
)
from workagent.conditions.reasons import (
    BUDGET_EXCEEDED_MESSAGE,
    PER_CALL_LIMIT,
    REASON_INTERNAL_ERROR,
)

log = structlog.get_logger(__name__)

#: ``work_agent_condition_rule_worker_restarts_total{reason}`` (docs/metrics.md).
WORKER_RESTARTS: Final = Counter(
    "work_agent_condition_rule_worker_restarts",
    "CEL worker processes replaced, by reason: budget (an evaluation ran past its time "
    "budget) or failure (the worker died or broke the protocol).",
    ["reason"],
)
for _reason in ("budget", "failure"):
    WORKER_RESTARTS.labels(reason=_reason)  # both series from the start, at 0

#: Wall-clock budgets one request (one manifest's rules) gets in all.
REQUEST_BUDGETS: Final = 3
#: Worker processes by default: one may be stuck on a pathological expression
#: until its budget runs out while the other serves everyone else.
DEFAULT_WORKERS: Final = 2
#: How long a worker may take to start (import celpy, build its parser).
DEFAULT_SPAWN_TIMEOUT: Final = 30.0
#: Worker address-space limit.
MEMORY_LIMIT_MB: Final = 1024
#: Requests whose outcomes are kept (least recently used dropped).
KEPT_OUTCOMES: Final = 4096
#: CPU seconds a worker may spend on one request before the kernel ends it
#: (a backstop for when the agent could not kill it; twice the longest request).
CPU_LIMIT_SECONDS: Final = 60
# Longest answer line read from a worker (messages are capped at 32 KiB).
_READ_LIMIT: Final = 1024 * 1024
# The directory that holds the ``workagent`` package, for the worker's import path.
_PACKAGE_ROOT: Final = str(Path(__file__).resolve().parents[2])


class WorkerUnavailable(Exception):
    """A worker process could not be started."""


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()

    async def write(self, data: bytes) -> None:
        stdin = self.process.stdin
        if stdin is None:  # pragma: no cover - always piped
            raise ProtocolError("worker has no stdin")
        stdin.write(data)
        await stdin.drain()

    async def read_line(self) -> bytes:
        stdout = self.process.stdout
        if stdout is None:  # pragma: no cover - always piped
            raise ProtocolError("worker has no stdout")
        line = await stdout.readline()
        if not line:
            raise ProtocolError("CEL evaluator exited unexpectedly")
        return line


class CelWorkerPool:
    """Evaluates CEL programs in worker processes with a wall-clock budget (see module doc)."""

    def __init__(
        self,
        *,
        size: int = DEFAULT_WORKERS,
        spawn_timeout: float = DEFAULT_SPAWN_TIMEOUT,
        python: str = sys.executable,
        cost_limit: int = PER_CALL_LIMIT,
    ) -> None:
        if size < 1:
            raise ValueError("a CEL worker pool needs at least one worker")
        self._size = size
        self._command = (
            python,
            # -P: no current directory on the worker's import path (we set PYTHONPATH).
            "-P",
            "-m",
            "workagent.conditions.worker",
            "--memory-limit-mb",
            str(MEMORY_LIMIT_MB),
            "--cpu-limit-seconds",
            str(CPU_LIMIT_SECONDS),
            "--cost-limit",
            str(cost_limit),
        )
        self._spawn_timeout = spawn_timeout
        self._slots = asyncio.Semaphore(size)
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        self._busy = 0
        self._starting = 0
        # Replacement workers being started, and killed workers being reaped.
        self._refills: set[asyncio.Task[Any]] = set()
        self._reaps: set[asyncio.Task[Any]] = set()
        self._closed = False
        #: Workers killed because their budget ran out (for tests and metrics).
        self.kills = 0
        # Outcomes by request digest, least recently used first.
        self._kept: OrderedDict[bytes, list[ProgramOutcome]] = OrderedDict()

    @property
    def size(self) -> int:
        """Evaluations that can run at once."""
        return self._size

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the workers started and not yet stopped (for diagnostics)."""
        return sorted(worker.pid for worker in self._live)

    async def start(self) -> None:
        """Start every worker now instead of on first use."""
        missing = self._size - len(self._idle) - self._busy - self._starting
        await asyncio.gather(*(self._refill() for _ in range(max(0, missing))))

    async def aclose(self) -> None:
        """Stop all workers; evaluations still running get killed when they end."""
        self._closed = True
        for task in self._refills:
            task.cancel()
        # Reaps are not cancelled: they end as soon as the killed process has.
        pending = [*self._refills, *self._reaps]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        idle, self._idle = self._idle, []
        await asyncio.gather(*(self._stop(worker) for worker in idle))

    async def evaluate(
        self, obj: Mapping[str, Any], programs: Sequence[CelProgram], *, budget: float
    ) -> list[ProgramOutcome]:
        """One outcome per program, each within ``budget`` seconds of evaluation time."""
        if not programs:
            return []
        try:
            limits = TimeLimits(budget, budget * min(len(programs), REQUEST_BUDGETS))
            payload = encode_request(obj, programs, limits)
        except (TypeError, ValueError, RecursionError) as exc:
            return _all_failed(programs, f"the object cannot be sent for CEL evaluation: {exc}")
        # CEL is deterministic: the same object and programs have the same outcomes.
        key = hashlib.blake2b(payload, digest_size=16).digest()
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            return kept
        if self._closed:
            return _all_failed(programs, "CEL evaluator is shut down")
        loop = asyncio.get_running_loop()
        started = loop.time()
        outcomes = await self._evaluate(payload, programs, limits)
        if _keepable(outcomes, timed=loop.time() - started >= limits.program):
            self._kept[key] = outcomes
            if len(self._kept) > KEPT_OUTCOMES:
                self._kept.popitem(last=False)
        return outcomes

    async def _evaluate(
        self, payload: bytes, programs: Sequence[CelProgram], limits: TimeLimits
    ) -> list[ProgramOutcome]:
        async with self._slots:
            try:
                worker = await self._take()
            except WorkerUnavailable as exc:
                return _all_failed(programs, f"CEL evaluator unavailable: {exc}")
            self._busy += 1
            healthy = False
            try:
                outcomes, healthy = await self._exchange(worker, payload, programs, limits)
            finally:
                self._busy -= 1
                if healthy and not self._closed and len(self._idle) < self._size:
                    self._idle.append(worker)
                else:
                    self._discard(worker)
            return outcomes

    async def _exchange(
        self, worker: _Worker, payload: bytes, programs: Sequence[CelProgram], limits: TimeLimits
    ) -> tuple[list[ProgramOutcome], bool]:
        """Send one request and collect the answers; (outcomes, whether the worker is reusable)."""
        outcomes: list[ProgramOutcome] = []
        pending: ExpressionsOutcome | None = None
        loop = asyncio.get_running_loop()
        # The worker keeps to the limits itself; it is killed only when it is a
        # further program's time late (a slow machine must not cost a restart).
        grace = max(0.0, limits.program)
        request_end = loop.time() + limits.request + grace
        try:
            async with asyncio.timeout_at(min(loop.time() + 2 * grace, request_end)):
                await worker.write(payload)
            while len(outcomes) < len(programs):
                index = len(outcomes)
                async with asyncio.timeout_at(min(loop.time() + 2 * grace, request_end)):
                    line = await worker.read_line()
                answer = decode_response(line, index)
                if pending is None:
                    if not isinstance(answer, ExpressionsOutcome):
                        raise ProtocolError("worker sent a message before its status")
                    if expects_message_line(programs[index], answer):
                        pending = answer
                    else:
                        outcomes.append(ProgramOutcome(answer))
                else:
                    if not isinstance(answer, MessageOutcome):
                        raise ProtocolError("worker sent a status instead of a message")
                    outcomes.append(ProgramOutcome(pending, answer))
                    pending = None
            return outcomes, True
        except TimeoutError:
            self.kills += 1
            WORKER_RESTARTS.labels(reason="budget").inc()
            log.warning(
                "CEL evaluation over budget; restarting its worker",
                budget_seconds=limits.program,
                programs=len(programs),
                finished=len(outcomes),
                pid=worker.pid,
            )
            return _complete(outcomes, pending, programs, budget_exceeded()), False
        except (ProtocolError, ConnectionError, OSError) as exc:
            WORKER_RESTARTS.labels(reason="failure").inc()
            log.warning("CEL worker failed; restarting it", error=str(exc), pid=worker.pid)
            return _complete(outcomes, pending, programs, internal_error(str(exc))), False
        except Exception as exc:  # a bug here must not fail the status sync
            WORKER_RESTARTS.labels(reason="failure").inc()
            log.exception("CEL worker exchange failed; restarting the worker", pid=worker.pid)
            message = f"CEL evaluator failed: {type(exc).__name__}: {exc}"
            return _complete(outcomes, pending, programs, internal_error(message)), False

    async def _take(self) -> _Worker:
        while True:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                self._discard(worker)
            # A replacement on its way is as quick as a new worker and costs
            # no extra process: wait for it rather than start another.
            refills = [task for task in self._refills if not task.done()]
            if not refills:
                return await self._spawn()
            await asyncio.wait(refills, return_when=asyncio.FIRST_COMPLETED)

    async def _spawn(self) -> _Worker:
        env = dict(os.environ)
        # The worker must import this very package, however the agent was started.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p
        )
        self._starting += 1
        try:
            try:
                process = await asyncio.create_subprocess_exec(
                    *self._command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    env=env,
                    limit=_READ_LIMIT,
                )
            except OSError as exc:
                raise WorkerUnavailable(str(exc)) from exc
            worker = _Worker(process)
            try:
                async with asyncio.timeout(self._spawn_timeout):
                    _check_greeting(await worker.read_line())
            except (TimeoutError, ProtocolError, OSError) as exc:
                # No replacement here: a worker that cannot start would loop.
                self._kill(worker)
                raise WorkerUnavailable(str(exc) or "worker did not start in time") from exc
            except BaseException:
                self._kill(worker)
                raise
            self._live.add(worker)
            return worker
        finally:
            self._starting -= 1

    async def _refill(self) -> None:
        """Start one worker and keep it idle, if the pool still wants one."""
        if self._closed or len(self._idle) + self._busy + self._starting >= self._size:
            return
        try:
            worker = await self._spawn()
        except WorkerUnavailable as exc:
            log.warning("cannot start a CEL worker", error=str(exc))
            return
        if self._closed or len(self._idle) + self._busy >= self._size:
            await self._stop(worker)
            return
        self._idle.append(worker)

    def _discard(self, worker: _Worker) -> None:
        """Kill a worker whose state is unknown and start a replacement."""
        self._kill(worker)
        if not self._closed:
            self._background(self._refill(), self._refills)

    def _kill(self, worker: _Worker) -> None:
        self._live.discard(worker)
        worker.kill()
        self._background(_reap(worker), self._reaps)

    async def _stop(self, worker: _Worker) -> None:
        """Let an idle worker exit on end of input; kill it if it does not."""
        self._live.discard(worker)
        stdin = worker.process.stdin
        if stdin is not None:
            stdin.close()
        try:
            async with asyncio.timeout(2.0):
                await worker.process.wait()
        except TimeoutError:
            worker.kill()
            await _reap(worker)

    @staticmethod
    def _background(work: Coroutine[Any, Any, Any], tasks: set[asyncio.Task[Any]]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)


async def _reap(worker: _Worker) -> None:
    """Collect a killed worker's exit status (bounded: a leaked pipe must not hang shutdown)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(5.0):
            await worker.process.wait()


def _check_greeting(line: bytes) -> None:
    try:
        hello = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"unexpected greeting {line[:100]!r}") from exc
    if not isinstance(hello, dict) or hello.get("ready") is not True:
        raise ProtocolError(f"unexpected greeting {line[:100]!r}")


def _keepable(outcomes: Sequence[ProgramOutcome], *, timed: bool) -> bool:
    """Whether the outcomes depend on the object and programs alone.

    Not when the evaluator failed, nor when a program ran out of budget in a
    request that lasted a program's wall-clock budget: that may be the clock
    (a loaded machine), which must not decide every later sync of the object.
    """
    for outcome in outcomes:
        if outcome.expressions.reason == REASON_INTERNAL_ERROR:
            return False
        errors = (outcome.expressions.error, outcome.message and outcome.message.error)
        if timed and any(BUDGET_EXCEEDED_MESSAGE in (e or "") for e in errors):
            return False
    return True


def _all_failed(programs: Sequence[CelProgram], message: str) -> list[ProgramOutcome]:
    return [ProgramOutcome(internal_error(message)) for _ in programs]


def _complete(
    outcomes: list[ProgramOutcome],
    pending: ExpressionsOutcome | None,
    programs: Sequence[CelProgram],
    rest: ExpressionsOutcome,
) -> list[ProgramOutcome]:
    """Fill in the programs a cut-short request did not finish."""
    done = list(outcomes)
    if pending is not None:
        # The status is known; only its message expression was cut short.
        done.append(
            ProgramOutcome(pending, MessageOutcome(error=rest.error or BUDGET_EXCEEDED_MESSAGE))
        )
    done.extend(ProgramOutcome(rest) for _ in range(len(done), len(programs)))
    return done
