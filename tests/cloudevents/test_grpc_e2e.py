"""Our agent against our hub gRPC server over mutual TLS, end to end through the hub API.

Every scenario writes ManifestWorks to the hub kubesim and watches the
managed cluster and the hub: the agent never talks to the hub API server,
only to the gRPC server, which turns the hub's works into spec events and the
agent's status events back into ManifestWork status and finalizer changes.
"""

from __future__ import annotations

from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS, KubeClient, NotFound
from tests.cloudevents.conftest import (
    GrpcHub,
    apply_with_feedback,
    change_while_down,
    delete_work1,
    restart_until_passed,
    set_configmap,
    wait_configmap,
    wait_store_empty,
    wait_subscribed,
)
from tests.integration.conftest import (
    configmap,
    exists,
    get_work,
    update_work,
    wait_applied,
    wait_gone,
    work_body,
)
from tests.support.programs import CLUSTER, AgentRunner
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.controllers.eviction import NAME as EVICTION


async def test_create_update_feedback_rules_delete(
    grpc_agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    work = await apply_with_feedback(hub_client, spoke_client)
    # The hub names our server's finalizer and status writes as OCM's server's: "server".
    writers = {e["manager"] for e in work["metadata"]["managedFields"]} - {"integration-test"}
    assert writers == {"server"}, work["metadata"]["managedFields"]
    await wait_configmap(spoke_client, "cm1", "v2", what="cm1 updated")
    await delete_work1(hub_client, spoke_client)
    # The agent forgets the work. (The server's delete_request, sent when the hub
    # object goes, may bring it back briefly as a deleting work: confirmed again.)
    await wait_store_empty(grpc_agent)


async def test_every_delete_option(
    grpc_agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    works = {
        "foreground": ([configmap("fg")], {"propagationPolicy": "Foreground"}),
        "orphan": ([configmap("orphaned")], {"propagationPolicy": "Orphan"}),
        "selective": (
            [configmap("kept"), configmap("dropped")],
            {
                "propagationPolicy": "SelectivelyOrphan",
                "selectivelyOrphans": {
                    "orphaningRules": [
                        {"resource": "configmaps", "namespace": "default", "name": "kept"}
                    ]
                },
            },
        ),
    }
    for name, (manifests, option) in works.items():
        await hub_client.create(MANIFESTWORKS, work_body(name, manifests, deleteOption=option))
    for name in works:
        await wait_applied(hub_client, name)
    for name in works:
        await hub_client.delete(MANIFESTWORKS, name, CLUSTER)
    for name in works:
        await wait_gone(hub_client, MANIFESTWORKS, name, CLUSTER)
    await wait_gone(spoke_client, CONFIGMAPS, "fg", "default")
    await wait_gone(spoke_client, CONFIGMAPS, "dropped", "default")
    assert await exists(spoke_client, CONFIGMAPS, "orphaned", "default")
    assert await exists(spoke_client, CONFIGMAPS, "kept", "default")


async def test_server_restart_mid_apply_loses_nothing(
    grpc_agent: AgentRunner, grpc_hub: GrpcHub, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    await hub_client.create(MANIFESTWORKS, work_body("stays", [configmap("stays", key="v1")]))
    await wait_applied(hub_client, "stays")
    await hub_client.create(MANIFESTWORKS, work_body("gone", [configmap("gone")]))
    await wait_applied(hub_client, "gone")
    await grpc_hub.stop()
    # While the server is down: a new work, a spec change, a deletion.
    await hub_client.create(MANIFESTWORKS, work_body("new", [configmap("new")]))
    await update_work(hub_client, "stays", set_configmap("stays", "v2"))
    await hub_client.delete(MANIFESTWORKS, "gone", CLUSTER)
    await grpc_hub.start()
    await wait_subscribed(grpc_agent, at_least=2)
    await wait_applied(hub_client, "new")
    await wait_applied(hub_client, "stays", generation=2)
    await wait_configmap(spoke_client, "stays", "v2", what="stays updated after the restart")
    # The deletion happened while disconnected: the resync's answer says so.
    await wait_gone(spoke_client, CONFIGMAPS, "gone", "default")
    await wait_gone(hub_client, MANIFESTWORKS, "gone", CLUSTER)


async def test_agent_restart_resyncs_without_reapplying(
    grpc_agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, spoke: Cluster
) -> None:
    requests = RequestRecord(spoke)
    await hub_client.create(MANIFESTWORKS, work_body("work1", [configmap("cm1", key="v1")]))
    await wait_applied(hub_client, "work1")
    await change_while_down(grpc_agent, hub_client, spoke_client, "v2", generation=2)
    # One ConfigMap create in the whole test: the restarted agent updated it in place.
    assert requests.count("create", "configmaps", 201) == 1, requests.requests()
    try:
        await get_work(hub_client, "work1")
    except NotFound as err:  # pragma: no cover - the assertion explains
        raise AssertionError("the work vanished") from err


async def test_a_restart_over_applied_works_writes_no_applied_manifest_work(
    grpc_agent: AgentRunner, hub_client: KubeClient, spoke: Cluster
) -> None:
    """The restarted agent's cache is empty until its first resync is answered; no
    controller may act on it meanwhile (the eviction controller would start the grace
    period of every AppliedManifestWork, then clear it again)."""
    await hub_client.create(MANIFESTWORKS, work_body("work1", [configmap("cm1", key="v1")]))
    await wait_applied(hub_client, "work1")
    requests = await restart_until_passed(
        grpc_agent,
        spoke,
        {"controller": EVICTION, "result": "success"},
        what="the eviction controller's pass over work1's record",
    )
    assert requests.count("patch", "appliedmanifestworks/status") == 0, requests.requests()
