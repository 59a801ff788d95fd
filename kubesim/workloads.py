"""A stand-in for kube-controller-manager and the kubelet: workload status.

kubesim serves no controllers, so a Deployment would never become available
and a Job never complete. :class:`WorkloadSimulator` watches the store (the
:attr:`kubesim.api.Api.on_change` hook) and, ``delay`` seconds after an
object is created or its spec changes, writes the status the real
controllers would have written once the rollout finished, through the
``/status`` subresource with the real field managers
(``kube-controller-manager``, and ``kubelet`` for Pods):

- Deployments, ReplicaSets, StatefulSets: every replica ready and up to date;
  Deployments get the ``Available`` and ``Progressing`` conditions.
- DaemonSets: one pretend node, one ready pod.
- Jobs: first started (``startTime``, ``active``), one more ``delay`` later
  complete (``SuccessCriteriaMet`` + ``Complete``), or failed
  (``FailureTarget`` + ``Failed``) when annotated ``kubesim.io/job-result:
  Failed``; suspended Jobs only get the ``Suspended`` condition. A finished
  Job is never touched again.
- Pods: ``Running`` and ready, or (``restartPolicy`` Never/OnFailure and
  annotation ``kubesim.io/pod-phase``) ``Succeeded``/``Failed``; the
  annotation value ``Pending`` keeps the Pod pending.

The annotation ``kubesim.io/delay-seconds`` overrides the delay of one
object. No ReplicaSets or Pods are created: only status is written.

What the status becomes (:func:`desired_status`, :func:`status_patch`,
:func:`delay_of`, :func:`restart_trigger`) is computed from plain objects, so
a simulator outside kubesim can write the same status through an API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import heapq
import ipaddress
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesim.api import Api, Caller, now
from kubesim.errors import ApiError
from kubesim.jsonvalues import prune_nulls
from kubesim.store import Event

DELAY_ANNOTATION = "kubesim.io/delay-seconds"
JOB_RESULT_ANNOTATION = "kubesim.io/job-result"
POD_PHASE_ANNOTATION = "kubesim.io/pod-phase"

CONTROLLER_MANAGER = "kube-controller-manager"
KUBELET = "kubelet"
MERGE_PATCH = "application/merge-patch+json"
# The one pretend node (a kind-style node address) and its pod network.
HOST_IP = "172.18.0.2"
POD_NETWORK = ipaddress.IPv4Network("10.244.0.0/24")

_log = logging.getLogger("kubesim.workloads")

Obj = dict[str, Any]
Status = dict[str, Any]
# (group, plural), namespace, name
Ref = tuple[tuple[str, str], str, str]


@dataclass(frozen=True)
class _Kind:
    """How one resource's status is simulated."""

    version: str
    manager: str
    desired: Callable[[PodAddresses, Obj, Status], Status | None]


# -- helpers -------------------------------------------------------------------------
def _int(value: Any, default: int) -> int:
    """An integer spec field, ``default`` when unset or malformed."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _template_hash(template: Any) -> str:
    """A pod-template-hash look-alike: FNV-1a 32 of the template, "safe-encoded".

    The real hash is over the Go struct dump and cannot be reproduced; what
    matters is that it is stable for a template and changes with it.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    # As rand.SafeEncodeString does: map each decimal digit into the alphabet.
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(value))


def _condition(
    existing: list[Any],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    *,
    stamp: str,
    times: tuple[str, ...],
) -> dict[str, Any]:
    """A condition, keeping the timestamps of an unchanged existing one.

    ``times`` names the timestamp fields of this kind of condition; a
    transition time moves only when the status flips, the other times also
    when the reason or message change (as the controllers do).
    """
    old = next((c for c in existing if isinstance(c, dict) and c.get("type") == ctype), None)
    cond: dict[str, Any] = {"type": ctype, "status": status}
    same_status = old is not None and old.get("status") == status
    same_all = (
        same_status
        and old is not None
        and (old.get("reason") == reason and old.get("message") == message)
    )
    for field in times:
        keep = same_status if field == "lastTransitionTime" else same_all
        cond[field] = old.get(field, stamp) if keep and old is not None else stamp
    cond["reason"] = reason
    cond["message"] = message
    return cond


