"""Fixtures for the CloudEvents drivers: our hub gRPC server over TLS, and agents using it.

The hub and the managed cluster are the integration suite's kubesims; the
gRPC server (``hubcontroller grpc-server``'s code) runs in-process on a free
loopback port, backed by the hub; the agent runs in-process (``AgentRunner``) with
``--workload-source-driver=grpc`` and a config file naming that port, with a
client certificate of cluster1's agent (CN and O as OCM's registration issues).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from demo.environment import grant_agent
from hubcontroller.grpcserver import GrpcServerSettings
from hubcontroller.grpcserver.server import GrpcServerService, build_grpc_server
from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS, KubeClient
from ocmkit.runtime import Manager
from tests.cloudevents.pki import CertificateAuthority, Pair
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    get_work,
    has_cleanup_finalizer,
    hub,
    hub_client,
    manifest_condition,
    manifest_statuses,
    spoke,
    spoke_client,
    spoke_options,
    update_work,
    wait_applied,
    wait_gone,
    work_body,
    work_condition,
)
from tests.kube.helpers import sample
from tests.support.programs import CLUSTER, AgentRunner, agent_settings
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.settings import AgentSettings

__all__ = ["grant_agent", "hub", "hub_client", "spoke", "spoke_client", "spoke_options"]

CLIENT_ID = f"{CLUSTER}-work-agent"
AGENT_USER = f"system:open-cluster-management:{CLUSTER}:agent1"
AGENT_GROUP = f"system:open-cluster-management:{CLUSTER}"


@dataclass
class Pki:
    """The CA, the server's certificate and cluster1's agent certificate."""

    ca: CertificateAuthority
    server: Pair
    agent: Pair


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    """A fresh CA with a serving certificate for 127.0.0.1 and an agent client certificate."""
    ca = CertificateAuthority(tmp_path / "pki")
    return Pki(
        ca=ca,
        server=ca.issue("server", common_name="grpc-server", server=True),
        agent=ca.issue(
            "agent",
            common_name=AGENT_USER,
            organizations=(AGENT_GROUP, "system:open-cluster-management:managed-clusters"),
        ),
    )


@dataclass
class GrpcHub:
    """Our gRPC server, run in-process; restartable on the same port."""

    settings: GrpcServerSettings
    config_path: Path
    config: dict[str, Any]
    manager: Manager | None = None
    service: GrpcServerService | None = None
    port: int = 0
    _task: asyncio.Task[int] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """``host:port`` as an agent config's ``url``."""
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Serve (on the previous port after a restart)."""
        self.config["server_bind_port"] = str(self.port)
        self.config_path.write_text(yaml.safe_dump(self.config))
        self.manager, self.service = await build_grpc_server(self.settings, handle_signals=False)
        self._task = asyncio.create_task(self.manager.run())
        service = self.service

        async def serving() -> bool:
            if self._task is not None and self._task.done():
                raise AssertionError(f"the gRPC server exited with {self._task.result()}")
            return service.readiness_failure() is None

        await eventually(serving, what="the gRPC server to serve")
        self.port = service.port

    async def stop(self) -> None:
        """Stop serving (the agents' streams end)."""
        if self.manager is not None and self._task is not None:
            self.manager.request_stop("test")
            await asyncio.wait_for(self._task, timeout=30)
        self._task = None

    async def restart(self) -> None:
        """Stop, then serve again on the same port."""
        await self.stop()
        await self.start()


def server_config(pki: Pki, *, client_ca: bool = True) -> dict[str, Any]:
    """OCM's server config keys (snake_case)."""
    config: dict[str, Any] = {
        "tls_cert_file": str(pki.server.cert),
        "tls_key_file": str(pki.server.key),
        "client_ca_file": str(pki.ca.ca_file) if client_ca else "",
        "server_bind_port": "0",
    }
    return config


@pytest.fixture
async def grpc_hub(
    hub: KubeSim, hub_client: KubeClient, pki: Pki, tmp_path: Path
) -> AsyncIterator[GrpcHub]:
    """Our gRPC server on a free loopback port, mTLS, backed by the hub kubesim."""
    await grant_agent(hub_client, CLUSTER, AGENT_GROUP)
    settings = GrpcServerSettings(
        kubeconfig=str(tmp_path / "hub.kubeconfig"),
        server_config=str(tmp_path / "grpc-server.yaml"),
        bind_address="127.0.0.1",
        listen="127.0.0.1:0",
        insecure_serving=True,
        kube_api_qps=0,
    )
    server = GrpcHub(settings, tmp_path / "grpc-server.yaml", server_config(pki))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def write_agent_config(path: Path, url: str, pki: Pki, **extra: Any) -> Path:
    """The agent's ``--workload-source-config`` as registration writes it."""
    doc: dict[str, Any] = {
        "url": url,
        "caFile": str(pki.ca.ca_file),
        "clientCertFile": str(pki.agent.cert),
        "clientKeyFile": str(pki.agent.key),
        "keepAliveConfig": {"enable": True, "time": "30s", "timeout": "10s"},
        **extra,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def klusterlet_args(driver: str, config: Path, tmp_path: Path) -> list[str]:
    """The agent's arguments as the Klusterlet passes them for a CloudEvents driver,
    plus what a test on one machine needs (spoke kubeconfig, one replica, loopback)."""
    return [
        f"--spoke-cluster-name={CLUSTER}",
        f"--workload-source-driver={driver}",
        f"--workload-source-config={config}",
        f"--cloudevents-client-id={CLIENT_ID}",
        f"--spoke-kubeconfig={tmp_path / 'spoke.kubeconfig'}",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
        "--insecure-serving",
    ]


def grpc_agent_settings(tmp_path: Path, config: Path, **overrides: Any) -> Any:
    """Settings of cluster1's agent on the grpc driver (fast reconnects for tests)."""
    return replace(
        agent_settings(tmp_path),
        workload_source_driver="grpc",
        hub_kubeconfig=str(config),
        cloudevents_client_id=CLIENT_ID,
        cloudevents_reconnect_seconds=0.2,
        **overrides,
    )


@pytest.fixture
def agent_config(grpc_hub: GrpcHub, pki: Pki, tmp_path: Path) -> Path:
    """cluster1's agent config for our server, with the agent certificate."""
    return write_agent_config(tmp_path / "agent-grpc.yaml", grpc_hub.url, pki)


@contextlib.asynccontextmanager
async def subscribed_agent(settings: AgentSettings) -> AsyncIterator[AgentRunner]:
    """The agent with these settings (a CloudEvents driver), started and subscribed;
    stopped on the way out."""
    async with AgentRunner(settings) as runner:
        await wait_subscribed(runner)
        yield runner


@pytest.fixture
async def grpc_agent(
    agent_config: Path, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """cluster1's agent on the grpc driver, subscribed to our server."""
    async with subscribed_agent(grpc_agent_settings(tmp_path, agent_config)) as runner:
        yield runner


async def wait_subscribed(runner: AgentRunner, *, at_least: int = 1) -> None:
    """Wait until the agent's CloudEvents source has subscribed ``at_least`` times."""

    async def subscribed() -> bool:
        agent = runner.agent
        if agent is None:
            return False
        service = agent.manager.services[0]
        return bool(getattr(service, "subscribed", False)) and (
            int(getattr(service, "subscriptions", 0)) >= at_least
        )

    await eventually(subscribed, what="the agent to subscribe")


async def restart_until_passed(
    runner: AgentRunner, spoke: Cluster, labels: dict[str, str], *, what: str
) -> RequestRecord:
    """Stop the agent, start it again and wait until it subscribed and a reconcile
    counted with ``labels`` (``controller``, ``result``) followed; returns the record
    of the spoke's requests from the stop on."""
    await runner.stop()
    requests = RequestRecord(spoke)
    before = sample("controller_runtime_reconcile_total", labels)
    await runner.start()
    await wait_subscribed(runner)

    async def passed() -> bool:
        return sample("controller_runtime_reconcile_total", labels) > before

    await eventually(passed, what=what)
    return requests


def feedback_config(name: str) -> dict[str, Any]:
    """A JSONPaths feedback rule on ``.data.key`` and a CEL condition rule (Ready when v2)."""
    return {
        "resourceIdentifier": {"resource": "configmaps", "name": name, "namespace": "default"},
        "feedbackRules": [
            {"type": "JSONPaths", "jsonPaths": [{"name": "key", "path": ".data.key"}]}
        ],
        "conditionRules": [
            {"type": "CEL", "condition": "Ready", "celExpressions": ["object.data.key == 'v2'"]}
        ],
    }


async def wait_feedback(
    hub_client: KubeClient, value: str, ready: str, *, alive: Callable[[], None] | None = None
) -> None:
    """Until work1's ConfigMap (``feedback_config``) reports ``key`` = ``value`` and its
    manifest condition Ready = ``ready`` on the hub; ``alive`` raises if a peer died."""

    async def reported() -> bool:
        if alive is not None:
            alive()
        work = await get_work(hub_client, "work1")
        cond = manifest_condition(work, 0, "Ready")
        entries = manifest_statuses(work)
        values = (entries[0].get("statusFeedback") or {}).get("values") if entries else None
        return (
            values == [{"name": "key", "fieldValue": {"type": "String", "string": value}}]
            and cond is not None
            and cond["status"] == ready
        )

    await eventually(reported, what=f"feedback {value}, Ready={ready} on the hub")


async def apply_with_feedback(
    hub_client: KubeClient, spoke_client: KubeClient, *, alive: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Work ``work1`` (ConfigMap cm1 with :func:`feedback_config`) through two versions:
    applied with the finalizer the hub side adds with the first status, cm1 at v1, its
    feedback v1 with Ready=False; then v2 applied and fed back with Ready=True. Returns
    the work at v2 with both conditions aggregated (``alive`` as in :func:`wait_feedback`)."""
    await hub_client.create(
        MANIFESTWORKS,
        work_body("work1", [configmap("cm1", key="v1")], manifestConfigs=[feedback_config("cm1")]),
    )
    work = await wait_applied(hub_client, "work1")
    assert has_cleanup_finalizer(work)
    assert (await spoke_client.get(CONFIGMAPS, "cm1", "default"))["data"] == {"key": "v1"}
    await wait_feedback(hub_client, "v1", "False", alive=alive)
    await update_work(hub_client, "work1", set_configmap("cm1", "v2"))
    await wait_applied(hub_client, "work1", generation=2)
    await wait_feedback(hub_client, "v2", "True", alive=alive)
    work = await get_work(hub_client, "work1")
    ready = work_condition(work, "Ready")
    assert ready is not None and ready["reason"] == "ConditionRulesAggregated"
    available = work_condition(work, "Available")
    assert available is not None and available["status"] == "True"
    return work


async def change_while_down(
    runner: AgentRunner,
    hub_client: KubeClient,
    spoke_client: KubeClient,
    value: str,
    generation: int,
) -> None:
    """Stop the agent, set work1's cm1 to ``value`` meanwhile, start it again: its resync
    brings ``generation`` of the work to the spoke."""
    await runner.stop()
    await update_work(hub_client, "work1", set_configmap("cm1", value))
    await runner.start()
    await wait_subscribed(runner)
    await wait_applied(hub_client, "work1", generation=generation)
    await wait_configmap(spoke_client, "cm1", value, what="cm1 updated after the agent restart")


async def delete_work1(hub_client: KubeClient, spoke_client: KubeClient) -> None:
    """Delete ``work1``: cm1 leaves the spoke, then the work the hub (the server removes
    the hub finalizer once the agent reports Deleted=True)."""
    await hub_client.delete(MANIFESTWORKS, "work1", CLUSTER)
    await wait_gone(spoke_client, CONFIGMAPS, "cm1", "default")
    await wait_gone(hub_client, MANIFESTWORKS, "work1", CLUSTER)


def set_configmap(name: str, value: str) -> Callable[[dict[str, Any]], None]:
    """A change for ``update_work``: the work's one manifest becomes ConfigMap ``name``
    with ``key: value``."""

    def change(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [configmap(name, key=value)]

    return change


async def wait_configmap(spoke_client: KubeClient, name: str, value: str, *, what: str) -> None:
    """Until ConfigMap ``name`` in ``default`` on the spoke has ``key: value`` (only)."""

    async def converged() -> bool:
        cm = await spoke_client.get(CONFIGMAPS, name, "default")
        return bool(cm["data"] == {"key": value})

    await eventually(converged, what=what)


async def wait_store_empty(runner: AgentRunner) -> None:
    """Until the agent's local CloudEvents store holds no work (the agent forgot them)."""

    async def forgotten() -> bool:
        assert runner.agent is not None
        store: Any = runner.agent.deps.hub
        return list(store.works()) == []

    await eventually(forgotten, what="the agent's local store to be empty")
