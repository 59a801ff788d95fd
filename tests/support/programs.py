"""The real programs run in-process for end-to-end tests: the agent and the hub manager.

Both suites (``tests/integration`` for the agent, ``tests/hub_manager`` for
the hub) drive their program the same way: start it with its ``run_*``
coroutine on the test's event loop, wait until every controller runs, stop
it gracefully and read its exit code. :class:`InProcessProgram` is that
shape once (``async with`` runs it for the block); :class:`AgentRunner` and
:class:`ManagerRunner` say which program and what it was built into. The
test clients and the CRDs they install are here too.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

from hubcontroller.controllers.garbage_collection import CONTROLLER_NAME
from hubcontroller.manager import HubManager, build_hub_manager
from hubcontroller.settings import HubManagerSettings, default_manager_leader_election
from ocmkit.kube import NAMESPACES, KubeClient
from ocmkit.runtime import Controller, LeaderElectionSettings, Manager, object_key, run_built
from schemas.wire import GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK
from tests.conftest import eventually
from tests.support.prepare import install_crds
from tests.support.processes import REPO
from workagent.agent import Agent, build_agent
from workagent.settings import AgentSettings

CRD_DIR = REPO / "charts" / "crds"
CLUSTER = "cluster1"

Built = TypeVar("Built", Agent, HubManager)


async def open_test_client(
    kubeconfig: Path,
    *,
    user_agent: str,
    name: str,
    crds: Iterable[Path],
    namespaces: Iterable[str] = (),
) -> KubeClient:
    """An unthrottled test client, with these CRDs and namespaces created."""
    client = await KubeClient.from_kubeconfig(
        str(kubeconfig), user_agent=user_agent, qps=0, name=name
    )
    await install_crds(client, crds)
    for namespace in namespaces:
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    return client


@dataclass(kw_only=True)
class InProcessProgram(Generic[Built]):
    """A program run in-process until :meth:`stop`; ``built`` is what it was built into."""

    built: Built | None = None
    exit_code: int | None = None
    _task: asyncio.Task[int] | None = field(default=None, repr=False)

    what: ClassVar[str] = "the program"
    start_timeout: ClassVar[float | None] = None

    def _run(self, on_built: Callable[[Built], None]) -> Coroutine[Any, Any, int]:
        raise NotImplementedError

    @staticmethod
    def _manager(built: Built) -> Manager:
        return built.manager

    async def start(self) -> None:
        """Start the program and wait until every controller runs (informers synced)."""
        self.built, self.exit_code = None, None

        def on_built(built: Built) -> None:
            self.built = built

        self._task = asyncio.create_task(self._run(on_built))

        async def running() -> bool:
            if self._task is not None and self._task.done():
                raise AssertionError(f"{self.what} exited with {self._task.result()}")
            built = self.built
            return built is not None and all(c.started for c in self._manager(built).controllers)

        timeout = {} if self.start_timeout is None else {"timeout": self.start_timeout}
        await eventually(running, what=f"{self.what}'s controllers to start", **timeout)

    async def stop(self) -> int:
        """Shut the program down gracefully; returns its exit code."""
        if self._task is None:
            return self.exit_code or 0
        if self.built is not None:
            self._manager(self.built).request_stop("test done")
        self.exit_code = await asyncio.wait_for(self._task, timeout=30)
        self._task = None
        return self.exit_code

    async def restart(self) -> None:
        """Stop and start again with the same settings (a new process, in effect)."""
        await self.stop()
        await self.start()

    async def __aenter__(self) -> Self:
        """``async with``: started and ready inside, stopped on the way out."""
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


@dataclass
class AgentRunner(InProcessProgram[Agent]):
    """The real agent, run in-process with ``run_built`` until :meth:`stop`."""

    settings: AgentSettings
    what: ClassVar[str] = "the agent"

    @property
    def agent(self) -> Agent | None:
        """The built agent (None until it is built)."""
        return self.built

    @property
    def hub_hash(self) -> str:
        """The hub hash the agent computed."""
        assert self.built is not None
        return self.built.deps.hub_hash

    def _run(self, on_built: Callable[[Agent], None]) -> Coroutine[Any, Any, int]:
        settings = self.settings
        return run_built(
            lambda: build_agent(settings, handle_signals=False),
            on_built,
            terminate_on_files=settings.terminate_on_files,
        )


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
    return dataclasses.replace(settings, **overrides)


@dataclass
class ManagerRunner(InProcessProgram[HubManager]):
    """The real hub manager, run in-process with ``run_built`` until :meth:`stop`."""

    settings: HubManagerSettings
    what: ClassVar[str] = "the manager"
    start_timeout: ClassVar[float | None] = 30

    def _run(self, on_built: Callable[[HubManager], None]) -> Coroutine[Any, Any, int]:
        settings = self.settings
        return run_built(
            lambda: build_hub_manager(settings, handle_signals=False),
            on_built,
            terminate_on_files=settings.terminate_on_files,
        )

    @property
    def gc(self) -> Controller:
        """The garbage collection controller."""
        assert self.built is not None
        (controller,) = [c for c in self.built.manager.controllers if c.name == CONTROLLER_NAME]
        return controller

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
