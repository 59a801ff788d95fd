"""The work-agent chart on a real control plane: installed, run as its ServiceAccount, used.

Two real control planes (``make realkube``'s kube-apiserver and
kube-controller-manager v1.35): a hub with the ManifestWork CRD and the
cluster namespace, and a spoke with the rendered chart applied as ``helm
install`` would. The agent runs with the chart's own command line, as the
chart's ServiceAccount (a TokenRequest token) on the spoke and, on the hub, as
a ServiceAccount of the cluster namespace bound to exactly the rights the
chart's NOTES.txt tells operators to grant. A ManifestWork with a Namespace,
a Deployment, a Service, a ClusterRole and a CRD is applied and deleted:
nothing is forbidden (the apiservers' audit logs show no 403 for either
identity, the agent logs none) and nothing is left behind.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CLUSTER_ROLES,
    CRDS,
    DEPLOYMENTS,
    MANIFESTWORKS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    KubeClient,
    NotFound,
    Resource,
)
from tests.charts.rendering import (
    AGENT_CHART,
    AGENT_NAMESPACE,
    HUB_KUBECONFIG,
    Rendered,
    args_of,
    render_agent,
)
from tests.conftest import Kubectl, eventually
from tests.integration.conftest import (
    HUB_CRDS,
    WIDGET_CRD,
    wait_applied,
    work_body,
    work_condition,
)
from tests.support.controlplane import ControlPlane
from tests.support.manifests import deployment
from tests.support.prepare import install_crds, service_account_token
from tests.support.processes import ProgramProcess, start_agent_process
from tests.support.programs import CLUSTER, CRD_DIR
from tests.support.targets import PlanePool

pytestmark = pytest.mark.realkube

RELEASE = "work-agent"
# The agent's identity on the hub: a ServiceAccount of its cluster namespace.
HUB_ACCOUNT = "work-agent"
HUB_USER = f"system:serviceaccount:{CLUSTER}:{HUB_ACCOUNT}"
SPOKE_USER = f"system:serviceaccount:{AGENT_NAMESPACE}:{RELEASE}"
# What NOTES.txt tells the operator the hub identity needs in the cluster namespace.
HUB_RULES = [
    {
        "apiGroups": ["work.open-cluster-management.io"],
        "resources": ["manifestworks"],
        "verbs": ["get", "list", "watch", "update", "patch"],
    },
    {
        "apiGroups": ["work.open-cluster-management.io"],
        "resources": ["manifestworks/status"],
        "verbs": ["update", "patch"],
    },
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
]
NOTES_SENTENCE = (
    "get/list/watch/update/patch on manifestworks, update/patch on manifestworks/status,\n"
    "and create/patch/update on events"
)
WORKLOAD_NS = "chart-e2e"


@pytest.fixture
def planes(realkube_pool: PlanePool) -> Iterator[tuple[ControlPlane, ControlPlane]]:
    """(hub, spoke): two fresh real control planes."""
    hub, spoke = realkube_pool.take(), realkube_pool.take()
    try:
        yield hub, spoke
    finally:
        realkube_pool.release(hub)
        realkube_pool.release(spoke)


@contextlib.asynccontextmanager
async def admin(plane: ControlPlane, tmp_path: Path, name: str) -> AsyncIterator[KubeClient]:
    """A client of ``plane`` with the admin identity."""
    path = plane.write_kubeconfig(tmp_path / f"{name}-admin.kubeconfig")
    client = await KubeClient.from_kubeconfig(str(path), qps=0, name=f"{name}-admin")
    try:
        yield client
    finally:
        await client.close()


async def prepare_hub(hub: KubeClient) -> None:
    """The ManifestWork CRD, the cluster namespace, and the agent's hub identity with
    the rights NOTES.txt lists (a Role bound to a ServiceAccount of the namespace)."""
    await install_crds(hub, [CRD_DIR / f for f in HUB_CRDS])
    await hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
    await hub.create(SERVICE_ACCOUNTS, {"metadata": {"name": HUB_ACCOUNT}}, CLUSTER)
    await hub.create(ROLES, {"metadata": {"name": HUB_ACCOUNT}, "rules": HUB_RULES}, CLUSTER)
    binding = {
        "metadata": {"name": HUB_ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": HUB_ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": HUB_ACCOUNT, "namespace": CLUSTER}],
    }
    await hub.create(ROLE_BINDINGS, binding, CLUSTER)

    async def established() -> bool:
        crd = await hub.get(CRDS, "manifestworks.work.open-cluster-management.io")
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    await eventually(established, what="the ManifestWork CRD established")


async def install_chart(kubectl: Kubectl, rendered: Rendered) -> None:
    """What ``helm install --create-namespace`` does: namespace, CRDs, then the objects."""
    await kubectl("create", "namespace", AGENT_NAMESPACE)
    crds = sorted((AGENT_CHART / "crds").glob("*.yaml"))
    await kubectl("apply", "--server-side", *(f"--filename={p}" for p in crds))
    await kubectl("apply", "--server-side", "-f", "-", stdin=rendered.to_yaml())


def agent_args(rendered: Rendered, hub_kubeconfig: Path, spoke_kubeconfig: Path) -> list[str]:
    """The chart's command line, with the pod's paths replaced by this test's files.

    The hub kubeconfig is the one mounted from the chart's Secret; the spoke is
    reached with a kubeconfig instead of the pod's in-cluster credentials; the
    endpoint listens on loopback (port chosen by the agent).
    """
    args = args_of(rendered.one("Deployment"))
    assert args[0] == "agent"
    out = []
    for arg in args[1:]:
        name, _, _ = arg.partition("=")
        if name in ("--workload-source-config", "--terminate-on-files"):
            out.append(f"{name}={hub_kubeconfig}")
        elif name == "--listen":
            out.append("--listen=127.0.0.1:0")
        else:
            out.append(arg)
    return [*out, f"--spoke-kubeconfig={spoke_kubeconfig}"]


MANIFESTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOAD_NS}},
    deployment("web", WORKLOAD_NS, container="web"),
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": WORKLOAD_NS},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "chart-e2e-widget-reader"},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}],
    },
    WIDGET_CRD,
]
# (resource, name, namespace) of every object the work creates on the spoke.
APPLIED = [
    (NAMESPACES, WORKLOAD_NS, None),
    (DEPLOYMENTS, "web", WORKLOAD_NS),
    (SERVICES, "web", WORKLOAD_NS),
    (CLUSTER_ROLES, "chart-e2e-widget-reader", None),
    (CRDS, "widgets.example.com", None),
]


async def exists(client: KubeClient, res: Resource, name: str, namespace: str | None) -> bool:
    """Whether the object is there."""
    try:
        await client.get(res, name, namespace)
    except NotFound:
        return False
    return True


def forbidden_requests(plane: ControlPlane, user: str, since: int) -> tuple[int, list[str]]:
    """(requests ``user`` made, those answered 403) from the apiserver's audit log."""
    made, refused = 0, []
    for event in plane.audit_events(since):
        if event.get("user", {}).get("username") != user:
            continue
        made += 1
        if event.get("responseStatus", {}).get("code") == 403:
            ref = event.get("objectRef") or {}
            refused.append(f"{event.get('verb')} {ref.get('resource')} {ref.get('name', '')}")
    return made, refused


