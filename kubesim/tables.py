"""Server-side printing (``as=Table``): the columns ``kubectl get`` shows.

Built-in kinds get kube-apiserver 1.30's columns (``pkg/printers``), with the
extra ``-o wide`` columns at priority 1. Custom resources get their CRD's
``additionalPrinterColumns`` (JSONPath evaluated as the apiextensions server
does) or just Name and Age. Kinds without a printer get Name and Created At.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesim.jsonvalues import dig
from kubesim.resources import ResourceType

Obj = Mapping[str, Any]
Cell = Callable[[Obj], Any]

_NAME_DOC = "Name must be unique within a namespace."
_AGE_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created."
)


@dataclass(frozen=True)
class Column:
    """One column: header, type, how to compute the cell, and priority (1: ``-o wide``)."""

    name: str
    type: str
    cell: Cell
    priority: int = 0
    description: str = ""
    format: str = ""

    def definition(self) -> dict[str, Any]:
        """The TableColumnDefinition of this column."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description or self.name,
            "priority": self.priority,
        }


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a meta.k8s.io Table."""
    return "as=Table" in accept


# -- time -----------------------------------------------------------------------------


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """A duration as the apiserver prints it (``duration.HumanDuration``)."""
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        rest = secs % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any) -> str:
    """Time since ``timestamp`` as ``kubectl get`` shows it (``<unknown>`` if unset)."""
    if not timestamp:
        return "<unknown>"
    then = _parse_time(timestamp)
    if then is None:
        return "<invalid>"
    return human_duration((datetime.now(UTC) - then).total_seconds())


# -- small helpers -----------------------------------------------------------------------


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _created(o: Obj) -> str:
    return age(dig(o, "metadata", "creationTimestamp"))


def _labels(labels: Any) -> str:
    if not isinstance(labels, Mapping) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _selector(sel: Any) -> str:
    """``metav1.FormatLabelSelector``: requirements sorted by key, or ``<none>``."""
    if not isinstance(sel, Mapping):
        return "<none>"
    reqs: list[tuple[str, str]] = []
    for key, value in (sel.get("matchLabels") or {}).items():
        reqs.append((key, f"{key}={value}"))
    for expr in sel.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(op, key)
        reqs.append((key, text))
    return ",".join(t for _, t in sorted(reqs)) or "<none>"


def _pod_spec(o: Obj, *path: str) -> Mapping[str, Any]:
    spec = dig(o, *path)
    return spec if isinstance(spec, Mapping) else {}


def _containers(*path: str) -> Cell:
    return lambda o: ",".join(
        str(c.get("name", "")) for c in _pod_spec(o, *path).get("containers") or []
    )


def _images(*path: str) -> Cell:
    return lambda o: ",".join(
        str(c.get("image", "")) for c in _pod_spec(o, *path).get("containers") or []
    )


def _status(*path: str) -> Cell:
    return lambda o: _int(dig(o, "status", *path))


def _created_at(o: Obj) -> str:
    return str(dig(o, "metadata", "creationTimestamp") or "")


_TEMPLATE = ("spec", "template", "spec")
_NAME = Column("Name", "string", lambda o: dig(o, "metadata", "name"), 0, _NAME_DOC, "name")
_AGE = Column("Age", "string", _created, 0, _AGE_DOC)
# Deployments and StatefulSets: ready replicas of desired ones.
_READY_REPLICAS = Column(
    "Ready",
    "string",
    lambda o: f"{_int(dig(o, 'status', 'readyReplicas'))}/{_int(dig(o, 'spec', 'replicas'))}",
    0,
    "Number of the pod with ready state",
)


# -- per-kind printers ---------------------------------------------------------------------


def _pod_ready(o: Obj) -> str:
    total = len(dig(o, "spec", "containers") or [])
    ready = sum(1 for c in dig(o, "status", "containerStatuses") or [] if c.get("ready"))
    return f"{ready}/{total}"


def _pod_status(o: Obj) -> str:
    status = dig(o, "status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    running = False
    for c in reversed(status.get("containerStatuses") or []):
        state = c.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated and terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif c.get("ready") and state.get("running"):
            running = True
    if reason == "Completed" and running:
        reason = "Running"
    if dig(o, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def _pod_restarts(o: Obj) -> str:
    count = 0
    last: datetime | None = None
    for c in dig(o, "status", "containerStatuses") or []:
        count += _int(c.get("restartCount"))
        finished = _parse_time(dig(c, "lastState", "terminated", "finishedAt"))
        if finished is not None and (last is None or finished > last):
            last = finished
    if count and last is not None:
        return f"{count} ({human_duration((datetime.now(UTC) - last).total_seconds())} ago)"
    return str(count)


def _pod_gates(o: Obj) -> str:
    gates = dig(o, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    true = {
        c.get("type") for c in dig(o, "status", "conditions") or [] if c.get("status") == "True"
    }
    return f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"


def _or_none(value: Any) -> str:
    return str(value) if value not in (None, "") else "<none>"


def _svc_external(o: Obj) -> str:
    spec = dig(o, "spec") or {}
    kind = spec.get("type", "ClusterIP")
    external = list(spec.get("externalIPs") or [])
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    if kind == "LoadBalancer":
        ingress = dig(o, "status", "loadBalancer", "ingress") or []
        found = [i.get("ip") or i.get("hostname") for i in ingress] + external
        found = [f for f in found if f]
        return ",".join(found) if found else "<pending>"
    return ",".join(external) if external else "<none>"


def _svc_ports(o: Obj) -> str:
    ports = dig(o, "spec", "ports") or []
    out = []
    for p in ports:
        proto = p.get("protocol", "TCP")
        node = p.get("nodePort")
        out.append(f"{p.get('port')}:{node}/{proto}" if node else f"{p.get('port')}/{proto}")
    return ",".join(out) if out else "<none>"


def _endpoints(o: Obj) -> str:
    pairs = []
    for subset in o.get("subsets") or []:
        ports = subset.get("ports") or [{}]
        for addr in subset.get("addresses") or []:
            for port in ports:
                ip = addr.get("ip", "")
                pairs.append(f"{ip}:{port['port']}" if "port" in port else ip)
    if not pairs:
        return "<none>"
    shown = ",".join(pairs[:3])
    return shown + (f" + {len(pairs) - 3} more..." if len(pairs) > 3 else "")


def _job_status(o: Obj) -> str:
    conds = {
        c.get("type") for c in dig(o, "status", "conditions") or [] if c.get("status") == "True"
    }
    if "Complete" in conds:
        return "Complete"
    if "Failed" in conds:
        return "Failed"
    if dig(o, "metadata", "deletionTimestamp"):
        return "Terminating"
    if "Suspended" in conds:
        return "Suspended"
    if "FailureTarget" in conds:
        return "FailureTarget"
    return "Running"


def _job_completions(o: Obj) -> str:
    succeeded = _int(dig(o, "status", "succeeded"))
    completions = dig(o, "spec", "completions")
    if isinstance(completions, int):
        return f"{succeeded}/{completions}"
    parallelism = _int(dig(o, "spec", "parallelism"))
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(o: Obj) -> str:
    start = _parse_time(dig(o, "status", "startTime"))
    if start is None:
        return ""
    end = _parse_time(dig(o, "status", "completionTime")) or datetime.now(UTC)
    return human_duration((end - start).total_seconds())


def _bool_ptr(value: Any) -> str:
    return "<unset>" if value is None else ("True" if value else "False")


def _last_schedule(o: Obj) -> str:
    last = dig(o, "status", "lastScheduleTime")
    return age(last) if last else "<none>"


def _binding_role(o: Obj) -> str:
    ref = o.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _subjects(kind: str) -> Cell:
    def cell(o: Obj) -> str:
        names = []
        for s in o.get("subjects") or []:
            if s.get("kind") == kind:
                name = s.get("name", "")
                names.append(
                    f"{s.get('namespace', '')}:{name}" if kind == "ServiceAccount" else name
                )
        return ", ".join(names)

    return cell


def _node_status(o: Obj) -> str:
    conds = {c.get("type"): c.get("status") for c in dig(o, "status", "conditions") or []}
    out = ["Unknown"]
    if "Ready" in conds:
        out = ["Ready" if conds["Ready"] == "True" else "NotReady"]
    if dig(o, "spec", "unschedulable"):
        out.append("SchedulingDisabled")
    return ",".join(out)


def _node_roles(o: Obj) -> str:
    roles = set()
    for key, value in (dig(o, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/":
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(kind: str) -> Cell:
    def cell(o: Obj) -> str:
        for addr in dig(o, "status", "addresses") or []:
            if addr.get("type") == kind:
                return str(addr.get("address", ""))
        return "<none>"

    return cell


_ACCESS_MODES = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}


def _pvc_status(o: Obj) -> str:
    if dig(o, "metadata", "deletionTimestamp"):
        return "Terminating"
    return str(dig(o, "status", "phase") or "")


def _pvc_modes(o: Obj) -> str:
    modes = dig(o, "status", "accessModes") or []
    return ",".join(_ACCESS_MODES.get(m, m) for m in modes)


def _pvc_class(o: Obj) -> str:
    name = dig(o, "spec", "storageClassName")
    if name is None:
        name = (dig(o, "metadata", "annotations") or {}).get(
            "volume.beta.kubernetes.io/storage-class", ""
        )
    return str(name)


def _event_source(o: Obj) -> str:
    component = dig(o, "source", "component") or o.get("reportingController") or ""
    host = dig(o, "source", "host") or o.get("reportingInstance") or ""
    return f"{component}, {host}" if host else str(component)


def _event_last_seen(o: Obj) -> str:
    for value in (
        o.get("lastTimestamp"),
        o.get("deprecatedLastTimestamp"),
        dig(o, "series", "lastObservedTime"),
        o.get("eventTime"),
        o.get("firstTimestamp"),
        dig(o, "metadata", "creationTimestamp"),
    ):
        if value:
            return age(value)
    return "<unknown>"


def _event_object(o: Obj) -> str:
    ref = o.get("involvedObject") or o.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_count(o: Obj) -> str:
    count = o.get("count") or o.get("deprecatedCount") or dig(o, "series", "count") or 1
    return str(count)


def _pdb_value(field: str) -> Cell:
    def cell(o: Obj) -> str:
        value = dig(o, "spec", field)
        return "N/A" if value is None else str(value)

    return cell


def _count(field: str) -> Cell:
    return lambda o: len(o.get(field) or [])


def _workload_columns(selector_path: tuple[str, ...], *template: str) -> list[Column]:
    return [
        Column(
            "Containers",
            "string",
            _containers(*template),
            1,
            "Names of each container in the template.",
        ),
        Column(
            "Images",
            "string",
            _images(*template),
            1,
            "Images referenced by each container in the template.",
        ),
        Column(
            "Selector", "string", lambda o: _selector(dig(o, *selector_path)), 1, "Label selector."
        ),
    ]


_PRINTERS: dict[tuple[str, str], list[Column]] = {
    ("", "Pod"): [
        _NAME,
        Column(
            "Ready",
            "string",
            _pod_ready,
            0,
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        Column(
            "Status",
            "string",
            _pod_status,
            0,
            "The aggregate status of the containers in this pod.",
        ),
        Column(
            "Restarts",
            "string",
            _pod_restarts,
            0,
            "The number of times the containers in this pod have been restarted.",
        ),
        _AGE,
        Column(
            "IP",
            "string",
            lambda o: _or_none(dig(o, "status", "podIP")),
            1,
            "IP address allocated to the pod.",
        ),
        Column(
            "Node",
            "string",
            lambda o: _or_none(dig(o, "spec", "nodeName")),
            1,
            "Name of the node the pod runs on.",
        ),
        Column(
            "Nominated Node",
            "string",
            lambda o: _or_none(dig(o, "status", "nominatedNodeName")),
            1,
            "Nominated node.",
        ),
        Column("Readiness Gates", "string", _pod_gates, 1, "Pod readiness gates."),
    ],
    ("", "Namespace"): [
        _NAME,
        Column(
            "Status",
            "string",
            lambda o: dig(o, "status", "phase") or "",
            0,
            "The status of the namespace",
        ),
        _AGE,
    ],
    ("", "ConfigMap"): [
        _NAME,
        Column(
            "Data",
            "string",
            lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            0,
            "Data contains the configuration data.",
        ),
        _AGE,
    ],
    ("", "Secret"): [
        _NAME,
        Column(
            "Type",
            "string",
            lambda o: o.get("type", ""),
            0,
            "Used to facilitate programmatic handling of secret data.",
        ),
        Column(
            "Data",
            "string",
            lambda o: len(o.get("data") or {}),
            0,
            "Data contains the secret data.",
        ),
        _AGE,
    ],
    ("", "ServiceAccount"): [
        _NAME,
        Column("Secrets", "string", _count("secrets"), 0, "Secrets of the service account."),
        _AGE,
    ],
    ("", "Service"): [
        _NAME,
        Column(
            "Type",
            "string",
            lambda o: dig(o, "spec", "type") or "ClusterIP",
            0,
            "How the service is exposed.",
        ),
        Column(
            "Cluster-IP",
            "string",
            lambda o: _or_none(dig(o, "spec", "clusterIP")),
            0,
            "The IP address of the service.",
        ),
        Column("External-IP", "string", _svc_external, 0, "External IPs of the service."),
        Column("Port(s)", "string", _svc_ports, 0, "The ports exposed by this service."),
        _AGE,
        Column(
            "Selector",
            "string",
            lambda o: _labels(dig(o, "spec", "selector")),
            1,
            "Route service traffic to pods with these labels.",
        ),
    ],
    ("", "Endpoints"): [
        _NAME,
        Column("Endpoints", "string", _endpoints, 0, "The set of all endpoints."),
        _AGE,
    ],
    ("", "Event"): [
        Column(
            "Last Seen",
            "string",
            _event_last_seen,
            0,
            "The time at which the most recent occurrence of this event was recorded.",
        ),
        Column("Type", "string", lambda o: o.get("type", ""), 0, "Type of this event."),
        Column("Reason", "string", lambda o: o.get("reason", ""), 0, "Why the event happened."),
        Column("Object", "string", _event_object, 0, "The object that this event is about."),
        Column(
            "Subobject",
            "string",
            lambda o: (o.get("involvedObject") or o.get("regarding") or {}).get("fieldPath", ""),
            1,
            "Part of the object.",
        ),
        Column("Source", "string", _event_source, 1, "The component reporting this event."),
        Column(
            "Message",
            "string",
            lambda o: str(o.get("message") or o.get("note") or "").strip(),
            0,
            "A description of the event.",
        ),
        Column(
            "First Seen",
            "string",
            lambda o: age(
                o.get("firstTimestamp")
                or o.get("eventTime")
                or dig(o, "metadata", "creationTimestamp")
            ),
            1,
            "First occurrence.",
        ),
        Column("Count", "string", _event_count, 1, "The number of times this event has occurred."),
        Column("Name", "string", lambda o: dig(o, "metadata", "name"), 1, _NAME_DOC, "name"),
    ],
    ("", "PersistentVolumeClaim"): [
        _NAME,
        Column("Status", "string", _pvc_status, 0, "The phase of the claim."),
        Column(
            "Volume",
            "string",
            lambda o: dig(o, "spec", "volumeName") or "",
            0,
            "The bound volume.",
        ),
        Column(
            "Capacity",
            "string",
            lambda o: dig(o, "status", "capacity", "storage") or "",
            0,
            "The capacity of the bound volume.",
        ),
        Column("Access Modes", "string", _pvc_modes, 0, "The access modes of the bound volume."),
        Column("StorageClass", "string", _pvc_class, 0, "The storage class of the claim."),
        Column(
            "VolumeAttributesClass",
            "string",
            lambda o: dig(o, "spec", "volumeAttributesClassName") or "<unset>",
            0,
            "The volume attributes class.",
        ),
        _AGE,
        Column(
            "VolumeMode",
            "string",
            lambda o: dig(o, "spec", "volumeMode") or "<unset>",
            1,
            "The volume mode.",
        ),
    ],
    ("", "Node"): [
        _NAME,
        Column("Status", "string", _node_status, 0, "The status of the node"),
        Column("Roles", "string", _node_roles, 0, "The roles of the node"),
        _AGE,
        Column(
            "Version",
            "string",
            lambda o: dig(o, "status", "nodeInfo", "kubeletVersion") or "",
            0,
            "Kubelet version.",
        ),
        Column("Internal-IP", "string", _node_address("InternalIP"), 1, "Internal IP."),
        Column("External-IP", "string", _node_address("ExternalIP"), 1, "External IP."),
        Column(
            "OS-Image",
            "string",
            lambda o: dig(o, "status", "nodeInfo", "osImage") or "<unknown>",
            1,
            "OS image.",
        ),
        Column(
            "Kernel-Version",
            "string",
            lambda o: dig(o, "status", "nodeInfo", "kernelVersion") or "<unknown>",
            1,
            "Kernel version.",
        ),
        Column(
            "Container-Runtime",
            "string",
            lambda o: dig(o, "status", "nodeInfo", "containerRuntimeVersion") or "<unknown>",
            1,
            "Container runtime.",
        ),
    ],
    ("apps", "Deployment"): [
        _NAME,
        _READY_REPLICAS,
        Column(
            "Up-to-date",
            "string",
            _status("updatedReplicas"),
            0,
            "Pods targeted by this deployment that have the desired template spec.",
        ),
        Column(
            "Available",
            "string",
            _status("availableReplicas"),
            0,
            "Available pods (ready for at least minReadySeconds) of this deployment.",
        ),
        _AGE,
        *_workload_columns(("spec", "selector"), *_TEMPLATE),
    ],
    ("apps", "ReplicaSet"): [
        _NAME,
        Column(
            "Desired",
            "integer",
            lambda o: _int(dig(o, "spec", "replicas")),
            0,
            "Desired number of pods.",
        ),
        Column(
            "Current",
            "integer",
            _status("replicas"),
            0,
            "Most recently observed number of replicas.",
        ),
        Column("Ready", "integer", _status("readyReplicas"), 0, "Number of ready replicas."),
        _AGE,
        *_workload_columns(("spec", "selector"), *_TEMPLATE),
    ],
    ("apps", "StatefulSet"): [
        _NAME,
        _READY_REPLICAS,
        _AGE,
        *_workload_columns(("spec", "selector"), *_TEMPLATE)[:2],
    ],
    ("apps", "DaemonSet"): [
        _NAME,
        Column(
            "Desired",
            "integer",
            _status("desiredNumberScheduled"),
            0,
            "The total number of nodes that should be running the daemon pod.",
        ),
        Column(
            "Current",
            "integer",
            _status("currentNumberScheduled"),
            0,
            "The number of nodes running at least one daemon pod.",
        ),
        Column(
            "Ready",
            "integer",
            _status("numberReady"),
            0,
            "The number of nodes with a ready daemon pod.",
        ),
        Column(
            "Up-to-date",
            "integer",
            _status("updatedNumberScheduled"),
            0,
            "The number of nodes running the updated daemon pod.",
        ),
        Column(
            "Available",
            "integer",
            _status("numberAvailable"),
            0,
            "The number of nodes with an available daemon pod.",
        ),
        Column(
            "Node Selector",
            "string",
            lambda o: _labels(dig(o, *_TEMPLATE, "nodeSelector")),
            0,
            "Node selector of the pods.",
        ),
        _AGE,
        *_workload_columns(("spec", "selector"), *_TEMPLATE),
    ],
    ("batch", "Job"): [
        _NAME,
        Column("Status", "string", _job_status, 0, "Status of the job."),
        Column(
            "Completions",
            "string",
            _job_completions,
            0,
            "The number of successfully finished pods.",
        ),
        Column("Duration", "string", _job_duration, 0, "Time required to complete the job."),
        _AGE,
        *_workload_columns(("spec", "selector"), *_TEMPLATE),
    ],
    ("batch", "CronJob"): [
        _NAME,
        Column(
            "Schedule",
            "string",
            lambda o: dig(o, "spec", "schedule") or "",
            0,
            "The schedule in Cron format.",
        ),
        Column(
            "Timezone",
            "string",
            lambda o: _or_none(dig(o, "spec", "timeZone")),
            0,
            "The time zone of the schedule.",
        ),
        Column(
            "Suspend",
            "boolean",
            lambda o: _bool_ptr(dig(o, "spec", "suspend")),
            0,
            "Whether subsequent executions are suspended.",
        ),
        Column(
            "Active",
            "integer",
            lambda o: len(dig(o, "status", "active") or []),
            0,
            "Currently running jobs.",
        ),
        Column("Last Schedule", "string", _last_schedule, 0, "When the job was last scheduled."),
        _AGE,
        *_workload_columns(
            ("spec", "jobTemplate", "spec", "selector"),
            "spec",
            "jobTemplate",
            "spec",
            "template",
            "spec",
        ),
    ],
    ("policy", "PodDisruptionBudget"): [
        _NAME,
        Column(
            "Min Available",
            "string",
            _pdb_value("minAvailable"),
            0,
            "The minimum number of pods that must be available.",
        ),
        Column(
            "Max Unavailable",
            "string",
            _pdb_value("maxUnavailable"),
            0,
            "The maximum number of pods that may be unavailable.",
        ),
        Column(
            "Allowed Disruptions",
            "integer",
            _status("disruptionsAllowed"),
            0,
            "Calculated number of pods that may be disrupted at this time.",
        ),
        _AGE,
    ],
    ("coordination.k8s.io", "Lease"): [
        _NAME,
        Column(
            "Holder",
            "string",
            lambda o: dig(o, "spec", "holderIdentity") or "",
            0,
            "The holder of the lease.",
        ),
        _AGE,
    ],
}
_RBAC = "rbac.authorization.k8s.io"
for _kind in ("Role", "ClusterRole"):
    _PRINTERS[(_RBAC, _kind)] = [
        _NAME,
        Column("Created At", "string", _created_at, 0, _AGE_DOC),
    ]
for _kind in ("RoleBinding", "ClusterRoleBinding"):
    _PRINTERS[(_RBAC, _kind)] = [
        _NAME,
        Column("Role", "string", _binding_role, 0, "Role of the binding."),
        _AGE,
        Column("Users", "string", _subjects("User"), 1, "Users in the binding."),
        Column("Groups", "string", _subjects("Group"), 1, "Groups in the binding."),
        Column(
            "ServiceAccounts",
            "string",
            _subjects("ServiceAccount"),
            1,
            "ServiceAccounts in the binding.",
        ),
    ]
for _kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
    _PRINTERS[("admissionregistration.k8s.io", _kind)] = [
        _NAME,
        Column("Webhooks", "integer", _count("webhooks"), 0, "Webhooks count."),
        _AGE,
    ]
# events.k8s.io Events print like core Events (same internal type).
_PRINTERS[("events.k8s.io", "Event")] = _PRINTERS[("", "Event")]

# What the apiserver's default table convertor shows for kinds without a printer.
_DEFAULT = [_NAME, Column("Created At", "date", _created_at, 0, _AGE_DOC)]


# -- custom resources: JSONPath columns ---------------------------------------------------------

_TOKEN = re.compile(
    r"""\.\.(?P<deep>[^.\[]+)|\.(?P<field>[^.\[]+)|\[(?P<bracket>(?:'[^']*'|"[^"]*"|[^\]])*)\]"""
)
_FILTER = re.compile(r"""\?\(\s*@((?:\.[\w-]+)+)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*\)""")


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op]
    return False


def _step_bracket(values: list[Any], inner: str) -> list[Any]:
    inner = inner.strip()
    out: list[Any] = []
    if inner == "*":
        for v in values:
            if isinstance(v, list):
                out.extend(v)
            elif isinstance(v, Mapping):
                out.extend(v.values())
        return out
    m = _FILTER.fullmatch(inner)
    if m is not None:
        path = [p for p in m.group(1).split(".") if p]
        for v in values:
            for item in v if isinstance(v, list) else []:
                got: Any = item
                for p in path:
                    got = got.get(p) if isinstance(got, Mapping) else None
                if m.group(2) is None:
                    if got is not None:
                        out.append(item)
                elif _compare(got, m.group(2), _literal(m.group(3))):
                    out.append(item)
        return out
    if inner[:1] in "'\"":
        key = _literal(inner)
        return [v[key] for v in values if isinstance(v, Mapping) and key in v]
    try:
        index = int(inner)
    except ValueError:
        return []
    return [v[index] for v in values if isinstance(v, list) and -len(v) <= index < len(v)]


def _deep(value: Any, name: str) -> list[Any]:
    out: list[Any] = []
    if isinstance(value, Mapping):
        if name in value:
            out.append(value[name])
        for v in value.values():
            out.extend(_deep(v, name))
    elif isinstance(value, list):
        for v in value:
            out.extend(_deep(v, name))
    return out


def jsonpath(obj: Any, expr: str) -> list[Any]:
    """Results of a Kubernetes JSONPath (``.status.conditions[?(@.type=="Ready")].status``)."""
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    text = text.removeprefix("$")
    values = [obj]
    pos = 0
    while pos < len(text) and values:
        m = _TOKEN.match(text, pos)
        if m is None:
            return []
        pos = m.end()
        if m.group("deep") is not None:
            values = [d for v in values for d in _deep(v, m.group("deep"))]
        elif m.group("field") is not None:
            name = m.group("field")
            values = [v[name] for v in values if isinstance(v, Mapping) and name in v]
        else:
            values = _step_bracket(values, m.group("bracket"))
    return values


def _print_value(value: Any) -> str:
    """How JSONPath printing renders one value (maps and lists as compact JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (Mapping, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _cr_cell(ctype: str, path: str) -> Cell:
    """A CRD printer column's cell, typed as the apiextensions table convertor types it."""

    def cell(o: Obj) -> Any:
        found = jsonpath(o, path)
        if not found or found[0] is None:
            return None
        value = found[0]
        if ctype == "string":
            return _print_value(value)
        if ctype == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
        if ctype == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if ctype == "boolean" and isinstance(value, bool):
            return value
        if ctype == "date" and isinstance(value, str):
            return age(value) if _parse_time(value) else "<invalid>"
        return None

    return cell


def columns(rt: ResourceType) -> list[Column]:
    """The columns of ``rt``'s tables, Name first."""
    if not rt.builtin:
        specs = rt.printer_columns or (
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        )
        out = [_NAME]
        for col in specs:
            ctype = str(col.get("type", "string"))
            out.append(
                Column(
                    str(col.get("name", "")),
                    ctype,
                    _cr_cell(ctype, str(col.get("jsonPath", ""))),
                    int(col.get("priority", 0) or 0),
                    str(col.get("description", "")),
                    str(col.get("format", "")),
                )
            )
        return out
    return _PRINTERS.get((rt.group, rt.kind), _DEFAULT)


def _row_object(rt: ResourceType, obj: Obj, include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        # Whole objects are converted to the request's version, kind and all (list
        # items, which rows are made of, carry neither).
        return {"kind": rt.kind, "apiVersion": rt.api_version, **obj}
    meta = obj.get("metadata") or {}
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(meta),
    }


def to_table(
    rt: ResourceType,
    objs: list[Obj],
    list_meta: Mapping[str, Any],
    *,
    include: str = "Metadata",
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of ``objs``; ``include`` is the ``includeObject`` option."""
    cols = columns(rt)
    rows = []
    for obj in objs:
        row: dict[str, Any] = {"cells": [c.cell(obj) for c in cols]}
        row_object = _row_object(rt, obj, include)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
        "columnDefinitions": [c.definition() for c in cols],
        "rows": rows,
    }
