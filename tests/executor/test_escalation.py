"""The RBAC escalation check for Role, ClusterRole and binding manifests (spec section 16 step 3)."""

from __future__ import annotations

from typing import Any

import pytest

from ocmkit.kube import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    ROLE_BINDINGS,
    ROLES,
    KubeClient,
    NotFound,
    Resource,
)
from tests.executor.conftest import (
    NS,
    cluster_role,
    cluster_role_binding,
    executor,
    role,
    role_binding,
    rule,
)
from workagent.executor import BasicExecutorValidator, NotAllowedError

APPLY = ["create", "update", "patch", "get"]
RBAC_GROUP = "rbac.authorization.k8s.io"


async def validate(
    validator: BasicExecutorValidator, resource: Resource, obj: dict[str, Any]
) -> None:
    await validator.validate(executor(), resource, obj, owned_by_work=False)


async def grant(spoke: KubeClient, name: str, rules: list[dict[str, Any]]) -> None:
    """Bind a Role with ``rules`` in namespace demo to the executor."""
    await spoke.create(ROLES, role(name, rules))
    await spoke.create(ROLE_BINDINGS, role_binding(name, name))


async def grant_cluster(spoke: KubeClient, name: str, rules: list[dict[str, Any]]) -> None:
    """Bind a ClusterRole with ``rules`` cluster-wide to the executor."""
    await spoke.create(CLUSTER_ROLES, cluster_role(name, rules))
    await spoke.create(CLUSTER_ROLE_BINDINGS, cluster_role_binding(name, name))


SECRET_READER = role("secret-reader", [rule([""], ["secrets"], ["get", "list"])])
ESCALATION = (
    "not allowed to apply the resource rbac.authorization.k8s.io roles, demo secret-reader, "
    "error: permission escalation, will try again in 1m0s"
)


