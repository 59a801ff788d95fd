"""Defaulting of built-in kinds, checked against recorded kube-apiserver v1.24 answers
(with what changed up to v1.35, kubesim's reference, applied: ``as_v135``)."""

from __future__ import annotations

import copy
import ipaddress
import json
from typing import Any

import pytest

from kubesim.defaults import (
    ClusterIPAllocator,
    apply_defaults,
    patch_allocated_values,
    pod_qos_class,
)
from kubesim.errors import ApiError
from tests.fixtures import APISERVER_RECORDINGS
from tests.kubesim.recordings import as_v135

REFERENCE = APISERVER_RECORDINGS


def _exchanges(name: str) -> list[dict[str, Any]]:
    path = REFERENCE / name
    data: dict[str, Any] = json.loads(path.read_text())
    return list(data["exchanges"])


def _creates() -> list[tuple[str, int, str]]:
    """(reference file, exchange index, API group) of every recorded create we default."""
    return [
        ("defaulting-and-generation.json", 0, "apps"),  # Deployment
        ("defaulting-and-generation.json", 1, "batch"),  # Job with generated selector
        ("defaulting-and-generation.json", 2, ""),  # Service
        ("defaulting-and-generation.json", 3, ""),  # ServiceAccount
        ("crud-and-errors.json", 0, ""),  # Namespace
        ("crud-and-errors.json", 1, ""),  # ConfigMap
        ("crd-lifecycle.json", 0, "apiextensions.k8s.io"),  # CustomResourceDefinition
    ]


def _strip_service_ips(spec: dict[str, Any]) -> None:
    spec.pop("clusterIP", None)
    spec.pop("clusterIPs", None)


@pytest.mark.parametrize(("reference", "index", "group"), _creates())
def test_golden_create_defaults(reference: str, index: int, group: str) -> None:
    exchange = _exchanges(reference)[index]
    assert exchange["request"]["method"] == "POST"
    body = copy.deepcopy(exchange["request"]["body"])
    recorded = as_v135(exchange["response"]["body"])
    # The caller assigns uid (the Job's generated selector needs it) before defaulting.
    body["metadata"]["uid"] = recorded["metadata"]["uid"]
    allocator = ClusterIPAllocator()
    apply_defaults(group, body["kind"], body, allocator=allocator)

    want_spec = copy.deepcopy(recorded.get("spec"))
    got_spec = copy.deepcopy(body.get("spec"))
    if body["kind"] == "Service":
        ip = body["spec"]["clusterIP"]
        assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.0.0.0/24")
        assert body["spec"]["clusterIPs"] == [ip]
        assert allocator.in_use(ip)
        _strip_service_ips(want_spec)
        _strip_service_ips(got_spec)
    assert got_spec == want_spec
    assert body.get("status") == recorded.get("status")
    assert body["metadata"].get("labels") == recorded["metadata"].get("labels")
    # Key order follows the Go structs, as the apiserver prints them.
    assert json.dumps(got_spec) == json.dumps(want_spec)
    assert json.dumps(body.get("status")) == json.dumps(recorded.get("status"))
    for key in ("data", "conditions"):
        assert body.get(key) == recorded.get(key)


def test_golden_job_labels_use_uid_and_name() -> None:
    exchange = _exchanges("defaulting-and-generation.json")[1]
    body = copy.deepcopy(exchange["request"]["body"])
    body["metadata"]["uid"] = "u-1"
    apply_defaults("batch", "Job", body)
    want: dict[str, Any] = {
        "controller-uid": "u-1",
        "job-name": "pi",
        "batch.kubernetes.io/controller-uid": "u-1",
        "batch.kubernetes.io/job-name": "pi",
    }
    assert body["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}
    }
    assert body["spec"]["template"]["metadata"]["labels"] == want
    assert body["metadata"]["labels"] == want


def test_defaults_are_idempotent() -> None:
    for reference, index, group in _creates():
        exchange = _exchanges(reference)[index]
        body = copy.deepcopy(exchange["request"]["body"])
        body["metadata"]["uid"] = "u"
        apply_defaults(group, body["kind"], body, allocator=ClusterIPAllocator())
        again = copy.deepcopy(body)
        apply_defaults(group, body["kind"], again, allocator=ClusterIPAllocator())
        assert again == body


# -- workloads ----------------------------------------------------------------------


def _template(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "img:1"}], **spec},
    }


