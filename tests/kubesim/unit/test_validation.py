"""Validation of built-in kinds, worded as kube-apiserver v1.24 words it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubesim.defaults import apply_defaults
from kubesim.errors import ApiError
from kubesim.validation import (
    is_dns1035_label,
    is_dns1123_label,
    validate_create,
    validate_name,
    validate_update,
)
from tests.fixtures import APISERVER_RECORDINGS
from tests.kubesim.recordings import as_v135

REFERENCE = APISERVER_RECORDINGS

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _exchanges(name: str) -> list[dict[str, Any]]:
    path = REFERENCE / name
    data: dict[str, Any] = json.loads(path.read_text())
    return list(data["exchanges"])


def _causes(fn: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    with pytest.raises(ApiError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert err.code == 422
    assert err.reason == "Invalid"
    assert err.details is not None
    causes: list[dict[str, Any]] = err.details["causes"]
    return causes


def _pairs(fn: Any, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in _causes(fn, *args, **kwargs)]


# -- golden cases -------------------------------------------------------------------


def test_golden_invalid_name() -> None:
    exchange = next(
        e
        for e in _exchanges("crud-and-errors.json")
        if e["response"]["status"] == 422 and e["request"]["method"] == "POST"
    )
    body = copy.deepcopy(exchange["request"]["body"])
    with pytest.raises(ApiError) as info:
        validate_create("", "ConfigMap", body, True)
    assert info.value.status() == exchange["response"]["body"]


def test_golden_deployment_status() -> None:
    exchanges = _exchanges("defaulting-and-generation.json")
    status_patch = next(e for e in exchanges if e["request"]["path"].endswith("/status"))
    stored = next(
        e["response"]["body"]
        for e in reversed(exchanges)
        if e["response"]["status"] == 200 and e["response"]["body"].get("kind") == "Deployment"
    )
    new = copy.deepcopy(stored)
    new["status"] = {**stored["status"], **status_patch["request"]["body"]["status"]}
    with pytest.raises(ApiError) as info:
        validate_update("apps", "Deployment", stored, new, subresource="status")
    assert info.value.status() == status_patch["response"]["body"]
    # Without the subresource hint the status is still checked.
    with pytest.raises(ApiError):
        validate_update("apps", "Deployment", stored, new)


def test_golden_job_template_immutable() -> None:
    exchanges = _exchanges("defaulting-and-generation.json")
    job = next(
        e["response"]["body"] for e in exchanges if e["response"]["body"].get("kind") == "Job"
    )
    recorded = next(
        e["response"]["body"]
        for e in exchanges
        if e["response"]["status"] == 422 and e["response"]["body"]["details"]["kind"] == "Job"
    )
    new = copy.deepcopy(job)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:2"
    with pytest.raises(ApiError) as info:
        validate_update("batch", "Job", job, new)
    body = info.value.status()
    want_cause = recorded["details"]["causes"][0]
    (cause,) = body["details"]["causes"]
    assert cause["field"] == want_cause["field"] == "spec.template"
    assert cause["reason"] == want_cause["reason"]
    assert cause["message"].startswith("Invalid value: ")
    assert cause["message"].endswith(": field is immutable")
    assert want_cause["message"].endswith(": field is immutable")
    assert {k: v for k, v in body["details"].items() if k != "causes"} == {
        k: v for k, v in recorded["details"].items() if k != "causes"
    }


@pytest.mark.parametrize(
    ("reference", "index", "group", "namespaced"),
    [
        ("defaulting-and-generation.json", 0, "apps", True),
        ("defaulting-and-generation.json", 1, "batch", True),
        ("defaulting-and-generation.json", 2, "", True),
        ("defaulting-and-generation.json", 3, "", True),
        ("crud-and-errors.json", 0, "", False),
        ("crud-and-errors.json", 1, "", True),
        ("crd-lifecycle.json", 0, "apiextensions.k8s.io", False),
    ],
)
def test_recorded_objects_are_valid(
    reference: str, index: int, group: str, namespaced: bool
) -> None:
    stored = as_v135(_exchanges(reference)[index]["response"]["body"])
    validate_create(group, stored["kind"], copy.deepcopy(stored), namespaced)
    validate_update(group, stored["kind"], stored, copy.deepcopy(stored))
    # And the request body, once defaulted, validates too.
    body = copy.deepcopy(_exchanges(reference)[index]["request"]["body"])
    body["metadata"]["uid"] = stored["metadata"]["uid"]
    apply_defaults(group, body["kind"], body)
    if body["kind"] == "Service":
        body["spec"]["clusterIP"] = "10.0.0.9"
        body["spec"]["clusterIPs"] = ["10.0.0.9"]
    validate_create(group, body["kind"], body, namespaced)


# -- names and metadata -------------------------------------------------------------


def test_name_rules() -> None:
    assert is_dns1123_label("my-name") == []
    assert is_dns1123_label("a.b") == [LABEL_MSG]
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert is_dns1035_label("1abc") == [DNS1035_MSG]
    assert validate_name("ConfigMap", "a.b-c", label=False) == []
    assert validate_name("ConfigMap", "a.b", label=True) == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "a.b": {LABEL_MSG}',
            "field": "metadata.name",
        }
    ]
    assert validate_name("Namespace", "a.b", label=False)[0]["message"].endswith(LABEL_MSG)
    assert validate_name("Service", "1svc", label=False)[0]["message"].endswith(DNS1035_MSG)
    assert validate_name("ConfigMap", "a" * 253, label=False) == []
    long = validate_name("ConfigMap", "a" * 254, label=False)
    assert [c["message"].rsplit(": ", 1)[1] for c in long] == [
        "must be no more than 253 characters"
    ]
    assert validate_name("ConfigMap", "", label=False) == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: name or generateName is required",
            "field": "metadata.name",
        }
    ]
    assert validate_name("Role", "system:controller:x", group="rbac.authorization.k8s.io") == []
    assert validate_name("ClusterRole", "a/b", group="rbac.authorization.k8s.io")[0]["message"] == (
        "Invalid value: \"a/b\": may not contain '/'"
    )
    assert validate_name("ConfigMap", "web-", prefix=True, field="metadata.generateName") == []


def test_invalid_name_message_for_namespace() -> None:
    with pytest.raises(ApiError) as info:
        validate_create("", "Namespace", {"metadata": {"name": "Bad_NS"}}, False)
    assert (
        info.value.message
        == f'Namespace "Bad_NS" is invalid: metadata.name: Invalid value: "Bad_NS": {LABEL_MSG}'
    )


def test_metadata_labels_annotations_finalizers() -> None:
    obj = {
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "labels": {"good": "v", "bad key": "v", "k": "bad value"},
            "annotations": {"big": "x" * (256 * 1024)},
            "finalizers": ["example.com/ok", "not valid/too/many"],
        }
    }
    fields = [f for f, _ in _pairs(validate_create, "", "ConfigMap", obj, True)]
    assert fields == [
        "metadata.labels",
        "metadata.labels",
        "metadata.annotations",
        "metadata.finalizers",
    ]
    causes = _causes(validate_create, "", "ConfigMap", obj, True)
    assert causes[0]["message"].startswith('Invalid value: "bad key": name part must consist')
    assert causes[1]["message"].startswith('Invalid value: "bad value": a valid label must be')
    assert causes[2] == {
        "reason": "FieldValueTooLong",
        "message": "Too long: may not be more than 262144 bytes",
        "field": "metadata.annotations",
    }


def test_namespace_required_for_namespaced_kinds() -> None:
    assert _pairs(validate_create, "", "ConfigMap", {"metadata": {"name": "a"}}, True) == [
        ("metadata.namespace", "Required value")
    ]
    validate_create("", "Namespace", {"metadata": {"name": "a"}}, False)


def test_metadata_immutable_on_update() -> None:
    old: dict[str, Any] = {"metadata": {"name": "a", "namespace": "ns", "uid": "1"}, "data": {}}
    new = copy.deepcopy(old)
    new["metadata"]["name"] = "b"
    new["metadata"]["namespace"] = "other"
    assert _pairs(validate_update, "", "ConfigMap", old, new) == [
        ("metadata.name", 'Invalid value: "b": field is immutable'),
        ("metadata.namespace", 'Invalid value: "other": field is immutable'),
    ]
    no_uid = copy.deepcopy(old)
    del no_uid["metadata"]["uid"]
    validate_update("", "ConfigMap", old, no_uid)


def test_no_new_finalizers_while_deleting() -> None:
    old: dict[str, Any] = {"metadata": {"name": "a", "namespace": "ns", "deletionTimestamp": "t"}}
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["example.com/x"]
    assert _pairs(validate_update, "", "ConfigMap", old, new) == [
        (
            "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being deleted, found "
            'new finalizers []string{"example.com/x"}',
        )
    ]


# -- workloads ----------------------------------------------------------------------


def _deployment(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
            **spec,
        },
    }
    apply_defaults("apps", "Deployment", obj)
    return obj


def test_deployment_selector_required_and_must_match() -> None:
    dep = _deployment()
    del dep["spec"]["selector"]
    assert _pairs(validate_create, "apps", "Deployment", dep, True) == [
        ("spec.selector", "Required value"),
        (
            "spec.template.metadata.labels",
            'Invalid value: {"app":"web"}: `selector` does not match template `labels`',
        ),
    ]
    dep = _deployment(selector={"matchLabels": {"app": "other"}})
    assert _pairs(validate_create, "apps", "Deployment", dep, True) == [
        (
            "spec.template.metadata.labels",
            'Invalid value: {"app":"web"}: `selector` does not match template `labels`',
        )
    ]
    dep = _deployment(selector={})
    assert _pairs(validate_create, "apps", "Deployment", dep, True) == [
        (
            "spec.selector",
            "Invalid value: {}: empty selector is invalid for deployment",
        )
    ]


def test_deployment_selector_immutable() -> None:
    old = _deployment()
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "v": "2"}}
    new["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    assert _pairs(validate_update, "apps", "Deployment", old, new) == [
        (
            "spec.selector",
            'Invalid value: {"matchLabels":{"app":"web","v":"2"}}: field is immutable',
        )
    ]
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 5
    validate_update("apps", "Deployment", old, scaled)


def test_containers_required_and_container_fields() -> None:
    dep = _deployment()
    dep["spec"]["template"]["spec"]["containers"] = []
    assert _pairs(validate_create, "apps", "Deployment", dep, True) == [
        ("spec.template.spec.containers", "Required value")
    ]
    dep = _deployment()
    dep["spec"]["template"]["spec"]["containers"] = [
        {"name": "", "image": ""},
        {"name": "Bad_Name", "image": "x", "ports": [{"containerPort": 70000}]},
    ]
    apply_defaults("apps", "Deployment", dep)
    assert _pairs(validate_create, "apps", "Deployment", dep, True) == [
        ("spec.template.spec.containers[0].name", "Required value"),
        ("spec.template.spec.containers[0].image", "Required value"),
        ("spec.template.spec.containers[1].name", f'Invalid value: "Bad_Name": {LABEL_MSG}'),
        (
            "spec.template.spec.containers[1].ports[0].containerPort",
            "Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
    ]


def test_pod_validation() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "i",
                    "volumeMounts": [{"name": "missing", "mountPath": "/x"}],
                    "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}},
                }
            ]
        },
    }
    apply_defaults("", "Pod", pod)
    assert _pairs(validate_create, "", "Pod", pod, True) == [
        ("spec.containers[0].volumeMounts[0].name", 'Not found: "missing"'),
        (
            "spec.containers[0].resources.requests",
            'Invalid value: "2": must be less than or equal to cpu limit',
        ),
    ]


def test_pod_update_only_image_changes() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "i:1"}]},
    }
    apply_defaults("", "Pod", pod)
    new = copy.deepcopy(pod)
    new["spec"]["containers"][0]["image"] = "i:2"
    validate_update("", "Pod", pod, new)
    new["spec"]["restartPolicy"] = "Never"
    ((field, message),) = _pairs(validate_update, "", "Pod", pod, new)
    assert field == "spec"
    assert message.startswith("Forbidden: pod updates may not change fields other than")


def _job(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "c", "image": "perl"}]}},
            **spec,
        },
    }
    apply_defaults("batch", "Job", obj)
    return obj


def test_job_restart_policy() -> None:
    assert _pairs(validate_create, "batch", "Job", _job(), True) == [
        (
            "spec.template.spec.restartPolicy",
            'Required value: valid values: "OnFailure", "Never"',
        )
    ]


def test_job_selector_not_auto_generated() -> None:
    job = _job()
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    validate_create("batch", "Job", job, True)
    job["spec"]["selector"] = {"matchLabels": {"controller-uid": "u-1", "x": "y"}}
    assert _pairs(validate_create, "batch", "Job", job, True) == [
        (
            "spec.selector",
            'Invalid value: {"matchLabels":{"controller-uid":"u-1","x":"y"}}: `selector` '
            "not auto-generated",
        ),
        (
            "spec.template.metadata.labels",
            'Invalid value: {"batch.kubernetes.io/controller-uid":"u-1",'
            '"batch.kubernetes.io/job-name":"pi","controller-uid":"u-1","job-name":"pi"}: '
            "`selector` does not match template `labels`",
        ),
    ]


def test_job_immutable_fields_and_suspended_scheduling() -> None:
    old = _job(suspend=True)
    old["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 3
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    # A suspended Job that never started may change its node selector.
    assert _pairs(validate_update, "batch", "Job", old, new) == [
        ("spec.completions", "Invalid value: 3: field is immutable")
    ]
    old["spec"]["suspend"] = False
    new["spec"]["suspend"] = False
    fields = [f for f, _ in _pairs(validate_update, "batch", "Job", old, new)]
    assert fields == ["spec.completions", "spec.template"]


def test_cronjob_validation() -> None:
    cron: dict[str, Any] = {
        "metadata": {"name": "c" * 53, "namespace": "ns"},
        "spec": {
            "schedule": "61 * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "c", "image": "i"}],
                        }
                    }
                }
            },
        },
    }
    apply_defaults("batch", "CronJob", cron)
    assert _pairs(validate_create, "batch", "CronJob", cron, True) == [
        ("spec.schedule", 'Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'),
        ("metadata.name", f'Invalid value: "{"c" * 53}": must be no more than 52 characters'),
    ]
    cron["metadata"]["name"] = "c"
    cron["spec"]["schedule"] = "*/5 * * * mon-fri"
    validate_create("batch", "CronJob", cron, True)
    cron["spec"]["schedule"] = "* * *"
    assert _pairs(validate_create, "batch", "CronJob", cron, True) == [
        ("spec.schedule", 'Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]')
    ]


def _status_update(group: str, kind: str, status: dict[str, Any]) -> list[tuple[str, str]]:
    old: dict[str, Any] = {"metadata": {"name": "x", "namespace": "ns"}, "status": {}}
    new = copy.deepcopy(old)
    new["status"] = status
    return _pairs(validate_update, group, kind, old, new, subresource="status")


def test_status_validation() -> None:
    assert _status_update("apps", "ReplicaSet", {"replicas": 1, "readyReplicas": 2}) == [
        ("status.readyReplicas", "Invalid value: 2: cannot be greater than status.replicas")
    ]
    assert _status_update(
        "apps", "StatefulSet", {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2}
    ) == [
        (
            "status.availableReplicas",
            "Invalid value: 2: cannot be greater than status.readyReplicas",
        )
    ]
    assert _status_update("apps", "Deployment", {"observedGeneration": -1}) == [
        ("status.observedGeneration", "Invalid value: -1: must be greater than or equal to 0")
    ]


# -- core kinds ---------------------------------------------------------------------


def _service(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"ports": [{"port": 80}], "clusterIP": "10.0.0.5", **spec},
    }
    apply_defaults("", "Service", obj)
    return obj


def test_service_validation() -> None:
    validate_create("", "Service", _service(), True)
    svc = _service(ports=[{"port": 80}, {"port": 0, "protocol": "ICMP"}], type="Bogus")
    assert _pairs(validate_create, "", "Service", svc, True) == [
        ("spec.ports[0].name", "Required value"),
        ("spec.ports[1].name", "Required value"),
        ("spec.ports[1].port", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        (
            "spec.ports[1].protocol",
            'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        ),
        # targetPort defaults to port, so it is out of range too.
        ("spec.ports[1].targetPort", "Invalid value: 0: must be between 1 and 65535, inclusive"),
        (
            "spec.type",
            'Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", '
            '"LoadBalancer", "NodePort"',
        ),
    ]


def test_service_cluster_ip_immutable() -> None:
    old = _service()
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.0.0.6"
    new["spec"]["clusterIPs"] = ["10.0.0.6"]
    assert _pairs(validate_update, "", "Service", old, new) == [
        ("spec.clusterIPs[0]", 'Invalid value: ["10.0.0.6"]: may not change once set')
    ]


def test_configmap_and_secret() -> None:
    cm: dict[str, Any] = {"metadata": {"name": "c", "namespace": "ns"}, "data": {"bad/key": "v"}}
    assert _pairs(validate_create, "", "ConfigMap", cm, True) == [
        (
            "data[bad/key]",
            'Invalid value: "bad/key": a valid config key must consist of alphanumeric '
            "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', "
            "regex used for validation is '[-._a-zA-Z0-9]+')",
        )
    ]
    old: dict[str, Any] = {
        "metadata": {"name": "c", "namespace": "ns"},
        "data": {"a": "1"},
        "immutable": True,
    }
    new = copy.deepcopy(old)
    new["data"]["a"] = "2"
    assert _pairs(validate_update, "", "ConfigMap", old, new) == [
        ("data", "Forbidden: field is immutable when `immutable` is set")
    ]
    tls: dict[str, Any] = {
        "metadata": {"name": "t", "namespace": "ns"},
        "type": "kubernetes.io/tls",
        "data": {},
    }
    assert _pairs(validate_create, "", "Secret", tls, True) == [
        ("data[tls.crt]", "Required value"),
        ("data[tls.key]", "Required value"),
    ]
    opaque: dict[str, Any] = {"metadata": {"name": "o", "namespace": "ns"}, "type": "Opaque"}
    changed = copy.deepcopy(opaque)
    changed["type"] = "kubernetes.io/tls"
    assert ("type", 'Invalid value: "kubernetes.io/tls": field is immutable') in _pairs(
        validate_update, "", "Secret", opaque, changed
    )


def test_namespace_finalizers() -> None:
    ns: dict[str, Any] = {
        "metadata": {"name": "a"},
        "spec": {"finalizers": ["kubernetes", "custom"]},
    }
    assert _pairs(validate_create, "", "Namespace", ns, False) == [
        (
            "spec.finalizers",
            'Invalid value: "custom": name is neither a standard finalizer name nor is it fully '
            "qualified",
        )
    ]


def test_rbac_bindings() -> None:
    rb: dict[str, Any] = {
        "metadata": {"name": "b", "namespace": "ns"},
        "roleRef": {"kind": "Secret", "name": "r"},
        "subjects": [{"kind": "Robot", "name": "x"}],
    }
    apply_defaults("rbac.authorization.k8s.io", "RoleBinding", rb)
    assert _pairs(validate_create, "rbac.authorization.k8s.io", "RoleBinding", rb, True) == [
        ("roleRef.kind", 'Unsupported value: "Secret": supported values: "Role", "ClusterRole"'),
        (
            "subjects[0].kind",
            'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        ),
    ]
    rb["roleRef"]["kind"] = "Role"
    rb["subjects"] = [{"kind": "ServiceAccount", "name": "sa"}]
    validate_create("rbac.authorization.k8s.io", "RoleBinding", rb, True)
    new = copy.deepcopy(rb)
    new["roleRef"]["name"] = "other"
    assert _pairs(validate_update, "rbac.authorization.k8s.io", "RoleBinding", rb, new) == [
        (
            "roleRef",
            'Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", '
            'Name:"other"}: cannot change roleRef',
        )
    ]
    role: dict[str, Any] = {
        "metadata": {"name": "r", "namespace": "ns"},
        "rules": [{"apiGroups": [""]}],
    }
    assert _pairs(validate_create, "rbac.authorization.k8s.io", "Role", role, True) == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("rules[0].resources", "Required value: resource rules must supply at least one resource"),
    ]


# -- CustomResourceDefinitions ------------------------------------------------------


def _crd(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
            **spec,
        },
    }
    apply_defaults("apiextensions.k8s.io", "CustomResourceDefinition", obj)
    return obj


CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")


def test_crd_valid() -> None:
    validate_create(*CRD, _crd(), False)


def test_crd_name_and_group() -> None:
    crd = _crd(group="example")
    crd["metadata"]["name"] = "widgets.example"
    assert _pairs(validate_create, *CRD, crd, False) == [
        ("spec.group", 'Invalid value: "example": should be a domain with at least one dot')
    ]
    crd = _crd()
    crd["metadata"]["name"] = "gadgets.example.com"
    assert _pairs(validate_create, *CRD, crd, False) == [
        (
            "metadata.name",
            'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group',
        )
    ]


def test_crd_scope_versions_names() -> None:
    crd = _crd(scope="Global")
    assert _pairs(validate_create, *CRD, crd, False) == [
        ("spec.scope", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"')
    ]
    crd = _crd()
    crd["spec"]["versions"] = []
    crd["status"]["storedVersions"] = ["v1"]
    fields = [f for f, _ in _pairs(validate_create, *CRD, crd, False)]
    assert fields == ["spec.versions", "status.storedVersions[0]"]
    crd = _crd()
    crd["spec"]["versions"].append(
        {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": {}}}
    )
    pairs = _pairs(validate_create, *CRD, crd, False)
    assert [f for f, _ in pairs] == [
        "spec.versions[1].schema.openAPIV3Schema.type",
        "spec.versions",
        "status.storedVersions",
    ]
    assert pairs[1][1].endswith("must have exactly one version marked as storage version")
    crd = _crd()
    crd["metadata"]["name"] = "Widgets.example.com"
    crd["spec"]["names"] = {"plural": "Widgets", "listKind": "WidgetList"}
    fields = [f for f, _ in _pairs(validate_create, *CRD, crd, False)]
    assert fields == ["metadata.name", "spec.names.plural", "spec.names.kind"]


def test_crd_update_rules() -> None:
    old = _crd()
    old["status"]["conditions"] = [{"type": "Established", "status": "True"}]
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    assert _pairs(validate_update, *CRD, old, new) == [
        ("spec.scope", 'Invalid value: "Cluster": field is immutable')
    ]
