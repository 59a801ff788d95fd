"""Secret data and manifest contents never reach a log line (design.md, Observability).

The agent, the hub manager and the admission webhook run as the commands an
operator starts (``python -m workagent agent``, ``python -m hubcontroller
manager`` and ``webhook-server``), each at debug level, against a hub and a
managed cluster: kubesim, and real kube-apiservers. Every value in the works is a sentinel
token; the works go through every path that handles them: creation through
the webhook, a ManifestWorkReplicaSet fanned out by the manager, apply
(Update and ServerSideApply), status feedback (JSONPaths, JSON raw, a Secret
field), manifests that fail (an API error, a Secret the agent refuses, an SSA
field conflict), webhook denials, an update with stale-resource deletion, and
deletion. Then every line any process printed, and every record logged in
this process (kubesim, on its leg), is searched for the token, plain and
base64-encoded.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    SECRETS,
    KubeClient,
    KubeError,
    NotFound,
    Resource,
)
from schemas.wire import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK,
    GATE_MANIFEST_WORK_REPLICA_SET,
    GATE_RAW_FEEDBACK_JSON_STRING,
    PLACEMENT_LABEL,
)
from tests.conftest import eventually, pool_for
from tests.integration.conftest import manifest_statuses, work_body
from tests.support.manifests import configmap, json_paths, manifest_config, strategy
from tests.support.prepare import ensure_namespace, install_crds, typed, wait_admission
from tests.support.processes import REPO, ProgramProcess, free_port, start_module
from tests.support.targets import Cluster, open_cluster
from tests.webhook.helpers import MW_HOOK, install_cert, make_cert, registered_hooks

CLUSTER = "cluster1"
CRD_DIR = REPO / "charts" / "crds"
SPOKE_CRDS = ("work.open-cluster-management.io_appliedmanifestworks.yaml",)
WEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)
# Slow, shared CI machines start three Python processes at once.
PATIENCE = 90.0

# One random prefix for every secret value: a needle found in a log is ours.
TOKEN = f"leak{uuid.uuid4().hex}"


def token(label: str) -> str:
    """A sentinel value: the shared prefix and a label saying where it was put."""
    return f"{TOKEN}{label}"


def b64(text: str) -> str:
    """Base64 of ``text``, as Secret ``data`` carries it."""
    return base64.b64encode(text.encode()).decode()


def needles() -> list[str]:
    """The prefix, and its base64 form at each of the three byte alignments.

    A value embedded anywhere in a base64-encoded blob shows one of these: the
    groups that encode only prefix bytes do not depend on what surrounds it.
    """
    found = [TOKEN]
    raw = TOKEN.encode()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        whole_groups = (shift + len(raw)) // 3
        # The first group mixes padding bytes with the prefix when shifted.
        found.append(encoded[4 if shift else 0 : 4 * whole_groups])
    return found


def leaks(lines: Iterable[str]) -> list[str]:
    """The lines containing any needle."""
    wanted = needles()
    return [line for line in lines if any(n in line for n in wanted)]


# -- objects ------------------------------------------------------------------------------


def secret(name: str, **fields: Any) -> dict[str, Any]:
    """A Secret manifest in ``default``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        **fields,
    }


def feedback_config(resource: str, name: str, *paths: tuple[str, str]) -> dict[str, Any]:
    """A manifestConfig reading ``paths`` (name, JSONPath) of one object in ``default``."""
    return manifest_config("", resource, name, feedback=[json_paths(*paths)])


def secrets_work(generation: int) -> dict[str, Any]:
    """A Secret (data and stringData), a ConfigMap, and feedback read from both.

    Generation 2 changes the Secret's values and drops the ConfigMap (an update,
    and a stale resource to delete).
    """
    manifests = [
        secret(
            "app-credentials",
            type="Opaque",
            data={"token": b64(token(f"data{generation}"))},
            stringData={"password": token(f"stringdata{generation}")},
        )
    ]
    configs = [feedback_config("secrets", "app-credentials", ("token", ".data.token"))]
    if generation == 1:
        manifests.append(configmap("app-settings", key=token("configmap")))
        configs.append(
            feedback_config("configmaps", "app-settings", ("raw", ".data"), ("key", ".data.key"))
        )
    return work_body("secrets", manifests, manifestConfigs=configs)


