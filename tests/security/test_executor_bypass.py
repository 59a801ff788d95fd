"""The executor check of agent.md §16 cannot be bypassed through the running agent.

tests/executor/ proves the validators decide right; this module proves the
agent asks them on every path a work can take to the managed cluster: every
update strategy (including ReadOnly, and CreateOnly or ServerSideApply over a
pre-existing object), ownership (``delete`` is needed for what the work will
delete), a CRD shipped together with its custom resources, and RBAC manifests
that would hand the executor more than it holds. A refused manifest leaves
the cluster untouched and its condition says why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import (
    CLUSTER_ROLES,
    CONFIGMAPS,
    CRDS,
    MANIFESTWORKS,
    ROLE_BINDINGS,
    ROLES,
    KubeClient,
    Resource,
)
from schemas.wire import GATE_EXECUTOR_VALIDATING_CACHES
from tests.conftest import eventually
from tests.integration.conftest import (
    exists,
    get_work,
    manifest_condition,
    manifest_statuses,
    wait_applied,
    work_body,
)
from tests.support.crds import crd
from tests.support.manifests import manifest_config
from tests.support.programs import AgentRunner, agent_settings

SA_NS, SA_NAME = "default", "limited"
RBAC = "rbac.authorization.k8s.io"
WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)
NOT_ALLOWED = "Failed to apply manifest: not allowed to apply the resource"
ESCALATION = "error: permission escalation, will try again in 1m0s"


def executor() -> dict[str, Any]:
    """The spec.executor of every work here: the service account default/limited."""
    return {
        "subject": {
            "type": "ServiceAccount",
            "serviceAccount": {"namespace": SA_NS, "name": SA_NAME},
        }
    }


def configmap(name: str, **data: str) -> dict[str, Any]:
    """A ConfigMap manifest in ``default``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data or {"owner": "work"},
    }


def strategy_config(name: str, update_strategy: dict[str, Any]) -> dict[str, Any]:
    """A manifestConfig giving ConfigMap default/``name`` an update strategy."""
    return manifest_config("", "configmaps", name, strategy=update_strategy)


async def grant(spoke: KubeClient, name: str, rules: list[dict[str, Any]]) -> None:
    """A Role in ``default`` with ``rules``, bound to the executor."""
    await spoke.create(
        ROLES,
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": name}, "rules": rules},
        "default",
    )
    await spoke.create(
        ROLE_BINDINGS,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NS}],
        },
        "default",
    )


def rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    """A PolicyRule."""
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


@pytest.fixture(params=[False, True], ids=["reviews", "cached-reviews"])
async def agent(
    request: pytest.FixtureRequest,
    hub_client: KubeClient,
    spoke_client: KubeClient,
    tmp_path: Path,
) -> AsyncIterator[AgentRunner]:
    """The agent, with and without the ExecutorValidatingCaches gate."""
    gates = frozenset({GATE_EXECUTOR_VALIDATING_CACHES}) if request.param else frozenset()
    async with AgentRunner(agent_settings(tmp_path, feature_gates=gates)) as runner:
        yield runner


def applied_message(work: dict[str, Any], ordinal: int) -> tuple[str, str, str]:
    """(status, reason, message) of a manifest's Applied condition."""
    cond = manifest_condition(work, ordinal, "Applied")
    assert cond is not None, manifest_statuses(work)
    return cond["status"], cond["reason"], cond["message"]


def refused(work: dict[str, Any], ordinal: int, target: str, *, escalation: bool = False) -> bool:
    """Whether manifest ``ordinal`` was refused by the executor check for ``target``.

    ``target`` is Go's ``<group> <resource>, <namespace> <name>``.
    """
    tail = ESCALATION if escalation else "will try again in 1m0s"
    return applied_message(work, ordinal) == (
        "False",
        "AppliedManifestFailed",
        f"{NOT_ALLOWED} {target}, {tail}",
    )


