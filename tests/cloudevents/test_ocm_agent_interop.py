"""OCM's own Go work agent (``work agent``, OCM v1.2.1) against our ``hubcontroller grpc-server``.

Real control planes on both sides: our server (in-process, mTLS on a free
loopback port) is backed by the hub; OCM's agent runs as a process with the
Klusterlet's CloudEvents command line (``--workload-source-driver=grpc
--workload-source-config=<config.yaml> --cloudevents-client-id=cluster1-work-agent``)
and applies to the managed cluster. What OCM's agent sends passes through our
codec and server into the hub's ManifestWork, and every status event it sent
carries a status hash our own computation must reproduce byte for byte.

Runs in the real leg only; ``make ocm`` builds the agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocmkit.cloudevents.works import StatusUpdate, status_hash
from ocmkit.kube import APPLIED_MANIFESTWORKS, KubeClient
from tests.cloudevents.conftest import (
    CLIENT_ID,
    GrpcHub,
    Pki,
    apply_with_feedback,
    delete_work1,
    set_configmap,
    wait_feedback,
)
from tests.cloudevents.test_grpc_auth import agent_account
from tests.integration.conftest import (
    create_and_wait,
    manifest_condition,
    update_work,
    wait_applied,
    work_body,
)
from tests.integration.test_status import COST_BRIEFS, COST_CONFIGMAP, COST_RULES, briefs
from tests.support.manifests import manifest_config
from tests.support.ocmpeer import (
    Peer,
    RestartablePeer,
    grpc_source,
    hub,
    spoke,
    start_ocm_agent,
)
from tests.support.programs import CLUSTER
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.identity import applied_work_name, hub_hash

pytestmark = pytest.mark.realkube
__all__ = ["hub", "spoke"]


@pytest.fixture
def received(grpc_hub: GrpcHub) -> list[StatusUpdate]:
    """Every status update our server decoded, in order (the server still writes each)."""
    assert grpc_hub.service is not None
    works = grpc_hub.service.broker.works
    seen: list[StatusUpdate] = []
    apply: Callable[[StatusUpdate], Awaitable[str]] = works.apply_status

    async def recording(update: StatusUpdate) -> str:
        seen.append(update)
        return await apply(update)

    works.apply_status = recording  # type: ignore[method-assign]
    return seen


@dataclass
class OcmAgent(RestartablePeer):
    """OCM's agent process for cluster1 with the Klusterlet's CloudEvents flags; restartable."""

    folder: Path
    config: Path
    spoke_kubeconfig: Path
    peer: Peer | None = None

    def start(self) -> None:
        """Start the process (it subscribes and resyncs on its own)."""
        self.peer = start_ocm_agent(
            self.folder,
            cluster=CLUSTER,
            source=grpc_source(self.config, CLIENT_ID),
            spoke_kubeconfig=self.spoke_kubeconfig,
        )


@pytest.fixture
async def ocm_agent(
    agent_config: Path, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[OcmAgent]:
    """OCM's agent for cluster1, using our server with the agent certificate."""
    agent = OcmAgent(tmp_path / "ocm", agent_config, tmp_path / "spoke.kubeconfig")
    agent.start()
    try:
        yield agent
    finally:
        await agent.stop()


async def test_ocm_agent_through_our_server(
    ocm_agent: OcmAgent,
    grpc_hub: GrpcHub,
    spoke: Cluster,
    received: list[StatusUpdate],
    hub_client: KubeClient,
    spoke_client: KubeClient,
) -> None:
    requests = RequestRecord(spoke)
    await apply_with_feedback(hub_client, spoke_client, alive=ocm_agent.check_alive)
    # OCM's agent names the AppliedManifestWork from the hash of the gRPC url, as ours does.
    await spoke_client.get(
        APPLIED_MANIFESTWORKS, applied_work_name(hub_hash(grpc_hub.url), "work1")
    )

    # OCM's agent restarts: its resync (nothing cached) is answered by our server with
    # resync_response events, the change made meanwhile included; nothing is created twice.
    await ocm_agent.stop()
    await update_work(hub_client, "work1", set_configmap("cm1", "v3"))
    ocm_agent.start()
    await wait_applied(hub_client, "work1", generation=3)
    await wait_feedback(hub_client, "v3", "False", alive=ocm_agent.check_alive)
    assert requests.count("create", "configmaps", 201) == 1, requests.requests()

    await delete_work1(hub_client, spoke_client)

    assert received, "OCM's agent sent no status event"
    assert any(u.deleted for u in received), [u.conditions for u in received]
    # Byte-exact status hashes: ours of what OCM's agent reported is the hash it sent
    # (tests/cloudevents/fixtures/ocm-agent-status-hashes.json pins recorded ones).
    for update in received:
        assert update.status_hash == status_hash(update.status()), update


async def test_ocm_agent_with_a_bearer_token_through_our_server(
    grpc_hub: GrpcHub,
    pki: Pki,
    hub: Cluster,
    hub_client: KubeClient,
    spoke_client: KubeClient,
    tmp_path: Path,
) -> None:
    # OCM's server config sets a client CA by default, and agents that authenticate
    # with a token connect without a certificate: the server asks for one and
    # verifies it only when given (Go's VerifyClientCertIfGiven). So must ours.
    assert grpc_hub.config["client_ca_file"]
    agent_user = await agent_account(hub, hub_client, "by-token")
    token_file = tmp_path / "agent.token"
    token_file.write_text(agent_user.token)
    config = tmp_path / "agent-token.yaml"
    config.write_text(
        yaml.safe_dump(
            {"url": grpc_hub.url, "caFile": str(pki.ca.ca_file), "tokenFile": str(token_file)}
        )
    )
    agent = OcmAgent(tmp_path / "ocm-token", config, tmp_path / "spoke.kubeconfig")
    agent.start()
    try:
        await apply_with_feedback(hub_client, spoke_client, alive=agent.check_alive)
        await delete_work1(hub_client, spoke_client)
    finally:
        await agent.stop()


async def test_ocm_agent_cel_cost_limits_are_ours(
    ocm_agent: OcmAgent, grpc_hub: GrpcHub, hub_client: KubeClient
) -> None:
    """OCM's agent gives the conditions ours gives (tests/integration/test_status.py's
    test_cel_cost_limits_as_in_ocm) to rules at and past its cost limits."""
    configs = [manifest_config("", "configmaps", "costs", rules=COST_RULES)]
    types = [rule["condition"] for rule in COST_RULES]

    def reported(work: dict[str, Any]) -> bool:
        ocm_agent.check_alive()
        return all(manifest_condition(work, 0, t) for t in types)

    work = await create_and_wait(
        hub_client,
        work_body("costs", [COST_CONFIGMAP], manifestConfigs=configs),
        reported,
        "OCM's agent to report the rule conditions",
    )
    assert briefs(work, *((0, t) for t in types)) == COST_BRIEFS
