"""Issue #5's end-to-end list, through the real agent against a hub and a spoke kubesim.

- Every ManifestWork example of the user docs (``../shared/seeds``) that creates a
  work is applied to the hub and reaches ``Applied=True`` and the outcome the docs
  describe: the replica patch owns ``replicas``, feedback values appear, ignored
  ``.data`` is left to the spoke, Jobs with a ``Complete`` rule complete, delete
  options keep what they orphan, the example with object-valued ``celExpressions``
  is rejected by the hub. One documented outcome differs on purpose: the docs'
  selector-less Job does not fail on its next update (see ``_check_defaulting_job``).
- The four update strategies through the agent, with the ``Applied`` messages.
- A server-side-apply conflict between two works over the same field, and
  ``force`` resolving it (the docs' hello / hello-work-replica-patch scenario).
- The executor check: a work whose executor may not write its manifest is
  ``NotAllowed``; a RoleBinding later makes it apply.

How the examples are completed (``tests.schemas.seeds`` extracts and parses them):

- ``metadata: ...`` becomes the name ``seed-<file>-<line>`` in ``cluster1``; the
  placeholder namespace ``<target managed cluster>`` is ``cluster1``;
- ``workload: ...`` becomes the docs' running example (the ``hello`` Deployment)
  plus one manifest for every other resource the example's ``manifestConfigs`` or
  orphaning rules name (a Service ``helloworld``, a Job, a custom resource), so
  those configs apply to something;
- an elided manifest (``# ... job specification``) takes its name and namespace
  from the ``resourceIdentifier`` of its kind and the docs' ``pi`` Job spec;
- the replica patch (a Deployment of ``replicas`` only) follows the docs' step 1:
  the SSA ``hello-work-demo`` work is created before it;
- the spoke gets what the docs assume exists there: namespace ``default``, the
  CRD of ``mycustomresources.example.com``, and the executor ``default/executor1``
  with a Role and RoleBinding for ConfigMaps.

Examples that show a status (``status:``) create nothing and are not applied.
The hub-finalizer case of the list (a foreign finalizer on a spoke resource keeps
the hub work until it is removed) is covered by ``test_deletion.py``
(``test_e2e_work_deletion_waits_for_every_applied_resource``).

NotAllowed requeues after a fixed 60 s (``NOT_ALLOWED_REQUEUE_SECONDS``; neither the
settings nor the validators' constructors shorten it), so after granting access the
executor test edits the work's labels: a label change resets the backoff and
re-queues the work at once (spec section 4.1).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from kubesim.sim import KubeSim
from schemas import SchemaValidationError, validate_object
from tests.conftest import eventually
from tests.integration.conftest import (
    CLUSTER,
    HUB_CRDS,
    SPOKE_CRDS,
    AgentRunner,
    agent_settings,
    exists,
    get_applied_work,
    get_work,
    install_crds,
    manifest_condition,
    manifest_statuses,
    wait_applied,
    work_body,
    work_condition,
)
from tests.schemas.seeds import SAMPLE_MANIFEST, Example, seeds_present, work_examples
from workagent.controllers.manifestwork import QUEUE_NAME
from workagent.kube import (
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    JOBS,
    MANIFESTWORKS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    Conflict,
    Invalid,
    KubeClient,
    NotFound,
    Resource,
    RESTMapper,
)
from workagent.runtime import Controller
from workagent.settings import FEATURE_EXECUTOR_VALIDATING_CACHES

AMW_KIND = "AppliedManifestWork"
TOUCH_LABEL = "e2e.test/touch"
_touches = itertools.count(1)

# -- the docs' objects --------------------------------------------------------------------

HELLO_IMAGE = "quay.io/asmacdo/busybox"


def hello_deployment(name: str = "hello", namespace: str = "default") -> dict[str, Any]:
    """The docs' running example: Deployment ``hello`` (hello-work-demo)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "hello",
                            "image": HELLO_IMAGE,
                            "command": ["sh", "-c", 'echo "Hello, Kubernetes!" && sleep 3600'],
                        }
                    ]
                },
            },
        },
    }


