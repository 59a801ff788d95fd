"""Integration fixtures: a hub and a spoke, the OCM CRDs, and the real agent.

The hub and the spoke are kubesims or real control planes (the ``target``
fixture: every test runs on both unless marked ``kubesim_only``). Everything
goes through real HTTP: the agent runs ``build_agent(settings)`` under ``run_built`` in-process (or
``uv run workagent agent ...`` as a subprocess) against the two API servers. Tests observe the clusters with their own clients and
wait on conditions with :func:`tests.conftest.eventually`, never on time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from demo.examples import hello_deployment
from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    DEPLOYMENTS,
    MANIFESTWORKS,
    Conflict,
    KubeClient,
    NotFound,
)
from schemas.wire import MANIFEST_WORK_FINALIZER
from tests.conftest import eventually, pool_for
from tests.support.crds import crd, object_schema
from tests.support.manifests import configmap as configmap  # noqa: PLC0414 (re-exported: the suites import their work builders from here)
from tests.support.programs import CLUSTER, CRD_DIR, AgentRunner, agent_settings, open_test_client
from tests.support.targets import Cluster, open_cluster
from workagent.identity import applied_work_name, hub_hash

HUB_CRDS = ("work.open-cluster-management.io_manifestworks.yaml",)
SPOKE_CRDS = ("work.open-cluster-management.io_appliedmanifestworks.yaml",)


@pytest.fixture
def hub(cluster: Cluster, tmp_path: Path) -> Cluster:
    """The hub: the test's cluster (kubesim or a real control plane; tests/conftest.py),
    its kubeconfig also at ``hub.kubeconfig``; ``hub_client`` installs the CRDs."""
    cluster.write_kubeconfig(tmp_path / "hub.kubeconfig")
    return cluster


@pytest.fixture
def spoke_options() -> dict[str, Any]:
    """Keyword arguments of the spoke's :func:`open_cluster` (kubesim's options); a test
    module overrides this fixture, e.g. ``{"simulate_workloads": True}`` for Deployments
    that become available (on a real control plane too: tests/support/workloads.py)."""
    return {}


@pytest.fixture
async def spoke(
    target: str, request: pytest.FixtureRequest, tmp_path: Path, spoke_options: dict[str, Any]
) -> AsyncIterator[Cluster]:
    """The managed cluster (kubesim or a real control plane), namespace ``default``."""
    async with open_cluster(target, pool_for(request, target), **spoke_options) as cluster:
        cluster.write_kubeconfig(tmp_path / "spoke.kubeconfig")
        yield cluster


async def _test_client(
    tmp_path: Path, side: str, crds: Iterable[str], namespaces: Iterable[str] = ()
) -> KubeClient:
    """A test client (user agent ``integration-test``) of the ``side`` cluster (its
    kubeconfig ``<side>.kubeconfig``), these CRDs of charts/crds and namespaces created."""
    return await open_test_client(
        tmp_path / f"{side}.kubeconfig",
        user_agent="integration-test",
        name=f"test-{side}",
        crds=[CRD_DIR / name for name in crds],
        namespaces=namespaces,
    )


@pytest.fixture
async def hub_client(hub: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A test client of the hub, the ManifestWork CRD and namespace ``cluster1`` installed."""
    async with await _test_client(tmp_path, "hub", HUB_CRDS, [CLUSTER]) as client:
        yield client


@pytest.fixture
async def spoke_client(spoke: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A test client of the spoke, the AppliedManifestWork CRD installed."""
    async with await _test_client(tmp_path, "spoke", SPOKE_CRDS) as client:
        yield client


@pytest.fixture
def agent_overrides() -> dict[str, Any]:
    """What the ``agent`` fixture's settings change from :func:`agent_settings`; a suite's
    conftest overrides this fixture (the hostile suite: a short status sync period)."""
    return {}


@pytest.fixture
async def agent(
    hub_client: KubeClient,
    spoke_client: KubeClient,
    tmp_path: Path,
    agent_overrides: dict[str, Any],
) -> AsyncIterator[AgentRunner]:
    """The real agent for ``cluster1``, running in-process and ready."""
    async with AgentRunner(agent_settings(tmp_path, **agent_overrides)) as runner:
        yield runner


# -- helpers ----------------------------------------------------------------------------


def hub_hash_of(tmp_path: Path) -> str:
    """The hub hash of the test hub kubeconfig, from its server string."""
    doc = yaml.safe_load((tmp_path / "hub.kubeconfig").read_text())
    return hub_hash(doc["clusters"][0]["cluster"]["server"])


def work_body(name: str, manifests: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A ManifestWork in ``cluster1``."""
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": {"name": name, "namespace": CLUSTER},
        "spec": {"workload": {"manifests": manifests}, **spec},
    }