def test_job_manual_selector_is_kept() -> None:
    job: dict[str, Any] = {
        "metadata": {"name": "j", "uid": "u", "labels": {"team": "a"}},
        "spec": {
            "manualSelector": True,
            "selector": {"matchLabels": {"app": "x"}},
            "parallelism": 3,
            "template": _template(restartPolicy="Never"),
        },
    }
    apply_defaults("batch", "Job", job)
    assert job["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "x"}
    assert job["metadata"]["labels"] == {"team": "a"}
    # completions stays unset when only parallelism was given.
    assert "completions" not in job["spec"]
    assert job["spec"]["parallelism"] == 3
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_job_without_labels_copies_template_labels() -> None:
    job: dict[str, Any] = {
        "metadata": {"name": "j", "uid": "u"},
        "spec": {"manualSelector": True, "template": _template(restartPolicy="OnFailure")},
    }
    apply_defaults("batch", "Job", job)
    assert job["metadata"]["labels"] == {"app": "x"}


def test_job_update_does_not_regenerate_selector() -> None:
    job: dict[str, Any] = {
        "metadata": {"name": "j", "uid": "u", "resourceVersion": "5"},
        "spec": {"template": _template(restartPolicy="Never")},
    }
    apply_defaults("batch", "Job", job)
    assert "selector" not in job["spec"]


def test_cronjob_defaults_leave_job_spec_alone() -> None:
    cron: dict[str, Any] = {
        "metadata": {"name": "c"},
        "spec": {
            "schedule": "*/1 * * * *",
            "jobTemplate": {"spec": {"template": _template(restartPolicy="OnFailure")}},
        },
    }
    apply_defaults("batch", "CronJob", cron)
    spec = cron["spec"]
    assert list(spec) == [
        "schedule",
        "concurrencyPolicy",
        "suspend",
        "jobTemplate",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    job_template = spec["jobTemplate"]
    assert job_template["metadata"] == {}
    assert list(job_template["spec"]) == ["template"]
    pod_spec = job_template["spec"]["template"]["spec"]
    assert pod_spec["restartPolicy"] == "OnFailure"
    assert pod_spec["schedulerName"] == "default-scheduler"
    assert cron["status"] == {}


def test_statefulset_defaults() -> None:
    sts: dict[str, Any] = {
        "metadata": {"name": "s"},
        "spec": {
            "serviceName": "s",
            "selector": {"matchLabels": {"app": "x"}},
            "template": _template(),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    apply_defaults("apps", "StatefulSet", sts)
    spec = sts["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    # v1.35 defaults the retention policy (the feature is GA).
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    pvc = spec["volumeClaimTemplates"][0]
    assert pvc["metadata"] == {"name": "data"}
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    assert pvc["status"] == {"phase": "Pending"}
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}


def test_statefulset_explicit_rolling_update_keeps_partition_unset() -> None:
    sts: dict[str, Any] = {"metadata": {}, "spec": {"updateStrategy": {"type": "RollingUpdate"}}}
    apply_defaults("apps", "StatefulSet", sts)
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate"}


def test_daemonset_and_replicaset_defaults() -> None:
    ds: dict[str, Any] = {"metadata": {}, "spec": {"template": _template()}}
    apply_defaults("apps", "DaemonSet", ds)
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert ds["spec"]["revisionHistoryLimit"] == 10
    assert ds["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
    rs: dict[str, Any] = {"metadata": {}, "spec": {"template": _template()}}
    apply_defaults("apps", "ReplicaSet", rs)
    assert rs["spec"]["replicas"] == 1
    assert rs["status"] == {"replicas": 0}


def test_deployment_recreate_has_no_rolling_update() -> None:
    dep: dict[str, Any] = {
        "metadata": {},
        "spec": {"strategy": {"type": "Recreate"}, "template": _template()},
    }
    apply_defaults("apps", "Deployment", dep)
    assert dep["spec"]["strategy"] == {"type": "Recreate"}


# -- pods ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("localhost:5000/nginx", "Always"),
        ("registry.example.com:5000/team/app:v2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
        ("Upper/Case", "IfNotPresent"),  # unparsable: no tag, so IfNotPresent
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    pod: dict[str, Any] = {"metadata": {}, "spec": {"containers": [{"name": "c", "image": image}]}}
    apply_defaults("", "Pod", pod)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_pod_defaults_and_admission() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "img:1",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                    "livenessProbe": {"httpGet": {"port": 80}},
                }
            ],
            "volumes": [{"name": "v"}, {"name": "cm", "configMap": {"name": "cm"}}],
        },
    }
    apply_defaults("", "Pod", pod)
    spec = pod["spec"]
    c = spec["containers"][0]
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "x", "apiVersion": "v1"}
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/", "port": 80, "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert c["resources"] == {}
    assert spec["volumes"] == [
        {"name": "v", "emptyDir": {}},
        {"name": "cm", "configMap": {"name": "cm", "defaultMode": 420}},
    ]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert spec["enableServiceLinks"] is True
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert spec["tolerations"] == [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert list(spec)[:3] == ["volumes", "containers", "restartPolicy"]


def test_pod_keeps_existing_tolerations() -> None:
    pod: dict[str, Any] = {
        "metadata": {},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "tolerations": [{"operator": "Exists"}],
        },
    }
    apply_defaults("", "Pod", pod)
    assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ([{}], "BestEffort"),
        ([{"requests": {"cpu": "100m"}}], "Burstable"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}], "Guaranteed"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}], "Burstable"),
        (
            [{"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": {"cpu": "1"}}],
            "Guaranteed",
        ),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}, {}], "Burstable"),
    ],
)
def test_pod_qos(resources: list[dict[str, Any]], qos: str) -> None:
    pod: dict[str, Any] = {
        "metadata": {},
        "spec": {
            "containers": [
                {"name": f"c{i}", "image": "i", "resources": copy.deepcopy(r)}
                for i, r in enumerate(resources)
            ]
        },
    }
    apply_defaults("", "Pod", pod)
    assert pod["status"]["qosClass"] == qos
    assert pod_qos_class(pod["spec"]) == qos


