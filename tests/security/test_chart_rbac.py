"""The charts grant what the specification says the components need, and nothing more.

Every rule of every Role and ClusterRole either chart renders, for every value
set the chart tests use, is compared with an explicit allow-list below; an
extra verb, resource, group, role or binding fails. Each allowed rule names
the part of the specification that needs it. Then the agent runs on exactly the
rights its chart grants (an API server enforcing RBAC: kubesim, and a real
kube-apiserver whose controller manager aggregates the chart's aggregated
role and the built-in ``admin`` it binds), proving the allow-list is also
enough.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    LEASES,
    MANIFESTWORKS,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    KubeClient,
)
from ocmkit.runtime import LeaderElectionSettings
from schemas.wire import GATE_EXECUTOR_VALIDATING_CACHES
from tests.charts.rendering import (
    AGENT_NAMESPACE,
    AGENT_VALUE_SETS,
    HUB_NAMESPACE,
    HUB_VALUE_SETS,
    Rendered,
    render_agent,
    render_hub,
)
from tests.conftest import eventually, pool_for
from tests.integration.conftest import (
    SPOKE_CRDS,
    exists,
    wait_applied,
    work_body,
)
from tests.support.prepare import (
    aggregate_cluster_roles,
    ensure_namespace,
    install_crds,
    is_kubesim,
    service_account_user,
    wait_allowed,
)
from tests.support.programs import CLUSTER, CRD_DIR, AgentRunner, agent_settings
from tests.support.targets import open_cluster
from workagent.settings import LEASE_NAME

Rule = tuple[str, str, frozenset[str]]  # (API group, resource, verbs)

WORK = "work.open-cluster-management.io"
CLUSTER_API = "cluster.open-cluster-management.io"
RBAC = "rbac.authorization.k8s.io"
READ = frozenset({"get", "list", "watch"})
WRITE = frozenset({"create", "update", "patch", "delete"})

# -- the work agent (charts/work-agent) ----------------------------------------------------

AGENT_ROLES: dict[str, set[Rule]] = {
    # The agent's own machinery.
    "work-agent:agent": {
        # agent.md §1 (AMW informer), §4.3 (create; spec patched), §8.2 (finalizer
        # removed by a merge patch), §15 (eviction deletes the AMW). No update: every
        # write is a patch with preconditions (§4.7).
        (WORK, "appliedmanifestworks", READ | {"create", "patch", "delete"}),
        # agent.md §4.7: the AMW status is written as a merge patch.
        (WORK, "appliedmanifestworks/status", frozenset({"patch"})),
        # agent.md §16 step 2: the executor check's SubjectAccessReviews; with the
        # TokenReviews, also who may read /metrics over HTTPS (library-go's delegated
        # authentication, docs/metrics.md).
        ("authorization.k8s.io", "subjectaccessreviews", frozenset({"create"})),
        ("authentication.k8s.io", "tokenreviews", frozenset({"create"})),
    },
    # What the works apply: agent.md §4.4 applies any manifest, so OCM binds `admin`
    # and adds what admin lacks. CRDs and namespaces (§4.4 rank 0), and RBAC objects
    # (rank 1) with bind/escalate so works may grant rights; read access to every
    # RBAC kind also serves the ExecutorValidatingCaches informers (§1, §16).
    "work-agent:execution": {
        ("apiextensions.k8s.io", "customresourcedefinitions", READ | WRITE),
        ("", "namespaces", WRITE),
        (RBAC, "clusterrolebindings", READ | WRITE),
        (RBAC, "rolebindings", READ | WRITE),
        (RBAC, "clusterroles", READ | WRITE | {"bind", "escalate"}),
        (RBAC, "roles", READ | WRITE | {"bind", "escalate"}),
    },
    # Filled by the aggregation controller, never by the chart.
    "work-agent:aggregate": set(),
    # agent.md §1: leader election with Lease work-agent-lock in the agent's namespace.
    # No events: the agent writes no Event objects (agent.md §18).
    "work-agent": {("coordination.k8s.io", "leases", frozenset({"get", "create", "update"}))},
}
AGENT_BINDINGS = {
    ("ClusterRoleBinding", "work-agent:agent"): ("ClusterRole", "work-agent:agent"),
    ("ClusterRoleBinding", "work-agent:aggregate"): ("ClusterRole", "work-agent:aggregate"),
    ("ClusterRoleBinding", "work-agent:execution-admin"): ("ClusterRole", "admin"),
    ("RoleBinding", "work-agent"): ("Role", "work-agent"),
}

# -- the hub (charts/hub-controller) -------------------------------------------------------

MANAGER = "hub-controller-manager"
WEBHOOK = "hub-controller-webhook"
EVENT_VERBS = frozenset({"create", "patch", "update"})
HUB_ROLES: dict[str, set[Rule]] = {
    # hub.md §1 "RBAC the controller needs", verb for verb.
    MANAGER: {
        (WORK, "manifestworks", READ | WRITE | {"deletecollection", "execute-as"}),
        (WORK, "manifestworkreplicasets", READ | {"update", "patch"}),
        (WORK, "manifestworkreplicasets/status", frozenset({"update", "patch"})),
        (WORK, "manifestworkreplicasets/finalizers", frozenset({"update"})),
        (CLUSTER_API, "placements", READ),
        (CLUSTER_API, "placementdecisions", READ),
        ("authorization.k8s.io", "subjectaccessreviews", frozenset({"create"})),
        # Who may read /metrics over HTTPS (docs/metrics.md), as OCM's cluster-manager grants.
        ("authentication.k8s.io", "tokenreviews", frozenset({"create"})),
        ("", "events", EVENT_VERBS),
        ("events.k8s.io", "events", EVENT_VERBS),
    },
    # hub.md §5.2: the webhook's only call is the execute-as SubjectAccessReview.
    WEBHOOK: {("authorization.k8s.io", "subjectaccessreviews", frozenset({"create"}))},
}
HUB_ROLE_IN_NAMESPACE: dict[str, set[Rule]] = {
    # hub.md §1: leader election with Lease work-manager-lock.
    MANAGER: {("coordination.k8s.io", "leases", frozenset({"get", "create", "update"}))},
}


def rules_of(role: dict[str, Any]) -> set[Rule]:
    """Every (group, resource, verbs) a role grants, one per group and resource."""
    found: set[Rule] = set()
    for rule in role.get("rules") or []:
        # Rules by name or by URL would widen or narrow in ways the lists do not say.
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                found.add((group, resource, frozenset(rule["verbs"])))
    return found


def roles_by_name(rendered: Rendered, kind: str) -> dict[str, set[Rule]]:
    """The rules of every rendered object of ``kind``, by name."""
    return {r["metadata"]["name"]: rules_of(r) for r in rendered.of_kind(kind)}


def bindings(rendered: Rendered) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, name) of every binding → (kind, name) of the role it grants."""
    return {
        (b["kind"], b["metadata"]["name"]): (b["roleRef"]["kind"], b["roleRef"]["name"])
        for b in (*rendered.of_kind("ClusterRoleBinding"), *rendered.of_kind("RoleBinding"))
    }


