"""The recall of keys a manifest dropped, on kubesim and on a real kube-apiserver.

Where the agent's managedFields entry and the server's defaults meet other
writers: keys others set below a defaulted map, an object two works share,
list items keyed by a defaulted field, a dry-run create the server refuses.
A fresh :class:`Appliers` is an agent that restarted.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import DEPLOYMENTS, Forbidden, KubeClient, Resource
from tests.apply.conftest import NS, applied_work_owner, request, web_deployment
from tests.conftest import eventually
from tests.support.programs import CRD_DIR, open_test_client
from tests.support.targets import REAL, Cluster, PlanePool, open_cluster
from workagent.apply import Appliers, ApplyRequest

RESOURCE_QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota", True)


@dataclasses.dataclass
class Clients:
    """The agent's client (``work-agent``) and another writer's (``spoke-user``)."""

    agent: KubeClient
    other: KubeClient

    async def owner(self, work: str) -> dict[str, Any]:
        """The owner reference to a new AppliedManifestWork of ``work``."""
        return await applied_work_owner(self.agent, work)


async def _clients(cluster: Cluster, tmp_path: Path) -> Clients:
    config = cluster.write_kubeconfig(tmp_path / "admin.kubeconfig")
    amw_crd = CRD_DIR / "work.open-cluster-management.io_appliedmanifestworks.yaml"
    agent = await open_test_client(
        config, user_agent="work-agent", name="a", crds=(amw_crd,), namespaces=(NS,)
    )
    other = await open_test_client(config, user_agent="spoke-user/1.0", name="o", crds=())
    return Clients(agent, other)


@pytest.fixture
async def clients(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Clients]:
    """Clients of ``cluster`` (kubesim and real) with namespace ``apply``."""
    both = await _clients(cluster, tmp_path)
    async with both.agent, both.other:
        yield both


def restarted(req: ApplyRequest) -> ApplyRequest:
    """``req`` with the hint the controller gives when status shows an older generation."""
    return dataclasses.replace(req, may_have_changed=True)


async def test_keys_others_set_below_a_defaulted_map_are_kept(clients: Clients) -> None:
    owner = await clients.owner("w")
    first = web_deployment()
    first["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": "50%"}}
    await Appliers(clients.agent).update.apply(request(DEPLOYMENTS, first, owner))
    live = await clients.agent.get(DEPLOYMENTS, "web", NS)
    live["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = 0
    pod = live["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {"limits": {"cpu": "200m"}}
    pod["securityContext"] = {"runAsNonRoot": True}
    await clients.other.update(DEPLOYMENTS, live)

    # The next generation drops the strategy: the agent's maxSurge goes (the server
    # defaults it again), what the other writer set below the defaults stays.
    second = web_deployment()
    after = await Appliers(clients.agent).update.apply(
        restarted(request(DEPLOYMENTS, second, owner))
    )
    assert after["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": 0}
    pod = after["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["cpu"] == "200m"
    assert pod["securityContext"] == {"runAsNonRoot": True}

    # Applied again after another restart: nothing to remove, nothing written.
    again = await Appliers(clients.agent).update.apply(
        restarted(request(DEPLOYMENTS, copy.deepcopy(second), owner))
    )
    assert again["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]


async def test_an_object_two_works_apply_is_not_recalled(clients: Clients) -> None:
    """Both works write as ``work-agent``: what one set is not the other's to remove."""
    a, b = await clients.owner("a"), await clients.owner("b")
    with_delay = web_deployment()
    with_delay["spec"]["minReadySeconds"] = 7
    await Appliers(clients.agent).update.apply(request(DEPLOYMENTS, with_delay, a, work="a"))
    await Appliers(clients.agent).update.apply(request(DEPLOYMENTS, web_deployment(), b, work="b"))
    after = await Appliers(clients.agent).update.apply(
        restarted(request(DEPLOYMENTS, web_deployment(replicas=3), b, work="b"))
    )
    assert after["spec"]["replicas"] == 3
    assert after["spec"]["minReadySeconds"] == 7


