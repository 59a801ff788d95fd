"""CustomResourceDefinitions the tests install: one builder instead of a literal per suite."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: A structural schema that keeps whatever the object holds.
ANY_CONTENT: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(
    group: str,
    kind: str,
    *,
    plural: str | None = None,
    list_kind: bool = False,
    schema: dict[str, Any] | None = None,
    status_subresource: bool = False,
    versions: Sequence[str] = ("v1",),
) -> dict[str, Any]:
    """A namespaced CRD of ``kind`` in ``group``; the first of ``versions`` is stored.

    ``plural`` defaults to the lower-case kind plus ``s``, ``schema`` (the
    ``openAPIV3Schema`` of every version) to :data:`ANY_CONTENT`.
    """
    plural = plural or f"{kind.lower()}s"
    names = {"plural": plural, "singular": kind.lower(), "kind": kind}
    if list_kind:
        names["listKind"] = f"{kind}List"
    served = []
    for version in versions:
        entry: dict[str, Any] = {
            "name": version,
            "served": True,
            "storage": version == versions[0],
            "schema": {"openAPIV3Schema": schema if schema is not None else ANY_CONTENT},
        }
        if status_subresource:
            entry["subresources"] = {"status": {}}
        served.append(entry)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "names": names, "versions": served},
    }


def object_schema(**properties: Any) -> dict[str, Any]:
    """``{"type": "object", "properties": ...}``."""
    return {"type": "object", "properties": properties}
