"""The outcome of applying one manifest, shared by the apply loop and its bookkeeping."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ocmkit.kube import Resource

#: (group, version, resource, namespace, name) of an object a work lists.
ObjectIdentity = tuple[str, str, str, str, str]

#: The status controller's ``fill_after_apply(work, objects)``: adds ``Available``
#: and the feedback of a work's just-applied objects to its status; False when it
#: cannot (the status controller then writes them itself).
FillStatus = Callable[[dict[str, Any], dict[ObjectIdentity, dict[str, Any]]], Awaitable[bool]]


def object_identity(meta: dict[str, Any]) -> ObjectIdentity:
    """(group, version, resource, namespace, name) of a ``resourceMeta``."""
    return (
        str(meta.get("group") or ""),
        str(meta.get("version") or ""),
        str(meta.get("resource") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


@dataclass
class ManifestResult:
    """What happened to ``spec.workload.manifests[ordinal]`` in one apply pass.

    ``meta`` is the wire-form ``resourceMeta`` (all six strings plus the
    ordinal). ``obj`` is the live object the strategy returned (or the manifest
    itself for a manifest skipped because it completed: ``completed``);
    ``error`` is set when the manifest could not be parsed, mapped or applied.
    """

    ordinal: int
    meta: dict[str, Any]
    resource: Resource | None = None
    required: dict[str, Any] | None = None
    obj: dict[str, Any] | None = None
    error: Exception | None = None
    rank: int = 1001  # unparseable: after every kind (manifests.OTHER_KIND_RANK is 1000)
    completed: bool = False


def empty_meta(ordinal: int) -> dict[str, Any]:
    """A resourceMeta with only the ordinal known (all strings always written, as Go does)."""
    return {
        "ordinal": ordinal,
        "group": "",
        "version": "",
        "kind": "",
        "resource": "",
        "name": "",
        "namespace": "",
    }
