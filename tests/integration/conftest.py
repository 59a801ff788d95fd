"""Integration fixtures: a hub and a spoke, the OCM CRDs, and the real agent.

The hub and the spoke are kubesims or real control planes (the ``target``
fixture: every test runs on both unless marked ``kubesim_only``). Everything
goes through real HTTP: the agent runs ``run_agent(settings)`` in-process (or
``uv run workagent agent ...`` as a subprocess) against the two API servers. Tests observe the clusters with their own clients and
wait on conditions with :func:`tests.conftest.eventually`, never on time.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CRDS,
    MANIFESTWORKS,
    NAMESPACES,
    Conflict,
    KubeClient,
    NotFound,
)
from ocmkit.runtime import LeaderElectionSettings
from schemas.wire import MANIFEST_WORK_FINALIZER
from tests.conftest import eventually, pool_for
from tests.support.targets import Cluster, open_cluster
from workagent.agent import Agent, CollaboratorsFactory, run_agent
from workagent.identity import applied_work_name, hub_hash
from workagent.settings import AgentSettings

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "charts" / "crds"
CLUSTER = "cluster1"
HUB_CRDS = ("work.open-cluster-management.io_manifestworks.yaml",)
SPOKE_CRDS = ("work.open-cluster-management.io_appliedmanifestworks.yaml",)


async def install_crds(client: KubeClient, files: tuple[str, ...]) -> None:
    """Create the CRDs from ``charts/crds`` and wait until they are Established
    (kubesim serves them at once, a real apiserver a moment later)."""
    names = []
    for name in files:
        for doc in yaml.safe_load_all((CRD_DIR / name).read_text()):
            if doc:
                created = await client.create(CRDS, doc)
                names.append(created["metadata"]["name"])

    async def established() -> bool:
        for name in names:
            crd = await client.get(CRDS, name)
            conditions = (crd.get("status") or {}).get("conditions") or []
            if not any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            ):
                return False
        return True

    await eventually(established, what=f"CRDs {', '.join(names)} to be established")


@pytest.fixture
async def hub(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Cluster]:
    """The hub (kubesim or a real control plane); ``hub_client`` installs the CRDs."""
    async with open_cluster(target, pool_for(request, target)) as cluster:
        cluster.write_kubeconfig(tmp_path / "hub.kubeconfig")
        yield cluster


@pytest.fixture
def spoke_options() -> dict[str, Any]:
    """Keyword arguments of the spoke's :func:`open_cluster` (kubesim's options); a test
    module overrides this fixture, e.g. ``{"simulate_workloads": True}`` for Deployments
    that become available (on a real control plane too: tests/support/workloads.py)."""
    return {}


@pytest.fixture
async def spoke(
    target: str, request: pytest.FixtureRequest, tmp_path: Path, spoke_options: dict[str, Any]
) -> AsyncIterator[Cluster]:
    """The managed cluster (kubesim or a real control plane), namespace ``default``."""
    async with open_cluster(target, pool_for(request, target), **spoke_options) as cluster:
        cluster.write_kubeconfig(tmp_path / "spoke.kubeconfig")
        yield cluster


@pytest.fixture
async def hub_client(hub: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A test client of the hub (user agent ``integration-test``), CRDs installed."""
    client = await KubeClient.from_kubeconfig(
        str(tmp_path / "hub.kubeconfig"), user_agent="integration-test", qps=0, name="test-hub"
    )
    await install_crds(client, HUB_CRDS)
    await client.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def spoke_client(spoke: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A test client of the spoke (user agent ``integration-test``), CRDs installed."""
    client = await KubeClient.from_kubeconfig(
        str(tmp_path / "spoke.kubeconfig"), user_agent="integration-test", qps=0, name="test-spoke"
    )
    await install_crds(client, SPOKE_CRDS)
    try:
        yield client
    finally:
        await client.close()


@dataclass
class AgentRunner:
    """The real agent, run in-process with ``run_agent`` until :meth:`stop`."""

    settings: AgentSettings
    collaborators: CollaboratorsFactory | None = None
    agent: Agent | None = None
    exit_code: int | None = None
    _task: asyncio.Task[int] | None = field(default=None, repr=False)

    @property
    def hub_hash(self) -> str:
        """The hub hash the agent computed."""
        assert self.agent is not None
        return self.agent.deps.hub_hash

    async def start(self) -> None:
        """Start the agent and wait until every controller runs (informers synced)."""
        self.agent, self.exit_code = None, None

        def built(agent: Agent) -> None:
            self.agent = agent

        self._task = asyncio.create_task(
            run_agent(
                self.settings,
                handle_signals=False,
                on_built=built,
                collaborators=self.collaborators,
            )
        )

        async def running() -> bool:
            if self._task is not None and self._task.done():
                raise AssertionError(f"the agent exited with {self._task.result()}")
            agent = self.agent
            return agent is not None and all(c.started for c in agent.manager.controllers)

        await eventually(running, what="the agent's controllers to start")

    async def stop(self) -> int:
        """Shut the agent down gracefully; returns its exit code."""
        if self._task is None:
            return self.exit_code or 0
        if self.agent is not None:
            self.agent.manager.request_stop("test done")
        self.exit_code = await asyncio.wait_for(self._task, timeout=30)
        self._task = None
        return self.exit_code

    async def restart(self) -> None:
        """Stop and start again with the same settings (a new process, in effect)."""
        await self.stop()
        await self.start()


def agent_settings(tmp_path: Path, **overrides: Any) -> AgentSettings:
    """Settings of an agent for ``cluster1`` with the test kubeconfigs."""
    settings = AgentSettings(
        cluster_name=CLUSTER,
        hub_kubeconfig=str(tmp_path / "hub.kubeconfig"),
        spoke_kubeconfig=str(tmp_path / "spoke.kubeconfig"),
        listen="127.0.0.1:0",
        # The tests read /readyz and /metrics over plain HTTP; TLS has its own tests.
        insecure_serving=True,
        workers=4,
        leader_election=LeaderElectionSettings(disabled=True),
        kube_api_qps=0,
        hub_kube_api_qps=0,
    )
    return replace(settings, **overrides)


@pytest.fixture
async def agent(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """The real agent for ``cluster1``, running in-process and ready."""
    runner = AgentRunner(agent_settings(tmp_path))
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


# -- helpers ----------------------------------------------------------------------------


def hub_hash_of(tmp_path: Path) -> str:
    """The hub hash of the test hub kubeconfig, from its server string."""
    doc = yaml.safe_load((tmp_path / "hub.kubeconfig").read_text())
    return hub_hash(doc["clusters"][0]["cluster"]["server"])


def work_body(name: str, manifests: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A ManifestWork in ``cluster1``."""
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": {"name": name, "namespace": CLUSTER},
        "spec": {"workload": {"manifests": manifests}, **spec},
    }


