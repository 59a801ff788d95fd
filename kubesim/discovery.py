"""Discovery documents: /version, /api, /api/v1, /apis, /apis/{group}/{version}.

Both forms kube-apiserver 1.30 serves: the legacy per-group-version
documents, and aggregated discovery (``apidiscovery.k8s.io`` v2 and v2beta1),
which kubectl asks for first and which answers all of discovery in two requests.
"""

from __future__ import annotations

from typing import Any

from kubesim.resources import Registry, ResourceType

VERSION_INFO = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0-kubesim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    """GET /api."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


# Built-in groups in the apiserver's group priority order (/apis lists them so).
_GROUP_ORDER = (
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
)
AGGREGATED_TYPES = {
    "v2": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "v2beta1": "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
}


def _group_key(name: str) -> tuple[int, str]:
    """Sort key: built-in groups by priority, then the rest (CRD groups) by name."""
    try:
        return (_GROUP_ORDER.index(name), "")
    except ValueError:
        return (len(_GROUP_ORDER), name)


def _groups(registry: Registry) -> list[tuple[str, list[str]]]:
    return sorted(
        ((name, versions) for name, versions in registry.group_versions().items() if name),
        key=lambda item: _group_key(item[0]),
    )


def _group_doc(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    """GET /apis."""
    groups = [_group_doc(name, versions) for name, versions in _groups(registry)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    """GET /apis/{group}, or None when the group is not served."""
    versions = registry.group_versions().get(group)
    if not versions:
        return None
    doc = _group_doc(group, versions)
    return {"kind": "APIGroup", "apiVersion": "v1", **doc}


def _entries(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular or rt.kind.lower(),
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    if rt.storage_hash:
        main["storageVersionHash"] = rt.storage_hash
    out = [main]
    if rt.status:
        out.append(
            {
                "name": f"{rt.plural}/status",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    if rt.scale:
        out.append(
            {
                "name": f"{rt.plural}/scale",
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }
        )
    for sub in rt.extra_subresources:
        out.append(
            {
                "name": f"{rt.plural}/{sub}",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["update"],
            }
        )
    return out


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """GET /api/v1 or /apis/{group}/{version}, or None when not served."""
    types = sorted(
        (rt for rt in registry if rt.group == group and rt.version == version),
        key=lambda rt: rt.plural,
    )
    if not types:
        return None
    resources = [entry for rt in types for entry in _entries(rt)]
    doc: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        doc["apiVersion"] = "v1"
    doc["groupVersion"] = f"{group}/{version}" if group else version
    doc["resources"] = resources
    return doc


def aggregated_version(accept: str) -> str | None:
    """The aggregated discovery version an Accept header asks for first, if any."""
    for part in accept.split(","):
        params = {
            k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])
        }
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            version = params.get("v", "")
            if version in AGGREGATED_TYPES:
                return version
    return None


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    # A built-in kind of the resource's own group version is named by kind alone;
    # custom resources spell the group and version out.
    if rt.builtin:
        kind = {"group": "", "version": "", "kind": rt.kind}
    else:
        kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    out: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": kind,
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular or rt.kind.lower(),
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        out["shortNames"] = list(rt.short_names)
    if rt.categories:
        out["categories"] = list(rt.categories)
    subresources: list[dict[str, Any]] = []
    if rt.status:
        subresources.append(
            {"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}
        )
    if rt.scale:
        scale = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        subresources.append(
            {"subresource": "scale", "responseKind": scale, "verbs": ["get", "patch", "update"]}
        )
    subresources += [
        {"subresource": sub, "responseKind": kind, "verbs": ["update"]}
        for sub in rt.extra_subresources
    ]
    if subresources:
        # Built-in subresources come sorted by name; a CRD's as status, then scale.
        if rt.builtin:
            subresources.sort(key=lambda sub: str(sub["subresource"]))
        out["subresources"] = subresources
    return out


def _aggregated_group(registry: Registry, name: str, versions: list[str]) -> dict[str, Any]:
    entries = []
    for version in versions:
        types = sorted(
            (rt for rt in registry if rt.group == name and rt.version == version),
            key=lambda rt: rt.plural,
        )
        entries.append(
            {
                "version": version,
                "resources": [_aggregated_resource(rt) for rt in types],
                "freshness": "Current",
            }
        )
    meta: dict[str, Any] = {"name": name} if name else {}
    return {"metadata": meta, "versions": entries}


def aggregated(registry: Registry, *, core: bool, version: str) -> dict[str, Any]:
    """GET /api (``core``) or /apis as an APIGroupDiscoveryList of ``version``."""
    groups = [("", registry.group_versions().get("", []))] if core else _groups(registry)
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": [_aggregated_group(registry, name, versions) for name, versions in groups],
    }