async def test_every_update_strategy_is_checked(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """No strategy skips the check: not ReadOnly (which writes nothing), not CreateOnly
    or ServerSideApply over objects that exist already (they would still add the
    work's owner reference), and read rights alone are not enough for ReadOnly,
    as OCM asks for create, update, patch and get whatever the strategy."""
    await grant(spoke_client, "read-configmaps", [rule([""], ["configmaps"], ["get", "list"])])
    before = {}
    for name in ("existing-create-only", "existing-ssa", "existing-read-only"):
        before[name] = await spoke_client.create(
            CONFIGMAPS, configmap(name, owner="someone-else"), "default"
        )
    manifests = [
        configmap("update"),
        configmap("create-only"),
        configmap("existing-create-only"),
        configmap("ssa"),
        configmap("existing-ssa"),
        configmap("existing-read-only"),
        configmap("read-only"),
    ]
    configs = [
        strategy_config("create-only", {"type": "CreateOnly"}),
        strategy_config("existing-create-only", {"type": "CreateOnly"}),
        strategy_config("ssa", {"type": "ServerSideApply"}),
        strategy_config(
            "existing-ssa",
            {
                "type": "ServerSideApply",
                "serverSideApply": {
                    "force": True,
                    "ignoreFields": [{"condition": "OnSpokePresent", "jsonPaths": [".data.owner"]}],
                },
            },
        ),
        strategy_config("existing-read-only", {"type": "ReadOnly"}),
        strategy_config("read-only", {"type": "ReadOnly"}),
    ]
    await hub_client.create(
        MANIFESTWORKS,
        work_body("strategies", manifests, executor=executor(), manifestConfigs=configs),
    )
    work = await wait_applied(hub_client, "strategies", status="False")
    for ordinal, manifest in enumerate(manifests):
        name = manifest["metadata"]["name"]
        assert refused(work, ordinal, f" configmaps, default {name}"), applied_message(
            work, ordinal
        )
    for name in ("update", "create-only", "ssa", "read-only"):
        assert not await exists(spoke_client, CONFIGMAPS, name, "default"), name
    for name, old in before.items():
        live = await spoke_client.get(CONFIGMAPS, name, "default")
        assert live["metadata"]["resourceVersion"] == old["metadata"]["resourceVersion"], name
        assert "ownerReferences" not in live["metadata"], name


async def test_delete_right_is_needed_for_what_the_work_would_delete(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """Without ``delete`` an executor could have the agent delete an object on its
    behalf (the work owns what it applies): refused unless the work orphans it."""
    await grant(
        spoke_client,
        "write-configmaps",
        [rule([""], ["configmaps"], ["get", "list", "create", "update", "patch"])],
    )
    await hub_client.create(
        MANIFESTWORKS, work_body("owned", [configmap("owned")], executor=executor())
    )
    orphaning = {
        "propagationPolicy": "SelectivelyOrphan",
        "selectivelyOrphans": {
            "orphaningRules": [
                {"group": "", "resource": "configmaps", "namespace": "default", "name": "kept"}
            ]
        },
    }
    await hub_client.create(
        MANIFESTWORKS,
        work_body(
            "orphaning",
            [configmap("kept"), configmap("also-owned")],
            executor=executor(),
            deleteOption=orphaning,
        ),
    )
    await hub_client.create(
        MANIFESTWORKS,
        work_body(
            "orphan-all",
            [configmap("orphaned")],
            executor=executor(),
            deleteOption={"propagationPolicy": "Orphan"},
        ),
    )
    owned = await wait_applied(hub_client, "owned", status="False")
    assert refused(owned, 0, " configmaps, default owned")
    partly = await wait_applied(hub_client, "orphaning", status="False")
    assert applied_message(partly, 0)[0] == "True"
    assert refused(partly, 1, " configmaps, default also-owned")
    await wait_applied(hub_client, "orphan-all")
    assert not await exists(spoke_client, CONFIGMAPS, "owned", "default")
    assert not await exists(spoke_client, CONFIGMAPS, "also-owned", "default")

    # What was applied without delete rights is not deleted with the work.
    await hub_client.delete(MANIFESTWORKS, "orphan-all", "cluster1")

    async def work_gone() -> bool:
        return not await exists(hub_client, MANIFESTWORKS, "orphan-all", "cluster1")

    await eventually(work_gone, what="work orphan-all deleted")
    live = await spoke_client.get(CONFIGMAPS, "orphaned", "default")
    assert "ownerReferences" not in live["metadata"]


def widget_crd() -> dict[str, Any]:
    """The CRD of ``widgets.example.com`` (namespaced, v1)."""
    return crd("example.com", "Widget")


def widget(name: str) -> dict[str, Any]:
    """A Widget in ``default``."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 1},
    }


ALL_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]


async def test_crd_then_its_custom_resources(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """A right to create the CRD is no right to its resources: the agent learns the
    new kind in the same pass (agent.md §4.4 ordering) and checks it too."""
    await spoke_client.create(
        CLUSTER_ROLES,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "crds-only"},
            "rules": [rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], ALL_VERBS)],
        },
    )
    await spoke_client.create(
        Resource(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "crds-only"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "crds-only"},
            "subjects": [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NS}],
        },
    )
    # The custom resource first in the spec: the CRD still goes first (rank 0).
    await hub_client.create(
        MANIFESTWORKS,
        work_body("crd", [widget("w1"), widget_crd()], executor=executor()),
    )
    work = await wait_applied(hub_client, "crd", status="False")
    target = "example.com widgets, default w1"

    # A real apiserver may serve the new kind only after the first pass has reported it
    # unknown; the refusal then comes with a later pass, which must still be a refusal.
    async def refusal_reported() -> bool:
        nonlocal work
        work = await get_work(hub_client, "crd")
        return manifest_condition(work, 0, "Applied") is not None and refused(work, 0, target)

    await eventually(refusal_reported, what="the executor's refusal of the custom resource")
    assert applied_message(work, 1)[0] == "True"
    assert refused(work, 0, target)
    assert await exists(spoke_client, CRDS, "widgets.example.com")
    assert not await exists(spoke_client, WIDGETS, "w1", "default")


async def test_rbac_manifests_cannot_grant_more_than_the_executor_holds(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """An executor allowed to write Roles and RoleBindings (no ``escalate``, no
    ``bind``) gets none of: a Role with rights it lacks, a binding of a powerful
    ClusterRole to itself, and so none of what that binding would have allowed
    later in the same work. A Role within its own rights is fine."""
    await grant(
        spoke_client,
        "rbac-writer",
        [rule([RBAC], ["roles", "rolebindings"], ALL_VERBS)],
    )
    await spoke_client.create(
        CLUSTER_ROLES,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "powerful"},
            "rules": [rule(["*"], ["*"], ["*"])],
        },
    )
    self_binding = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "self-promotion", "namespace": "default"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "powerful"},
        "subjects": [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": SA_NS}],
    }
    secrets_reader = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": "secrets-reader", "namespace": "default"},
        "rules": [rule([""], ["secrets"], ["get"])],
    }
    within_rights = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": "roles-reader", "namespace": "default"},
        "rules": [rule([RBAC], ["roles"], ["get"])],
    }
    cluster_role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "anything"},
        "rules": [rule([""], ["configmaps"], ["get"])],
    }
    await hub_client.create(
        MANIFESTWORKS,
        work_body(
            "escalation",
            # The ConfigMap would be allowed only if the binding had been created.
            [configmap("after"), self_binding, secrets_reader, within_rights, cluster_role],
            executor=executor(),
        ),
    )
    work = await wait_applied(hub_client, "escalation", status="False")
    assert refused(work, 0, " configmaps, default after")
    assert refused(work, 1, f"{RBAC} rolebindings, default self-promotion", escalation=True)
    assert refused(work, 2, f"{RBAC} roles, default secrets-reader", escalation=True)
    assert applied_message(work, 3)[0] == "True"
    # No right on ClusterRoles at all: refused before any escalation check.
    assert refused(work, 4, f"{RBAC} clusterroles,  anything")
    assert not await exists(spoke_client, ROLE_BINDINGS, "self-promotion", "default")
    assert not await exists(spoke_client, ROLES, "secrets-reader", "default")
    assert not await exists(spoke_client, CONFIGMAPS, "after", "default")
    assert not await exists(spoke_client, CLUSTER_ROLES, "anything")
    assert await exists(spoke_client, ROLES, "roles-reader", "default")
