"""The hub work manager's composition root: clients, the shared cache, gated controllers.

``hubcontroller manager`` runs :func:`build_hub_manager` with :func:`~ocmkit.runtime.run_built`;
what it builds is drawn in docs/architecture.md ("The hub controller"). The
controllers share one frozen :class:`~hubcontroller.deps.HubDeps`.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import structlog

from hubcontroller.controllers.garbage_collection import garbage_collection_controller
from hubcontroller.deps import HubDeps
from hubcontroller.metrics import ReplicaSetMetrics
from hubcontroller.settings import HubManagerSettings
from ocmkit.command import import_optional
from ocmkit.kube import MANIFESTWORK_REPLICASETS, MANIFESTWORKS, KubeClient, KubeConfigError
from ocmkit.runtime import (
    Controller,
    Informer,
    LeaderElector,
    Manager,
)
from schemas.wire import GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK, GATE_MANIFEST_WORK_REPLICA_SET

log = structlog.get_logger(__name__)

#: The manager's name in logs, as OCM's component name.
MANAGER_NAME = "work-manager"
#: User-Agent of the hub clients; the apiserver names managedFields entries after it.
HUB_USER_AGENT = "work-manager"
#: Where the ManifestWorkReplicaSet controller lives (loaded lazily: see load_replicaset_builder).
REPLICASET_MODULE = "hubcontroller.controllers.replicaset"

ReplicaSetBuilder = Callable[[HubDeps], tuple[list[Informer], Controller]]


@dataclass(frozen=True)
class HubManager:
    """A built hub manager: the runtime manager and the dependencies of its controllers."""

    manager: Manager
    deps: HubDeps


def load_replicaset_builder() -> ReplicaSetBuilder | None:
    """``build_replicaset_controller``, or None if this build has no MWRS controller."""
    module = import_optional(REPLICASET_MODULE)
    return None if module is None else cast("ReplicaSetBuilder", module.build_replicaset_controller)


async def _client(flag: str, path: str, settings: HubManagerSettings, name: str) -> KubeClient:
    """A hub client from ``path`` (the value of ``flag``), or in-cluster when it is empty."""
    try:
        return await KubeClient.connect(
            path,
            qps=settings.kube_api_qps,
            burst=settings.kube_api_burst,
            user_agent=HUB_USER_AGENT,
            name=name,
        )
    except KubeConfigError as err:
        raise KubeConfigError(f"{flag}: {err}") from err


async def build_hub_manager(
    settings: HubManagerSettings, *, handle_signals: bool = True
) -> HubManager:
    """Create clients, the shared informer and the gated controllers; nothing runs yet.

    Raises KubeConfigError for an unusable kubeconfig and
    ValueError for settings that cannot run (both become one log line and
    exit code 2 under :func:`~ocmkit.runtime.run_built`).
    """
    settings.validate()
    # Before any client exists: a certificate that does not load leaves nothing to close.
    serving_tls = settings.serving_tls()
    builder: ReplicaSetBuilder | None = None
    if settings.gate(GATE_MANIFEST_WORK_REPLICA_SET):
        builder = load_replicaset_builder()
        if builder is None:
            raise ValueError(
                f"feature gate {GATE_MANIFEST_WORK_REPLICA_SET} is on, but this build has no "
                "ManifestWorkReplicaSet controller"
            )
    hub = await _client("--kubeconfig", settings.kubeconfig, settings, "hub")
    works_client = hub
    try:
        if settings.work_driver_config:
            works_client = await _client(
                "--work-driver-config", settings.work_driver_config, settings, "hub-works"
            )
        return _compose(settings, hub, works_client, builder, handle_signals, serving_tls)
    except BaseException:
        await hub.close()
        if works_client is not hub:
            await works_client.close()
        raise


def _compose(
    settings: HubManagerSettings,
    hub: KubeClient,
    works_client: KubeClient,
    builder: ReplicaSetBuilder | None,
    handle_signals: bool,
    serving_tls: ssl.SSLContext | None,
) -> HubManager:
    """The manager with its informers and controllers, over clients already made.

    ``serving_tls`` is the endpoint's HTTPS context (None: plain HTTP).
    """
    works = Informer(
        works_client, MANIFESTWORKS, resync_seconds=settings.resync_seconds, name="manifestworks"
    )
    deps = HubDeps(hub=hub, works=works, workers=settings.workers)
    manager = Manager(
        MANAGER_NAME,
        settings=settings.manager_settings(serving_tls, hub, handle_signals=handle_signals),
        leader_elector=LeaderElector(hub, settings.leader_election),
    )
    enabled: list[str] = []
    if builder is not None:
        informers, controller = builder(deps)
        for informer in informers:
            manager.add_informer(informer)
            if informer.resource == MANIFESTWORK_REPLICASETS:
                replica_set_metrics = ReplicaSetMetrics(informer)
                replica_set_metrics.attach()
                manager.add_closer("replica set metrics", replica_set_metrics.detach)
        manager.add_controller(controller)
        enabled.append(controller.name)
    if settings.gate(GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK):
        enabled.append(manager.add_controller(garbage_collection_controller(deps)).name)
    if enabled:
        manager.add_informer(works)
    else:
        # As OCM's manager: with both gates off it runs, leads and does nothing. Say so.
        log.warning(
            "no hub controller enabled",
            hint=f"--feature-gates={GATE_MANIFEST_WORK_REPLICA_SET}=true and/or "
            f"{GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK}=true",
        )
    if works_client is not hub:
        manager.add_closer("manifestwork client", works_client.close)
    manager.add_closer("hub client", hub.close)
    log.info(
        "work manager configured",
        controllers=enabled,
        gates=sorted(settings.feature_gates),
        hub=hub.config.host,
        manifestworks=works_client.config.host,
        namespace=settings.namespace,
        leader_election=not settings.leader_election.disabled,
    )
    return HubManager(manager=manager, deps=deps)
