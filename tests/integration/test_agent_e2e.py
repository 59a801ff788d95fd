"""Issue #5's end-to-end list, through the real agent against a hub and a spoke
(kubesim and a real control plane).

- The four update strategies through the agent, with the ``Applied`` messages.
- A server-side-apply conflict between two works over the same field, and
  ``force`` resolving it (the docs' hello / hello-work-replica-patch scenario).
- The executor check: a work whose executor may not write its manifest is
  ``NotAllowed``; a RoleBinding later makes it apply.

Every ManifestWork example of the user documentation the project implements is
applied the same way by ``make conformance`` (``conformance/test_seed_examples_e2e.py``,
which uses the objects and helpers of this module). The hub-finalizer case of the
list (a foreign finalizer on a spoke resource keeps the hub work until it is
removed) is covered by ``test_deletion.py``
(``test_e2e_work_deletion_waits_for_every_applied_resource``).

NotAllowed requeues after a fixed 60 s (``NOT_ALLOWED_REQUEUE_SECONDS``; neither the
settings nor the validators' constructors shorten it), so after granting access the
executor test edits the work's labels: a label change resets the backoff and
re-queues the work at once (spec section 4.1).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from demo import examples
from ocmkit.kube import (
    CONFIGMAPS,
    DEPLOYMENTS,
    MANIFESTWORKS,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    SUBJECT_ACCESS_REVIEWS,
    Conflict,
    KubeClient,
    Resource,
)
from ocmkit.runtime import Controller
from tests.conftest import eventually
from tests.integration.conftest import (
    exists,
    get_applied_work,
    get_work,
    manifest_condition,
    manifest_statuses,
    wait_applied,
    work_body,
    work_condition,
)
from tests.support.manifests import configmap as configmap  # noqa: PLC0414 (conformance/ imports it from here)
from tests.support.manifests import manifest_config, strategy
from tests.support.programs import CLUSTER, AgentRunner, agent_settings
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.controllers.manifestwork import QUEUE_NAME
from workagent.settings import FEATURE_EXECUTOR_VALIDATING_CACHES

AMW_KIND = "AppliedManifestWork"
TOUCH_LABEL = "e2e.test/touch"
_touches = itertools.count(1)

# -- the docs' objects --------------------------------------------------------------------


def hello_deployment(name: str = "hello", namespace: str = "default") -> dict[str, Any]:
    """The docs' running example: Deployment ``hello`` (hello-work-demo)."""
    return examples.hello_deployment(name=name, namespace=namespace)


# The executor of the docs' executor example, and what the docs assume it may do.
EXECUTOR_NS, EXECUTOR = "default", "executor1"
EXECUTOR_ROLE: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "executor1-configmaps", "namespace": EXECUTOR_NS},
    "rules": [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["get", "list", "create", "update", "patch", "delete"],
        }
    ],
}
EXECUTOR_BINDING: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "RoleBinding",
    "metadata": {"name": "executor1-configmaps", "namespace": EXECUTOR_NS},
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "executor1-configmaps",
    },
    "subjects": [{"kind": "ServiceAccount", "name": EXECUTOR, "namespace": EXECUTOR_NS}],
}
# Whether the spoke's authorizer lets the executor create the example's ConfigMap.
EXECUTOR_REVIEW: dict[str, Any] = {
    "apiVersion": "authorization.k8s.io/v1",
    "kind": "SubjectAccessReview",
    "spec": {
        "user": f"system:serviceaccount:{EXECUTOR_NS}:{EXECUTOR}",
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{EXECUTOR_NS}"],
        "resourceAttributes": {
            "namespace": "default",
            "verb": "create",
            "resource": "configmaps",
            "name": "test",
        },
    },
}


def hello_ssa_work(name: str = "hello-work-demo") -> dict[str, Any]:
    """The docs' first SSA work: the hello Deployment with the ServerSideApply strategy."""
    return work_body(
        name,
        [hello_deployment()],
        manifestConfigs=[
            manifest_config("apps", "deployments", "hello", strategy={"type": "ServerSideApply"})
        ],
    )


# -- helpers ---------------------------------------------------------------------------------


def work_controller(runner: AgentRunner) -> Controller:
    """The agent's apply controller (its queue tells whether a reconcile finished)."""
    assert runner.agent is not None
    return next(c for c in runner.agent.manager.controllers if c.name == QUEUE_NAME)