def pi_job(name: str, namespace: str) -> dict[str, Any]:
    """The docs' ``pi`` Job (no selector: the server generates one)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "pi",
                            "image": "perl:5.34.0",
                            "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
                        }
                    ],
                    "restartPolicy": "Never",
                }
            },
            "backoffLimit": 4,
        },
    }


def service(name: str, namespace: str) -> dict[str, Any]:
    """A Service for the docs' SelectivelyOrphan example (``helloworld``)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": "hello"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    """A ConfigMap manifest."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data or {"key": "value"},
    }


def custom_resource(name: str, namespace: str) -> dict[str, Any]:
    """An instance of the docs' ``mycustomresources.example.com``."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "MyCustomResource",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": 1},
    }


CUSTOM_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "mycustomresources.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "mycustomresources",
            "singular": "mycustomresource",
            "kind": "MyCustomResource",
            "listKind": "MyCustomResourceList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
                "subresources": {"status": {}},
            }
        ],
    },
}

BUILDERS = {
    ("apps", "deployments"): hello_deployment,
    ("batch", "jobs"): pi_job,
    ("", "services"): service,
    ("", "configmaps"): configmap,
    ("example.com", "mycustomresources"): custom_resource,
}
GROUP_OF_KIND = {"Deployment": "apps", "Job": "batch", "Service": "", "ConfigMap": ""}

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


# -- the seed examples as cases ------------------------------------------------------------


@dataclass
class SeedCase:
    """One docs example, completed, and what applying it must lead to."""

    example: Example
    doc: dict[str, Any]
    #: The hub refuses the example (the docs are wrong); the problems our schema names.
    rejected: list[str] = field(default_factory=list)
    #: Works that must exist first (the replica patch needs the hello Deployment).
    before: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.example.id

    @property
    def name(self) -> str:
        return str(self.doc["metadata"]["name"])

    @property
    def manifests(self) -> list[dict[str, Any]]:
        return list(self.doc["spec"]["workload"]["manifests"])


def _identifiers(spec: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(group, resource, namespace, name) named by manifestConfigs and orphaning rules."""
    out = []
    for config in spec.get("manifestConfigs") or []:
        rid = config["resourceIdentifier"]
        out.append((rid.get("group", ""), rid["resource"], rid.get("namespace", ""), rid["name"]))
    orphans = (spec.get("deleteOption") or {}).get("selectivelyOrphans") or {}
    for rule in orphans.get("orphaningRules") or []:
        out.append((rule.get("group", ""), rule["resource"], rule["namespace"], rule["name"]))
    return out


def _complete(example: Example, doc: dict[str, Any]) -> dict[str, Any]:
    """Fill in what the example elides (see the module docstring)."""
    doc = copy.deepcopy(doc)
    meta = doc["metadata"]
    if meta.get("name") == "elided":
        meta["name"] = f"seed-{example.source[:3]}-{example.line}"
    if not meta.get("namespace") or str(meta["namespace"]).startswith("<"):
        meta["namespace"] = CLUSTER
    spec = doc["spec"]
    for key in [k for k in spec if k.startswith("•")]:
        del spec[key]  # a plain-text render's bullet ("• Option 2") read as a key
    workload = spec["workload"]
    named = _identifiers(spec)
    if workload.get("manifests") == [SAMPLE_MANIFEST]:  # "workload: ..."
        manifests = [hello_deployment()]
        for group, resource, namespace, name in named:
            if (group, resource, namespace, name) != ("apps", "deployments", "default", "hello"):
                manifests.append(BUILDERS[(group, resource)](name, namespace))
        workload["manifests"] = manifests
    for i, manifest in enumerate(workload["manifests"]):
        if (manifest.get("metadata") or {}).get("name") == "elided":  # "# ... job specification"
            group = GROUP_OF_KIND[manifest["kind"]]
            _, resource, namespace, name = next(n for n in named if n[0] == group)
            workload["manifests"][i] = BUILDERS[(group, resource)](name, namespace)
    return doc


