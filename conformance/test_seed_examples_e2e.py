"""Every ManifestWork example of the user documentation, through the real agent.

Every ManifestWork example of the user docs (``seeds/`` of the reference folder) that
creates a work is applied to the hub and reaches ``Applied=True`` and the outcome the
docs describe: the replica patch owns ``replicas``, feedback values appear, ignored
``.data`` is left to the spoke, Jobs with a ``Complete`` rule complete, delete options
keep what they orphan, the example with object-valued ``celExpressions`` is rejected by
the hub. One documented outcome differs on purpose: the docs' selector-less Job does
not fail on its next update (see ``_check_defaulting_job``).

How the examples are completed (``conformance.seeds`` extracts and parses them):

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
The objects and helpers shared with the other end-to-end tests are in
``tests/integration/test_agent_e2e.py``.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from conformance.seeds import SAMPLE_MANIFEST, Example, work_examples
from kubesim.sim import KubeSim
from ocmkit.kube import (
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    JOBS,
    MANIFESTWORKS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    Invalid,
    KubeClient,
    NotFound,
    Resource,
    RESTMapper,
)
from schemas import SchemaValidationError, validate_object
from tests.conftest import eventually
from tests.integration.conftest import (
    HUB_CRDS,
    SPOKE_CRDS,
    exists,
    get_applied_work,
    get_work,
    manifest_condition,
    manifest_statuses,
    wait_applied,
    work_condition,
)
from tests.integration.test_agent_e2e import (
    EXECUTOR,
    EXECUTOR_BINDING,
    EXECUTOR_NS,
    EXECUTOR_ROLE,
    amw_owner_uids,
    assert_all_applied,
    configmap,
    gone,
    hello_deployment,
    hello_ssa_work,
    touch_and_wait,
    update_spec,
    work_controller,
)
from tests.support.crds import crd
from tests.support.manifests import pi_job
from tests.support.prepare import install_crds
from tests.support.programs import CLUSTER, CRD_DIR, AgentRunner, agent_settings

# -- the docs' objects --------------------------------------------------------------------


def service(name: str, namespace: str) -> dict[str, Any]:
    """A Service for the docs' SelectivelyOrphan example (``helloworld``)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": "hello"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def custom_resource(name: str, namespace: str) -> dict[str, Any]:
    """An instance of the docs' ``mycustomresources.example.com``."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "MyCustomResource",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": 1},
    }


CUSTOM_CRD = crd("example.com", "MyCustomResource", list_kind=True, status_subresource=True)

BUILDERS: dict[tuple[str, str], Callable[[str, str], dict[str, Any]]] = {
    ("apps", "deployments"): hello_deployment,
    ("batch", "jobs"): pi_job,
    ("", "services"): service,
    ("", "configmaps"): configmap,
    ("example.com", "mycustomresources"): custom_resource,
}
GROUP_OF_KIND = {"Deployment": "apps", "Job": "batch", "Service": "", "ConfigMap": ""}


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


SEED_CASES, STATUS_ONLY = _cases()


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
        await install_crds(hub, [CRD_DIR / f for f in HUB_CRDS])
        await hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
        await install_crds(spoke, [CRD_DIR / f for f in SPOKE_CRDS])
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


def resync_delay(runner: AgentRunner, name: str) -> float:
    """Seconds until the work's next reconcile (periodic resync or requested requeue)."""
    return work_controller(runner).queue.waiting()[name]


async def delete_and_wait(
    client: KubeClient, res: Resource, name: str, namespace: str | None
) -> None:
    """Delete the object (if there) and wait until it is gone."""
    try:
        await client.delete(res, name, namespace)
    except NotFound:
        return
    await gone(client, res, name, namespace)


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


# -- the docs' examples ------------------------------------------------------------


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
