"""The Update strategy against kubesim (spec/agent.md 5.1)."""

from __future__ import annotations

import base64
import copy
import dataclasses
from typing import Any

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import (
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    JOBS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICES,
    Conflict,
    Invalid,
    KubeClient,
    Resource,
)
from tests.apply.conftest import NS, Writes, managers, marker, request, web_deployment
from tests.kube.helpers import WIDGET_CRD, WIDGETS
from workagent.apply import (
    SERVICE_SPEC_HASH_ANNOTATION,
    Appliers,
    InvalidManifest,
    UpdateApplier,
)


def configmap(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": NS, "labels": {"app": "demo"}},
        "data": data,
    }


def deployment(image: str = "nginx:1.25") -> dict[str, Any]:
    manifest = web_deployment(image, ports=[{"containerPort": 80}], resources={})
    return {**manifest, "status": {}}


def job(image: str = "busybox:1") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": NS},
        "spec": {
            "backoffLimit": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "run", "image": image, "command": ["true"]}],
                }
            },
        },
    }


async def apply_twice_quietly(
    kube: KubeClient,
    writes: Writes,
    resource: Resource,
    manifest: dict[str, Any],
    owner: dict[str, Any],
) -> dict[str, Any]:
    """Apply; then apply again with the same and with a fresh applier: no writes at all."""
    appliers = Appliers(kube)
    created = await appliers.update.apply(request(resource, manifest, owner))
    await writes.reset()
    again = await appliers.update.apply(request(resource, manifest, owner))
    fresh = await Appliers(kube).update.apply(request(resource, manifest, owner))
    assert await writes.writes() == 0, await writes.verbs()
    # Nothing written, so nothing changed (kubesim itself may have written status).
    assert again["metadata"].get("generation") == created["metadata"].get("generation")
    assert fresh == again
    return fresh


