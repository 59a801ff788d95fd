"""Controllers: workers that take keys from a work queue and reconcile them.

A reconcile is level-based: it gets only a key, reads the current state (from
informer caches) and converges; what it returns or raises decides when the key
comes back (:class:`Result`, :class:`TerminalError`; a failure is retried with
backoff, at least the error's ``retry_after``). Workers start only once the
informers the controller depends on have synced.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from ocmkit.kube import KubeError
from ocmkit.runtime import metrics
from ocmkit.runtime.logs import reconcile_context
from ocmkit.runtime.workqueue import ShutDown, WorkQueue

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Result:
    """What a successful reconcile asks for next.

    ``requeue_after``: reconcile the key again after that many seconds (the
    backoff is reset). ``requeue``: reconcile again with rate-limited backoff,
    waiting at least ``at_least`` seconds (a server's Retry-After).
    """

    requeue_after: float | None = None
    requeue: bool = False
    at_least: float = 0.0


class TerminalError(Exception):
    """A reconcile error that retrying cannot fix (bad input); the key is not requeued."""


class SyncSource(Protocol):
    """What a controller needs from an informer it depends on."""

    @property
    def name(self) -> str:
        """Name used in logs and health checks."""
        ...

    def has_synced(self) -> bool:
        """True once the cache holds the first full list."""
        ...

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Wait for :meth:`has_synced`; False on timeout."""
        ...


Reconcile = Callable[[str], Awaitable[Result | None]]


class Controller:
    """Runs ``workers`` concurrent reconciles of keys from ``queue``."""

    def __init__(
        self,
        name: str,
        queue: WorkQueue,
        reconcile: Reconcile,
        workers: int = 1,
        *,
        depends_on: Sequence[SyncSource] = (),
    ) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be >= 1, got {workers}")
        self.name = name
        self.queue = queue
        self.workers = workers
        self.depends_on = tuple(depends_on)
        self._reconcile = reconcile
        self._workers: list[asyncio.Task[None]] = []
        self._stop_requested = asyncio.Event()
        self._started = asyncio.Event()
        self._running = False
        self._log = log.bind(controller=name)
        self._m_active = metrics.ACTIVE_WORKERS.labels(controller=name)
        self._m_time = metrics.RECONCILE_TIME.labels(controller=name)
        metrics.MAX_CONCURRENT_RECONCILES.labels(controller=name).set(workers)
        self._m_active.set(0)
        # Pre-create the result series so dashboards see zeros, not gaps.
        self._m_results = {
            result: metrics.RECONCILE_TOTAL.labels(controller=name, result=result)
            for result in ("success", "error", "terminal_error", "requeue", "requeue_after")
        }
        self._m_errors = metrics.RECONCILE_ERRORS.labels(controller=name)
        self._m_terminal = metrics.RECONCILE_TERMINAL_ERRORS.labels(controller=name)

    # -- lifecycle --------------------------------------------------------------------
    async def run(self) -> None:
        """Wait for the informers to sync, then reconcile until :meth:`stop`."""
        if self._stop_requested.is_set():
            return
        if self._running:
            raise RuntimeError(f"controller {self.name} is already running")
        self._running = True
        try:
            if not await self._wait_for_informers():
                return
            self._log.info("starting workers", workers=self.workers)
            self._workers = [
                asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                for i in range(self.workers)
            ]
            self._started.set()
            await asyncio.gather(*self._workers, return_exceptions=True)
        finally:
            for task in self._workers:
                task.cancel()
            self._log.info("workers stopped")

    async def stop(self, deadline: float = 30.0) -> bool:
        """Stop taking keys and wait up to ``deadline`` seconds for running reconciles.

        Reconciles still running at the deadline are cancelled. Returns True if
        everything finished in time.
        """
        self._stop_requested.set()
        drained = True
        try:
            async with asyncio.timeout(deadline):
                await self.queue.shutdown(drain=True)
        except TimeoutError:
            drained = False
            self._log.warning(
                "drain deadline passed, cancelling reconciles",
                deadline_seconds=deadline,
                keys=sorted(self.queue.processing()),
            )
            for task in self._workers:
                task.cancel()
        if self._workers:
            await asyncio.gather(*self._workers, return_exceptions=True)
        return drained

    @property
    def started(self) -> bool:
        """True once the workers are running."""
        return self._started.is_set()

    async def wait_started(self) -> None:
        """Wait until the workers run (the informers have synced)."""
        await self._started.wait()

    # -- internals -------------------------------------------------------------------
    async def _wait_for_informers(self) -> bool:
        """True once every dependency synced; False if stop came first."""
        pending = [s for s in self.depends_on if not s.has_synced()]
        if not pending:
            return True
        self._log.info("waiting for informers to sync", informers=[s.name for s in pending])
        stopped = asyncio.ensure_future(self._stop_requested.wait())
        syncs = [asyncio.ensure_future(s.wait_synced()) for s in pending]
        try:
            waiting: set[asyncio.Future[Any]] = set(syncs)
            while waiting and not stopped.done():
                done, _ = await asyncio.wait(
                    {*waiting, stopped}, return_when=asyncio.FIRST_COMPLETED
                )
                waiting -= done
        finally:
            for fut in (*syncs, stopped):
                fut.cancel()
            # Collect the cancelled waiters so none is left unretrieved.
            await asyncio.gather(*syncs, stopped, return_exceptions=True)
        return not self._stop_requested.is_set()

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self._process(key)
            finally:
                self.queue.done(key)

    async def _process(self, key: str) -> None:
        with reconcile_context(self.name, key):
            self._m_active.inc()
            start = time.perf_counter()
            try:
                result = await self._reconcile(key)
            except asyncio.CancelledError as err:
                if _being_cancelled():
                    log.warning("reconcile cancelled")
                    raise
                # A CancelledError escaping the reconcile (e.g. from a future someone
                # else cancelled) is a failure of that reconcile, not a reason for this
                # worker to exit.
                self._fail(key, err)
            except TerminalError as err:
                self._m_results["terminal_error"].inc()
                self._m_terminal.inc()
                self._m_errors.inc()
                self.queue.forget(key)
                log.error("reconcile failed permanently, not retrying", error=str(err))
            except Exception as err:
                self._fail(key, err)
            else:
                self._record_result(key, result)
            finally:
                self._m_time.observe(time.perf_counter() - start)
                self._m_active.dec()

    def _fail(self, key: str, err: BaseException) -> None:
        """Count a failed reconcile and requeue the key with backoff."""
        self._m_results["error"].inc()
        self._m_errors.inc()
        retry_after = getattr(err, "retry_after", None)
        delay = self.queue.add_rate_limited(
            key, at_least=retry_after if isinstance(retry_after, int | float) else 0.0
        )
        log.warning(
            "reconcile failed, will retry",
            error=str(err) or type(err).__name__,
            error_type=type(err).__name__,
            retry_in_seconds=round(delay, 3),
            retries=self.queue.num_requeues(key),
            # A traceback helps, except for API errors, whose message says it all.
            exc_info=not isinstance(err, KubeError),
        )

    def _record_result(self, key: str, result: Result | None) -> None:
        if result is not None and result.requeue_after is not None:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
            self._m_results["requeue_after"].inc()
        elif result is not None and result.requeue:
            self.queue.add_rate_limited(key, at_least=result.at_least)
            self._m_results["requeue"].inc()
        else:
            self.queue.forget(key)
            self._m_results["success"].inc()


def _being_cancelled() -> bool:
    """True if the current task has a pending cancellation request."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
