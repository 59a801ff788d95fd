"""OCM's Hosted mode: the agent runs on a management cluster and reaches the managed
cluster with ``--spoke-kubeconfig``.

Its own cluster (``--kubeconfig``, in-cluster in a pod) holds its Lease and
reviews callers of its endpoint, as library-go's controller command does for
OCM's agent; the managed cluster gets the manifests and AppliedManifestWorks.
The agent namespace exists on the management cluster only, as the
klusterlet's Hosted install makes it.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, LEASES, MANIFESTWORKS, NotFound
from ocmkit.runtime import LeaderElectionSettings
from tests.conftest import eventually
from tests.support.programs import (
    CLUSTER,
    CRD_DIR,
    AgentRunner,
    agent_settings,
    open_test_client,
)
from tests.support.serving_endpoint import unverified

AGENT_NAMESPACE = "klusterlet-cluster1"
LEASE = "work-agent-lock"


async def scrape_status(base: str, token: str) -> int:
    """The status of a GET of ``/metrics`` with bearer ``token``."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{base}/metrics", ssl=unverified(), headers=headers) as response,
    ):
        return response.status


async def test_the_lease_and_the_endpoint_reviews_stay_on_the_agents_own_cluster(
    tmp_path: Path,
) -> None:
    async with KubeSim() as management, KubeSim() as managed:
        management.write_kubeconfig(tmp_path / "own.kubeconfig")
        # Hub and managed cluster in one; the agent namespace only where the agent runs.
        managed.write_kubeconfig(tmp_path / "spoke.kubeconfig")
        managed.write_kubeconfig(tmp_path / "hub.kubeconfig")
        own = await open_test_client(
            tmp_path / "own.kubeconfig",
            user_agent="hosted-test",
            name="management",
            crds=(),
            namespaces=[AGENT_NAMESPACE],
        )
        spoke = await open_test_client(
            tmp_path / "spoke.kubeconfig",
            user_agent="hosted-test",
            name="managed",
            crds=sorted(CRD_DIR.glob("*.yaml")),
            namespaces=[CLUSTER],
        )
        settings = agent_settings(
            tmp_path,
            kubeconfig=str(tmp_path / "own.kubeconfig"),
            insecure_serving=False,
            leader_election=LeaderElectionSettings(namespace=AGENT_NAMESPACE, retry_period=1.0),
        )
        runner = AgentRunner(settings=settings)
        try:
            # Its controllers start only once it leads: the Lease could be taken.
            await runner.start()
            lease = await own.get(LEASES, LEASE, AGENT_NAMESPACE)
            assert lease["spec"]["holderIdentity"] == settings.leader_election.identity
            for where in (AGENT_NAMESPACE, "default", CLUSTER):
                try:
                    await spoke.get(LEASES, LEASE, where)
                except NotFound:
                    continue
                raise AssertionError(f"a Lease on the managed cluster in {where}")

            # The endpoint asks the management cluster who a caller is.
            assert runner.agent is not None
            base = runner.agent.manager.observability.url
            assert await scrape_status(base, management.admin_token) == 200
            assert await scrape_status(base, managed.admin_token) == 401

            # The work itself is applied on the managed cluster.
            work = {
                "metadata": {"name": "hosted", "namespace": CLUSTER},
                "spec": {
                    "workload": {
                        "manifests": [
                            {
                                "apiVersion": "v1",
                                "kind": "ConfigMap",
                                "metadata": {"name": "hosted", "namespace": "default"},
                                "data": {"a": "1"},
                            }
                        ]
                    }
                },
            }
            await spoke.create(MANIFESTWORKS, work)

            async def applied() -> bool:
                try:
                    await spoke.get(CONFIGMAPS, "hosted", "default")
                except NotFound:
                    return False
                return True

            await eventually(applied, what="the ConfigMap on the managed cluster")
        finally:
            await runner.stop()
            await own.close()
            await spoke.close()
