"""Tests for kubesim.workloads: the simulated controller-manager and kubelet status."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest

from kubesim.api import Api, Caller
from kubesim.resources import ResourceType
from kubesim.workloads import WorkloadSimulator

T = TypeVar("T")
Obj = dict[str, Any]

NS = "sim"
USER = Caller(manager="test")
MERGE = "application/merge-patch+json"


def rt(api: Api, group: str, plural: str) -> ResourceType:
    found = api.registry.get(group, "v1", plural)
    assert found is not None
    return found


async def eventually(check: Callable[[], T | None], what: str) -> T:
    """Poll ``check`` until it returns something truthy, for at most 30 s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30.0
    while True:
        got = check()
        if got:
            return got
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)  # sleep-ok: polling with a deadline


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    api = Api()
    api.start()
    api.create(rt(api, "", "namespaces"), "", {"metadata": {"name": NS}}, USER)
    yield api
    await api.stop()


@pytest.fixture
async def sim(api: Api) -> AsyncIterator[WorkloadSimulator]:
    sim = WorkloadSimulator(api, delay=0.01)
    sim.start()
    yield sim
    await sim.stop()


def template(name: str, **spec: Any) -> Obj:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1"}], **spec},
    }


def deployment(name: str, replicas: int | None = 2, **meta: Any) -> Obj:
    spec: Obj = {"selector": {"matchLabels": {"app": name}}, "template": template(name)}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **meta},
        "spec": spec,
    }


def job(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    meta: Obj = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            },
            **spec,
        },
    }


def pod(name: str, restart: str = "Always", phase: str | None = None) -> Obj:
    meta: Obj = {"name": name}
    if phase is not None:
        meta["annotations"] = {"kubesim.io/pod-phase": phase}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "nginx:1"}]},
    }


def status_of(api: Api, group: str, plural: str, name: str) -> Obj:
    status = api.get(rt(api, group, plural), NS, name).get("status")
    return status if isinstance(status, dict) else {}


def condition(status: Obj, ctype: str) -> Obj:
    found = [c for c in status.get("conditions") or [] if c.get("type") == ctype]
    assert len(found) == 1, status
    return dict(found[0])


def without_times(cond: Obj) -> Obj:
    return {k: v for k, v in cond.items() if not k.endswith("Time")}


async def barrier(api: Api, name: str) -> None:
    """Create a Deployment and wait for its status: earlier-scheduled writes are done."""
    api.create(rt(api, "apps", "deployments"), NS, deployment(name, 1), USER)
    await eventually(
        lambda: status_of(api, "apps", "deployments", name).get("observedGeneration"),
        f"barrier {name}",
    )


# -- Deployments and friends ------------------------------------------------------------
async def test_deployment_becomes_available(api: Api, sim: WorkloadSimulator) -> None:
    api.create(rt(api, "apps", "deployments"), NS, deployment("web", 2), USER)
    status = await eventually(
        lambda: status_of(api, "apps", "deployments", "web") or None, "deployment status"
    )
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
    }
    assert [c["type"] for c in status["conditions"]] == ["Available", "Progressing"]
    available, progressing = status["conditions"]
    assert without_times(available) == {
        "type": "Available",
        "status": "True",
        "reason": "MinimumReplicasAvailable",
        "message": "Deployment has minimum availability.",
    }
    assert progressing["status"] == "True"
    assert progressing["reason"] == "NewReplicaSetAvailable"
    assert progressing["message"].startswith('ReplicaSet "web-')
    assert progressing["message"].endswith('" has successfully progressed.')
    for cond in status["conditions"]:
        assert cond["lastUpdateTime"].endswith("Z")
        assert cond["lastTransitionTime"].endswith("Z")
    managers = {
        (m["manager"], m.get("subresource"))
        for m in api.get(rt(api, "apps", "deployments"), NS, "web")["metadata"]["managedFields"]
    }
    assert ("kube-controller-manager", "status") in managers


