"""More of the kube driver's agent scenarios, over gRPC through our server.

The work's spec reaches the agent only as a spec event (``manifestConfigs``,
``executer``...), its status comes back only as status events, and a change
of labels is an ``update_request``: these check that each feature survives
the trip. Delete options are in test_grpc_e2e.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hubcontroller.grpcserver.works import WorkService, WorksUnavailable
from kubesim.sim import KubeSim
from ocmkit.cloudevents.works import StatusUpdate
from ocmkit.kube import (
    CONFIGMAPS,
    MANIFESTWORKS,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    KubeClient,
)
from tests.cloudevents.conftest import (
    GrpcHub,
    grpc_agent_settings,
    subscribed_agent,
    wait_subscribed,
)
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    forget_work,
    get_applied_work,
    manifest_condition,
    update_work,
    wait_applied,
    wait_gone,
    work_body,
)
from tests.integration.test_agent_e2e import EXECUTOR_BINDING, EXECUTOR_ROLE, executor_work
from tests.support.manifests import strategy
from tests.support.programs import CLUSTER, AgentRunner
from workagent.sources.cloudevents import CloudEventsWorkSource


async def data_of(spoke: KubeClient, name: str) -> dict[str, str]:
    """The data of ConfigMap ``default/<name>``."""
    cm = await spoke.get(CONFIGMAPS, name, "default")
    return dict(cm.get("data") or {})


async def test_server_side_apply_with_ignore_fields(
    grpc_agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """OnSpokePresent: created with the field, then never written again, so a value
    the spoke set survives a new spec from the hub."""
    ssa = strategy(
        "ssa",
        "ServerSideApply",
        ignoreFields=[{"condition": "OnSpokePresent", "jsonPaths": [".data.b"]}],
    )
    body = work_body("ssa", [configmap("ssa", a="hub", b="hub")], manifestConfigs=[ssa])
    await hub_client.create(MANIFESTWORKS, body)
    await wait_applied(hub_client, "ssa")
    assert await data_of(spoke_client, "ssa") == {"a": "hub", "b": "hub"}
    await spoke_client.patch(CONFIGMAPS, "ssa", {"data": {"b": "spoke"}}, "default")

    def v2(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [configmap("ssa", a="v2", b="v2")]

    await update_work(hub_client, "ssa", v2)
    await wait_applied(hub_client, "ssa", generation=2)
    assert await data_of(spoke_client, "ssa") == {"a": "v2", "b": "spoke"}


async def test_executor_denied_then_granted(
    grpc_agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """The executor arrives as ``executer`` on the wire; the spoke's authorizer decides."""
    namespace = EXECUTOR_BINDING["metadata"]["namespace"]
    account = EXECUTOR_BINDING["subjects"][0]["name"]
    await spoke_client.create(
        SERVICE_ACCOUNTS, {"metadata": {"name": account, "namespace": namespace}}
    )
    await spoke_client.create(ROLES, EXECUTOR_ROLE)
    await hub_client.create(MANIFESTWORKS, executor_work())
    work = await wait_applied(hub_client, "example-manifestwork", status="False")
    cond = manifest_condition(work, 0, "Applied")
    assert cond is not None and "not allowed to apply the resource" in cond["message"]

    await spoke_client.create(ROLE_BINDINGS, EXECUTOR_BINDING)

    def touch(work: dict[str, Any]) -> None:  # a label change requeues the work at once
        work["metadata"].setdefault("labels", {})["touched"] = "1"

    await update_work(hub_client, "example-manifestwork", touch)
    await wait_applied(hub_client, "example-manifestwork")
    assert await data_of(spoke_client, "test") == {"a": "b"}


