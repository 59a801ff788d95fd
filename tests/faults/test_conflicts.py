"""Conflicting writers: on the spoke objects, and on the hub ManifestWork status.

Spoke drift. Another writer changes what the Update strategy owns (a
ConfigMap's data, a Deployment's replicas and image). The agent does not
watch applied objects, so it restores them at its next reconcile of the
work, which comes either

- from a hub event: touching the work's labels re-triggers the apply loop at
  once (spec/agent.md 4.1), or
- from the periodic drift correction: every converged work is re-applied
  after 4 min x [1, 1.5). That period is not a setting (OCM hard-codes it
  too), so the in-process agent gets a shorter one by patching the module
  constant ``RESYNC_SECONDS`` for the test, before the work is first applied
  (a reconcile already scheduled keeps its time).

Hub status. Another controller writes the ManifestWork status too. Its
condition must survive the agent's writes, and the agent's conditions must
survive its writes: every status write of the agent is a merge patch with
resourceVersion precondition computed from what it read, so a write that
raced with the other writer fails with 409 and is redone from fresh data.
The race is forced: the agent's next status patch is held 1.5 s by a latency
fault while the other writer writes.

Takeover. A new work lists an object while the cleanup of the work that
created it is deleting it (the cleanup's DELETE is held 2 s). The cleanup
decided on the object as it read it, owned by the old work alone; by the time
the DELETE lands, the new work owns it too, so it must be disowned, not
deleted.

Lost status writes. While every status write of the agent fails with 409, its
passes still delete stale objects and re-create returning ones; the
AppliedManifestWork must follow each pass, or a re-created object (a new UID)
would later look like someone else's and leak when its manifest leaves again.
"""

from __future__ import annotations

from typing import Any

import pytest

from ocmkit.kube import CONFIGMAPS, DEPLOYMENTS, KubeClient, NotFound
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import (
    AGENT_ON_HUB,
    AGENT_ON_SPOKE,
    configmaps,
    create_work,
    delete_work,
    set_manifests,
    touch_labels,
)
from tests.faults.invariants import Expected
from tests.integration.conftest import (
    configmap,
    get_work,
    update_work,
    work_condition,
)
from tests.support.manifests import deployment
from tests.support.programs import AgentRunner
from workagent.controllers import manifestwork
from workagent.identity import applied_work_name

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

APP = deployment("drift-app", "default", image="busybox:1.36")

EXTERNAL_CONDITION: dict[str, Any] = {
    "type": "ExternalCheck",
    "status": "True",
    "reason": "Checked",
    "message": "checked by another controller",
    "lastTransitionTime": "2024-01-01T00:00:00Z",
}