async def test_spec_change_bumps_observed_generation(api: Api, sim: WorkloadSimulator) -> None:
    deployments = rt(api, "apps", "deployments")
    api.create(deployments, NS, deployment("web", 2), USER)
    await eventually(
        lambda: status_of(api, "apps", "deployments", "web").get("observedGeneration") == 1,
        "first rollout",
    )
    first = condition(status_of(api, "apps", "deployments", "web"), "Progressing")
    api.patch(deployments, NS, "web", MERGE, {"spec": {"replicas": 3}}, USER)
    assert api.get(deployments, NS, "web")["metadata"]["generation"] == 2
    status = await eventually(
        lambda: (
            (s := status_of(api, "apps", "deployments", "web")).get("observedGeneration") == 2 and s
        ),
        "second rollout",
    )
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (3, 3, 3)
    assert status["updatedReplicas"] == 3
    # Same template: same ReplicaSet named in Progressing, times kept.
    assert condition(status, "Progressing") == first

    api.patch(
        deployments,
        NS,
        "web",
        MERGE,
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}},
        USER,
    )
    obj = api.get(deployments, NS, "web")
    assert obj["metadata"]["generation"] == 3
    status = await eventually(
        lambda: (
            (s := status_of(api, "apps", "deployments", "web")).get("observedGeneration") == 3 and s
        ),
        "template rollout",
    )
    assert condition(status, "Progressing")["message"] != first["message"]


async def test_scaled_to_zero_omits_counts(api: Api, sim: WorkloadSimulator) -> None:
    api.create(rt(api, "apps", "deployments"), NS, deployment("idle", 0), USER)
    status = await eventually(
        lambda: status_of(api, "apps", "deployments", "idle") or None, "deployment status"
    )
    assert {k: v for k, v in status.items() if k != "conditions"} == {"observedGeneration": 1}
    assert condition(status, "Available")["status"] == "True"


async def test_replicas_default_to_one(api: Api, sim: WorkloadSimulator) -> None:
    api.create(rt(api, "apps", "deployments"), NS, deployment("one", None), USER)
    status = await eventually(
        lambda: status_of(api, "apps", "deployments", "one") or None, "deployment status"
    )
    assert status["replicas"] == status["readyReplicas"] == status["availableReplicas"] == 1


async def test_replicaset_statefulset_daemonset(api: Api, sim: WorkloadSimulator) -> None:
    selector = {"matchLabels": {"app": "x"}}
    api.create(
        rt(api, "apps", "replicasets"),
        NS,
        {
            "metadata": {"name": "rs"},
            "spec": {"replicas": 3, "selector": selector, "template": template("x")},
        },
        USER,
    )
    api.create(
        rt(api, "apps", "statefulsets"),
        NS,
        {
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": selector,
                "template": template("x"),
            },
        },
        USER,
    )
    api.create(
        rt(api, "apps", "daemonsets"),
        NS,
        {"metadata": {"name": "agent"}, "spec": {"selector": selector, "template": template("x")}},
        USER,
    )
    rs = await eventually(
        lambda: status_of(api, "apps", "replicasets", "rs").get("observedGeneration"), "rs"
    )
    assert rs == 1
    assert status_of(api, "apps", "replicasets", "rs") == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    # The defaulted status (zero counts) is there at once: wait for the simulator's.
    await eventually(
        lambda: status_of(api, "apps", "statefulsets", "db").get("observedGeneration"), "sts"
    )
    sts = status_of(api, "apps", "statefulsets", "db")
    revision = sts.pop("currentRevision")
    assert revision.startswith("db-")
    assert sts == {
        "observedGeneration": 1,
        "replicas": 2,
        "readyReplicas": 2,
        "currentReplicas": 2,
        "updatedReplicas": 2,
        "availableReplicas": 2,
        "updateRevision": revision,
        "collisionCount": 0,
    }
    ds = await eventually(lambda: status_of(api, "apps", "daemonsets", "agent") or None, "ds")
    assert ds == {
        "currentNumberScheduled": 1,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 1,
        "numberReady": 1,
        "observedGeneration": 1,
        "updatedNumberScheduled": 1,
        "numberAvailable": 1,
    }