async def test_role_granting_more_than_the_executor_holds_is_refused(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    # May write Roles, but holds nothing of what the Role grants.
    await grant(spoke, "role-writer", [rule([RBAC_GROUP], ["roles"], APPLY)])
    with pytest.raises(NotAllowedError) as caught:
        await validate(validator, ROLES, SECRET_READER)
    assert str(caught.value) == ESCALATION
    assert caught.value.requeue_after == 60.0

    # Holding only part of it is still an escalation.
    await grant(spoke, "secret-getter", [rule([""], ["secrets"], ["get"])])
    with pytest.raises(NotAllowedError, match="error: permission escalation"):
        await validate(validator, ROLES, SECRET_READER)

    # Holding all of it is not.
    await grant(spoke, "secret-lister", [rule([""], ["secrets"], ["list"])])
    await validate(validator, ROLES, SECRET_READER)


async def test_sar_denial_comes_before_the_escalation_check(spoke: KubeClient) -> None:
    with pytest.raises(NotAllowedError) as caught:
        await validate(BasicExecutorValidator(spoke), ROLES, SECRET_READER)
    assert str(caught.value) == (
        "not allowed to apply the resource rbac.authorization.k8s.io roles, demo secret-reader, "
        "will try again in 1m0s"
    )


async def test_escalate_verb_allows_any_role(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant(spoke, "role-escalator", [rule([RBAC_GROUP], ["roles"], [*APPLY, "escalate"])])
    await validate(validator, ROLES, SECRET_READER)


async def test_wildcards_in_a_role_need_wildcards(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant(spoke, "role-writer", [rule([RBAC_GROUP], ["roles"], APPLY)])
    await grant(spoke, "secrets-all-verbs", [rule([""], ["secrets"], ["get", "list", "watch"])])
    star = role("secrets-star", [rule([""], ["secrets"], ["*"])])
    with pytest.raises(NotAllowedError, match="error: permission escalation"):
        await validate(validator, ROLES, star)
    await grant(spoke, "secrets-star-holder", [rule([""], ["secrets"], ["*"])])
    await validate(validator, ROLES, star)


async def test_binding_needs_bind_or_the_referenced_permissions(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await spoke.create(ROLES, SECRET_READER)
    await grant(spoke, "binding-writer", [rule([RBAC_GROUP], ["rolebindings"], APPLY)])
    binding = role_binding(
        "read-secrets", "secret-reader", subjects=[{"kind": "User", "name": "bob"}]
    )
    with pytest.raises(NotAllowedError) as caught:
        await validate(validator, ROLE_BINDINGS, binding)
    assert str(caught.value) == (
        "not allowed to apply the resource rbac.authorization.k8s.io rolebindings, demo read-secrets, "
        "error: permission escalation, will try again in 1m0s"
    )
    # ``bind`` on exactly that role.
    await grant(
        spoke,
        "binder",
        [rule([RBAC_GROUP], ["roles"], ["bind"], resourceNames=["secret-reader"])],
    )
    await validate(validator, ROLE_BINDINGS, binding)


async def test_binding_allowed_when_the_executor_holds_the_role(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await spoke.create(ROLES, SECRET_READER)
    await grant(spoke, "binding-writer", [rule([RBAC_GROUP], ["rolebindings"], APPLY)])
    await grant(spoke, "secret-reader-holder", [rule([""], ["secrets"], ["get", "list"])])
    binding = role_binding(
        "read-secrets", "secret-reader", subjects=[{"kind": "User", "name": "bob"}]
    )
    await validate(validator, ROLE_BINDINGS, binding)


async def test_binding_to_a_missing_role_is_an_ordinary_error(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant(spoke, "binding-writer", [rule([RBAC_GROUP], ["rolebindings"], APPLY)])
    binding = role_binding("dangling", "no-such-role", subjects=[{"kind": "User", "name": "bob"}])
    with pytest.raises(NotFound):
        await validate(validator, ROLE_BINDINGS, binding)


async def test_cluster_role_binding_to_an_aggregated_role(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant_cluster(spoke, "crb-writer", [rule([RBAC_GROUP], ["clusterrolebindings"], APPLY)])
    await spoke.create(
        CLUSTER_ROLES,
        cluster_role(
            "aggregate",
            [],
            aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]},
        ),
    )
    await spoke.create(
        CLUSTER_ROLES,
        cluster_role("part", [rule([""], ["secrets"], ["get"])], labels={"agg": "yes"}),
    )
    binding = cluster_role_binding(
        "bind-aggregate", "aggregate", subjects=[{"kind": "User", "name": "bob"}]
    )
    # The aggregated rules count, though the stored aggregate has none.
    with pytest.raises(
        NotAllowedError, match="clusterrolebindings,  bind-aggregate, error: permission escalation"
    ):
        await validate(validator, CLUSTER_ROLE_BINDINGS, binding)
    await grant_cluster(spoke, "secret-getter", [rule([""], ["secrets"], ["get"])])
    await validate(validator, CLUSTER_ROLE_BINDINGS, binding)


async def test_aggregation_rule_requires_cluster_admin(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant_cluster(spoke, "cr-writer", [rule([RBAC_GROUP], ["clusterroles"], APPLY)])
    aggregated = cluster_role(
        "aggregated", [], aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}
    )
    with pytest.raises(
        NotAllowedError, match="clusterroles,  aggregated, error: permission escalation"
    ):
        await validate(validator, CLUSTER_ROLES, aggregated)
    await grant_cluster(
        spoke,
        "admin",
        [rule(["*"], ["*"], ["*"]), {"nonResourceURLs": ["*"], "verbs": ["*"]}],
    )
    await validate(validator, CLUSTER_ROLES, aggregated)


async def test_non_resource_urls_and_subresources(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant_cluster(spoke, "cr-writer", [rule([RBAC_GROUP], ["clusterroles"], APPLY)])
    wanted = cluster_role(
        "health-and-logs",
        [rule([""], ["pods/log"], ["get"]), {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
    )
    with pytest.raises(NotAllowedError):
        await validate(validator, CLUSTER_ROLES, wanted)
    await grant_cluster(spoke, "logs", [rule([""], ["pods/log"], ["get"])])
    with pytest.raises(NotAllowedError):
        await validate(validator, CLUSTER_ROLES, wanted)
    await grant_cluster(spoke, "health", [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}])
    await validate(validator, CLUSTER_ROLES, wanted)


async def test_non_rbac_manifests_skip_the_escalation_check(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant(spoke, "cm-writer", [rule([""], ["configmaps"], APPLY)])
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": NS}}
    await validate(validator, CONFIGMAPS, cm)