@pytest.mark.parametrize("trigger", ["labels", "periodic"])
async def test_spoke_drift_is_restored(
    trigger: str,
    monkeypatch: pytest.MonkeyPatch,
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """Another writer's changes to Update-strategy fields are undone at the next resync."""
    if trigger == "periodic":
        monkeypatch.setattr(manifestwork, "RESYNC_SECONDS", 1.0)
    await create_work(env.hub_client, "drift", [configmap("drift-cm", key="v1"), APP])
    await create_work(env.hub_client, "steady", configmaps("steady", 2))
    expected = Expected(works={"drift", "steady"})
    await env.converged(expected)

    cm = await env.spoke_client.get(CONFIGMAPS, "drift-cm", "default")
    cm["data"] = {"key": "tampered", "extra": "added by someone else"}
    await env.spoke_client.update(CONFIGMAPS, cm)
    app = await env.spoke_client.get(DEPLOYMENTS, "drift-app", "default")
    app["spec"]["replicas"] = 5
    app["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:evil"
    await env.spoke_client.update(DEPLOYMENTS, app)

    if trigger == "labels":
        await touch_labels(env.hub_client, "drift", resync="1")
    await env.converged(expected, what=f"the drift to be undone ({trigger})")


def external_condition(work: dict[str, Any]) -> dict[str, Any] | None:
    """The other writer's condition, if the work has it."""
    return work_condition(work, EXTERNAL_CONDITION["type"])


async def test_another_status_writer_is_not_overwritten(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """The agent and another writer share the status: neither loses its conditions."""
    await create_work(env.hub_client, "shared", configmaps("shared", 2))
    expected = Expected(works={"shared"})
    await env.converged(expected)

    def add_external(work: dict[str, Any]) -> None:
        conditions = work.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c["type"] != EXTERNAL_CONDITION["type"]]
        conditions.append(dict(EXTERNAL_CONDITION))

    # The race: the agent's status patch for the new generation is held while the
    # other writer adds its condition; the held patch must fail its precondition.
    held = env.hub.inject(
        verb="patch",
        resource="manifestworks/status",
        latency=1.5,
        count=1,
        userAgent=AGENT_ON_HUB,
    )
    await set_manifests(env.hub_client, "shared", configmaps("shared", 3, v="two"))

    async def patch_held() -> bool:
        return held.hits >= 1

    await eventually(patch_held, what="the agent's status patch to be held")
    await update_work(env.hub_client, "shared", add_external, subresource="status")
    await env.converged(expected, what="convergence after the race")
    work = await get_work(env.hub_client, "shared")
    assert external_condition(work) == EXTERNAL_CONDITION

    # A ruder writer replaces the whole status with its own condition. The agent
    # does not react to status-only changes (4.1); its next reconcile restores
    # its conditions and keeps the other one.
    def replace_status(work: dict[str, Any]) -> None:
        work["status"] = {"conditions": [dict(EXTERNAL_CONDITION)]}

    await update_work(env.hub_client, "shared", replace_status, subresource="status")
    await touch_labels(env.hub_client, "shared", resync="1")
    await env.converged(expected, what="the agent's conditions to be back")
    work = await get_work(env.hub_client, "shared")
    assert external_condition(work) == EXTERNAL_CONDITION


async def test_object_taken_over_while_its_old_work_is_deleted(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """A new work takes over an object while the old work's cleanup is deleting it:
    the cleanup must not delete the object the new work now owns too."""
    await create_work(env.hub_client, "handover-old", [configmap("handover-cm", key="v")])
    await env.converged({"handover-old"})

    # The old work's cleanup reads the object (owned by the old work only) and sends
    # its DELETE, which is held 2 s; meanwhile the new work adopts the object.
    held = env.spoke.inject(
        verb="delete", resource="configmaps", latency=2.0, count=1, userAgent=AGENT_ON_SPOKE
    )
    await delete_work(env.hub_client, "handover-old")

    async def delete_held() -> bool:
        return held.hits >= 1

    await eventually(delete_held, what="the old work's delete to be in flight")
    await create_work(env.hub_client, "handover-new", [configmap("handover-cm", key="v")])

    new_owner = applied_work_name(env.the_hash, "handover-new")

    async def adopted() -> bool:
        # Owned by both works while the old one's delete is held (were the machine
        # too slow for that, the new work would own a re-created object alone).
        cm = await env.spoke_client.get(CONFIGMAPS, "handover-cm", "default")
        return any(r["name"] == new_owner for r in cm["metadata"].get("ownerReferences") or [])

    await eventually(adopted, what="the new work to own the object")
    # Without the resourceVersion precondition on the cleanup's DELETE, the held
    # delete removed the adopted object, and nothing restored it before the new
    # work's periodic resync (4 min): converging at all is the regression test.
    await env.converged({"handover-new"})


async def _uid(spoke_client: KubeClient, name: str) -> str | None:
    try:
        return str((await spoke_client.get(CONFIGMAPS, name, "default"))["metadata"]["uid"])
    except NotFound:
        return None


async def test_stale_deletions_are_recorded_while_status_writes_fail(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """Found by the soak: a manifest removed, re-added and removed again while the
    agent's hub status writes all fail must not leave its object behind."""
    await create_work(env.hub_client, "churn", [configmap("churn-a"), configmap("churn-b")])
    await env.converged({"churn"})
    first = await _uid(env.spoke_client, "churn-b")
    env.hub.inject(verb="patch", resource="manifestworks/status", code=409, userAgent=AGENT_ON_HUB)
    await set_manifests(env.hub_client, "churn", [configmap("churn-a")])

    async def removed() -> bool:
        return await _uid(env.spoke_client, "churn-b") is None

    await eventually(removed, what="churn-b deleted as stale")
    await set_manifests(env.hub_client, "churn", [configmap("churn-a"), configmap("churn-b")])

    async def recreated() -> bool:
        uid = await _uid(env.spoke_client, "churn-b")
        return uid is not None and uid != first

    await eventually(recreated, what="churn-b created again")
    await set_manifests(env.hub_client, "churn", [configmap("churn-a")])
    env.hub.clear_faults()
    await env.converged({"churn"}, timeout=20)