async def touch_and_wait(
    hub: KubeClient, spoke: KubeClient, runner: AgentRunner, name: str
) -> dict[str, Any]:
    """Change the work's labels (a reconcile at once, backoff reset: spec 4.1) and wait until
    that reconcile finished; returns the work as it wrote it.

    Finished: the AppliedManifestWork carries the new label (the agent copies the work's
    labels at the start of every reconcile) and the key is no longer being processed but
    waiting for its next turn.
    """
    value = str(next(_touches))
    await hub.patch(MANIFESTWORKS, name, {"metadata": {"labels": {TOUCH_LABEL: value}}}, CLUSTER)
    controller = work_controller(runner)

    async def finished() -> bool:
        amw = await get_applied_work(spoke, runner.hub_hash, name)
        if amw is None or (amw["metadata"].get("labels") or {}).get(TOUCH_LABEL) != value:
            return False
        return name not in controller.queue.processing() and name in controller.queue.waiting()

    await eventually(finished, what=f"the reconcile of {name} after its label change")
    return await get_work(hub, name)


async def update_spec(hub: KubeClient, name: str, edit: Any) -> dict[str, Any]:
    """Read the work, let ``edit`` change it, write it back; returns the stored work.

    The agent's status writes change the resourceVersion too: a 409 means read again.
    """
    for _ in range(10):
        work = await get_work(hub, name)
        edit(work)
        try:
            return await hub.update(MANIFESTWORKS, work)
        except Conflict:
            continue
    raise AssertionError(f"{name} kept changing under the update")


def amw_owner_uids(obj: dict[str, Any]) -> list[str]:
    """UIDs of the object's AppliedManifestWork owner references."""
    return [
        ref["uid"]
        for ref in obj["metadata"].get("ownerReferences") or []
        if ref.get("kind") == AMW_KIND
    ]


async def gone(client: KubeClient, res: Resource, name: str, namespace: str | None) -> None:
    """Wait until the object is gone."""

    async def check() -> bool:
        return not await exists(client, res, name, namespace)

    await eventually(check, what=f"{res} {namespace}/{name} to be gone")


def assert_all_applied(work: dict[str, Any]) -> None:
    """Every manifest and the work: Applied=True with OCM's reasons and messages."""
    generation = work["metadata"]["generation"]
    cond = work_condition(work, "Applied")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"], cond["observedGeneration"]) == (
        "True",
        "AppliedManifestWorkComplete",
        "Apply manifest work complete",
        generation,
    )
    manifests = work["spec"]["workload"]["manifests"]
    assert len(manifest_statuses(work)) == len(manifests)
    for ordinal in range(len(manifests)):
        mc = manifest_condition(work, ordinal, "Applied")
        assert mc is not None
        assert (mc["status"], mc["reason"], mc["message"], mc["observedGeneration"]) == (
            "True",
            "AppliedManifestComplete",
            "Apply manifest complete",
            generation,
        ), ordinal


# -- (2) the four update strategies ------------------------------------------------------


async def _data(spoke: KubeClient, name: str) -> dict[str, Any]:
    return dict((await spoke.get(CONFIGMAPS, name, "default")).get("data") or {})