#: A namespaced CRD, ``widgets.example.com/v1`` (``spec.size``: integer), for works
#: that ship a CRD with its custom resources.
WIDGET_CRD = crd(
    "example.com", "Widget", schema=object_schema(spec=object_schema(size={"type": "integer"}))
)


async def get_work(hub_client: KubeClient, name: str) -> dict[str, Any]:
    """The ManifestWork ``name`` of ``cluster1``."""
    return await hub_client.get(MANIFESTWORKS, name, CLUSTER)


async def update_work(
    hub_client: KubeClient,
    name: str,
    change: Callable[[dict[str, Any]], None],
    *,
    subresource: str | None = None,
) -> dict[str, Any]:
    """Read work ``name``, ``change`` it and write it back; returns the written object.

    The agent writes the status concurrently (the status controller as well as
    the apply loop), so a read-modify-write is retried on 409 Conflict.
    """
    for _ in range(50):
        work = await get_work(hub_client, name)
        change(work)
        try:
            return await hub_client.update(MANIFESTWORKS, work, subresource=subresource)
        except Conflict:
            continue
    raise AssertionError(f"work {name}: could not be updated (conflicts)")


def work_condition(work: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    """The work-level condition ``ctype``."""
    for cond in (work.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def condition_is(ctype: str, status: str = "True") -> Callable[[dict[str, Any]], bool]:
    """A check for :func:`wait_work`: the work-level condition ``ctype`` has ``status``."""
    return lambda work: (work_condition(work, ctype) or {}).get("status") == status


def manifest_statuses(work: dict[str, Any]) -> list[dict[str, Any]]:
    """``status.resourceStatus.manifests``."""
    return list(((work.get("status") or {}).get("resourceStatus") or {}).get("manifests") or [])


def values_of(work: dict[str, Any], ordinal: int) -> list[tuple[str, dict[str, Any]]]:
    """(name, fieldValue) of a manifest's status feedback, in order."""
    for entry in manifest_statuses(work):
        if entry["resourceMeta"]["ordinal"] == ordinal:
            values = (entry.get("statusFeedback") or {}).get("values") or []
            return [(v["name"], v["fieldValue"]) for v in values]
    return []


def manifest_condition(work: dict[str, Any], ordinal: int, ctype: str) -> dict[str, Any] | None:
    """Condition ``ctype`` of the manifest with ``ordinal``."""
    for entry in manifest_statuses(work):
        if entry["resourceMeta"].get("ordinal") == ordinal:
            for cond in entry.get("conditions") or []:
                if cond.get("type") == ctype:
                    return dict(cond)
    return None


async def wait_applied(
    hub_client: KubeClient, name: str, *, status: str = "True", generation: int | None = None
) -> dict[str, Any]:
    """Wait until the work's ``Applied`` condition has ``status`` (for ``generation``)."""
    found: dict[str, Any] = {}

    async def check() -> bool:
        work = await get_work(hub_client, name)
        cond = work_condition(work, "Applied")
        gen = generation if generation is not None else work["metadata"].get("generation")
        if cond and cond["status"] == status and cond.get("observedGeneration") == gen:
            found.update(work)
            return True
        return False

    await eventually(check, what=f"work {name} Applied={status}")
    return found


async def exists(client: KubeClient, res: Any, name: str, namespace: str | None = None) -> bool:
    """Whether the object exists."""
    try:
        await client.get(res, name, namespace)
    except NotFound:
        return False
    return True


async def wait_gone(
    client: KubeClient, res: Any, name: str, namespace: str | None = None, *, what: str = ""
) -> None:
    """Wait until the object no longer exists."""

    async def gone() -> bool:
        return not await exists(client, res, name, namespace)

    await eventually(gone, what=what or f"{name} to be deleted")


async def wait_work(
    hub_client: KubeClient,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    what: str,
    *,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Wait until ``check(work)`` holds; returns that work. On a timeout the
    error shows the last work seen (generation and status conditions)."""
    found: dict[str, Any] = {}
    last: dict[str, Any] = {}

    async def ok() -> bool:
        work = await get_work(hub_client, name)
        last.clear()
        last.update(work)
        if check(work):
            found.clear()
            found.update(work)
            return True
        return False

    try:
        await eventually(ok, timeout=timeout, what=what)
    except AssertionError as err:
        status = last.get("status") or {}
        seen = {
            "generation": (last.get("metadata") or {}).get("generation"),
            "conditions": status.get("conditions"),
            "manifests": [
                m.get("conditions")
                for m in (status.get("resourceStatus") or {}).get("manifests") or []
            ],
        }
        raise AssertionError(f"{err}; last seen: {seen}") from err
    return found


async def create_and_wait(
    hub_client: KubeClient,
    body: dict[str, Any],
    check: Callable[[dict[str, Any]], bool],
    what: str,
    *,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Create work ``body`` on the hub and :func:`wait_work` until ``check`` holds."""
    await hub_client.create(MANIFESTWORKS, body)
    return await wait_work(hub_client, body["metadata"]["name"], check, what, timeout=timeout)


async def delete_work(hub_client: KubeClient, name: str, *, what: str = "") -> None:
    """Delete work ``name`` of ``cluster1`` and wait until it is gone from the hub."""
    await hub_client.delete(MANIFESTWORKS, name, CLUSTER)
    await wait_gone(hub_client, MANIFESTWORKS, name, CLUSTER, what=what or f"work {name} to go")


async def get_applied_work(
    spoke_client: KubeClient, the_hash: str, work: str
) -> dict[str, Any] | None:
    """The AppliedManifestWork of ``work``, or None."""
    try:
        return await spoke_client.get(APPLIED_MANIFESTWORKS, applied_work_name(the_hash, work))
    except NotFound:
        return None


async def forget_work(hub_client: KubeClient, name: str) -> None:
    """Delete work ``name`` from the hub without the agent's confirmation: its finalizer
    is dropped by hand first (the agent is stopped or cut off meanwhile)."""
    await hub_client.patch(MANIFESTWORKS, name, {"metadata": {"finalizers": None}}, CLUSTER)
    await hub_client.delete(MANIFESTWORKS, name, CLUSTER)


def has_cleanup_finalizer(work: dict[str, Any]) -> bool:
    """Whether the work carries the agent's cleanup finalizer."""
    return MANIFEST_WORK_FINALIZER in (work["metadata"].get("finalizers") or [])


def padded_deployment() -> dict[str, Any]:
    """Deployment ``hello`` with keys :func:`wait_padding_dropped` expects gone once a work
    changes it to plain ``hello_deployment(1)``."""
    padded = hello_deployment(1)
    padded["spec"]["minReadySeconds"] = 7
    padded["spec"]["revisionHistoryLimit"] = 3
    padded["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "MODE", "value": "x"}]
    return padded


def drop_padding(work: dict[str, Any]) -> None:
    """A change for ``update_work``: the work's one manifest becomes plain ``hello``."""
    work["spec"]["workload"]["manifests"] = [hello_deployment(1)]


async def wait_padding_dropped(spoke_client: KubeClient) -> None:
    """Wait until the keys of :func:`padded_deployment` are gone from ``hello`` (the
    default history limit back), and check that the defaults the agent's create owns stay."""

    async def dropped() -> bool:
        spec = (await spoke_client.get(DEPLOYMENTS, "hello", "default"))["spec"]
        container = spec["template"]["spec"]["containers"][0]
        return (
            "minReadySeconds" not in spec
            and spec.get("revisionHistoryLimit") == 10
            and "env" not in container
        )

    await eventually(dropped, what="the dropped keys gone and the default history limit back")
    spec = (await spoke_client.get(DEPLOYMENTS, "hello", "default"))["spec"]
    assert spec["progressDeadlineSeconds"] == 600  # a default the agent's create owns: kept
