"""Update after a restart: keys a manifest dropped meanwhile are recalled from the
object's managedFields and removed (workagent.apply.recall), on kubesim.

A fresh :class:`Appliers` is an agent that restarted: it remembers nothing.
``may_have_changed`` is what the controller passes when the work's status does
not show the manifest applied at the work's generation.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from ocmkit.kube import DEPLOYMENTS, JOBS, Invalid, KubeClient
from tests.apply.conftest import Writes, request, web_deployment
from workagent.apply import Appliers, ApplyRequest
from workagent.apply.cache import ApplyCache
from workagent.apply.merge import Prune
from workagent.apply.recall import UNKNOWN, DefaultsNeeded, owned_fields, recalled_last


def first_generation() -> dict[str, Any]:
    """A Deployment setting keys the next generation drops: a top-level one with no
    default, one with a default it overrode, and one inside a container."""
    manifest = web_deployment(env=[{"name": "MODE", "value": "debug"}], args=["--verbose"])
    manifest["spec"]["minReadySeconds"] = 7
    manifest["spec"]["revisionHistoryLimit"] = 3
    return manifest


def changed(req: ApplyRequest, *, may_have_changed: bool) -> ApplyRequest:
    return dataclasses.replace(req, may_have_changed=may_have_changed)


async def test_keys_dropped_while_the_agent_was_away_are_removed(
    kube: KubeClient, writes: Writes, owner: dict[str, Any]
) -> None:
    await Appliers(kube).update.apply(request(DEPLOYMENTS, first_generation(), owner))
    second = web_deployment()  # minReadySeconds, revisionHistoryLimit, env and args dropped
    req = changed(request(DEPLOYMENTS, second, owner), may_have_changed=True)
    await writes.reset()
    live = await Appliers(kube).update.apply(req)
    spec = live["spec"]
    assert "minReadySeconds" not in spec
    assert spec["revisionHistoryLimit"] == 10  # the server's default again, as after a PUT
    container = spec["template"]["spec"]["containers"][0]
    assert "env" not in container and "args" not in container
    # Defaults the agent's create owns are left alone.
    assert spec["progressDeadlineSeconds"] == 600
    assert container["terminationMessagePath"] == "/dev/termination-log"
    counts = await writes.verbs()
    assert (counts["create"], counts["update"]) == (1, 1)  # the dry-run create, the PUT
    # Applied again by an agent that restarted once more: nothing left to remove.
    await writes.reset()
    again = await Appliers(kube).update.apply(req)
    assert again["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    counts = await writes.verbs()
    assert (counts["create"], counts["update"]) == (1, 0)


async def test_without_the_hint_nothing_is_recalled(
    kube: KubeClient, writes: Writes, owner: dict[str, Any]
) -> None:
    """Status shows the manifest applied at this generation: a restart costs nothing."""
    await Appliers(kube).update.apply(request(DEPLOYMENTS, first_generation(), owner))
    await writes.reset()
    req = changed(request(DEPLOYMENTS, web_deployment(), owner), may_have_changed=False)
    live = await Appliers(kube).update.apply(req)
    assert live["spec"]["minReadySeconds"] == 7
    assert await writes.writes() == 0


async def test_a_manifest_that_dropped_nothing_is_not_written(
    kube: KubeClient, writes: Writes, owner: dict[str, Any]
) -> None:
    """The agent's entry owns only what the manifest sets and what its create defaulted
    (to values still live): the dry run shows those defaults, and nothing is written."""
    manifest = first_generation()
    await Appliers(kube).update.apply(request(DEPLOYMENTS, manifest, owner))
    await writes.reset()
    req = changed(request(DEPLOYMENTS, copy.deepcopy(manifest), owner), may_have_changed=True)
    await Appliers(kube).update.apply(req)
    counts = await writes.verbs()
    assert (counts["create"], counts["update"]) == (1, 0)


async def test_a_key_another_manager_set_is_kept(
    kube: KubeClient, other: KubeClient, writes: Writes, owner: dict[str, Any]
) -> None:
    await Appliers(kube).update.apply(request(DEPLOYMENTS, first_generation(), owner))
    live = await kube.get(DEPLOYMENTS, "web", "apply")
    live["spec"]["paused"] = True
    await other.update(DEPLOYMENTS, live)
    second = web_deployment()
    req = changed(request(DEPLOYMENTS, second, owner), may_have_changed=True)
    result = await Appliers(kube).update.apply(req)
    assert result["spec"]["paused"] is True
    assert "minReadySeconds" not in result["spec"]


# -- the recall itself, on managedFields as kube-apiserver v1.35 records them -------------------

#: The Update entry of a Job the agent created, as kube-apiserver recorded it.
JOB_ENTRY: dict[str, Any] = {
    "f:spec": {
        "f:backoffLimit": {},
        "f:completionMode": {},
        "f:completions": {},
        "f:manualSelector": {},
        "f:parallelism": {},
        "f:podReplacementPolicy": {},
        "f:suspend": {},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"c"}': {
                        ".": {},
                        "f:env": {
                            ".": {},
                            'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}},
                        },
                        "f:image": {},
                        "f:imagePullPolicy": {},
                        "f:name": {},
                        "f:resources": {},
                        "f:terminationMessagePath": {},
                        "f:terminationMessagePolicy": {},
                    }
                },
                "f:dnsPolicy": {},
                "f:restartPolicy": {},
                "f:schedulerName": {},
                "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
            }
        },
    }
}


def job(container: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j1", "namespace": "default"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }


def defaulted(container: dict[str, Any], selector_uid: str) -> dict[str, Any]:
    """``job(container)`` as the server defaults it (the selector is generated)."""
    obj = job(
        {
            **container,
            "imagePullPolicy": "Always",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
    )
    spec = obj["spec"]
    spec.update(
        backoffLimit=6,
        completionMode="NonIndexed",
        completions=1,
        manualSelector=False,
        parallelism=1,
        podReplacementPolicy="TerminatingOrFailed",
        suspend=False,
        selector={"matchLabels": {"batch.kubernetes.io/controller-uid": selector_uid}},
    )
    spec["template"]["spec"].update(
        dnsPolicy="ClusterFirst",
        schedulerName="default-scheduler",
        securityContext={},
        terminationGracePeriodSeconds=30,
    )
    return obj


def test_a_dropped_env_list_is_recalled_inside_its_container() -> None:
    live = defaulted({"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}, "u1")
    required = job({"name": "c", "image": "busybox"})
    try:
        recalled_last(JOB_ENTRY, required, live, UNKNOWN)
    except DefaultsNeeded:
        pass
    else:
        raise AssertionError("a key owned and not set needs the defaults")
    last = recalled_last(JOB_ENTRY, required, live, defaulted({"name": "c", "image": "x"}, "u2"))
    assert last is not None
    container = last["spec"]["template"]["spec"]["containers"][0]
    assert container == {"name": "c", "image": "busybox", "env": True}
    # Nothing else differs from the manifest: the generated selector is not the agent's.
    assert {k: v for k, v in last["spec"].items() if k != "template"} == {}


def test_nothing_is_recalled_when_only_defaults_are_owned() -> None:
    container = {"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}
    live = defaulted(container, "u1")
    assert recalled_last(JOB_ENTRY, job(container), live, defaulted(container, "u2")) is None


def test_a_default_the_live_object_no_longer_holds_is_recalled() -> None:
    container = {"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}
    live = defaulted(container, "u1")
    live["spec"]["backoffLimit"] = 2  # the manifest set it once, the new one does not
    last = recalled_last(JOB_ENTRY, job(container), live, defaulted(container, "u2"))
    assert last is not None and last["spec"]["backoffLimit"] is True


def test_owned_fields_merges_the_managers_update_entries_of_the_objects_version() -> None:
    def entry(manager: str, fields: dict[str, Any], **extra: str) -> dict[str, Any]:
        return {
            "manager": manager,
            "operation": extra.get("operation", "Update"),
            "apiVersion": extra.get("apiVersion", "batch/v1"),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
            **({"subresource": extra["subresource"]} if "subresource" in extra else {}),
        }

    obj = {
        "apiVersion": "batch/v1",
        "metadata": {
            "managedFields": [
                entry("work-agent", {"f:spec": {"f:a": {}}}),
                entry("work-agent", {"f:spec": {"f:b": {}}}, apiVersion="batch/v2"),
                entry("work-agent", {"f:spec": {"f:c": {}}}, operation="Apply"),
                entry("work-agent", {"f:status": {"f:d": {}}}, subresource="status"),
                entry("kubectl", {"f:spec": {"f:e": {}}}),
                entry("work-agent", {"f:spec": {"f:f": {}}}),
            ]
        },
    }
    assert owned_fields(obj, "work-agent") == {"f:spec": {"f:a": {}, "f:f": {}}}
    assert owned_fields({"metadata": {}}, "work-agent") == {}


async def test_a_write_refused_as_invalid_is_retried_without_the_recalled_keys(
    kube: KubeClient, writes: Writes, owner: dict[str, Any]
) -> None:
    """A Job's pod template cannot change: removing the recalled env is refused, and the
    manifest is applied as if nothing had been recalled (it sets nothing new)."""
    first = job({"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]})
    first["metadata"]["namespace"] = "apply"
    await Appliers(kube).update.apply(request(JOBS, first, owner))
    second = job({"name": "c", "image": "busybox"})
    second["metadata"]["namespace"] = "apply"
    await writes.reset()
    req = changed(request(JOBS, second, owner), may_have_changed=True)
    live = await Appliers(kube).update.apply(req)
    container = live["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "A", "value": "1"}]
    counts = await writes.verbs()
    assert (counts["create"], counts["update"]) == (1, 1)  # the dry run, the refused PUT


def test_the_cache_keeps_the_prune_marks_of_a_recalled_manifest() -> None:
    cache = ApplyCache()
    last = {"spec": {"x": 1, "strategy": Prune(rollingUpdate=Prune(maxSurge=True))}}
    cache.put(("w", "apps", "Deployment", "ns", "n"), "hash", "1", last)
    entry = cache.get(("w", "apps", "Deployment", "ns", "n"))
    assert entry is not None and entry.last_required == last
    strategy = entry.last_required["spec"]["strategy"]
    assert isinstance(strategy, Prune) and isinstance(strategy["rollingUpdate"], Prune)


async def test_a_recall_refused_twice_keeps_its_marks_for_the_next_generation(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any]
) -> None:
    """The recalled manifest is remembered after both writes were refused; the next
    generation still removes only the agent's keys below the defaulted strategy."""
    first = web_deployment()
    first["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": "50%"}}
    await Appliers(kube).update.apply(request(DEPLOYMENTS, first, owner))
    live = await kube.get(DEPLOYMENTS, "web", "apply")
    live["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = 0
    await other.update(DEPLOYMENTS, live)

    restarted = Appliers(kube)
    refused = web_deployment()  # drops the strategy, and changes the immutable selector
    refused["spec"]["selector"]["matchLabels"]["app"] = "web2"
    refused["spec"]["template"]["metadata"]["labels"]["app"] = "web2"
    with pytest.raises(Invalid):
        await restarted.update.apply(
            changed(request(DEPLOYMENTS, refused, owner), may_have_changed=True)
        )
    fixed = web_deployment(replicas=3)
    after = await restarted.update.apply(
        changed(request(DEPLOYMENTS, fixed, owner), may_have_changed=True)
    )
    assert after["spec"]["replicas"] == 3
    assert after["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": 0}
