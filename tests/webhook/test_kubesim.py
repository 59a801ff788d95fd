"""``execute-as`` checks against an API server's RBAC: the real SubjectAccessReview path.

Each test runs against kubesim and against a real kube-apiserver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hubcontroller.webhook import (
    MANIFESTWORK,
    ExecuteAsRequest,
    HubAccessReviewer,
    UserInfo,
    ValidationOptions,
    validate,
)
from kubesim.sim import KubeSim
from ocmkit.kube import (
    CLUSTER_ROLES,
    NAMESPACES,
    ROLE_BINDINGS,
    KubeClient,
    KubeError,
)
from ocmkit.kube.access import ServiceAccount
from schemas import wire
from tests.conftest import pool_for
from tests.support.prepare import service_account_user, wait_allowed
from tests.support.targets import Cluster, open_cluster
from tests.webhook.conftest import client_context, local_settings, post, running
from tests.webhook.helpers import (
    CLUSTER,
    MW_PATH,
    ServingCert,
    bad_request,
    executor,
    manifest_work,
    response,
    review,
)

RBAC = "rbac.authorization.k8s.io/v1"


def _execute_as_role(name: str, *service_accounts: str) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "apiGroups": ["work.open-cluster-management.io"],
        "resources": ["manifestworks"],
        "verbs": ["execute-as"],
    }
    if service_accounts:
        rule["resourceNames"] = [f"system:serviceaccount:{sa}" for sa in service_accounts]
    return {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": [rule]}


def _binding(
    name: str, role: str, subject: dict[str, Any], namespace: str = CLUSTER
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }


def _user(name: str) -> dict[str, Any]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


@pytest.fixture
async def hub(cluster: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """The webhook's hub client (the cluster's admin) with the RBAC of the scenario.

    alice may run works as ns1/sa1 in cluster1; group team-a may use any
    executor in cluster1; bob has nothing.
    """
    client = await KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"), qps=0, name="hub")
    try:
        for namespace in (CLUSTER, "cluster2"):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        await client.create(CLUSTER_ROLES, _execute_as_role("execute-as-sa1", "ns1:sa1"))
        await client.create(CLUSTER_ROLES, _execute_as_role("execute-as-any"))
        await client.create(ROLE_BINDINGS, _binding("alice-sa1", "execute-as-sa1", _user("alice")))
        team = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-a"}
        await client.create(ROLE_BINDINGS, _binding("team-a-any", "execute-as-any", team))
        # A real apiserver's authorizer sees new bindings a moment later.
        for user, groups in (("alice", ()), ("carol", ("team-a",))):
            await wait_allowed(
                client,
                user,
                "execute-as",
                "manifestworks",
                group="work.open-cluster-management.io",
                namespace=CLUSTER,
                name="system:serviceaccount:ns1:sa1",
                groups=groups,
            )
        yield client
    finally:
        await client.close()


def _ask(
    username: str, namespace: str = CLUSTER, sa: str = "ns1:sa1", groups: tuple[str, ...] = ()
) -> ExecuteAsRequest:
    sa_namespace, sa_name = sa.split(":")
    return ExecuteAsRequest(
        UserInfo(username=username, groups=groups), namespace, ServiceAccount(sa_namespace, sa_name)
    )


async def test_reviewer_follows_rbac(hub: KubeClient) -> None:
    reviewer = HubAccessReviewer(hub)
    assert await reviewer(_ask("alice")) is True
    assert await reviewer(_ask("alice", sa="ns1:sa2")) is False  # another executor
    assert await reviewer(_ask("alice", namespace="cluster2")) is False  # another cluster
    assert await reviewer(_ask("bob")) is False
    assert await reviewer(_ask("carol", sa="ns9:other", groups=("team-a",))) is True


async def test_refused_user_is_told_exactly_why(hub: KubeClient) -> None:
    work = manifest_work(executor=executor("ns1", "sa1"))
    answer = await validate(review("CREATE", work, username="bob"), sar=HubAccessReviewer(hub))
    assert response(answer)["status"] == bad_request(
        "user bob cannot manipulate the Manifestwork with executor ns1/sa1 in namespace cluster1"
    )
    answer = await validate(review("CREATE", work, username="alice"), sar=HubAccessReviewer(hub))
    assert response(answer)["allowed"] is True


async def test_nil_executor_gate_against_rbac(hub: KubeClient) -> None:
    options = ValidationOptions(feature_gates=frozenset({wire.GATE_NIL_EXECUTOR_VALIDATING}))
    answer = await validate(
        review("CREATE", manifest_work(), username="alice"),
        sar=HubAccessReviewer(hub),
        options=options,
        resource=MANIFESTWORK,
    )
    assert response(answer)["status"] == bad_request(
        "user alice cannot manipulate the Manifestwork with executor /klusterlet-work-sa "
        "in namespace cluster1"
    )
    answer = await validate(
        review("CREATE", manifest_work(), username="carol", groups=["team-a"]),
        sar=HubAccessReviewer(hub),
        options=options,
    )
    assert response(answer)["allowed"] is True


@pytest.mark.kubesim_only("fault injection: a 500 answer to the SubjectAccessReview create")
async def test_review_errors_are_reported(cluster: Cluster, hub: KubeClient) -> None:
    assert isinstance(cluster, KubeSim)
    sim = cluster
    reviewer = HubAccessReviewer(hub)
    sim.inject(verb="create", resource="subjectaccessreviews", code=500, count=1)
    with pytest.raises(KubeError) as caught:
        await reviewer(_ask("alice"))
    sim.inject(verb="create", resource="subjectaccessreviews", code=500, count=1)
    work = manifest_work(executor=executor("ns1", "sa1"))
    answer = await validate(review("CREATE", work), sar=reviewer)
    assert response(answer)["status"] == bad_request(caught.value.message)


async def test_webhook_identity_without_review_permission(
    tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> None:
    async with (
        open_cluster(target, pool_for(request, target), enforce_rbac=True) as cluster,
        await KubeClient.from_kubeconfig(
            str(cluster.write_kubeconfig(tmp_path / "admin.kubeconfig")), qps=0, name="admin"
        ) as admin,
    ):
        webhook = await service_account_user(cluster, admin, "hub", "webhook")
        cluster.write_kubeconfig(tmp_path / "webhook.kubeconfig", token=webhook.token)
        client = await KubeClient.from_kubeconfig(str(tmp_path / "webhook.kubeconfig"), qps=0)
        async with client:
            work = manifest_work(executor=executor("ns1", "sa1"))
            answer = await validate(review("CREATE", work), sar=HubAccessReviewer(client))
    status = response(answer)["status"]
    assert status["code"] == 400 and status["reason"] == "BadRequest"
    assert status["message"].startswith("subjectaccessreviews.authorization.k8s.io is forbidden:")
    refusal = f'User "{webhook.name}" cannot create resource "subjectaccessreviews"'
    assert refusal in status["message"]


async def test_https_webhook_with_kubesim_rbac(
    hub: KubeClient, certdir: Path, serving_cert: ServingCert
) -> None:
    ctx = client_context(serving_cert)
    work = manifest_work(executor=executor("ns1", "sa1"))
    async with running(local_settings(certdir), HubAccessReviewer(hub)) as server:
        url = f"https://127.0.0.1:{server.port}{MW_PATH}"
        _, body = await post(url, review("CREATE", work, username="alice"), ctx)
        assert body["response"]["allowed"] is True
        _, body = await post(url, review("CREATE", work, username="bob", uid="bob-1"), ctx)
        assert body["response"] == {
            "uid": "bob-1",
            "allowed": False,
            "status": bad_request(
                "user bob cannot manipulate the Manifestwork with executor ns1/sa1 in namespace cluster1"
            ),
        }
