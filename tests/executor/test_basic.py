"""The uncached validator against kubesim: SubjectAccessReviews per manifest (spec section 16)."""

from __future__ import annotations

from typing import Any

import pytest

from ocmkit.kube import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    KubeClient,
    Resource,
)
from schemas.work_v1 import ManifestWorkExecutor
from tests.executor.conftest import (
    NS,
    SA_NAME,
    SA_NS,
    CountingReviewer,
    cluster_role,
    cluster_role_binding,
    configmap,
    executor,
    role,
    role_binding,
    rule,
)
from workagent.executor import (
    NOT_ALLOWED_REQUEUE_SECONDS,
    BasicExecutorValidator,
    InvalidExecutorError,
    NotAllowedError,
    ResourceAccess,
    build_executor_validator,
)

CM_VERBS = ["create", "update", "patch", "get"]


async def validate(
    validator: BasicExecutorValidator,
    resource: Resource,
    obj: dict[str, Any],
    *,
    owned: bool = False,
    who: ManifestWorkExecutor | None = None,
) -> None:
    await validator.validate(
        who if who is not None else executor(),
        resource,
        obj,
        owned_by_work=owned,
    )


async def grant(spoke: KubeClient, name: str, rules: list[dict[str, Any]]) -> None:
    """Bind a Role with ``rules`` in namespace demo to the executor."""
    await spoke.create(ROLES, role(name, rules))
    await spoke.create(ROLE_BINDINGS, role_binding(name, name))


async def test_no_executor_is_allowed_without_any_review(spoke: KubeClient) -> None:
    reviewer = CountingReviewer(spoke)
    validator = BasicExecutorValidator(spoke, reviewer=reviewer)
    await validator.validate(None, CONFIGMAPS, configmap(), owned_by_work=True)
    assert reviewer.asked == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "only support ServiceAccount type for the executor"),
        ({"subject": {"type": "ServiceAccount"}}, "the executor service account is nil"),
    ],
)
async def test_subject_must_be_a_service_account(
    spoke: KubeClient, raw: dict[str, Any], message: str
) -> None:
    reviewer = CountingReviewer(spoke)
    validator = BasicExecutorValidator(spoke, reviewer=reviewer)
    with pytest.raises(InvalidExecutorError) as caught:
        await validate(
            validator, CONFIGMAPS, configmap(), who=ManifestWorkExecutor.model_validate(raw)
        )
    assert str(caught.value) == message
    # An ordinary error, not a NotAllowed one: retried with backoff.
    assert not isinstance(caught.value, NotAllowedError)
    assert reviewer.asked == []


async def test_subject_of_another_type_is_refused(spoke: KubeClient) -> None:
    # The schema rejects other types; a Go-built object could still carry one.
    who = executor()
    assert who.subject is not None
    subject = who.subject.model_copy(update={"type": "User"})
    who = who.model_copy(update={"subject": subject})
    with pytest.raises(
        InvalidExecutorError, match=r"^only support ServiceAccount type for the executor$"
    ):
        await validate(BasicExecutorValidator(spoke), CONFIGMAPS, configmap(), who=who)


async def test_denied_executor_gets_the_exact_not_allowed_message(spoke: KubeClient) -> None:
    reviewer = CountingReviewer(spoke)
    validator = BasicExecutorValidator(spoke, reviewer=reviewer)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
    }
    with pytest.raises(NotAllowedError) as caught:
        await validate(validator, DEPLOYMENTS, deployment)
    err = caught.value
    assert str(err) == (
        "not allowed to apply the resource apps deployments, demo web, will try again in 1m0s"
    )
    assert err.detail == "not allowed to apply the resource apps deployments, demo web"
    assert err.requeue_after == NOT_ALLOWED_REQUEUE_SECONDS == 60.0
    # The first denial stops the reviews; the review names the service account as OCM does.
    assert reviewer.asked == [
        ResourceAccess(
            verb="create",
            group="apps",
            version="v1",
            resource="deployments",
            namespace=NS,
            name="web",
        )
    ]


async def test_core_group_and_cluster_scope_render_as_go_does(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    with pytest.raises(NotAllowedError) as caught:
        await validate(validator, CONFIGMAPS, configmap("cm1"))
    # Core group: empty, so two spaces (Go's "%s %s, %s %s").
    assert str(caught.value) == (
        "not allowed to apply the resource  configmaps, demo cm1, will try again in 1m0s"
    )
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ns1", "namespace": NS},
    }
    with pytest.raises(NotAllowedError) as caught:
        await validate(validator, NAMESPACES, namespace)
    # Cluster-scoped: the manifest's namespace is ignored.
    assert str(caught.value) == (
        "not allowed to apply the resource  namespaces,  ns1, will try again in 1m0s"
    )


