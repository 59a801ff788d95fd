"""The outcome of applying one manifest, shared by the apply loop and its bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ocmkit.kube import Resource


@dataclass
class ManifestResult:
    """What happened to ``spec.workload.manifests[ordinal]`` in one apply pass.

    ``meta`` is the wire-form ``resourceMeta`` (all six strings plus the
    ordinal). ``obj`` is the live object the strategy returned (or the manifest
    itself for a manifest skipped because it completed); ``error`` is set when
    the manifest could not be parsed, mapped or applied.
    """

    ordinal: int
    meta: dict[str, Any]
    resource: Resource | None = None
    required: dict[str, Any] | None = None
    obj: dict[str, Any] | None = None
    error: Exception | None = None
    rank: int = field(default=1001)

    @property
    def ok(self) -> bool:
        """Applied without error."""
        return self.error is None


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
