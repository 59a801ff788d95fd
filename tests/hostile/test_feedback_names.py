"""Feedback values that share a name.

``statusFeedback.values`` is a list map keyed by ``name``: the hub refuses a
status that lists one name twice. Two feedback rules of a manifest (say
WellKnownStatus and JSONPaths, or two JSONPaths rules) may well produce the
same name, which would get every status patch of the work refused.
"""

from __future__ import annotations

from ocmkit.kube import KubeClient
from tests.conftest import eventually
from tests.hostile.helpers import assert_alive, create_or_refusal
from tests.integration.conftest import (
    configmap,
    get_work,
    manifest_condition,
    values_of,
    wait_applied,
    work_body,
)
from tests.support.programs import AgentRunner


async def test_a_name_given_twice_is_reported_once_with_a_message(
    agent: AgentRunner, hub_client: KubeClient
) -> None:
    rules = [
        {"type": "JSONPaths", "jsonPaths": [{"name": "a", "path": ".data.first"}]},
        {"type": "JSONPaths", "jsonPaths": [{"name": "a", "path": ".data.second"}]},
    ]
    ident = {"resource": "configmaps", "namespace": "default", "name": "twice"}
    body = work_body(
        "twice",
        [configmap("twice", first="1st", second="2nd")],
        manifestConfigs=[{"resourceIdentifier": ident, "feedbackRules": rules}],
    )
    assert await create_or_refusal(hub_client, body) is None
    await wait_applied(hub_client, "twice")

    async def reported() -> bool:
        work = await get_work(hub_client, "twice")
        return manifest_condition(work, 0, "StatusFeedbackSynced") is not None

    await eventually(reported, timeout=20, what="the feedback to be reported")
    work = await get_work(hub_client, "twice")
    assert values_of(work, 0) == [("a", {"type": "String", "string": "1st"})]
    synced = manifest_condition(work, 0, "StatusFeedbackSynced")
    assert synced is not None
    assert (synced["status"], synced["reason"]) == ("False", "StatusFeedbackSyncFailed")
    assert synced["message"] == (
        "Sync status feedback failed with error the value name a is read by more than one "
        "feedback rule; only the first value is reported"
    )
    assert_alive(agent)