def _partial_ssa_deployment(doc: dict[str, Any]) -> bool:
    """The docs' hello-work-replica-patch: an SSA Deployment manifest of ``replicas`` only."""
    configs = doc["spec"].get("manifestConfigs") or []
    ssa = any((c.get("updateStrategy") or {}).get("type") == "ServerSideApply" for c in configs)
    return ssa and any(
        m["kind"] == "Deployment" and "template" not in (m.get("spec") or {})
        for m in doc["spec"]["workload"]["manifests"]
    )


def hello_ssa_work(name: str = "hello-work-demo") -> dict[str, Any]:
    """The docs' first SSA work: the hello Deployment with the ServerSideApply strategy."""
    return work_body(
        name,
        [hello_deployment()],
        manifestConfigs=[
            {
                "resourceIdentifier": {
                    "group": "apps",
                    "resource": "deployments",
                    "namespace": "default",
                    "name": "hello",
                },
                "updateStrategy": {"type": "ServerSideApply"},
            }
        ],
    )


def _cases() -> tuple[list[SeedCase], list[str]]:
    """Cases for every ManifestWork example; ids of the examples that only show a status."""
    cases, shown = [], []
    for example, raw in work_examples():
        if raw["kind"] != "ManifestWork":
            continue  # ManifestWorkReplicaSets are the hub controller's
        if "status" in raw:
            shown.append(example.id)
            continue
        doc = _complete(example, raw)
        case = SeedCase(example, doc)
        try:
            validate_object(doc)
        except SchemaValidationError as err:
            case.rejected = err.lines()
        if _partial_ssa_deployment(doc):
            case.before.append(hello_ssa_work())
        cases.append(case)
    return cases, shown


SEED_CASES, STATUS_ONLY = _cases() if seeds_present() else ([], [])
needs_seeds = pytest.mark.skipif(not seeds_present(), reason="../shared/seeds not present")


# -- module-wide clusters for the seed examples -----------------------------------------


@dataclass
class Env:
    """A hub, a spoke (workloads simulated) and the running agent, shared by the examples."""

    hub: KubeClient
    spoke: KubeClient
    runner: AgentRunner
    mapper: RESTMapper


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    tmp = tmp_path_factory.mktemp("seeds")
    async with KubeSim() as hub_sim, KubeSim(simulate_workloads=True) as spoke_sim:
        hub_sim.write_kubeconfig(tmp / "hub.kubeconfig")
        spoke_sim.write_kubeconfig(tmp / "spoke.kubeconfig")
        hub = await KubeClient.from_kubeconfig(
            str(tmp / "hub.kubeconfig"), user_agent="integration-test", qps=0
        )
        spoke = await KubeClient.from_kubeconfig(
            str(tmp / "spoke.kubeconfig"), user_agent="integration-test", qps=0
        )
        await install_crds(hub, HUB_CRDS)
        await hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
        await install_crds(spoke, SPOKE_CRDS)
        await spoke.create(CRDS, CUSTOM_CRD)
        await spoke.create(
            SERVICE_ACCOUNTS, {"metadata": {"name": EXECUTOR, "namespace": EXECUTOR_NS}}
        )
        await spoke.create(ROLES, EXECUTOR_ROLE)
        await spoke.create(ROLE_BINDINGS, EXECUTOR_BINDING)
        # A short status sync, so condition rules (Job Complete) show without waiting 30 s.
        runner = AgentRunner(agent_settings(tmp, status_sync_interval=0.5))
        await runner.start()
        try:
            yield Env(hub, spoke, runner, RESTMapper(spoke))
        finally:
            await runner.stop()
            await hub.close()
            await spoke.close()


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


