"""A manifest whose create keeps failing is not recorded again before every retry.

The agent lists a resource in the AppliedManifestWork before it first creates
it (docs/compatibility.md, "recording applied resources") and drops the entry
when the create failed; recording it again before each retry made two
AppliedManifestWork status writes per retry, forever, where nothing changed
(spec/agent.md section 19.6; found taking over from OCM's agent,
tests/peers/test_agent_handover.py). Counted by the spoke's own request record.
"""

from __future__ import annotations

from ocmkit.kube import MANIFESTWORKS, KubeClient
from tests.conftest import eventually
from tests.integration.conftest import configmap, get_applied_work, work_body
from tests.support.programs import AgentRunner
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster

#: Failed creates to wait for: retries of the same generation, beyond the first pass.
RETRIES = 5


async def test_a_failing_create_is_recorded_once_per_generation(
    agent: AgentRunner, spoke: Cluster, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    requests = RequestRecord(spoke)
    manifests = [configmap("lost", "nowhere"), configmap("beside")]  # no namespace nowhere
    await hub_client.create(MANIFESTWORKS, work_body("failing", manifests))

    async def retried() -> bool:
        return requests.count("create", "configmaps", 404) >= RETRIES

    await eventually(retried, what=f"{RETRIES} failed creates of the ConfigMap")
    # The creation recorded both; the first pass's bookkeeping wrote what exists.
    assert requests.count("patch", "appliedmanifestworks/status") == 1
    applied = await get_applied_work(spoke_client, agent.hub_hash, "failing")
    assert applied is not None
    listed = [r["name"] for r in applied["status"]["appliedResources"]]
    assert listed == ["beside"]
