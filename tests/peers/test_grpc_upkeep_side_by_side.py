"""OCM's Go work agent and ours on the grpc driver, through OCM's server, side by side:
how each keeps its connection up.

Both agents subscribe to one OCM ``server grpc`` in front of one real hub,
each for its own cluster. Compared: what each does when the server sends no
heartbeat and ``serverHealthinessTimeout`` is set, when the ``tokenFile``
it authenticates with is rotated on disk, and when a work larger than the
agent accepts comes down the stream.

Runs in the real leg only; ``make ocm`` builds OCM's binary.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from demo.environment import grant_agent
from ocmkit.kube import MANIFESTWORKS, SERVICE_ACCOUNTS, KubeClient
from tests.conftest import eventually
from tests.peers.test_agent_side_by_side import (
    OCM,
    OURS,
    Case,
    GrpcSetup,
    Hub,
    Side,
    compare_works,
    create_case,
    hub_side,
    hub_work,
    settled,
    spoke_side,
)
from tests.support.manifests import configmap
from tests.support.ocmpeer import (
    Peer,
    grpc_source,
    start_ocm_agent,
    start_ocm_server,
    start_our_agent,
)
from tests.support.prepare import service_account_token
from tests.support.processes import ProgramProcess
from tests.support.targets import PlanePool
from workagent.sources.grpcdriver import GrpcTransport

pytestmark = pytest.mark.realkube

SMALL = Case([configmap("small-cm", a="1")])


@dataclass
class Upkeep:
    """The hub, OCM's server, and both agents with their configs (started by the test)."""

    hub: Hub
    folder: Path
    setup: GrpcSetup
    hub_path: Path
    spoke_paths: dict[str, Path]
    server: Peer | None = None
    port: int = 0
    configs: dict[str, Path] = field(default_factory=dict)
    ocm_agent: Peer | None = None
    our_agent: ProgramProcess | None = None
    starts: int = 0

    async def start_server(self, *extra: str) -> None:
        """OCM's server (on the same port after a restart)."""
        self.server, self.port = await start_ocm_server(
            self.folder / "ocm-server",
            hub_kubeconfig=self.hub_path,
            cert=self.setup.server.cert,
            key=self.setup.server.key,
            client_ca=self.setup.ca.ca_file,
            port=self.port,
            extra=extra,
        )
        self.hub.processes[:] = [p for p in (self.server, self.ocm_agent) if p is not None]

    @property
    def url(self) -> str:
        """The server's address as an agent config names it."""
        return f"127.0.0.1:{self.port}"

    def write_config(self, cluster: str, config: dict[str, Any]) -> Path:
        """``cluster``'s agent config (``url`` added)."""
        path = self.folder / f"{cluster}-grpc.yaml"
        path.write_text(yaml.safe_dump({"url": self.url, **config}))
        self.configs[cluster] = path
        return path

    async def cert_configs(self, **extra: Any) -> None:
        """Both agents with a certificate as registration issues it, plus ``extra``."""
        for cluster in (OCM, OURS):
            path = await self.setup.agent_config(cluster, self.url)
            config = yaml.safe_load(path.read_text())
            self.write_config(cluster, {**config, **extra})

    async def start_agents(self) -> None:
        """Both agents, each with its config."""
        self.starts += 1
        self.ocm_agent = start_ocm_agent(
            self.folder / OCM,
            cluster=OCM,
            source=grpc_source(self.configs[OCM], f"{OCM}-work-agent"),
            spoke_kubeconfig=self.spoke_paths[OCM],
        )
        ours = self.folder / f"{OURS}-{self.starts}"
        ours.mkdir()
        self.our_agent = await start_our_agent(
            ours,
            cluster=OURS,
            source=grpc_source(self.configs[OURS], f"{OURS}-work-agent"),
            spoke_kubeconfig=self.spoke_paths[OURS],
        )
        self.hub.processes[:] = [p for p in (self.server, self.ocm_agent) if p is not None]

    async def stop(self) -> None:
        """Every process this test started."""
        if self.ocm_agent is not None:
            await self.ocm_agent.stop()
        if self.our_agent is not None:
            with contextlib.suppress(Exception):
                await self.our_agent.terminate()
        if self.server is not None:
            await self.server.stop(kill=True)

    def logs(self) -> dict[str, str]:
        """What each agent printed so far."""
        return {
            OCM: self.ocm_agent.log() if self.ocm_agent else "",
            OURS: self.our_agent.log() if self.our_agent else "",
        }


