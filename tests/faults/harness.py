"""Helpers of the fault suite: works to create, change and delete, and the faults.

Works are written to the hub over HTTP with the test client, or, while the
hub refuses connections, through the hub kubesim's in-process API
(:class:`HubApi`): the same REST semantics (validation, generation, finalizers)
without HTTP, as another client of the hub's storage would write.

Faults go through kubesim's fault-injection API: the in-process
``sim.inject``/``close_watches``/``expire_watches``/``restart`` or the admin
HTTP endpoint (:func:`admin_fault`, for ``refuse-connections``).
"""

from __future__ import annotations

import contextlib
import copy
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from kubesim.api import Caller
from kubesim.faults import JournalEntry
from kubesim.resources import ResourceType
from kubesim.sim import KubeSim
from ocmkit.kube import MANIFESTWORKS, KubeClient, KubeError, NotFound
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    update_work,
    work_body,
)
from tests.support.processes import ProgramProcess, module_command, start_program
from tests.support.programs import CLUSTER

#: User-Agent prefixes of the agent's clients, so faults spare the tests' own clients
#: (``integration-test``): the spoke client is ``work-agent``, the hub client
#: ``workagent/<version>``.
AGENT_ON_SPOKE = "work-agent"
AGENT_ON_HUB = "workagent"
WRITE_VERBS = ("create", "update", "patch", "delete")


def configmaps(
    prefix: str, count: int, namespace: str = "default", **data: str
) -> list[dict[str, Any]]:
    """``count`` ConfigMap manifests ``<prefix>-<i>``."""
    return [configmap(f"{prefix}-{i}", namespace, **(data or {"n": str(i)})) for i in range(count)]


async def create_work(
    hub: KubeClient, name: str, manifests: list[dict[str, Any]], **labels: str
) -> dict[str, Any]:
    """Create ManifestWork ``name`` in the cluster namespace."""
    body = work_body(name, manifests)
    if labels:
        body["metadata"]["labels"] = dict(labels)
    return await hub.create(MANIFESTWORKS, body)


async def create_works(hub: KubeClient, prefix: str, count: int, size: int) -> set[str]:
    """Create works ``<prefix>-<i>`` of ``size`` ConfigMaps each; their names."""
    names = {f"{prefix}-{i}" for i in range(count)}
    for name in sorted(names):
        await create_work(hub, name, configmaps(name, size))
    return names


