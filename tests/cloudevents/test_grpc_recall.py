"""Recall on the grpc driver: works come without status after a restart, so the
AppliedManifestWork's applied generation tells the agent what changed while it was
down (docs/agent.md, "The apply loop"). The spoke completes Jobs as a workload
controller would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from demo.examples import hello_deployment
from ocmkit.kube import APPLIED_MANIFESTWORKS, DEPLOYMENTS, MANIFESTWORKS, KubeClient
from tests.cloudevents.conftest import (
    GrpcHub,
    restart_until_passed,
    set_configmap,
    wait_subscribed,
)
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    drop_padding,
    manifest_condition,
    padded_deployment,
    update_work,
    wait_applied,
    wait_gone,
    wait_padding_dropped,
    wait_work,
    work_body,
)
from tests.kube.helpers import sample
from tests.support.manifests import manifest_config, pi_job
from tests.support.programs import CLUSTER, AgentRunner
from tests.support.targets import Cluster
from workagent.controllers.applied import APPLIED_GENERATION_ANNOTATION
from workagent.identity import applied_work_name, hub_hash

#: A finished pass of the apply loop (it requeues itself for the resync).
PASSES = {"controller": "manifestwork-controller", "result": "requeue_after"}


@dataclass
class Grpc:
    """cluster1's agent on the grpc driver, and the clients of both sides."""

    agent: AgentRunner
    hub: KubeClient
    spoke: KubeClient
    cluster: Cluster
    url: str

    def amw(self, work: str) -> str:
        """The name of ``work``'s AppliedManifestWork."""
        return applied_work_name(hub_hash(self.url), work)


@pytest.fixture
def grpc(
    grpc_agent: AgentRunner,
    grpc_hub: GrpcHub,
    hub_client: KubeClient,
    spoke_client: KubeClient,
    spoke: Cluster,
) -> Grpc:
    """The agent, the clients and the spoke of a test."""
    return Grpc(grpc_agent, hub_client, spoke_client, spoke, grpc_hub.url)


@pytest.fixture
def spoke_options() -> dict[str, Any]:
    """The spoke completes Jobs and makes Deployments available."""
    return {"simulate_workloads": True}


async def recorded_generation(spoke_client: KubeClient, amw: str) -> str | None:
    """The generation AppliedManifestWork ``amw`` records as applied (the raw text)."""
    meta = (await spoke_client.get(APPLIED_MANIFESTWORKS, amw))["metadata"]
    found = (meta.get("annotations") or {}).get(APPLIED_GENERATION_ANNOTATION)
    return None if found is None else str(found)


async def assert_restart_writes_nothing(runner: AgentRunner, spoke: Cluster) -> None:
    """Restart the agent: its pass over the work writes nothing to the spoke, not even
    a dry run."""
    requests = await restart_until_passed(
        runner, spoke, PASSES, what="the restarted agent's pass over the work"
    )
    assert requests.sent_writes() == [], requests.sent_writes()


async def wait_recorded(spoke_client: KubeClient, amw: str, generation: int) -> None:
    """Wait until AppliedManifestWork ``amw`` records ``generation`` as applied."""

    async def recorded() -> bool:
        return await recorded_generation(spoke_client, amw) == str(generation)

    await eventually(recorded, what=f"generation {generation} recorded as applied")


async def test_keys_a_manifest_dropped_while_the_agent_was_down_are_removed(grpc: Grpc) -> None:
    """Works from grpc arrive without status after a restart; the generation the
    AppliedManifestWork records as applied tells the agent the manifest changed
    meanwhile, so it removes what the new generation no longer sets (OCM's PUT)."""
    amw = grpc.amw("shrink")
    await grpc.hub.create(MANIFESTWORKS, work_body("shrink", [padded_deployment()]))
    await wait_applied(grpc.hub, "shrink")
    await wait_recorded(grpc.spoke, amw, 1)
    await grpc.agent.stop()
    await update_work(grpc.hub, "shrink", drop_padding)
    await grpc.agent.start()
    await wait_subscribed(grpc.agent)
    await wait_applied(grpc.hub, "shrink", generation=2)
    await wait_padding_dropped(grpc.spoke)
    await wait_recorded(grpc.spoke, amw, 2)
    # A restart at the recorded generation recalls nothing: no write, not even a dry run.
    await assert_restart_writes_nothing(grpc.agent, grpc.cluster)


