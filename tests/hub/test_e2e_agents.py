"""A ManifestWorkReplicaSet rolled out by our hub controller to clusters run by real agents.

One hub (OCM CRDs, a Placement selecting ``cluster1``..``cluster3``) runs the
ManifestWorkReplicaSet controller in-process, built as the composition root
builds it. Each cluster is an API server of its own with the real work agent
(``build_agent`` under ``run_built``) in-process: leader election off, probes on a
free port, a short status sync interval. Nobody plays the agent: every
``Applied`` and ``Available`` condition the controller judges was written by
an agent that applied the ConfigMap to its cluster.

The strategy is ``Progressive`` with ``maxConcurrency: 1`` and works without a
``Progressing`` condition rule, so the rollout advances on ``Applied`` and
``Available`` (docs/hub.md, "two differences from OCM"). Agents are started
(and, for the update, one is stopped) so that each step of the rollout is a
state the controller must hold until an agent answers: the next cluster's
work may only appear once the previous cluster's agent has reported.

The test runs on kubesim and on real kube-apiservers (a hub and three spokes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from hubcontroller.controllers.replicaset import build_replicaset_controller
from hubcontroller.controllers.replicaset_works import comparable_spec
from hubcontroller.deps import HubDeps
from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    KubeClient,
    NotFound,
)
from ocmkit.runtime import Informer, LeaderElectionSettings
from schemas.wire import (
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT,
    CONDITION_PLACEMENT_VERIFIED,
)
from tests.conftest import eventually, pool_for
from tests.hub.test_replicaset import NS, Hub, hub_client
from tests.integration.conftest import (
    SPOKE_CRDS,
)
from tests.support.manifests import configmap
from tests.support.prepare import ensure_namespace, install_crds
from tests.support.programs import CRD_DIR, AgentRunner, agent_settings
from tests.support.targets import Cluster, PlanePool, open_cluster

CLUSTERS = ["cluster1", "cluster2", "cluster3"]
PLACEMENT = "rollout"
MWRS = "demo"


def template(version: str) -> dict[str, Any]:
    """One ConfigMap ``default/demo`` whose ``data.version`` tells the rollouts apart."""
    return {"workload": {"manifests": [configmap("demo", version=version)]}}


@dataclass
class Spoke:
    """One managed cluster: its API server, a client for it, and its agent."""

    name: str
    cluster: Cluster
    client: KubeClient
    agent: AgentRunner

    async def version(self) -> str | None:
        """``data.version`` of the ConfigMap the agent applied, None while there is none."""
        try:
            configmap = await self.client.get(CONFIGMAPS, "demo", "default")
        except NotFound:
            return None
        return str(configmap["data"]["version"])


@dataclass
class Clusters:
    """The hub (the test's view of it) and the three spokes."""

    hub: Hub
    spokes: dict[str, Spoke]

    async def works(self) -> dict[str, dict[str, Any]]:
        """The replica set's works by cluster."""
        return await self.hub.works(MWRS)

    async def wait_for(self, what: str, **summary: int) -> dict[str, Any]:
        """Wait for ``status.summary`` to read ``summary`` (every count); returns the status.

        A status is written by a reconcile that saw the works it counts, so what
        the test asserts next is the state the controller settled on.
        """
        expected = {"progressing": 0, "degraded": 0, **summary}
        found: dict[str, Any] = {}

        async def check() -> bool:
            status = (await self.hub.get_rs(MWRS)).get("status") or {}
            got = status.get("summary") or {}
            if all(got.get(key) == value for key, value in expected.items()):
                found.update(status)
                return True
            return False

        await eventually(check, timeout=20, what=f"{what}: summary {expected}")
        return found


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The replica set's conditions as ``type: (status, reason)``."""
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}


