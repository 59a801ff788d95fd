"""What every strategy does to a manifest before using it.

The manifest in an :class:`ApplyRequest` may be shared with an informer's
cache, so strategies work on a deep copy. ``metadata.uid`` is dropped
(spec/agent.md 4.4 step 3.1: a uid copied from another cluster would be a
failed precondition here), and a cluster-scoped manifest loses any
namespace, which the API server would ignore anyway but which would
otherwise look like a metadata change on every comparison.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ocmkit.kube import BadRequest, Resource
from workagent.apply.base import ApplyRequest


@dataclass(frozen=True)
class Target:
    """The object a manifest names, and a private copy of the manifest."""

    resource: Resource
    name: str
    namespace: str | None
    required: dict[str, Any]

    def log_written(self, logger: Any, event: str, strategy: str, **extra: Any) -> None:
        """Log a write of the object on ``logger``: what and where, never the content."""
        logger.info(
            event,
            strategy=strategy,
            resource=str(self.resource),
            namespace=self.namespace or "",
            name=self.name,
            **extra,
        )


def prepare(request: ApplyRequest) -> Target:
    """Copy the manifest, drop ``metadata.uid``, and find its name and namespace.

    Raises BadRequest when the manifest has no name, or a namespaced one has
    no namespace: no request could address the object.
    """
    required = copy.deepcopy(request.required)
    meta = required.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        required["metadata"] = meta
    meta.pop("uid", None)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest(400, "BadRequest", f"the {request.resource.kind} manifest has no name")
    namespace: str | None = None
    if request.resource.namespaced:
        ns = meta.get("namespace")
        if not isinstance(ns, str) or not ns:
            raise BadRequest(
                400,
                "BadRequest",
                f"the manifest of {request.resource} {name!r} has no metadata.namespace",
            )
        namespace = ns
    else:
        meta.pop("namespace", None)
    return Target(request.resource, name, namespace, required)