async def set_manifests(
    hub: KubeClient, name: str, manifests: list[dict[str, Any]]
) -> dict[str, Any]:
    """Replace the work's manifests (a new generation)."""

    def change(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = manifests

    return await update_work(hub, name, change)


async def touch_labels(hub: KubeClient, name: str, **labels: str) -> dict[str, Any]:
    """Set labels on the work: the apply loop reconciles it at once (section 4.1)."""

    def change(work: dict[str, Any]) -> None:
        work["metadata"].setdefault("labels", {}).update(labels)

    return await update_work(hub, name, change)


async def delete_work(hub: KubeClient, name: str) -> None:
    """Delete the work (the agent's finalizer holds it until the spoke is clean)."""
    with contextlib.suppress(NotFound):
        await hub.delete(MANIFESTWORKS, name, CLUSTER)


class HubApi:
    """Writes to the hub's storage through kubesim's in-process API (no HTTP)."""

    def __init__(self, sim: KubeSim) -> None:
        rt = sim.api.registry.get(MANIFESTWORKS.group, MANIFESTWORKS.version, MANIFESTWORKS.plural)
        assert rt is not None, "the ManifestWork CRD is not installed on the hub"
        self.sim = sim
        self.rt: ResourceType = rt
        self.caller = Caller(manager="fault-test")

    def create(self, name: str, manifests: list[dict[str, Any]]) -> dict[str, Any]:
        """Create a work."""
        return self.sim.api.create(self.rt, CLUSTER, work_body(name, manifests), self.caller)

    def set_manifests(self, name: str, manifests: list[dict[str, Any]]) -> dict[str, Any]:
        """Replace a work's manifests."""
        work = copy.deepcopy(self.sim.api.get(self.rt, CLUSTER, name))
        work["spec"]["workload"]["manifests"] = manifests
        obj, _ = self.sim.api.update(self.rt, CLUSTER, name, work, self.caller)
        return obj

    def set_labels(self, name: str, labels: dict[str, str]) -> dict[str, Any]:
        """Replace a work's labels."""
        work = copy.deepcopy(self.sim.api.get(self.rt, CLUSTER, name))
        work["metadata"]["labels"] = dict(labels)
        obj, _ = self.sim.api.update(self.rt, CLUSTER, name, work, self.caller)
        return obj

    def delete(self, name: str) -> None:
        """Delete a work (marked deleting: the agent's finalizer holds it)."""
        self.sim.api.delete(self.rt, CLUSTER, name, self.caller)


async def admin_fault(sim: KubeSim, body: dict[str, Any]) -> Any:
    """POST a fault to kubesim's admin API (``/kubesim/faults``); returns the answer."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.url}/kubesim/faults", json=body) as response,
    ):
        assert response.status == 201, await response.text()
        return await response.json()


async def reachable(client: KubeClient) -> bool:
    """Whether the hub answers a read."""
    try:
        await client.list(MANIFESTWORKS, CLUSTER)
    except KubeError:
        return False
    return True


async def take_hub_away(hub: KubeSim, client: KubeClient, outage: str, seconds: float) -> None:
    """Start a hub outage: ``refuse-connections`` for ``seconds`` (returns once the hub
    refuses), or ``stop-start``: the hub stopped until the test starts it again."""
    if outage == "refuse-connections":
        await admin_fault(hub, {"action": "refuse-connections", "seconds": seconds})

        async def refused() -> bool:
            return not await reachable(client)

        await eventually(refused, what="the hub to refuse connections")
    else:
        await hub.stop()


async def agent_requests(sim: KubeSim, agent: str) -> Counter[tuple[str, str, int]]:
    """The agent's answered requests so far, as (verb, resource, code) counts.

    Read from the admin API (``/kubesim/stats``): userAgent there is the program
    name, so ``agent`` is ``work-agent`` or ``workagent``.
    """
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.url}/kubesim/stats") as response,
    ):
        assert response.status == 200, await response.text()
        stats = await response.json()
    counts: Counter[tuple[str, str, int]] = Counter()
    for row in stats["requests"]:
        if row["userAgent"] == agent:
            counts[(row["verb"], row["resource"], int(row["code"]))] += int(row["count"])
    return counts


def successes(counts: Counter[tuple[str, str, int]], verb: str, resource: str) -> int:
    """How many ``verb`` requests on ``resource`` succeeded (2xx)."""
    return sum(
        n for (v, r, code), n in counts.items() if v == verb and r == resource and code < 300
    )


# -- agents as real processes, each with its own identity -----------------------------------


def agent_identity(hub: KubeSim, spoke: KubeSim, tmp_path: Path, user: str) -> tuple[Path, Path]:
    """Kubeconfigs ``<user>-hub.kubeconfig`` and ``<user>-spoke.kubeconfig`` with a token of
    their own on each cluster, so kubesim's journal tells this agent's requests from
    another process's with the same User-Agent. Returns (hub, spoke) paths."""
    hub_token = hub.add_user(user, groups=("system:masters",))
    spoke_token = spoke.add_user(user, groups=("system:masters",))
    return (
        hub.write_kubeconfig(tmp_path / f"{user}-hub.kubeconfig", token=hub_token),
        spoke.write_kubeconfig(tmp_path / f"{user}-spoke.kubeconfig", token=spoke_token),
    )


async def spawn_agent(tmp_path: Path, name: str, *args: str) -> ProgramProcess:
    """Start ``python -m workagent agent ARGS`` (killable: no uv in between); output
    goes to ``agent-<name>.log``."""
    return await start_program(
        module_command("workagent", "agent", *args), tmp_path / f"agent-{name}.log", append=True
    )


def agent_args(hub_kubeconfig: Path, spoke_kubeconfig: Path, *extra: str) -> tuple[str, ...]:
    """The flags of an agent process for cluster1, unthrottled, probes on a free port."""
    return (
        f"--spoke-cluster-name={CLUSTER}",
        f"--workload-source-config={hub_kubeconfig}",
        f"--spoke-kubeconfig={spoke_kubeconfig}",
        "--status-sync-interval=2s",
        "--listen=127.0.0.1:0",
        "--kube-api-qps=0",
        "--hub-kube-api-qps=0",
        *extra,
    )


def writes_of(sim: KubeSim, user: str, *, exclude: tuple[str, ...] = ()) -> list[JournalEntry]:
    """The successful writes ``user`` sent to ``sim``, except on resources ``exclude``."""
    return [
        e
        for e in sim.journal().select(user=user, verbs=WRITE_VERBS)
        if e.code < 300 and e.resource not in exclude
    ]