def failing_work() -> dict[str, Any]:
    """Manifests that fail: an API error, and two Secrets the agent or the server refuse."""
    return work_body(
        "failing",
        [
            configmap("nowhere", "no-such-namespace", key=token("missingns")),
            secret(
                "conflicting",
                data={"k": b64(token("conflictdata"))},
                stringData={"k": token("conflictstring")},
            ),
            secret("not-base64", data={"k": token("notbase64") + "!!"}),
        ],
    )


def ssa_work() -> dict[str, Any]:
    """A ConfigMap applied server-side over a field another manager owns: a conflict."""
    return work_body(
        "ssa",
        [configmap("contested", key=token("ssaours"))],
        manifestConfigs=[strategy("contested", "ServerSideApply")],
    )


def replica_set() -> dict[str, Any]:
    """A ManifestWorkReplicaSet placing a Secret on every cluster of placement ``p``."""
    return {
        "apiVersion": MANIFESTWORK_REPLICASETS.api_version,
        "kind": MANIFESTWORK_REPLICASETS.kind,
        "metadata": {"name": "fanout", "namespace": CLUSTER},
        "spec": {
            "placementRefs": [{"name": "p", "rolloutStrategy": {"type": "All"}}],
            "manifestWorkTemplate": {
                "workload": {
                    "manifests": [
                        secret("fanned-out", stringData={"key": token("replicaset")}),
                    ]
                }
            },
        },
    }


# -- fixtures -----------------------------------------------------------------------------


async def client_of(cluster: Cluster, tmp_path: Path, name: str) -> KubeClient:
    """A test client of ``cluster``, its kubeconfig written to ``tmp_path/<name>.kubeconfig``."""
    kubeconfig = cluster.write_kubeconfig(tmp_path / f"{name}.kubeconfig")
    return await KubeClient.from_kubeconfig(
        str(kubeconfig), user_agent="security-test", qps=0, name=f"test-{name}"
    )


class Clusters:
    """The hub and the managed cluster, with a client of each."""

    def __init__(self, hub: KubeClient, spoke: KubeClient, directory: Path) -> None:
        self.hub = hub
        self.spoke = spoke
        self.directory = directory
        self.hub_kubeconfig = directory / "hub.kubeconfig"
        self.spoke_kubeconfig = directory / "spoke.kubeconfig"