def test_pod_requests_default_from_limits_but_templates_do_not() -> None:
    limits: dict[str, Any] = {"cpu": "1", "memory": "1Gi"}
    pod: dict[str, Any] = {
        "metadata": {},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": limits}}]},
    }
    apply_defaults("", "Pod", pod)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == limits
    dep: dict[str, Any] = {"metadata": {}, "spec": {"template": copy.deepcopy(pod)}}
    del dep["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
    apply_defaults("apps", "Deployment", dep)
    assert "requests" not in dep["spec"]["template"]["spec"]["containers"][0]["resources"]


def test_service_account_name_syncs_deprecated_field() -> None:
    tmpl = _template(serviceAccount="legacy")
    dep: dict[str, Any] = {"metadata": {}, "spec": {"template": tmpl}}
    apply_defaults("apps", "Deployment", dep)
    spec = dep["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "legacy"


# -- core kinds ---------------------------------------------------------------------


def test_namespace_finalizer_only_on_create() -> None:
    ns: dict[str, Any] = {"metadata": {"name": "a"}}
    apply_defaults("", "Namespace", ns)
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "a"}
    finalized: dict[str, Any] = {
        "metadata": {"name": "a", "resourceVersion": "7"},
        "spec": {},
        "status": {},
    }
    apply_defaults("", "Namespace", finalized)
    assert finalized["spec"] == {}
    other: dict[str, Any] = {"metadata": {"name": "b"}, "spec": {"finalizers": ["example.com/x"]}}
    apply_defaults("", "Namespace", other, create=True)
    assert other["spec"]["finalizers"] == ["example.com/x", "kubernetes"]


def test_simple_kinds() -> None:
    secret: dict[str, Any] = {"metadata": {"name": "s"}}
    apply_defaults("", "Secret", secret)
    assert secret["type"] == "Opaque"
    for group, kind in [
        ("", "ConfigMap"),
        ("", "ServiceAccount"),
        ("coordination.k8s.io", "Lease"),
        ("example.com", "Widget"),
    ]:
        obj: dict[str, Any] = {"metadata": {"name": "x"}, "spec": {}}
        apply_defaults(group, kind, obj)
        assert obj == {"metadata": {"name": "x"}, "spec": {}}
    # A Role's rules are never omitted: unset, they read back as null.
    for kind in ("Role", "ClusterRole"):
        role: dict[str, Any] = {"metadata": {"name": "x"}}
        apply_defaults("rbac.authorization.k8s.io", kind, role)
        assert role == {"metadata": {"name": "x"}, "rules": None}


def test_condition_times_read_back_null() -> None:
    deployment: dict[str, Any] = {
        "metadata": {"name": "d", "uid": "u", "resourceVersion": "5"},
        "status": {"conditions": [{"type": "Available", "status": "True"}]},
    }
    apply_defaults("apps", "Deployment", deployment)
    assert deployment["status"]["conditions"] == [
        {
            "type": "Available",
            "status": "True",
            "lastUpdateTime": None,
            "lastTransitionTime": None,
        }
    ]


def test_role_binding_defaults() -> None:
    rb: dict[str, Any] = {
        "metadata": {"name": "b"},
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "sa"}],
    }
    apply_defaults("rbac.authorization.k8s.io", "RoleBinding", rb)
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}
    assert rb["subjects"] == [
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "u"},
        {"kind": "ServiceAccount", "name": "sa"},
    ]


def test_crd_names_default() -> None:
    crd: dict[str, Any] = {
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "things", "kind": "Thing"},
            "scope": "Cluster",
            "versions": [
                {"name": "v1", "served": True, "storage": False},
                {"name": "v2", "served": True, "storage": True},
            ],
        },
    }
    apply_defaults("apiextensions.k8s.io", "CustomResourceDefinition", crd)
    assert crd["spec"]["names"] == {
        "plural": "things",
        "singular": "thing",
        "kind": "Thing",
        "listKind": "ThingList",
    }
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"] == {
        "conditions": None,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": ["v2"],
    }


