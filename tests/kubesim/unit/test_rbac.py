"""Tests for kubesim.rbac: the RBAC authorizer, access reviews and denial messages."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from kubesim.errors import ApiError
from kubesim.rbac import (
    Attributes,
    Decision,
    RbacAuthorizer,
    describe_denial,
    subject_access_review,
)
from tests.fixtures import APISERVER_RECORDINGS
from tests.kubesim.recordings import as_v135

RBAC = "rbac.authorization.k8s.io"
RECORDING = APISERVER_RECORDINGS / "authorization.json"

Obj = dict[str, Any]


class Store:
    """An in-memory lister that counts how often it is asked."""

    def __init__(self, *objs: Obj) -> None:
        self.objs: list[Obj] = list(objs)
        self.calls = 0

    def __call__(self, group: str, plural: str) -> Iterable[Mapping[str, Any]]:
        assert group == RBAC
        self.calls += 1
        kind = {
            "clusterroles": "ClusterRole",
            "roles": "Role",
            "clusterrolebindings": "ClusterRoleBinding",
            "rolebindings": "RoleBinding",
        }[plural]
        return [o for o in self.objs if o["kind"] == kind]


def rule(
    verbs: list[str],
    resources: list[str] | None = None,
    groups: list[str] | None = None,
    names: list[str] | None = None,
    urls: list[str] | None = None,
) -> Obj:
    out: Obj = {"verbs": verbs}
    if urls is not None:
        out["nonResourceURLs"] = urls
    else:
        out["apiGroups"] = [""] if groups is None else groups
        out["resources"] = resources or []
    if names is not None:
        out["resourceNames"] = names
    return out


def cluster_role(
    name: str,
    *rules: Obj,
    labels: dict[str, str] | None = None,
    selectors: list[Obj] | None = None,
) -> Obj:
    obj: Obj = {
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": list(rules),
    }
    if selectors is not None:
        obj["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return obj


def role(namespace: str, name: str, *rules: Obj) -> Obj:
    return {
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": list(rules),
    }


def user(name: str) -> Obj:
    return {"kind": "User", "apiGroup": RBAC, "name": name}


def group(name: str) -> Obj:
    return {"kind": "Group", "apiGroup": RBAC, "name": name}


def service_account(name: str, namespace: str | None = None) -> Obj:
    out: Obj = {"kind": "ServiceAccount", "name": name}
    if namespace is not None:
        out["namespace"] = namespace
    return out


def crb(name: str, role_name: str, *subjects: Obj, kind: str = "ClusterRole") -> Obj:
    return {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role_name},
        "subjects": list(subjects),
    }


def rb(namespace: str, name: str, kind: str, role_name: str, *subjects: Obj) -> Obj:
    return {
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role_name},
        "subjects": list(subjects),
    }


def attrs(
    verb: str,
    resource: str = "",
    *,
    who: str = "alice",
    groups: tuple[str, ...] = (),
    namespace: str = "",
    name: str = "",
    api_group: str = "",
    subresource: str = "",
) -> Attributes:
    return Attributes(
        user=who,
        groups=groups,
        verb=verb,
        api_group=api_group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def url(verb: str, path: str, *, who: str = "alice", groups: tuple[str, ...] = ()) -> Attributes:
    return Attributes(user=who, groups=groups, verb=verb, path=path, resource_request=False)


def allowed(authz: RbacAuthorizer, a: Attributes) -> bool:
    return authz.authorize(a).allowed


# ---------------------------------------------------------------------------
# Bindings and subjects


def test_cluster_role_binding_allows_everywhere_with_apiserver_reason() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("reader", rule(["get", "list"], ["configmaps"])),
            crb("alice-reads", "reader", user("alice")),
        )
    )
    decision = authz.authorize(attrs("get", "configmaps", namespace="ns1", name="c"))
    assert decision == Decision(
        True,
        'RBAC: allowed by ClusterRoleBinding "alice-reads" of ClusterRole "reader" to User "alice"',
    )
    assert allowed(authz, attrs("list", "configmaps"))  # cluster scope too
    assert authz.authorize(attrs("delete", "configmaps", namespace="ns1")) == Decision(False, "")
    assert not allowed(authz, attrs("get", "configmaps", who="bob", namespace="ns1"))


def test_role_binding_grants_role_only_in_its_namespace() -> None:
    authz = RbacAuthorizer(
        Store(
            role("ns1", "editor", rule(["create"], ["configmaps"])),
            role("ns2", "editor", rule(["*"], ["*"], ["*"])),
            rb("ns1", "alice-edits", "Role", "editor", user("alice")),
        )
    )
    decision = authz.authorize(attrs("create", "configmaps", namespace="ns1"))
    assert decision.reason == (
        'RBAC: allowed by RoleBinding "alice-edits/ns1" of Role "editor" to User "alice"'
    )
    # The ns1 binding uses the ns1 Role, never the broader ns2 one.
    assert not allowed(authz, attrs("delete", "configmaps", namespace="ns1"))
    assert not allowed(authz, attrs("create", "configmaps", namespace="ns2"))
    assert not allowed(authz, attrs("create", "configmaps"))


def test_role_binding_to_cluster_role_is_scoped_to_the_binding_namespace() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["pods"])),
            rb("ns1", "alice-view", "ClusterRole", "view", user("alice")),
        )
    )
    assert authz.authorize(attrs("get", "pods", namespace="ns1")).reason == (
        'RBAC: allowed by RoleBinding "alice-view/ns1" of ClusterRole "view" to User "alice"'
    )
    assert not allowed(authz, attrs("get", "pods", namespace="ns2"))
    assert not allowed(authz, attrs("get", "pods"))


def test_cluster_role_bindings_are_visited_before_role_bindings() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["pods"])),
            rb("ns1", "a-first-by-name", "ClusterRole", "view", user("alice")),
            crb("z-last-by-name", "view", user("alice")),
        )
    )
    reason = authz.authorize(attrs("get", "pods", namespace="ns1")).reason
    assert reason.startswith('RBAC: allowed by ClusterRoleBinding "z-last-by-name"')


def test_group_subjects_and_implicit_authenticated_group() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["pods"])),
            cluster_role("discovery", rule(["get"], urls=["/version"])),
            crb("devs-view", "view", group("devs")),
            crb("everyone-discovers", "discovery", group("system:authenticated")),
        )
    )
    decision = authz.authorize(attrs("get", "pods", groups=("devs",), namespace="n"))
    assert decision.reason == (
        'RBAC: allowed by ClusterRoleBinding "devs-view" of ClusterRole "view" to Group "devs"'
    )
    assert not allowed(authz, attrs("get", "pods", groups=("ops",), namespace="n"))
    # Every authenticated user is in system:authenticated even if not passed...
    assert allowed(authz, url("get", "/version"))
    # ...but the anonymous user is not.
    anonymous = url("get", "/version", who="system:anonymous", groups=("system:unauthenticated",))
    assert not allowed(authz, anonymous)


def test_reason_names_the_first_matching_subject_of_the_binding() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["pods"])),
            crb("b", "view", user("bob"), group("devs"), user("alice")),
        )
    )
    reason = authz.authorize(attrs("get", "pods", groups=("devs",))).reason
    assert reason.endswith('to Group "devs"')


def test_service_account_subjects() -> None:
    sa_user = "system:serviceaccount:ns1:robot"
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["pods"])),
            cluster_role("edit", rule(["update"], ["pods"])),
            cluster_role("nuke", rule(["delete"], ["pods"])),
            crb("robot-view", "view", service_account("robot", "ns1")),
            # No namespace on the subject: defaults to the RoleBinding's namespace...
            rb("ns1", "robot-edit", "ClusterRole", "edit", service_account("robot")),
            # ...while a ClusterRoleBinding has none to default to, so it never matches.
            crb("robot-nuke", "nuke", service_account("robot")),
        )
    )
    assert authz.authorize(attrs("get", "pods", who=sa_user, namespace="ns2")).reason == (
        'RBAC: allowed by ClusterRoleBinding "robot-view" of ClusterRole "view" '
        'to ServiceAccount "robot/ns1"'
    )
    assert authz.authorize(attrs("update", "pods", who=sa_user, namespace="ns1")).reason == (
        'RBAC: allowed by RoleBinding "robot-edit/ns1" of ClusterRole "edit" '
        'to ServiceAccount "robot/ns1"'
    )
    assert not allowed(authz, attrs("delete", "pods", who=sa_user, namespace="ns1"))
    # Same name, other namespace: a different service account.
    other = "system:serviceaccount:ns2:robot"
    assert not allowed(authz, attrs("get", "pods", who=other, namespace="ns1"))
    # A plain user named like the account is not the account.
    assert not allowed(authz, attrs("get", "pods", who="robot", namespace="ns1"))


def test_superusers_and_supergroups_allow_everything_without_reason() -> None:
    store = Store()
    authz = RbacAuthorizer(store, superusers=["root"])
    masters = attrs("delete", "nodes", who="admin", groups=("system:masters",))
    assert authz.authorize(masters) == Decision(True, "")
    assert authz.authorize(url("post", "/anything", who="root")) == Decision(True, "")
    assert not allowed(authz, attrs("get", "pods", who="bob"))
    custom = RbacAuthorizer(store, supergroups=["admins"])
    assert not allowed(custom, masters)
    assert allowed(custom, attrs("get", "pods", groups=("admins",)))


def test_missing_roles_are_reported_in_the_denial_reason() -> None:
    authz = RbacAuthorizer(
        Store(
            crb("gone", "no-such-role", user("alice")),
            crb("gone-again", "no-such-role", user("alice")),
            rb("ns1", "local", "Role", "missing", user("alice")),
            crb("cluster-to-role", "some-role", user("alice"), kind="Role"),
            crb("other-user", "absent", user("bob")),
        )
    )
    assert authz.authorize(attrs("get", "pods")) == Decision(
        False,
        'RBAC: [role.rbac.authorization.k8s.io "some-role" not found, '
        'clusterrole.rbac.authorization.k8s.io "no-such-role" not found]',
    )
    assert authz.authorize(attrs("get", "pods", namespace="ns1")).reason == (
        'RBAC: [role.rbac.authorization.k8s.io "some-role" not found, '
        'clusterrole.rbac.authorization.k8s.io "no-such-role" not found, '
        'role.rbac.authorization.k8s.io "missing" not found]'
    )
    # Bindings that do not apply to the user add no errors.
    assert authz.authorize(attrs("get", "pods", who="carol")) == Decision(False, "")
    single = RbacAuthorizer(Store(crb("x", "absent", user("bob"))))
    assert single.authorize(attrs("get", "pods", who="bob")).reason == (
        'RBAC: clusterrole.rbac.authorization.k8s.io "absent" not found'
    )
    odd = RbacAuthorizer(Store(crb("x", "r", user("bob"), kind="Thing")))
    assert odd.authorize(attrs("get", "pods", who="bob")).reason == (
        'RBAC: unsupported role reference kind: "Thing"'
    )


# ---------------------------------------------------------------------------
# Rule matching


def single_rule(r: Obj) -> RbacAuthorizer:
    return RbacAuthorizer(Store(cluster_role("r", r), crb("b", "r", user("alice"))))


def test_verb_wildcard() -> None:
    authz = single_rule(rule(["*"], ["pods"]))
    for verb in ("get", "list", "watch", "create", "deletecollection", "escalate"):
        assert allowed(authz, attrs(verb, "pods"))
    assert not allowed(authz, attrs("get", "secrets"))


def test_api_groups() -> None:
    core = single_rule(rule(["get"], ["deployments"], groups=[""]))
    assert allowed(core, attrs("get", "deployments"))
    assert not allowed(core, attrs("get", "deployments", api_group="apps"))
    apps = single_rule(rule(["get"], ["deployments"], groups=["apps", "extensions"]))
    assert allowed(apps, attrs("get", "deployments", api_group="extensions"))
    anywhere = single_rule(rule(["get"], ["deployments"], groups=["*"]))
    assert allowed(anywhere, attrs("get", "deployments", api_group="example.com"))
    assert allowed(anywhere, attrs("get", "deployments"))
    none = single_rule(rule(["get"], ["deployments"], groups=[]))
    assert not allowed(none, attrs("get", "deployments"))


def test_resource_wildcard_covers_subresources() -> None:
    authz = single_rule(rule(["get"], ["*"], groups=["*"]))
    assert allowed(authz, attrs("get", "pods"))
    assert allowed(authz, attrs("get", "pods", subresource="log"))


def test_resource_and_subresource_forms() -> None:
    plain = single_rule(rule(["get"], ["pods"]))
    assert allowed(plain, attrs("get", "pods"))
    # Access to a resource does not extend to its subresources.
    assert not allowed(plain, attrs("get", "pods", subresource="log"))

    exact = single_rule(rule(["get"], ["pods/log"]))
    assert allowed(exact, attrs("get", "pods", subresource="log"))
    assert not allowed(exact, attrs("get", "pods"))
    assert not allowed(exact, attrs("get", "pods", subresource="exec"))

    any_status = single_rule(rule(["update"], ["*/status"], groups=["*"]))
    assert allowed(any_status, attrs("update", "pods", subresource="status"))
    assert allowed(
        any_status, attrs("update", "deployments", subresource="status", api_group="apps")
    )
    assert not allowed(any_status, attrs("update", "deployments", api_group="apps"))
    assert not allowed(any_status, attrs("update", "pods", subresource="log"))


def test_resource_slash_star_is_literal_as_in_the_apiserver() -> None:
    # rbac/v1 ResourceMatches knows "*", exact matches and "*/sub" only:
    # "pods/*" grants neither pods nor any of their subresources.
    authz = single_rule(rule(["get"], ["pods/*"]))
    assert not allowed(authz, attrs("get", "pods", subresource="log"))
    assert not allowed(authz, attrs("get", "pods"))


def test_resource_names() -> None:
    authz = single_rule(
        rule(["get", "list", "create", "update", "delete"], ["configmaps"], names=["a", "b"])
    )
    assert allowed(authz, attrs("get", "configmaps", namespace="n", name="a"))
    assert allowed(authz, attrs("update", "configmaps", namespace="n", name="b"))
    assert not allowed(authz, attrs("get", "configmaps", namespace="n", name="c"))
    # Requests without a name never match a rule restricted to names.
    assert not allowed(authz, attrs("list", "configmaps", namespace="n"))
    assert not allowed(authz, attrs("create", "configmaps", namespace="n"))
    empty = single_rule(rule(["get"], ["configmaps"], names=[]))
    assert allowed(empty, attrs("get", "configmaps", namespace="n", name="anything"))


def test_non_resource_urls() -> None:
    authz = single_rule(rule(["get"], urls=["/healthz", "/apis/*", "/logs**"]))
    assert allowed(authz, url("get", "/healthz"))
    assert not allowed(authz, url("get", "/healthz/ready"))
    assert not allowed(authz, url("post", "/healthz"))
    assert allowed(authz, url("get", "/apis/"))
    assert allowed(authz, url("get", "/apis/apps/v1"))
    assert not allowed(authz, url("get", "/apis"))
    assert allowed(authz, url("get", "/logs/kube.log"))
    everything = single_rule(rule(["*"], urls=["*"]))
    assert allowed(everything, url("put", "/whatever"))
    # A URL rule never grants resources, and a resource rule never grants URLs.
    assert not allowed(everything, attrs("get", "pods"))
    assert not allowed(single_rule(rule(["*"], ["*"], ["*"])), url("get", "/healthz"))


def test_role_bindings_never_grant_non_resource_urls() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("urls", rule(["get"], urls=["*"])),
            rb("ns1", "b", "ClusterRole", "urls", user("alice")),
        )
    )
    assert not allowed(authz, url("get", "/healthz"))


# ---------------------------------------------------------------------------
# Aggregation


def test_aggregated_cluster_role_gains_matching_roles_rules() -> None:
    store = Store(
        cluster_role(
            "monitoring",
            rule(["get"], urls=["/metrics"]),
            selectors=[{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}],
        ),
        cluster_role(
            "pods-reader",
            rule(["get"], ["pods"]),
            labels={"rbac.example.com/aggregate-to-monitoring": "true"},
        ),
        cluster_role(
            "other",
            rule(["get"], ["secrets"]),
            labels={"rbac.example.com/aggregate-to-monitoring": "false"},
        ),
        crb("alice-monitors", "monitoring", user("alice")),
    )
    authz = RbacAuthorizer(store)
    assert authz.authorize(attrs("get", "pods", namespace="n")).reason == (
        'RBAC: allowed by ClusterRoleBinding "alice-monitors" of ClusterRole "monitoring" '
        'to User "alice"'
    )
    assert allowed(authz, url("get", "/metrics"))  # its own rules are kept
    assert not allowed(authz, attrs("get", "secrets", namespace="n"))
    # Labelling a role aggregates it once the server invalidates the cache.
    store.objs[2]["metadata"]["labels"]["rbac.example.com/aggregate-to-monitoring"] = "true"
    assert not allowed(authz, attrs("get", "secrets", namespace="n"))
    authz.invalidate()
    assert allowed(authz, attrs("get", "secrets", namespace="n"))


@pytest.mark.parametrize(
    ("expression", "matches"),
    [
        ({"key": "tier", "operator": "In", "values": ["gold", "silver"]}, {"gold"}),
        ({"key": "tier", "operator": "NotIn", "values": ["gold"]}, {"bronze", "unlabelled"}),
        ({"key": "tier", "operator": "Exists"}, {"gold", "bronze"}),
        ({"key": "tier", "operator": "DoesNotExist"}, {"unlabelled"}),
        ({"key": "tier", "operator": "In", "values": []}, set()),  # invalid selector
        ({"key": "tier", "operator": "Exists", "values": ["x"]}, set()),  # invalid selector
        ({"key": "tier", "operator": "Gt", "values": ["1"]}, set()),  # unknown operator
    ],
)
def test_aggregation_match_expressions(expression: Obj, matches: set[str]) -> None:
    resources = {"gold": "pods", "bronze": "secrets", "unlabelled": "nodes"}
    authz = RbacAuthorizer(
        Store(
            cluster_role("agg", selectors=[{"matchExpressions": [expression]}]),
            cluster_role("gold", rule(["get"], ["pods"]), labels={"tier": "gold"}),
            cluster_role("bronze", rule(["get"], ["secrets"]), labels={"tier": "bronze"}),
            cluster_role("unlabelled", rule(["get"], ["nodes"])),
            crb("b", "agg", user("alice")),
        )
    )
    granted = {name for name, res in resources.items() if allowed(authz, attrs("get", res))}
    assert granted == matches


def test_aggregation_selectors_are_or_ed_and_labels_and_expressions_and_ed() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role(
                "agg",
                selectors=[
                    {
                        "matchLabels": {"a": "1"},
                        "matchExpressions": [{"key": "b", "operator": "Exists"}],
                    },
                    {"matchLabels": {"c": "1"}},
                ],
            ),
            cluster_role("both", rule(["get"], ["pods"]), labels={"a": "1", "b": "x"}),
            cluster_role("only-a", rule(["get"], ["secrets"]), labels={"a": "1"}),
            cluster_role("c", rule(["get"], ["nodes"]), labels={"c": "1"}),
            crb("b", "agg", user("alice")),
        )
    )
    assert allowed(authz, attrs("get", "pods"))
    assert not allowed(authz, attrs("get", "secrets"))
    assert allowed(authz, attrs("get", "nodes"))


def test_nested_and_cyclic_aggregation() -> None:
    # admin aggregates edit, which itself aggregates the "to-edit" roles: the
    # converged state the controller reaches gives admin those rules too.
    authz = RbacAuthorizer(
        Store(
            cluster_role("admin", selectors=[{"matchLabels": {"to-admin": "true"}}]),
            cluster_role(
                "edit",
                selectors=[{"matchLabels": {"to-edit": "true"}}],
                labels={"to-admin": "true"},
            ),
            cluster_role(
                "crd-editor",
                rule(["update"], ["widgets"], ["example.com"]),
                labels={"to-edit": "true"},
            ),
            # A cycle (each selects the other, and itself) must terminate.
            cluster_role(
                "x",
                rule(["get"], ["x"]),
                labels={"loop": "1"},
                selectors=[{"matchLabels": {"loop": "1"}}],
            ),
            cluster_role(
                "y",
                rule(["get"], ["y"]),
                labels={"loop": "1"},
                selectors=[{"matchLabels": {"loop": "1"}}],
            ),
            # An empty selector matches every other ClusterRole.
            cluster_role("all", selectors=[{}]),
            crb("b1", "admin", user("alice")),
            crb("b2", "x", user("bob")),
            crb("b3", "all", user("carol")),
        )
    )
    assert allowed(authz, attrs("update", "widgets", api_group="example.com", namespace="n"))
    assert allowed(authz, attrs("get", "x", who="bob"))
    assert allowed(authz, attrs("get", "y", who="bob"))
    assert allowed(authz, attrs("get", "y", who="carol"))
    assert allowed(authz, attrs("update", "widgets", api_group="example.com", who="carol"))


def test_aggregation_through_a_cycle_reaches_every_role() -> None:
    # p selects q and r; q selects p. Once the controller has settled, q holds
    # p's aggregated rules, r's included.
    authz = RbacAuthorizer(
        Store(
            cluster_role("p", labels={"to-q": "1"}, selectors=[{"matchLabels": {"to-p": "1"}}]),
            cluster_role(
                "q",
                rule(["get"], ["q"]),
                labels={"to-p": "1"},
                selectors=[{"matchLabels": {"to-q": "1"}}],
            ),
            cluster_role("r", rule(["get"], ["r"]), labels={"to-p": "1"}),
            crb("b", "q", user("alice")),
        )
    )
    assert allowed(authz, attrs("get", "q"))
    assert allowed(authz, attrs("get", "r"))
    assert authz.rules_for("alice", [], "") == [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["q"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["r"]},
    ]


# ---------------------------------------------------------------------------
# Caching and rules_for


def test_bindings_are_cached_until_invalidated() -> None:
    store = Store(cluster_role("view", rule(["get"], ["pods"])))
    authz = RbacAuthorizer(store)
    assert not allowed(authz, attrs("get", "pods"))
    calls = store.calls
    assert calls == 4  # one listing per RBAC resource
    for i in range(50):
        authz.authorize(attrs("get", "pods", name=f"p{i}", namespace="n"))
    assert store.calls == calls
    store.objs.append(crb("b", "view", user("alice")))
    assert not allowed(authz, attrs("get", "pods"))  # stale until invalidated
    authz.invalidate()
    assert allowed(authz, attrs("get", "pods"))
    assert store.calls == 2 * calls


def test_rules_for_lists_effective_rules() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("discovery", rule(["get"], urls=["/api", "/api/*"])),
            cluster_role("view", rule(["get", "list"], ["pods"], names=["p"])),
            role("ns1", "cm", rule(["create"], ["configmaps"])),
            crb("disc", "discovery", group("system:authenticated")),
            rb("ns1", "cm", "Role", "cm", user("alice")),
            rb("ns1", "view", "ClusterRole", "view", user("alice")),
            rb("ns1", "gone", "Role", "missing", user("alice")),
            rb("ns2", "other", "Role", "cm", user("alice")),
        )
    )
    assert authz.rules_for("alice", [], "ns1") == [
        {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]},
        {"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]},
        {
            "verbs": ["get", "list"],
            "apiGroups": [""],
            "resources": ["pods"],
            "resourceNames": ["p"],
        },
    ]
    assert authz.rules_for("alice", [], "") == [
        {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]}
    ]
    assert authz.rules_for("system:anonymous", [], "ns1") == []
    assert authz.rules_for("root", ["system:masters"], "")[:2] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ]


# ---------------------------------------------------------------------------
# Denial messages


def test_describe_denial_forms() -> None:
    assert describe_denial(attrs("get", "configmaps", who="u", namespace="ns")) == (
        'User "u" cannot get resource "configmaps" in API group "" in the namespace "ns"'
    )
    assert describe_denial(attrs("list", "nodes", who="u")) == (
        'User "u" cannot list resource "nodes" in API group "" at the cluster scope'
    )
    status = attrs(
        "update", "deployments", who="u", namespace="ns", api_group="apps", subresource="status"
    )
    assert describe_denial(status) == (
        'User "u" cannot update resource "deployments/status" in API group "apps" '
        'in the namespace "ns"'
    )
    assert describe_denial(url("get", "/x", who="u")) == 'User "u" cannot get path "/x"'
    assert describe_denial(url("get", "/x", who='we"ird\n')) == (
        'User "we\\"ird\\n" cannot get path "/x"'
    )
    assert describe_denial(url("get", "/x", who="u"), "RBAC: oops") == (
        'User "u" cannot get path "/x": RBAC: oops'
    )


# ---------------------------------------------------------------------------
# Access reviews


def sar(spec: Obj, kind: str = "SubjectAccessReview", **extra: Any) -> Obj:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec, **extra}


def test_recorded_subject_access_review_is_denied_identically() -> None:
    exchange = json.loads(RECORDING.read_text())["exchanges"][0]
    expected = as_v135(copy.deepcopy(exchange["response"]["body"]))
    del expected["metadata"]["managedFields"]  # kubesim omits them
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["configmaps"])),
            crb("sa-view", "view", service_account("sa", "capture-1795328638")),
        )
    )
    got = subject_access_review(exchange["request"]["body"], authz, requesting_user="admin")
    assert json.dumps(got) == json.dumps(expected)  # same keys, same order


def test_subject_access_review_allowed_with_reason_and_verbatim_groups() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["pods"])),
            cluster_role("all-urls", rule(["get"], urls=["*"])),
            crb("view", "view", user("alice")),
            crb("urls", "all-urls", group("system:authenticated")),
        )
    )
    body = sar(
        {
            "user": "alice",
            "resourceAttributes": {
                "verb": "get",
                "resource": "pods",
                "namespace": "n",
                "group": "",
                "version": "v1",
                "unknown": "dropped",
            },
            "extra": {"scopes": ["a"]},
            "uid": "42",
        }
    )
    got = subject_access_review(body, authz, requesting_user="admin")
    assert got == {
        "kind": "SubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": {
            "resourceAttributes": {
                "namespace": "n",
                "verb": "get",
                "version": "v1",
                "resource": "pods",
            },
            "user": "alice",
            "extra": {"scopes": ["a"]},
            "uid": "42",
        },
        "status": {
            "allowed": True,
            "reason": 'RBAC: allowed by ClusterRoleBinding "view" of ClusterRole "view" '
            'to User "alice"',
        },
    }
    # The spec's groups are taken as given: no implied system:authenticated.
    url_body = sar({"user": "alice", "nonResourceAttributes": {"path": "/healthz", "verb": "get"}})
    got = subject_access_review(url_body, authz, requesting_user="admin")
    assert got["status"] == {"allowed": False}
    assert got["spec"] == {
        "nonResourceAttributes": {"path": "/healthz", "verb": "get"},
        "user": "alice",
    }
    url_body["spec"]["groups"] = ["system:authenticated"]
    assert subject_access_review(url_body, authz, requesting_user="admin")["status"]["allowed"]
    # A group alone is a valid subject; system:masters is always allowed.
    masters = sar(
        {
            "groups": ["system:masters"],
            "resourceAttributes": {"verb": "delete", "resource": "nodes"},
        }
    )
    assert subject_access_review(masters, authz, requesting_user="admin")["status"] == {
        "allowed": True
    }


def test_self_subject_access_review_checks_the_requester() -> None:
    authz = RbacAuthorizer(
        Store(
            cluster_role("view", rule(["get"], ["pods"])),
            crb("devs", "view", group("devs")),
        )
    )
    body = sar(
        {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "n"}},
        kind="SelfSubjectAccessReview",
    )
    got = subject_access_review(body, authz, requesting_user="dan", requesting_groups=["devs"])
    assert got == {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "n", "verb": "get", "resource": "pods"}},
        "status": {
            "allowed": True,
            "reason": 'RBAC: allowed by ClusterRoleBinding "devs" of ClusterRole "view" '
            'to Group "devs"',
        },
    }
    denied = subject_access_review(body, authz, requesting_user="eve", requesting_groups=["ops"])
    assert denied["status"] == {"allowed": False}


def test_local_subject_access_review() -> None:
    authz = RbacAuthorizer(
        Store(
            role("ns1", "cm", rule(["create"], ["configmaps"])),
            rb("ns1", "cm", "Role", "cm", user("alice")),
        )
    )
    spec = {
        "user": "alice",
        "resourceAttributes": {"namespace": "ns1", "verb": "create", "resource": "configmaps"},
    }
    got = subject_access_review(
        sar(spec, "LocalSubjectAccessReview"), authz, requesting_user="x", url_namespace="ns1"
    )
    assert got["kind"] == "LocalSubjectAccessReview"
    assert got["metadata"] == {"namespace": "ns1"}
    assert got["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "cm/ns1" of Role "cm" to User "alice"',
    }
    # The kind follows from the URL when the body does not say.
    body = {"spec": spec}
    assert subject_access_review(body, authz, requesting_user="x", url_namespace="ns1")["kind"] == (
        "LocalSubjectAccessReview"
    )


def invalid(body: Obj, **kwargs: Any) -> ApiError:
    authz = RbacAuthorizer(Store())
    with pytest.raises(ApiError) as info:
        subject_access_review(body, authz, requesting_user="admin", **kwargs)
    return info.value


def test_sar_validation_missing_everything() -> None:
    err = invalid(sar({}))
    assert err.code == 422
    assert err.reason == "Invalid"
    # v1.35 names no kind and shows the nil attributes as null.
    assert err.message == (
        '.authorization.k8s.io "" is invalid: ['
        "spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes "
        "or resourceAttributes must be specified, "
        'spec.user: Invalid value: "": at least one of user or group must be specified]'
    )
    assert err.details == {
        "group": "authorization.k8s.io",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: null: exactly one of nonResourceAttributes or "
                "resourceAttributes must be specified",
                "field": "spec.resourceAttributes",
            },
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "": at least one of user or group must be specified',
                "field": "spec.user",
            },
        ],
    }
    # JSON null attributes count as missing.
    err = invalid(sar({"user": "a", "resourceAttributes": None}))
    assert [c["field"] for c in (err.details or {})["causes"]] == ["spec.resourceAttributes"]


def test_sar_validation_both_attribute_kinds() -> None:
    err = invalid(
        sar(
            {
                "user": "a",
                "resourceAttributes": {"verb": "get"},
                "nonResourceAttributes": {"path": "/x", "verb": "get"},
            }
        )
    )
    assert err.message == (
        '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: '
        'Invalid value: {"Path":"/x","Verb":"get"}: '
        "cannot be specified in combination with resourceAttributes"
    )


def test_self_sar_validation_needs_no_user() -> None:
    err = invalid(sar({}, kind="SelfSubjectAccessReview"))
    assert err.message == (
        '.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
        "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes "
        "must be specified"
    )


def test_sar_validation_metadata_must_be_empty() -> None:
    body = sar(
        {"user": "a", "resourceAttributes": {}},
        metadata={"name": "x", "labels": {"b": "2", "a": "1"}, "managedFields": [{}]},
    )
    err = invalid(body)
    causes = (err.details or {})["causes"]
    assert [c["field"] for c in causes] == ["metadata"]
    # The metadata's JSON, as v1.35 shows a bad struct value (map keys sorted).
    assert causes[0]["message"] == (
        'Invalid value: {"name":"x","labels":{"a":"1","b":"2"},"managedFields":[{}]}: must be empty'
    )
    # Only managedFields, a null timestamp or a namespace (cleared for the
    # cluster-scoped kinds) are fine.
    ok = sar(
        {"user": "a", "resourceAttributes": {}},
        metadata={"creationTimestamp": None, "managedFields": [{}], "namespace": "n"},
    )
    got = subject_access_review(ok, RbacAuthorizer(Store()), requesting_user="admin")
    assert got["metadata"] == {}
    assert got["spec"]["resourceAttributes"] == {}


def test_local_sar_namespace_checks() -> None:
    spec = {
        "user": "a",
        "resourceAttributes": {"namespace": "other", "verb": "get", "resource": "pods"},
    }
    # metadata.namespace defaults to the URL's; the spec must then agree with it.
    err = invalid(sar(spec, "LocalSubjectAccessReview"), url_namespace="ns1")
    assert err.code == 422
    assert err.message == (
        '.authorization.k8s.io "" is invalid: '
        'spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace'
    )
    # A metadata.namespace that contradicts the URL is a 400 from the create handler.
    body = sar(spec, "LocalSubjectAccessReview", metadata={"namespace": "other"})
    err = invalid(body, url_namespace="ns1")
    assert err.code == 400
    assert err.reason == "BadRequest"
    assert err.message == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )
    # Without a URL namespace the review cannot be answered.
    err = invalid(body)
    assert (err.code, err.message) == (400, "namespace is required on this type: ")
    # Non-resource attributes make no sense in a namespace.
    url_spec = {"user": "a", "nonResourceAttributes": {"path": "/x", "verb": "get"}}
    err = invalid(sar(url_spec, "LocalSubjectAccessReview"), url_namespace="ns1")
    assert err.message == (
        '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: '
        'Invalid value: {"Path":"/x","Verb":"get"}: '
        "disallowed on this kind of request"
    )


def test_unknown_review_kind_is_a_bad_request() -> None:
    err = invalid(sar({"user": "a", "resourceAttributes": {}}, kind="SelfSubjectRulesReview"))
    assert err.code == 400