async def test_four_update_strategies(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """Update, CreateOnly, ReadOnly and ServerSideApply, one ConfigMap each, in one work."""
    hub, spoke = hub_client, spoke_client
    # CreateOnly and ReadOnly meet objects that exist already, with other content.
    await spoke.create(CONFIGMAPS, configmap("cm-create-only", key="spoke"))
    await spoke.create(CONFIGMAPS, configmap("cm-read-only", key="spoke"))
    names = ["cm-update", "cm-create-only", "cm-read-only", "cm-read-only-missing", "cm-ssa"]
    body = work_body(
        "strategies",
        [configmap(n, key="hub") for n in names],
        manifestConfigs=[
            strategy("cm-update", "Update"),
            strategy("cm-create-only", "CreateOnly"),
            strategy("cm-read-only", "ReadOnly"),
            strategy("cm-read-only-missing", "ReadOnly"),
            strategy("cm-ssa", "ServerSideApply"),
        ],
    )
    await hub.create(MANIFESTWORKS, body)
    work = await wait_applied(hub, "strategies")
    # Every strategy succeeded: the same Applied condition for all five manifests,
    # ReadOnly of a missing object included (OCM's ReadOnly makes no request).
    assert_all_applied(work)
    amw = await get_applied_work(spoke, agent.hub_hash, "strategies")
    assert amw is not None
    amw_uid = amw["metadata"]["uid"]

    assert await _data(spoke, "cm-update") == {"key": "hub"}
    # CreateOnly: the content is never written, but the object is adopted.
    created_only = await spoke.get(CONFIGMAPS, "cm-create-only", "default")
    assert created_only["data"] == {"key": "spoke"}
    assert amw_owner_uids(created_only) == [amw_uid]
    # ReadOnly: untouched, never owned; a missing object stays missing.
    read_only = await spoke.get(CONFIGMAPS, "cm-read-only", "default")
    assert read_only["data"] == {"key": "spoke"}
    assert not read_only["metadata"].get("ownerReferences")
    assert not await exists(spoke, CONFIGMAPS, "cm-read-only-missing", "default")
    # ServerSideApply: applied by the field manager work-agent, owner added afterwards.
    ssa = await spoke.get(CONFIGMAPS, "cm-ssa", "default")
    assert ssa["data"] == {"key": "hub"}
    assert amw_owner_uids(ssa) == [amw_uid]
    assert any(
        e["manager"] == "work-agent" and e["operation"] == "Apply"
        for e in ssa["metadata"]["managedFields"]
    )

    async def recorded() -> list[str]:
        amw = await get_applied_work(spoke, agent.hub_hash, "strategies")
        return sorted(
            r["name"] for r in ((amw or {}).get("status") or {}).get("appliedResources") or []
        )

    async def all_recorded() -> bool:
        # Every existing object is recorded, ReadOnly included; the missing one is not.
        return await recorded() == ["cm-create-only", "cm-read-only", "cm-ssa", "cm-update"]

    await eventually(all_recorded, what="the AMW to record the four existing objects")
    # The missing ReadOnly object is not available and has no feedback condition: its
    # status is never read (OCM's agent skips the rest of a manifest it cannot read).
    # Available comes from the status controller, which may write after the recording.
    missing: dict[str, Any] = {}

    async def availability_reported() -> bool:
        missing.update(manifest_statuses(await get_work(hub, "strategies"))[3])
        return len(missing.get("conditions") or []) > 1

    await eventually(availability_reported, what="the missing object's Available condition")
    assert [c["type"] for c in missing["conditions"]] == ["Applied", "Available"], missing
    assert missing["conditions"][1]["reason"] == "ResourceNotAvailable"
    assert missing["statusFeedback"] == {}

    # Drift on the spoke: Update corrects it, CreateOnly and ReadOnly leave it.
    for name in ("cm-update", "cm-create-only", "cm-read-only"):
        await spoke.patch(CONFIGMAPS, name, {"data": {"key": "drift"}}, "default")
    work = await touch_and_wait(hub, spoke, agent, "strategies")
    assert_all_applied(work)
    assert await _data(spoke, "cm-update") == {"key": "hub"}
    assert await _data(spoke, "cm-create-only") == {"key": "drift"}
    assert await _data(spoke, "cm-read-only") == {"key": "drift"}

    # A new spec: Update and ServerSideApply write it, CreateOnly and ReadOnly do not.
    def v2(w: dict[str, Any]) -> None:
        for manifest in w["spec"]["workload"]["manifests"]:
            manifest["data"] = {"key": "v2"}

    updated = await update_spec(hub, "strategies", v2)
    work = await wait_applied(hub, "strategies", generation=updated["metadata"]["generation"])
    assert_all_applied(work)
    assert await _data(spoke, "cm-update") == {"key": "v2"}
    assert await _data(spoke, "cm-ssa") == {"key": "v2"}
    assert await _data(spoke, "cm-create-only") == {"key": "drift"}
    assert await _data(spoke, "cm-read-only") == {"key": "drift"}

    # A ServerSideApply failure of its own: ignoreFields that cannot be processed.
    def bad_ignore_fields(w: dict[str, Any]) -> None:
        w["spec"]["manifestConfigs"][4] = strategy(
            "cm-ssa",
            "ServerSideApply",
            ignoreFields=[{"condition": "OnSpokePresent", "jqPathExpressions": [".data["]}],
        )

    updated = await update_spec(hub, "strategies", bad_ignore_fields)
    generation = updated["metadata"]["generation"]
    work = await wait_applied(hub, "strategies", status="False", generation=generation)
    cond = work_condition(work, "Applied")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == (
        "AppliedManifestWorkFailed",
        "Failed to apply manifest work",
    )
    for ordinal in range(4):
        mc = manifest_condition(work, ordinal, "Applied")
        assert mc is not None
        assert (mc["status"], mc["message"], mc["observedGeneration"]) == (
            "True",
            "Apply manifest complete",
            generation,
        )
    mc = manifest_condition(work, 4, "Applied")
    assert mc is not None
    assert (mc["status"], mc["reason"], mc["observedGeneration"]) == (
        "False",
        "AppliedManifestSSAIgnoreFieldError",
        generation,
    )
    assert mc["message"].startswith(
        "Failed to process ignoreFields: JQ expression error in '.data[': "
    )

    # Deleting the work deletes what it owns (the adopted CreateOnly object too),
    # never the ReadOnly one.
    await hub.delete(MANIFESTWORKS, "strategies", CLUSTER)
    await gone(hub, MANIFESTWORKS, "strategies", CLUSTER)
    for name in ("cm-update", "cm-create-only", "cm-ssa"):
        assert not await exists(spoke, CONFIGMAPS, name, "default"), name
    assert await _data(spoke, "cm-read-only") == {"key": "drift"}


# -- (3) a server-side-apply conflict between two works -------------------------------


def replica_patch_work(replicas: int = 3) -> dict[str, Any]:
    """The docs' hello-work-replica-patch: ``replicas`` only, SSA, forced, its own manager."""
    return work_body(
        "hello-work-replica-patch",
        [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "hello", "namespace": "default"},
                "spec": {"replicas": replicas},
            }
        ],
        manifestConfigs=[
            manifest_config(
                "apps",
                "deployments",
                "hello",
                strategy={
                    "type": "ServerSideApply",
                    "serverSideApply": {"force": True, "fieldManager": "work-agent-another"},
                },
            )
        ],
    )


