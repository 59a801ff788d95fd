"""The feedback watch pool under watch storms.

Works report status feedback with ``feedbackScrapeType: Watch``: the agent
watches their Deployments through the shared informers of the feedback watch
pool (one per resource type and namespace), and the status sync interval is a
minute, so feedback arriving within seconds came through those watches. Only
the test writes the Deployments' status (no simulated workload controller
that would write its own values in between).

While the test keeps changing the Deployments' status, kubesim ends every
watch over and over, cleanly or with ``410 Expired`` after a compaction (so
the pool informers must relist). The feedback must converge to the last
values written, and the number of watches open on the spoke must stay at one
per informer: a watch leaked by a reconnect would show up as one more. Midway,
the only work of a third namespace is deleted, so its pool informer is
stopped during the storm: its watch must go too, and not come back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import DEPLOYMENTS, MANIFESTWORKS, NAMESPACES, Conflict, KubeClient
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import delete_work
from tests.faults.invariants import Expected
from tests.integration.conftest import (
    manifest_statuses,
    work_body,
)
from tests.support.manifests import deployment
from tests.support.programs import AgentRunner, agent_settings

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

NAMESPACES_UNDER_TEST = ("default", "storm")
#: The namespace of the work deleted during the storm (its pool informer stops).
LEAVING = "leaving"
#: Works per namespace; each holds one Deployment whose readyReplicas is fed back.
PER_NAMESPACE = 2
ROUNDS = 6
#: Long enough that only the watches can bring feedback within the test.
STATUS_SYNC_SECONDS = 60.0


@pytest.fixture
async def runner(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """The in-process agent with a one-minute status sync."""
    for namespace in ("storm", LEAVING):
        await spoke_client.create(NAMESPACES, {"metadata": {"name": namespace}})
    agent = AgentRunner(agent_settings(tmp_path, status_sync_interval=STATUS_SYNC_SECONDS))
    await agent.start()
    try:
        yield agent
    finally:
        await agent.stop()


def watched_work(name: str, namespace: str) -> dict[str, Any]:
    """Extra spec of a work whose Deployment ``name`` feeds back readyReplicas by Watch."""
    return {
        "manifestConfigs": [
            {
                "resourceIdentifier": {
                    "group": "apps",
                    "resource": "deployments",
                    "namespace": namespace,
                    "name": name,
                },
                "feedbackRules": [
                    {
                        "type": "JSONPaths",
                        "jsonPaths": [{"name": "ready", "path": ".status.readyReplicas"}],
                    }
                ],
                "feedbackScrapeType": "Watch",
            }
        ]
    }


def ready_fed_back(work: dict[str, Any]) -> int | None:
    """The work's ``ready`` feedback value, None before any."""
    for entry in manifest_statuses(work):
        for value in (entry.get("statusFeedback") or {}).get("values") or []:
            if value.get("name") == "ready":
                return int(value["fieldValue"]["integer"])
    return None


async def set_ready(spoke_client: KubeClient, name: str, namespace: str, ready: int) -> None:
    """Write the Deployment's status as a workload controller would (retry on 409)."""
    for _ in range(20):
        live = await spoke_client.get(DEPLOYMENTS, name, namespace)
        patch = {
            "status": {"replicas": ready, "readyReplicas": ready, "availableReplicas": ready},
            "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]},
        }
        try:
            await spoke_client.patch(
                DEPLOYMENTS, name, patch, namespace, patch_type="merge", subresource="status"
            )
            return
        except Conflict:
            continue
    raise AssertionError(f"deployment {namespace}/{name}: status write kept conflicting")


async def test_feedback_converges_through_watch_storms(
    runner: AgentRunner,
    env: Clusters,
) -> None:
    """Status changes between watch drops and 410 storms reach the hub; no watch leaks."""
    objects = [(f"d-{ns}-{i}", ns) for ns in NAMESPACES_UNDER_TEST for i in range(PER_NAMESPACE)]
    leaving = (f"d-{LEAVING}", LEAVING)
    for name, ns in [*objects, leaving]:
        body = work_body(
            name,
            [deployment(name, ns, container="main", image="busybox")],
            **watched_work(name, ns),
        )
        await env.hub_client.create(MANIFESTWORKS, body)
    all_namespaces = (*NAMESPACES_UNDER_TEST, LEAVING)
    await env.converged(
        Expected(works={n for n, _ in [*objects, leaving]}, namespaces=all_namespaces)
    )

    assert runner.agent is not None and runner.agent.deps.watch_pool is not None
    pool = runner.agent.deps.watch_pool

    async def all_watched() -> bool:
        return len(pool.registrations()) == len(objects) + 1

    await eventually(all_watched, what="every Deployment to be watched by the pool")
    assert len(pool.watched()) == len(all_namespaces)
    # One watch per informer: the AppliedManifestWorks and each pool informer.
    before = 1 + len(all_namespaces)
    assert env.spoke.store.watch_count() == before
    baseline = before - 1  # once the leaving namespace's informer has stopped

    faults: list[Callable[[], int]] = [env.spoke.expire_watches, env.spoke.close_watches]
    seen: list[int] = []
    last = 0
    for round_ in range(1, ROUNDS + 1):
        last = round_ + 1
        for name, ns in objects:
            await set_ready(env.spoke_client, name, ns, last)
        if round_ == 2:
            await delete_work(env.hub_client, leaving[0])
        faults[round_ % 2]()
        if round_ % 3 == 0:
            env.hub.expire_watches()

        async def watching_again() -> bool:
            seen.append(env.spoke.store.watch_count())
            return seen[-1] >= baseline

        await eventually(watching_again, what=f"the agent to watch again after round {round_}")

    async def fed_back() -> bool:
        seen.append(env.spoke.store.watch_count())
        works = (await env.hub_client.list(MANIFESTWORKS, "cluster1"))["items"]
        return len(works) == len(objects) and all(ready_fed_back(w) == last for w in works)

    await eventually(
        fed_back, timeout=STATUS_SYNC_SECONDS / 3, what=f"feedback ready={last} on every work"
    )
    expected = Expected(works={n for n, _ in objects}, namespaces=all_namespaces)
    await env.converged(expected, what="convergence after storms")
    assert len(pool.watched()) == len(NAMESPACES_UNDER_TEST)

    async def one_watch_per_informer() -> bool:
        seen.append(env.spoke.store.watch_count())
        return seen[-1] == baseline

    await eventually(one_watch_per_informer, what=f"{baseline} open watches (one per informer)")
    assert max(seen) <= before, f"more watches than informers during the storm: {max(seen)}"
