"""The demo's clusters and processes, all in this one process and event loop.

- a hub kubesim with OCM's hub CRDs, the namespaces ``cluster1``..``cluster4``
  (one per managed cluster, as OCM's registration would create them) and the
  namespace of the ManifestWorkReplicaSet;
- one kubesim per managed cluster, with simulated workloads (Deployments
  become ready, Jobs complete) and the AppliedManifestWork CRD;
- the hub controller (``build_hub_manager``) with the ManifestWorkReplicaSet and
  CleanUpCompletedManifestWork gates on;
- the hub's CloudEvents gRPC server (``hubcontroller grpc-server``) on a
  loopback port, TLS with a self-signed certificate, agents authenticated by
  bearer token (TokenReview) and authorized by SubjectAccessReview;
- one work agent per managed cluster (``build_agent``): ``cluster1``..``cluster3``
  watch the hub API server (driver kube), ``cluster4`` gets its works over gRPC
  (driver grpc), as a Klusterlet in gRPC mode runs it.

The hub controller and the agents are the real ones, built from the same
settings objects their command lines build, talking HTTP to the emulated API
servers; only leader election is off (one replica each) and the probe
servers listen on free loopback ports.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from hubcontroller.grpcserver import GrpcServerSettings
from hubcontroller.grpcserver.server import GrpcServerService, build_grpc_server
from hubcontroller.manager import HubManager, build_hub_manager
from hubcontroller.settings import HubManagerSettings, default_manager_leader_election
from kubesim.sim import KubeSim
from ocmkit.kube import CRDS, NAMESPACES, ROLE_BINDINGS, ROLES, AlreadyExists, KubeClient
from ocmkit.runtime import Manager, run_built
from ocmkit.runtime.selfsigned import self_signed_certificate
from schemas.wire import GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK, GATE_MANIFEST_WORK_REPLICA_SET
from workagent.agent import Agent, build_agent
from workagent.settings import AgentSettings, default_leader_election

REPO = Path(__file__).resolve().parents[1]
CRD_DIR = REPO / "charts" / "crds"
CLUSTERS = ("cluster1", "cluster2", "cluster3", "cluster4")
#: Managed clusters whose agent uses the grpc driver (through the hub's gRPC server).
GRPC_CLUSTERS = frozenset({"cluster4"})
HUB_CRDS = (
    "work.open-cluster-management.io_manifestworks.yaml",
    "work.open-cluster-management.io_manifestworkreplicasets.yaml",
    "cluster.open-cluster-management.io_placements.yaml",
    "cluster.open-cluster-management.io_placementdecisions.yaml",
)
SPOKE_CRDS = ("work.open-cluster-management.io_appliedmanifestworks.yaml",)
#: How long one component may take to start.
COMPONENT_TIMEOUT = 30.0
#: How long one component may take to stop (it drains its queues first).
STOP_TIMEOUT = 15.0


class StartupError(Exception):
    """A cluster or component of the demo could not start."""


@dataclass
class Component:
    """A hub controller or agent running as a task of this event loop."""

    name: str
    task: asyncio.Task[int]
    #: The admin kubeconfig of the cluster that reviews callers of its /metrics.
    reviewer: Path
    manager: Manager | None = None

    async def wait_running(self, timeout: float = COMPONENT_TIMEOUT) -> None:
        """Wait until every controller runs (its informers have synced)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if self.task.done():
                raise StartupError(
                    f"{self.name} exited with code {self.task.result()} while starting "
                    "(its log says why)"
                )
            manager = self.manager
            if manager is not None and all(c.started for c in manager.controllers):
                return
            if loop.time() > deadline:
                raise StartupError(f"{self.name} did not start within {timeout:.0f}s")
            await asyncio.sleep(0.05)

    @property
    def metrics_url(self) -> str:
        """Where the component serves ``/metrics`` and its probes."""
        if self.manager is None:
            return "(not started)"
        url = f"{self.manager.observability.url}/metrics"
        # The agent, the hub manager and the gRPC server serve HTTPS with a self-signed
        # certificate, as in a cluster, to callers their cluster vouches for.
        if not url.startswith("https:"):
            return url
        return f"{url} (self-signed: curl -k, with the bearer token of {self.reviewer})"

    async def stop(self, timeout: float = STOP_TIMEOUT) -> str | None:
        """Ask for a graceful stop (as SIGTERM would); returns what went wrong, if anything."""
        if self.manager is not None and not self.task.done():
            self.manager.request_stop("demo finished")
        try:
            code = await asyncio.wait_for(self.task, timeout=timeout)
        except TimeoutError:
            return f"{self.name} did not stop within {timeout:.0f}s"
        except Exception as err:  # a crash is reported, the other components still stop
            return f"{self.name} crashed: {type(err).__name__}: {err}"
        return None if code == 0 else f"{self.name} exited with code {code}"


