"""OCM's Go work agent and ours through a stop and a start, side by side.

Both agents apply the same works; then both stop. While they are down the hub
changes: one work is deleted (it waits on the agent's cleanup finalizer),
another gets a new generation that drops a manifest, a third is created, and
an applied object is edited on the managed clusters. Both agents start again
with the same flags. What each leaves behind must be the
same: the deleted work gone from the hub with its objects and its
AppliedManifestWork, the others' status, AppliedManifestWorks and objects as
OCM's agent leaves them.

The first scenario runs on the kube driver, through OCM's gRPC server (where
the agents' resync on reconnect tells the server what they hold), and with
OCM's agent on both sides, through OCM's server and ours (our server's answers
to a resync).
Runs in the real leg only; ``make ocm`` builds OCM's binary.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocmkit.kube import APPLIED_MANIFESTWORKS, CONFIGMAPS, MANIFESTWORKS, NotFound
from tests.peers.test_agent_side_by_side import (
    NS,
    OCM,
    OURS,
    Case,
    GrpcSetup,
    Hub,
    Side,
    applied_work,
    compare_applied,
    compare_works,
    create_case,
    hub_side,
    hub_work,
    same_on_both,
    spoke_side,
)
from tests.support.manifests import configmap
from tests.support.ocmpeer import Peer, grpc_source, start_ocm_agent, start_our_agent
from tests.support.processes import ProgramProcess
from tests.support.targets import PlanePool
from workagent.identity import hub_hash

pytestmark = pytest.mark.realkube

BEFORE: dict[str, Case] = {
    "kept": Case([configmap("kept-a", a="1"), configmap("kept-b", b="1")]),
    "deleted": Case([configmap("deleted-cm", a="1")]),
    "steady": Case([configmap("steady-cm", a="1")]),
}
#: While both agents are down: "kept" drops kept-b and changes kept-a.
KEPT_AFTER = Case([configmap("kept-a", a="2")])
CREATED = Case([configmap("created-cm", a="1")])


#: Both agents' identity, fixed as the Klusterlet fixes it (the default follows the hub).
AGENT_ID = "agent-of-the-test"


@dataclass
class Agents:
    """The shared hub, and how to start each side's agent (stopped in between)."""

    hub: Hub
    folder: Path
    #: Per cluster: where its agent gets works (the hub kubeconfig, or a gRPC config).
    sources: dict[str, tuple[str, ...]]
    spoke_paths: dict[str, Path]
    #: OCM processes that outlive the agents (its gRPC server).
    servers: list[Peer] = field(default_factory=list)
    #: OCM's agents by cluster; ours serves the "ours" side unless ``hub.our_agent`` is off.
    ocm: dict[str, Peer] = field(default_factory=dict)
    ours: ProgramProcess | None = None

    def flags(self, cluster: str, extra: tuple[str, ...]) -> tuple[str, ...]:
        """The agent flags of one side (``extra`` added)."""
        return (*self.sources[cluster], f"--agent-id={AGENT_ID}", *extra)

    async def start(self, *extra: str) -> None:
        """Both agents, with the same flags (``extra`` added to both)."""
        clusters = [OCM] if self.hub.our_agent else [OCM, OURS]
        for cluster in clusters:
            self.ocm[cluster] = start_ocm_agent(
                self.folder / cluster,
                cluster=cluster,
                source=self.flags(cluster, extra),
                spoke_kubeconfig=self.spoke_paths[cluster],
            )
        self.hub.processes[:] = [*self.servers, *self.ocm.values()]
        if not self.hub.our_agent:
            return
        # Ours as a process, with the flags OCM's gets (and a plain-HTTP endpoint).
        self.ours = await start_our_agent(
            self.folder,
            cluster=OURS,
            source=self.flags(OURS, extra),
            spoke_kubeconfig=self.spoke_paths[OURS],
        )

    async def stop(self) -> None:
        """Both agents down (SIGTERM); ours must end cleanly."""
        for peer in self.ocm.values():
            await peer.stop()
        self.ocm.clear()
        self.hub.processes[:] = self.servers
        if self.ours is not None:
            code = await self.ours.terminate()
            assert code == 0, self.ours.log()[-3000:]
            self.ours = None


@pytest.fixture
async def agents(
    request: pytest.FixtureRequest, realkube_pool: PlanePool, tmp_path: Path
) -> AsyncIterator[Agents]:
    """A hub with both cluster namespaces, two managed clusters, both agents running on
    the driver the test names (``kube``: the hub; ``grpc``: OCM's gRPC server;
    ``grpc-server``: OCM's agent on both sides, through OCM's server and ours)."""
    driver = str(getattr(request, "param", "kube"))
    async with (
        hub_side(realkube_pool, tmp_path, [OCM, OURS]) as (hub_plane, hub_path, hub_client),
        spoke_side(realkube_pool, tmp_path, OCM) as (ocm, ocm_path),
        spoke_side(realkube_pool, tmp_path, OURS) as (ours, ours_path),
        contextlib.AsyncExitStack() as stack,
    ):
        hub = Hub(hub_client, ocm, ours, [], driver)
        servers: list[Peer] = []
        sources: dict[str, tuple[str, ...]]
        if driver == "kube":
            ocm.hub_hash = ours.hub_hash = hub_hash(hub_plane.url)
            kube = (f"--workload-source-config={hub_path}",)
            sources = {OCM: kube, OURS: kube}
        else:
            grpc = GrpcSetup(hub_client, tmp_path)
            server, url = await grpc.ocm_server(hub_path)
            stack.push_async_callback(server.stop)
            servers.append(server)
            urls = {OCM: url, OURS: url}
            if driver == "grpc-server":  # OCM's agent on our side too, through our server
                our_server = await grpc.our_server(hub_path)
                stack.push_async_callback(our_server.stop)
                urls[OURS] = our_server.url
            ocm.hub_hash, ours.hub_hash = hub_hash(urls[OCM]), hub_hash(urls[OURS])
            sources = {
                cluster: grpc_source(
                    await grpc.agent_config(cluster, urls[cluster]), f"{cluster}-work-agent"
                )
                for cluster in (OCM, OURS)
            }
        paths = {OCM: ocm_path, OURS: ours_path}
        agents = Agents(hub, tmp_path, sources, paths, servers)
        await agents.start()
        try:
            yield agents
        finally:
            with contextlib.suppress(AssertionError):
                await agents.stop()