async def test_a_work_taken_over_as_it_is_is_recorded_from_its_next_generation_on(
    grpc: Grpc,
) -> None:
    """An AppliedManifestWork without the record (OCM's agent made it) is not written on
    taking the work over as it is; the next generation this agent applies is recorded."""
    amw = grpc.amw("work1")
    await grpc.hub.create(MANIFESTWORKS, work_body("work1", [configmap("cm1", key="v1")]))
    await wait_applied(grpc.hub, "work1")
    await wait_recorded(grpc.spoke, amw, 1)
    await grpc.agent.stop()
    unrecord = {"metadata": {"annotations": {APPLIED_GENERATION_ANNOTATION: None}}}
    await grpc.spoke.patch(APPLIED_MANIFESTWORKS, amw, unrecord, patch_type="merge")
    await assert_restart_writes_nothing(grpc.agent, grpc.cluster)
    await update_work(grpc.hub, "work1", set_configmap("cm1", "v2"))
    await wait_recorded(grpc.spoke, amw, 2)


async def test_a_new_work_recalls_nothing_on_an_object_it_adopts(
    grpc_agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """A new work's manifests were never applied by it: keys another (orphaning) work
    set on the object it adopts stay, as on the kube driver."""
    orphaning = {"propagationPolicy": "Orphan"}
    await hub_client.create(
        MANIFESTWORKS, work_body("keeper", [padded_deployment()], deleteOption=orphaning)
    )
    await wait_applied(hub_client, "keeper")
    await hub_client.delete(MANIFESTWORKS, "keeper", CLUSTER)
    await wait_gone(hub_client, MANIFESTWORKS, "keeper", CLUSTER)
    await hub_client.create(MANIFESTWORKS, work_body("adopter", [hello_deployment(1)]))
    await wait_applied(hub_client, "adopter")
    live = await spoke_client.get(DEPLOYMENTS, "hello", "default")
    assert live["spec"]["minReadySeconds"] == 7
    assert live["spec"]["revisionHistoryLimit"] == 3


async def test_a_completed_manifest_holds_the_record_back(grpc: Grpc) -> None:
    """A manifest skipped because it completed was not applied at the new generation:
    the record stays at the generation every manifest was applied at."""
    amw = grpc.amw("mixed")
    done = [{"type": "WellKnownConditions", "condition": "Complete"}]
    # A rule that is never met keeps the work from completing (and freezing) as a whole.
    never = [{"type": "CEL", "condition": "Complete", "celExpressions": ["false"]}]
    body = work_body(
        "mixed",
        [pi_job("pi"), configmap("cm1", key="v1")],
        manifestConfigs=[
            manifest_config("batch", "jobs", "pi", rules=done),
            manifest_config("", "configmaps", "cm1", rules=never),
        ],
    )
    await grpc.hub.create(MANIFESTWORKS, body)
    await wait_work(
        grpc.hub,
        "mixed",
        lambda w: (manifest_condition(w, 0, "Complete") or {}).get("status") == "True",
        "the Job's manifest to complete",
    )
    await wait_recorded(grpc.spoke, amw, 1)
    before = sample("controller_runtime_reconcile_total", PASSES)

    def change_cm1(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"][1] = configmap("cm1", key="v2")

    written = await update_work(grpc.hub, "mixed", change_cm1)
    generation = written["metadata"]["generation"]
    await wait_applied(grpc.hub, "mixed", generation=generation)

    async def passed() -> bool:
        return sample("controller_runtime_reconcile_total", PASSES) > before

    await eventually(passed, what="the pass over the new generation")
    assert await recorded_generation(grpc.spoke, amw) == "1"
