"""Workload status on a real cluster, written by the tests as kubesim's simulator writes it.

The real control plane of the tests runs no workload controllers, scheduler
or kubelet (:data:`tests.support.controlplane.CONTROLLERS`), so a Deployment
never becomes available there and a Job never completes. :class:`ClusterWorkloads`
stands in for them from the outside: it watches Deployments, ReplicaSets,
StatefulSets, DaemonSets, Jobs and Pods through the API and, ``delay``
seconds after an object is created or its spec (or a ``kubesim.io/*``
annotation) changes, merge-patches its ``/status`` with what
:func:`kubesim.workloads.desired_status` computes: the very status kubesim's
``simulate_workloads`` writes, under the same field managers
(``kube-controller-manager``, ``kubelet``). The ``kubesim.io/delay-seconds``,
``kubesim.io/job-result`` and ``kubesim.io/pod-phase`` annotations mean what
they mean on kubesim.

Its requests carry the user agent :data:`USER_AGENT`, so request counts
filtered by the agent's user agents never include them.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from kubesim.workloads import (
    SIMULATED,
    PodAddresses,
    delay_of,
    desired_status,
    restart_trigger,
    status_patch,
)
from ocmkit.kube import Conflict, KubeClient, KubeError, NotFound, Resource
from ocmkit.runtime import Informer

USER_AGENT = "workload-simulator"
#: The kind of each simulated resource (``SIMULATED`` names them by plural).
_KINDS = {
    "deployments": "Deployment",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "daemonsets": "DaemonSet",
    "jobs": "Job",
    "pods": "Pod",
}
#: How long a refused status write waits before it is tried again.
RETRY_SECONDS = 1.0

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
# (group, plural), "namespace/name"
Ref = tuple[tuple[str, str], str]


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


class ClusterWorkloads:
    """Writes the workload status kube-controller-manager and the kubelet would write.

    ``client`` must be allowed to list, watch and patch the status of the
    simulated resources in every namespace (the admin's client).
    """

    def __init__(self, client: KubeClient, *, delay: float = 0.2) -> None:
        self._client = client
        self._delay = max(delay, 0.0)
        self._addresses = PodAddresses()
        self._informers: dict[tuple[str, str], Informer] = {}
        self._resources: dict[tuple[str, str], tuple[Resource, str]] = {}
        # The object's trigger when its status write was scheduled, and the timer.
        self._timers: dict[Ref, tuple[tuple[Any, ...], asyncio.TimerHandle]] = {}
        self._due: asyncio.Queue[Ref] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        for (group, plural), (version, manager) in SIMULATED.items():
            res = Resource(group, version, plural, _KINDS[plural], True)
            self._resources[(group, plural)] = (res, manager)

    @property
    def pending(self) -> int:
        """Objects with a status write scheduled or due."""
        return len(self._timers) + self._due.qsize()

    async def start(self, timeout: float = 30.0) -> None:
        """Watch every simulated resource; returns once the first lists are in."""
        if self._writer is not None:
            return
        for key, (res, _) in self._resources.items():
            informer = Informer(self._client, res, name=f"workload-simulator-{res.plural}")
            self._watch(informer, key)
            self._informers[key] = informer
            await informer.start()
        self._writer = asyncio.create_task(self._write_loop(), name="workload-simulator")
        for informer in self._informers.values():
            if not await informer.wait_synced(timeout):
                raise RuntimeError(f"the workload simulator's {informer.name} did not sync")

    async def stop(self) -> None:
        """Stop watching; scheduled status writes are dropped."""
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
            self._writer = None
        for informer in self._informers.values():
            await informer.stop()
        self._informers.clear()

    # -- events (the informers' handlers) ----------------------------------------------
    def _watch(self, informer: Informer, key: tuple[str, str]) -> None:
        def added(obj: Obj) -> None:
            self._changed(key, None, obj)

        def updated(old: Obj, new: Obj) -> None:
            self._changed(key, old, new)

        def deleted(obj: Obj) -> None:
            self._deleted(key, obj)

        informer.add_handler(on_add=added, on_update=updated, on_delete=deleted)

    def _changed(self, key: tuple[str, str], old: Obj | None, obj: Obj) -> None:
        if old is None:
            self._addresses.note(obj)
        ref = (key, _key(obj))
        scheduled = self._timers.get(ref)
        if scheduled is not None and scheduled[0] == restart_trigger(obj):
            return  # already scheduled and nothing that restarts the clock changed
        self._schedule(ref, restart_trigger(obj), delay_of(obj, self._delay))

    def _deleted(self, key: tuple[str, str], obj: Obj) -> None:
        scheduled = self._timers.pop((key, _key(obj)), None)
        if scheduled is not None:
            scheduled[1].cancel()
        self._addresses.forget(obj["metadata"].get("uid", ""))

    def _schedule(self, ref: Ref, trigger: tuple[Any, ...], delay: float) -> None:
        previous = self._timers.pop(ref, None)
        if previous is not None:
            previous[1].cancel()
        timer = asyncio.get_running_loop().call_later(delay, self._fire, ref)
        self._timers[ref] = (trigger, timer)

    def _fire(self, ref: Ref) -> None:
        self._timers.pop(ref, None)
        self._due.put_nowait(ref)

    # -- the writer --------------------------------------------------------------------
    async def _write_loop(self) -> None:
        while True:
            ref = await self._due.get()
            try:
                await self._reconcile(ref)
            except asyncio.CancelledError:
                raise
            except Exception:  # keep simulating whatever one object does
                _log.exception("simulating the status of %s %s failed", ref[0][1], ref[1])

    async def _reconcile(self, ref: Ref) -> None:
        key, name_key = ref
        obj = self._informers[key].store.get(name_key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        raw = obj.get("status")
        current: Obj = copy.deepcopy(raw) if isinstance(raw, dict) else {}
        desired = desired_status(key, obj, current, self._addresses)
        if desired is None:
            return
        patch = status_patch(current, desired)
        if not patch:
            return
        res, manager = self._resources[key]
        meta = obj["metadata"]
        # The cached resourceVersion as precondition: a 409 means a newer version
        # exists, whose event schedules this object again.
        body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": patch}
        try:
            await self._client.patch(
                res,
                meta["name"],
                body,
                meta.get("namespace"),
                subresource="status",
                field_manager=manager,
            )
        except (Conflict, NotFound):
            return
        except KubeError as err:
            _log.warning("status write of %s %s refused: %s", res.plural, name_key, err)
            self._schedule(ref, restart_trigger(obj), max(RETRY_SECONDS, self._delay))
