"""ClusterRole aggregation: label selectors, aggregated rules, and who aggregates whom.

The API server's aggregation controller copies into a ClusterRole with an
``aggregationRule`` the rules of every other ClusterRole its selectors match
(transitively, once it has also filled those). The escalation check needs the
rules a binding would grant, and the cache needs to know which aggregated roles
a change to a labelled ClusterRole reaches; both are computed here from the
ClusterRoles themselves, so they do not depend on the controller having run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def selector_matches(selector: Any, labels: Mapping[str, Any]) -> bool:
    """``metav1.LabelSelector`` semantics; a malformed selector matches nothing.

    An empty selector matches everything, as ``LabelSelectorAsSelector`` does.
    """
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        return False
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    for expr in expressions:
        if not isinstance(expr, Mapping):
            return False
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or not isinstance(values, list):
            return False
        present = key in labels
        if op in ("In", "NotIn"):
            if not values or (present and labels[key] in values) != (op == "In"):
                return False
        elif op in ("Exists", "DoesNotExist"):
            if values or present != (op == "Exists"):
                return False
        else:
            return False
    return True


def aggregation_selectors(cluster_role: Mapping[str, Any]) -> list[Any]:
    """The ``aggregationRule.clusterRoleSelectors`` of a ClusterRole (empty: not aggregated)."""
    rule = cluster_role.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return []
    selectors = rule.get("clusterRoleSelectors")
    return list(selectors) if isinstance(selectors, list) else []


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object's labels (empty when absent or malformed)."""
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def rules_of(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An object's ``rules`` (the PolicyRules of a Role or ClusterRole)."""
    rules = obj.get("rules")
    return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


def name_of(obj: Mapping[str, Any]) -> str:
    """An object's name (empty when absent or malformed)."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def _selected_by(role: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the other ClusterRoles ``role``'s aggregation rule selects, in order."""
    own = name_of(role)
    found: list[str] = []
    for selector in aggregation_selectors(role):
        for other in others:
            name = name_of(other)
            # The controller never aggregates a role into itself.
            if name != own and name not in found and selector_matches(selector, labels_of(other)):
                found.append(name)
    return found


def aggregated_rules(name: str, cluster_roles: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rules ClusterRole ``name`` grants once aggregation converged (own rules first).

    Depth-first over the roles its selectors reach, duplicates dropped, cycles
    stopped. A role without an aggregation rule grants just its own rules.
    """
    by_name = {name_of(obj): obj for obj in cluster_roles}
    rules: list[dict[str, Any]] = []
    visited: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current in visited or current not in by_name:
            continue
        visited.add(current)
        for rule in rules_of(by_name[current]):
            if rule not in rules:
                rules.append(rule)
        stack.extend(reversed(_selected_by(by_name[current], by_name.values())))
    return rules


def aggregators_of(
    name: str, labels: Iterable[Mapping[str, Any]], cluster_roles: Iterable[Mapping[str, Any]]
) -> set[str]:
    """ClusterRoles whose granted rules include ClusterRole ``name``'s, directly or transitively.

    ``labels`` are the label sets the changed role had (before and after a
    change), since a role that lost a label stops contributing as much as one
    that gained it.
    """
    roles = [obj for obj in cluster_roles if aggregation_selectors(obj)]
    found: set[str] = set()
    frontier: list[tuple[str, Mapping[str, Any]]] = [(name, set_) for set_ in labels]
    while frontier:
        member, member_labels = frontier.pop()
        for role in roles:
            role_name = name_of(role)
            if role_name in found or role_name == member:
                continue
            if any(selector_matches(s, member_labels) for s in aggregation_selectors(role)):
                found.add(role_name)
                frontier.append((role_name, labels_of(role)))
    found.discard(name)
    return found