class Environment:
    """The hub, the managed clusters, the hub controller and the agents."""

    def __init__(
        self,
        workdir: Path,
        *,
        clusters: tuple[str, ...] = CLUSTERS,
        status_sync_interval: float = 2.0,
        workload_delay: float = 1.0,
    ) -> None:
        """``status_sync_interval`` is short so that Poll-mode feedback and completion
        show within seconds (the agent's default is 30s; OCM recommends at least 5s
        on real clusters). ``workload_delay`` is how long the emulated clusters take
        to make a workload ready or to run a Job."""
        self.workdir = workdir
        self.clusters = clusters
        self.status_sync_interval = status_sync_interval
        self.workload_delay = workload_delay
        self.hub: KubeSim | None = None
        self.spokes: dict[str, KubeSim] = {}
        self.spoke_clients: dict[str, KubeClient] = {}
        self.manager: Component | None = None
        self.grpc_server: Component | None = None
        self.grpc_url = ""
        self.agents: dict[str, Component] = {}
        self._hub_client: KubeClient | None = None
        self._clients: list[KubeClient] = []

    @property
    def hub_client(self) -> KubeClient:
        """The demo's own client of the hub (user agent ``ocm-demo``)."""
        if self._hub_client is None:
            raise RuntimeError("the hub is not started")
        return self._hub_client

    def kubeconfig(self, cluster: str) -> Path:
        """The admin kubeconfig of ``hub`` or of a managed cluster."""
        return self.workdir / f"{cluster}.kubeconfig"

    async def start_clusters(self, say: Callable[[str], None]) -> None:
        """Start the emulated API servers and install CRDs and namespaces."""
        self.hub = KubeSim()
        say(f"hub API server (kubesim)       {await self.hub.start()}")
        self.hub.write_kubeconfig(self.kubeconfig("hub"))
        self._hub_client = await self._client("hub")
        await _install_crds(self._hub_client, HUB_CRDS)
        for namespace in self.clusters:
            await ensure_namespace(self._hub_client, namespace)
        for cluster in self.clusters:
            sim = KubeSim(simulate_workloads=True, workload_delay=self.workload_delay)
            self.spokes[cluster] = sim
            say(f"{cluster} API server (kubesim)  {await sim.start()}")
            sim.write_kubeconfig(self.kubeconfig(cluster))
            client = await self._client(cluster)
            self.spoke_clients[cluster] = client
            await _install_crds(client, SPOKE_CRDS)
            await ensure_namespace(client, "default")

    async def start_components(self, say: Callable[[str], None]) -> None:
        """Start the hub controller, the gRPC server and one agent per cluster; wait
        until they run."""
        self.manager = self._start_manager()
        if GRPC_CLUSTERS & set(self.clusters):
            self.grpc_server = await self._start_grpc_server()
            say(f"{self.grpc_server.name} serving at {self.grpc_url}")
        for cluster in self.clusters:
            self.agents[cluster] = await self._start_agent(cluster)
        for component in [self.manager, *self.agents.values()]:
            await component.wait_running()
            say(f"{component.name} running, metrics at {component.metrics_url}")

    async def _start_grpc_server(self) -> Component:
        """The gRPC server on a free loopback port: a self-signed certificate, tokens."""
        cert, key = self_signed_certificate("grpc-server", ["127.0.0.1", "localhost"])
        (self.workdir / "grpc-tls.crt").write_bytes(cert)
        (self.workdir / "grpc-tls.key").write_bytes(key)
        config = self.workdir / "grpc-server.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "tls_cert_file": str(self.workdir / "grpc-tls.crt"),
                    "tls_key_file": str(self.workdir / "grpc-tls.key"),
                    "client_ca_file": "",  # tokens only (TokenReview)
                    "server_bind_port": "0",
                }
            )
        )
        settings = GrpcServerSettings(
            kubeconfig=str(self.kubeconfig("hub")),
            server_config=str(config),
            bind_address="127.0.0.1",
            listen="127.0.0.1:0",
            kube_api_qps=0,
        )
        manager, service = await build_grpc_server(settings, handle_signals=False)
        component = Component(
            "gRPC server", asyncio.create_task(manager.run()), self.kubeconfig("hub"), manager
        )
        await _wait_serving(component, service)
        self.grpc_url = f"127.0.0.1:{service.port}"
        return component

    def _start_manager(self) -> Component:
        settings = HubManagerSettings(
            kubeconfig=str(self.kubeconfig("hub")),
            feature_gates=frozenset(
                {GATE_MANIFEST_WORK_REPLICA_SET, GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK}
            ),
            leader_election=dataclasses.replace(default_manager_leader_election(), disabled=True),
            listen="127.0.0.1:0",
            kube_api_qps=0,
        )
        settings.validate()
        component: Component

        def built(hub: HubManager) -> None:
            component.manager = hub.manager

        task = asyncio.create_task(
            run_built(lambda: build_hub_manager(settings, handle_signals=False), built)
        )
        component = Component("hub controller", task, self.kubeconfig("hub"))
        return component

    async def _grpc_agent_config(self, cluster: str) -> Path:
        """What registration gives a gRPC agent: the server's url and CA, a token
        of ``cluster``'s agent identity, which may watch its works and write their status."""
        assert self.hub is not None
        group = f"system:open-cluster-management:{cluster}"
        token = self.hub.add_user(f"{group}:work-agent", groups=(group,))
        await grant_agent(self.hub_client, cluster, group)
        path = self.workdir / f"{cluster}-grpc.yaml"
        cert = (self.workdir / "grpc-tls.crt").read_bytes()
        path.write_text(
            yaml.safe_dump(
                {
                    "url": self.grpc_url,
                    "caData": base64.b64encode(cert).decode(),
                    "token": token,
                    "keepAliveConfig": {"enable": True, "time": "30s", "timeout": "10s"},
                }
            )
        )
        return path

    async def _start_agent(self, cluster: str) -> Component:
        grpc = cluster in GRPC_CLUSTERS
        source = str(await self._grpc_agent_config(cluster)) if grpc else ""
        settings = AgentSettings(
            cluster_name=cluster,
            hub_kubeconfig=source or str(self.kubeconfig("hub")),
            workload_source_driver="grpc" if grpc else "kube",
            cloudevents_client_id=f"{cluster}-work-agent" if grpc else "",
            cloudevents_reconnect_seconds=0.5,
            spoke_kubeconfig=str(self.kubeconfig(cluster)),
            status_sync_interval=self.status_sync_interval,
            leader_election=dataclasses.replace(default_leader_election(), disabled=True),
            listen="127.0.0.1:0",
            workers=4,
            kube_api_qps=0,
            hub_kube_api_qps=0,
        )
        settings.validate()
        component: Component

        def built(agent: Agent) -> None:
            component.manager = agent.manager

        task = asyncio.create_task(
            run_built(lambda: build_agent(settings, handle_signals=False), built)
        )
        component = Component(
            f"work agent {cluster}" + (" (over gRPC)" if grpc else ""),
            task,
            self.kubeconfig(cluster),
        )
        return component

    async def _client(self, cluster: str) -> KubeClient:
        client = await KubeClient.from_kubeconfig(
            str(self.kubeconfig(cluster)), user_agent="ocm-demo", qps=0, name=f"demo-{cluster}"
        )
        self._clients.append(client)
        return client

    async def stop(self) -> list[str]:
        """Stop the agents, then the hub controller, then the clusters; returns what
        went wrong (nothing after a clean stop)."""
        agents = list(self.agents.values())
        problems = [p for p in await asyncio.gather(*(a.stop() for a in agents)) if p]
        if self.manager is not None and (problem := await self.manager.stop()):
            problems.append(problem)
        if self.grpc_server is not None and (problem := await self.grpc_server.stop()):
            problems.append(problem)
        for client in self._clients:
            await client.close()
        for sim in [*self.spokes.values(), *([self.hub] if self.hub else [])]:
            await sim.stop()
        return problems