def resync_delay(runner: AgentRunner, name: str) -> float:
    """Seconds until the work's next reconcile (periodic resync or requested requeue)."""
    return work_controller(runner).queue.waiting()[name]


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


async def delete_and_wait(
    client: KubeClient, res: Resource, name: str, namespace: str | None
) -> None:
    """Delete the object (if there) and wait until it is gone."""
    try:
        await client.delete(res, name, namespace)
    except NotFound:
        return
    await gone(client, res, name, namespace)


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


def orphaned(doc: dict[str, Any], group: str, res: Resource, manifest: dict[str, Any]) -> bool:
    """Whether the docs' delete option orphans this manifest's object."""
    option = doc["spec"].get("deleteOption") or {}
    policy = option.get("propagationPolicy", "Foreground")
    if policy == "Orphan":
        return True
    if policy != "SelectivelyOrphan":
        return False
    meta = manifest["metadata"]
    wanted = (group, res.plural, meta.get("namespace", "") if res.namespaced else "", meta["name"])
    rules = (option.get("selectivelyOrphans") or {}).get("orphaningRules") or []
    return any(
        (r.get("group", ""), r["resource"], r.get("namespace", ""), r["name"]) == wanted
        for r in rules
    )


def _defaulting_job(case: SeedCase) -> str | None:
    """For the docs' Job examples without condition rules (section "Treating
    defaulting/immutable fields"): ``"update"`` for the Update strategy without a
    selector (the docs' failing case), ``"fixed"`` for the two fixes (``manualSelector``
    with a selector, or ServerSideApply); None for other examples."""
    jobs = [m for m in case.manifests if m["kind"] == "Job"]
    configs = case.doc["spec"].get("manifestConfigs") or []
    if len(jobs) != 1 or any(c.get("conditionRules") for c in configs):
        return None
    ssa = any(
        (c.get("updateStrategy") or {}).get("type") == "ServerSideApply"
        and c["resourceIdentifier"]["resource"] == "jobs"
        for c in configs
    )
    return "fixed" if ssa or "selector" in jobs[0]["spec"] else "update"


def _completes(case: SeedCase) -> bool:
    """Whether a Job of the example has a ``WellKnownConditions`` Complete rule."""
    return any(
        c["resourceIdentifier"]["resource"] == "jobs"
        and any(
            r.get("type") == "WellKnownConditions" and r.get("condition") == "Complete"
            for r in c.get("conditionRules") or []
        )
        and any(
            m["kind"] == "Job" and m["metadata"]["name"] == c["resourceIdentifier"]["name"]
            for m in case.manifests
        )
        for c in case.doc["spec"].get("manifestConfigs") or []
    )


async def _check_defaulting_job(env: Env, case: SeedCase, kind: str) -> None:
    """The docs' Job examples: what the next update of the Job does.

    The docs (and OCM, spec 5.1.1 steps 4-5) say the selector-less Job fails with
    ``AppliedManifestFailed`` once the agent updates it: OCM compares the whole object,
    server defaults included, and PUTs the manifest, which drops the generated
    (immutable) selector. Our Update strategy compares and writes only what the
    manifest sets (``workagent/apply/kinds.py`` ``generic_plan``; docs/agent.md: a
    converged work costs no write, also after a restart), so all three examples stay
    applied and keep the generated selector. A real change of an immutable field
    still fails as the docs describe.
    """
    hub, spoke, runner = env.hub, env.spoke, env.runner
    job = next(m for m in case.manifests if m["kind"] == "Job")["metadata"]
    # A changed object (the Job controller would write status), then a reconcile.
    await spoke.patch(
        JOBS, job["name"], {"metadata": {"annotations": {"e2e/touched": "1"}}}, job["namespace"]
    )
    work = await touch_and_wait(hub, spoke, runner, case.name)
    assert_all_applied(work)
    assert resync_delay(runner, case.name) > 100  # a success: the periodic resync is next
    live = await spoke.get(JOBS, job["name"], job["namespace"])
    assert live["spec"]["selector"]["matchLabels"]
    if kind != "update":
        return

    def new_image(w: dict[str, Any]) -> None:
        template = w["spec"]["workload"]["manifests"][0]["spec"]["template"]
        template["spec"]["containers"][0]["image"] = "perl:5.36.0"

    updated = await update_spec(hub, case.name, new_image)
    work = await wait_applied(
        hub, case.name, status="False", generation=updated["metadata"]["generation"]
    )
    cond = manifest_condition(work, 0, "Applied")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "AppliedManifestFailed")
    assert cond["message"].startswith(
        f'Failed to apply manifest: Job.batch "{job["name"]}" is invalid: '
    )
    assert "spec.template" in cond["message"]
    assert "field is immutable" in cond["message"]