@pytest.fixture
async def clusters(
    tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> AsyncIterator[Clusters]:
    """Hub (every OCM CRD, namespace cluster1) and spoke (AMW CRD, namespace default),
    kubesim or real kube-apiservers."""
    pool = pool_for(request, target)
    async with (
        open_cluster(target, pool) as hub_cluster,
        open_cluster(target, pool) as spoke_cluster,
    ):
        hub = await client_of(hub_cluster, tmp_path, "hub")
        spoke = await client_of(spoke_cluster, tmp_path, "spoke")
        try:
            await install_crds(hub, sorted(CRD_DIR.glob("*.yaml")))
            await hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
            await install_crds(spoke, [CRD_DIR / name for name in SPOKE_CRDS])
            await ensure_namespace(spoke, "default")
            yield Clusters(hub, spoke, tmp_path)
        finally:
            await hub.close()
            await spoke.close()


def webhook_registration(port: int, ca_pem: bytes) -> dict[str, Any]:
    """OCM's registration of both webhooks, pointing at ``https://127.0.0.1:<port>``."""

    hooks = registered_hooks(
        lambda path: {"url": f"https://127.0.0.1:{port}{path}", "caBundle": b64(ca_pem.decode())}
    )
    return {"metadata": {"name": MW_HOOK}, "webhooks": hooks}


async def start_webhook(
    clusters: Clusters,
) -> tuple[ProgramProcess, Callable[[], Awaitable[None]]]:
    """Start ``hubcontroller webhook-server`` at debug level; the second value waits
    until it is ready and registers it with the hub."""
    cert = make_cert()
    certdir = clusters.directory / "certs"
    install_cert(certdir, cert)
    port, health = free_port(), free_port()
    process = await start_module(
        "webhook",
        clusters.directory,
        "hubcontroller",
        "webhook-server",
        f"--port={port}",
        f"--health-probe-port={health}",
        f"--metrics-port={free_port()}",
        f"--certdir={certdir}",
        f"--kubeconfig={clusters.hub_kubeconfig}",
        f"--feature-gates={GATE_MANIFEST_WORK_REPLICA_SET}=true",
        "--log-level=debug",
    )

    async def ready() -> bool:
        if process.exited() is not None:
            raise AssertionError(f"the webhook exited:\n{process.log()}")
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{health}/readyz") as answer,
            ):
                return answer.status == 200
        except aiohttp.ClientError:
            return False

    async def register() -> None:
        await eventually(ready, timeout=PATIENCE, what="the webhook to be ready")
        await clusters.hub.create(WEBHOOKS, webhook_registration(port, cert.cert_pem))
        probe = work_body("probe", [configmap("twice"), configmap("twice")])
        await wait_admission(clusters.hub, MANIFESTWORKS, probe, MW_HOOK)

    return process, register


async def start_manager(clusters: Clusters) -> ProgramProcess:
    """``hubcontroller manager`` at debug level with both controllers on."""
    gates = f"{GATE_MANIFEST_WORK_REPLICA_SET}=true,{GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK}=true"
    return await start_module(
        "manager",
        clusters.directory,
        "hubcontroller",
        "manager",
        f"--kubeconfig={clusters.hub_kubeconfig}",
        f"--feature-gates={gates}",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
        "--kube-api-qps=0",
        "--log-level=debug",
    )


async def start_agent(clusters: Clusters) -> ProgramProcess:
    """``workagent agent`` at debug level, feedback as JSON raw, status every second."""
    return await start_module(
        "agent",
        clusters.directory,
        "workagent",
        "agent",
        f"--spoke-cluster-name={CLUSTER}",
        f"--workload-source-config={clusters.hub_kubeconfig}",
        f"--spoke-kubeconfig={clusters.spoke_kubeconfig}",
        f"--feature-gates={GATE_RAW_FEEDBACK_JSON_STRING}=true",
        "--status-sync-interval=1s",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
        "--kube-api-qps=0",
        "--hub-kube-api-qps=0",
        "--log-level=debug",
    )


# -- observing ----------------------------------------------------------------------------


async def hub_work(clusters: Clusters, name: str) -> dict[str, Any] | None:
    """The work ``name`` in cluster1, or None."""
    try:
        return await clusters.hub.get(MANIFESTWORKS, name, CLUSTER)
    except NotFound:
        return None


def condition(conditions: Any, ctype: str) -> dict[str, Any] | None:
    """The condition ``ctype`` of a list."""
    return next((dict(c) for c in conditions or [] if c.get("type") == ctype), None)


async def wait_work(
    clusters: Clusters, processes: list[ProgramProcess], name: str, check: Any, what: str
) -> dict[str, Any]:
    """Wait until ``check(work)`` holds for work ``name``; fail early if a process died."""
    seen: dict[str, Any] = {}

    async def done() -> bool:
        for process in processes:
            if process.exited() is not None:
                raise AssertionError(f"{process.name} exited:\n{process.log()[-4000:]}")
        found = await hub_work(clusters, name)
        if found is not None and check(found):
            seen.update(found)
            return True
        return False

    await eventually(done, timeout=PATIENCE, what=what)
    return seen


