"""Setting a cluster up for a test, the same way on kubesim and on a real control plane.

Where the two targets differ, the difference is handled here, once:

- a real apiserver serves a new CRD only once it is ``Established`` (kubesim at
  once): :func:`install_crds` waits for it;
- identities: kubesim registers a token for any name, a real apiserver knows
  only its token file and ServiceAccounts: :func:`service_account_user` gives
  a ServiceAccount's identity on both (a TokenRequest token on real);
- RBAC takes effect on a real apiserver when its informers catch up:
  :func:`wait_allowed` asks a SubjectAccessReview until it is allowed;
- an aggregated ClusterRole is filled by kube-controller-manager on a real
  control plane; kubesim's authorizer resolves aggregation as it checks, but
  nothing writes the role's rules: :func:`aggregate_cluster_roles` waits for
  kcm, or writes what kcm would on kubesim;
- a custom resource must be sent with its apiVersion and kind (:func:`typed`);
- a webhook Service: kubesim routes to its Endpoints (127.0.0.1 allowed), a
  real apiserver to the ClusterIP, which nothing routes here, and refuses
  loopback endpoints: :func:`local_webhook_service` gives an ExternalName
  Service of 127.0.0.1 there.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesim.sim import KubeSim
from ocmkit.kube import (
    CLUSTER_ROLES,
    CRDS,
    NAMESPACES,
    SERVICE_ACCOUNTS,
    SUBJECT_ACCESS_REVIEWS,
    AlreadyExists,
    Conflict,
    KubeClient,
    KubeError,
    NotFound,
    Resource,
)
from tests.conftest import eventually
from tests.support.targets import Cluster


def is_kubesim(cluster: Cluster) -> bool:
    """Whether ``cluster`` is the emulator (else a real control plane)."""
    return isinstance(cluster, KubeSim)


def typed(res: Resource, **fields: Any) -> dict[str, Any]:
    """An object of ``res`` with its apiVersion and kind: a real apiserver refuses a custom
    resource without them (400 "Object 'Kind' is missing"), kubesim takes it."""
    return {"apiVersion": res.api_version, "kind": res.kind, **fields}


# -- CRDs --------------------------------------------------------------------------------


def crd_documents(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The CRDs of the given YAML files, in order."""
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc]


def served_resource(crd: Mapping[str, Any]) -> Resource:
    """The resource a CRD serves (its storage version)."""
    spec = crd["spec"]
    versions = spec["versions"]
    version = next((v for v in versions if v.get("storage")), versions[0])["name"]
    names = spec["names"]
    return Resource(
        spec["group"], version, names["plural"], names["kind"], spec["scope"] == "Namespaced"
    )


async def wait_served(client: KubeClient, crds: Iterable[Mapping[str, Any]]) -> None:
    """Wait until every CRD is Established and its resource answers a list."""
    for crd in crds:
        name = crd["metadata"]["name"]
        resource = served_resource(crd)

        async def serving(name: str = name, resource: Resource = resource) -> bool:
            found = await client.get(CRDS, name)
            conditions = (found.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return False
            try:
                await client.list(resource, page_size=1)
            except NotFound:
                return False
            return True

        await eventually(serving, timeout=30, what=f"CRD {name} to be served")


async def install_crds(client: KubeClient, paths: Iterable[Path]) -> None:
    """Create the CRDs of ``paths`` and wait until each is served."""
    crds = crd_documents(paths)
    for crd in crds:
        await client.create(CRDS, crd)
    await wait_served(client, crds)


# -- identities ----------------------------------------------------------------------------


@dataclass(frozen=True)
class User:
    """An identity a test acts as: its user name and bearer token."""

    name: str
    token: str


async def ensure_namespace(client: KubeClient, name: str) -> None:
    """Create namespace ``name`` unless it exists."""
    with contextlib.suppress(AlreadyExists, Conflict):
        await client.create(NAMESPACES, {"metadata": {"name": name}})


async def service_account_user(
    cluster: Cluster, admin: KubeClient, namespace: str, name: str
) -> User:
    """The identity of ServiceAccount ``namespace/name`` (created with its namespace).

    The same user name on both targets, ``system:serviceaccount:<ns>:<name>``,
    with the groups a real apiserver gives it; on real the token comes from a
    TokenRequest, on kubesim it is registered directly.
    """
    await ensure_namespace(admin, namespace)
    with contextlib.suppress(AlreadyExists, Conflict):
        await admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, namespace)
    username = f"system:serviceaccount:{namespace}:{name}"
    if isinstance(cluster, KubeSim):
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")
        return User(username, cluster.add_user(username, groups))
    return User(username, await service_account_token(admin, namespace, name))


