"""ClusterRole aggregation, as kube-controller-manager's clusterrole-aggregation controller does it.

A ClusterRole with an ``aggregationRule`` gets, as its ``rules``, the rules of
every other ClusterRole its selectors match: selector by selector, the roles
in name order, each rule once (a rule already collected is skipped). When that
differs from its current rules the controller applies them (server-side apply,
field manager ``clusterrole-aggregation-controller``, forced); with no rules
to aggregate it applies none, so ``rules`` goes back to ``null``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesim.errors import ApiError
from kubesim.selectors import label_selector_from_api

FIELD_MANAGER = "clusterrole-aggregation-controller"
# The fields of a PolicyRule, in its Go struct order (as they are stored).
_RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def _normal(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A rule as the API stores it: known fields in order, empty lists dropped."""
    return {key: list(rule[key]) for key in _RULE_FIELDS if rule.get(key)}


def aggregated_rules(
    role: Mapping[str, Any], roles: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]] | None:
    """The rules ``role`` aggregates from ``roles``; None when it has no aggregationRule."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return None
    name = (role.get("metadata") or {}).get("name")
    by_name = sorted(roles, key=lambda r: str((r.get("metadata") or {}).get("name", "")))
    collected: list[dict[str, Any]] = []
    for selector in rule.get("clusterRoleSelectors") or []:
        if not isinstance(selector, Mapping):
            continue
        try:
            matches = label_selector_from_api(selector)
        except ApiError:
            continue  # the controller gives up on the role; validation refuses such selectors
        for other in by_name:
            meta = other.get("metadata") or {}
            if meta.get("name") == name or not matches.matches(meta.get("labels")):
                continue
            for found in other.get("rules") or []:
                if isinstance(found, Mapping) and _normal(found) not in collected:
                    collected.append(_normal(found))
    return collected


def needs_update(role: Mapping[str, Any], rules: list[dict[str, Any]]) -> bool:
    """Whether ``rules`` differ from the role's (nil and empty are the same)."""
    current = [_normal(r) for r in role.get("rules") or [] if isinstance(r, Mapping)]
    return current != rules


def apply_body(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """The controller's apply configuration: the name and the rules (none: no field)."""
    body: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
    }
    if rules:
        body["rules"] = rules
    return body