async def _install_crds(client: KubeClient, files: tuple[str, ...]) -> None:
    """Create the CRDs of ``charts/crds`` (kubesim serves them at once)."""
    for name in files:
        for doc in yaml.safe_load_all((CRD_DIR / name).read_text()):
            if doc:
                await client.create(CRDS, doc)


async def _wait_serving(component: Component, service: GrpcServerService) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + COMPONENT_TIMEOUT
    while service.readiness_failure() is not None:
        if component.task.done():
            raise StartupError(f"{component.name} exited with code {component.task.result()}")
        if loop.time() > deadline:
            raise StartupError(f"{component.name} did not start within {COMPONENT_TIMEOUT:.0f}s")
        await asyncio.sleep(0.05)


async def grant_agent(client: KubeClient, cluster: str, group: str) -> None:
    """The hub RBAC of a cluster's agent on the grpc driver (what registration grants):
    watch its works, write their status (in its namespace, created if missing)."""
    await ensure_namespace(client, cluster)
    rules = [
        {
            "apiGroups": ["work.open-cluster-management.io"],
            "resources": ["manifestworks"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["work.open-cluster-management.io"],
            "resources": ["manifestworks/status"],
            "verbs": ["update", "patch"],
        },
    ]
    meta = {"name": "work-agent", "namespace": cluster}
    with contextlib.suppress(AlreadyExists):
        await client.create(ROLES, {"metadata": meta, "rules": rules})
    binding = {
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "work-agent"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    }
    with contextlib.suppress(AlreadyExists):
        await client.create(ROLE_BINDINGS, binding)


async def ensure_namespace(client: KubeClient, name: str) -> None:
    """Create namespace ``name`` unless it exists."""
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"metadata": {"name": name}})
