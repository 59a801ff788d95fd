"""Pure helpers of the deletion algorithm: entry -> resource, messages, aggregated errors."""

from __future__ import annotations

from ocmkit.kube import ServerError, TooManyRequests
from workagent.controllers.deletion import (
    DeletionFailed,
    ResourceDeletionError,
    describe_entry,
    resource_of,
)

DEPLOYMENT = {
    "group": "apps",
    "version": "v1",
    "resource": "deployments",
    "namespace": "ns1",
    "name": "web",
    "uid": "u1",
}
CLUSTER_ROLE = {
    "group": "rbac.authorization.k8s.io",
    "version": "v1",
    "resource": "clusterroles",
    "namespace": "",
    "name": "reader",
    "uid": "u2",
}


def test_resource_of_uses_the_recorded_scope() -> None:
    deployments = resource_of(DEPLOYMENT)
    assert (deployments.group, deployments.version, deployments.plural) == (
        "apps",
        "v1",
        "deployments",
    )
    assert deployments.namespaced
    assert not resource_of(CLUSTER_ROLE).namespaced
    core = resource_of({**DEPLOYMENT, "group": "", "resource": "configmaps"})
    assert core.base_path == "/api/v1"


def test_describe_entry() -> None:
    assert describe_entry(DEPLOYMENT) == "deployments.apps/v1 ns1/web"
    assert describe_entry(CLUSTER_ROLE) == "clusterroles.rbac.authorization.k8s.io/v1 reader"
    assert describe_entry({**DEPLOYMENT, "group": ""}) == "deployments/v1 ns1/web"


def test_errors_name_the_resource_and_keep_retry_after() -> None:
    throttled = TooManyRequests(429, "TooManyRequests", "slow down", retry_after=3.0)
    first = ResourceDeletionError(DEPLOYMENT, "delete", throttled)
    assert (
        str(first) == "failed to delete deployments.apps/v1 ns1/web: 429 TooManyRequests: slow down"
    )
    assert first.retry_after == 3.0
    second = ResourceDeletionError(CLUSTER_ROLE, "get", ServerError(500, "InternalError", "boom"))
    assert second.retry_after is None

    combined = DeletionFailed([first, second])
    assert combined.retry_after == 3.0
    assert str(combined) == f"{first}; {second}"
    assert DeletionFailed([second]).retry_after is None
