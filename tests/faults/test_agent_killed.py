"""The agent killed with SIGKILL mid-apply and mid-delete, then restarted.

The agent runs as a real process (``python -m workagent agent``), so SIGKILL
loses everything it held in memory: its caches, its apply cache, requests in
flight. A small latency on the agent's ConfigMap creates (then deletes) keeps
a 50-manifest work in flight long enough for the kill to land in the middle;
the latency is lifted before the restart. The restarted agent must converge
with nothing leaked.

The process is started with this interpreter, not with the integration
suite's ``start_agent_process``: that one runs ``uv run workagent ...``, and
``uv run`` keeps the agent as its *child*, so a SIGKILL sent to the process it
returns kills uv and leaves the agent running, orphaned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ocmkit.kube import CONFIGMAPS, NAMESPACES, KubeClient
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import (
    AGENT_ON_SPOKE,
    agent_args,
    agent_requests,
    configmaps,
    create_work,
    delete_work,
    set_manifests,
    spawn_agent,
    successes,
)
from tests.faults.invariants import Expected, problems
from tests.integration.conftest import (
    get_applied_work,
    get_work,
    manifest_statuses,
    wait_applied,
)
from tests.support.processes import ProgramProcess
from tests.support.programs import AgentRunner
from workagent.controllers.applied import recorded_resources

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

BIG = 50


class Agents:
    """Starts ``workagent agent`` processes for cluster1 and kills them."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.current: ProgramProcess | None = None
        self.starts = 0

    async def start(self) -> ProgramProcess:
        """Start a new agent process (its output appended to ``agent-process.log``)."""
        self.starts += 1
        with (self.tmp_path / "agent-process.log").open("ab") as out:
            out.write(f"--- agent process {self.starts}\n".encode())
        hub, spoke = self.tmp_path / "hub.kubeconfig", self.tmp_path / "spoke.kubeconfig"
        args = agent_args(hub, spoke, "--disable-leader-election")
        self.current = await spawn_agent(self.tmp_path, "process", *args)
        return self.current

    async def kill(self) -> None:
        """SIGKILL the running agent and reap it."""
        assert self.current is not None
        self.current.process.kill()
        await self.current.process.wait()
        self.current = None

    def alive(self) -> None:
        """Fail with the agent's log if it exited on its own."""
        if self.current is not None and self.current.process.returncode is not None:
            raise AssertionError(f"the agent exited:\n{self.current.log()}")