async def test_work_deleted_while_the_agent_was_down_is_evicted(
    agent_config: Path, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A restarted agent's cache is empty, so the resync cannot say a work is gone:
    its AppliedManifestWork is evicted after the grace period (as in OCM)."""
    async with AgentRunner(grpc_agent_settings(tmp_path, agent_config)) as runner:
        await hub_client.create(MANIFESTWORKS, work_body("evicted", [configmap("evicted")]))
        await wait_applied(hub_client, "evicted")
        the_hash = runner.hub_hash
        await runner.stop()
        await forget_work(hub_client, "evicted")
        await wait_gone(hub_client, MANIFESTWORKS, "evicted", CLUSTER)
        assert await get_applied_work(spoke_client, the_hash, "evicted") is not None

        runner.settings = replace(runner.settings, eviction_grace_period=0.5)
        await runner.start()

        async def evicted() -> bool:
            return await get_applied_work(spoke_client, the_hash, "evicted") is None

        await eventually(evicted, what="the AppliedManifestWork to be evicted")
        await wait_gone(spoke_client, CONFIGMAPS, "evicted", "default")


async def wait_refused(runner: AgentRunner) -> CloudEventsWorkSource:
    """Wait until the agent's source had a spec resync request refused; returns it."""
    assert runner.agent is not None
    source = runner.agent.manager.services[0]
    assert isinstance(source, CloudEventsWorkSource)

    async def refused() -> bool:
        return source.resync_refusals >= 1

    await eventually(refused, what="a refused resync")
    return source


@pytest.mark.kubesim_only("injects a fault into the hub's lists")
@pytest.mark.usefixtures("spoke_client")  # the agent's cluster
async def test_works_that_cannot_be_listed_are_refused_at_once_then_served(
    hub: KubeSim, hub_client: KubeClient, grpc_hub: GrpcHub, agent_config: Path, tmp_path: Path
) -> None:
    """While the hub refuses to list a cluster's works (no CRD, no RBAC), a resync is
    refused with the hub's error at once, not after a wait as long as the agents'
    publish deadline; once they can be listed the agent gets them."""
    hub.inject(verb="list", resource="manifestworks", code=500)
    await hub_client.create(MANIFESTWORKS, work_body("unlisted", [configmap("unlisted")]))
    assert grpc_hub.service is not None
    works = grpc_hub.service.broker.works
    # The message names the hub's error: the refusal came from the failed list, not
    # from the deadline (whose message is "were not listed in time").
    with pytest.raises(WorksUnavailable, match=f"ManifestWorks of {CLUSTER} cannot be listed: 500"):
        await works.resync(CLUSTER, {})
    async with subscribed_agent(grpc_agent_settings(tmp_path, agent_config)) as runner:
        source = await wait_refused(runner)
        # Not ready while it knows none of its works, as an informer before its first list.
        failure = source.readiness_failure()
        assert failure is not None
        assert failure.startswith("first spec resync not answered: refused: "), failure
        hub.clear_faults()
        await wait_applied(hub_client, "unlisted")

        async def ready() -> bool:
            return source.readiness_failure() is None

        await eventually(ready, what="the agent ready once its works are known")


@pytest.mark.kubesim_only("injects a fault into the hub's lists")
async def test_a_refused_resync_is_asked_again_on_the_open_stream(
    hub: KubeSim,
    hub_client: KubeClient,
    spoke_client: KubeClient,
    grpc_hub: GrpcHub,
    agent_config: Path,
    tmp_path: Path,
) -> None:
    """A work removed from the hub while the agent was away reaches the agent only
    through a resync answer; when the first resync after the reconnect is refused,
    the agent asks again on the same stream instead of reconnecting."""
    async with subscribed_agent(grpc_agent_settings(tmp_path, agent_config)) as runner:
        await hub_client.create(MANIFESTWORKS, work_body("gone", [configmap("gone")]))
        await wait_applied(hub_client, "gone")
        await grpc_hub.stop()
        await forget_work(hub_client, "gone")
        hub.inject(verb="list", resource="manifestworks", code=500)
        await grpc_hub.start()
        await wait_subscribed(runner, at_least=2)
        source = await wait_refused(runner)
        hub.clear_faults()
        await wait_gone(spoke_client, CONFIGMAPS, "gone", "default")
        assert source.subscriptions == 2


def available(status: str) -> list[dict[str, Any]]:
    """A status event's conditions: only ``Available``, ``status``."""
    return [
        {
            "type": "Available",
            "status": status,
            "reason": "ResourcesAvailable",
            "message": "",
            "lastTransitionTime": "2026-11-29T10:00:00Z",
            "observedGeneration": 1,
        }
    ]


async def test_a_status_that_goes_back_is_written_before_the_cache_shows_the_last_one(
    hub_client: KubeClient,
) -> None:
    # S0, S1, S0 back to back: the informer may still show S0 when the second S0
    # comes; it must not be taken for "unchanged" while the hub holds S1.
    service = WorkService(hub_client, lambda _cluster, _event: None)
    try:
        await service.ensure(CLUSTER)
        created = await hub_client.create(
            MANIFESTWORKS, work_body("back", [configmap("back-cm")]), CLUSTER
        )
        uid = created["metadata"]["uid"]

        async def cached() -> bool:
            informer = await service.ensure(CLUSTER)
            return informer.store.get(f"{CLUSTER}/back") is not None

        await eventually(cached, what="the work in the server's cache")

        def update(status: str) -> StatusUpdate:
            return StatusUpdate(uid, CLUSTER, 1, "update_request", "1", available(status), [])

        for status in ("False", "True", "False", "True", "False"):
            assert await service.apply_status(update(status)) == "status patched", status
        work = await hub_client.get(MANIFESTWORKS, "back", CLUSTER)
        assert work["status"]["conditions"][0]["status"] == "False"
    finally:
        await service.stop()