@pytest.fixture
async def upkeep(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Upkeep]:
    """A hub with both cluster namespaces and two managed clusters; nothing started."""
    async with (
        hub_side(realkube_pool, tmp_path, [OCM, OURS]) as (_, hub_path, hub_client),
        spoke_side(realkube_pool, tmp_path, OCM) as (ocm, ocm_path),
        spoke_side(realkube_pool, tmp_path, OURS) as (ours, ours_path),
    ):
        hub = Hub(hub_client, ocm, ours, [], "grpc")
        up = Upkeep(
            hub,
            tmp_path,
            GrpcSetup(hub_client, tmp_path),
            hub_path,
            {OCM: ocm_path, OURS: ours_path},
        )
        try:
            yield up
        finally:
            await up.stop()


async def until_logged(
    up: Upkeep, what: str, pattern: dict[str, str], count: int
) -> dict[str, int]:
    """Wait until each agent's log matches its ``pattern`` ``count`` times."""
    seen: dict[str, int] = {}

    async def logged() -> bool:
        up.hub.check_alive()
        for cluster, text in up.logs().items():
            seen[cluster] = len(re.findall(pattern[cluster], text))
        return all(n >= count for n in seen.values())

    try:
        await eventually(logged, timeout=180, what=what)
    except AssertionError as err:
        raise AssertionError(
            f"{err}: {seen}\n{up.logs()[OCM][-3000:]}\n{up.logs()[OURS][-3000:]}"
        ) from None
    return seen


@pytest.mark.timeout(240)  # OCM's agent's third reconnect can come 50 s after its second
async def test_no_heartbeat_within_the_healthiness_timeout(upkeep: Upkeep) -> None:
    # OCM's server sends no heartbeat at all: with serverHealthinessTimeout both agents
    # give the stream up 4 s after subscribing, reconnect with backoff and resync.
    await upkeep.start_server("--broker-heartbeat-disabled")
    await upkeep.cert_configs(serverHealthinessTimeout="4s")
    await upkeep.start_agents()
    await create_case(upkeep.hub, "small", SMALL)
    await compare_works(upkeep.hub, ["small"], {"small": SMALL})
    await until_logged(
        upkeep,
        "both agents to give up the silent server twice",
        {
            OCM: r"stream timeout: no heartbeat received for 4s",
            OURS: r"no heartbeat from the server for 4.0s \(serverHealthinessTimeout\)",
        },
        2,
    )
    # A new generation still reaches both (on a later subscription's resync).
    changed = Case([configmap("small-cm", a="2")])
    for side in upkeep.hub.sides:
        await update_manifests(upkeep.hub.client, side, "small", changed)
    await compare_works(upkeep.hub, ["small"], {"small": changed})


async def update_manifests(client: KubeClient, side: Side, name: str, case: Case) -> None:
    """Give work ``name`` of ``side`` the manifests of ``case``."""
    work = await client.get(MANIFESTWORKS, name, side.cluster)
    work["spec"]["workload"]["manifests"] = copy.deepcopy(case.manifests)
    await client.update(MANIFESTWORKS, work)