def forbidden_in_logs(log: str) -> list[str]:
    """Log lines of the agent that report a refusal."""
    return [
        line
        for line in log.splitlines()
        if "forbidden" in line.lower() or '"code": 403' in line or "not allowed" in line
    ]


async def test_chart_agent_on_real_control_planes(
    planes: tuple[ControlPlane, ControlPlane], tmp_path: Path
) -> None:
    hub_plane, spoke_plane = planes
    hub_start, spoke_start = hub_plane.audit_offset(), spoke_plane.audit_offset()
    async with (
        admin(hub_plane, tmp_path, "hub") as hub,
        admin(spoke_plane, tmp_path, "spoke") as spoke,
    ):
        await prepare_hub(hub)
        hub_token = await service_account_token(hub, CLUSTER, HUB_ACCOUNT)
        hub_kubeconfig = yaml.safe_dump(hub_plane.kubeconfig(token=hub_token, namespace=CLUSTER))

        rendered = render_agent({"clusterName": CLUSTER, "hubKubeconfig": hub_kubeconfig})
        assert NOTES_SENTENCE in rendered.notes  # the rights granted above are the documented ones
        assert HUB_KUBECONFIG not in rendered.to_yaml()
        await install_chart(Kubectl(spoke_plane.write_kubeconfig(tmp_path / "kubectl")), rendered)

        # The chart's :aggregate role has no rules of its own: kube-controller-manager's
        # aggregation controller fills it from the roles labelled for it.
        execution = await spoke.get(CLUSTER_ROLES, f"{RELEASE}:execution")

        async def aggregated() -> bool:
            role = await spoke.get(CLUSTER_ROLES, f"{RELEASE}:aggregate")
            return bool(role.get("rules")) and role["rules"] == execution["rules"]

        await eventually(aggregated, what="the :aggregate ClusterRole filled by kcm")

        # The pod's files: the hub kubeconfig from the chart's Secret, the spoke
        # credentials of the chart's ServiceAccount.
        secret = await spoke.get(SECRETS, f"{RELEASE}-hub-kubeconfig", AGENT_NAMESPACE)
        hub_file = tmp_path / "hub" / "kubeconfig"
        hub_file.parent.mkdir()
        hub_file.write_bytes(base64.b64decode(secret["data"]["kubeconfig"]))
        spoke_token = await service_account_token(spoke, AGENT_NAMESPACE, RELEASE)
        spoke_file = spoke_plane.write_kubeconfig(tmp_path / "spoke.kubeconfig", token=spoke_token)

        agent = await start_agent_process(tmp_path, *agent_args(rendered, hub_file, spoke_file))
        try:
            await apply_and_delete_a_work(hub, spoke, agent)
        finally:
            exit_code = await agent.terminate()
        log = agent.log()
    assert exit_code == 0, log[-3000:]
    assert forbidden_in_logs(log) == []
    for plane, user, start in (
        (hub_plane, HUB_USER, hub_start),
        (spoke_plane, SPOKE_USER, spoke_start),
    ):
        made, refused = await asyncio.to_thread(forbidden_requests, plane, user, start)
        assert made > 0, f"{user} made no request to {plane.name}"
        assert refused == [], f"{plane.name} refused {user}: {refused}"