async def test_review_request_names_the_service_account(spoke: KubeClient) -> None:
    # A RoleBinding to system:serviceaccounts:<ns> only matches if the group list is sent.
    await spoke.create(ROLES, role("cm-writer", [rule([""], ["configmaps"], CM_VERBS)]))
    await spoke.create(
        ROLE_BINDINGS,
        role_binding(
            "by-group",
            "cm-writer",
            subjects=[
                {
                    "kind": "Group",
                    "name": f"system:serviceaccounts:{SA_NS}",
                    "apiGroup": "rbac.authorization.k8s.io",
                }
            ],
        ),
    )
    await validate(BasicExecutorValidator(spoke), CONFIGMAPS, configmap())
    # Another service account of another namespace is not in that group.
    with pytest.raises(NotAllowedError):
        await validate(
            BasicExecutorValidator(spoke), CONFIGMAPS, configmap(), who=executor("other", SA_NAME)
        )


async def test_granted_once_a_role_binding_exists(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    with pytest.raises(NotAllowedError):
        await validate(validator, CONFIGMAPS, configmap())
    await grant(spoke, "cm-writer", [rule([""], ["configmaps"], CM_VERBS)])
    await validate(validator, CONFIGMAPS, configmap())


async def test_every_apply_verb_is_required(spoke: KubeClient) -> None:
    reviewer = CountingReviewer(spoke)
    validator = BasicExecutorValidator(spoke, reviewer=reviewer)
    await grant(spoke, "no-patch", [rule([""], ["configmaps"], ["create", "update", "get"])])
    with pytest.raises(NotAllowedError):
        await validate(validator, CONFIGMAPS, configmap())
    assert [a.verb for a in reviewer.asked if isinstance(a, ResourceAccess)] == [
        "create",
        "update",
        "patch",
    ]


async def test_delete_is_required_only_when_the_work_owns_the_resource(spoke: KubeClient) -> None:
    reviewer = CountingReviewer(spoke)
    validator = BasicExecutorValidator(spoke, reviewer=reviewer)
    await grant(spoke, "cm-writer", [rule([""], ["configmaps"], CM_VERBS)])

    await validate(validator, CONFIGMAPS, configmap(), owned=False)
    assert [a.verb for a in reviewer.asked if isinstance(a, ResourceAccess)] == CM_VERBS

    reviewer.asked.clear()
    with pytest.raises(NotAllowedError) as caught:
        await validate(validator, CONFIGMAPS, configmap(), owned=True)
    assert str(caught.value) == (
        "not allowed to apply the resource  configmaps, demo cm1, will try again in 1m0s"
    )
    assert [a.verb for a in reviewer.asked if isinstance(a, ResourceAccess)] == [
        *CM_VERBS,
        "delete",
    ]

    await grant(spoke, "cm-deleter", [rule([""], ["configmaps"], ["delete"])])
    await validate(validator, CONFIGMAPS, configmap(), owned=True)


async def test_resource_names_restrict_the_grant(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await grant(spoke, "only-cm1", [rule([""], ["configmaps"], CM_VERBS, resourceNames=["cm1"])])
    await validate(validator, CONFIGMAPS, configmap("cm1"))
    with pytest.raises(NotAllowedError, match=r"demo cm2, will try again in 1m0s$"):
        await validate(validator, CONFIGMAPS, configmap("cm2"))


async def test_cluster_wide_grant_through_a_cluster_role_binding(spoke: KubeClient) -> None:
    validator = BasicExecutorValidator(spoke)
    await spoke.create(
        CLUSTER_ROLES, cluster_role("cm-all", [rule([""], ["configmaps"], CM_VERBS)])
    )
    await spoke.create(CLUSTER_ROLE_BINDINGS, cluster_role_binding("cm-all", "cm-all"))
    await validate(validator, CONFIGMAPS, configmap("x", namespace=SA_NS))


async def test_factory_picks_the_validator(spoke: KubeClient) -> None:
    basic = build_executor_validator(spoke, caching=False)
    assert isinstance(basic, BasicExecutorValidator)
    assert basic.informers() == [] and basic.controllers() == []
    cached = build_executor_validator(spoke, caching=True)
    assert {i.resource.plural for i in cached.informers()} == {
        "roles",
        "clusterroles",
        "rolebindings",
        "clusterrolebindings",
    }
    assert len(cached.controllers()) == 1