def applied(status: str, generation: int = 1) -> Any:
    """A check: the work-level Applied condition has ``status`` for ``generation``."""

    def check(found: dict[str, Any]) -> bool:
        cond = condition((found.get("status") or {}).get("conditions"), "Applied")
        return (
            cond is not None
            and cond["status"] == status
            and cond.get("observedGeneration") == generation
            and found["metadata"].get("generation") == generation
        )

    return check


def refused(manifests: int) -> Any:
    """A check: Applied=False for generation 1, with ``manifests`` manifest statuses."""
    return lambda found: applied("False")(found) and len(manifest_statuses(found)) == manifests


def feedback_values(found: dict[str, Any]) -> dict[str, Any]:
    """Every feedback value of the work by name."""
    values: dict[str, Any] = {}
    for entry in manifest_statuses(found):
        for value in (entry.get("statusFeedback") or {}).get("values") or []:
            values[value["name"]] = value["fieldValue"]
    return values


async def gone(clusters: Clusters, name: str) -> bool:
    """Whether the work ``name`` no longer exists on the hub."""
    return await hub_work(clusters, name) is None


# -- the test -----------------------------------------------------------------------------


async def test_no_secret_or_manifest_content_in_any_log(
    clusters: Clusters, caplog: pytest.LogCaptureFixture
) -> None:
    # kubesim and its aiohttp server run in this process (the test clients' own
    # request lines would only add noise).
    for logger in ("kubesim", "aiohttp"):
        caplog.set_level(logging.DEBUG, logger=logger)
    spoke = clusters.spoke
    # Someone else owns the contested field before the work arrives (an SSA conflict).
    await spoke.patch(
        CONFIGMAPS,
        "contested",
        configmap("contested", key=token("ssatheirs")),
        "default",
        patch_type="apply",
        field_manager="other-manager",
    )
    # All three start at once (interpreter start-up is most of the wait); works
    # are only written once the webhook is registered.
    webhook, register = await start_webhook(clusters)
    processes = [webhook, await start_manager(clusters), await start_agent(clusters)]
    try:
        await register()
        await run_scenario(clusters, processes)
    finally:
        codes = {p.name: await p.terminate() for p in processes}
    assert codes == {"webhook": 0, "manager": 0, "agent": 0}, {
        p.name: p.log()[-4000:] for p in processes
    }

    for process in processes:
        lines = process.log().splitlines()
        # Debug lines prove the most talkative level was on.
        assert any(json.loads(line).get("level") == "debug" for line in lines), process.name
        assert leaks(lines) == [], f"{process.name} logged a secret value"
    assert leaks(r.getMessage() for r in caplog.records) == []