async def test_configmap_created_with_owner_and_work_agent_as_only_manager(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    manifest = configmap(a="1")
    manifest["metadata"]["uid"] = "uid-from-another-cluster"
    original = copy.deepcopy(manifest)
    live = await apply_twice_quietly(kube, writes, CONFIGMAPS, manifest, owner)
    assert manifest == original, "the request's manifest is not mutated"
    assert live["metadata"]["uid"] != "uid-from-another-cluster"
    assert live["metadata"]["ownerReferences"] == [owner]
    assert live["data"] == {"a": "1"}
    assert managers(live) == {("work-agent", "Update")}


async def test_configmap_data_replaced_whole_and_labels_merged(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    applier = UpdateApplier(kube)
    await applier.apply(request(CONFIGMAPS, configmap(a="1", b="2"), owner))
    # Someone else adds a label, a finalizer and an owner of their own.
    foreign_owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": owner["uid"]}
    await other.patch(
        CONFIGMAPS,
        "cm",
        {
            "metadata": {
                "labels": {"team": "ops"},
                "finalizers": ["example.com/keep"],
                "ownerReferences": [owner, foreign_owner],
            }
        },
        NS,
    )
    manifest = configmap(a="1", c="3")
    manifest["metadata"]["labels"] = {"app": "demo", "gone-": "", "team-": ""}
    await writes.reset()
    live = await applier.apply(request(CONFIGMAPS, manifest, owner))
    assert (await writes.verbs())["update"] == 1
    assert live["data"] == {"a": "1", "c": "3"}
    assert live["metadata"]["labels"] == {"app": "demo"}
    assert live["metadata"]["finalizers"] == ["example.com/keep"]
    assert live["metadata"]["ownerReferences"] == [owner, foreign_owner]
    await writes.reset()
    await applier.apply(request(CONFIGMAPS, manifest, owner))
    assert await writes.writes() == 0
    await other.patch(CONFIGMAPS, "cm", {"metadata": {"finalizers": None}}, NS)


async def test_configmap_drift_is_corrected(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any]
) -> None:
    applier = UpdateApplier(kube)
    await applier.apply(request(CONFIGMAPS, configmap(a="1"), owner))
    await other.patch(CONFIGMAPS, "cm", {"data": {"a": "edited", "extra": "x"}}, NS)
    live = await applier.apply(request(CONFIGMAPS, configmap(a="1"), owner))
    assert live["data"] == {"a": "1"}


async def test_a_known_version_replaces_the_get_and_a_drift_in_it_is_corrected(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    """With ``known`` (a recent list's version) nothing is read: the same version sends
    nothing, a drifted one is written back; a stale one is refused by its resourceVersion."""
    applier = UpdateApplier(kube)
    applied = await applier.apply(request(CONFIGMAPS, configmap(a="1"), owner))
    await writes.reset()
    same = dataclasses.replace(request(CONFIGMAPS, configmap(a="1"), owner), known=applied)
    assert (await applier.apply(same))["data"] == {"a": "1"}
    assert await writes.verbs() == {}
    drifted = await other.patch(CONFIGMAPS, "cm", {"data": {"a": "edited"}}, NS)
    await writes.reset()
    fix = dataclasses.replace(request(CONFIGMAPS, configmap(a="1"), owner), known=drifted)
    assert (await applier.apply(fix))["data"] == {"a": "1"}
    assert await writes.verbs() == {"update": 1}
    await other.patch(CONFIGMAPS, "cm", {"data": {"a": "edited again"}}, NS)
    stale = dataclasses.replace(request(CONFIGMAPS, configmap(a="2"), owner), known=drifted)
    with pytest.raises(Conflict):
        await applier.apply(stale)


async def test_deployment_defaults_are_left_alone(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    live = await apply_twice_quietly(kube, writes, DEPLOYMENTS, deployment(), owner)
    assert live["spec"]["strategy"]["type"] == "RollingUpdate"
    assert live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


async def test_deployment_change_updates_only_what_changed(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    applier = UpdateApplier(kube)
    first = deployment()
    first["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    created = await applier.apply(request(DEPLOYMENTS, first, owner))
    await writes.reset()
    live = await applier.apply(request(DEPLOYMENTS, deployment("nginx:1.26"), owner))
    assert (await writes.verbs())["update"] == 1
    spec = live["spec"]
    assert spec["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert spec["revisionHistoryLimit"] == created["spec"]["revisionHistoryLimit"]
    # The manifest stopped setting nodeSelector: it is removed, as a PUT would.
    assert "nodeSelector" not in spec["template"]["spec"]
    assert live["metadata"]["generation"] == 2
    await writes.reset()
    await Appliers(kube).update.apply(request(DEPLOYMENTS, deployment("nginx:1.26"), owner))
    assert await writes.writes() == 0


async def test_service_spec_hash_and_allocated_ip_kept(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": NS},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    live = await apply_twice_quietly(kube, writes, SERVICES, manifest, owner)
    digest = live["metadata"]["annotations"][SERVICE_SPEC_HASH_ANNOTATION]
    assert len(digest) == 64
    cluster_ip = live["spec"]["clusterIP"]
    changed = copy.deepcopy(manifest)
    changed["spec"]["ports"][0]["port"] = 81
    await writes.reset()
    live = await UpdateApplier(kube).apply(request(SERVICES, changed, owner))
    assert (await writes.verbs())["update"] == 1
    assert live["spec"]["ports"][0]["port"] == 81
    assert live["spec"]["clusterIP"] == cluster_ip
    assert live["metadata"]["annotations"][SERVICE_SPEC_HASH_ANNOTATION] != digest


def secret(**extra: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": NS},
        "stringData": {"user": "admin"},
        "data": {"password": base64.b64encode(b"s3cret").decode()},
    }
    body.update(extra)
    return body


async def test_secret_string_data_folded_and_quiet(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    live = await apply_twice_quietly(kube, writes, SECRETS, secret(), owner)
    assert live["type"] == "Opaque"
    assert base64.b64decode(live["data"]["user"]) == b"admin"
    assert base64.b64decode(live["data"]["password"]) == b"s3cret"


async def test_secret_conflicting_string_data_is_refused_without_a_request(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    bad = secret(data={"user": base64.b64encode(b"root").decode()})
    await writes.reset()
    with pytest.raises(InvalidManifest) as err:
        await UpdateApplier(kube).apply(request(SECRETS, bad, owner))
    assert str(err.value) == 'Secret.stringData["user"] conflicts with Secret.data["user"]'
    assert await writes.writes() == 0


async def test_secret_type_change_recreates(kube: KubeClient, owner: dict[str, Any]) -> None:
    applier = UpdateApplier(kube)
    first = await applier.apply(request(SECRETS, secret(), owner))
    changed = secret(type="example.com/custom")
    live = await applier.apply(request(SECRETS, changed, owner))
    assert live["type"] == "example.com/custom"
    assert live["metadata"]["uid"] != first["metadata"]["uid"]
    assert live["metadata"]["ownerReferences"] == [owner]


async def test_job_generated_selector_is_kept(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    live = await apply_twice_quietly(kube, writes, JOBS, job(), owner)
    selector = live["spec"]["selector"]
    # A mutable change goes through: the generated selector and labels are carried over.
    changed = job()
    changed["spec"]["backoffLimit"] = 4
    updated = await UpdateApplier(kube).apply(request(JOBS, changed, owner))
    assert updated["spec"]["backoffLimit"] == 4
    assert updated["spec"]["selector"] == selector


async def test_immutable_job_template_change_fails_once_and_does_not_loop(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    applier = UpdateApplier(kube)
    created = await applier.apply(request(JOBS, job(), owner))
    await writes.reset()
    with pytest.raises(Invalid) as first:
        await applier.apply(request(JOBS, job("busybox:2"), owner))
    assert "field is immutable" in first.value.message
    assert (await writes.verbs())["update"] == 1
    # Same manifest, same object: the error again, without sending the update again.
    await writes.reset()
    with pytest.raises(Invalid) as second:
        await applier.apply(request(JOBS, job("busybox:2"), owner))
    assert second.value is first.value
    assert await writes.writes() == 0
    # Back to the original manifest: in sync, nothing sent, no error.
    live = await applier.apply(request(JOBS, job(), owner))
    assert await writes.writes() == 0
    assert live["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_crd_and_custom_resource(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    crd = copy.deepcopy(WIDGET_CRD)
    # Leave the defaulted names out: the comparison defaults them as the server does.
    del crd["spec"]["names"]["singular"]
    del crd["spec"]["names"]["listKind"]
    live_crd = await apply_twice_quietly(kube, writes, CRDS, crd, owner)
    assert live_crd["spec"]["conversion"] == {"strategy": "None"}
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": NS},
        "spec": {"size": 1, "tags": ["a"]},
    }
    await apply_twice_quietly(kube, writes, WIDGETS, widget, owner)
    widget["spec"] = {"size": 2}
    live = await UpdateApplier(kube).apply(request(WIDGETS, widget, owner))
    assert live["spec"]["size"] == 2


async def test_rbac_role_and_binding(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": NS},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }
    await apply_twice_quietly(kube, writes, ROLES, role, owner)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "reader", "namespace": NS},
        "roleRef": {"kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"}],
    }
    await apply_twice_quietly(kube, writes, ROLE_BINDINGS, binding, owner)
    role["rules"][0]["verbs"] = ["get", "list"]
    live = await UpdateApplier(kube).apply(request(ROLES, role, owner))
    assert live["rules"][0]["verbs"] == ["get", "list"]


async def test_removal_marker_creates_without_owner_and_strips_it(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    applier = UpdateApplier(kube)
    live = await applier.apply(request(CONFIGMAPS, configmap(a="1"), marker(owner)))
    assert "ownerReferences" not in live["metadata"]
    live = await applier.apply(request(CONFIGMAPS, configmap(a="1"), owner))
    assert live["metadata"]["ownerReferences"] == [owner]
    live = await applier.apply(request(CONFIGMAPS, configmap(a="1"), marker(owner)))
    assert "ownerReferences" not in live["metadata"]
    await writes.reset()
    await applier.apply(request(CONFIGMAPS, configmap(a="1"), marker(owner)))
    assert await writes.writes() == 0


async def test_resource_version_conflict_is_raised(
    kube: KubeClient, sim: KubeSim, owner: dict[str, Any]
) -> None:
    applier = UpdateApplier(kube)
    await applier.apply(request(CONFIGMAPS, configmap(a="1"), owner))
    sim.inject(verb="update", resource="configmaps", code=409, count=1)
    with pytest.raises(Conflict):
        await applier.apply(request(CONFIGMAPS, configmap(a="2"), owner))
    live = await applier.apply(request(CONFIGMAPS, configmap(a="2"), owner))
    assert live["data"] == {"a": "2"}
