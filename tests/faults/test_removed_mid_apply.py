"""Something a work depends on is deleted on the spoke, by someone else, while the agent applies.

Three cases, each with a small latency on the agent's creates so that the
deletion lands mid-apply:

- the CRD of a work's custom resources (the CRD is in the work): Kubernetes
  deletes the custom resources and refuses new ones while the CRD is
  terminating;
- a namespace the work creates itself: Kubernetes deletes its content and
  refuses new content while it is terminating;
- a namespace the work only uses: creates answer NotFound until someone
  recreates it.

A foreign finalizer keeps the CRD or namespace terminating for as long as the
test wants, so the "cannot apply" state can be checked: the agent keeps
running and says why on each affected manifest and on the work. When the
finalizer is lifted (or the namespace recreated) the agent converges to
exactly the specification, nothing leaked, with no help beyond its own
retries.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ocmkit.kube import CONFIGMAPS, CRDS, NAMESPACES, KubeClient, NotFound, Resource
from tests.conftest import eventually
from tests.faults.conftest import Clusters
from tests.faults.harness import AGENT_ON_SPOKE, configmaps, create_work
from tests.faults.invariants import Expected
from tests.integration.conftest import (
    WIDGET_CRD,
    get_work,
    manifest_statuses,
    work_condition,
)
from tests.kube.helpers import WIDGETS
from tests.support.prepare import typed
from tests.support.programs import AgentRunner

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

#: A finalizer of "someone else" that keeps a deleted object terminating.
HOLD = "fault-test.example.com/hold"
#: Per-create latency: long enough for the deletion to land between two creates.
CREATE_LATENCY = 0.2


def namespace(name: str) -> dict[str, Any]:
    """A Namespace manifest."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


async def count(client: KubeClient, res: Resource, namespace: str) -> int:
    """How many ``res`` objects ``namespace`` holds (0 while the type is not served)."""
    try:
        return len((await client.list(res, namespace))["items"])
    except NotFound:
        return 0


async def hold_and_delete(client: KubeClient, res: Resource, name: str) -> None:
    """Add :data:`HOLD` to a cluster-scoped object, then delete it: it stays terminating."""
    await client.patch(res, name, {"metadata": {"finalizers": [HOLD]}}, patch_type="merge")
    await client.delete(res, name)


async def release(client: KubeClient, res: Resource, name: str) -> None:
    """Remove :data:`HOLD`: the terminating object finishes and is gone."""
    live = await client.get(res, name)
    finalizers = [f for f in live["metadata"].get("finalizers") or [] if f != HOLD]
    await client.patch(
        res,
        name,
        {"metadata": {"finalizers": finalizers or None, "resourceVersion": None}},
        patch_type="merge",
    )


async def failing_manifests(hub: KubeClient, work_name: str, needle: str) -> list[str]:
    """Names of the work's manifests whose ``Applied`` is False with ``needle`` in the
    message, provided the work-level ``Applied`` is False too (else empty)."""
    work = await get_work(hub, work_name)
    applied = work_condition(work, "Applied")
    if applied is None or applied.get("status") != "False":
        return []
    names = []
    for entry in manifest_statuses(work):
        for cond in entry.get("conditions") or []:
            if (
                cond.get("type") == "Applied"
                and cond.get("status") == "False"
                and cond.get("reason") == "AppliedManifestFailed"
                and needle in str(cond.get("message"))
            ):
                names.append(entry["resourceMeta"]["name"])
    return sorted(names)


async def test_crd_deleted_while_its_resources_are_applied(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """The work's CRD is deleted mid-apply: the custom resources say why they cannot be
    created while it terminates; once it is gone the agent recreates it and them."""
    env.spoke.inject(
        verb="create", resource="widgets", latency=CREATE_LATENCY, userAgent=AGENT_ON_SPOKE
    )
    names = [f"w-{i}" for i in range(8)]
    manifests = [
        WIDGET_CRD,
        *(
            typed(WIDGETS, metadata={"name": n, "namespace": "default"}, spec={"size": i})
            for i, n in enumerate(names)
        ),
        *configmaps("cr", 1),
    ]
    await create_work(env.hub_client, "widgets", manifests)

    async def partly_applied() -> bool:
        return await count(env.spoke_client, WIDGETS, "default") >= 2

    await eventually(partly_applied, timeout=30, what="some widgets to be created")
    await hold_and_delete(env.spoke_client, CRDS, WIDGET_CRD["metadata"]["name"])

    async def reported() -> bool:
        # Every widget fails: the ones the CRD's deletion removed as well as the
        # ones not created yet.
        return await failing_manifests(env.hub_client, "widgets", "terminating") == names

    await eventually(reported, timeout=30, what="the widgets to report the terminating CRD")
    env.spoke.clear_faults()
    await release(env.spoke_client, CRDS, WIDGET_CRD["metadata"]["name"])
    await env.converged(
        Expected(works={"widgets"}, kinds=(CRDS, WIDGETS)), what="the CRD and its widgets back"
    )


async def test_namespace_of_the_work_deleted_mid_apply(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """A namespace the work creates is deleted mid-apply: its manifests say the namespace
    is terminating; once it is gone the agent recreates it and its content."""
    env.spoke.inject(
        verb="create", resource="configmaps", latency=CREATE_LATENCY, userAgent=AGENT_ON_SPOKE
    )
    content = configmaps("cm", 8, namespace="team")
    await create_work(env.hub_client, "team", [namespace("team"), *content])

    async def partly_applied() -> bool:
        return await count(env.spoke_client, CONFIGMAPS, "team") >= 2

    await eventually(partly_applied, timeout=30, what="some configmaps to be created")
    await hold_and_delete(env.spoke_client, NAMESPACES, "team")

    async def reported() -> bool:
        failing = await failing_manifests(env.hub_client, "team", "is being terminated")
        return failing == sorted(m["metadata"]["name"] for m in content)

    await eventually(reported, timeout=30, what="the configmaps to report the namespace")
    env.spoke.clear_faults()
    await release(env.spoke_client, NAMESPACES, "team")
    await env.converged(
        Expected(works={"team"}, namespaces=("team",), kinds=(NAMESPACES,)),
        what="the namespace and its configmaps back",
    )


async def test_namespace_outside_the_work_deleted_mid_apply(
    agent: AgentRunner,
    env: Clusters,
) -> None:
    """A namespace the work only uses is deleted mid-apply: its manifests report it
    missing until someone recreates it, then the agent converges."""
    await env.spoke_client.create(NAMESPACES, namespace("guests"))
    env.spoke.inject(
        verb="create", resource="configmaps", latency=CREATE_LATENCY, userAgent=AGENT_ON_SPOKE
    )
    content = configmaps("cm", 8, namespace="guests")
    await create_work(env.hub_client, "guests", content)

    async def partly_applied() -> bool:
        return await count(env.spoke_client, CONFIGMAPS, "guests") >= 2

    await eventually(partly_applied, timeout=30, what="some configmaps to be created")
    await env.spoke_client.delete(NAMESPACES, "guests")

    async def reported() -> bool:
        failing = await failing_manifests(env.hub_client, "guests", 'namespaces "guests" not found')
        return failing == sorted(m["metadata"]["name"] for m in content)

    await eventually(reported, timeout=30, what="the configmaps to report the missing namespace")
    env.spoke.clear_faults()
    await env.spoke_client.create(NAMESPACES, copy.deepcopy(namespace("guests")))
    await env.converged(
        Expected(works={"guests"}, namespaces=("guests",)),
        what="the configmaps back in the recreated namespace",
    )
