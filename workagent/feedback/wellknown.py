"""The WellKnownStatus templates (spec/agent.md section 11.1) and the object's GVK.

A template applies on an exact group/version/kind match, version included: a
``apps/v1beta2`` Deployment has no well-known status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

__all__ = ["WELL_KNOWN_STATUS_PATHS", "GroupVersionKind", "group_version_kind"]


class GroupVersionKind(NamedTuple):
    """An object's group, version and kind, printed as Go's ``schema.GroupVersionKind``.

    A named tuple: built for every scrape, and cheaper to build and hash than a
    dataclass."""

    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        # Go: "apps/v1, Kind=Deployment"; the core group prints as "/v1, Kind=Pod".
        return f"{self.group}/{self.version}, Kind={self.kind}"


def _field(obj: Mapping[str, Any], name: str) -> str:
    value = obj.get(name)
    return value if isinstance(value, str) else ""


def group_version_kind(obj: Mapping[str, Any]) -> GroupVersionKind:
    """The GVK of an object, as ``unstructured.Unstructured.GroupVersionKind()`` reads it.

    An ``apiVersion`` with more than one ``/`` does not parse in Go and leaves
    group and version empty; a missing or non-string field reads as empty.
    """
    api_version = _field(obj, "apiVersion")
    kind = _field(obj, "kind")
    if api_version.count("/") > 1:
        return GroupVersionKind("", "", kind)
    group, _, version = api_version.rpartition("/")
    return GroupVersionKind(group, version, kind)


#: name -> Kubernetes JSONPath, in reporting order, per exact GVK.
WELL_KNOWN_STATUS_PATHS: Final[Mapping[GroupVersionKind, tuple[tuple[str, str], ...]]] = {
    GroupVersionKind("apps", "v1", "Deployment"): (
        ("ReadyReplicas", ".status.readyReplicas"),
        ("Replicas", ".status.replicas"),
        ("AvailableReplicas", ".status.availableReplicas"),
    ),
    GroupVersionKind("apps", "v1", "DaemonSet"): (
        ("NumberReady", ".status.numberReady"),
        ("DesiredNumberScheduled", ".status.desiredNumberScheduled"),
        ("NumberAvailable", ".status.numberAvailable"),
    ),
    GroupVersionKind("batch", "v1", "Job"): (
        ("JobComplete", '.status.conditions[?(@.type=="Complete")].status'),
        ("JobSucceeded", ".status.succeeded"),
    ),
    GroupVersionKind("", "v1", "Pod"): (
        ("PodReady", '.status.conditions[?(@.type=="Ready")].status'),
        ("PodPhase", ".status.phase"),
    ),
}