def _feedback_names(case: SeedCase) -> dict[int, set[str]]:
    """Ordinal -> the feedback value names the docs show for the example's rules (the
    ``hello`` Deployment: WellKnownStatus replicas, and the JSONPaths rule names)."""
    wanted: dict[int, set[str]] = {}
    for config in case.doc["spec"].get("manifestConfigs") or []:
        rid = config["resourceIdentifier"]
        for ordinal, manifest in enumerate(case.manifests):
            meta = manifest["metadata"]
            if manifest["kind"] != "Deployment" or (meta["namespace"], meta["name"]) != (
                rid.get("namespace"),
                rid["name"],
            ):
                continue
            for rule in config.get("feedbackRules") or []:
                names = wanted.setdefault(ordinal, set())
                if rule["type"] == "WellKnownStatus":
                    names |= {"ReadyReplicas", "Replicas", "AvailableReplicas"}
                else:
                    names |= {p["name"] for p in rule.get("jsonPaths") or []}
    return wanted


def _data_ignored_on_spoke(case: SeedCase) -> str | None:
    """The ConfigMap whose ``.data`` the docs' ignoreFields example leaves to the spoke."""
    for config in case.doc["spec"].get("manifestConfigs") or []:
        ssa = (config.get("updateStrategy") or {}).get("serverSideApply") or {}
        for entry in ssa.get("ignoreFields") or []:
            if entry.get("condition") == "OnSpokePresent" and ".data" in (
                entry.get("jsonPaths") or []
            ):
                return str(config["resourceIdentifier"]["name"])
    return None


async def _check_feedback(env: Env, case: SeedCase, wanted: dict[int, set[str]]) -> None:
    """The feedback values the docs show appear in the manifest's status."""

    async def reported() -> bool:
        work = await get_work(env.hub, case.name)
        for entry in manifest_statuses(work):
            names = wanted.get(entry["resourceMeta"]["ordinal"])
            values = (entry.get("statusFeedback") or {}).get("values") or []
            if names is not None and not names <= {v["name"] for v in values}:
                return False
        return True

    await eventually(reported, what=f"the feedback values of {case.name}")


async def _check_ignored_data(env: Env, case: SeedCase, name: str) -> None:
    """OnSpokePresent ``.data``: neither a spoke edit nor a hub change of ``data`` is
    applied while the ConfigMap exists (the docs' "Ignore fields in Server Side Apply")."""
    hub, spoke, runner = env.hub, env.spoke, env.runner
    await spoke.patch(CONFIGMAPS, name, {"data": {"key": "spoke"}}, "default")
    work = await touch_and_wait(hub, spoke, runner, case.name)
    assert_all_applied(work)
    assert (await spoke.get(CONFIGMAPS, name, "default"))["data"] == {"key": "spoke"}

    def hub_data(w: dict[str, Any]) -> None:
        for manifest in w["spec"]["workload"]["manifests"]:
            if manifest["kind"] == "ConfigMap" and manifest["metadata"]["name"] == name:
                manifest["data"] = {"key": "hub-v2"}

    updated = await update_spec(hub, case.name, hub_data)
    work = await wait_applied(hub, case.name, generation=updated["metadata"]["generation"])
    assert_all_applied(work)
    assert (await spoke.get(CONFIGMAPS, name, "default"))["data"] == {"key": "spoke"}


