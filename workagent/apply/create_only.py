"""The ``CreateOnly`` strategy (spec/agent.md 5.2).

Create the object when it is missing; never update its content. Either way
the work's owner reference is then ensured (added, or stripped for a
removal marker) with a separate merge patch. Consequence, as in OCM: under
the default Foreground delete option a CreateOnly manifest adopts an object
that existed before the work, and deleting the work deletes it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import structlog

from ocmkit.kube import AlreadyExists, Forbidden, KubeClient, NotFound
from workagent.apply.base import ApplyRequest
from workagent.apply.merge import for_create
from workagent.apply.owners import ensure_owner
from workagent.apply.prepare import Target, prepare

log = structlog.get_logger(__name__)


class CreateOnlyApplier:
    """Create if missing, then only keep the owner reference right."""

    strategy = "CreateOnly"

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def apply(self, request: ApplyRequest) -> dict[str, Any]:
        """Apply ``request`` and return the live object."""
        target = prepare(request)
        obj: dict[str, Any] | None = None
        if request.create_first:
            # Never seen to exist: skip the GET; AlreadyExists (or Forbidden, when
            # only creating is not allowed) falls back to reading it.
            with contextlib.suppress(AlreadyExists, Forbidden):
                obj = await self._create(target, request.owner)
        if obj is None:
            try:
                obj = await self.client.get(target.resource, target.name, target.namespace)
            except NotFound:
                obj = await self._create(target, request.owner)
        return await ensure_owner(self.client, target.resource, obj, request.owner)

    async def _create(self, target: Target, owner: dict[str, Any]) -> dict[str, Any]:
        """Create the object with the work's owner reference (a removal marker is dropped)."""
        target.required["metadata"]["ownerReferences"] = [dict(owner)]
        obj = await self.client.create(
            target.resource, for_create(target.required), target.namespace
        )
        target.log_written(log, "resource created", self.strategy)
        return obj
