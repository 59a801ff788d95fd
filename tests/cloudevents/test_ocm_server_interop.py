"""Our agent against OCM's own Go gRPC server (``server grpc``, OCM v1.2.1).

Real control planes on both sides: the hub has the ManifestWork CRD and is
what OCM's server lists, watches and patches (its admin kubeconfig); the
managed cluster has the AppliedManifestWork CRD. Our agent runs with the
grpc driver and a client certificate as registration issues it (CN the agent
user, O the cluster's group), which OCM's server authenticates (mTLS) and
authorizes with SubjectAccessReviews against the hub (the Role
``grant_agent`` creates). Everything the test sees travels through OCM's
server: spec events to our agent, status events back to the hub work.

Runs in the real leg only (the server needs a real API server's RBAC,
SubjectAccessReview and watch semantics); ``make ocm`` builds the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS, KubeClient
from tests.cloudevents.conftest import (
    AGENT_GROUP,
    Pki,
    apply_with_feedback,
    change_while_down,
    delete_work1,
    grant_agent,
    grpc_agent_settings,
    subscribed_agent,
    wait_store_empty,
    wait_subscribed,
    write_agent_config,
)
from tests.integration.conftest import (
    configmap,
    exists,
    forget_work,
    wait_applied,
    wait_gone,
    work_body,
)
from tests.support.ocmpeer import Peer, RestartablePeer, hub, spoke, start_ocm_server
from tests.support.programs import CLUSTER, AgentRunner
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster

pytestmark = pytest.mark.realkube
__all__ = ["hub", "spoke"]


@dataclass
class OcmServer(RestartablePeer):
    """OCM's gRPC server process in front of the hub; restartable on the same port (its
    graceful stop holds open streams for seconds: ``stop(kill=True)`` crashes it)."""

    folder: Path
    hub_kubeconfig: Path
    pki: Pki
    peer: Peer | None = None
    port: int = 0

    async def start(self) -> None:
        """Serve (on the previous port after a restart)."""
        self.peer, self.port = await start_ocm_server(
            self.folder,
            hub_kubeconfig=self.hub_kubeconfig,
            cert=self.pki.server.cert,
            key=self.pki.server.key,
            client_ca=self.pki.ca.ca_file,
            port=self.port,
        )


@pytest.fixture
async def ocm_server(hub_client: KubeClient, pki: Pki, tmp_path: Path) -> AsyncIterator[OcmServer]:
    """OCM's gRPC server in front of the hub, serving mTLS with the test CA."""
    await grant_agent(hub_client, CLUSTER, AGENT_GROUP)
    server = OcmServer(tmp_path / "ocm", tmp_path / "hub.kubeconfig", pki)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_our_agent_through_ocm_server(
    ocm_server: OcmServer,
    hub_client: KubeClient,
    spoke_client: KubeClient,
    spoke: Cluster,
    pki: Pki,
    tmp_path: Path,
) -> None:
    requests = RequestRecord(spoke)
    config = write_agent_config(tmp_path / "agent-grpc.yaml", f"127.0.0.1:{ocm_server.port}", pki)
    async with subscribed_agent(grpc_agent_settings(tmp_path, config)) as runner:
        await _scenario(runner, ocm_server, hub_client, spoke_client)
    # One create per ConfigMap in the whole test: the restarted agent updated cm1 in place.
    assert requests.count("create", "configmaps", 201) == 2, requests.requests()


async def _scenario(
    runner: AgentRunner, server: OcmServer, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    await hub_client.create(MANIFESTWORKS, work_body("work2", [configmap("cm2")]))
    # OCM's server adds the hub finalizer with the first status.
    await apply_with_feedback(hub_client, spoke_client, alive=server.check_alive)

    # Agent restart: a change made while it is down arrives through the resync.
    await change_while_down(runner, hub_client, spoke_client, "v3", generation=3)

    # A work that goes while the agent is disconnected (not restarted): OCM's server
    # answers the resync with a deletion that has no resourceversion; ours accepts it.
    await wait_applied(hub_client, "work2")
    await server.stop(kill=True)
    await forget_work(hub_client, "work2")
    await wait_gone(hub_client, MANIFESTWORKS, "work2", CLUSTER)
    await server.start()
    await wait_subscribed(runner, at_least=2)
    await wait_gone(spoke_client, CONFIGMAPS, "cm2", "default")

    await delete_work1(hub_client, spoke_client)
    await wait_store_empty(runner)
    assert not await exists(spoke_client, CONFIGMAPS, "cm1", "default")