# -- Jobs ----------------------------------------------------------------------------------
async def test_job_completes(api: Api, sim: WorkloadSimulator) -> None:
    api.create(rt(api, "batch", "jobs"), NS, job("pi", completions=2, parallelism=2), USER)
    status = await eventually(
        lambda: (s := status_of(api, "batch", "jobs", "pi")).get("completionTime") and s,
        "job completion",
    )
    assert "active" not in status
    assert status["succeeded"] == 2
    assert status["ready"] == 0
    assert status["startTime"] <= status["completionTime"]
    assert "failed" not in status
    conds = status["conditions"]
    assert [without_times(c) for c in conds] == [
        {
            "type": "SuccessCriteriaMet",
            "status": "True",
            "reason": "CompletionsReached",
            "message": "Reached expected number of succeeded pods",
        },
        {
            "type": "Complete",
            "status": "True",
            "reason": "CompletionsReached",
            "message": "Reached expected number of succeeded pods",
        },
    ]
    for cond in conds:
        assert cond["lastProbeTime"].endswith("Z")
        assert cond["lastTransitionTime"].endswith("Z")


async def test_job_passes_through_active(api: Api, sim: WorkloadSimulator) -> None:
    seen: list[Obj] = []
    api.on_change.append(
        lambda ev: (
            seen.append(dict(ev.obj.get("status") or {})) if ev.key == ("batch", "jobs") else None
        )
    )
    api.create(rt(api, "batch", "jobs"), NS, job("steps", parallelism=3, completions=5), USER)
    await eventually(
        lambda: status_of(api, "batch", "jobs", "steps").get("succeeded") == 5, "completion"
    )
    started = [s for s in seen if s.get("startTime")]
    assert started[0]["active"] == 3
    assert "conditions" not in started[0]
    assert "succeeded" not in started[0]
    assert started[-1]["succeeded"] == 5
    assert started[-1]["startTime"] == started[0]["startTime"]


async def test_job_is_never_completed_twice(api: Api, sim: WorkloadSimulator) -> None:
    jobs = rt(api, "batch", "jobs")
    api.create(jobs, NS, job("once"), USER)
    done = await eventually(
        lambda: (s := status_of(api, "batch", "jobs", "once")).get("completionTime") and s,
        "job completion",
    )
    api.patch(
        jobs,
        NS,
        "once",
        MERGE,
        {"metadata": {"annotations": {"kubesim.io/job-result": "Failed"}, "labels": {"x": "y"}}},
        USER,
    )
    rv = api.get(jobs, NS, "once")["metadata"]["resourceVersion"]
    await barrier(api, "after-once")
    assert status_of(api, "batch", "jobs", "once") == done
    assert api.get(jobs, NS, "once")["metadata"]["resourceVersion"] == rv


async def test_failing_job(api: Api, sim: WorkloadSimulator) -> None:
    api.create(
        rt(api, "batch", "jobs"),
        NS,
        job("bad", {"kubesim.io/job-result": "Failed"}, backoffLimit=2),
        USER,
    )
    status = await eventually(
        lambda: (s := status_of(api, "batch", "jobs", "bad")).get("failed") and s, "job failure"
    )
    assert status["failed"] == 3
    assert "succeeded" not in status
    assert "completionTime" not in status
    assert "active" not in status
    message = "Job has reached the specified backoff limit"
    assert [without_times(c) for c in status["conditions"]] == [
        {
            "type": "FailureTarget",
            "status": "True",
            "reason": "BackoffLimitExceeded",
            "message": message,
        },
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": message},
    ]