def _conditions(status: Status) -> list[Any]:
    conds = status.get("conditions")
    return conds if isinstance(conds, list) else []


def _true(status: Status, ctype: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == ctype and c.get("status") == "True"
        for c in _conditions(status)
    )


def _with_counts(status: Status, counts: dict[str, int], *, keep_zero: tuple[str, ...]) -> None:
    """Set counters, dropping zero ones unless their JSON field has no omitempty."""
    for field, value in counts.items():
        if value or field in keep_zero:
            status[field] = value
        else:
            status.pop(field, None)


def _dict(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one (tolerates malformed input)."""
    return value if isinstance(value, dict) else {}


def _spec(obj: Obj) -> dict[str, Any]:
    return _dict(obj.get("spec"))


def _annotations(obj: Obj) -> dict[str, Any]:
    return _dict(obj["metadata"].get("annotations"))


# -- desired status per kind ------------------------------------------------------------
def _deployment(addresses: PodAddresses, obj: Obj, current: Status) -> Status:
    spec = _spec(obj)
    replicas = max(_int(spec.get("replicas"), 1), 0)
    stamp = now()
    status = dict(current)
    status["observedGeneration"] = obj["metadata"].get("generation", 1)
    n = replicas
    _with_counts(
        status,
        {"replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n},
        keep_zero=(),
    )
    status.pop("unavailableReplicas", None)
    times = ("lastUpdateTime", "lastTransitionTime")
    existing = _conditions(current)
    rs_name = f"{obj['metadata']['name']}-{_template_hash(spec.get('template'))}"
    if spec.get("paused"):
        progressing = _condition(
            existing,
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused",
            stamp=stamp,
            times=times,
        )
    else:
        progressing = _condition(
            existing,
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "{rs_name}" has successfully progressed.',
            stamp=stamp,
            times=times,
        )
    status["conditions"] = [
        _condition(
            existing,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            stamp=stamp,
            times=times,
        ),
        progressing,
    ]
    return status


def _replicaset(addresses: PodAddresses, obj: Obj, current: Status) -> Status:
    n = max(_int(_spec(obj).get("replicas"), 1), 0)
    status = dict(current)
    # ReplicaSetStatus has no updatedReplicas; fullyLabeledReplicas is its counterpart.
    _with_counts(
        status,
        {"replicas": n, "fullyLabeledReplicas": n, "readyReplicas": n, "availableReplicas": n},
        keep_zero=("replicas",),
    )
    status["observedGeneration"] = obj["metadata"].get("generation", 1)
    return status


def _statefulset(addresses: PodAddresses, obj: Obj, current: Status) -> Status:
    spec = _spec(obj)
    n = max(_int(spec.get("replicas"), 1), 0)
    status = dict(current)
    status["observedGeneration"] = obj["metadata"].get("generation", 1)
    _with_counts(
        status,
        {
            "replicas": n,
            "readyReplicas": n,
            "currentReplicas": n,
            "updatedReplicas": n,
            "availableReplicas": n,
        },
        keep_zero=("replicas", "availableReplicas"),
    )
    revision = f"{obj['metadata']['name']}-{_template_hash(spec.get('template'))}"
    status["currentRevision"] = revision
    status["updateRevision"] = revision
    status.setdefault("collisionCount", 0)
    return status


def _daemonset(addresses: PodAddresses, obj: Obj, current: Status) -> Status:
    status = dict(current)
    _with_counts(
        status,
        {
            "currentNumberScheduled": 1,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 1,
            "numberReady": 1,
            "observedGeneration": _int(obj["metadata"].get("generation"), 1),
            "updatedNumberScheduled": 1,
            "numberAvailable": 1,
        },
        keep_zero=("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled"),
    )
    status.pop("numberUnavailable", None)
    return status


_JOB_TIMES = ("lastProbeTime", "lastTransitionTime")


def _job(addresses: PodAddresses, obj: Obj, current: Status) -> Status | None:
    if _true(current, "Complete") or _true(current, "Failed"):
        return None  # finished Jobs are final: never completed (or failed) twice
    spec = _spec(obj)
    stamp = now()
    status = dict(current)
    conds = [c for c in _conditions(current) if isinstance(c, dict)]
    if spec.get("suspend") is True:
        suspended = _condition(
            conds,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            stamp=stamp,
            times=_JOB_TIMES,
        )
        status["conditions"] = _replace_condition(conds, suspended)
        status.pop("active", None)
        status.setdefault("ready", 0)
        return status
    resumed = any(c.get("type") == "Suspended" and c.get("status") == "True" for c in conds)
    if resumed:
        # Resumed: the controller restarts the clock (and the pods).
        cond = _condition(
            conds,
            "Suspended",
            "False",
            "JobResumed",
            "Job resumed",
            stamp=stamp,
            times=_JOB_TIMES,
        )
        conds = _replace_condition(conds, cond)
        status["conditions"] = conds
        status["startTime"] = stamp
    completions = max(_int(spec.get("completions"), 1), 0)
    parallelism = max(_int(spec.get("parallelism"), 1), 0)
    status.setdefault("ready", 0)
    status.setdefault("uncountedTerminatedPods", {})
    if resumed or "startTime" not in current or parallelism == 0:
        # First step: the pods are running.
        status.setdefault("startTime", stamp)
        _with_counts(status, {"active": min(parallelism, completions)}, keep_zero=())
        return status
    status.pop("active", None)
    if _annotations(obj).get(JOB_RESULT_ANNOTATION) == "Failed":
        ctypes, reason = ("FailureTarget", "Failed"), "BackoffLimitExceeded"
        message = "Job has reached the specified backoff limit"
        status["failed"] = max(_int(spec.get("backoffLimit"), 6), 0) + 1
    else:
        ctypes, reason = ("SuccessCriteriaMet", "Complete"), "CompletionsReached"
        message = "Reached expected number of succeeded pods"
        _with_counts(status, {"succeeded": completions}, keep_zero=())
        if spec.get("completionMode") == "Indexed" and completions:
            status["completedIndexes"] = "0" if completions == 1 else f"0-{completions - 1}"
        status["completionTime"] = stamp
    for ctype in ctypes:
        cond = _condition(conds, ctype, "True", reason, message, stamp=stamp, times=_JOB_TIMES)
        conds = _replace_condition(conds, cond)
    status["conditions"] = conds
    return status


def _replace_condition(conds: list[Any], cond: dict[str, Any]) -> list[Any]:
    """``conds`` with ``cond`` replacing the one of its type, or appended."""
    out = [c for c in conds if not (isinstance(c, dict) and c.get("type") == cond["type"])]
    at = next(
        (i for i, c in enumerate(conds) if isinstance(c, dict) and c.get("type") == cond["type"]),
        len(out),
    )
    out.insert(at, cond)
    return out


_TERMINAL = ("Succeeded", "Failed")


def _pod(addresses: PodAddresses, obj: Obj, current: Status) -> Status | None:
    if current.get("phase") in _TERMINAL:
        return None  # a finished Pod never runs again
    spec = _spec(obj)
    meta = obj["metadata"]
    wanted = _annotations(obj).get(POD_PHASE_ANNOTATION)
    if wanted in _TERMINAL and spec.get("restartPolicy") not in ("Never", "OnFailure"):
        wanted = None  # with restartPolicy Always a container never stays terminated
    phase = wanted if wanted in (*_TERMINAL, "Pending") else "Running"
    stamp = now()
    status = dict(current)
    status["phase"] = phase
    status["hostIP"] = HOST_IP
    status["hostIPs"] = [{"ip": HOST_IP}]
    started = current.get("startTime") or stamp
    status["startTime"] = started
    if phase != "Pending":
        ip = addresses.address(meta.get("uid", ""), current.get("podIP"))
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    existing = _conditions(current)
    times = ("lastTransitionTime",)
    ready = phase == "Running"
    not_ready_reason = {
        "Pending": "ContainersNotReady",
        "Succeeded": "PodCompleted",
        "Failed": "PodFailed",
    }.get(phase, "")
    names = [c.get("name", "") for c in spec.get("containers") or [] if isinstance(c, dict)]
    not_ready_message = f"containers with unready status: [{' '.join(names)}]"

    def cond(ctype: str, ok: bool) -> dict[str, Any]:
        if ok:
            return _condition(existing, ctype, "True", "", "", stamp=stamp, times=times)
        message = not_ready_message if phase == "Pending" else ""
        return _condition(
            existing, ctype, "False", not_ready_reason, message, stamp=stamp, times=times
        )

    status["conditions"] = [
        _pruned_condition(cond("Initialized", True)),
        _pruned_condition(cond("Ready", ready)),
        _pruned_condition(cond("ContainersReady", ready)),
        _pruned_condition(cond("PodScheduled", True)),
    ]
    init = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    if init:
        status["initContainerStatuses"] = [
            _container_status(
                meta,
                container=c,
                phase="Pending" if phase == "Pending" else "Succeeded",
                current=current,
                field="initContainerStatuses",
                stamp=stamp,
            )
            for c in init
        ]
    status["containerStatuses"] = [
        _container_status(
            meta,
            container=c,
            phase=phase,
            current=current,
            field="containerStatuses",
            stamp=stamp,
        )
        for c in spec.get("containers") or []
        if isinstance(c, dict)
    ]
    return status


def _pruned_condition(cond: dict[str, Any]) -> dict[str, Any]:
    """Pod conditions carry no reason or message while True (omitempty)."""
    return {k: v for k, v in cond.items() if v != ""}


def _container_status(
    meta: dict[str, Any],
    *,
    container: dict[str, Any],
    phase: str,
    current: Status,
    field: str,
    stamp: str,
) -> dict[str, Any]:
    name = container.get("name", "")
    image = container.get("image", "")
    old = next(
        (s for s in current.get(field) or [] if isinstance(s, dict) and s.get("name") == name),
        {},
    )
    old_state = _dict(old.get("state"))
    started = (
        _dict(old_state.get("running")).get("startedAt")
        or _dict(old_state.get("terminated")).get("startedAt")
        or stamp
    )
    digest = hashlib.sha256(image.encode()).hexdigest()
    container_id = hashlib.sha256(f"{meta.get('uid', '')}/{name}".encode()).hexdigest()
    status: dict[str, Any] = {
        "containerID": f"containerd://{container_id}",
        "image": image,
        "imageID": f"{image.split('@')[0].rsplit(':', 1)[0]}@sha256:{digest}",
        "lastState": {},
        "name": name,
        # A completed init container counts as ready.
        "ready": phase == "Running" or (phase == "Succeeded" and field == "initContainerStatuses"),
        "restartCount": 0,
        "started": phase == "Running",
    }
    if phase == "Pending":
        del status["containerID"]
        status["imageID"] = ""
        status["state"] = {"waiting": {"reason": "ContainerCreating"}}
    elif phase == "Running":
        status["state"] = {"running": {"startedAt": started}}
    else:
        failed = phase == "Failed"
        finished = _dict(old_state.get("terminated")).get("finishedAt") or stamp
        status["state"] = {
            "terminated": {
                "containerID": status["containerID"],
                "exitCode": 1 if failed else 0,
                "finishedAt": finished,
                "reason": "Error" if failed else "Completed",
                "startedAt": started,
            }
        }
    return status


_KINDS: dict[tuple[str, str], _Kind] = {
    ("apps", "deployments"): _Kind("v1", CONTROLLER_MANAGER, _deployment),
    ("apps", "replicasets"): _Kind("v1", CONTROLLER_MANAGER, _replicaset),
    ("apps", "statefulsets"): _Kind("v1", CONTROLLER_MANAGER, _statefulset),
    ("apps", "daemonsets"): _Kind("v1", CONTROLLER_MANAGER, _daemonset),
    ("batch", "jobs"): _Kind("v1", CONTROLLER_MANAGER, _job),
    ("", "pods"): _Kind("v1", KUBELET, _pod),
}

#: The simulated resources, ``(group, plural)``, with their version and the field
#: manager that writes their status (``kube-controller-manager`` or ``kubelet``).
SIMULATED: dict[tuple[str, str], tuple[str, str]] = {
    key: (kind.version, kind.manager) for key, kind in _KINDS.items()
}


class PodAddresses:
    """Pod IPs of the pretend node: stable per Pod UID, distinct while the Pods live."""

    def __init__(self) -> None:
        self._ips: dict[str, str] = {}
        self._next = 2

    def note(self, obj: Obj) -> None:
        """Remember the address an existing Pod already has."""
        ip = _dict(obj.get("status")).get("podIP")
        uid = _dict(obj.get("metadata")).get("uid")
        if ip and uid:
            self._ips[uid] = ip

    def forget(self, uid: str) -> None:
        """Free a deleted Pod's address."""
        self._ips.pop(uid, None)

    def address(self, uid: str, current: Any) -> str:
        """The Pod's address: the one it has, else the next free one of 10.244.0.0/24."""
        if isinstance(current, str) and current:
            self._ips.setdefault(uid, current)
            return current
        ip = self._ips.get(uid)
        if ip is None:
            used = set(self._ips.values())
            size = POD_NETWORK.num_addresses - 3  # no network, gateway (.1), broadcast
            for _ in range(size):
                candidate = str(POD_NETWORK[self._next])
                self._next = self._next + 1 if self._next < size + 1 else 2
                if candidate not in used:
                    ip = candidate
                    break
            else:
                ip = str(POD_NETWORK[2])  # network full: reuse rather than fail
            self._ips[uid] = ip
        return ip


def desired_status(
    key: tuple[str, str], obj: Obj, current: Status, addresses: PodAddresses
) -> Status | None:
    """The status the controllers would write for ``obj`` of resource ``key``.

    ``current`` is the object's status now (a copy: it may be changed); None
    means "leave it" (a finished Job or Pod, or a resource that is not simulated).
    """
    kind = _KINDS.get(key)
    return None if kind is None else kind.desired(addresses, obj, current)


def restart_trigger(obj: Obj) -> tuple[Any, ...]:
    """What restarts an object's delay when it changes: its spec and our annotations."""
    meta = obj["metadata"]
    ann = _annotations(obj)
    return (
        meta.get("uid"),
        meta.get("generation"),
        ann.get(DELAY_ANNOTATION),
        ann.get(JOB_RESULT_ANNOTATION),
        ann.get(POD_PHASE_ANNOTATION),
    )


def delay_of(obj: Obj, default: float) -> float:
    """The delay of ``obj``: its ``kubesim.io/delay-seconds`` annotation, else ``default``."""
    raw = _annotations(obj).get(DELAY_ANNOTATION)
    if raw is not None:
        try:
            value = float(raw)
        except (TypeError, ValueError):
            _log.warning("ignoring %s=%r: not a number", DELAY_ANNOTATION, raw)
        else:
            if value >= 0 and value != float("inf"):
                return value
    return default


def status_patch(current: Status, desired: Status) -> dict[str, Any]:
    """The top-level merge patch turning ``current`` into ``desired`` (empty: no change)."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if prune_nulls(current.get(key)) != prune_nulls(value):
            patch[key] = value
    for key in current:
        if key not in desired:
            patch[key] = None
    return patch


# -- the simulator -------------------------------------------------------------------------
class WorkloadSimulator:
    """Writes the status kube-controller-manager and the kubelet would write.

    ``delay`` is the default time between a spec change (or creation) and the
    status write; the annotation ``kubesim.io/delay-seconds`` overrides it per
    object. Every write is a merge patch of ``/status`` made only when it
    changes something.
    """

    def __init__(self, api: Api, *, delay: float = 0.2) -> None:
        self._api = api
        self._delay = max(delay, 0.0)
        self._heap: list[tuple[float, int, Ref]] = []
        # ref -> sequence number of its live heap entry (older entries are stale)
        self._due: dict[Ref, int] = {}
        self._seq = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.addresses = PodAddresses()

    @property
    def pending(self) -> int:
        """Number of objects with a status write scheduled."""
        return len(self._due)

    def start(self) -> None:
        """Start reacting to changes (and reconcile every existing object)."""
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        for key in _KINDS:
            for obj in self._api.store.items(key):
                self.addresses.note(obj)
                self._schedule(_ref(key, obj), self.delay_for(obj))
        self._api.on_change.append(self._on_change)
        self._task = self._loop.create_task(self._run())

    async def stop(self) -> None:
        """Stop; pending status writes are dropped."""
        with contextlib.suppress(ValueError):
            self._api.on_change.remove(self._on_change)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._heap.clear()
        self._due.clear()

    def delay_for(self, obj: Obj) -> float:
        """The delay of ``obj``: its ``kubesim.io/delay-seconds`` annotation, else the default."""
        return delay_of(obj, self._delay)

    # -- events --------------------------------------------------------------------
    def _on_change(self, ev: Event) -> None:
        # Called synchronously inside the apiserver's write: only bookkeeping here.
        if ev.key not in _KINDS:
            return
        ref = _ref(ev.key, ev.obj)
        if ev.type == "DELETED":
            self._due.pop(ref, None)
            self.addresses.forget(ev.obj["metadata"].get("uid", ""))
            return
        if (
            ref in self._due
            and ev.old is not None
            and restart_trigger(ev.old) == restart_trigger(ev.obj)
        ):
            return  # already scheduled and nothing that restarts the clock changed
        self._schedule(ref, self.delay_for(ev.obj))

    def _schedule(self, ref: Ref, delay: float) -> None:
        if self._loop is None:
            return
        self._seq += 1
        self._due[ref] = self._seq
        heapq.heappush(self._heap, (self._loop.time() + delay, self._seq, ref))
        self._wake.set()

    # -- the writer ------------------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            self._run_due(loop.time())
            # Drop stale entries so the wait below is for a live one.
            while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][1]:
                heapq.heappop(self._heap)
            if not self._heap:
                await self._wake.wait()
                continue
            wait = self._heap[0][0] - loop.time()
            if wait <= 0:
                await asyncio.sleep(0)  # sleep-ok: yield to the loop between batches
                continue
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that
            # arrives as the event fires, and stop() would then wait forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()

    def _run_due(self, at: float) -> None:
        """Reconcile every object due by ``at`` (later ones, even if added now, wait)."""
        while self._heap and self._heap[0][0] <= at:
            _, seq, ref = heapq.heappop(self._heap)
            if self._due.get(ref) != seq:
                continue  # rescheduled or deleted since
            del self._due[ref]
            try:
                self._reconcile(ref)
            except Exception:  # keep the simulator alive whatever one object does
                _log.exception("simulating the status of %s %s/%s failed", ref[0][1], *ref[1:])

    def _reconcile(self, ref: Ref) -> None:
        key, ns, name = ref
        kind = _KINDS[key]
        obj = self._api.store.get(key, (ns, name))
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        raw = obj.get("status")
        current: Status = copy.deepcopy(raw) if isinstance(raw, dict) else {}
        desired = kind.desired(self.addresses, obj, current)
        if desired is None:
            return
        patch = status_patch(current, desired)
        if not patch:
            return
        rt = self._api.registry.get(key[0], kind.version, key[1])
        if rt is None:
            return
        try:
            self._api.patch(
                rt,
                ns,
                name,
                MERGE_PATCH,
                {"status": patch},
                Caller(manager=kind.manager),
                subresource="status",
            )
        except ApiError as exc:
            if exc.code not in (404, 409):
                _log.warning("status write of %s %s/%s refused: %s", key[1], ns, name, exc.message)


def _ref(key: tuple[str, str], obj: Obj) -> Ref:
    meta = obj["metadata"]
    return (key, meta.get("namespace", ""), meta["name"])