# -- (1) the docs' examples ------------------------------------------------------------


@needs_seeds
def test_every_work_example_of_the_docs_is_exercised() -> None:
    """Each ManifestWork example is a case below, or only shows a status."""
    works = [ex.id for ex, doc in work_examples() if doc["kind"] == "ManifestWork"]
    assert sorted([c.id for c in SEED_CASES] + STATUS_ONLY) == sorted(works)
    assert len(SEED_CASES) >= 40
    # What the cases cover, so a change of the seeds or of the filling shows here.
    assert sum(bool(c.rejected) for c in SEED_CASES) == 1
    assert sum(bool(c.before) for c in SEED_CASES) == 3
    assert sum(_defaulting_job(c) == "update" for c in SEED_CASES) == 3
    assert sum(_defaulting_job(c) == "fixed" for c in SEED_CASES) == 6
    assert sum(_completes(c) for c in SEED_CASES) >= 4
    assert sum(bool(_feedback_names(c)) for c in SEED_CASES) >= 3
    assert sum(_data_ignored_on_spoke(c) is not None for c in SEED_CASES) == 1


@needs_seeds
@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", SEED_CASES, ids=lambda c: c.id)
async def test_docs_example(env: Env, case: SeedCase) -> None:
    hub, spoke, runner = env.hub, env.spoke, env.runner
    if case.rejected:
        # The docs are wrong here; the hub's CRD schema refuses the work as ours does.
        with pytest.raises(Invalid) as err:
            await hub.create(MANIFESTWORKS, case.doc)
        for line in case.rejected:
            assert line.split(":")[0] in err.value.message
        return

    created: list[str] = []
    resources = [
        (m, await env.mapper.resource_for(m["apiVersion"], m["kind"])) for m in case.manifests
    ]
    try:
        for before in case.before:
            await hub.create(MANIFESTWORKS, before)
            created.append(before["metadata"]["name"])
            await wait_applied(hub, before["metadata"]["name"])
        await hub.create(MANIFESTWORKS, case.doc)
        created.append(case.name)
        work = await wait_applied(hub, case.name)
        assert_all_applied(work)

        # The objects are on the spoke, owned by the AMW unless orphaned.
        amw = await get_applied_work(spoke, runner.hub_hash, case.name)
        assert amw is not None
        for manifest, res in resources:
            meta = manifest["metadata"]
            live = await spoke.get(res, meta["name"], meta.get("namespace"))
            owned = not orphaned(case.doc, res.group, res, manifest)
            assert (amw["metadata"]["uid"] in amw_owner_uids(live)) is owned, meta["name"]

        if case.before:
            # The replica patch owns spec.replicas under its own field manager.
            live = await spoke.get(DEPLOYMENTS, "hello", "default")
            assert live["spec"]["replicas"] == 3
            owners = {
                e["manager"]
                for e in live["metadata"]["managedFields"]
                if "f:replicas" in (e.get("fieldsV1") or {}).get("f:spec", {})
            }
            assert owners == {"work-agent-another"}

        defaulting = _defaulting_job(case)
        if defaulting is not None:
            await _check_defaulting_job(env, case, defaulting)

        feedback = _feedback_names(case)
        if feedback:
            await _check_feedback(env, case, feedback)
        ignored = _data_ignored_on_spoke(case)
        if ignored is not None:
            await _check_ignored_data(env, case, ignored)

        if _completes(case):

            async def complete() -> bool:
                cond = work_condition(await get_work(hub, case.name), "Complete")
                return cond is not None and cond["status"] == "True"

            await eventually(complete, what=f"{case.name} to be Complete")

        # Deleting the work deletes what it owns and keeps what it orphans.
        await hub.delete(MANIFESTWORKS, case.name, CLUSTER)
        await gone(hub, MANIFESTWORKS, case.name, CLUSTER)
        for manifest, res in resources:
            meta = manifest["metadata"]
            kept = await exists(spoke, res, meta["name"], meta.get("namespace"))
            if not case.before:  # the earlier work still owns the replica patch's object
                assert kept is orphaned(case.doc, res.group, res, manifest), meta["name"]
    finally:
        for name in created:
            await delete_and_wait(hub, MANIFESTWORKS, name, CLUSTER)
        for manifest, res in resources:
            meta = manifest["metadata"]
            await delete_and_wait(spoke, res, meta["name"], meta.get("namespace"))


