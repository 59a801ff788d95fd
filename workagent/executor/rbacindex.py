"""Which executors an RBAC object concerns: binding subjects and role references.

The cache refresh maps each RBAC change to the executors whose permissions it
may change. A binding concerns the service accounts it names; a Role or
ClusterRole concerns whoever is bound to it (found through an index of the
bindings by ``roleRef``).

OCM looks only at ``ServiceAccount`` subjects. A binding also grants a
service account permissions through its ``User`` name and through the groups
every service-account token carries (``system:serviceaccounts``,
``system:serviceaccounts:<ns>``, ``system:authenticated``), so those subjects
concern executors too: missing them would keep a stale "denied" (or
"allowed") for up to the cleanup interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ocmkit.kube.access import (
    AUTHENTICATED_GROUP,
    SERVICE_ACCOUNT_USER_PREFIX,
    SERVICE_ACCOUNTS_GROUP,
)
from workagent.executor.aggregation import labels_of

ROLE_REF_INDEX = "executor-role-ref"


def _meta(obj: dict[str, Any], key: str) -> str:
    meta = obj.get("metadata")
    value = meta.get(key) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def role_key(kind: str, name: str, namespace: str = "") -> str:
    """``Role/<ns>/<name>`` or ``ClusterRole/<name>``: how bindings are indexed by roleRef."""
    return f"Role/{namespace}/{name}" if kind == "Role" else f"{kind}/{name}"


def role_key_of(role: dict[str, Any]) -> str:
    """The index key of a Role or ClusterRole object."""
    kind = role.get("kind")
    namespace = _meta(role, "namespace")
    # Informer caches fill in kind; fall back on scope for safety.
    if not isinstance(kind, str) or not kind:
        kind = "Role" if namespace else "ClusterRole"
    return role_key(kind, _meta(role, "name"), namespace)


def role_ref_keys(binding: dict[str, Any]) -> list[str]:
    """Index function: the role a RoleBinding or ClusterRoleBinding references.

    A RoleBinding's Role lives in the binding's namespace; a ClusterRoleBinding
    cannot reference a Role (it would be looked up in namespace "", never found).
    """
    ref = binding.get("roleRef")
    if not isinstance(ref, dict):
        return []
    kind, name = ref.get("kind"), ref.get("name")
    if not isinstance(name, str) or not name:
        return []
    namespace = _meta(binding, "namespace")
    if kind == "ClusterRole":
        return [role_key("ClusterRole", name)]
    if kind == "Role" and namespace:
        return [role_key("Role", name, namespace)]
    return []


@dataclass(frozen=True)
class BindingSubjects:
    """The service accounts a binding grants to."""

    accounts: frozenset[str]  # executor keys, ``namespace/name``
    namespaces: frozenset[str]  # every service account of these namespaces
    everyone: bool  # every service account

    def concerns(self, executor_key: str) -> bool:
        """Whether the binding grants anything to this executor."""
        if self.everyone or executor_key in self.accounts:
            return True
        namespace, _, _ = executor_key.partition("/")
        return namespace in self.namespaces


def binding_subjects(binding: dict[str, Any]) -> BindingSubjects:
    """Which service accounts a RoleBinding or ClusterRoleBinding grants to."""
    binding_namespace = _meta(binding, "namespace")
    accounts: set[str] = set()
    namespaces: set[str] = set()
    everyone = False
    subjects = binding.get("subjects")
    for subject in subjects if isinstance(subjects, list) else []:
        if not isinstance(subject, dict):
            continue
        kind, name = subject.get("kind"), subject.get("name")
        if not isinstance(name, str):
            continue
        if kind == "ServiceAccount":
            # The authorizer defaults a RoleBinding subject's namespace to the binding's.
            namespace = subject.get("namespace") or binding_namespace
            if isinstance(namespace, str) and namespace:
                accounts.add(f"{namespace}/{name}")
        elif kind == "User" and name.startswith(SERVICE_ACCOUNT_USER_PREFIX):
            namespace, sep, account = name[len(SERVICE_ACCOUNT_USER_PREFIX) :].partition(":")
            if sep:
                accounts.add(f"{namespace}/{account}")
        elif kind == "Group":
            if name in (SERVICE_ACCOUNTS_GROUP, AUTHENTICATED_GROUP):
                everyone = True
            elif name.startswith(f"{SERVICE_ACCOUNTS_GROUP}:"):
                namespaces.add(name[len(SERVICE_ACCOUNTS_GROUP) + 1 :])
    return BindingSubjects(frozenset(accounts), frozenset(namespaces), everyone)


def binding_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether an update can change what the binding grants (subjects or roleRef)."""
    return old.get("subjects") != new.get("subjects") or old.get("roleRef") != new.get("roleRef")


def role_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether an update can change what a role grants: its rules, its aggregation rule,
    or its labels (which decide the aggregated ClusterRoles it contributes to)."""
    return (
        old.get("rules") != new.get("rules")
        or old.get("aggregationRule") != new.get("aggregationRule")
        or labels_of(old) != labels_of(new)
    )