def work_conditions(work: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """A work's conditions as ``type: (status, observedGeneration)``."""
    return {
        c["type"]: (c["status"], c.get("observedGeneration", 0))
        for c in (work.get("status") or {}).get("conditions") or []
    }


def reported(work: dict[str, Any]) -> bool:
    """Whether the agent reported Applied and Available for the work's generation."""
    current = ("True", work["metadata"]["generation"])
    found = work_conditions(work)
    return found.get("Applied") == current and found.get("Available") == current


def on_template(work: dict[str, Any], version: str) -> bool:
    """Whether the work carries template ``version``."""
    return bool(comparable_spec(work["spec"]) == comparable_spec(template(version)))


async def start_spoke(
    stack: contextlib.AsyncExitStack, tmp_path: Path, name: str, target: str, pool: PlanePool | None
) -> Spoke:
    """A managed cluster (AppliedManifestWork CRD, namespace ``default``) and its agent, not
    yet started."""
    cluster = await stack.enter_async_context(open_cluster(target, pool))
    kubeconfig = cluster.write_kubeconfig(tmp_path / name / "spoke.kubeconfig")
    client = await KubeClient.from_kubeconfig(
        str(kubeconfig), user_agent="integration-test", qps=0, name=f"test-{name}"
    )
    stack.push_async_callback(client.close)
    await install_crds(client, [CRD_DIR / file for file in SPOKE_CRDS])
    await ensure_namespace(client, "default")
    settings = replace(
        agent_settings(tmp_path),
        cluster_name=name,
        hub_kubeconfig=str(tmp_path / "hub.kubeconfig"),
        spoke_kubeconfig=str(kubeconfig),
        listen="127.0.0.1:0",
        leader_election=LeaderElectionSettings(disabled=True),
        status_sync_interval=0.2,
    )
    runner = AgentRunner(settings)
    stack.push_async_callback(runner.stop)
    return Spoke(name, cluster, client, runner)


@pytest.fixture
async def clusters(
    cluster: Cluster, tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> AsyncIterator[Clusters]:
    """The hub with its controller running, and three spokes whose agents are not started."""
    async with contextlib.AsyncExitStack() as stack:
        kubeconfig = cluster.write_kubeconfig(tmp_path / "hub.kubeconfig")
        client = await hub_client(kubeconfig, CLUSTERS)
        stack.push_async_callback(client.close)

        # The controller, as the composition root builds it.
        controller_client = await KubeClient.from_kubeconfig(
            str(kubeconfig), user_agent="hubcontroller", qps=0, name="hub"
        )
        stack.push_async_callback(controller_client.close)
        works = Informer(controller_client, MANIFESTWORKS)
        deps = HubDeps(hub=controller_client, works=works)
        informers, controller = build_replicaset_controller(deps)
        for informer in (works, *informers):
            await informer.start()
            stack.push_async_callback(informer.stop)
        task = asyncio.create_task(controller.run())

        async def stop_controller() -> None:
            await controller.stop(deadline=5)
            await task

        stack.push_async_callback(stop_controller)
        await controller.wait_started()

        pool = pool_for(request, target)
        spokes = {name: await start_spoke(stack, tmp_path, name, target, pool) for name in CLUSTERS}
        yield Clusters(Hub(client, kubeconfig, [controller]), spokes)


async def test_progressive_rollout_applied_by_real_agents(clusters: Clusters) -> None:
    hub, spokes = clusters.hub, clusters.spokes
    one, two, three = (spokes[name] for name in CLUSTERS)
    await hub.placement(PLACEMENT, [("", CLUSTERS)])
    ref = {
        "name": PLACEMENT,
        "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 1}},
    }
    await hub.replica_set(MWRS, [ref], template("1"))

    # Only cluster1's agent runs: it applies, reports, and the rollout moves to cluster2,
    # where it must wait (no agent answers there yet).
    await one.agent.start()
    status = await clusters.wait_for("cluster1 done", total=2, applied=1, available=1)
    works = await clusters.works()
    assert sorted(works) == ["cluster1", "cluster2"]
    assert reported(works["cluster1"]) and work_conditions(works["cluster2"]) == {}
    assert conditions(status) == {
        CONDITION_PLACEMENT_VERIFIED: ("True", "AsExpected"),
        CONDITION_PLACEMENT_ROLLED_OUT: ("False", "Progressing"),
        CONDITION_MANIFESTWORK_APPLIED: ("False", "NotAsExpected"),
    }
    assert [await s.version() for s in (one, two, three)] == ["1", None, None]

    # cluster2's agent answers: on to cluster3, which waits in turn.
    await two.agent.start()
    await clusters.wait_for("cluster2 done", total=3, applied=2, available=2)
    works = await clusters.works()
    assert reported(works["cluster2"]) and work_conditions(works["cluster3"]) == {}
    assert [await s.version() for s in (one, two, three)] == ["1", "1", None]

    # The last agent answers: the rollout is complete.
    await three.agent.start()
    await clusters.wait_for("rolled out", total=3, applied=3, available=3)
    await hub.wait_condition(MWRS, CONDITION_PLACEMENT_ROLLED_OUT, "True", "Complete")
    status = (await hub.get_rs(MWRS))["status"]
    assert conditions(status) == {
        CONDITION_PLACEMENT_VERIFIED: ("True", "AsExpected"),
        CONDITION_PLACEMENT_ROLLED_OUT: ("True", "Complete"),
        CONDITION_MANIFESTWORK_APPLIED: ("True", "AsExpected"),
    }
    assert status["placementSummary"] == [
        {
            "name": PLACEMENT,
            "availableDecisionGroups": "1 (3 / 3 clusters applied)",
            "summary": {
                "total": 3,
                "applied": 3,
                "available": 3,
                "progressing": 0,
                "degraded": 0,
                "desiredTotal": 0,
                "updated": 0,
            },
        }
    ]
    works = await clusters.works()
    assert all(reported(w) and w["metadata"]["generation"] == 1 for w in works.values())
    assert [await s.version() for s in (one, two, three)] == ["1", "1", "1"]
    for spoke in spokes.values():
        applied = await spoke.client.list(APPLIED_MANIFESTWORKS)
        assert [a["spec"]["manifestWorkName"] for a in applied["items"]] == [
            works[spoke.name]["metadata"]["name"]
        ]

    # A template change rolls out again, one cluster at a time. cluster2's agent is
    # down, so the update must stop there: cluster3 keeps the old template.
    await two.agent.stop()
    await hub.client.patch(
        MANIFESTWORK_REPLICASETS, MWRS, {"spec": {"manifestWorkTemplate": template("2")}}, NS
    )

    async def one_done_two_updated() -> bool:
        works = await clusters.works()
        return (
            reported(works["cluster1"])
            and on_template(works["cluster1"], "2")
            and on_template(works["cluster2"], "2")
        )

    await eventually(one_done_two_updated, what="cluster1 on v2, cluster2's work updated")
    # Counts ignore observedGeneration (hub.md 2.6): cluster2's work still says Applied
    # and Available, for generation 1. The rollout judges by generation, and waits.
    status = await clusters.wait_for("waiting for cluster2", total=2, applied=2, available=2)
    assert conditions(status)[CONDITION_PLACEMENT_ROLLED_OUT] == ("False", "Progressing")
    works = await clusters.works()
    assert not reported(works["cluster2"])
    assert works["cluster2"]["metadata"]["generation"] == 2
    assert on_template(works["cluster3"], "1") and works["cluster3"]["metadata"]["generation"] == 1
    assert [await s.version() for s in (one, two, three)] == ["2", "1", "1"]

    # cluster2's agent comes back: it applies v2, and the rollout goes on to cluster3.
    await two.agent.start()
    await hub.wait_condition(MWRS, CONDITION_PLACEMENT_ROLLED_OUT, "True", "Complete", timeout=20)
    status = await clusters.wait_for("v2 rolled out", total=3, applied=3, available=3)
    assert conditions(status)[CONDITION_MANIFESTWORK_APPLIED] == ("True", "AsExpected")
    works = await clusters.works()
    assert all(on_template(w, "2") and reported(w) for w in works.values())
    assert all(w["metadata"]["generation"] == 2 for w in works.values())
    assert [await s.version() for s in (one, two, three)] == ["2", "2", "2"]
