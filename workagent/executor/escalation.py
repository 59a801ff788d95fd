"""The RBAC escalation check for Role and binding manifests (spec section 16 step 3).

Kubernetes lets an identity create a Role or ClusterRole only if it holds every
permission the role grants or has ``escalate`` on it, and create a binding only
if it has ``bind`` on the referenced role or holds every permission that role
grants. An executor allowed to ``create`` roles must therefore still not be
able to hand out more than it has.

OCM asks the API server by creating the manifest with ``dryRun=All`` while
impersonating the executor. Here the same decision is computed with
SubjectAccessReviews, following the API server's own algorithm
(``pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased``
and ``validation.ConfirmNoEscalation``):

- Role/ClusterRole: allowed if ``escalate`` on the resource in the role's
  namespace is allowed; otherwise every rule, broken down into single
  group/resource/verb/name (or URL/verb) requests, must be allowed; a
  ClusterRole with an ``aggregationRule`` additionally needs ``*`` on
  everything (cluster-admin), as the API server requires.
- RoleBinding/ClusterRoleBinding: allowed if ``bind`` on the referenced role
  (by name, in the binding's namespace) is allowed; otherwise every rule the
  referenced role grants must be allowed in the binding's namespace. A missing
  role is an ordinary error, as the API server's NotFound is for OCM.

The result is what the dry run would answer, without the agent needing
``impersonate`` on every executor, and it works against API servers (kubesim
included) that do not implement impersonation. Like OCM's dry run, it is
never cached.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ocmkit.kube import CLUSTER_ROLES, ROLES, KubeClient, NotFound
from ocmkit.kube.access import ResourceAccess
from workagent.executor.access import Access, AccessReviewer, NonResourceAccess
from workagent.executor.aggregation import aggregated_rules, aggregation_selectors, rules_of
from workagent.executor.base import NotAllowedError
from workagent.executor.subject import ManifestTarget, ServiceAccountExecutor

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLE_RESOURCES = {"roles": "Role", "clusterroles": "ClusterRole"}
BINDING_RESOURCES = frozenset({"rolebindings", "clusterrolebindings"})

# What an aggregationRule requires (the API server's ``fullAuthority``).
FULL_AUTHORITY: tuple[dict[str, Any], ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)


def breakdown(rules: Iterable[dict[str, Any]], namespace: str) -> list[Access]:
    """Single requests covering ``rules`` in ``namespace`` (the API server's ``BreakdownRule``).

    Each resource rule yields one request per group x resource x verb (x name
    when it names resources); ``res/sub`` becomes a subresource request. Each
    URL rule yields one request per URL x verb. Wildcards stay literal, which
    is how the API server's coverage check treats them: ``*`` is held only by a
    rule that grants ``*``. Duplicates are dropped, order kept.
    """
    out: dict[Access, None] = {}
    for rule in rules:
        verbs = _strings(rule.get("verbs"))
        names = _strings(rule.get("resourceNames")) or [""]
        for group in _strings(rule.get("apiGroups")):
            for entry in _strings(rule.get("resources")):
                resource, _, subresource = entry.partition("/")
                for verb in verbs:
                    for name in names:
                        access = ResourceAccess(
                            verb=verb,
                            group=group,
                            resource=resource,
                            subresource=subresource,
                            namespace=namespace,
                            name=name,
                        )
                        out[access] = None
        for url in _strings(rule.get("nonResourceURLs")):
            for verb in verbs:
                out[NonResourceAccess(verb=verb, path=url)] = None
    return list(out)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class AccessReviewEscalationChecker:
    """The escalation check answered with SubjectAccessReviews (see the module docstring).

    ``spoke`` (the agent's identity) reads the roles a binding references.
    """

    def __init__(self, spoke: KubeClient, reviewer: AccessReviewer | None = None) -> None:
        self.spoke = spoke
        self.reviewer = reviewer or AccessReviewer(spoke)

    async def check(
        self, executor: ServiceAccountExecutor, target: ManifestTarget, obj: dict[str, Any]
    ) -> None:
        """Raise the escalation NotAllowedError when creating ``obj`` would escalate."""
        rbac = target.resource in ROLE_RESOURCES or target.resource in BINDING_RESOURCES
        if target.group != RBAC_GROUP or not rbac:
            return  # the check is for Roles, ClusterRoles and their bindings only
        if target.resource in ROLE_RESOURCES:
            allowed = await self._may_create_role(executor, target, obj)
        else:
            allowed = await self._may_create_binding(executor, target, obj)
        if not allowed:
            what = target.describe()
            raise NotAllowedError(  # spec section 16 step 3
                f"not allowed to apply the resource {what}, error: permission escalation"
            )

    async def _may_create_role(
        self, executor: ServiceAccountExecutor, target: ManifestTarget, obj: dict[str, Any]
    ) -> bool:
        # A create request names no object, so a resourceNames-restricted
        # ``escalate`` grant does not apply, exactly as for the dry-run create.
        escalate = ResourceAccess(
            verb="escalate",
            group=RBAC_GROUP,
            resource=target.resource,
            namespace=target.namespace,
        )
        if await self.reviewer.allowed(executor, escalate):
            return True
        if not await self._holds(executor, rules_of(obj), target.namespace):
            return False
        if target.resource == "clusterroles" and aggregation_selectors(obj):
            return await self._holds(executor, FULL_AUTHORITY, "")
        return True

    async def _may_create_binding(
        self, executor: ServiceAccountExecutor, target: ManifestTarget, obj: dict[str, Any]
    ) -> bool:
        ref = obj.get("roleRef")
        ref = ref if isinstance(ref, dict) else {}
        kind, name = ref.get("kind"), ref.get("name")
        kind = kind if isinstance(kind, str) else ""
        name = name if isinstance(name, str) else ""
        group = ref.get("apiGroup")
        resource = next((res for res, k in ROLE_RESOURCES.items() if k == kind), None)
        if resource is not None:
            bind = ResourceAccess(
                verb="bind",
                group=group if isinstance(group, str) else "",
                resource=resource,
                namespace=target.namespace,
                name=name,
            )
            if await self.reviewer.allowed(executor, bind):
                return True
        rules = await self._referenced_rules(kind, name, target.namespace)
        return await self._holds(executor, rules, target.namespace)

    async def _referenced_rules(self, kind: str, name: str, namespace: str) -> list[dict[str, Any]]:
        """The rules a roleRef grants; NotFound (an ordinary error) when it does not resolve."""
        if kind == "ClusterRole":
            role = await self.spoke.get(CLUSTER_ROLES, name)
            if not aggregation_selectors(role):
                return rules_of(role)
            # Resolve aggregation ourselves: the stored rules lag behind (or,
            # on an emulator without the aggregation controller, stay empty).
            listed = await self.spoke.list(CLUSTER_ROLES)
            return aggregated_rules(name, listed.get("items") or [])
        if kind == "Role":
            if not namespace:
                # A ClusterRoleBinding's Role is looked up in namespace "": never found.
                raise NotFound(404, "NotFound", f'roles.{RBAC_GROUP} "{name}" not found')
            return rules_of(await self.spoke.get(ROLES, name, namespace))
        raise ValueError(f'unsupported role reference kind: "{kind}"')

    async def _holds(
        self, executor: ServiceAccountExecutor, rules: Iterable[dict[str, Any]], namespace: str
    ) -> bool:
        for access in breakdown(rules, namespace):
            if not await self.reviewer.allowed(executor, access):
                return False
        return True