async def test_a_rotated_token_file_is_read_on_reconnect(upkeep: Upkeep) -> None:
    await upkeep.start_server()
    hub = upkeep.hub
    tokens: dict[str, list[str]] = {}
    for side in hub.sides:
        await grant_agent(hub.client, side.cluster, f"system:serviceaccounts:{side.cluster}")
        tokens[side.cluster] = []
        for name in ("agent-a", "agent-b"):
            body = {"metadata": {"name": name, "namespace": side.cluster}}
            await hub.client.create(SERVICE_ACCOUNTS, body, side.cluster)
            tokens[side.cluster].append(await service_account_token(hub.client, side.cluster, name))
        token_file = upkeep.folder / f"{side.cluster}.token"
        token_file.write_text(tokens[side.cluster][0])
        upkeep.write_config(
            side.cluster, {"caFile": str(upkeep.setup.ca.ca_file), "tokenFile": str(token_file)}
        )
    await upkeep.start_agents()
    await create_case(hub, "small", SMALL)
    await compare_works(hub, ["small"], {"small": SMALL})

    # The token is rotated on disk and the old one stops being valid (its service
    # account goes). The open streams stay (authenticated when they began); ours
    # publishes the status of generation 2 (a publish the server refuses with the old
    # token makes it read the file again).
    for side in hub.sides:
        (upkeep.folder / f"{side.cluster}.token").write_text(tokens[side.cluster][1])
        await hub.client.delete(SERVICE_ACCOUNTS, "agent-a", side.cluster)
    await update_both(upkeep, 2)
    # The server restarts, so ours reconnects, with the new token (the old one is no
    # longer valid), and reports generation 3. OCM's agent keeps its old token and is
    # refused until restarted (docs/compatibility.md), but when it tries again depends on
    # its reconnect backoff (5 s to 2 min, one state per process), so it is not waited for.
    assert upkeep.server is not None
    await upkeep.server.stop(kill=True)
    await upkeep.start_server()
    # The new token is good: a client that reads the file now is let in.
    transport = GrpcTransport(str(upkeep.configs[OURS]), OURS)
    async with asyncio.timeout(30), transport.subscription():
        pass
    await update_both(upkeep, 3)
    assert len(re.findall(r'"event": "subscribed"', upkeep.logs()[OURS])) >= 2


async def update_both(upkeep: Upkeep, value: int) -> None:
    """Give ``small`` on both sides ConfigMap value ``value``; wait for ours to report it."""
    hub = upkeep.hub
    changed = Case([configmap("small-cm", a=str(value))])
    for side in hub.sides:
        await update_manifests(hub.client, side, "small", changed)

    async def ours_reported() -> bool:
        work = await hub_work(hub, hub.ours, "small")
        return work is not None and settled(work, changed)

    await eventually(ours_reported, timeout=60, what=f"our agent to report value {value}")


async def test_a_work_over_the_manifest_limit_costs_no_connection(upkeep: Upkeep) -> None:
    # The largest work a real hub stores is under 2 MiB (etcd's 2 MiB request limit;
    # the API server refuses 3 MiB bodies), so under the 4 MiB a Go client receives.
    # Both agents receive it, drop it (manifests over 500 KiB) and stay subscribed.
    await upkeep.start_server()
    await upkeep.cert_configs()
    await upkeep.start_agents()
    hub = upkeep.hub
    blob = "x" * (350 * 1024)
    await create_case(hub, "big", Case([configmap(f"big-{i}", a=blob) for i in range(4)]))
    await create_case(hub, "small", SMALL)
    await compare_works(hub, ["small"], {"small": SMALL})
    await until_logged(
        upkeep,
        "both agents to drop the large work",
        {
            OCM: r"failed to decode spec.*exceeds the 512000 limit",
            OURS: r"exceeds the 512000 limit.*dropping a spec event",
        },
        1,
    )
    for side in hub.sides:
        work = await hub_work(hub, side, "big")
        assert work is not None and not work.get("status"), side.cluster
    for cluster, text in upkeep.logs().items():
        assert "disconnected" not in text and "connection lost" not in text, (cluster, text[-3000:])
