"""The frozen dependency object every agent controller is built from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ocmkit.kube import KubeClient, RESTMapper
from ocmkit.runtime import Controller, Informer, Object, Reconcile, WorkQueue
from schemas.work_v1 import UpdateStrategy
from workagent.apply.base import Applier
from workagent.conditions.rules import ConditionRuleEvaluator
from workagent.controllers.metrics import StatusSyncs
from workagent.executor.basic import BasicExecutorValidator
from workagent.polledreads import PolledReads
from workagent.settings import AgentSettings
from workagent.sources.base import WorkClient
from workagent.watchpool import FeedbackWatchPool


@dataclass(frozen=True)
class AgentDeps:
    """Clients, caches and collaborators shared by the agent's controllers.

    ``hub`` is where works are read and patched: the hub's API client, or a
    CloudEvents source's local store (:mod:`workagent.sources`).
    ``works`` caches the hub ManifestWorks of the cluster namespace; ``applied``
    caches the spoke AppliedManifestWorks. ``applier_for`` returns the update
    strategy for a manifest's ``updateStrategy`` (None: the default Update).
    ``watch_pool`` holds the informers of ``feedbackScrapeType: Watch`` resources
    (None: everything is polled, e.g. for controllers that never read feedback);
    ``rule_evaluator`` runs condition rules and owns their CEL worker processes
    (None: the event loop's default evaluator). ``polled_reads`` serves the
    status controller's Poll-mode reads (coalesced LISTs) and is told by the
    apply loop of the objects it got from the server. ``status_syncs`` records
    when each work's status was last synced, for ``/metrics``.
    ``cleanup_blocked`` names the AppliedManifestWorks whose last finalizer pass
    left resources behind (held by a finalizer, or an error): the works the
    ManifestWorkFinalizer reports ``Deleting`` for.

    The managed cluster has one client per part of the agent, each with its
    own QPS/burst bucket as client-go gives each client it builds: ``spoke``
    applies and deletes manifests (and serves discovery, the executor check
    and leader election), ``spoke_work`` reads and writes AppliedManifestWorks,
    ``spoke_status`` reads applied objects for status and feedback. Left None,
    the latter two are ``spoke`` (:attr:`work_client`, :attr:`status_client`).
    """

    settings: AgentSettings
    hub: WorkClient
    spoke: KubeClient
    mapper: RESTMapper
    hub_hash: str
    agent_id: str
    works: Informer
    applied: Informer
    executor: BasicExecutorValidator
    applier_for: Callable[[UpdateStrategy | None], Applier]
    watch_pool: FeedbackWatchPool | None = None
    rule_evaluator: ConditionRuleEvaluator | None = None
    polled_reads: PolledReads = field(default_factory=PolledReads)
    status_syncs: StatusSyncs = field(default_factory=StatusSyncs)
    cleanup_blocked: set[str] = field(default_factory=set)
    spoke_work: KubeClient | None = None
    spoke_status: KubeClient | None = None

    @property
    def work_client(self) -> KubeClient:
        """The managed cluster's client for AppliedManifestWorks."""
        return self.spoke_work or self.spoke

    @property
    def status_client(self) -> KubeClient:
        """The managed cluster's client for status reads of applied objects."""
        return self.spoke_status or self.spoke

    def controller(
        self, name: str, queue: WorkQueue, reconcile: Reconcile, *informers: Informer
    ) -> Controller:
        """A controller with ``--workload-agent-workers`` workers, started once ``informers``
        have synced."""
        return Controller(name, queue, reconcile, self.settings.workers, depends_on=informers)

    def is_own_applied(self, applied: Object) -> bool:
        """Whether an AppliedManifestWork is this agent's (its ``spec.agentID``)."""
        return str((applied.get("spec") or {}).get("agentID") or "") == self.agent_id

    def queue_own_applied(self, queue: WorkQueue) -> None:
        """Queue the name of this agent's AppliedManifestWorks on their add and update events."""

        def on_applied(obj: Object) -> None:
            if self.is_own_applied(obj):
                queue.add(str((obj.get("metadata") or {}).get("name") or ""))

        self.applied.add_handler(on_add=on_applied, on_update=lambda _old, new: on_applied(new))