# -- (2) the four update strategies ------------------------------------------------------


def strategy(name: str, kind: str, **server_side_apply: Any) -> dict[str, Any]:
    """A manifestConfig giving ConfigMap ``default/<name>`` the update strategy ``kind``."""
    update: dict[str, Any] = {"type": kind}
    if server_side_apply:
        update["serverSideApply"] = server_side_apply
    return {
        "resourceIdentifier": {
            "group": "",
            "resource": "configmaps",
            "namespace": "default",
            "name": name,
        },
        "updateStrategy": update,
    }


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
            {
                "resourceIdentifier": {
                    "group": "apps",
                    "resource": "deployments",
                    "namespace": "default",
                    "name": "hello",
                },
                "updateStrategy": {
                    "type": "ServerSideApply",
                    "serverSideApply": {"force": True, "fieldManager": "work-agent-another"},
                },
            }
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
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path, caching: bool
) -> None:
    """Without a RoleBinding the manifest is NotAllowed (requeued after 60 s, not an
    error); with it, the next reconcile applies the work."""
    hub, spoke = hub_client, spoke_client
    await spoke.create(SERVICE_ACCOUNTS, {"metadata": {"name": EXECUTOR, "namespace": EXECUTOR_NS}})
    await spoke.create(ROLES, EXECUTOR_ROLE)
    gates = frozenset({FEATURE_EXECUTOR_VALIDATING_CACHES}) if caching else frozenset()
    runner = AgentRunner(agent_settings(tmp_path, feature_gates=gates))
    await runner.start()
    try:
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
        assert not await exists(spoke, CONFIGMAPS, "test", "default")
        # Not an error: requeued after 60 s, without backoff.
        delay = await wait_idle(runner, "example-manifestwork")
        assert 30 < delay <= 60
        assert work_controller(runner).queue.num_requeues("example-manifestwork") == 0

        await spoke.create(ROLE_BINDINGS, EXECUTOR_BINDING)
        if caching:
            # The cached denial is dropped when the RBAC informer delivers the binding.
            assert runner.agent is not None
            validator = runner.agent.deps.executor
            bindings = validator.role_bindings  # type: ignore[attr-defined]

            async def seen() -> bool:
                return f"{EXECUTOR_NS}/{EXECUTOR_BINDING['metadata']['name']}" in bindings.store

            await eventually(seen, what="the agent to see the RoleBinding")
            await bindings.wait_handlers_idle()
        # 60 s is too long for a test: a label change re-queues the work at once.
        work = await touch_and_wait(hub, spoke, runner, "example-manifestwork")
        assert_all_applied(work)
        live = await spoke.get(CONFIGMAPS, "test", "default")
        assert live["data"] == {"a": "b"}
        amw = await get_applied_work(spoke, runner.hub_hash, "example-manifestwork")
        assert amw is not None
        assert amw_owner_uids(live) == [amw["metadata"]["uid"]]
    finally:
        await runner.stop()