async def service_account_token(client: KubeClient, namespace: str, name: str) -> str:
    """A token of ServiceAccount ``namespace/name`` from the TokenRequest API (a real
    apiserver's; valid for an hour)."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"expirationSeconds": 3600},
    }
    answer = await client.create(SERVICE_ACCOUNTS, request, namespace, subresource="token")
    token = answer["status"]["token"]
    assert isinstance(token, str) and token
    return token


# -- RBAC ----------------------------------------------------------------------------------


async def wait_allowed(
    admin: KubeClient,
    user: str,
    verb: str,
    resource: str,
    *,
    group: str = "",
    namespace: str = "",
    name: str = "",
    groups: tuple[str, ...] = (),
    allow: bool = True,
) -> None:
    """Wait until RBAC just written allows (``allow``) or denies ``user`` ``verb``: a
    real apiserver's authorizer sees roles and bindings through its informers, a
    moment after they are written."""

    attributes = {"verb": verb, "group": group, "resource": resource, "namespace": namespace}
    if name:
        attributes["name"] = name
    review = {
        "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
        "kind": SUBJECT_ACCESS_REVIEWS.kind,
        "spec": {"user": user, "groups": list(groups), "resourceAttributes": attributes},
    }

    async def check() -> bool:
        answer = await admin.create(SUBJECT_ACCESS_REVIEWS, review)
        return bool((answer.get("status") or {}).get("allowed")) is allow

    what = f"RBAC to {'allow' if allow else 'deny'} {user} to {verb} {resource}"
    await eventually(check, timeout=30, what=what)


def _canonical(rules: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted(json.dumps(rule, sort_keys=True) for rule in rules)


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) of a selector."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if (
            (op == "In" and (not present or labels[key] not in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


async def aggregated_rules(admin: KubeClient, role: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rules kube-controller-manager gives an aggregated ClusterRole: those of every
    ClusterRole a selector picks (by name, duplicates dropped)."""
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    roles = (await admin.list(CLUSTER_ROLES))["items"]
    rules: list[dict[str, Any]] = []
    seen: set[str] = set()
    for other in sorted(roles, key=lambda r: r["metadata"]["name"]):
        if other["metadata"]["name"] == role["metadata"]["name"]:
            continue
        labels = other["metadata"].get("labels") or {}
        if not any(_selects(s, labels) for s in selectors):
            continue
        for rule in other.get("rules") or []:
            key = json.dumps(rule, sort_keys=True)
            if key not in seen:
                seen.add(key)
                rules.append(rule)
    return rules


async def aggregate_cluster_roles(
    cluster: Cluster, admin: KubeClient, names: Iterable[str]
) -> None:
    """Bring the aggregated ClusterRoles among ``names`` to the rules of the roles they
    select (a role without an aggregationRule is left alone).

    A real control plane's kube-controller-manager does it (this waits for it);
    kubesim has no aggregation controller, so the test writes what kcm would.
    """
    for name in names:

        async def aggregated(name: str = name) -> bool:
            role = await admin.get(CLUSTER_ROLES, name)
            if not role.get("aggregationRule"):
                return True
            wanted = await aggregated_rules(admin, role)
            if _canonical(role.get("rules") or []) == _canonical(wanted):
                return True
            if is_kubesim(cluster):
                await admin.patch(CLUSTER_ROLES, name, {"rules": wanted})
            return False

        await eventually(aggregated, timeout=30, what=f"ClusterRole {name} to be aggregated")


# -- webhooks ------------------------------------------------------------------------------


def local_webhook_service(
    cluster: Cluster, namespace: str, name: str, port: int, *, port_name: str = "https"
) -> list[dict[str, Any]]:
    """The objects through which the API server reaches ``127.0.0.1:port`` as Service
    ``namespace/name`` port ``port`` (a webhook registration names that port).

    kubesim resolves a Service to its Endpoints: a ClusterIP Service and Endpoints
    of 127.0.0.1, as an operator's cluster has them with a pod behind. A real
    apiserver dials a Service's ClusterIP (nothing routes it here: no kube-proxy)
    and refuses loopback endpoint addresses; for an ExternalName Service it dials
    the name, so there the Service is an ExternalName of 127.0.0.1. Either way
    the webhook's certificate is checked for ``<name>.<namespace>.svc``.
    """
    ports = [{"name": port_name, "port": port, "targetPort": port}]
    meta = {"name": name, "namespace": namespace}
    if not is_kubesim(cluster):
        spec = {"type": "ExternalName", "externalName": "127.0.0.1", "ports": ports}
        return [{"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}]
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": ports}},
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": meta,
            "subsets": [
                {
                    "addresses": [{"ip": "127.0.0.1"}],
                    "ports": [{"name": port_name, "port": port}],
                }
            ],
        },
    ]


async def wait_admission(
    client: KubeClient, resource: Resource, obj: dict[str, Any], hook: str
) -> None:
    """Wait until webhook ``hook`` denies a server-side dry run of ``obj``: a real
    apiserver's admission sees a new registration through its informer, a moment later."""
    namespace = obj["metadata"].get("namespace")

    async def denied() -> bool:
        try:
            await client.create(resource, obj, namespace, dry_run=True)
        except KubeError as err:
            return f'admission webhook "{hook}" denied the request' in str(err)
        return False

    await eventually(denied, timeout=60, what=f"admission to call webhook {hook}")
