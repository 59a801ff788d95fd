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

from ocmkit.cloudevents.works import StatusUpdate, status_hash
from ocmkit.kube import APPLIED_MANIFESTWORKS, CONFIGMAPS, MANIFESTWORKS, KubeClient
from tests.cloudevents.conftest import CLIENT_ID, GrpcHub, Pki, write_agent_config
from tests.cloudevents.ocmpeer import Peer, feedback_config, hub, spoke, start_ocm_agent
from tests.cloudevents.test_grpc_e2e import wait_gone
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    get_work,
    has_cleanup_finalizer,
    manifest_condition,
    update_work,
    wait_applied,
    work_body,
    work_condition,
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
class OcmAgent:
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
            source_config=self.config,
            spoke_kubeconfig=self.spoke_kubeconfig,
            client_id=CLIENT_ID,
        )

    async def stop(self) -> None:
        """SIGTERM and wait."""
        if self.peer is not None:
            await self.peer.stop()

    def check_alive(self) -> None:
        """Raise with its log if it exited."""
        assert self.peer is not None
        self.peer.check_alive()


@pytest.fixture
async def ocm_agent(
    grpc_hub: GrpcHub, spoke_client: KubeClient, pki: Pki, tmp_path: Path
) -> AsyncIterator[OcmAgent]:
    """OCM's agent for cluster1, using our server with the agent certificate."""
    config = write_agent_config(tmp_path / "config.yaml", grpc_hub.url, pki)
    agent = OcmAgent(tmp_path / "ocm", config, tmp_path / "spoke.kubeconfig")
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
    await hub_client.create(
        MANIFESTWORKS,
        work_body("work1", [configmap("cm1", key="v1")], manifestConfigs=[feedback_config("cm1")]),
    )
    work = await wait_applied(hub_client, "work1")
    assert has_cleanup_finalizer(work)  # our server adds it with the first status
    assert (await spoke_client.get(CONFIGMAPS, "cm1", "default"))["data"] == {"key": "v1"}
    # OCM's agent names the AppliedManifestWork from the hash of the gRPC url, as ours does.
    await spoke_client.get(
        APPLIED_MANIFESTWORKS, applied_work_name(hub_hash(grpc_hub.url), "work1")
    )

    async def feedback(value: str, ready: str) -> bool:
        ocm_agent.check_alive()
        work = await get_work(hub_client, "work1")
        cond = manifest_condition(work, 0, "Ready")
        entries = (work.get("status") or {}).get("resourceStatus", {}).get("manifests") or []
        values = (entries[0].get("statusFeedback") or {}).get("values") if entries else None
        return (
            values == [{"name": "key", "fieldValue": {"type": "String", "string": value}}]
            and cond is not None
            and cond["status"] == ready
        )

    await eventually(lambda: feedback("v1", "False"), what="feedback v1, Ready=False on the hub")

    def to(value: str) -> Callable[[dict[str, Any]], None]:
        def bump(obj: dict[str, Any]) -> None:
            obj["spec"]["workload"]["manifests"] = [configmap("cm1", key=value)]

        return bump

    await update_work(hub_client, "work1", to("v2"))
    await wait_applied(hub_client, "work1", generation=2)
    await eventually(lambda: feedback("v2", "True"), what="feedback v2, Ready=True on the hub")
    work = await get_work(hub_client, "work1")
    available = work_condition(work, "Available")
    assert available is not None and available["status"] == "True"

    # OCM's agent restarts: its resync (nothing cached) is answered by our server with
    # resync_response events, the change made meanwhile included; nothing is created twice.
    await ocm_agent.stop()
    await update_work(hub_client, "work1", to("v3"))
    ocm_agent.start()
    await wait_applied(hub_client, "work1", generation=3)
    await eventually(lambda: feedback("v3", "False"), what="feedback v3 after the restart")
    assert requests.count("create", "configmaps", 201) == 1, requests.requests()

    await hub_client.delete(MANIFESTWORKS, "work1", CLUSTER)
    await wait_gone(spoke_client, CONFIGMAPS, "cm1", "default")
    # Our server removes the hub finalizer when OCM's agent reports Deleted=True.
    await wait_gone(hub_client, MANIFESTWORKS, "work1", CLUSTER)

    assert received, "OCM's agent sent no status event"
    assert any(u.deleted for u in received), [u.conditions for u in received]
    # Byte-exact status hashes: ours of what OCM's agent reported is the hash it sent
    # (tests/cloudevents/fixtures/ocm-agent-status-hashes.json pins recorded ones).
    for update in received:
        assert update.status_hash == status_hash(update.status()), update