def extra_execution_rules(values: dict[str, Any]) -> set[Rule]:
    """The rules an operator adds on purpose with ``rbac.extraExecutionRules``."""
    return rules_of({"rules": values.get("rbac", {}).get("extraExecutionRules") or []})


@pytest.mark.parametrize("value_set", sorted(AGENT_VALUE_SETS))
def test_agent_chart_grants_only_the_allow_list(value_set: str) -> None:
    values = AGENT_VALUE_SETS[value_set]
    rendered = render_agent(values)
    expected = {name: set(rules) for name, rules in AGENT_ROLES.items()}
    expected["work-agent:execution"] |= extra_execution_rules(values)
    cluster_roles = roles_by_name(rendered, "ClusterRole")
    roles = roles_by_name(rendered, "Role")
    assert {**cluster_roles, **roles} == expected
    assert set(roles) == {"work-agent"}
    assert rendered.one("Role")["metadata"]["namespace"] == AGENT_NAMESPACE

    # Bindings grant these roles (and the execution role chosen in the values) to the
    # agent's own service account only.
    chosen = values.get("rbac", {}).get("executionClusterRole", "admin")
    expected_bindings = dict(AGENT_BINDINGS)
    expected_bindings[("ClusterRoleBinding", "work-agent:execution-admin")] = (
        "ClusterRole",
        chosen,
    )
    assert bindings(rendered) == expected_bindings
    account = rendered.one("ServiceAccount")["metadata"]["name"]
    for binding in (*rendered.of_kind("ClusterRoleBinding"), *rendered.of_kind("RoleBinding")):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": AGENT_NAMESPACE}
        ]


@pytest.mark.parametrize("value_set", sorted(HUB_VALUE_SETS))
def test_hub_chart_grants_only_the_allow_list(value_set: str) -> None:
    rendered = render_hub(HUB_VALUE_SETS[value_set])
    assert roles_by_name(rendered, "ClusterRole") == HUB_ROLES
    assert roles_by_name(rendered, "Role") == HUB_ROLE_IN_NAMESPACE
    assert all(r["metadata"]["namespace"] == HUB_NAMESPACE for r in rendered.of_kind("Role"))
    assert bindings(rendered) == {
        ("ClusterRoleBinding", MANAGER): ("ClusterRole", MANAGER),
        ("ClusterRoleBinding", WEBHOOK): ("ClusterRole", WEBHOOK),
        ("RoleBinding", MANAGER): ("Role", MANAGER),
    }
    for binding in (*rendered.of_kind("ClusterRoleBinding"), *rendered.of_kind("RoleBinding")):
        name = binding["roleRef"]["name"]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": name, "namespace": HUB_NAMESPACE}
        ]


# -- the allow-list is enough: the agent on exactly its chart's rights ---------------------

