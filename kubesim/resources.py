"""The resource types kubesim serves: built-in kinds and CRD-backed ones."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.listtypes import ListTypeResolver, SchemaListTypes, builtin_list_type

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)
SUBRESOURCE_VERBS = ("get", "patch", "update")


@dataclass
class ResourceType:
    """One served resource (one group/version/plural)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    status: bool = False
    scale: bool = False
    generation: bool = False
    builtin: bool = True
    storage_hash: str = ""
    extra_subresources: tuple[str, ...] = ()
    crd_name: str = ""
    schema: Mapping[str, Any] | None = None
    printer_columns: tuple[Mapping[str, Any], ...] = ()
    list_types: ListTypeResolver = field(default=builtin_list_type, repr=False)

    @property
    def api_version(self) -> str:
        """``group/version`` or ``v1`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """The kind of this resource's lists."""
        return f"{self.kind}List"

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: (group, plural); all versions of a resource share it."""
        return (self.group, self.plural)

    @property
    def only_create(self) -> bool:
        """Virtual resources (reviews) that are only ever created, never stored."""
        return self.verbs == CREATE_ONLY


def _rt(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    **kw: Any,
) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, **kw)


def builtin_types() -> list[ResourceType]:
    """Every built-in resource type kubesim serves."""
    rbac = "rbac.authorization.k8s.io"
    authz = "authorization.k8s.io"
    adm = "admissionregistration.k8s.io"
    return [
        _rt(
            "",
            "v1",
            "namespaces",
            "Namespace",
            False,
            short_names=("ns",),
            status=True,
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            extra_subresources=("finalize",),
            storage_hash="Q3oi5N2YM8M=",
        ),
        _rt("", "v1", "configmaps", "ConfigMap", short_names=("cm",), storage_hash="qFsyl6wFWjQ="),
        _rt("", "v1", "secrets", "Secret", storage_hash="S6u1pOWzb84="),
        _rt(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            short_names=("sa",),
            storage_hash="pbx9ZvyFpBE=",
        ),
        _rt(
            "",
            "v1",
            "services",
            "Service",
            short_names=("svc",),
            categories=("all",),
            status=True,
            storage_hash="0/CO1lhkEBI=",
        ),
        _rt("", "v1", "endpoints", "Endpoints", short_names=("ep",), storage_hash="fWeeMqaN/OA="),
        _rt(
            "",
            "v1",
            "pods",
            "Pod",
            short_names=("po",),
            categories=("all",),
            status=True,
            storage_hash="xPOwRZ+Yhw8=",
        ),
        _rt("", "v1", "events", "Event", short_names=("ev",), storage_hash="r2yiGXH7wu8="),
        _rt(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            short_names=("pvc",),
            status=True,
            storage_hash="QWTyNDq0dC4=",
        ),
        _rt(
            "",
            "v1",
            "nodes",
            "Node",
            False,
            short_names=("no",),
            status=True,
            storage_hash="XwShjMxG9Fs=",
        ),
        _rt(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            short_names=("deploy",),
            categories=("all",),
            status=True,
            scale=True,
            generation=True,
            storage_hash="8aSe+NMegvE=",
        ),
        _rt(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            short_names=("sts",),
            categories=("all",),
            status=True,
            scale=True,
            generation=True,
            storage_hash="H+vl74LkKdo=",
        ),
        _rt(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            short_names=("ds",),
            categories=("all",),
            status=True,
            generation=True,
            storage_hash="dd7pWHUlMKQ=",
        ),
        _rt(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            short_names=("rs",),
            categories=("all",),
            status=True,
            scale=True,
            generation=True,
            storage_hash="P1RzHs8/mWQ=",
        ),
        _rt(
            "batch",
            "v1",
            "jobs",
            "Job",
            categories=("all",),
            status=True,
            generation=True,
            storage_hash="mudhfqk/qZY=",
        ),
        _rt(
            "batch",
            "v1",
            "cronjobs",
            "CronJob",
            short_names=("cj",),
            categories=("all",),
            status=True,
            generation=True,
            storage_hash="sd5LIXh4Fjs=",
        ),
        _rt(rbac, "v1", "roles", "Role", storage_hash="7FuwZcIIItM="),
        _rt(rbac, "v1", "rolebindings", "RoleBinding", storage_hash="eGsCzGH6b1g="),
        _rt(rbac, "v1", "clusterroles", "ClusterRole", False, storage_hash="bYE5ZWDrJ44="),
        _rt(
            rbac,
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            False,
            storage_hash="48tpQ8gZHFc=",
        ),
        _rt("coordination.k8s.io", "v1", "leases", "Lease", storage_hash="gqkMMb/YqFM="),
        _rt(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            short_names=("ev",),
            storage_hash="r2yiGXH7wu8=",
        ),
        _rt(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            short_names=("pdb",),
            status=True,
            generation=True,
            storage_hash="EVWiDmWqyJw=",
        ),
        _rt(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            status=True,
            generation=True,
            storage_hash="jfWCUB31mvA=",
        ),
        _rt(
            adm,
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            False,
            categories=("api-extensions",),
            generation=True,
            storage_hash="B0wHjQmsGNk=",
        ),
        _rt(
            adm,
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            False,
            categories=("api-extensions",),
            generation=True,
            storage_hash="Sqi0GUgDaX0=",
        ),
        _rt(authz, "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=CREATE_ONLY),
        _rt("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False, verbs=CREATE_ONLY),
        _rt(
            authz,
            "v1",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            False,
            verbs=CREATE_ONLY,
        ),
        _rt(
            authz, "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", verbs=CREATE_ONLY
        ),
        _rt(
            authz,
            "v1",
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            False,
            verbs=CREATE_ONLY,
        ),
    ]


class Registry:
    """Lookup of served resource types by group/version/plural and by kind."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        for rt in builtin_types():
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        """Serve ``rt`` (replacing an earlier type with the same GVR)."""
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt

    def remove_crd(self, crd_name: str) -> list[ResourceType]:
        """Stop serving every version of the CRD ``crd_name``; returns what was removed."""
        gone = [rt for rt in self._by_gvr.values() if rt.crd_name == crd_name]
        for rt in gone:
            del self._by_gvr[(rt.group, rt.version, rt.plural)]
        return gone

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/group/version/plural``, if any."""
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        """The type of a group/version/kind, if served."""
        for rt in self._by_gvr.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def by_key(self, key: tuple[str, str]) -> list[ResourceType]:
        """Every served version of a storage key."""
        return [rt for rt in self._by_gvr.values() if rt.key == key]

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_gvr.values()))

    def group_versions(self) -> dict[str, list[str]]:
        """Group name -> served versions, preferred first ("" is the core group)."""
        out: dict[str, list[str]] = {}
        for rt in self._by_gvr.values():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        for versions in out.values():
            versions.sort(key=_version_priority)
        return out


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA before beta before alpha, higher first."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)


#: The verbs of a custom resource, in the order the apiextensions server lists them.
CUSTOM_RESOURCE_VERBS = (
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
)


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Discovery's ``storageVersionHash``: 8 bytes of SHA-256 of group/version/kind, base64."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def crd_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types one CustomResourceDefinition serves."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    stored = [v.get("name", "") for v in spec.get("versions") or [] if v.get("storage")]
    storage_hash = storage_version_hash(group, stored[0], names.get("kind", "")) if stored else ""
    out: list[ResourceType] = []
    for ver in spec.get("versions") or []:
        if not ver.get("served", True):
            continue
        subresources = ver.get("subresources") or {}
        schema = (ver.get("schema") or {}).get("openAPIV3Schema")
        out.append(
            ResourceType(
                group=group,
                version=ver.get("name", ""),
                plural=names.get("plural", ""),
                kind=names.get("kind", ""),
                namespaced=spec.get("scope") == "Namespaced",
                verbs=CUSTOM_RESOURCE_VERBS,
                storage_hash=storage_hash,
                singular=names.get("singular") or names.get("kind", "").lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status="status" in subresources,
                scale="scale" in subresources,
                generation=True,
                builtin=False,
                crd_name=(crd.get("metadata") or {}).get("name", ""),
                schema=schema,
                printer_columns=tuple(ver.get("additionalPrinterColumns") or ()),
                list_types=SchemaListTypes(schema),
            )
        )
    return out