def replicas_owners(deployment: dict[str, Any]) -> set[str]:
    """The field managers owning ``spec.replicas``."""
    return {
        e["manager"]
        for e in deployment["metadata"].get("managedFields") or []
        if "f:replicas" in (e.get("fieldsV1") or {}).get("f:spec", {})
    }


async def wait_idle(runner: AgentRunner, name: str) -> float:
    """Wait until no reconcile of ``name`` runs; returns the delay until its next one."""
    queue = work_controller(runner).queue

    async def idle() -> bool:
        return name not in queue.processing() and name in queue.waiting()

    await eventually(idle, what=f"{name} to wait for its next reconcile")
    return queue.waiting()[name]


async def test_ssa_conflict_between_two_works_and_force(
    agent: AgentRunner, hub_client: KubeClient, spoke_client: KubeClient
) -> None:
    """The docs' scenario: the replica patch owns ``replicas``; the first work setting
    another value reports the conflict; ``force`` takes the field over."""
    hub, spoke = hub_client, spoke_client
    await hub.create(MANIFESTWORKS, hello_ssa_work())
    await wait_applied(hub, "hello-work-demo")
    await hub.create(MANIFESTWORKS, replica_patch_work())
    await wait_applied(hub, "hello-work-replica-patch")
    live = await spoke.get(DEPLOYMENTS, "hello", "default")
    assert live["spec"]["replicas"] == 3
    assert replicas_owners(live) == {"work-agent-another"}

    def replicas_2(w: dict[str, Any]) -> None:
        w["spec"]["workload"]["manifests"][0]["spec"]["replicas"] = 2

    updated = await update_spec(hub, "hello-work-demo", replicas_2)
    generation = updated["metadata"]["generation"]
    work = await wait_applied(hub, "hello-work-demo", status="False", generation=generation)
    mc = manifest_condition(work, 0, "Applied")
    assert mc is not None
    assert (mc["status"], mc["reason"], mc["message"], mc["observedGeneration"]) == (
        "False",
        "AppliedManifestFailed",
        'Failed to apply manifest: Apply failed with 1 conflict: conflict with "work-agent-another": .spec.replicas',
        generation,
    )
    cond = work_condition(work, "Applied")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == (
        "AppliedManifestWorkFailed",
        "Failed to apply manifest work",
    )
    live = await spoke.get(DEPLOYMENTS, "hello", "default")
    assert live["spec"]["replicas"] == 3
    # A conflict is not an error: no backoff retries, the periodic resync comes next.
    assert await wait_idle(agent, "hello-work-demo") > 100
    assert work_controller(agent).queue.num_requeues("hello-work-demo") == 0
    # The other work is untouched.
    other = await get_work(hub, "hello-work-replica-patch")
    assert_all_applied(other)

    def force(w: dict[str, Any]) -> None:
        w["spec"]["manifestConfigs"][0]["updateStrategy"]["serverSideApply"] = {"force": True}

    updated = await update_spec(hub, "hello-work-demo", force)
    work = await wait_applied(hub, "hello-work-demo", generation=updated["metadata"]["generation"])
    assert_all_applied(work)
    live = await spoke.get(DEPLOYMENTS, "hello", "default")
    assert live["spec"]["replicas"] == 2
    assert replicas_owners(live) == {"work-agent"}


# -- (4) the executor: denied, then granted ----------------------------------------------