@pytest.fixture
async def agents(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[Agents]:
    """Agent processes; whichever runs at the end is stopped."""
    runner = Agents(tmp_path)
    try:
        yield runner
    finally:
        if runner.current is not None:
            await runner.current.terminate()


async def count(spoke_client: KubeClient, prefix: str) -> int:
    """How many spoke ConfigMaps in ``default`` start with ``prefix``."""
    items = (await spoke_client.list(CONFIGMAPS, "default"))["items"]
    return sum(1 for cm in items if cm["metadata"]["name"].startswith(prefix))


async def test_killed_mid_apply_and_mid_delete(
    agents: Agents,
    env: Clusters,
) -> None:
    """SIGKILL during a 50-manifest apply and during its deletion; restarts converge."""
    await create_work(env.hub_client, "bystander", configmaps("bystander", 2))
    env.spoke.inject(verb="create", resource="configmaps", latency=0.1, userAgent=AGENT_ON_SPOKE)
    await create_work(env.hub_client, "big", configmaps("big", BIG))
    await agents.start()

    seen: list[int] = []

    async def partly_applied() -> bool:
        agents.alive()
        seen.append(await count(env.spoke_client, "big-"))
        return seen[-1] >= 10

    await eventually(partly_applied, timeout=60, what="the big work to be partly applied")
    await agents.kill()
    assert seen[-1] < BIG, "the kill must land mid-apply"
    env.spoke.clear_faults()

    await agents.start()
    expected = Expected(works={"bystander", "big"})
    await env.converged(expected, what="convergence after the kill mid-apply")

    # Mid-delete: the agent deletes the 50 objects 16 at a time; slow deletes let
    # the kill land after some are gone and before all are.
    env.spoke.inject(verb="delete", resource="configmaps", latency=0.5, userAgent=AGENT_ON_SPOKE)
    await delete_work(env.hub_client, "big")

    async def partly_deleted() -> bool:
        agents.alive()
        seen.append(await count(env.spoke_client, "big-"))
        return seen[-1] <= BIG - 10

    await eventually(partly_deleted, what="the big work to be partly deleted")
    await agents.kill()
    assert seen[-1] > 0, "the kill must land mid-delete"
    env.spoke.clear_faults()
    # While no agent runs, the hub moves on too.
    await set_manifests(env.hub_client, "bystander", configmaps("bystander", 1, v="later"))

    await agents.start()
    await env.converged({"bystander"}, what="convergence after the kill mid-delete")


async def test_manifests_removed_while_the_killed_agent_was_down(
    agents: Agents,
    env: Clusters,
) -> None:
    """Killed mid-apply of a work whose manifests are then removed before the agent
    is back: the objects it created but never recorded must go too."""
    env.spoke.inject(verb="create", resource="configmaps", latency=0.1, userAgent=AGENT_ON_SPOKE)
    await create_work(env.hub_client, "shrunk", configmaps("shrunk", 30))
    await agents.start()

    async def partly_applied() -> bool:
        agents.alive()
        return await count(env.spoke_client, "shrunk-") >= 10

    await eventually(partly_applied, timeout=60, what="the work to be partly applied")
    await agents.kill()
    env.spoke.clear_faults()
    written = await set_manifests(env.hub_client, "shrunk", configmaps("shrunk", 3))

    await agents.start()
    # The reconcile of the new generation is complete once the hub status and then
    # the AppliedManifestWork record it; stale objects are deleted before both.
    await wait_applied(env.hub_client, "shrunk", generation=written["metadata"]["generation"])

    async def recorded() -> bool:
        amw = await get_applied_work(env.spoke_client, env.the_hash, "shrunk")
        return len(((amw or {}).get("status") or {}).get("appliedResources") or []) == 3

    await eventually(recorded, what="the AppliedManifestWork to record the 3 manifests")
    found = await problems(
        env.hub_client, env.spoke_client, env.the_hash, Expected(works={"shrunk"})
    )
    leaked = [p for p in found if "leaked" in p]
    assert leaked == [], leaked


async def test_resources_are_recorded_before_they_are_created(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """What the kill tests rely on: the AppliedManifestWork lists a work's resources
    before the agent creates them: a new work's in the AppliedManifestWork's create (no
    extra write), a new generation's at the cost of one write, none when nothing
    changes."""
    env.spoke.inject(verb="create", resource="configmaps", latency=0.1, userAgent=AGENT_ON_SPOKE)
    await create_work(env.hub_client, "early", configmaps("early", 6))
    names = sorted(f"early-{i}" for i in range(6))

    async def listed_while_creating() -> bool:
        amw = await get_applied_work(env.spoke_client, env.the_hash, "early")
        # A new work's record is the AppliedManifestWork's creation (its annotation).
        entries = recorded_resources(amw or {})
        created = await count(env.spoke_client, "early-")
        assert created < len(names) or sorted(e["name"] for e in entries) == names
        return created >= 1 and sorted(e["name"] for e in entries) == names

    await eventually(listed_while_creating, what="the manifests listed before all exist")
    assert await count(env.spoke_client, "early-") < len(names), "listed only once all existed"
    env.spoke.clear_faults()
    await env.converged({"early"})

    async def amw_status_writes() -> int:
        counts = await agent_requests(env.spoke, AGENT_ON_SPOKE)
        return successes(counts, "patch", "appliedmanifestworks/status")

    # A new generation adding manifests: one write to list them, one with their UIDs.
    before = await amw_status_writes()
    written = await set_manifests(env.hub_client, "early", configmaps("early", 8))
    await wait_applied(env.hub_client, "early", generation=written["metadata"]["generation"])
    await env.converged({"early"})
    assert await amw_status_writes() - before == 2
    # A new generation that adds nothing: only the final write, dropping the removed ones.
    before = await amw_status_writes()
    written = await set_manifests(env.hub_client, "early", configmaps("early", 5))
    await wait_applied(env.hub_client, "early", generation=written["metadata"]["generation"])
    await env.converged({"early"})
    assert await amw_status_writes() - before == 1


async def test_a_failed_create_is_not_left_recorded(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """A resource listed before a create that failed is dropped from the record once
    the agent sees it does not exist, even while another manifest cannot be resolved
    (which holds back all stale deletion)."""
    unknown = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default"},
    }
    await create_work(
        env.hub_client, "failing", [unknown, *configmaps("lost", 1, namespace="nowhere")]
    )

    async def reported_and_unrecorded() -> bool:
        work = await get_work(env.hub_client, "failing")
        failed = [
            c.get("message")
            for entry in manifest_statuses(work)
            for c in entry.get("conditions") or []
            if c.get("type") == "Applied" and c.get("status") == "False"
        ]
        amw = await get_applied_work(env.spoke_client, env.the_hash, "failing")
        entries = ((amw or {}).get("status") or {}).get("appliedResources") or []
        return len(failed) == 2 and amw is not None and entries == []

    await eventually(reported_and_unrecorded, what="both failures reported, nothing recorded")
    await env.spoke_client.create(NAMESPACES, {"metadata": {"name": "nowhere"}})
    await set_manifests(env.hub_client, "failing", configmaps("lost", 1, namespace="nowhere"))
    await env.converged(Expected(works={"failing"}, namespaces=("nowhere",)))
