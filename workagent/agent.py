"""The work agent's composition root: clients, caches, controllers, lifecycle.

``run(settings)`` is what ``workagent agent`` calls; tests and embedders
run ``build_agent`` with :func:`~ocmkit.runtime.run_built`. Everything the
controllers share is built here once and handed to them as one frozen
:class:`~workagent.controllers.deps.AgentDeps`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    MANIFESTWORKS,
    KubeClient,
    KubeConfigError,
    RESTMapper,
)
from ocmkit.runtime import (
    Controller,
    Informer,
    LeaderElector,
    Manager,
    run_built,
    strip_managed_fields,
)
from ocmkit.runtime.textstore import TextStore
from workagent.apply import Appliers
from workagent.conditions.rules import ConditionRuleEvaluator
from workagent.controllers.add_finalizer import AddFinalizerController
from workagent.controllers.amw_finalizer import AppliedManifestWorkFinalizer
from workagent.controllers.deps import AgentDeps
from workagent.controllers.eviction import UnmanagedAppliedWorkEvictor
from workagent.controllers.manifestwork import ManifestWorkController
from workagent.controllers.metrics import WorkMetrics
from workagent.controllers.mw_finalizer import ManifestWorkFinalizer
from workagent.controllers.status import AvailableStatusController
from workagent.executor import build_executor_validator
from workagent.settings import (
    FEATURE_EXECUTOR_VALIDATING_CACHES,
    SPOKE_USER_AGENT,
    AgentSettings,
)
from workagent.sources import build_work_source
from workagent.watchpool import FeedbackWatchPool

log = structlog.get_logger(__name__)

MANAGER_NAME = "work-agent"
WORKS_RESYNC_SECONDS = 24 * 3600.0
APPLIED_RESYNC_SECONDS = 21 * 3600.0


@dataclass(frozen=True)
class Agent:
    """A built agent: the manager that runs it and the dependencies of its controllers."""

    manager: Manager
    deps: AgentDeps


def cleanup_controllers(deps: AgentDeps) -> list[Controller]:
    """The ManifestWorkFinalizer (section 8.1), the AppliedManifestWorkFinalizer (8.2)
    and the eviction of unmanaged AppliedManifestWorks (15).

    Each call registers another set of event handlers on the informers of
    ``deps``: call it once, before they start (added later, the handlers first
    see every cached object as an add).
    """
    return [
        ManifestWorkFinalizer(deps).controller(),
        AppliedManifestWorkFinalizer(deps).controller(),
        UnmanagedAppliedWorkEvictor(deps).controller(),
    ]


async def own_cluster_client(settings: AgentSettings, spoke: KubeClient) -> KubeClient | None:
    """The client of the agent's own cluster (``--kubeconfig``, in-cluster when empty),
    which holds its Lease and reviews callers of its endpoint, as library-go's
    controller command; None when that is the managed cluster (``spoke``).

    They differ in OCM's Hosted mode: the agent runs on a management cluster
    and reaches the managed cluster with ``--spoke-kubeconfig``. Outside a pod
    with no ``--kubeconfig`` (a local run), where OCM's agent would not start,
    ours uses the managed cluster and says so.
    """
    if not settings.spoke_kubeconfig or settings.spoke_kubeconfig == settings.kubeconfig:
        return None
    try:
        return await KubeClient.connect(
            settings.kubeconfig,
            qps=settings.kube_api_qps,
            burst=settings.kube_api_burst,
            user_agent=SPOKE_USER_AGENT,
            name="own-cluster",
        )
    except KubeConfigError as err:
        if settings.kubeconfig:
            raise KubeConfigError(f"--kubeconfig: {err}") from err
        log.warning(
            "no --kubeconfig and not in a pod: the Lease and the endpoint's reviews "
            "use the managed cluster (--spoke-kubeconfig)",
            error=str(err),
        )
        return None


async def build_agent(settings: AgentSettings, *, handle_signals: bool = True) -> Agent:
    """Create clients, informers and controllers; nothing runs yet.

    Raises KubeConfigError for an unusable kubeconfig and ValueError for
    invalid settings (both become one log line and exit code 2).
    """
    settings.validate()
    # Before any client exists: a certificate that does not load leaves nothing to close.
    serving_tls = settings.serving_tls()
    source = await build_work_source(settings)
    hub = source.client
    try:
        # The apiserver names managedFields after the User-Agent: "work-agent", as OCM.
        spoke = await KubeClient.connect(
            settings.spoke_config_path or "",
            qps=settings.kube_api_qps,
            burst=settings.kube_api_burst,
            user_agent=SPOKE_USER_AGENT,
            name="spoke",
        )
    except KubeConfigError as err:
        await hub.close()
        raise KubeConfigError(f"spoke: {err}") from err
    except BaseException:
        await hub.close()
        raise
    try:
        own = await own_cluster_client(settings, spoke)
    except BaseException:
        await asyncio.gather(hub.close(), spoke.close())
        raise
    the_hash = source.hub_hash
    # The agent never reads the managedFields of works or AppliedManifestWorks
    # (its writes are merge patches of spec, metadata and status): the caches
    # keep the objects without them, about a quarter of their size, as
    # compressed JSON text (a tenth of the decoded objects; a read decodes one).
    works = Informer(
        hub,  # the hub API server, or the CloudEvents source's local store
        MANIFESTWORKS,
        settings.cluster_name,
        resync_seconds=WORKS_RESYNC_SECONDS,
        name="manifestworks",
        transform=strip_managed_fields,
        store=TextStore(),
    )
    # One token bucket per client, as client-go's clients of OCM's agent: the
    # apply client (``spoke``), the work API client, the status reads' client.
    spoke_work = spoke.derive("spoke-work")
    spoke_status = spoke.derive("spoke-status")
    applied = Informer(
        spoke_work,
        APPLIED_MANIFESTWORKS,
        resync_seconds=APPLIED_RESYNC_SECONDS,
        name="appliedmanifestworks",
        transform=strip_managed_fields,
        store=TextStore(),
    )
    executor = build_executor_validator(
        spoke, caching=settings.gate(FEATURE_EXECUTOR_VALIDATING_CACHES)
    )
    elector = LeaderElector(own or spoke, settings.leader_election)
    manager = Manager(
        MANAGER_NAME,
        settings=settings.manager_settings(
            serving_tls, own or spoke, handle_signals=handle_signals
        ),
        leader_elector=elector,
    )
    # Watch-mode informers come and go while the manager runs: the pool starts
    # them and adds their health checks itself.
    watch_pool = FeedbackWatchPool(spoke_status, settings.max_feedback_watch, checks=manager.checks)
    # CEL runs in worker processes, started on the first rule and stopped at shutdown.
    rule_evaluator = ConditionRuleEvaluator()
    deps = AgentDeps(
        settings=settings,
        hub=hub,
        spoke=spoke,
        mapper=RESTMapper(spoke),
        hub_hash=the_hash,
        agent_id=settings.agent_id or the_hash,
        works=works,
        applied=applied,
        executor=executor,
        # One shared set of update strategies, for its apply cache.
        applier_for=Appliers(spoke).for_strategy,
        watch_pool=watch_pool,
        rule_evaluator=rule_evaluator,
        spoke_work=spoke_work,
        spoke_status=spoke_status,
    )
    if source.service is not None:
        manager.add_service(source.service)
    manager.add_informer(works)
    manager.add_informer(applied)
    manager.add_controller(AddFinalizerController(deps).controller)
    status = AvailableStatusController(deps)
    # The pass that applies a new generation also writes Available: one status patch.
    apply_loop = ManifestWorkController(deps, fill_status=status.fill_after_apply)
    status.on_gone = apply_loop.reapply
    manager.add_controller(apply_loop.controller)
    for controller in cleanup_controllers(deps):
        manager.add_controller(controller)
    manager.add_controller(status.controller)
    work_metrics = WorkMetrics(
        works, deps.status_syncs, settings.status_sync_interval, settings.metrics_work_labels
    )
    work_metrics.attach()
    # A caching executor check (ExecutorValidatingCaches) runs controllers of its own.
    for controller in executor.controllers():
        manager.add_controller(controller)
    # Before the clients: the pool's informers use the spoke client.
    manager.add_closer("work metrics", work_metrics.detach)
    manager.add_closer("feedback watch pool", watch_pool.stop)
    manager.add_closer("condition rule evaluator", rule_evaluator.aclose)
    manager.add_closer("hub client", hub.close)
    manager.add_closer("spoke client", spoke.close)
    if own is not None:
        manager.add_closer("own cluster client", own.close)
    log.info(
        "agent configured",
        cluster=settings.cluster_name,
        driver=source.driver,
        hub=source.endpoint,
        hub_hash=the_hash,
        agent_id=deps.agent_id,
    )
    return Agent(manager=manager, deps=deps)


def run(settings: AgentSettings) -> int:
    """Run the agent in a new event loop (logging is the caller's); returns the exit code."""
    return asyncio.run(
        run_built(lambda: build_agent(settings), terminate_on_files=settings.terminate_on_files)
    )