async def run_scenario(clusters: Clusters, processes: list[ProgramProcess]) -> None:
    """Every path that handles the works' contents, each waited for on the hub."""
    hub, spoke = clusters.hub, clusters.spoke

    await hub.create(MANIFESTWORKS, secrets_work(1))
    await hub.create(MANIFESTWORKS, failing_work())
    await hub.create(MANIFESTWORKS, ssa_work())
    await hub.create(PLACEMENTS, typed(PLACEMENTS, metadata={"name": "p"}, spec={}), CLUSTER)
    await hub.create(
        PLACEMENT_DECISIONS,
        {
            "apiVersion": PLACEMENT_DECISIONS.api_version,
            "kind": PLACEMENT_DECISIONS.kind,
            "metadata": {
                "name": "p-decision-0",
                "labels": {
                    PLACEMENT_LABEL: "p",
                    DECISION_GROUP_INDEX_LABEL: "0",
                    DECISION_GROUP_NAME_LABEL: "",
                },
            },
        },
        CLUSTER,
    )
    await hub.patch(
        PLACEMENT_DECISIONS,
        "p-decision-0",
        {"status": {"decisions": [{"clusterName": CLUSTER, "reason": ""}]}},
        CLUSTER,
        subresource="status",
    )
    await hub.patch(
        PLACEMENTS,
        "p",
        {"status": {"numberOfSelectedClusters": 1}},
        CLUSTER,
        subresource="status",
    )
    await hub.create(MANIFESTWORK_REPLICASETS, replica_set(), CLUSTER)

    # Webhook denials of works full of secrets: a duplicate, and too many bytes.
    duplicate = secret("twice", stringData={"k": token("duplicate")})
    for denied in (
        work_body("duplicate", [duplicate, duplicate]),
        work_body("too-big", [configmap("big", key=token("big") * 15000)]),
    ):
        with pytest.raises(KubeError, match="denied the request"):
            await hub.create(MANIFESTWORKS, denied)

    found = await wait_work(
        clusters,
        processes,
        "secrets",
        lambda w: applied("True")(w) and {"token", "raw", "key"} <= set(feedback_values(w)),
        "work secrets applied, with its feedback",
    )
    # The search would see them: the work as the hub returns it holds the token.
    assert leaks([json.dumps(found)])
    values = feedback_values(found)
    assert values["key"] == {"type": "String", "string": token("configmap")}
    assert values["raw"]["type"] == "JsonRaw" and token("configmap") in values["raw"]["jsonRaw"]
    live = await spoke.get(SECRETS, "app-credentials", "default")
    assert live["data"] == {
        "token": b64(token("data1")),
        "password": b64(token("stringdata1")),
    }

    failing = await wait_work(clusters, processes, "failing", refused(3), "work failing refused")
    # The third (data that is not base64) is refused by a real API server as it
    # decodes the body; kubesim stores it as given. Either way it went through.
    for entry in manifest_statuses(failing)[:2]:
        cond = condition(entry["conditions"], "Applied")
        assert cond is not None and cond["reason"] == "AppliedManifestFailed", entry

    contested = await wait_work(clusters, processes, "ssa", refused(1), "work ssa in conflict")
    cond = condition(manifest_statuses(contested)[0]["conditions"], "Applied")
    assert cond is not None and "conflict" in cond["message"], cond

    async def fanned_out() -> bool:
        try:
            await spoke.get(SECRETS, "fanned-out", "default")
        except NotFound:
            return False
        return True

    await eventually(fanned_out, timeout=PATIENCE, what="the replica set's Secret on the spoke")

    # An update: new secret values, and the ConfigMap becomes stale.
    current = await hub.get(MANIFESTWORKS, "secrets", CLUSTER)
    current["spec"] = secrets_work(2)["spec"]
    await hub.update(MANIFESTWORKS, current)
    await wait_work(clusters, processes, "secrets", applied("True", 2), "work secrets updated")

    async def updated_and_pruned() -> bool:
        live = await spoke.get(SECRETS, "app-credentials", "default")
        try:
            await spoke.get(CONFIGMAPS, "app-settings", "default")
        except NotFound:
            return bool(live["data"]["token"] == b64(token("data2")))
        return False

    await eventually(updated_and_pruned, timeout=PATIENCE, what="the update and the pruning")

    # Deletion of everything: the agent cleans up and lets the works go.
    await hub.delete(MANIFESTWORK_REPLICASETS, "fanout", CLUSTER)
    for name in ("secrets", "failing", "ssa"):
        await hub.delete(MANIFESTWORKS, name, CLUSTER)

    async def all_gone() -> bool:
        remaining = await hub.list(MANIFESTWORKS, CLUSTER)
        applied_works = await spoke.list(APPLIED_MANIFESTWORKS)
        return not remaining["items"] and not applied_works["items"]

    await eventually(all_gone, timeout=PATIENCE, what="every work and applied work deleted")
    for name in ("app-credentials", "fanned-out"):
        with pytest.raises(NotFound):
            await spoke.get(SECRETS, name, "default")


@pytest.mark.parametrize("prefix", ["", "a", "ab", "abc"])
def test_the_search_finds_the_token_base64_encoded_at_any_offset(prefix: str) -> None:
    blob = json.dumps({"data": b64(f"{prefix}{token('x')}suffix")})
    assert leaks([blob]) == [blob]
    assert leaks([b64(prefix + "leak" + "0" * 32)]) == []
