"""The two targets the end-to-end suites run against: kubesim and a real control plane.

A test that requests the ``target`` fixture (directly or through ``hub``,
``spoke``, ``cluster``...) runs twice, ``[kubesim]`` and ``[real]``; the real
instance carries the ``realkube`` mark, so ``-m realkube`` / ``-m "not
realkube"`` select one leg. ``@pytest.mark.kubesim_only("why")`` keeps a test
on kubesim (fault injection, the request journal, emulator internals).

Every real test gets fresh API servers of its own, so tests stay as
independent as on kubesim without renaming anything: one etcd serves the
whole run, each apiserver uses its own etcd prefix, and a pool starts the
next test's servers while the current test runs (about 2.3 s each on two
cores, mostly hidden; they share the first one's serving certificate and run
with :data:`~tests.support.controlplane.SHORT_LIVED_GO`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from kubesim.sim import KubeSim
from ocmkit.kube import KubeClient
from tests.support.controlplane import ControlPlane, Etcd
from tests.support.workloads import USER_AGENT as WORKLOADS_USER_AGENT
from tests.support.workloads import ClusterWorkloads

KUBESIM = "kubesim"
REAL = "real"


class Cluster(Protocol):
    """What the suites use of a cluster, kubesim's or a real one."""

    @property
    def url(self) -> str:
        """The API server's base URL."""

    @property
    def admin_token(self) -> str:
        """A bearer token of a cluster admin."""

    def kubeconfig(self, *, token: str | None = None, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig dict (the admin's token unless another is given)."""

    def write_kubeconfig(self, path: str | os.PathLike[str], *, token: str | None = None) -> Path:
        """Write a kubeconfig file; returns its path."""


class PlanePool:
    """Hands out fresh control planes over one etcd, starting the next ones ahead.

    Planes are started and stopped on the pool's own long-lived threads: each
    process's parent-death signal follows the thread that spawned it.
    """

    def __init__(self, etcd: Etcd, *, ahead: int = 2) -> None:
        self.etcd = etcd
        self.ahead = ahead
        self._names = itertools.count(1)
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="realkube")
        self._ready: deque[Future[ControlPlane]] = deque()
        self._live: set[ControlPlane] = set()
        self._lock = threading.Lock()
        self._pki: Path | None = None
        self.started = 0

    def _start_one(self) -> ControlPlane:
        plane = ControlPlane(f"kube{next(self._names)}", self.etcd, pki=self._pki)
        with self._lock:
            self._live.add(plane)
        try:
            plane.start()
        except BaseException:
            self._stop_one(plane)
            raise
        with self._lock:
            if self._pki is None:
                # Later planes reuse the first one's serving certificate (kept
                # beside etcd's data, which lives as long as the pool).
                self._pki = Path(shutil.copytree(plane.cert_dir, self.etcd.dir / "pki"))
        return plane

    def _stop_one(self, plane: ControlPlane) -> None:
        plane.stop(kill=True)
        with self._lock:
            self._live.discard(plane)

    def take(self) -> ControlPlane:
        """A started control plane no test has used (blocks until one is ready)."""
        future = self._ready.popleft() if self._ready else self._executor.submit(self._start_one)
        while len(self._ready) < self.ahead:
            self._ready.append(self._executor.submit(self._start_one))
        plane = future.result()
        self.started += 1
        return plane

    def release(self, plane: ControlPlane) -> None:
        """Throw a used control plane away (in the background)."""
        self._executor.submit(self._stop_one, plane)

    def close(self) -> None:
        """Stop every plane, started or starting, and the etcd."""
        for future in self._ready:
            future.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            live = list(self._live)
        for plane in live:
            self._stop_one(plane)
        self.etcd.stop()


@contextlib.contextmanager
def plane_pool() -> Iterator[PlanePool]:
    """A :class:`PlanePool` for a test session, torn down even on SIGTERM or Ctrl-C."""
    etcd = Etcd()
    etcd.start()
    pool = PlanePool(etcd)

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield pool
    finally:
        signal.signal(signal.SIGTERM, previous)
        pool.close()


@contextlib.asynccontextmanager
async def open_cluster(
    target: str, pool: PlanePool | None, **kubesim_options: Any
) -> AsyncIterator[Cluster]:
    """A running cluster of ``target``, stopped on exit.

    kubesim gets ``kubesim_options``. A real cluster has no kubelet, scheduler
    or workload controllers (see :data:`tests.support.controlplane.CONTROLLERS`):
    with ``simulate_workloads=True`` a :class:`~tests.support.workloads.ClusterWorkloads`
    writes workload status through its API as kubesim would (``workload_delay``
    as on kubesim); the other kubesim options mean nothing there and are ignored.
    """
    if target == KUBESIM:
        sim = KubeSim(**kubesim_options)
        await sim.start()
        try:
            yield sim
        finally:
            await sim.stop()
        return
    if pool is None:
        raise ValueError("a real cluster needs the control-plane pool")
    plane = await asyncio.to_thread(pool.take)
    try:
        if kubesim_options.get("simulate_workloads"):
            delay = float(kubesim_options.get("workload_delay", 0.2))
            async with simulated_workloads(plane, delay=delay):
                yield plane
        else:
            yield plane
    finally:
        pool.release(plane)


@contextlib.asynccontextmanager
async def simulated_workloads(plane: ControlPlane, *, delay: float) -> AsyncIterator[None]:
    """Workload status written to ``plane`` (as the admin) until the block ends."""
    path = plane.write_kubeconfig(plane.dir / "workload-simulator.kubeconfig")
    client = await KubeClient.from_kubeconfig(
        str(path), qps=0, user_agent=WORKLOADS_USER_AGENT, name="workload-simulator"
    )
    workloads = ClusterWorkloads(client, delay=delay)
    try:
        await workloads.start()
        yield
    finally:
        await workloads.stop()
        await client.close()
