"""The apply loop end to end: hub ManifestWork -> spoke resources, AMW and status.

A hub and a spoke (kubesim or a real control plane each) and the real agent,
over real HTTP. Every wait is on an observable condition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog.testing
import yaml

from demo.examples import hello_deployment
from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    LEASES,
    MANIFESTWORKS,
    NAMESPACES,
    Invalid,
    KubeClient,
    KubeConfigError,
    NotFound,
    Resource,
    ServerError,
)
from ocmkit.runtime import LeaderElectionSettings, run_built
from tests.conftest import eventually
from tests.integration.conftest import (
    WIDGET_CRD,
    configmap,
    drop_padding,
    exists,
    get_applied_work,
    get_work,
    has_cleanup_finalizer,
    hub_hash_of,
    manifest_condition,
    manifest_statuses,
    padded_deployment,
    update_work,
    wait_applied,
    wait_padding_dropped,
    work_body,
    work_condition,
)
from tests.support.processes import start_agent_process
from tests.support.programs import CLUSTER, AgentRunner, agent_settings
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.agent import build_agent
from workagent.controllers.applied import APPLIED_GENERATION_ANNOTATION
from workagent.identity import hub_hash
from workagent.sources import kubeconfig_server

HELLO_DEPLOYMENT = hello_deployment()


async def test_hello_work_demo(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """The seeds' hello-work-demo: deployment, finalizer, AMW, exact status."""
    await hub_client.create(MANIFESTWORKS, work_body("hello-work-demo", [HELLO_DEPLOYMENT]))

    work = await wait_applied(hub_client, "hello-work-demo")
    deployment = await spoke_client.get(DEPLOYMENTS, "hello", "default")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "quay.io/asmacdo/busybox"
    )
    assert has_cleanup_finalizer(work)

    generation = work["metadata"]["generation"]
    applied = work_condition(work, "Applied")
    assert applied is not None
    assert (applied["status"], applied["reason"], applied["message"]) == (
        "True",
        "AppliedManifestWorkComplete",
        "Apply manifest work complete",
    )
    assert applied["observedGeneration"] == generation
    [entry] = manifest_statuses(work)
    assert entry["resourceMeta"] == {
        "ordinal": 0,
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
        "resource": "deployments",
        "name": "hello",
        "namespace": "default",
    }
    cond = manifest_condition(work, 0, "Applied")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"], cond["observedGeneration"]) == (
        "True",
        "AppliedManifestComplete",
        "Apply manifest complete",
        generation,
    )

    # The AppliedManifestWork: named after the hub hash, records the deployment.
    the_hash = hub_hash_of(tmp_path)
    assert agent.hub_hash == the_hash

    async def recorded() -> bool:
        # Listed once the live UID is known (an entry may be listed before its object exists).
        amw = await get_applied_work(spoke_client, the_hash, "hello-work-demo")
        entries = ((amw or {}).get("status") or {}).get("appliedResources") or []
        return bool(entries) and all(e.get("uid") for e in entries)

    await eventually(recorded, what="the AMW to record the deployment")
    amw = await get_applied_work(spoke_client, the_hash, "hello-work-demo")
    assert amw is not None
    assert amw["metadata"]["name"] == f"{the_hash}-hello-work-demo"
    assert amw["spec"] == {
        "hubHash": the_hash,
        "manifestWorkName": "hello-work-demo",
        "agentID": the_hash,
    }
    assert (
        "cluster.open-cluster-management.io/applied-manifest-work-cleanup"
        in (amw["metadata"]["finalizers"])
    )
    assert amw["status"]["appliedResources"] == [
        {
            "group": "apps",
            "version": "v1",
            "resource": "deployments",
            "namespace": "default",
            "name": "hello",
            "uid": deployment["metadata"]["uid"],
        }
    ]
    # The deployment is owned (plainly) by the AMW.
    assert deployment["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "work.open-cluster-management.io/v1",
            "kind": "AppliedManifestWork",
            "name": amw["metadata"]["name"],
            "uid": amw["metadata"]["uid"],
        }
    ]