async def test_suspended_job_waits(api: Api, sim: WorkloadSimulator) -> None:
    jobs = rt(api, "batch", "jobs")
    api.create(jobs, NS, job("later", suspend=True), USER)
    status = await eventually(
        lambda: status_of(api, "batch", "jobs", "later") or None, "suspension"
    )
    assert [without_times(c) for c in status["conditions"]] == [
        {
            "type": "Suspended",
            "status": "True",
            "reason": "JobSuspended",
            "message": "Job suspended",
        }
    ]
    await barrier(api, "after-later")
    assert "completionTime" not in status_of(api, "batch", "jobs", "later")
    assert "startTime" not in status_of(api, "batch", "jobs", "later")

    api.patch(jobs, NS, "later", MERGE, {"spec": {"suspend": False}}, USER)
    status = await eventually(
        lambda: (s := status_of(api, "batch", "jobs", "later")).get("completionTime") and s,
        "completion after resume",
    )
    assert [without_times(c)["type"] for c in status["conditions"]] == [
        "Suspended",
        "SuccessCriteriaMet",
        "Complete",
    ]
    assert condition(status, "Suspended")["status"] == "False"
    assert condition(status, "Suspended")["reason"] == "JobResumed"


# -- Pods ------------------------------------------------------------------------------------
async def test_pod_runs(api: Api, sim: WorkloadSimulator) -> None:
    api.create(rt(api, "", "pods"), NS, pod("p"), USER)
    status = await eventually(
        lambda: (s := status_of(api, "", "pods", "p")).get("phase") == "Running" and s, "running"
    )
    assert status["podIP"].startswith("10.244.0.")
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIP"]
    assert status["startTime"].endswith("Z")
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("Initialized", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
        ("PodScheduled", "True"),
    ]
    (container,) = status["containerStatuses"]
    assert container["name"] == "c"
    assert container["image"] == "nginx:1"
    assert container["ready"] is True
    assert container["started"] is True
    assert container["restartCount"] == 0
    assert container["state"]["running"]["startedAt"].endswith("Z")
    managers = {
        (m["manager"], m.get("subresource"))
        for m in api.get(rt(api, "", "pods"), NS, "p")["metadata"]["managedFields"]
    }
    assert ("kubelet", "status") in managers


async def test_pods_get_distinct_ips(api: Api, sim: WorkloadSimulator) -> None:
    for name in ("a", "b", "c"):
        api.create(rt(api, "", "pods"), NS, pod(name), USER)

    def ips_now() -> list[str] | None:
        ips = [status_of(api, "", "pods", n).get("podIP") for n in "abc"]
        return [ip for ip in ips if ip] if all(ips) else None

    ips = await eventually(ips_now, "pod IPs")
    assert len(set(ips)) == 3


@pytest.mark.parametrize(
    ("phase", "exit_code", "reason"), [("Succeeded", 0, "Completed"), ("Failed", 1, "Error")]
)
async def test_pod_terminal_phase(
    api: Api, sim: WorkloadSimulator, phase: str, exit_code: int, reason: str
) -> None:
    api.create(rt(api, "", "pods"), NS, pod("t", "Never", phase), USER)
    status = await eventually(
        lambda: (s := status_of(api, "", "pods", "t")).get("phase") == phase and s, phase
    )
    (container,) = status["containerStatuses"]
    terminated = container["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (exit_code, reason)
    assert container["ready"] is False
    ready = condition(status, "Ready")
    assert (ready["status"], ready["reason"]) == (
        "False",
        "PodCompleted" if phase == "Succeeded" else "PodFailed",
    )


async def test_pod_phase_annotation_needs_restart_policy(api: Api, sim: WorkloadSimulator) -> None:
    api.create(rt(api, "", "pods"), NS, pod("always", "Always", "Succeeded"), USER)
    await eventually(
        lambda: status_of(api, "", "pods", "always").get("phase") == "Running", "running"
    )


async def test_pending_pod_stays_pending(api: Api, sim: WorkloadSimulator) -> None:
    api.create(rt(api, "", "pods"), NS, pod("wait", "Never", "Pending"), USER)
    status = await eventually(
        lambda: (s := status_of(api, "", "pods", "wait")).get("conditions") and s, "pending status"
    )
    await barrier(api, "after-wait")
    status = status_of(api, "", "pods", "wait")
    assert status["phase"] == "Pending"
    assert "podIP" not in status
    assert condition(status, "Ready")["status"] == "False"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}