def executor_work() -> dict[str, Any]:
    """The docs' executor example (ConfigMap default/test as executor default/executor1)."""
    return work_body(
        "example-manifestwork",
        [
            {
                "apiVersion": "v1",
                "data": {"a": "b"},
                "kind": "ConfigMap",
                "metadata": {"namespace": "default", "name": "test"},
            }
        ],
        executor={
            "subject": {
                "type": "ServiceAccount",
                "serviceAccount": {"namespace": EXECUTOR_NS, "name": EXECUTOR},
            }
        },
    )


@pytest.mark.parametrize("caching", [False, True], ids=["basic", "ExecutorValidatingCaches"])
async def test_executor_denied_then_granted(
    spoke: Cluster, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path, caching: bool
) -> None:
    """Without a RoleBinding the manifest is NotAllowed (requeued after 60 s, not an
    error); with it, the next reconcile applies the work. The spoke's authorizer
    decides (SubjectAccessReviews), never the agent on its own."""
    hub = hub_client
    await spoke_client.create(
        SERVICE_ACCOUNTS, {"metadata": {"name": EXECUTOR, "namespace": EXECUTOR_NS}}
    )
    await spoke_client.create(ROLES, EXECUTOR_ROLE)
    gates = frozenset({FEATURE_EXECUTOR_VALIDATING_CACHES}) if caching else frozenset()
    requests = RequestRecord(spoke)
    async with AgentRunner(agent_settings(tmp_path, feature_gates=gates)) as runner:
        await hub.create(MANIFESTWORKS, executor_work())
        work = await wait_applied(hub, "example-manifestwork", status="False")
        mc = manifest_condition(work, 0, "Applied")
        assert mc is not None
        # Core group: an empty group, hence two spaces (Go's "%s %s, %s %s").
        assert (mc["status"], mc["reason"], mc["message"]) == (
            "False",
            "AppliedManifestFailed",
            "Failed to apply manifest: not allowed to apply the resource  configmaps, "
            "default test, will try again in 1m0s",
        )
        cond = work_condition(work, "Applied")
        assert cond is not None
        assert (cond["reason"], cond["message"]) == (
            "AppliedManifestWorkFailed",
            "Failed to apply manifest work",
        )
        assert not await exists(spoke_client, CONFIGMAPS, "test", "default")
        # Asked of the spoke's authorizer; nothing was written for the denied manifest.
        assert requests.count("create", "subjectaccessreviews", 201) >= 1
        assert requests.count("create", "configmaps") == 0
        # Not an error: requeued after 60 s, without backoff.
        delay = await wait_idle(runner, "example-manifestwork")
        assert 30 < delay <= 60
        assert work_controller(runner).queue.num_requeues("example-manifestwork") == 0

        await spoke_client.create(ROLE_BINDINGS, EXECUTOR_BINDING)

        # A real API server's authorizer learns of the binding through an informer
        # of its own, which can lag behind the agent's.
        async def authorizer_allows() -> bool:
            review = await spoke_client.create(SUBJECT_ACCESS_REVIEWS, EXECUTOR_REVIEW)
            return bool(review["status"].get("allowed"))

        await eventually(authorizer_allows, what="the authorizer to see the RoleBinding")
        if caching:
            # The cached denial is dropped when the RBAC informer delivers the binding;
            # a review the refresh made before the authorizer saw it is made again
            # by the executor's recheck.
            assert runner.agent is not None
            validator = runner.agent.deps.executor
            bindings = validator.role_bindings  # type: ignore[attr-defined]

            async def seen() -> bool:
                return f"{EXECUTOR_NS}/{EXECUTOR_BINDING['metadata']['name']}" in bindings.store

            await eventually(seen, what="the agent to see the RoleBinding")
            await bindings.wait_handlers_idle()
            key = f"{EXECUTOR_NS}/{EXECUTOR}"
            cache = validator.cache  # type: ignore[attr-defined]

            async def no_denial_cached() -> bool:
                return all(cache.get(key, d) is not False for d in cache.dimensions(key))

            await eventually(no_denial_cached, what="no cached denial of the executor")
        # 60 s is too long for a test: a label change re-queues the work at once.
        work = await touch_and_wait(hub, spoke_client, runner, "example-manifestwork")
        assert_all_applied(work)
        live = await spoke_client.get(CONFIGMAPS, "test", "default")
        assert live["data"] == {"a": "b"}
        amw = await get_applied_work(spoke_client, runner.hub_hash, "example-manifestwork")
        assert amw is not None
        assert amw_owner_uids(live) == [amw["metadata"]["uid"]]
