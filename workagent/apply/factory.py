"""Picking the applier for a manifest's ``updateStrategy``."""

from __future__ import annotations

from ocmkit.kube import KubeClient
from schemas.work_v1 import UpdateStrategy, UpdateStrategyType
from workagent.apply.base import Applier
from workagent.apply.create_only import CreateOnlyApplier
from workagent.apply.read_only import ReadOnlyApplier
from workagent.apply.server_side import DEFAULT_FIELD_MANAGER, ServerSideApplier
from workagent.apply.update import UpdateApplier


class Appliers:
    """The four strategies for one spoke client; build one per agent.

    The Update applier keeps an in-memory cache of what it applied, so the
    composition root should hold one ``Appliers`` and use
    ``appliers.for_strategy`` (e.g. as ``AgentDeps.applier_for``) rather than
    building appliers per call.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        default_field_manager: str = DEFAULT_FIELD_MANAGER,
    ) -> None:
        self.update = UpdateApplier(client)
        self.create_only = CreateOnlyApplier(client)
        self.read_only = ReadOnlyApplier(client)
        self.server_side = ServerSideApplier(client, default_field_manager=default_field_manager)

    def for_strategy(self, strategy: UpdateStrategy | None) -> Applier:
        """The applier for ``strategy``; None (no config) means Update."""
        if strategy is None:
            return self.update
        if strategy.type == UpdateStrategyType.CREATE_ONLY:
            return self.create_only
        if strategy.type == UpdateStrategyType.READ_ONLY:
            return self.read_only
        if strategy.type == UpdateStrategyType.SERVER_SIDE_APPLY:
            return self.server_side
        return self.update