# -- scheduling ----------------------------------------------------------------------------
async def test_existing_objects_are_reconciled(api: Api) -> None:
    api.create(rt(api, "apps", "deployments"), NS, deployment("old", 1), USER)
    api.create(rt(api, "", "pods"), NS, pod("old"), USER)
    sim = WorkloadSimulator(api, delay=0.01)
    sim.start()
    try:
        await eventually(
            lambda: status_of(api, "apps", "deployments", "old").get("readyReplicas") == 1,
            "deployment",
        )
        await eventually(lambda: status_of(api, "", "pods", "old").get("phase") == "Running", "pod")
    finally:
        await sim.stop()
    assert sim.pending == 0
    assert api.on_change == []


async def test_delay_annotation(api: Api, sim: WorkloadSimulator) -> None:
    deployments = rt(api, "apps", "deployments")
    api.create(
        deployments,
        NS,
        deployment("slow", 1, annotations={"kubesim.io/delay-seconds": "3600"}),
        USER,
    )
    await barrier(api, "fast")
    assert status_of(api, "apps", "deployments", "slow") == {}
    # Lowering the delay restarts the clock with the new value.
    api.patch(
        deployments,
        NS,
        "slow",
        MERGE,
        {"metadata": {"annotations": {"kubesim.io/delay-seconds": "0"}}},
        USER,
    )
    await eventually(
        lambda: status_of(api, "apps", "deployments", "slow").get("observedGeneration") == 1,
        "status after lowering the delay",
    )
    assert sim.delay_for({"metadata": {"annotations": {"kubesim.io/delay-seconds": "x"}}}) == 0.01
    assert sim.delay_for({"metadata": {"annotations": {"kubesim.io/delay-seconds": "-1"}}}) == 0.01
    assert sim.delay_for({"metadata": {"annotations": {"kubesim.io/delay-seconds": "2.5"}}}) == 2.5


async def test_deleted_object_is_forgotten(api: Api, sim: WorkloadSimulator) -> None:
    deployments = rt(api, "apps", "deployments")
    api.create(
        deployments,
        NS,
        deployment("gone", 1, annotations={"kubesim.io/delay-seconds": "3600"}),
        USER,
    )
    assert sim.pending == 1
    api.delete(deployments, NS, "gone", USER)
    assert sim.pending == 0
    await barrier(api, "after-gone")


async def test_no_write_when_nothing_changes(api: Api, sim: WorkloadSimulator) -> None:
    deployments = rt(api, "apps", "deployments")
    api.create(deployments, NS, deployment("steady", 1), USER)
    await eventually(
        lambda: status_of(api, "apps", "deployments", "steady").get("observedGeneration"), "status"
    )
    await barrier(api, "settle")  # the follow-up reconcile of our own write is done
    settled = api.get(deployments, NS, "steady")
    api.patch(deployments, NS, "steady", MERGE, {"metadata": {"labels": {"touched": "yes"}}}, USER)
    touched = api.get(deployments, NS, "steady")
    assert touched["metadata"]["generation"] == settled["metadata"]["generation"]
    await barrier(api, "after-touch")
    assert (
        api.get(deployments, NS, "steady")["metadata"]["resourceVersion"]
        == (touched["metadata"]["resourceVersion"])
    )


async def test_status_overwritten_by_others_is_restored(api: Api, sim: WorkloadSimulator) -> None:
    deployments = rt(api, "apps", "deployments")
    api.create(deployments, NS, deployment("fixme", 2), USER)
    await eventually(
        lambda: status_of(api, "apps", "deployments", "fixme").get("readyReplicas") == 2, "status"
    )
    api.patch(
        deployments,
        NS,
        "fixme",
        MERGE,
        {"status": {"readyReplicas": 1, "availableReplicas": 1}},
        USER,
        subresource="status",
    )
    await eventually(
        lambda: status_of(api, "apps", "deployments", "fixme").get("readyReplicas") == 2, "repair"
    )


async def test_stop_detaches(api: Api) -> None:
    sim = WorkloadSimulator(api, delay=0.01)
    sim.start()
    assert len(api.on_change) == 1
    await sim.stop()
    assert api.on_change == []
    api.create(rt(api, "apps", "deployments"), NS, deployment("unseen", 1), USER)
    assert sim.pending == 0