async def gone(hub: Hub, what: str, read: Any) -> None:
    """Wait until ``read(side)`` is None on both sides."""
    await same_on_both(hub, what, read, lambda v: v, ready=lambda v: v is None)


@pytest.mark.parametrize("agents", ["kube", "grpc", "grpc-server"], indirect=True)
async def test_changes_made_while_the_agents_were_down(agents: Agents) -> None:
    hub = agents.hub
    for name, case in BEFORE.items():
        await create_case(hub, name, case)
    await compare_works(hub, list(BEFORE), BEFORE)
    await compare_applied(hub, list(BEFORE))

    await agents.stop()
    for side in hub.sides:
        await hub.client.delete(MANIFESTWORKS, "deleted", side.cluster)
        work = await hub.client.get(MANIFESTWORKS, "kept", side.cluster)
        work["spec"]["workload"]["manifests"] = copy.deepcopy(KEPT_AFTER.manifests)
        await hub.client.update(MANIFESTWORKS, work)
    await create_case(hub, "created", CREATED)
    for side in hub.sides:  # somebody edits an object of an unchanged work meanwhile
        await side.spoke.patch(CONFIGMAPS, "steady-cm", {"data": {"a": "edited"}}, NS)
    for side in hub.sides:  # nobody cleans up: the deleted work waits on its finalizer
        waiting = await hub_work(hub, side, "deleted")
        assert waiting is not None and waiting["metadata"].get("deletionTimestamp")

    await agents.start()
    after = {"kept": KEPT_AFTER, "created": CREATED, "steady": BEFORE["steady"]}
    await compare_works(hub, list(after), after)

    async def steady_data(side: Side) -> Any:
        return (await side.spoke.get(CONFIGMAPS, "steady-cm", NS)).get("data")

    # Both agents put the edited object back as the work says (its status never changed).
    await same_on_both(
        hub, "the edited object", steady_data, lambda v: v, ready=lambda v: v == {"a": "1"}
    )
    await compare_applied(hub, list(after))  # the objects field by field, managed fields too

    async def deleted_work(side: Side) -> Any:
        return await hub_work(hub, side, "deleted")

    async def deleted_applied(side: Side) -> Any:
        return await applied_work(side, "deleted")

    await gone(hub, "the deleted work", deleted_work)
    await gone(hub, "the deleted work's AppliedManifestWork", deleted_applied)
    for name in ("deleted-cm", "kept-b"):

        async def leftover(side: Side, name: str = name) -> Any:
            try:
                return (await side.spoke.get(CONFIGMAPS, name, NS))["metadata"]["name"]
            except NotFound:
                return None

        await gone(hub, f"configmap {name}", leftover)


async def test_a_new_hub_address_evicts_the_old_applied_works(agents: Agents) -> None:
    """The same hub reached by another URL is a new hub hash: both agents record the
    works anew, and evict the AppliedManifestWorks of the old hash after the grace
    period, leaving the objects to the new ones."""
    hub = agents.hub
    await create_case(hub, "moved", BEFORE["steady"])
    await compare_works(hub, ["moved"], {"moved": BEFORE["steady"]})
    old_hash = hub.ocm.hub_hash

    await agents.stop()
    hub_path = agents.folder / "hub.kubeconfig"
    kubeconfig = yaml.safe_load(hub_path.read_text())
    kubeconfig["clusters"][0]["cluster"]["server"] += "/"  # the hash covers the URL as written
    moved = agents.folder / "hub-slash.kubeconfig"
    moved.write_text(yaml.safe_dump(kubeconfig))
    agents.sources = {side.cluster: (f"--workload-source-config={moved}",) for side in hub.sides}
    new_hash = hub_hash(kubeconfig["clusters"][0]["cluster"]["server"])
    assert new_hash != old_hash
    for side in hub.sides:
        side.hub_hash = new_hash
    await agents.start("--appliedmanifestwork-eviction-grace-period=3s")

    async def names(side: Side) -> Any:
        listed = (await side.spoke.list(APPLIED_MANIFESTWORKS))["items"]
        return sorted(a["metadata"]["name"].replace(old_hash, "<old>") for a in listed)

    await same_on_both(
        hub,
        "the AppliedManifestWorks",
        names,
        lambda v: v,
        ready=lambda v: v == [f"{new_hash}-moved"],
    )
    await compare_applied(hub, ["moved"])  # the object, owned by the new record alone
    for side in hub.sides:
        cm = await side.spoke.get(CONFIGMAPS, "steady-cm", NS)
        owners = [ref["name"] for ref in cm["metadata"].get("ownerReferences") or []]
        assert owners == [f"{new_hash}-moved"], (side.cluster, owners)
