"""The demo's steps: apply the documentation's examples and wait for what they promise.

Each step creates or changes objects on the hub through the demo's own
client, then waits for the state the user documentation describes (a
condition, a feedback value, an object gone) with a time limit. A state not
reached in time raises :class:`DemoFailure` naming it; the caller prints it
and exits non-zero.

The hub is observed through two informers (every ManifestWork, every
ManifestWorkReplicaSet) whose handlers feed the terminal view; the waits read
the same caches, so what the demo waits for is what it shows.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from demo import examples
from demo.environment import Environment, ensure_namespace
from demo.view import TerminalView, condition_status, feedback_values
from ocmkit.kube import (
    DEPLOYMENTS,
    JOBS,
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    Conflict,
    KubeClient,
    NotFound,
    Resource,
)
from ocmkit.runtime import Informer
from schemas.wire import (
    CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT,
    MANIFEST_WORK_REPLICA_SET_LABEL,
)

Check = Callable[[], bool | Awaitable[bool]]
#: How long one expected state may take by default.
STEP_TIMEOUT = 30.0
#: How often a wait looks again.
POLL_SECONDS = 0.1


class DemoFailure(Exception):
    """An expected state was not reached in time (the message says which)."""


class HubObserver:
    """Informers of the hub's ManifestWorks and ManifestWorkReplicaSets, shown in the view."""

    def __init__(self, client: KubeClient, view: TerminalView) -> None:
        self.works = Informer(client, MANIFESTWORKS, name="demo-manifestworks")
        self.replica_sets = Informer(
            client, MANIFESTWORK_REPLICASETS, name="demo-manifestworkreplicasets"
        )
        self.works.add_handler(
            on_add=view.work_changed,
            on_update=lambda _old, new: view.work_changed(new),
            on_delete=view.work_deleted,
        )
        self.replica_sets.add_handler(
            on_add=view.replica_set_changed,
            on_update=lambda _old, new: view.replica_set_changed(new),
            on_delete=view.replica_set_deleted,
        )

    async def start(self, timeout: float = STEP_TIMEOUT) -> None:
        """Start both informers and wait for their first lists."""
        for informer in (self.works, self.replica_sets):
            await informer.start()
            if not await informer.wait_synced(timeout):
                raise DemoFailure(f"could not list {informer.name} on the hub")

    async def stop(self) -> None:
        """Stop both informers."""
        for informer in (self.works, self.replica_sets):
            await informer.stop()

    def work(self, cluster: str, name: str) -> Mapping[str, Any] | None:
        """ManifestWork ``name`` of ``cluster`` as last seen, or None."""
        return self.works.store.get(f"{cluster}/{name}")

    def works_of(self, namespace: str, name: str) -> list[Mapping[str, Any]]:
        """The ManifestWorks a ManifestWorkReplicaSet created."""
        owner = f"{namespace}.{name}"
        return [
            w
            for w in self.works.store.list()
            if (w["metadata"].get("labels") or {}).get(MANIFEST_WORK_REPLICA_SET_LABEL) == owner
        ]

    def replica_set(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """ManifestWorkReplicaSet ``namespace/name`` as last seen, or None."""
        return self.replica_sets.store.get(f"{namespace}/{name}")


class Scenario:
    """The steps of the demo over a started :class:`Environment`."""

    def __init__(
        self,
        env: Environment,
        view: TerminalView,
        observer: HubObserver,
        *,
        deadline: float,
    ) -> None:
        """``deadline`` (event-loop time) bounds every wait of the whole demo."""
        self.env = env
        self.view = view
        self.observer = observer
        self.deadline = deadline

    @property
    def hub(self) -> KubeClient:
        """The demo's client of the hub."""
        return self.env.hub_client

    async def expect(self, what: str, check: Check, timeout: float | None = None) -> None:
        """Wait until ``check()`` is true; raise DemoFailure naming ``what`` otherwise.

        ``timeout`` defaults to :data:`STEP_TIMEOUT`; the demo's deadline always applies.
        """
        timeout = STEP_TIMEOUT if timeout is None else timeout
        loop = asyncio.get_running_loop()
        started = loop.time()
        limit = min(started + timeout, self.deadline)
        while True:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                self.view.say(f"    ok: {what} ({loop.time() - started:.1f}s)")
                return
            if loop.time() >= limit:
                if limit >= self.deadline:
                    raise DemoFailure(f"the demo's time budget ran out while waiting for: {what}")
                raise DemoFailure(f"not reached within {timeout:.0f}s: {what}")
            await asyncio.sleep(POLL_SECONDS)

    async def run(self) -> None:
        """Every step, in order."""
        await self.feedback_step()
        await self.completion_step()
        await self.replica_set_step()
        await self.deletion_step()

    # -- 1. status feedback, Watch mode ----------------------------------------------------
    async def feedback_step(self) -> None:
        """hello-work-demo: Applied, Available, then feedback values that follow a scale-up."""
        cluster, name = examples.HELLO_CLUSTER, examples.HELLO_WORK
        self.view.say(
            f"==> 1. ManifestWork {name} -> {cluster}: a Deployment with WellKnownStatus and "
            "JSONPaths feedback, feedbackScrapeType: Watch"
        )
        await self.hub.create(MANIFESTWORKS, examples.hello_work())
        await self.expect(
            f"{cluster}/{name} Applied=True and Available=True",
            lambda: self._conditions_are(cluster, name, Applied="True", Available="True"),
        )
        await self.expect(
            f"{cluster}/{name} reports ReadyReplicas=1 and isAvailable=True",
            lambda: self._feedback_has(cluster, name, ReadyReplicas="1", isAvailable="True"),
        )
        self.view.say(f"    editing {name}: replicas 1 -> 3 (Watch mode reports without polling)")
        await self._update_work(cluster, name, _set_hello_replicas(3))
        await self.expect(
            f"{cluster}/{name} reports ReadyReplicas=3, Replicas=3, AvailableReplicas=3",
            lambda: self._feedback_has(
                cluster, name, ReadyReplicas="3", Replicas="3", AvailableReplicas="3"
            ),
        )

    # -- 2. condition rules, completion and TTL --------------------------------------------
    async def completion_step(self) -> None:
        """pi-job: Complete through a WellKnownConditions rule, then deleted after its TTL."""
        cluster, name = examples.JOB_CLUSTER, examples.JOB_WORK
        ttl = examples.JOB_TTL_SECONDS
        self.view.say(
            f"==> 2. ManifestWork {name} -> {cluster}: a Job with a WellKnownConditions "
            f"Complete rule and ttlSecondsAfterFinished: {ttl}"
        )
        await self.hub.create(MANIFESTWORKS, examples.job_work())
        await self.expect(
            f"{cluster}/{name} Applied=True",
            lambda: self._conditions_are(cluster, name, Applied="True"),
        )
        await self.expect(
            f"{cluster}/{name} Complete=True (the Job finished; the agent stops applying it)",
            lambda: self._conditions_are(cluster, name, Complete="True"),
        )
        self.view.say(f"    the hub controller deletes {name} {ttl}s after it completed")
        await self.expect(
            f"{cluster}/{name} deleted from the hub by the TTL garbage collector",
            lambda: self.observer.work(cluster, name) is None,
            timeout=ttl + STEP_TIMEOUT,
        )
        await self.expect(
            f"Job default/pi-calculation removed from {cluster} by its agent",
            lambda: self._gone(cluster, JOBS, "pi-calculation", "default"),
        )

    # -- 3. ManifestWorkReplicaSet over a Placement ----------------------------------------
    async def replica_set_step(self) -> None:
        """web-rollout: one ManifestWork per decided cluster, rolled out progressively."""
        namespace, name = examples.REPLICA_SET_NAMESPACE, examples.REPLICA_SET
        clusters = list(self.env.clusters)
        self.view.say(
            f"==> 3. ManifestWorkReplicaSet {namespace}/{name}: Placement {examples.PLACEMENT} "
            f"decides {', '.join(clusters)}; rollout Progressive (maxConcurrency 1, "
            "minSuccessTime 2s)"
        )
        await ensure_namespace(self.hub, namespace)
        await self._place(clusters)
        self.view.say(
            "    (no scheduler runs here: the demo wrote the Placement's PlacementDecision)"
        )
        await self.hub.create(MANIFESTWORK_REPLICASETS, examples.replica_set())
        await self.expect(
            f"a ManifestWork of {name} in each of {', '.join(clusters)}",
            lambda: (
                sorted(w["metadata"]["namespace"] for w in self.observer.works_of(namespace, name))
                == clusters
            ),
        )
        await self.expect(
            f"{namespace}/{name} PlacementRolledOut=True and ManifestworkApplied=True, "
            f"{len(clusters)} works available",
            lambda: self._replica_set_done(namespace, name, len(clusters)),
            timeout=2 * STEP_TIMEOUT,
        )
        await self.expect(
            f"every {name} work reports ReadyReplicas={examples.WEB_REPLICAS}",
            lambda: all(
                feedback_values(w).get("ReadyReplicas") == str(examples.WEB_REPLICAS)
                for w in self.observer.works_of(namespace, name)
            ),
        )
        self.view.snapshot("the hub after the rollout:")

    # -- 4. deletion -----------------------------------------------------------------------
    async def deletion_step(self) -> None:
        """Delete what is left; the agents remove the applied resources."""
        self.view.say(
            "==> 4. deleting the ManifestWorkReplicaSet and hello-work-demo "
            "(propagation Foreground: the agents delete what they applied)"
        )
        await self.hub.delete(
            MANIFESTWORK_REPLICASETS, examples.REPLICA_SET, examples.REPLICA_SET_NAMESPACE
        )
        await self.hub.delete(MANIFESTWORKS, examples.HELLO_WORK, examples.HELLO_CLUSTER)
        await self.expect(
            "no ManifestWork left on the hub", lambda: not self.observer.works.store.list()
        )
        await self.expect(
            "Deployment default/hello removed from cluster1",
            lambda: self._gone(examples.HELLO_CLUSTER, DEPLOYMENTS, "hello", "default"),
        )
        for cluster in self.env.clusters:
            await self.expect(
                f"Deployment {examples.WEB_NAMESPACE}/web removed from {cluster}",
                functools.partial(self._gone, cluster, DEPLOYMENTS, "web", examples.WEB_NAMESPACE),
            )

    # -- helpers ---------------------------------------------------------------------------
    def _conditions_are(self, cluster: str, name: str, **wanted: str) -> bool:
        work = self.observer.work(cluster, name)
        return work is not None and all(
            condition_status(work, ctype) == status for ctype, status in wanted.items()
        )

    def _feedback_has(self, cluster: str, name: str, **wanted: str) -> bool:
        work = self.observer.work(cluster, name)
        if work is None:
            return False
        values = feedback_values(work)
        return all(values.get(key) == value for key, value in wanted.items())

    def _replica_set_done(self, namespace: str, name: str, clusters: int) -> bool:
        rs = self.observer.replica_set(namespace, name)
        if rs is None:
            return False
        summary = (rs.get("status") or {}).get("summary") or {}
        return (
            condition_status(rs, CONDITION_PLACEMENT_ROLLED_OUT) == "True"
            and condition_status(rs, CONDITION_MANIFESTWORK_APPLIED) == "True"
            and summary.get("available") == clusters
        )

    async def _gone(self, cluster: str, resource: Resource, name: str, namespace: str) -> bool:
        try:
            await self.env.spoke_clients[cluster].get(resource, name, namespace)
        except NotFound:
            return True
        return False

    async def _update_work(
        self, cluster: str, name: str, change: Callable[[dict[str, Any]], None]
    ) -> None:
        # The agents write the status concurrently: a read-modify-write may conflict.
        for _ in range(20):
            work = await self.hub.get(MANIFESTWORKS, name, cluster)
            change(work)
            try:
                await self.hub.update(MANIFESTWORKS, work)
                return
            except Conflict:
                await asyncio.sleep(POLL_SECONDS)
        raise DemoFailure(f"could not update ManifestWork {cluster}/{name} (conflicts)")

    async def _place(self, clusters: list[str]) -> None:
        """What OCM's scheduler would do: the PlacementDecision and the Placement's status."""
        namespace = examples.REPLICA_SET_NAMESPACE
        await self.hub.create(PLACEMENTS, examples.placement())
        await self.hub.create(PLACEMENT_DECISIONS, examples.placement_decision())
        await self.hub.patch(
            PLACEMENT_DECISIONS,
            examples.placement_decision_name(),
            {"status": examples.decision_status(clusters)},
            namespace,
            subresource="status",
        )
        await self.hub.patch(
            PLACEMENTS,
            examples.PLACEMENT,
            {"status": examples.placement_status(clusters)},
            namespace,
            subresource="status",
        )


def _set_hello_replicas(replicas: int) -> Callable[[dict[str, Any]], None]:
    def change(work: dict[str, Any]) -> None:
        work["spec"]["workload"]["manifests"] = examples.hello_work(replicas)["spec"]["workload"][
            "manifests"
        ]

    return change
