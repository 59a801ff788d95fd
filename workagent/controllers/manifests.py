"""Reading manifests: identity, apply order and resource mapping (spec/agent.md 4.4 steps 1-2).

Each problem a single manifest can have is reported on that manifest only,
as an exception whose message ends up in its ``Applied`` condition.
"""

from __future__ import annotations

import copy
from typing import Any

from ocmkit.kube import NoKindMatch, RESTMapper, split_api_version
from workagent.controllers.apply_results import ManifestResult, empty_meta

_RANKS: dict[str, int] = {}
for _rank, _kinds in enumerate(
    (
        (
            "PriorityClass",
            "Namespace",
            "CustomResourceDefinition",
            "StorageClass",
            "PersistentVolume",
            "PodSecurityPolicy",
        ),
        ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
        (
            "NetworkPolicy",
            "ResourceQuota",
            "LimitRange",
            "PodDisruptionBudget",
            "ServiceAccount",
        ),
        ("Secret", "ConfigMap", "PersistentVolumeClaim"),
        ("Service",),
        (
            "DaemonSet",
            "Pod",
            "ReplicationController",
            "ReplicaSet",
            "Deployment",
            "HorizontalPodAutoscaler",
            "StatefulSet",
            "Job",
            "CronJob",
        ),
        (
            "APIService",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ),
    )
):
    for _kind in _kinds:
        _RANKS[_kind] = _rank

OTHER_KIND_RANK = 1000


class ManifestError(Exception):
    """A manifest is unusable as written (no kind, no name, unknown type, ...)."""


class UnknownResourceType(ManifestError):
    """The managed cluster serves no resource for the manifest's apiVersion and kind."""


def kind_rank(kind: str) -> int:
    """Apply order of a kind: dependencies (namespaces, CRDs, RBAC) before their users."""
    return _RANKS.get(kind, OTHER_KIND_RANK)


def parse_manifest(ordinal: int, raw: Any) -> ManifestResult:
    """A result holding the manifest's identity, or its parse error.

    The mapping to an API resource happens later, right before the manifest
    is applied, so a CRD applied earlier in the same pass can be found.
    """
    result = ManifestResult(ordinal=ordinal, meta=empty_meta(ordinal))
    if not isinstance(raw, dict):
        result.error = ManifestError("the manifest is not a JSON object")
        return result
    api_version = raw.get("apiVersion")
    kind = raw.get("kind")
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        result.error = ManifestError("metadata of the manifest is not an object")
        return result
    metadata = metadata or {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    result.meta["name"] = name if isinstance(name, str) else ""
    result.meta["namespace"] = namespace if isinstance(namespace, str) else ""
    if not isinstance(kind, str) or not kind:
        result.error = ManifestError("Object 'Kind' is missing in the manifest")
        return result
    result.meta["kind"] = kind
    if not isinstance(api_version, str) or not api_version:
        result.error = ManifestError(f"Object 'apiVersion' is missing in the {kind} manifest")
        return result
    try:
        group, version = split_api_version(api_version)
    except ValueError:
        result.error = ManifestError(f"invalid apiVersion {api_version!r} of the {kind} manifest")
        return result
    result.meta["group"], result.meta["version"] = group, version
    result.rank = kind_rank(kind)
    required = copy.deepcopy(raw)
    # A uid copied from another cluster would make every write fail its precondition.
    required.get("metadata", {}).pop("uid", None)
    result.required = required
    return result


async def map_resource(mapper: RESTMapper, result: ManifestResult) -> None:
    """Resolve the manifest's resource (filling ``meta``), or raise ManifestError.

    A cluster-scoped resource loses any namespace the manifest gives; a
    namespaced one must have a namespace, as the agent never guesses one.
    """
    meta = result.meta
    assert result.required is not None
    api_version = result.required["apiVersion"]
    try:
        resource = await mapper.resource_for(api_version, meta["kind"])
    except NoKindMatch:
        raise UnknownResourceType(
            f'the server doesn\'t have a resource type "{meta["kind"]}"'
        ) from None
    result.resource = resource
    meta["resource"] = resource.plural
    if not meta["name"]:  # first: a manifest with neither is missing its name above all
        raise ManifestError(f"the {meta['kind']} manifest has no metadata.name")
    if not resource.namespaced:
        meta["namespace"] = ""
        result.required.get("metadata", {}).pop("namespace", None)
    elif not meta["namespace"]:
        raise ManifestError(
            f'{meta["kind"]} "{meta["name"]}" has no metadata.namespace, '
            f"but {resource} is namespaced"
        )
