"""What the agent keeps in memory per work, on both targets (docs/agent.md, Memory).

Structural facts only, never sizes: the caches of works and AppliedManifestWorks
hold no ``managedFields``, no copy of a write outlives the informer catching up
with it, and the coalesced status-sync LISTs drop ``managedFields`` unless a
feedback rule may read them, in which case that feedback still works.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS, KubeClient
from ocmkit.runtime.recentwrites import RecentWrites
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    get_work,
    values_of,
    wait_applied,
    work_body,
)
from tests.integration.test_status import running_agent, string
from tests.support.manifests import json_paths, manifest_config
from tests.support.programs import CLUSTER, AgentRunner
from workagent.polledreads import LIST_THRESHOLD

#: Enough ConfigMaps in one namespace for the status syncs to LIST them.
MANY = LIST_THRESHOLD + 2


def holds(predicate: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    """``predicate`` as the coroutine function :func:`eventually` polls."""

    async def check() -> bool:
        return predicate()

    return check


def served_from_lists() -> float:
    """Poll-mode reads answered from a coalesced LIST so far."""
    return REGISTRY.get_sample_value("polled_reads_served_from_list_total") or 0.0


def remembered_writes(runner: AgentRunner) -> int:
    """Writes every controller of the agent remembers, summed."""
    assert runner.agent is not None
    total = 0
    for controller in runner.agent.manager.controllers:
        owner = getattr(getattr(controller, "_reconcile", None), "__self__", None)
        for value in vars(owner).values() if owner is not None else ():
            if isinstance(value, RecentWrites):
                total += len(value)
    return total


def listed(runner: AgentRunner, name: str) -> dict[str, Any] | None:
    """What the polled reads know of ConfigMap ``default/name``."""
    assert runner.agent is not None
    return runner.agent.deps.polled_reads.peek(CONFIGMAPS, "default", name)


async def apply_many(
    runner: AgentRunner, hub_client: KubeClient, work: str, rule: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """Apply work ``work`` of MANY ConfigMaps ``<work>-<i>``, the first with feedback
    ``rule``; once status syncs read them from a list: (their names, the last one listed)."""
    names = [f"{work}-{i}" for i in range(MANY)]
    configs = [manifest_config("", "configmaps", names[0], feedback=[rule])]
    before = served_from_lists()
    await hub_client.create(
        MANIFESTWORKS, work_body(work, [configmap(n) for n in names], manifestConfigs=configs)
    )
    await wait_applied(hub_client, work)
    await eventually(holds(lambda: served_from_lists() > before), what="reads served from a list")
    await eventually(holds(lambda: listed(runner, names[-1]) is not None), what="a listed object")
    obj = listed(runner, names[-1])
    assert obj is not None
    return names, obj


async def test_caches_hold_no_managed_fields_nor_old_writes(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """The hub's work has managedFields, the agent's cached copy has none; the
    AppliedManifestWork likewise; once idle no controller keeps a written object."""
    async with running_agent(tmp_path) as runner:
        await hub_client.create(MANIFESTWORKS, work_body("lean", [configmap("lean")]))
        await wait_applied(hub_client, "lean")
        assert (await get_work(hub_client, "lean"))["metadata"].get("managedFields")
        assert runner.agent is not None
        deps = runner.agent.deps

        def cached_work() -> dict[str, Any] | None:
            return deps.works.store.get(f"{CLUSTER}/lean")

        await eventually(holds(lambda: cached_work() is not None), what="the work in the cache")
        applied = deps.applied.store.list()
        assert applied
        for obj in [cached_work(), *applied]:
            assert obj is not None
            assert "managedFields" not in obj["metadata"]
            assert obj["metadata"].get("resourceVersion")
        await eventually(holds(lambda: remembered_writes(runner) == 0), what="no write remembered")


async def test_lists_drop_managed_fields_no_rule_reads(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """Status syncs of many ConfigMaps read them from a LIST that keeps no managedFields."""
    async with running_agent(tmp_path) as runner:
        names, obj = await apply_many(
            runner, hub_client, "plain", json_paths(("n", ".metadata.name"))
        )
        assert "managedFields" not in obj["metadata"]
        assert (await spoke_client.get(CONFIGMAPS, names[-1], "default"))["metadata"].get(
            "managedFields"
        )
        work = await get_work(hub_client, "plain")
        assert values_of(work, 0) == [("n", string(names[0]))]


async def test_feedback_over_managed_fields_with_lists(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A feedback path into managedFields keeps them in the lists, and keeps reporting."""
    rule = json_paths(("manager", ".metadata.managedFields[0].manager"))
    async with running_agent(tmp_path) as runner:
        names, _ = await apply_many(runner, hub_client, "owned", rule)

        def kept() -> bool:
            obj = listed(runner, names[-1]) or {}
            return bool((obj.get("metadata") or {}).get("managedFields"))

        # What the apply loop got before the feedback first asked for managedFields
        # is kept without them, and may be newer than the first list (a CI run saw
        # it); every list sent since the ask carries them.
        await eventually(holds(kept), what="the listed object with its managedFields")
        # Reads served from lists since: the value is still there after them.
        mark = served_from_lists()
        await eventually(
            holds(lambda: served_from_lists() >= mark + 2 * MANY), what="more list reads"
        )
        work = await get_work(hub_client, "owned")
        assert values_of(work, 0) == [("manager", string("work-agent"))]
