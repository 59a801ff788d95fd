"""The executor permission check's contract (spec/agent.md section 16)."""

from __future__ import annotations

from typing import Any, Protocol

from schemas.work_v1 import ManifestWorkExecutor
from workagent.kube import Resource

NOT_ALLOWED_REQUEUE_SECONDS = 60.0


class NotAllowedError(Exception):
    """The executor may not act on this manifest; the work is requeued, not failed."""


class ExecutorValidator(Protocol):
    """Decides whether a work's executor may apply (and, if owned, delete) a manifest."""

    async def validate(
        self,
        executor: ManifestWorkExecutor | None,
        resource: Resource,
        obj: dict[str, Any],
        *,
        owned_by_work: bool,
        work_namespace: str,
        work_name: str,
    ) -> None:
        """Return if allowed; raise :class:`NotAllowedError` with the message otherwise."""
        ...
