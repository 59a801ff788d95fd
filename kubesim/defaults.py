"""Defaulting of built-in kinds, as kube-apiserver (v1.35) fills in what clients omit.

``apply_defaults`` mutates an object in place. It combines what the real server
spreads over several stages, because clients only ever see the sum of them:

* the versioned defaulting functions (``SetDefaults_*``),
* the shape Go's JSON encoder gives empty structs (``resources: {}``,
  ``status: {}``),
* create-time strategy steps (Job selector generation, Namespace finalizer,
  Pod status, Service cluster IP and node port allocation),
* the admission plugins every cluster runs for Pods (service account,
  priority, default toleration seconds).

Create-only steps run only for objects being created (see ``apply_defaults``),
so that, e.g., re-defaulting an update does not put back a Namespace finalizer
the namespace controller removed.

Keys are re-ordered to the Go struct field order where the server's output
has a well-known order; unknown keys keep their relative order at the end.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from kubesim.errors import internal_error, invalid
from kubesim.objectmeta import OBJECT_META_FIELDS

__all__ = [
    "ClusterIPAllocator",
    "apply_defaults",
    "parse_quantity",
    "patch_allocated_values",
    "pod_qos_class",
    "update_strategy",
]

Obj = dict[str, Any]

#: Added to every new PersistentVolumeClaim by admission.
PVC_PROTECTION = "kubernetes.io/pvc-protection"
#: Added to every new Node by admission.
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
#: A DaemonSet's template generation (the v1 form of an internal field).
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
_NODE_INFO_FIELDS = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)

#: The labels a Job's generated selector puts on its pod template.
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------


def _sub(parent: Obj, key: str) -> Obj | None:
    """``parent[key]`` as a dict, created when absent; None when it is not a dict."""
    value = parent.get(key)
    if value is None:
        value = {}
        parent[key] = value
    return value if isinstance(value, dict) else None


def _existing(parent: Obj, key: str) -> Obj | None:
    """``parent[key]`` when it is a dict, without creating it."""
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _dicts(value: Any) -> Iterable[Obj]:
    """The dict items of a list (others are left for validation to reject)."""
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, dict))


def _default(obj: Obj, key: str, value: Any) -> None:
    """Set ``key`` when it is absent or null (Go's nil pointer / zero value)."""
    if obj.get(key) is None:
        obj[key] = value


def _default_str(obj: Obj, key: str, value: str) -> None:
    """Set a string field when it is absent, null or empty (Go's ``== ""``)."""
    if not obj.get(key):
        obj[key] = value


def _order(obj: Obj, keys: Iterable[str]) -> None:
    """Re-insert ``obj``'s keys in the given order; unknown keys go last."""
    ordered = [k for k in keys if k in obj]
    rest = [k for k in obj if k not in set(ordered)]
    items = [(k, obj[k]) for k in ordered + rest]
    obj.clear()
    obj.update(items)


# Go struct field orders of the types whose defaulted output clients see.
_META_ORDER = OBJECT_META_FIELDS
_POD_SPEC_ORDER = (
    "volumes",
    "initContainers",
    "containers",
    "ephemeralContainers",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
)
_CONTAINER_ORDER = (
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    "targetContainerName",
)
_CONTAINER_PORT_ORDER = ("name", "hostPort", "containerPort", "protocol", "hostIP")
_PROBE_ORDER = (
    "exec",
    "httpGet",
    "tcpSocket",
    "grpc",
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
    "terminationGracePeriodSeconds",
)
_HTTP_GET_ORDER = ("path", "port", "host", "scheme", "httpHeaders")
_TOLERATION_ORDER = ("key", "operator", "value", "effect", "tolerationSeconds")
_POD_STATUS_ORDER = (
    "phase",
    "conditions",
    "message",
    "reason",
    "nominatedNodeName",
    "hostIP",
    "podIP",
    "podIPs",
    "startTime",
    "initContainerStatuses",
    "containerStatuses",
    "qosClass",
    "ephemeralContainerStatuses",
)
_DEPLOYMENT_SPEC_ORDER = (
    "replicas",
    "selector",
    "template",
    "strategy",
    "minReadySeconds",
    "revisionHistoryLimit",
    "paused",
    "progressDeadlineSeconds",
)
_REPLICASET_SPEC_ORDER = ("replicas", "minReadySeconds", "selector", "template")
_STATEFULSET_SPEC_ORDER = (
    "replicas",
    "selector",
    "template",
    "volumeClaimTemplates",
    "serviceName",
    "podManagementPolicy",
    "updateStrategy",
    "revisionHistoryLimit",
    "minReadySeconds",
    "persistentVolumeClaimRetentionPolicy",
)
_DAEMONSET_SPEC_ORDER = (
    "selector",
    "template",
    "updateStrategy",
    "minReadySeconds",
    "templateGeneration",
    "revisionHistoryLimit",
)
_JOB_SPEC_ORDER = (
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "podFailurePolicy",
    "successPolicy",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "selector",
    "manualSelector",
    "template",
    "ttlSecondsAfterFinished",
    "completionMode",
    "suspend",
    "podReplacementPolicy",
    "managedBy",
)
_CRONJOB_SPEC_ORDER = (
    "schedule",
    "timeZone",
    "startingDeadlineSeconds",
    "concurrencyPolicy",
    "suspend",
    "jobTemplate",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
)
_SERVICE_SPEC_ORDER = (
    "ports",
    "selector",
    "clusterIP",
    "clusterIPs",
    "type",
    "externalIPs",
    "sessionAffinity",
    "loadBalancerIP",
    "loadBalancerSourceRanges",
    "externalName",
    "externalTrafficPolicy",
    "healthCheckNodePort",
    "publishNotReadyAddresses",
    "sessionAffinityConfig",
    "ipFamilies",
    "ipFamilyPolicy",
    "allocateLoadBalancerNodePorts",
    "loadBalancerClass",
    "internalTrafficPolicy",
)
_SERVICE_PORT_ORDER = ("name", "protocol", "appProtocol", "port", "targetPort", "nodePort")
_CRD_SPEC_ORDER = ("group", "names", "scope", "versions", "conversion", "preserveUnknownFields")
_CRD_NAMES_ORDER = ("plural", "singular", "shortNames", "kind", "listKind", "categories")
_CRD_VERSION_ORDER = (
    "name",
    "served",
    "storage",
    "deprecated",
    "deprecationWarning",
    "schema",
    "subresources",
    "additionalPrinterColumns",
)
_CRD_STATUS_ORDER = ("conditions", "acceptedNames", "storedVersions")
_PVC_SPEC_ORDER = (
    "accessModes",
    "selector",
    "resources",
    "volumeName",
    "storageClassName",
    "volumeMode",
    "dataSource",
    "dataSourceRef",
)


# --------------------------------------------------------------------------
# Quantities and QoS
# --------------------------------------------------------------------------

_QUANTITY_RE = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)")
_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def parse_quantity(value: Any) -> Decimal | None:
    """The numeric value of a resource quantity (``500m``, ``1Gi``, ``2e3``), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    m = _QUANTITY_RE.fullmatch(value.strip())
    if not m:
        return None
    number, suffix = m.groups()
    try:
        base = Decimal(number)
        if suffix in _SUFFIXES:
            return base * _SUFFIXES[suffix]
        if suffix[:1] in ("e", "E") and re.fullmatch(r"[eE][+-]?[0-9]+", suffix):
            return base * (Decimal(10) ** int(suffix[1:]))
    except InvalidOperation:
        return None
    return None


def pod_qos_class(spec: Obj) -> str:
    """The QoS class of a pod spec: ``Guaranteed``, ``Burstable`` or ``BestEffort``.

    Only cpu and memory count; requests are expected to be defaulted from
    limits already, as they are for Pods.
    """
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    containers = [*_dicts(spec.get("containers")), *_dicts(spec.get("initContainers"))]
    for c in containers:
        res = _existing(c, "resources") or {}
        for source, total, track in (
            (res.get("requests"), requests, False),
            (res.get("limits"), limits, True),
        ):
            found: set[str] = set()
            if isinstance(source, dict):
                for name, raw in source.items():
                    if name not in ("cpu", "memory"):
                        continue
                    q = parse_quantity(raw)
                    if q is not None and q > 0:
                        found.add(name)
                        total[name] = total.get(name, Decimal(0)) + q
            if track and not {"cpu", "memory"} <= found:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, req in requests.items():
            if limits.get(name) != req:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# --------------------------------------------------------------------------
# Pod specs and templates
# --------------------------------------------------------------------------


def _image_tag_is_latest(image: str) -> bool:
    """Whether pulling ``image`` means the ``latest`` tag (explicit or implied).

    Mirrors the reference parser closely enough: an unparsable reference
    yields no tag at all, which means ``IfNotPresent``.
    """
    if not image or image != image.strip() or any(ch.isspace() for ch in image):
        return False
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    repo = name[: len(name) - len(tag) - 1] if tag else name
    # Repository paths must be lower case; the registry host may not be.
    path = repo.split("/", 1)[1] if "/" in repo and _looks_like_host(repo.split("/")[0]) else repo
    if not path or path != path.lower():
        return False
    if tag:
        return tag == "latest"
    return not digest


def _looks_like_host(component: str) -> bool:
    return "." in component or ":" in component or component == "localhost"


def _default_http_get(action: Obj) -> None:
    _default_str(action, "path", "/")
    _default_str(action, "scheme", "HTTP")
    _order(action, _HTTP_GET_ORDER)


def _default_probe(probe: Obj) -> None:
    _default(probe, "timeoutSeconds", 1)
    _default(probe, "periodSeconds", 10)
    _default(probe, "successThreshold", 1)
    _default(probe, "failureThreshold", 3)
    http = _existing(probe, "httpGet")
    if http is not None:
        _default_http_get(http)
    _order(probe, _PROBE_ORDER)


def _default_field_refs(holder: Obj) -> None:
    """Defaults of downward-API references (env values and volume items)."""
    field_ref = _existing(holder, "fieldRef")
    if field_ref is not None:
        _default_str(field_ref, "apiVersion", "v1")
    resource_ref = _existing(holder, "resourceFieldRef")
    if resource_ref is not None:
        # A zero Quantity is serialized as "0".
        _default(resource_ref, "divisor", "0")


def _default_container(c: Obj) -> None:
    if not c.get("imagePullPolicy"):
        image = c.get("image")
        latest = _image_tag_is_latest(image) if isinstance(image, str) else False
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    _default_str(c, "terminationMessagePath", "/dev/termination-log")
    _default_str(c, "terminationMessagePolicy", "File")
    _default(c, "resources", {})
    for port in _dicts(c.get("ports")):
        _default_str(port, "protocol", "TCP")
        _order(port, _CONTAINER_PORT_ORDER)
    for env in _dicts(c.get("env")):
        value_from = _existing(env, "valueFrom")
        if value_from is not None:
            _default_field_refs(value_from)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _existing(c, key)
        if probe is not None:
            _default_probe(probe)
    lifecycle = _existing(c, "lifecycle")
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            handler = _existing(lifecycle, hook)
            http = _existing(handler, "httpGet") if handler is not None else None
            if http is not None:
                _default_http_get(http)
    _order(c, _CONTAINER_ORDER)


# The volume source members of a Volume: a volume without one gets an emptyDir.
VOLUME_SOURCES = (
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
)


def _default_volume(vol: Obj) -> None:
    if not any(vol.get(k) is not None for k in VOLUME_SOURCES):
        vol["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = _existing(vol, key)
        if source is not None:
            _default(source, "defaultMode", 420)  # 0644
    host_path = _existing(vol, "hostPath")
    if host_path is not None:
        _default(host_path, "type", "")
    downward = _existing(vol, "downwardAPI")
    if downward is not None:
        for item in _dicts(downward.get("items")):
            _default_field_refs(item)
    projected = _existing(vol, "projected")
    if projected is not None:
        for source in _dicts(projected.get("sources")):
            token = _existing(source, "serviceAccountToken")
            if token is not None:
                _default(token, "expirationSeconds", 3600)
            downward_src = _existing(source, "downwardAPI")
            if downward_src is not None:
                for item in _dicts(downward_src.get("items")):
                    _default_field_refs(item)


def _default_pod_spec(spec: Obj) -> None:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _dicts(spec.get(key)):
            _default_container(c)
    for vol in _dicts(spec.get("volumes")):
        _default_volume(vol)
    _default_str(spec, "dnsPolicy", "ClusterFirst")
    _default_str(spec, "restartPolicy", "Always")
    if spec.get("hostNetwork") is True:
        # With the host's network, a container port is a host port.
        for key in ("initContainers", "containers"):
            for c in _dicts(spec.get(key)):
                for port in _dicts(c.get("ports")):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
                        _order(port, _CONTAINER_PORT_ORDER)
    _default(spec, "securityContext", {})
    _default(spec, "terminationGracePeriodSeconds", 30)
    _default_str(spec, "schedulerName", "default-scheduler")
    # v1 keeps the deprecated serviceAccount in step with serviceAccountName.
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    _order(spec, _POD_SPEC_ORDER)


def _default_template_meta(holder: Obj) -> None:
    """An embedded ObjectMeta is always there, and has no creationTimestamp.

    (v1.35 omits a zero creationTimestamp; v1.24 wrote ``null``.)
    """
    meta = _sub(holder, "metadata")
    if meta is not None:
        if meta.get("creationTimestamp", "") is None:
            del meta["creationTimestamp"]
        _order(meta, _META_ORDER)


def _default_pod_template(template: Obj) -> None:
    _default_template_meta(template)
    spec = _sub(template, "spec")
    if spec is not None:
        _default_pod_spec(spec)
    _order(template, ("metadata", "spec"))


def _template_of(spec: Obj) -> Obj | None:
    return _sub(spec, "template")


# --------------------------------------------------------------------------
# Per-kind defaulting
# --------------------------------------------------------------------------


class _Ctx:
    def __init__(self, allocator: ClusterIPAllocator | None, create: bool) -> None:
        self.allocator = allocator
        self.create = create


_NOT_READY_TOLERATION: Obj = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
_UNREACHABLE_TOLERATION: Obj = {
    "key": "node.kubernetes.io/unreachable",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
_SYSTEM_PRIORITIES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


def _pod(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    # Pods (not templates) get requests defaulted from limits.
    for key in ("containers", "initContainers"):
        for c in _dicts(spec.get(key)):
            res = _existing(c, "resources")
            limits = _existing(res, "limits") if res is not None else None
            if res is not None and limits is not None:
                requests = _sub(res, "requests")
                if requests is not None:
                    for name, value in limits.items():
                        requests.setdefault(name, value)
                _order(res, ("limits", "requests", "claims"))
    _default(spec, "enableServiceLinks", True)
    _default_pod_spec(spec)
    if ctx.create:
        _pod_admission(spec)
        status = _sub(obj, "status")
        if status is not None:
            _default_str(status, "phase", "Pending")
            _default_str(status, "qosClass", pod_qos_class(spec))
            _order(status, _POD_STATUS_ORDER)
    _order(spec, _POD_SPEC_ORDER)


def _pod_admission(spec: Obj) -> None:
    """What the ServiceAccount, Priority and DefaultTolerationSeconds plugins add."""
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = "default"
    spec["serviceAccount"] = spec["serviceAccountName"]
    if spec.get("priority") is None:
        spec["priority"] = _SYSTEM_PRIORITIES.get(str(spec.get("priorityClassName") or ""), 0)
    _default_str(spec, "preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if isinstance(tolerations, list):
        for wanted in (_NOT_READY_TOLERATION, _UNREACHABLE_TOLERATION):
            covered = any(
                t.get("key") in (wanted["key"], "", None)
                and t.get("effect") in ("NoExecute", "", None)
                for t in _dicts(tolerations)
            )
            if not covered:
                tolerations.append(dict(wanted))
        for t in _dicts(tolerations):
            _order(t, _TOLERATION_ORDER)
        spec["tolerations"] = tolerations


def _pod_template_kind(obj: Obj, ctx: _Ctx) -> None:
    template = _template_of(obj)
    if template is not None:
        _default_pod_template(template)


def _replicas_default(spec: Obj) -> None:
    _default(spec, "replicas", 1)


def _deployment(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _replicas_default(spec)
    strategy = _sub(spec, "strategy")
    if strategy is not None:
        _default_str(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _sub(strategy, "rollingUpdate")
            if rolling is not None:
                _default(rolling, "maxUnavailable", "25%")
                _default(rolling, "maxSurge", "25%")
                _order(rolling, ("maxUnavailable", "maxSurge"))
        _order(strategy, ("type", "rollingUpdate"))
    _default(spec, "revisionHistoryLimit", 10)
    _default(spec, "progressDeadlineSeconds", 600)
    template = _template_of(spec)
    if template is not None:
        _default_pod_template(template)
    _order(spec, _DEPLOYMENT_SPEC_ORDER)
    _default(obj, "status", {})


def _replicaset(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _replicas_default(spec)
    template = _template_of(spec)
    if template is not None:
        _default_pod_template(template)
    _order(spec, _REPLICASET_SPEC_ORDER)
    status = _sub(obj, "status")
    if status is not None:
        _default(status, "replicas", 0)


def _pvc_template(pvc: Obj) -> None:
    _default_template_meta(pvc)
    spec = _sub(pvc, "spec")
    if spec is not None:
        _default_str(spec, "volumeMode", "Filesystem")
        _order(spec, _PVC_SPEC_ORDER)
    status = _sub(pvc, "status")
    if status is not None:
        _default_str(status, "phase", "Pending")
    _order(pvc, ("apiVersion", "kind", "metadata", "spec", "status"))


def _statefulset(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _default_str(spec, "podManagementPolicy", "OrderedReady")
    strategy = _sub(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            _sub(strategy, "rollingUpdate")
        # An explicit RollingUpdate without rollingUpdate keeps it absent.
        rolling = _existing(strategy, "rollingUpdate")
        if strategy["type"] == "RollingUpdate" and rolling is not None:
            _default(rolling, "partition", 0)
            _order(rolling, ("partition", "maxUnavailable"))
        _order(strategy, ("type", "rollingUpdate"))
    _replicas_default(spec)
    _default(spec, "revisionHistoryLimit", 10)
    # Never omitted (no omitempty): an unset service name reads back as "".
    spec.setdefault("serviceName", "")
    retention = _sub(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _default_str(retention, "whenDeleted", "Retain")
        _default_str(retention, "whenScaled", "Retain")
        _order(retention, ("whenDeleted", "whenScaled"))
    template = _template_of(spec)
    if template is not None:
        _default_pod_template(template)
    for pvc in _dicts(spec.get("volumeClaimTemplates")):
        _pvc_template(pvc)
    _order(spec, _STATEFULSET_SPEC_ORDER)
    status = _sub(obj, "status")
    if status is not None:
        _default(status, "replicas", 0)
        _default(status, "availableReplicas", 0)


def _daemonset(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    if ctx.create:
        _template_generation(obj, 1)
    strategy = _sub(spec, "updateStrategy")
    if strategy is not None:
        _default_str(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _sub(strategy, "rollingUpdate")
            if rolling is not None:
                _default(rolling, "maxUnavailable", 1)
                _default(rolling, "maxSurge", 0)
                _order(rolling, ("maxUnavailable", "maxSurge"))
        _order(strategy, ("type", "rollingUpdate"))
    _default(spec, "revisionHistoryLimit", 10)
    template = _template_of(spec)
    if template is not None:
        _default_pod_template(template)
    _order(spec, _DAEMONSET_SPEC_ORDER)
    status = _sub(obj, "status")
    if status is not None:
        # These counters have no omitempty, so an empty status shows them.
        for key in (
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
        ):
            _default(status, key, 0)


def _job(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    meta = _sub(obj, "metadata")
    if spec is None or meta is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _default(spec, "parallelism", 1)
    # With a per-index limit the overall limit is unbounded (MaxInt32).
    _default(spec, "backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") else 6)
    _default_str(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    _default(
        spec,
        "podReplacementPolicy",
        "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed",
    )
    _default(spec, "manualSelector", False)
    template = _template_of(spec)
    if template is None:
        return
    _default_pod_template(template)
    if ctx.create and spec.get("manualSelector") is not True:
        _generate_job_selector(spec, template, meta)
    # Defaulting runs again when the stored object is read back; by then the
    # template carries the generated labels, and a label-less Job copies them.
    tmeta = _existing(template, "metadata")
    tlabels = tmeta.get("labels") if tmeta is not None else None
    if isinstance(tlabels, dict) and not meta.get("labels"):
        meta["labels"] = dict(tlabels)
        _order(meta, _META_ORDER)
    _order(spec, _JOB_SPEC_ORDER)
    _default(obj, "status", {})


def _generate_job_selector(spec: Obj, template: Obj, meta: Obj) -> None:
    uid = str(meta.get("uid") or "")
    name = str(meta.get("name") or "")
    tmeta = _sub(template, "metadata")
    if tmeta is None:
        return
    labels = _sub(tmeta, "labels")
    if labels is None:
        return
    # User-set values are kept; validation then reports any mismatch. The legacy
    # unprefixed labels stay beside the batch.kubernetes.io ones.
    for key in (JOB_NAME_LABEL, LEGACY_JOB_NAME_LABEL):
        labels.setdefault(key, name)
    for key in (CONTROLLER_UID_LABEL, LEGACY_CONTROLLER_UID_LABEL):
        labels.setdefault(key, uid)
    _order(labels, sorted(labels))  # a Go map: its keys come out sorted
    _order(tmeta, _META_ORDER)
    selector = _sub(spec, "selector")
    if selector is None:
        return
    match_labels = _sub(selector, "matchLabels")
    if match_labels is not None:
        match_labels.setdefault(CONTROLLER_UID_LABEL, uid)
    _order(selector, ("matchLabels", "matchExpressions"))


def _cronjob(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _default_str(spec, "concurrencyPolicy", "Allow")
    _default(spec, "suspend", False)
    _default(spec, "successfulJobsHistoryLimit", 3)
    _default(spec, "failedJobsHistoryLimit", 1)
    job_template = _sub(spec, "jobTemplate")
    if job_template is not None:
        # JobSpec has no defaulter of its own (SetDefaults_Job takes a Job), so
        # only the pod template inside the job template is defaulted.
        _default_template_meta(job_template)
        job_spec = _sub(job_template, "spec")
        if job_spec is not None:
            template = _template_of(job_spec)
            if template is not None:
                _default_pod_template(template)
            _order(job_spec, _JOB_SPEC_ORDER)
        _order(job_template, ("metadata", "spec"))
    _order(spec, _CRONJOB_SPEC_ORDER)
    _default(obj, "status", {})


def _replication_controller(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    meta = _sub(obj, "metadata")
    if spec is None or meta is None:
        return
    template = _existing(spec, "template")
    tlabels: Any = None
    if template is not None:
        _default_pod_template(template)
        tlabels = (_existing(template, "metadata") or {}).get("labels")
    if isinstance(tlabels, dict) and tlabels:
        if not spec.get("selector"):
            spec["selector"] = dict(tlabels)
        if not meta.get("labels"):
            meta["labels"] = dict(tlabels)
            _order(meta, _META_ORDER)
    _replicas_default(spec)
    _order(spec, ("replicas", "minReadySeconds", "selector", "template"))
    status = _sub(obj, "status")
    if status is not None:
        _default(status, "replicas", 0)


def _namespace(obj: Obj, ctx: _Ctx) -> None:
    meta = _sub(obj, "metadata")
    if meta is None:
        return
    name = meta.get("name")
    if name:
        labels = _sub(meta, "labels")
        if labels is not None:
            labels["kubernetes.io/metadata.name"] = name
        _order(meta, _META_ORDER)
    spec = _sub(obj, "spec")
    if spec is not None and ctx.create:
        # Only on create: the namespace controller removes it during deletion.
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = []
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
        spec["finalizers"] = finalizers
    status = _sub(obj, "status")
    if status is not None:
        _default_str(status, "phase", "Active")


def _secret(obj: Obj, ctx: _Ctx) -> None:
    _default_str(obj, "type", "Opaque")


def _pvc(obj: Obj, ctx: _Ctx) -> None:
    if ctx.create:
        # The StorageObjectInUseProtection admission plugin protects every new claim.
        meta = _sub(obj, "metadata")
        if meta is not None:
            found = meta.get("finalizers")
            finalizers: list[Any] = found if isinstance(found, list) else []
            if PVC_PROTECTION not in finalizers:
                meta["finalizers"] = [*finalizers, PVC_PROTECTION]
                _order(meta, _META_ORDER)
    spec = _sub(obj, "spec")
    if spec is not None:
        _default_str(spec, "volumeMode", "Filesystem")
        _order(spec, _PVC_SPEC_ORDER)
    status = _sub(obj, "status")
    if status is not None:
        _default_str(status, "phase", "Pending")


def _template_generation(obj: Obj, generation: int) -> None:
    """A DaemonSet's template generation, kept (for old clients) in an annotation."""
    meta = _sub(obj, "metadata")
    if meta is None:
        return
    annotations = _sub(meta, "annotations")
    if annotations is None:
        return
    try:
        current = int(str(annotations.get(TEMPLATE_GENERATION, "0")))
    except ValueError:
        current = 0
    annotations[TEMPLATE_GENERATION] = str(max(current, generation))
    _order(meta, _META_ORDER)