async def test_edit_updates_and_removal_deletes(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """Editing a manifest updates the resource; removing one deletes it."""
    body = work_body("edits", [configmap("first", key="one"), configmap("second")])
    await hub_client.create(MANIFESTWORKS, body)
    await wait_applied(hub_client, "edits")
    assert (await spoke_client.get(CONFIGMAPS, "first", "default"))["data"] == {"key": "one"}

    def edit(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [configmap("first", key="two")]

    written = await update_work(hub_client, "edits", edit)
    await wait_applied(hub_client, "edits", generation=written["metadata"]["generation"])

    async def converged() -> bool:
        first = await spoke_client.get(CONFIGMAPS, "first", "default")
        gone = not await exists(spoke_client, CONFIGMAPS, "second", "default")
        return first["data"] == {"key": "two"} and gone

    await eventually(converged, what="first updated and second deleted")
    work = await get_work(hub_client, "edits")
    assert [e["resourceMeta"]["name"] for e in manifest_statuses(work)] == ["first"]

    async def amw_has_only_first() -> bool:
        amw = await get_applied_work(spoke_client, hub_hash_of(tmp_path), "edits")
        names = [r["name"] for r in (amw or {}).get("status", {}).get("appliedResources", [])]
        return names == ["first"]

    await eventually(amw_has_only_first, what="the AMW to list only the first configmap")

    # No manifests left: the list goes from the status (Go's omitempty), the object too.
    def empty(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = []

    await update_work(hub_client, "edits", empty)

    async def emptied() -> bool:
        status = (await get_work(hub_client, "edits")).get("status") or {}
        gone = not await exists(spoke_client, CONFIGMAPS, "first", "default")
        return status.get("resourceStatus") == {} and gone

    await eventually(emptied, what="resourceStatus {} and the first configmap deleted")


async def test_a_false_added_in_a_later_generation_reaches_the_object(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """``automountServiceAccountToken: false`` added to a Deployment already applied
    is written (absent means the token is mounted)."""
    await hub_client.create(MANIFESTWORKS, work_body("harden", [hello_deployment(1)]))
    await wait_applied(hub_client, "harden")

    def harden(work: dict[str, Any]) -> None:
        pod = work["spec"]["workload"]["manifests"][0]["spec"]["template"]["spec"]
        pod["automountServiceAccountToken"] = False

    written = await update_work(hub_client, "harden", harden)
    await wait_applied(hub_client, "harden", generation=written["metadata"]["generation"])

    async def hardened() -> bool:
        live = await spoke_client.get(DEPLOYMENTS, "hello", "default")
        return live["spec"]["template"]["spec"].get("automountServiceAccountToken") is False

    await eventually(hardened, what="automountServiceAccountToken false on the Deployment")


async def test_keys_a_manifest_dropped_while_the_agent_was_down_are_removed(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """The manifest applied last is only in memory: after a restart the agent recalls
    what it set from the object's managedFields, and removes what the new generation
    no longer sets, as OCM's PUT of the manifest would."""
    await hub_client.create(MANIFESTWORKS, work_body("shrink", [padded_deployment()]))
    await wait_applied(hub_client, "shrink")
    await agent.stop()
    written = await update_work(hub_client, "shrink", drop_padding)
    await agent.start()
    await wait_applied(hub_client, "shrink", generation=written["metadata"]["generation"])
    await wait_padding_dropped(spoke_client)
    # The hub keeps the status that told: the kube driver records no applied generation.
    amw = await get_applied_work(spoke_client, hub_hash_of(tmp_path), "shrink")
    assert amw is not None
    assert APPLIED_GENERATION_ANNOTATION not in (amw["metadata"].get("annotations") or {})


async def test_keys_another_work_sets_on_a_shared_object_are_not_recalled(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, spoke: Cluster
) -> None:
    """Every work writes as ``work-agent``; a work that orphans the object leaves no owner
    reference on it, but its AppliedManifestWork records it: the other work's recall
    leaves what it set alone."""
    keeper = hello_deployment()
    keeper["spec"]["minReadySeconds"] = 7
    await hub_client.create(
        MANIFESTWORKS, work_body("keeper", [keeper], deleteOption={"propagationPolicy": "Orphan"})
    )
    await wait_applied(hub_client, "keeper")
    await hub_client.create(MANIFESTWORKS, work_body("scaler", [hello_deployment(2)]))
    await wait_applied(hub_client, "scaler")
    await agent.stop()

    def scale(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [hello_deployment(3)]

    written = await update_work(hub_client, "scaler", scale)
    record = RequestRecord(spoke)
    await agent.start()
    await wait_applied(hub_client, "scaler", generation=written["metadata"]["generation"])
    live = await spoke_client.get(DEPLOYMENTS, "hello", "default")
    assert live["spec"]["replicas"] == 3
    assert live["spec"]["minReadySeconds"] == 7
    updates = [w for w in record.writes() if w.resource == "deployments" and w.verb == "update"]
    assert len(updates) == 1, updates  # the scaling; no removal for the keeper to undo


async def test_restart_writes_nothing(
    agent: AgentRunner,
    hub: Cluster,
    spoke: Cluster,
    hub_client: KubeClient,
    spoke_client: KubeClient,
) -> None:
    """A converged work sees no write from a restarted agent (resync compares and skips)."""
    await hub_client.create(MANIFESTWORKS, work_body("quiet", [configmap("quiet-cm")]))
    await hub_client.create(MANIFESTWORKS, work_body("quiet-deploy", [HELLO_DEPLOYMENT]))
    await wait_applied(hub_client, "quiet")
    await wait_applied(hub_client, "quiet-deploy")

    async def status_reported() -> bool:
        # The status controller's first write (Available) is part of converging.
        works = [await get_work(hub_client, name) for name in ("quiet", "quiet-deploy")]
        return all(work_condition(work, "Available") is not None for work in works)

    await eventually(status_reported, what="both works to report Available")
    await agent.stop()

    records = [RequestRecord(hub), RequestRecord(spoke)]
    await agent.start()
    assert agent.agent is not None
    controller = next(
        c for c in agent.agent.manager.controllers if c.name == "manifestwork-controller"
    )

    async def both_resynced() -> bool:
        # After a successful reconcile the key waits ~4 minutes for the next resync
        # (a failed one would be back within seconds).
        waiting = controller.queue.waiting()
        return all(waiting.get(name, 0) > 200 for name in ("quiet", "quiet-deploy"))

    await eventually(both_resynced, what="both works reconciled after the restart")
    hub_record, spoke_record = records
    # The records do see the restarted agent: its informers listed on both clusters.
    assert hub_record.count("list", "manifestworks", 200) >= 1
    assert spoke_record.count("list", "appliedmanifestworks", 200) >= 1
    for record in records:
        made = record.writes()
        assert made == [], made
    work = await get_work(hub_client, "quiet")
    assert work["metadata"]["namespace"] == CLUSTER


def applied_message(work: dict[str, Any], ordinal: int) -> tuple[str, str, str]:
    """(status, reason, message) of a manifest's Applied condition."""
    cond = manifest_condition(work, ordinal, "Applied")
    assert cond is not None, f"manifest {ordinal} has no Applied condition"
    return cond["status"], cond["reason"], cond["message"]


async def test_bad_manifests_fail_alone_and_recover(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """Each bad manifest is Applied=False with its own reason; the rest is applied."""
    # A namespace being deleted refuses new content with 403 Forbidden.
    await spoke_client.create(NAMESPACES, {"metadata": {"name": "doomed"}})
    held = configmap("held", "doomed")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await spoke_client.create(CONFIGMAPS, held)
    await spoke_client.delete(NAMESPACES, "doomed")

    no_namespace = configmap("no-namespace")
    del no_namespace["metadata"]["namespace"]
    manifests = [
        configmap("good-first"),
        configmap("Bad_Name"),  # 422 from the spoke
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
        no_namespace,
        configmap("late", "doomed"),  # 403 from the spoke
        {"apiVersion": "apps/", "kind": "Deployment", "metadata": {"name": "x"}},
        HELLO_DEPLOYMENT,
        {"apiVersion": "batch/v1", "kind": "Job"},  # neither name nor namespace
    ]
    await hub_client.create(MANIFESTWORKS, work_body("mixed", manifests))
    # Another work is not held up by the failing one.
    await hub_client.create(MANIFESTWORKS, work_body("healthy", [configmap("healthy-cm")]))
    await wait_applied(hub_client, "healthy")

    work = await wait_applied(hub_client, "mixed", status="False")
    applied = work_condition(work, "Applied")
    assert applied is not None
    assert (applied["reason"], applied["message"]) == (
        "AppliedManifestWorkFailed",
        "Failed to apply manifest work",
    )
    ok = ("True", "AppliedManifestComplete", "Apply manifest complete")
    assert applied_message(work, 0) == ok
    assert applied_message(work, 6) == ok
    status, reason, message = applied_message(work, 1)
    assert (status, reason) == ("False", "AppliedManifestFailed")
    assert message.startswith(
        'Failed to apply manifest: ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value'
    )
    assert applied_message(work, 2) == (
        "False",
        "AppliedManifestFailed",
        'Failed to apply manifest: the server doesn\'t have a resource type "Widget"',
    )
    assert applied_message(work, 3) == (
        "False",
        "AppliedManifestFailed",
        'Failed to apply manifest: ConfigMap "no-namespace" has no metadata.namespace, '
        "but configmaps is namespaced",
    )
    assert applied_message(work, 4) == (
        "False",
        "AppliedManifestFailed",
        'Failed to apply manifest: configmaps "late" is forbidden: unable to create new '
        "content in namespace doomed because it is being terminated",
    )
    assert applied_message(work, 5) == (
        "False",
        "AppliedManifestFailed",
        "Failed to apply manifest: invalid apiVersion 'apps/' of the Deployment manifest",
    )
    # The missing name is named, not the namespace that is missing as well.
    assert applied_message(work, 7) == (
        "False",
        "AppliedManifestFailed",
        "Failed to apply manifest: the Job manifest has no metadata.name",
    )
    # The resource meta of an unmappable manifest says what is known.
    assert manifest_statuses(work)[2]["resourceMeta"] == {
        "ordinal": 2,
        "group": "example.com",
        "version": "v1",
        "kind": "Widget",
        "resource": "",
        "name": "w",
        "namespace": "",
    }
    assert await exists(spoke_client, CONFIGMAPS, "good-first", "default")
    assert await exists(spoke_client, DEPLOYMENTS, "hello", "default")

    # Fixing the work recovers it.
    def fix(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [configmap("good-first"), configmap("good-name")]

    written = await update_work(hub_client, "mixed", fix)
    fixed = await wait_applied(hub_client, "mixed", generation=written["metadata"]["generation"])
    assert [applied_message(fixed, i) for i in (0, 1)] == [ok, ok]
    assert await exists(spoke_client, CONFIGMAPS, "good-name", "default")

    async def hello_deleted() -> bool:
        return not await exists(spoke_client, DEPLOYMENTS, "hello", "default")

    await eventually(hello_deleted, what="the removed deployment to be deleted")


async def test_manifest_without_kind_on_a_permissive_hub(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """A hub whose CRD does not enforce embedded resources can send a manifest without
    apiVersion or kind: only that manifest fails, with a message saying what is missing."""
    with_schema = await hub_client.get(CRDS, "manifestworks.work.open-cluster-management.io")
    item = with_schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]["workload"]["properties"]["manifests"]["items"]
    item.pop("x-kubernetes-embedded-resource", None)
    await hub_client.update(CRDS, with_schema)

    manifests = [
        {"kind": "ConfigMap", "metadata": {"name": "no-version", "namespace": "default"}},
        {"apiVersion": "v1", "metadata": {"name": "no-kind", "namespace": "default"}},
        configmap("fine"),
    ]

    async def created() -> bool:
        try:
            await hub_client.create(MANIFESTWORKS, work_body("loose", manifests))
        except Invalid:
            return False  # the CRD change is not served yet
        except ServerError as err:
            # A real apiserver answers a request that reached the CRD's old storage
            # while it is swapped "503 apiserver is shutting down" with Retry-After.
            if err.code != 503 or err.retry_after is None:
                raise
            return False
        return True

    await eventually(created, what="the permissive CRD to be served")
    work = await wait_applied(hub_client, "loose", status="False")
    assert applied_message(work, 0) == (
        "False",
        "AppliedManifestFailed",
        "Failed to apply manifest: Object 'apiVersion' is missing in the ConfigMap manifest",
    )
    assert applied_message(work, 1) == (
        "False",
        "AppliedManifestFailed",
        "Failed to apply manifest: Object 'Kind' is missing in the manifest",
    )
    assert applied_message(work, 2)[0] == "True"
    assert await exists(spoke_client, CONFIGMAPS, "fine", "default")


async def test_crd_and_custom_resources_in_one_work(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """The CRD is applied first (kind rank), its CRs as soon as it is served."""
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "gear", "namespace": "default"},
        "spec": {"size": 3},
    }
    # Listed before the CRD on purpose: results still follow spec order.
    await hub_client.create(MANIFESTWORKS, work_body("with-crd", [widget, WIDGET_CRD]))
    work = await wait_applied(hub_client, "with-crd")
    metas = [e["resourceMeta"] for e in manifest_statuses(work)]
    assert [(m["ordinal"], m["kind"], m["resource"]) for m in metas] == [
        (0, "Widget", "widgets"),
        (1, "CustomResourceDefinition", "customresourcedefinitions"),
    ]
    widgets = Resource("example.com", "v1", "widgets", "Widget", True)
    assert (await spoke_client.get(widgets, "gear", "default"))["spec"] == {"size": 3}
    assert await exists(spoke_client, CRDS, "widgets.example.com")


async def test_agent_subprocess_with_operator_flags(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """``workagent agent`` started as the klusterlet operator starts the Go agent."""
    process = await start_agent_process(
        tmp_path,
        "--spoke-cluster-name=cluster1",
        f"--workload-source-config={tmp_path / 'hub.kubeconfig'}",
        f"--spoke-kubeconfig={tmp_path / 'spoke.kubeconfig'}",
        f"--terminate-on-files={tmp_path / 'hub.kubeconfig'}",
        "--status-sync-interval=60s",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
        "--kube-api-qps=50",
        "--kube-api-burst=100",
        "--hub-kube-api-qps=50",
        "--hub-kube-api-burst=100",
    )
    try:
        await hub_client.create(MANIFESTWORKS, work_body("from-process", [configmap("proc-cm")]))

        async def applied() -> bool:
            if process.process.returncode is not None:
                raise AssertionError(f"the agent exited early:\n{process.log()}")
            work = await get_work(hub_client, "from-process")
            cond = work_condition(work, "Applied")
            return cond is not None and cond["status"] == "True"

        await eventually(applied, timeout=30, what="the subprocess agent to apply the work")
        cm = await spoke_client.get(CONFIGMAPS, "proc-cm", "default")
        managers = {entry["manager"] for entry in cm["metadata"].get("managedFields") or []}
        assert managers == {"work-agent"}
    finally:
        code = await process.terminate()
    assert code == 0, process.log()


async def test_bad_hub_kubeconfig_is_one_clear_error(tmp_path: Path) -> None:
    """A missing hub kubeconfig ends the agent with exit code 2, no traceback."""
    settings = agent_settings(tmp_path, hub_kubeconfig=str(tmp_path / "missing"))
    assert await run_built(lambda: build_agent(settings, handle_signals=False)) == 2
    (tmp_path / "broken").write_text("clusters: [\n")
    with pytest.raises(KubeConfigError, match=r"hub kubeconfig .*broken is not valid YAML: line 2"):
        kubeconfig_server(str(tmp_path / "broken"))


async def test_deleted_applied_work_is_recreated(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """An AppliedManifestWork deleted by hand comes back with the work's resources."""
    await hub_client.create(MANIFESTWORKS, work_body("again", [configmap("again-cm")]))
    await wait_applied(hub_client, "again")
    the_hash = hub_hash_of(tmp_path)
    first = await get_applied_work(spoke_client, the_hash, "again")
    assert first is not None
    await spoke_client.delete(APPLIED_MANIFESTWORKS, first["metadata"]["name"])

    async def recreated() -> bool:
        amw = await get_applied_work(spoke_client, the_hash, "again")
        if amw is None or amw["metadata"]["uid"] == first["metadata"]["uid"]:
            return False
        entries = (amw.get("status") or {}).get("appliedResources") or []
        # With its UID: an entry may be listed before its object is created.
        return [(r["name"], bool(r.get("uid"))) for r in entries] == [("again-cm", True)]

    await eventually(recreated, what="a new AppliedManifestWork recording the configmap")
    assert await exists(spoke_client, CONFIGMAPS, "again-cm", "default")


async def test_leader_election_and_probes(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """With leader election the agent holds Lease work-agent-lock, serves probes and
    metrics, and releases the Lease when it stops."""
    namespace = "open-cluster-management-agent"
    await spoke_client.create(NAMESPACES, {"metadata": {"name": namespace}})
    settings = agent_settings(
        tmp_path,
        leader_election=LeaderElectionSettings(namespace=namespace, identity="agent-a"),
    )
    async with AgentRunner(settings) as runner:
        lease = await spoke_client.get(LEASES, "work-agent-lock", namespace)
        assert lease["spec"]["holderIdentity"] == "agent-a"
        await hub_client.create(MANIFESTWORKS, work_body("led", [configmap("led-cm")]))
        await wait_applied(hub_client, "led")
        assert runner.agent is not None
        base = runner.agent.manager.observability.url
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 200, await response.text()
            async with session.get(f"{base}/metrics") as response:
                text = await response.text()
        assert 'workqueue_adds_total{name="manifestwork-controller"}' in text
    assert runner.exit_code == 0
    lease = await spoke_client.get(LEASES, "work-agent-lock", namespace)
    assert not lease["spec"].get("holderIdentity")


async def test_hub_hash_uses_the_server_string_as_written(
    hub: Cluster, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A trailing slash in the hub kubeconfig's server changes the hub hash (as OCM)."""
    kubeconfig = hub.kubeconfig()
    kubeconfig["clusters"][0]["cluster"]["server"] = hub.url + "/"
    (tmp_path / "hub-slash.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    settings = agent_settings(tmp_path, hub_kubeconfig=str(tmp_path / "hub-slash.kubeconfig"))
    async with AgentRunner(settings) as runner:
        assert runner.hub_hash == hub_hash(hub.url + "/") != hub_hash(hub.url)
        await hub_client.create(MANIFESTWORKS, work_body("slash", [configmap("slash-cm")]))
        await wait_applied(hub_client, "slash")
        assert await get_applied_work(spoke_client, hub_hash(hub.url + "/"), "slash") is not None


async def test_removed_manifest_held_by_a_finalizer_stays_recorded(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """A removed manifest whose object a foreign finalizer holds stays in the AMW until
    the object is really gone."""
    held = configmap("held-cm")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await hub_client.create(MANIFESTWORKS, work_body("holding", [held, configmap("kept-cm")]))
    await wait_applied(hub_client, "holding")

    def drop_held(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [configmap("kept-cm")]

    await update_work(hub_client, "holding", drop_held)
    the_hash = hub_hash_of(tmp_path)

    async def recorded_names() -> list[str]:
        amw = await get_applied_work(spoke_client, the_hash, "holding")
        return [r["name"] for r in ((amw or {}).get("status") or {}).get("appliedResources") or []]

    async def terminating() -> bool:
        live = await spoke_client.get(CONFIGMAPS, "held-cm", "default")
        return bool(live["metadata"].get("deletionTimestamp"))

    await eventually(terminating, what="the removed configmap to be deleted")
    assert await recorded_names() == ["held-cm", "kept-cm"]

    live = await spoke_client.get(CONFIGMAPS, "held-cm", "default")
    live["metadata"]["finalizers"] = []
    await spoke_client.update(CONFIGMAPS, live)

    async def only_kept() -> bool:
        return await recorded_names() == ["kept-cm"]

    await eventually(only_kept, what="the AMW to drop the deleted configmap")


def complete_first_entry(work: dict[str, Any]) -> None:
    """Marks the first manifest status entry Complete, as a rule would, but with a reason
    that is not a rule's: the status controller drops rule-made conditions of an older
    generation, and these tests are about the apply loop alone (test_status.py covers
    real rules)."""
    manifests = manifest_statuses(work)
    manifests[0]["conditions"].append(
        {
            "type": "Complete",
            "status": "True",
            "reason": "Finished",
            "message": "done",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }
    )
    work["status"]["resourceStatus"]["manifests"] = manifests


async def test_completed_manifest_is_not_touched_again(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """A manifest whose Complete condition is True counts as applied and is left alone."""
    await hub_client.create(MANIFESTWORKS, work_body("finished", [configmap("done-cm", key="v1")]))
    await wait_applied(hub_client, "finished")

    def edit(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [configmap("done-cm", key="v2")]

    await update_work(hub_client, "finished", complete_first_entry, subresource="status")
    written = await update_work(hub_client, "finished", edit)
    done = await wait_applied(hub_client, "finished", generation=written["metadata"]["generation"])
    assert applied_message(done, 0)[0] == "True"
    assert (await spoke_client.get(CONFIGMAPS, "done-cm", "default"))["data"] == {"key": "v1"}
    assert manifest_condition(done, 0, "Complete") is not None


async def test_an_object_listed_twice_is_complete_as_its_first_entry_says(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """The Complete check matches status entries ignoring the ordinal and takes the
    first (OCM's FindManifestCondition): a ConfigMap listed twice, whose first entry is
    Complete, is left alone at both places."""
    manifests = [configmap("twice-cm", key="v1"), configmap("twice-cm", key="v1")]
    await hub_client.create(MANIFESTWORKS, work_body("twice", manifests))
    await wait_applied(hub_client, "twice")

    def edit(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [
            configmap("twice-cm", key="v2"),
            configmap("twice-cm", key="v2"),
        ]

    entries = manifest_statuses(await hub_client.get(MANIFESTWORKS, "twice", CLUSTER))
    assert [e["resourceMeta"]["ordinal"] for e in entries] == [0, 1]
    await update_work(hub_client, "twice", complete_first_entry, subresource="status")
    written = await update_work(hub_client, "twice", edit)
    done = await wait_applied(hub_client, "twice", generation=written["metadata"]["generation"])
    assert [applied_message(done, i)[0] for i in (0, 1)] == ["True", "True"]
    assert (await spoke_client.get(CONFIGMAPS, "twice-cm", "default"))["data"] == {"key": "v1"}


async def test_an_object_deleted_on_the_cluster_is_created_again(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """Beyond OCM (its periodic resync, 4 to 6 min): the status sync that finds an
    applied object gone has the work applied again; a ReadOnly manifest's object is
    only reported missing."""
    watched = configmap("watched-elsewhere")
    await spoke_client.create(CONFIGMAPS, watched)
    body = work_body("comeback", [configmap("comeback-cm", key="v1"), watched])
    body["spec"]["manifestConfigs"] = [
        {
            "resourceIdentifier": {
                "resource": "configmaps",
                "namespace": "default",
                "name": "watched-elsewhere",
            },
            "updateStrategy": {"type": "ReadOnly"},
        }
    ]
    await hub_client.create(MANIFESTWORKS, body)
    await wait_applied(hub_client, "comeback")
    first = await spoke_client.get(CONFIGMAPS, "comeback-cm", "default")
    await spoke_client.delete(CONFIGMAPS, "comeback-cm", "default")
    await spoke_client.delete(CONFIGMAPS, "watched-elsewhere", "default")

    async def created_again() -> bool:
        try:
            obj = await spoke_client.get(CONFIGMAPS, "comeback-cm", "default")
        except NotFound:
            return False
        return bool(obj["metadata"]["uid"] != first["metadata"]["uid"])

    await eventually(created_again, timeout=60, what="the deleted ConfigMap created again")
    assert (await spoke_client.get(CONFIGMAPS, "comeback-cm", "default"))["data"] == {"key": "v1"}

    async def reported() -> bool:
        work = await get_work(hub_client, "comeback")
        applied, read_only = (manifest_condition(work, i, "Available") or {} for i in (0, 1))
        return (applied.get("status"), read_only.get("status")) == ("True", "False")

    await eventually(reported, timeout=60, what="the one back Available, the ReadOnly one not")
    assert not await exists(spoke_client, CONFIGMAPS, "watched-elsewhere", "default")


async def test_deleting_the_work_cleans_up_both_clusters(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    """The composed agent: deleting the work deletes its resources, then the AMW, then
    releases the hub object."""
    await hub_client.create(MANIFESTWORKS, work_body("bye", [configmap("bye-cm")]))
    await wait_applied(hub_client, "bye")
    await hub_client.delete(MANIFESTWORKS, "bye", CLUSTER)
    the_hash = hub_hash_of(tmp_path)

    async def all_gone() -> bool:
        return (
            not await exists(spoke_client, CONFIGMAPS, "bye-cm", "default")
            and await get_applied_work(spoke_client, the_hash, "bye") is None
            and not await exists(hub_client, MANIFESTWORKS, "bye", CLUSTER)
        )

    await eventually(all_gone, what="the configmap, the AMW and the work to be gone")


async def test_expected_apply_failures_log_no_traceback(
    agent: AgentRunner, hub_client: KubeClient
) -> None:
    """An executor naming no service account fails its manifests on every retry: that
    is the work's error, reported on it, not an agent fault worth a warning each time."""
    with structlog.testing.capture_logs() as logs:
        await hub_client.create(
            MANIFESTWORKS, work_body("no-subject", [configmap("x")], executor={})
        )
        work = await wait_applied(hub_client, "no-subject", status="False")
    status, reason, message = applied_message(work, 0)
    assert (status, reason) == ("False", "AppliedManifestFailed")
    assert message.startswith("Failed to apply manifest: "), message
    mine = [e for e in logs if e.get("manifest_name") == "x"]
    assert [e["event"] for e in mine][:1] == ["manifest not applied"], mine
    assert not [e for e in mine if e.get("exc_info") or e["log_level"] == "warning"], mine


async def test_kinds_the_discovery_mapper_guesses_fail_at_the_server(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """A lower-case kind, ``<Kind>List`` and ``List`` map as client-go's discovery mapper
    maps them for OCM's agent: the server refuses them, and the work's stale objects are
    still deleted (an unmapped kind would stop the clean-up)."""
    lower = {
        "apiVersion": "v1",
        "kind": "configmap",
        "metadata": {"name": "lc", "namespace": "default"},
    }
    listed = {
        "apiVersion": "v1",
        "kind": "ConfigMapList",
        "metadata": {"name": "l", "namespace": "default"},
    }
    bare = {"apiVersion": "v1", "kind": "List", "metadata": {"name": "b"}}
    body = work_body("guessed", [configmap("stale-x"), lower, listed, bare])
    await hub_client.create(MANIFESTWORKS, body)
    work = await wait_applied(hub_client, "guessed", status="False")
    metas = [
        e["resourceMeta"]
        for e in sorted(manifest_statuses(work), key=lambda e: e["resourceMeta"]["ordinal"])
    ]
    assert [(m["kind"], m["resource"], m.get("namespace", "")) for m in metas] == [
        ("ConfigMap", "configmaps", "default"),
        ("configmap", "configmaps", "default"),
        ("ConfigMapList", "configmaplists", "default"),
        ("List", "lists", ""),
    ]
    # OCM's agent reports these same answers of the server.
    not_found = "Failed to apply manifest: the server could not find the requested resource"
    assert [applied_message(work, o) for o in (1, 2, 3)] == [
        (
            "False",
            "AppliedManifestFailed",
            'Failed to apply manifest: configmap in version "v1" cannot be handled as a '
            'ConfigMap: no kind "configmap" is registered for version "v1" in scheme '
            '"pkg/runtime/scheme.go:111"',
        ),
        ("False", "AppliedManifestFailed", not_found),
        ("False", "AppliedManifestFailed", not_found),
    ]

    def drop_stale(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = [lower]

    await update_work(hub_client, "guessed", drop_stale)

    async def stale_deleted() -> bool:
        return not await exists(spoke_client, CONFIGMAPS, "stale-x", "default")

    await eventually(stale_deleted, what="the stale ConfigMap deleted")