async def test_an_item_keyed_by_a_defaulted_field_is_recalled(clients: Clients) -> None:
    """A container port's key holds its protocol, which manifests usually leave out."""
    owner = await clients.owner("w")
    first = web_deployment(ports=[{"containerPort": 80, "name": "http", "hostPort": 8080}])
    await Appliers(clients.agent).update.apply(request(DEPLOYMENTS, first, owner))
    second = web_deployment(ports=[{"containerPort": 80}])
    after = await Appliers(clients.agent).update.apply(
        restarted(request(DEPLOYMENTS, second, owner))
    )
    ports = after["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 80, "protocol": "TCP"}]


@contextlib.asynccontextmanager
async def delayed_deployment(
    pool: PlanePool, folder: Path
) -> AsyncIterator[tuple[Clients, dict[str, Any]]]:
    """A real cluster (with what kubesim lacks: quotas, admission policies) where the
    agent applied Deployment ``web`` with ``minReadySeconds: 7``; clients and owner."""
    async with open_cluster(REAL, pool) as cluster:
        both = await _clients(cluster, folder)
        async with both.agent, both.other:
            owner = await both.owner("w")
            first = web_deployment()
            first["spec"]["minReadySeconds"] = 7
            await Appliers(both.agent).update.apply(request(DEPLOYMENTS, first, owner))
            yield both, owner


@pytest.mark.realkube
async def test_a_refused_dry_run_create_falls_back_to_a_dry_run_update(
    realkube_pool: PlanePool, tmp_path: Path
) -> None:
    """A quota at its limit refuses even a dry-run create (kubesim has no quotas); the
    defaults then come from a dry-run PUT of the manifest."""
    async with delayed_deployment(realkube_pool, tmp_path) as (both, owner):
        quota = await both.other.create(
            RESOURCE_QUOTAS,
            {
                "metadata": {"name": "full", "namespace": NS},
                "spec": {"hard": {"count/deployments.apps": "1"}},
            },
        )
        # No quota controller runs: the status it would write, by hand.
        quota["status"] = {
            "hard": {"count/deployments.apps": "1"},
            "used": {"count/deployments.apps": "1"},
        }
        await both.other.update(RESOURCE_QUOTAS, quota, NS, subresource="status")
        after = await Appliers(both.agent).update.apply(
            restarted(request(DEPLOYMENTS, web_deployment(), owner))
        )
        assert "minReadySeconds" not in after["spec"]
        assert after["spec"]["revisionHistoryLimit"] == 10


POLICIES = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicies",
    "ValidatingAdmissionPolicy",
    False,
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    False,
)


@pytest.mark.realkube
async def test_a_removal_a_policy_forbids_is_retried_without_the_recall(
    realkube_pool: PlanePool, tmp_path: Path
) -> None:
    """The rest of the manifest is still applied (kubesim has no admission policies)."""
    async with delayed_deployment(realkube_pool, tmp_path) as (both, owner):
        rule = {
            "apiGroups": ["apps"],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["deployments"],
        }
        keep = "!has(oldObject.spec.minReadySeconds) || has(object.spec.minReadySeconds)"
        await both.other.create(
            POLICIES,
            {
                "metadata": {"name": "keep"},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": [rule]},
                    "validations": [{"expression": keep, "reason": "Forbidden"}],
                },
            },
        )
        await both.other.create(
            BINDINGS,
            {
                "metadata": {"name": "keep"},
                "spec": {"policyName": "keep", "validationActions": ["Deny"]},
            },
        )

        async def enforced() -> bool:
            live = await both.other.get(DEPLOYMENTS, "web", NS)
            del live["spec"]["minReadySeconds"]
            try:
                await both.other.update(DEPLOYMENTS, live, NS, dry_run=True)
            except Forbidden:
                return True
            return False

        await eventually(enforced, what="the policy to be enforced")
        after = await Appliers(both.agent).update.apply(
            restarted(request(DEPLOYMENTS, web_deployment(replicas=3), owner))
        )
        assert after["spec"]["replicas"] == 3
        assert after["spec"]["minReadySeconds"] == 7
