"""Hub manager fixtures: a hub with the OCM CRDs, and the real manager in-process.

Everything goes through real HTTP: the manager runs ``run_manager(settings)``
in-process (or ``uv run hubcontroller manager ...`` as a subprocess) against
the hub, kubesim or a real kube-apiserver (each test runs on both). Tests observe the hub with their own client and wait on
conditions with :func:`tests.conftest.eventually`, never on time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hubcontroller.controllers.garbage_collection import CONTROLLER_NAME
from hubcontroller.manager import HubManager, ReplicaSetBuilder, run_manager
from hubcontroller.settings import (
    GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK,
    HubManagerSettings,
    default_manager_leader_election,
)
from ocmkit.kube import MANIFESTWORKS, NAMESPACES, KubeClient, NotFound
from ocmkit.runtime import Controller, object_key
from schemas.meta import format_time
from tests.conftest import eventually
from tests.support.prepare import install_crds
from tests.support.targets import Cluster

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "charts" / "crds"
CLUSTER = "cluster1"
HUB_NAMESPACE = "open-cluster-management-hub"


async def hub_test_client(kubeconfig: Path) -> KubeClient:
    """A test client (user agent ``hub-test``) with every CRD of ``charts/crds`` served and
    the namespaces installed."""
    client = await KubeClient.from_kubeconfig(
        str(kubeconfig), user_agent="hub-test", qps=0, name="test-hub"
    )
    await install_crds(client, sorted(CRD_DIR.glob("*.yaml")))
    for namespace in (CLUSTER, HUB_NAMESPACE):
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    return client


@pytest.fixture
async def hub_client(cluster: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A client of the hub (kubesim or a real apiserver; kubeconfig ``tmp_path/kubeconfig``),
    CRDs installed."""
    client = await hub_test_client(tmp_path / "kubeconfig")
    try:
        yield client
    finally:
        await client.close()


def manager_settings(kubeconfig: Path, **overrides: Any) -> HubManagerSettings:
    """Settings of a test manager: GC gate on, no Lease, probes on a free port, no QPS limit."""
    settings = HubManagerSettings(
        kubeconfig=str(kubeconfig),
        feature_gates=frozenset({GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK}),
        leader_election=dataclasses.replace(default_manager_leader_election(), disabled=True),
        listen="127.0.0.1:0",
        # No certificate to make for each test: TLS has tests of its own (test_serving_tls.py).
        insecure_serving=True,
        kube_api_qps=0,
    )
    return dataclasses.replace(settings, **overrides)


@dataclass
class ManagerRunner:
    """The real hub manager, run in-process with ``run_manager`` until :meth:`stop`."""

    settings: HubManagerSettings
    replicaset_builder: ReplicaSetBuilder | None = None
    built: HubManager | None = None
    exit_code: int | None = None
    _task: asyncio.Task[int] | None = field(default=None, repr=False)

    async def start(self) -> None:
        """Start the manager and wait until every controller runs (informers synced)."""

        def on_built(built: HubManager) -> None:
            self.built = built

        self._task = asyncio.create_task(
            run_manager(
                self.settings,
                handle_signals=False,
                on_built=on_built,
                replicaset_builder=self.replicaset_builder,
            )
        )

        async def running() -> bool:
            if self._task is not None and self._task.done():
                raise AssertionError(f"the manager exited with {self._task.result()}")
            built = self.built
            return built is not None and all(c.started for c in built.manager.controllers)

        await eventually(running, timeout=30, what="the manager's controllers to start")

    @property
    def gc(self) -> Controller:
        """The garbage collection controller."""
        assert self.built is not None
        (controller,) = [c for c in self.built.manager.controllers if c.name == CONTROLLER_NAME]
        return controller

    async def stop(self) -> int:
        """Shut the manager down gracefully; returns its exit code."""
        if self._task is None:
            return self.exit_code or 0
        if self.built is not None:
            self.built.manager.request_stop("test done")
        self.exit_code = await asyncio.wait_for(self._task, timeout=30)
        self._task = None
        return self.exit_code

    async def settled(self, work: dict[str, Any]) -> None:
        """Wait until the collector has reconciled ``work`` as written (by its resourceVersion).

        The informer holds that version, its handlers delivered every event so far
        (the key was queued), and the queue is idle: nothing ready, nothing running.
        """
        assert self.built is not None
        works = self.built.deps.works
        key = object_key(work)
        version = work["metadata"]["resourceVersion"]

        async def cached() -> bool:
            seen = works.store.get(key)
            return seen is not None and int(seen["metadata"]["resourceVersion"]) >= int(version)

        await eventually(cached, timeout=30, what=f"the cache to hold {key} at {version}")
        await works.wait_handlers_idle()
        queue = self.gc.queue

        async def idle() -> bool:
            return len(queue) == 0 and not queue.processing()

        await eventually(idle, timeout=30, what="the garbage collector's queue to be idle")