async def apply_and_delete_a_work(
    hub: KubeClient, spoke: KubeClient, agent: ProgramProcess
) -> None:
    """Create the work, see everything applied, delete it, see everything gone."""
    await hub.create(MANIFESTWORKS, work_body("chart-e2e", MANIFESTS))
    try:
        work = await wait_applied(hub, "chart-e2e")
    except AssertionError:
        raise AssertionError(f"not applied; agent log:\n{agent.log()[-3000:]}") from None
    manifests = work["status"]["resourceStatus"]["manifests"]
    assert [m["conditions"][0]["status"] for m in manifests] == ["True"] * len(MANIFESTS), (
        json.dumps(manifests)
    )
    assert "forbidden" not in json.dumps(work["status"]).lower()
    for res, name, namespace in APPLIED:
        assert await exists(spoke, res, name, namespace), (res.plural, name)
    (applied,) = (await spoke.list(APPLIED_MANIFESTWORKS))["items"]

    async def available() -> bool:
        condition = work_condition(await hub.get(MANIFESTWORKS, "chart-e2e", CLUSTER), "Available")
        return condition is not None and condition["status"] == "True"

    await eventually(available, what="the work Available")
    work = await hub.get(MANIFESTWORKS, "chart-e2e", CLUSTER)
    assert "forbidden" not in json.dumps(work["status"]).lower()

    await hub.delete(MANIFESTWORKS, "chart-e2e", CLUSTER)

    async def nothing_left() -> bool:
        for res, name, namespace in APPLIED:
            if await exists(spoke, res, name, namespace):
                return False
        return not (
            await exists(hub, MANIFESTWORKS, "chart-e2e", CLUSTER)
            or await exists(spoke, APPLIED_MANIFESTWORKS, applied["metadata"]["name"], None)
        )

    await eventually(nothing_left, timeout=90, what="the work, its objects and its AMW gone")