def update_strategy(group: str, kind: str, old: Obj, new: Obj) -> None:
    """What the registry strategies carry over from the stored object on an update.

    A DaemonSet's template generation is the server's: it is the stored one,
    plus one when the pod template changed.
    """
    if (group, kind) != ("apps", "DaemonSet"):
        return
    old_meta = old.get("metadata") if isinstance(old.get("metadata"), dict) else {}
    annotations = old_meta.get("annotations") if isinstance(old_meta, dict) else None
    try:
        generation = int(str((annotations or {}).get(TEMPLATE_GENERATION, "1")))
    except ValueError:
        generation = 1
    old_template = (old.get("spec") or {}).get("template")
    new_template = (
        (new.get("spec") or {}).get("template") if isinstance(new.get("spec"), dict) else None
    )
    if old_template != new_template:
        generation += 1
    meta = _sub(new, "metadata")
    if meta is not None:
        annotations_new = _sub(meta, "annotations")
        if annotations_new is not None:
            annotations_new[TEMPLATE_GENERATION] = str(generation)


def _node(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is not None and ctx.create:
        # The TaintNodesByCondition admission plugin: a new node is not ready yet.
        found = spec.get("taints")
        taints: list[Any] = found if isinstance(found, list) else []
        if not any(isinstance(t, dict) and t.get("key") == NOT_READY_TAINT["key"] for t in taints):
            spec["taints"] = [*taints, dict(NOT_READY_TAINT)]
    status = _sub(obj, "status")
    if status is None:
        return
    # Structs without omitempty: always written, with their zero values.
    endpoints = _sub(status, "daemonEndpoints")
    if endpoints is not None:
        kubelet = _sub(endpoints, "kubeletEndpoint")
        if kubelet is not None:
            kubelet.setdefault("Port", 0)
    info = _sub(status, "nodeInfo")
    if info is not None:
        for key in _NODE_INFO_FIELDS:
            info.setdefault(key, "")
        _order(info, _NODE_INFO_FIELDS)


def _core_event(obj: Obj, ctx: _Ctx) -> None:
    # Fields without omitempty: an event written without them reads back with them.
    obj.setdefault("source", {})
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        obj.setdefault(key, None)
    for key in ("reportingComponent", "reportingInstance"):
        obj.setdefault(key, "")


def _events_event(obj: Obj, ctx: _Ctx) -> None:
    obj.setdefault("deprecatedSource", {})
    for key in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
        obj.setdefault(key, None)


def _lease(obj: Obj, ctx: _Ctx) -> None:
    obj.setdefault("spec", {})


def _pdb(obj: Obj, ctx: _Ctx) -> None:
    status = _sub(obj, "status")
    if status is not None:
        for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            _default(status, key, 0)


def _endpoints(obj: Obj, ctx: _Ctx) -> None:
    for subset in _dicts(obj.get("subsets")):
        for port in _dicts(subset.get("ports")):
            _default_str(port, "protocol", "TCP")


def _role_binding(obj: Obj, ctx: _Ctx) -> None:
    role_ref = _existing(obj, "roleRef")
    if role_ref is not None:
        _default_str(role_ref, "apiGroup", "rbac.authorization.k8s.io")
        _order(role_ref, ("apiGroup", "kind", "name"))
    for subject in _dicts(obj.get("subjects")):
        if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = "rbac.authorization.k8s.io"
        _order(subject, ("kind", "apiGroup", "name", "namespace"))


def _crd(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    names = _sub(spec, "names")
    if names is not None:
        kind = names.get("kind")
        if isinstance(kind, str) and kind:
            _default_str(names, "singular", kind.lower())
            _default_str(names, "listKind", kind + "List")
        _order(names, _CRD_NAMES_ORDER)
    conversion = _sub(spec, "conversion")
    if conversion is not None:
        _default_str(conversion, "strategy", "None")
        webhook = _existing(conversion, "webhook")
        client_config = _existing(webhook, "clientConfig") if webhook is not None else None
        service = _existing(client_config, "service") if client_config is not None else None
        if service is not None:
            _default(service, "port", 443)
    for version in _dicts(spec.get("versions")):
        _order(version, _CRD_VERSION_ORDER)
    _order(spec, _CRD_SPEC_ORDER)
    status = _sub(obj, "status")
    if status is None:
        return
    # An empty status serializes these; conditions has no omitempty.
    if "conditions" not in status:
        status["conditions"] = None
    _default(status, "acceptedNames", {"plural": "", "kind": ""})
    if not status.get("storedVersions"):
        for version in _dicts(spec.get("versions")):
            if version.get("storage") is True:
                status["storedVersions"] = [version.get("name")]
                break
    _order(status, _CRD_STATUS_ORDER)


# --------------------------------------------------------------------------
# Services and cluster IPs
# --------------------------------------------------------------------------


class ClusterIPAllocator:
    """Hands out service cluster IPs from a CIDR and node ports from a range.

    Allocation is sequential from the first free address, skipping the
    network and broadcast addresses and the first host address (kept for the
    ``kubernetes`` service, which can claim it with ``allocate("10.0.0.1")``).
    Thread-safe; ``release`` returns an address or port on Service deletion.
    """

    def __init__(
        self, cidr: str = "10.0.0.0/24", node_ports: tuple[int, int] = (30000, 32767)
    ) -> None:
        self.network = ipaddress.ip_network(cidr)
        hosts = [str(h) for h in self.network.hosts()]
        self._hosts = set(hosts)
        # The first host address is only handed out on explicit request.
        self._auto = hosts[1:] if len(hosts) > 1 else hosts
        self._next = 0
        self._used: set[str] = set()
        self._port_range = node_ports
        self._ports: set[int] = set()
        self._next_port = node_ports[0]
        self._lock = threading.Lock()

    @property
    def cidr(self) -> str:
        """The service CIDR, e.g. ``10.0.0.0/24``."""
        return str(self.network)

    def allocate(self, ip: str | None = None) -> str:
        """Reserve ``ip``, or the next free address when ``ip`` is None.

        Raises ``ValueError`` worded like the apiserver's allocation errors
        when the address is malformed, outside the range or already in use.
        """
        with self._lock:
            if ip is None:
                return self._allocate_next()
            try:
                addr = str(ipaddress.ip_address(ip))
            except ValueError:
                raise ValueError(f"failed to allocate IP {ip}: not a valid IP") from None
            if addr not in self._hosts:
                raise ValueError(
                    f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid "
                    f"range. The range of valid IPs is {self.network}"
                )
            if addr in self._used:
                raise ValueError(f"failed to allocate IP {ip}: provided IP is already allocated")
            self._used.add(addr)
            return addr

    def _allocate_next(self) -> str:
        for step in range(len(self._auto)):
            index = (self._next + step) % len(self._auto)
            candidate = self._auto[index]
            if candidate not in self._used:
                self._used.add(candidate)
                self._next = (index + 1) % len(self._auto)
                return candidate
        raise ValueError("failed to allocate a serviceIP: range is full")

    def release(self, ip: str) -> None:
        """Return an address to the pool (unknown addresses are ignored)."""
        with self._lock:
            self._used.discard(ip)

    def in_use(self, ip: str) -> bool:
        """Whether ``ip`` is currently allocated."""
        with self._lock:
            return ip in self._used

    def allocate_node_port(self, port: int | None = None) -> int:
        """Reserve ``port``, or the next free node port; ``ValueError`` when impossible."""
        low, high = self._port_range
        with self._lock:
            if port is not None:
                if not low <= port <= high:
                    raise ValueError(
                        f"provided port is not in the valid range. The range of valid ports is "
                        f"{low}-{high}"
                    )
                if port in self._ports:
                    raise ValueError("provided port is already allocated")
                self._ports.add(port)
                return port
            size = high - low + 1
            for step in range(size):
                candidate = low + (self._next_port - low + step) % size
                if candidate not in self._ports:
                    self._ports.add(candidate)
                    self._next_port = low + (candidate - low + 1) % size
                    return candidate
            raise ValueError("range is full")

    def release_node_port(self, port: int) -> None:
        """Return a node port to the pool."""
        with self._lock:
            self._ports.discard(port)


def _service_name(obj: Obj) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _go_strings(values: list[Any]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _service(obj: Obj, ctx: _Ctx) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _default_str(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        cfg = spec.get("sessionAffinityConfig")
        client_ip = cfg.get("clientIP") if isinstance(cfg, dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    _default_str(spec, "type", "ClusterIP")
    svc_type = spec["type"]
    for port in _dicts(spec.get("ports")):
        _default_str(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if svc_type in ("NodePort", "LoadBalancer"):
        _default_str(spec, "externalTrafficPolicy", "Cluster")
    if svc_type in ("NodePort", "LoadBalancer", "ClusterIP"):
        _default_str(spec, "internalTrafficPolicy", "Cluster")
    if svc_type == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True)
    if svc_type != "ExternalName":
        _service_ips(obj, spec, ctx)
        if ctx.create and svc_type in ("NodePort", "LoadBalancer"):
            _service_node_ports(obj, spec, ctx)
    for port in _dicts(spec.get("ports")):
        _order(port, _SERVICE_PORT_ORDER)
    _order(spec, _SERVICE_SPEC_ORDER)
    status = _sub(obj, "status")
    if status is not None:
        _default(status, "loadBalancer", {})


def _service_ips(obj: Obj, spec: Obj, ctx: _Ctx) -> None:
    cluster_ip = spec.get("clusterIP") or ""
    cluster_ips = spec.get("clusterIPs")
    if not isinstance(cluster_ips, list):
        cluster_ips = []
    if not cluster_ip and cluster_ips:
        cluster_ip = cluster_ips[0]
    if cluster_ip and not cluster_ips:
        cluster_ips = [cluster_ip]
    headless = cluster_ip == "None"
    if ctx.create and ctx.allocator is not None:
        if not cluster_ip:
            try:
                cluster_ip = ctx.allocator.allocate()
            except ValueError as exc:
                raise internal_error(str(exc)) from None
            cluster_ips = [cluster_ip]
        elif not headless:
            try:
                ctx.allocator.allocate(str(cluster_ip))
            except ValueError as exc:
                cause = {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {_go_strings(cluster_ips)}: {exc}",
                    "field": "spec.clusterIPs",
                }
                raise invalid("Service", _service_name(obj), [cause]) from None
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
        spec["clusterIPs"] = cluster_ips
    if not spec.get("ipFamilies"):
        spec["ipFamilies"] = ["IPv4"]
    if not spec.get("ipFamilyPolicy"):
        # Selector-less headless services default to dual-stack endpoints.
        no_selector = not spec.get("selector")
        spec["ipFamilyPolicy"] = "RequireDualStack" if headless and no_selector else "SingleStack"


def _service_node_ports(obj: Obj, spec: Obj, ctx: _Ctx) -> None:
    if ctx.allocator is None:
        return
    if spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is False:
        return
    for i, port in enumerate(_dicts(spec.get("ports"))):
        wanted = port.get("nodePort")
        try:
            port["nodePort"] = ctx.allocator.allocate_node_port(wanted if wanted else None)
        except ValueError as exc:
            cause = {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {wanted}: {exc}",
                "field": f"spec.ports[{i}].nodePort",
            }
            raise invalid("Service", _service_name(obj), [cause]) from None


def patch_allocated_values(old: Obj, new: Obj) -> None:
    """Carry a Service's allocated cluster IPs and node ports into an update.

    Clients that PUT a Service without ``clusterIP`` keep the old one, as the
    apiserver's service REST storage does before validating the update.
    """
    old_spec, new_spec = old.get("spec"), new.get("spec")
    if not isinstance(old_spec, dict) or not isinstance(new_spec, dict):
        return
    if new_spec.get("type", "ClusterIP") != "ExternalName" and old_spec.get("clusterIP"):
        if not new_spec.get("clusterIP"):
            new_spec["clusterIP"] = old_spec["clusterIP"]
        if not new_spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            new_spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if new_spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {
            (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
            for p in _dicts(old_spec.get("ports"))
        }
        for port in _dicts(new_spec.get("ports")):
            key = (port.get("port"), port.get("protocol", "TCP"))
            if not port.get("nodePort") and old_ports.get(key):
                port["nodePort"] = old_ports[key]
    _order(new_spec, _SERVICE_SPEC_ORDER)


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------

_Handler = Callable[[Obj, _Ctx], None]

_HANDLERS: dict[tuple[str, str], _Handler] = {
    ("", "Pod"): _pod,
    ("", "PodTemplate"): _pod_template_kind,
    ("", "ReplicationController"): _replication_controller,
    ("", "Service"): _service,
    ("", "Namespace"): _namespace,
    ("", "Secret"): _secret,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "Endpoints"): _endpoints,
    ("", "Node"): _node,
    ("", "Event"): _core_event,
    ("events.k8s.io", "Event"): _events_event,
    ("coordination.k8s.io", "Lease"): _lease,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replicaset,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("rbac.authorization.k8s.io", "RoleBinding"): _role_binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _role_binding,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}


# --------------------------------------------------------------------------
# The typed round trip: fields Go always writes
# --------------------------------------------------------------------------

#: The time fields of each kind's status conditions. They are Go ``metav1.Time``
#: values, never omitted: a condition written without one reads back with ``null``.
_CONDITION_TIMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("lastUpdateTime", "lastTransitionTime"),
    ("apps", "ReplicaSet"): ("lastTransitionTime",),
    ("apps", "StatefulSet"): ("lastTransitionTime",),
    ("apps", "DaemonSet"): ("lastTransitionTime",),
    ("batch", "Job"): ("lastProbeTime", "lastTransitionTime"),
    ("", "Pod"): ("lastProbeTime", "lastTransitionTime"),
    ("", "PersistentVolumeClaim"): ("lastProbeTime", "lastTransitionTime"),
    ("", "Node"): ("lastHeartbeatTime", "lastTransitionTime"),
    ("", "Namespace"): ("lastTransitionTime",),
    ("", "ReplicationController"): ("lastTransitionTime",),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("lastTransitionTime",),
}
#: Lists Go writes as ``null`` when unset (no omitempty), by kind.
_NULL_LISTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("rbac.authorization.k8s.io", "ClusterRole"): ("rules",),
    ("rbac.authorization.k8s.io", "Role"): ("rules",),
}


def _typed_nulls(group: str, kind: str, obj: Obj) -> None:
    """What decoding into the Go type and encoding again adds: ``null`` fields."""
    times = _CONDITION_TIMES.get((group, kind))
    status = obj.get("status")
    if times and isinstance(status, dict):
        for condition in _dicts(status.get("conditions")):
            for key in times:
                condition.setdefault(key, None)
    for key in _NULL_LISTS.get((group, kind), ()):
        if key not in obj:
            items = list(obj.items())
            # After metadata, where the Go struct has it.
            at = next((i + 1 for i, (k, _) in enumerate(items) if k == "metadata"), len(items))
            items.insert(at, (key, None))
            obj.clear()
            obj.update(items)


def apply_defaults(
    group: str,
    kind: str,
    obj: dict[str, Any],
    *,
    allocator: ClusterIPAllocator | None = None,
    create: bool | None = None,
) -> None:
    """Fill in the fields kube-apiserver defaults for ``group``/``kind``.

    Mutates ``obj``. Kinds without defaults (ConfigMap, ServiceAccount, Lease,
    custom resources, ...) are left alone. Fields the Go types always write
    come back as ``null`` (condition times, a Role's unset ``rules``). For a Job, ``metadata.uid``
    must already be set: the generated selector uses it.

    ``create`` says whether the object is being created; by default it is
    inferred from the absence of ``metadata.resourceVersion`` (objects to be
    created carry none). Create-only steps are listed in the module docstring.

    Services get a cluster IP (and node ports) only when an ``allocator`` is
    given; otherwise the caller assigns them. Allocation failures raise the
    apiserver's ``ApiError`` (422 for a taken or out-of-range address).
    """
    _typed_nulls(group, kind, obj)
    handler = _HANDLERS.get((group, kind))
    if handler is None:
        return
    if create is None:
        meta = obj.get("metadata")
        create = not (isinstance(meta, dict) and meta.get("resourceVersion"))
    handler(obj, _Ctx(allocator, create))