AGENT_USER = f"system:serviceaccount:{AGENT_NAMESPACE}:work-agent"
# Stands in on kubesim for the built-in `admin` the chart binds (kubesim ships no default
# roles): the rights over what the test's work applies. A real apiserver has its own.
CONTENT_ROLE = {
    "apiVersion": f"{RBAC}/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "admin"},
    "rules": [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": sorted(READ | WRITE),
        }
    ],
}


@pytest.fixture
async def spoke_with_chart_rbac(
    tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> AsyncIterator[KubeClient]:
    """A spoke enforcing RBAC (kubesim, or a real apiserver) whose only grants to the
    agent are its chart's.

    Writes ``tmp_path/spoke.kubeconfig`` with the agent's service-account identity
    and yields an admin client. The chart's aggregated ClusterRole (and, on a real
    apiserver, the built-in ``admin``) are waited for until aggregated.
    """
    async with open_cluster(target, pool_for(request, target), enforce_rbac=True) as cluster:
        admin = await KubeClient.from_kubeconfig(
            str(cluster.write_kubeconfig(tmp_path / "spoke-admin.kubeconfig")), qps=0, name="admin"
        )
        try:
            await install_crds(admin, [CRD_DIR / name for name in SPOKE_CRDS])
            for namespace in ("default", AGENT_NAMESPACE):
                await ensure_namespace(admin, namespace)
            if is_kubesim(cluster):
                await admin.create(CLUSTER_ROLES, CONTENT_ROLE)
            rendered = render_agent(AGENT_VALUE_SETS["default"])
            for kind, resource in (
                ("ServiceAccount", SERVICE_ACCOUNTS),
                ("ClusterRole", CLUSTER_ROLES),
                ("Role", ROLES),
                ("ClusterRoleBinding", CLUSTER_ROLE_BINDINGS),
                ("RoleBinding", ROLE_BINDINGS),
            ):
                for obj in rendered.of_kind(kind):
                    await admin.create(resource, obj, obj["metadata"].get("namespace"))
            bound = [b["roleRef"]["name"] for b in rendered.of_kind("ClusterRoleBinding")]
            await aggregate_cluster_roles(cluster, admin, bound)
            agent = await service_account_user(cluster, admin, AGENT_NAMESPACE, "work-agent")
            assert agent.name == AGENT_USER
            # One right from each binding: RBAC is in force for the agent.
            for verb, plural, group, namespace in (
                ("create", "subjectaccessreviews", "authorization.k8s.io", ""),
                ("list", "clusterroles", RBAC, ""),
                ("create", "configmaps", "", "default"),
                ("update", "leases", "coordination.k8s.io", AGENT_NAMESPACE),
            ):
                await wait_allowed(
                    admin, AGENT_USER, verb, plural, group=group, namespace=namespace
                )
            cluster.write_kubeconfig(tmp_path / "spoke.kubeconfig", token=agent.token)
            yield admin
        finally:
            await admin.close()


async def test_agent_runs_on_exactly_its_chart_rbac(
    hub_client: KubeClient, spoke_with_chart_rbac: KubeClient, tmp_path: Path
) -> None:
    """Leader election, AppliedManifestWork bookkeeping, executor reviews (with the
    RBAC informers of the caching gate), apply, status and deletion all work with
    the allow-listed rights alone."""
    spoke = spoke_with_chart_rbac
    settings = agent_settings(
        tmp_path,
        feature_gates=frozenset({GATE_EXECUTOR_VALIDATING_CACHES}),
        leader_election=LeaderElectionSettings(namespace=AGENT_NAMESPACE),
    )
    async with AgentRunner(settings) as runner:
        executor = {
            "subject": {
                "type": "ServiceAccount",
                "serviceAccount": {"namespace": AGENT_NAMESPACE, "name": "work-agent"},
            }
        }
        configmap = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm1", "namespace": "default"},
            "data": {"key": "value"},
        }
        await hub_client.create(MANIFESTWORKS, work_body("w1", [configmap], executor=executor))
        await wait_applied(hub_client, "w1")
        assert await exists(spoke, CONFIGMAPS, "cm1", "default")
        lease = await spoke.get(LEASES, LEASE_NAME, AGENT_NAMESPACE)
        assert lease["spec"]["holderIdentity"]

        async def recorded() -> bool:
            # The AMW is written after the work's status (spec 4.7): wait for it.
            items = (await spoke.list(APPLIED_MANIFESTWORKS))["items"]
            entries = [
                r for a in items for r in (a.get("status") or {}).get("appliedResources") or []
            ]
            return [e["name"] for e in entries] == ["cm1"]

        await eventually(recorded, what="the AMW to record cm1")

        await hub_client.delete(MANIFESTWORKS, "w1", CLUSTER)

        async def cleaned_up() -> bool:
            return not (
                await exists(hub_client, MANIFESTWORKS, "w1", CLUSTER)
                or await exists(spoke, CONFIGMAPS, "cm1", "default")
                or (await spoke.list(APPLIED_MANIFESTWORKS))["items"]
            )

        await eventually(cleaned_up, what="the work, its ConfigMap and its AMW deleted")
    assert runner.exit_code == 0
