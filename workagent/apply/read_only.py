"""The ``ReadOnly`` strategy (spec/agent.md 5.3).

Never writes. OCM's ReadOnly makes no request at all and returns the
manifest, so the manifest is always ``Applied=True``; the reconciler reads
the live object's uid separately. This applier reads it in the same step:
it returns the live object when there is one (uid included, no owner
reference ever added) and, when there is none, the manifest itself, which
keeps OCM's condition. ``missing_is_error=True`` turns a missing object into
the NotFound error instead (``Applied=False``), a stricter reading some
callers may prefer; it is not OCM's behaviour.
"""

from __future__ import annotations

from typing import Any

from ocmkit.kube import KubeClient, NotFound
from workagent.apply.base import ApplyRequest
from workagent.apply.prepare import prepare


class ReadOnlyApplier:
    """GET only: the live object, or the manifest when it does not exist."""

    strategy = "ReadOnly"

    def __init__(self, client: KubeClient, *, missing_is_error: bool = False) -> None:
        self.client = client
        self.missing_is_error = missing_is_error

    async def apply(self, request: ApplyRequest) -> dict[str, Any]:
        """The live object; the manifest (no uid) when it is missing, unless that is an error."""
        target = prepare(request)
        try:
            return await self.client.get(target.resource, target.name, target.namespace)
        except NotFound:
            if self.missing_is_error:
                raise
            return target.required
