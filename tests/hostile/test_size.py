"""Big works: 1,000 manifests, and manifests of megabytes.

The API server refuses a request body over 3 MiB (``Request entity too large:
limit is 3145728``, 413) and a ConfigMap whose data exceed 1 MiB (422). A
work with 1,000 small manifests is well within those limits and must be
applied completely, its 1,000-entry status and AppliedManifestWork written.
Bigger manifests are refused cleanly: by the hub when the work itself is too
large, by the managed cluster (reported on the manifest) when only the
object is, and nothing else suffers either way.

(A real hub's etcd also refuses objects over ``--max-request-bytes``, 1.5 MiB
by default; kubesim does not emulate that.)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubesim.errors import entity_too_large
from ocmkit.kube import CONFIGMAPS, KubeClient
from tests.conftest import eventually
from tests.hostile.helpers import assert_alive, create_or_refusal
from tests.integration.conftest import (
    condition_is,
    configmap,
    get_applied_work,
    get_work,
    manifest_condition,
    manifest_statuses,
    wait_applied,
    wait_work,
    work_body,
)
from tests.support.programs import AgentRunner, agent_settings
from workagent.controllers.status import MAX_FEEDBACK_BYTES

MANY = 1000
#: The API server's limit on a request body.
MAX_REQUEST_BYTES = 3 * 1024 * 1024


@pytest.fixture
async def agent(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """The agent with OCM's default 30 s status sync: a 1,000-manifest work is
    re-read once per sync, which is not what these tests measure."""
    async with AgentRunner(agent_settings(tmp_path, workers=4)) as runner:
        yield runner


async def test_a_thousand_manifests_are_applied_and_reported(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    manifests = [configmap(f"many-{i:04d}", index=str(i)) for i in range(MANY)]
    assert await create_or_refusal(hub_client, work_body("many", manifests)) is None
    work = await wait_work(
        hub_client,
        "many",
        condition_is("Applied"),
        "the 1,000-manifest work to be applied",
        timeout=60,
    )
    statuses = manifest_statuses(work)
    assert sorted(e["resourceMeta"]["ordinal"] for e in statuses) == list(range(MANY))
    assert all(
        (e["conditions"][0]["type"], e["conditions"][0]["status"]) == ("Applied", "True")
        for e in statuses
    )

    listed = await spoke_client.list(CONFIGMAPS, "default")
    names = {o["metadata"]["name"] for o in listed["items"]}
    assert {f"many-{i:04d}" for i in range(MANY)} <= names

    applied = await get_applied_work(spoke_client, agent.hub_hash, "many")
    assert applied is not None
    assert len((applied.get("status") or {}).get("appliedResources") or []) == MANY
    work = await wait_work(
        hub_client,
        "many",
        condition_is("Available"),
        "the 1,000 manifests to be Available",
        timeout=60,
    )
    # The whole object, 1,000-entry status included, fits a real hub's etcd (1.5 MiB).
    assert len(json.dumps(work, separators=(",", ":"))) < 1536 * 1024
    assert_alive(agent)


async def test_a_work_over_the_request_limit_is_refused_by_the_hub(
    agent: AgentRunner, hub_client: KubeClient
) -> None:
    huge = configmap("huge", blob="x" * MAX_REQUEST_BYTES)
    err = await create_or_refusal(hub_client, work_body("huge", [huge]))
    assert err is not None
    assert (err.code, err.message) == (413, entity_too_large().message)
    # Nothing else suffers.
    assert await create_or_refusal(hub_client, work_body("after-huge", [configmap("ok")])) is None
    await wait_applied(hub_client, "after-huge")
    assert_alive(agent)


async def test_a_manifest_too_large_for_the_managed_cluster_fails_clearly(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    # Just over a ConfigMap's 1 MiB, and the work within etcd's 1.5 MiB object limit.
    big = configmap("too-big", blob="x" * (1024 * 1024 + 1024))
    small = configmap("next-to-big")
    assert await create_or_refusal(hub_client, work_body("big", [big, small])) is None
    work = await wait_applied(hub_client, "big", status="False")
    failed = manifest_condition(work, 0, "Applied")
    assert failed is not None and failed["status"] == "False"
    # The API server's own words, without the data (the field is the root, "[]").
    message = failed["message"]
    assert message.startswith('Failed to apply manifest: ConfigMap "too-big" is invalid: ')
    assert message.endswith(" is invalid: []: Too long: may not be more than 1048576 bytes")
    assert len(message) < 200
    # The manifest next to it is applied, and so is a work created afterwards.
    ok = manifest_condition(work, 1, "Applied")
    assert ok is not None and ok["status"] == "True"
    assert await create_or_refusal(hub_client, work_body("after-big", [configmap("ok2")])) is None
    await wait_applied(hub_client, "after-big")
    assert_alive(agent)


async def test_feedback_too_large_for_the_status_is_dropped_with_a_message(
    agent: AgentRunner, hub_client: KubeClient
) -> None:
    # Four String values of 900 KB each: a status patch of 3.6 MB, over the hub's
    # request limit (and far over etcd's 1.5 MiB object limit on a real hub).
    blob_paths = [{"name": f"blob{i}", "path": ".data.blob"} for i in range(4)]
    configs = [
        {
            "resourceIdentifier": {"resource": "configmaps", "namespace": "default", "name": n},
            "feedbackRules": [{"type": "JSONPaths", "jsonPaths": paths}],
        }
        for n, paths in (
            ("flood", blob_paths),
            ("modest", [{"name": "key", "path": ".data.key"}]),
        )
    ]
    manifests = [configmap("flood", blob="x" * 900_000), configmap("modest", key="small")]
    body = work_body("flood", manifests, manifestConfigs=configs)
    assert await create_or_refusal(hub_client, body) is None
    await wait_applied(hub_client, "flood")

    async def reported() -> bool:
        work = await get_work(hub_client, "flood")
        modest = manifest_statuses(work)[1].get("statusFeedback") or {}
        flooded = manifest_condition(work, 0, "StatusFeedbackSynced")
        return (
            modest.get("values")
            == [{"name": "key", "fieldValue": {"type": "String", "string": "small"}}]
            and flooded is not None
            and flooded["status"] == "False"
        )

    await eventually(reported, timeout=30, what="the modest feedback and the flood's condition")
    work = await get_work(hub_client, "flood")
    assert not (manifest_statuses(work)[0].get("statusFeedback") or {}).get("values")
    flooded = manifest_condition(work, 0, "StatusFeedbackSynced")
    assert flooded is not None
    assert flooded["reason"] == "StatusFeedbackSyncFailed"
    values = [
        {"name": f"blob{i}", "fieldValue": {"type": "String", "string": "x" * 900_000}}
        for i in range(4)
    ]
    size = len(json.dumps(values, separators=(",", ":")))
    assert flooded["message"] == (
        "Sync status feedback failed with error the status feedback values of this "
        f"manifest take {size} bytes, more than the {MAX_FEEDBACK_BYTES} of "
        f"{MAX_FEEDBACK_BYTES} bytes left for the status feedback of the work; "
        "they are not reported"
    )
    assert_alive(agent)
