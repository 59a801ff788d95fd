"""The ServerSideApply strategy against kubesim (spec/agent.md 5.4)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from ocmkit.kube import CONFIGMAPS, CRDS, DEPLOYMENTS, JOBS, KubeClient
from tests.apply.conftest import NS, Writes, managers, marker, request, web_deployment
from tests.kube.helpers import WIDGET_CRD, WIDGETS
from workagent.apply import (
    CONFIG_SPEC_HASH_ANNOTATION,
    Appliers,
    IgnoreFieldsError,
    ServerSideApplier,
    ServerSideApplyConflict,
)
from workagent.apply.server_side import config_spec_hash


def ssa(**config: Any) -> dict[str, Any]:
    """A manifestConfigs option selecting ServerSideApply with ``config``."""
    return {
        "resourceIdentifier": {"resource": "any", "name": "*", "namespace": "*"},
        "updateStrategy": {"type": "ServerSideApply", "serverSideApply": config},
    }


def configmap(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "namespace": NS},
        "data": data,
    }


async def test_applies_with_work_agent_manager_and_owner(
    kube: KubeClient, owner: dict[str, Any]
) -> None:
    live = await ServerSideApplier(kube).apply(request(CONFIGMAPS, configmap(a="1"), owner))
    assert live["data"] == {"a": "1"}
    assert live["metadata"]["ownerReferences"] == [owner]
    # The apply itself, and the owner-reference patch sent with User-Agent work-agent.
    assert managers(live) == {("work-agent", "Apply"), ("work-agent", "Update")}


async def test_null_creation_timestamps_do_not_bump_the_generation(
    kube: KubeClient, owner: dict[str, Any]
) -> None:
    applier = ServerSideApplier(kube)
    first = await applier.apply(request(DEPLOYMENTS, web_deployment(), owner))
    again = await applier.apply(request(DEPLOYMENTS, web_deployment(), owner))
    assert first["metadata"]["generation"] == again["metadata"]["generation"] == 1
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_field_conflict_and_force(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any]
) -> None:
    await ServerSideApplier(kube).apply(request(CONFIGMAPS, configmap(a="1"), owner))
    # Another writer changes the field: it now owns it.
    await other.patch(CONFIGMAPS, "ssa", {"data": {"a": "spoke"}}, NS)
    with pytest.raises(ServerSideApplyConflict) as err:
        await ServerSideApplier(kube).apply(request(CONFIGMAPS, configmap(a="2"), owner))
    message = str(err.value)
    assert message.startswith('Apply failed with 1 conflict: conflict with "spoke-user"')
    assert ".data.a" in message
    live = await kube.get(CONFIGMAPS, "ssa", NS)
    assert live["data"] == {"a": "spoke"}

    forced = request(CONFIGMAPS, configmap(a="2"), owner, option=ssa(force=True))
    live = await Appliers(kube).for_strategy(forced.option.update_strategy).apply(forced)  # type: ignore[union-attr]
    assert live["data"] == {"a": "2"}
    spoke_fields = [e for e in live["metadata"]["managedFields"] if e["manager"] == "spoke-user"]
    assert all("f:a" not in str(e.get("fieldsV1")) for e in spoke_fields)


async def test_custom_field_manager(kube: KubeClient, owner: dict[str, Any]) -> None:
    req = request(CONFIGMAPS, configmap(a="1"), owner, option=ssa(fieldManager="work-agent-blue"))
    live = await ServerSideApplier(kube).apply(req)
    assert ("work-agent-blue", "Apply") in managers(live)


async def test_ignore_fields_on_spoke_present(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    option = ssa(
        ignoreFields=[
            {
                "condition": "OnSpokePresent",
                "jsonPaths": [".spec.replicas"],
                "jsonPointers": ["/metadata/annotations/note"],
            }
        ]
    )
    applier = ServerSideApplier(kube)
    manifest = web_deployment(replicas=2)
    manifest["metadata"]["annotations"] = {"note": "hub", "keep": "yes"}
    live = await applier.apply(request(DEPLOYMENTS, manifest, owner, option=option))
    # Created from the full manifest: the ignored field gets its initial value,
    # but ignored annotations are dropped even on creation.
    assert live["spec"]["replicas"] == 2
    annotations = live["metadata"]["annotations"]
    assert "note" not in annotations and annotations["keep"] == "yes"
    assert len(annotations[CONFIG_SPEC_HASH_ANNOTATION]) == 32

    # The spoke scales it and edits something else too.
    await other.patch(
        DEPLOYMENTS,
        "web",
        {"spec": {"replicas": 5, "template": {"spec": {"dnsPolicy": "Default"}}}},
        NS,
    )
    # The hub changes only the ignored field: same hash, nothing applied, no drift corrected.
    hub = copy.deepcopy(manifest)
    hub["spec"]["replicas"] = 3
    await writes.reset()
    live = await applier.apply(request(DEPLOYMENTS, hub, owner, option=option))
    assert await writes.writes() == 0
    assert live["spec"]["replicas"] == 5
    assert live["spec"]["template"]["spec"]["dnsPolicy"] == "Default"

    # The hub changes another field: the trimmed manifest is applied, replicas left alone.
    hub["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    live = await applier.apply(request(DEPLOYMENTS, hub, owner, option=option))
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert live["spec"]["replicas"] == 5
    assert (
        live["metadata"]["annotations"][CONFIG_SPEC_HASH_ANNOTATION]
        != (annotations[CONFIG_SPEC_HASH_ANNOTATION])
    )


async def test_ignore_fields_on_spoke_change(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    option = ssa(
        force=True,
        ignoreFields=[{"condition": "OnSpokeChange", "jsonPaths": [".spec.replicas"]}],
    )
    applier = ServerSideApplier(kube)
    await applier.apply(request(DEPLOYMENTS, web_deployment(replicas=2), owner, option=option))
    await other.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, NS)
    # A spoke-side edit alone stands.
    await writes.reset()
    live = await applier.apply(
        request(DEPLOYMENTS, web_deployment(replicas=2), owner, option=option)
    )
    assert await writes.writes() == 0
    assert live["spec"]["replicas"] == 5
    # A hub-side change of the field is part of the hash: it is applied over the spoke edit.
    live = await applier.apply(
        request(DEPLOYMENTS, web_deployment(replicas=3), owner, option=option)
    )
    assert live["spec"]["replicas"] == 3


async def test_ignore_fields_error(kube: KubeClient, owner: dict[str, Any], writes: Writes) -> None:
    option = ssa(
        ignoreFields=[
            {"condition": "OnSpokePresent", "jsonPointers": ["/spec/template/spec/containers/3"]}
        ]
    )
    await writes.reset()
    with pytest.raises(
        IgnoreFieldsError, match=r"^JSON Pointer error in '/spec/template/spec/containers/3'"
    ):
        await ServerSideApplier(kube).apply(
            request(DEPLOYMENTS, web_deployment(), owner, option=option)
        )
    bad_jq = ssa(ignoreFields=[{"condition": "OnSpokePresent", "jqPathExpressions": [".spec |"]}])
    with pytest.raises(IgnoreFieldsError, match=r"^JQ expression error in '\.spec \|'"):
        await ServerSideApplier(kube).apply(
            request(DEPLOYMENTS, web_deployment(), owner, option=bad_jq)
        )
    assert await writes.writes() == 0


async def test_removal_marker_strips_owner_from_ssa_objects(
    kube: KubeClient, owner: dict[str, Any]
) -> None:
    applier = ServerSideApplier(kube)
    live = await applier.apply(request(CONFIGMAPS, configmap(a="1"), marker(owner)))
    assert "ownerReferences" not in live["metadata"]
    live = await applier.apply(request(CONFIGMAPS, configmap(a="1"), owner))
    assert live["metadata"]["ownerReferences"] == [owner]
    live = await applier.apply(request(CONFIGMAPS, configmap(a="1"), marker(owner)))
    assert "ownerReferences" not in live["metadata"]


async def test_job_and_custom_resource(kube: KubeClient, owner: dict[str, Any]) -> None:
    applier = ServerSideApplier(kube)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": NS},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    }
    first = await applier.apply(request(JOBS, job, owner))
    again = await applier.apply(request(JOBS, job, owner))
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]

    # Created directly: kubesim marks a new CRD Established right away, which would make
    # the owner-reference patch of an SSA-applied CRD a (retried) resourceVersion conflict.
    await kube.create(CRDS, copy.deepcopy(WIDGET_CRD))
    widget: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": NS},
        "spec": {"size": 1},
    }
    created = await applier.apply(request(WIDGETS, widget, owner))
    widget["spec"]["size"] = 2
    live = await applier.apply(request(WIDGETS, widget, owner))
    assert live["spec"] == {"size": 2}
    assert live["metadata"]["uid"] == created["metadata"]["uid"]


def test_config_spec_hash_is_ocm_agents() -> None:
    """The hash OCM's Go agent (v1.2.1) wrote for this trimmed Deployment (the
    ``ssa-ignore-fields`` case of tests/peers, ``.spec.replicas`` ignored): Go's ``%v``
    of the ``*unstructured.Unstructured``, MD5."""
    labels = {"app": "ignored"}
    trimmed = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ignored", "namespace": "default", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
            },
        },
    }
    assert config_spec_hash(trimmed) == "8cced8429a8d5e55168e52312ed5f1b5"
    # Go's %v: sorted keys, numbers as Go prints them, nil and booleans in Go's words.
    odd = {"b": [1, 2.5, 1e21, None, True], "a": {"z": "", "y": False}}
    assert (
        config_spec_hash(odd)
        == hashlib.md5(
            b"&{map[a:map[y:false z:] b:[1 2.5 1e+21 <nil> true]]}", usedforsecurity=False
        ).hexdigest()
    )