# -- services -----------------------------------------------------------------------


def _service(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}], **spec}}


def test_service_without_allocator_leaves_ip_to_caller() -> None:
    svc = _service(selector={"app": "x"})
    apply_defaults("", "Service", svc)
    assert "clusterIP" not in svc["spec"]
    assert svc["spec"]["ipFamilies"] == ["IPv4"]
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "port": 80, "targetPort": 80}]


def test_service_headless_and_external_name() -> None:
    headless = _service(clusterIP="None")
    apply_defaults("", "Service", headless, allocator=ClusterIPAllocator())
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    with_selector = _service(clusterIP="None", selector={"a": "b"})
    apply_defaults("", "Service", with_selector, allocator=ClusterIPAllocator())
    assert with_selector["spec"]["ipFamilyPolicy"] == "SingleStack"
    external: dict[str, Any] = {
        "metadata": {"name": "e"},
        "spec": {"type": "ExternalName", "externalName": "x.y"},
    }
    apply_defaults("", "Service", external, allocator=ClusterIPAllocator())
    assert external["spec"] == {
        "type": "ExternalName",
        "sessionAffinity": "None",
        "externalName": "x.y",
    }
    assert external["status"] == {"loadBalancer": {}}


def test_service_node_ports_and_load_balancer() -> None:
    allocator = ClusterIPAllocator()
    svc = _service(type="LoadBalancer", ports=[{"port": 80, "targetPort": "http"}])
    apply_defaults("", "Service", svc, allocator=allocator)
    spec = svc["spec"]
    assert spec["ports"] == [
        {"protocol": "TCP", "port": 80, "targetPort": "http", "nodePort": 30000}
    ]
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert spec["allocateLoadBalancerNodePorts"] is True
    assert spec["internalTrafficPolicy"] == "Cluster"
    taken = _service(type="NodePort", ports=[{"port": 81, "nodePort": 30000}])
    with pytest.raises(ApiError) as info:
        apply_defaults("", "Service", taken, allocator=allocator)
    assert info.value.code == 422
    assert info.value.details is not None
    assert info.value.details["causes"][0]["field"] == "spec.ports[0].nodePort"


def test_service_client_ip_affinity() -> None:
    svc = _service(sessionAffinity="ClientIP")
    apply_defaults("", "Service", svc)
    assert svc["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_service_explicit_cluster_ip_conflicts() -> None:
    allocator = ClusterIPAllocator()
    first = _service(clusterIP="10.0.0.50")
    apply_defaults("", "Service", first, allocator=allocator)
    assert first["spec"]["clusterIPs"] == ["10.0.0.50"]
    second = _service(clusterIP="10.0.0.50")
    with pytest.raises(ApiError) as info:
        apply_defaults("", "Service", second, allocator=allocator)
    assert info.value.message == (
        'Service "svc" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.50"}: '
        "failed to allocate IP 10.0.0.50: provided IP is already allocated"
    )
    outside = _service(clusterIP="10.1.0.5")
    with pytest.raises(ApiError) as info:
        apply_defaults("", "Service", outside, allocator=allocator)
    assert "The range of valid IPs is 10.0.0.0/24" in info.value.message


def test_allocator_sequence_release_and_exhaustion() -> None:
    allocator = ClusterIPAllocator("10.0.0.0/29")  # hosts .1-.6; .1 only on request
    got = [allocator.allocate() for _ in range(5)]
    assert got == ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]
    with pytest.raises(ValueError, match="range is full"):
        allocator.allocate()
    assert allocator.allocate("10.0.0.1") == "10.0.0.1"
    allocator.release("10.0.0.4")
    assert not allocator.in_use("10.0.0.4")
    assert allocator.allocate() == "10.0.0.4"
    with pytest.raises(ValueError, match="not in the valid range"):
        allocator.allocate("10.0.0.7")  # broadcast address
    svc = _service()
    with pytest.raises(ApiError) as info:
        apply_defaults("", "Service", svc, allocator=allocator)
    assert info.value.code == 500


def test_patch_allocated_values_carries_ips_and_node_ports() -> None:
    old = _service(type="NodePort")
    apply_defaults("", "Service", old, allocator=ClusterIPAllocator())
    new = _service(type="NodePort")
    new["metadata"]["resourceVersion"] = "3"
    apply_defaults("", "Service", new)
    patch_allocated_values(old, new)
    assert new["spec"]["clusterIP"] == old["spec"]["clusterIP"]
    assert new["spec"]["clusterIPs"] == old["spec"]["clusterIPs"]
    assert new["spec"]["ports"][0]["nodePort"] == old["spec"]["ports"][0]["nodePort"]
    assert list(new["spec"])[:3] == ["ports", "clusterIP", "clusterIPs"]