@pytest.fixture
async def manager(hub_client: KubeClient, tmp_path: Path) -> AsyncIterator[ManagerRunner]:
    """The real manager with the GC gate on, running in-process and ready."""
    runner = ManagerRunner(manager_settings(tmp_path / "kubeconfig"))
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


# -- helpers ----------------------------------------------------------------------------


def work_body(
    name: str, *, ttl: int | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A ManifestWork in ``cluster1`` with one ConfigMap, and a TTL when given."""
    spec: dict[str, Any] = {
        "workload": {
            "manifests": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"{name}-cm", "namespace": "default"},
                    "data": {"key": "value"},
                }
            ]
        }
    }
    if ttl is not None:
        spec["deleteOption"] = {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": ttl}
    metadata: dict[str, Any] = {"name": name, "namespace": CLUSTER}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": metadata,
        "spec": spec,
    }


def condition(ctype: str, status: str, at: Any) -> dict[str, Any]:
    """A work condition that turned ``status`` at ``at`` (a datetime)."""
    return {
        "type": ctype,
        "status": status,
        "reason": "Test",
        "message": f"{ctype} set by the test",
        "lastTransitionTime": format_time(at),
    }


async def write_conditions(
    client: KubeClient, name: str, *conditions: dict[str, Any]
) -> dict[str, Any]:
    """Write ``status.conditions`` of work ``name`` as an agent would (status subresource)."""
    return await client.patch(
        MANIFESTWORKS,
        name,
        {"status": {"conditions": list(conditions)}},
        CLUSTER,
        subresource="status",
    )


async def exists(client: KubeClient, name: str, namespace: str = CLUSTER) -> bool:
    """Whether work ``name`` exists."""
    try:
        await client.get(MANIFESTWORKS, name, namespace)
    except NotFound:
        return False
    return True


async def wait_deleted(client: KubeClient, name: str, namespace: str = CLUSTER) -> None:
    """Wait until work ``name`` is gone."""

    async def gone() -> bool:
        return not await exists(client, name, namespace)

    # Generous: other suites may share the machine; the wait ends as soon as it is gone.
    await eventually(gone, timeout=30, what=f"work {namespace}/{name} to be deleted")


@dataclass
class ManagerProcess:
    """``uv run hubcontroller manager ...`` as a child process."""

    process: asyncio.subprocess.Process
    log_path: Path

    async def terminate(self) -> int:
        """SIGTERM, then wait for the exit code (SIGKILL after 30 s)."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return await asyncio.wait_for(self.process.wait(), timeout=30)
            except TimeoutError:
                self.process.kill()
        return await self.process.wait()

    def log(self) -> str:
        """What the process wrote to stdout/stderr so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def hubcontroller_command(*args: str) -> list[str]:
    """``uv run hubcontroller ARGS`` (or ``python -m hubcontroller`` without uv)."""
    uv = shutil.which("uv")
    if uv:
        return [uv, "run", "--frozen", "--no-sync", "hubcontroller", *args]
    return [sys.executable, "-m", "hubcontroller", *args]


async def start_manager_process(tmp_path: Path, *args: str) -> ManagerProcess:
    """Start ``hubcontroller manager ARGS`` with its output in a log file."""
    log_path = tmp_path / "manager-process.log"
    out = log_path.open("wb")
    try:
        process = await asyncio.create_subprocess_exec(
            *hubcontroller_command("manager", *args),
            cwd=str(REPO),
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        out.close()
    return ManagerProcess(process, log_path)