#: A namespaced CRD, ``widgets.example.com/v1`` (``spec.size``: integer), for works
#: that ship a CRD with its custom resources.
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"size": {"type": "integer"}},
                            }
                        },
                    }
                },
            }
        ],
    },
}


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    """A ConfigMap manifest."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data or {"key": "value"},
    }


async def get_work(hub_client: KubeClient, name: str) -> dict[str, Any]:
    """The ManifestWork ``name`` of ``cluster1``."""
    return await hub_client.get(MANIFESTWORKS, name, CLUSTER)


async def update_work(
    hub_client: KubeClient,
    name: str,
    change: Callable[[dict[str, Any]], None],
    *,
    subresource: str | None = None,
) -> dict[str, Any]:
    """Read work ``name``, ``change`` it and write it back; returns the written object.

    The agent writes the status concurrently (the status controller as well as
    the apply loop), so a read-modify-write is retried on 409 Conflict.
    """
    for _ in range(50):
        work = await get_work(hub_client, name)
        change(work)
        try:
            return await hub_client.update(MANIFESTWORKS, work, subresource=subresource)
        except Conflict:
            continue
    raise AssertionError(f"work {name}: could not be updated (conflicts)")


def work_condition(work: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    """The work-level condition ``ctype``."""
    for cond in (work.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def manifest_statuses(work: dict[str, Any]) -> list[dict[str, Any]]:
    """``status.resourceStatus.manifests``."""
    return list(((work.get("status") or {}).get("resourceStatus") or {}).get("manifests") or [])


def manifest_condition(work: dict[str, Any], ordinal: int, ctype: str) -> dict[str, Any] | None:
    """Condition ``ctype`` of the manifest with ``ordinal``."""
    for entry in manifest_statuses(work):
        if entry["resourceMeta"].get("ordinal") == ordinal:
            for cond in entry.get("conditions") or []:
                if cond.get("type") == ctype:
                    return dict(cond)
    return None


async def wait_applied(
    hub_client: KubeClient, name: str, *, status: str = "True", generation: int | None = None
) -> dict[str, Any]:
    """Wait until the work's ``Applied`` condition has ``status`` (for ``generation``)."""
    found: dict[str, Any] = {}

    async def check() -> bool:
        work = await get_work(hub_client, name)
        cond = work_condition(work, "Applied")
        gen = generation if generation is not None else work["metadata"].get("generation")
        if cond and cond["status"] == status and cond.get("observedGeneration") == gen:
            found.update(work)
            return True
        return False

    await eventually(check, what=f"work {name} Applied={status}")
    return found


async def exists(client: KubeClient, res: Any, name: str, namespace: str | None = None) -> bool:
    """Whether the object exists."""
    try:
        await client.get(res, name, namespace)
    except NotFound:
        return False
    return True


async def get_applied_work(
    spoke_client: KubeClient, the_hash: str, work: str
) -> dict[str, Any] | None:
    """The AppliedManifestWork of ``work``, or None."""
    try:
        return await spoke_client.get(APPLIED_MANIFESTWORKS, applied_work_name(the_hash, work))
    except NotFound:
        return None


def has_cleanup_finalizer(work: dict[str, Any]) -> bool:
    """Whether the work carries the agent's cleanup finalizer."""
    return MANIFEST_WORK_FINALIZER in (work["metadata"].get("finalizers") or [])


@dataclass
class AgentProcess:
    """``uv run workagent agent ...`` as a child process."""

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
        """What the process wrote to stderr/stdout so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


async def start_agent_process(tmp_path: Path, *args: str) -> AgentProcess:
    """Start ``uv run workagent agent ARGS`` (or ``python -m workagent`` without uv)."""
    uv = shutil.which("uv")
    command = (
        [uv, "run", "--frozen", "--no-sync", "workagent", "agent", *args]
        if uv
        else [sys.executable, "-m", "workagent", "agent", *args]
    )
    log_path = tmp_path / "agent-process.log"
    out = log_path.open("wb")
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=str(REPO),
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        out.close()
    return AgentProcess(process, log_path)
