"""The probe endpoints of OCM's programs and ours, side by side, started alike.

OCM's operators start ``work agent``, ``work manager`` and ``server grpc``
with the library-go flags (``--listen``, ``--terminate-on-files``, the
leader-election ones) and probe ``/healthz`` and ``/readyz`` over HTTPS
without verifying. Each pair here gets the same flags against one real API
server; the probes must answer alike (``ok``; the check lines with
``?verbose``), callers the API server does not vouch for must be refused
alike, byte for byte (library-go's delegated authentication and
authorization), the client-go and work-queue series OCM's ``/metrics`` shows
must be ours too (names, types, labels, buckets, queue names), and a change
of a ``--terminate-on-files`` file must end both with exit code 0.

Runs in the real leg only; ``make ocm`` builds OCM's binaries.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from ocmkit.command import version
from ocmkit.kube import LEASES, NotFound
from tests.conftest import eventually
from tests.support.controlplane import AGENT, REPO, ControlPlane, Process, spawn
from tests.support.ocmpeer import ocm_binary
from tests.support.processes import free_port
from tests.support.programs import open_test_client
from tests.support.serving_endpoint import get, issue, unverified
from tests.support.targets import REAL, PlanePool, open_cluster

pytestmark = pytest.mark.realkube

PROBES = ("healthz", "livez", "readyz")
#: The series compared: client-go's client and work-queue families.
COMPARED = ("rest_client_", "workqueue_")
#: client-go series we do not export (no transport cache, no exec plugins), and
#: library-go's own queues (its serving-certificate controllers).
NOT_OURS = ("rest_client_transport_", "rest_client_exec_plugin_")
LIBRARY_GO_QUEUES = ("Dynamic", "RequestHeaderAuthRequestController")


@dataclass(frozen=True)
class Program:
    """One program as OCM's binary and ours run it: (ocm argv, our argv) minus the
    shared flags, from the hub kubeconfig and a scratch folder."""

    name: str
    ocm: tuple[str, ...]
    ours: tuple[str, ...]
    flags: Callable[[Path, Path, str], list[str]]


def _agent_flags(kubeconfig: Path, folder: Path, side: str) -> list[str]:
    return [
        "--spoke-cluster-name=cluster1",
        f"--workload-source-config={kubeconfig}",
        f"--kubeconfig={kubeconfig}",
        f"--spoke-kubeconfig={kubeconfig}",
    ]


def _manager_flags(kubeconfig: Path, folder: Path, side: str) -> list[str]:
    gates = "ManifestWorkReplicaSet=true,CleanUpCompletedManifestWork=true"
    return [
        f"--kubeconfig={kubeconfig}",
        "--namespace=open-cluster-management-hub",
        f"--feature-gates={gates}",
    ]


def _grpc_flags(kubeconfig: Path, folder: Path, side: str) -> list[str]:
    """The operator's: a server config with a serving certificate and a client CA."""
    pki = folder / f"{side}-pki"
    pki.mkdir()
    ca_pem, cert, key = issue(pki)
    (pki / "ca.crt").write_bytes(ca_pem)
    config = pki / "config.yaml"
    config.write_text(
        f"tls_cert_file: {cert}\ntls_key_file: {key}\nclient_ca_file: {pki / 'ca.crt'}\n"
        f'server_bind_port: "{free_port()}"\n'
    )
    return [f"--kubeconfig={kubeconfig}", f"--server-config={config}"]


OURS = (sys.executable, "-m")
PROGRAMS = [
    Program("agent", ("work", "agent"), (*OURS, "workagent", "agent"), _agent_flags),
    Program("manager", ("work", "manager"), (*OURS, "hubcontroller", "manager"), _manager_flags),
    Program("grpc", ("server", "grpc"), (*OURS, "hubcontroller", "grpc-server"), _grpc_flags),
]


@dataclass
class Running:
    """One side's process, its endpoint and the file it terminates on."""

    process: Process
    base: str
    watched: Path


def start(program: Program, side: str, kubeconfig: Path, folder: Path) -> Running:
    """Start OCM's (``side`` "ocm") or our program with the operator's library-go flags."""
    port = free_port()
    watched = folder / f"{side}-watched"
    watched.write_text("v1\n")
    if side == "ocm":
        binary, *words = program.ocm
        command = [str(ocm_binary(binary)), *words]
    else:
        command = list(program.ours)
    argv = [
        *command,
        *program.flags(kubeconfig, folder, side),
        f"--listen=127.0.0.1:{port}",
        "--disable-leader-election",
        "--leader-election-lease-duration=137s",
        f"--terminate-on-files={watched}",
    ]
    process = spawn(f"{side}-{program.name}", argv, folder / f"{side}-{program.name}.log")
    return Running(process, f"https://127.0.0.1:{port}", watched)


async def answers(side: Running, path: str) -> tuple[int, str]:
    """(status, body) of an HTTPS GET, as kubelet probes: nothing verified."""
    side.process.check_alive()
    try:
        return await get(f"{side.base}/{path}", unverified())
    except OSError as err:  # not listening yet
        return 0, str(err)


async def scrape(
    side: Running, token: str, compared: Callable[[str], bool] | None = None
) -> dict[str, Metric]:
    """The compared families of ``/metrics`` (OCM's needs a token: delegated authentication)."""
    timeout = aiohttp.ClientTimeout(total=10)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(f"{side.base}/metrics", ssl=unverified(), headers=headers) as response,
    ):
        assert response.status == 200, await response.text()
        text = await response.text()
    return {
        family.name: family
        for family in text_string_to_metric_families(text)
        if (compared or client_series)(family.name)
    }


def client_series(name: str) -> bool:
    """client-go's client and work-queue families, but those we do not export."""
    return name.startswith(COMPARED) and not name.startswith(NOT_OURS)


def build_info(name: str) -> bool:
    """library-go's ``<component namespace>_build_info``."""
    return name.endswith("_build_info")


async def raw(
    side: Running, path: str, authorization: str = "", method: str = "GET"
) -> tuple[int, str, bytes]:
    """(status, Content-Type, body) of one request with this Authorization header."""
    timeout = aiohttp.ClientTimeout(total=10)
    headers = {"Authorization": authorization} if authorization else {}
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.request(method, side.base + path, ssl=unverified(), headers=headers) as response,
    ):
        return response.status, response.headers.get("Content-Type", ""), await response.read()


def callers(plane: ControlPlane) -> list[tuple[str, str, str]]:
    """(method, path, Authorization) of the requests whose refusals must be the same
    byte for byte: anonymous, a bad token, a user RBAC does not allow, an empty token."""
    restricted = plane.identities[AGENT]
    return [
        ("GET", "/metrics", ""),
        ("POST", "/metrics", ""),
        ("GET", "/nothing", ""),
        ("GET", "/metrics", "Bearer not-a-token"),
        ("GET", "/healthz", "Bearer not-a-token"),
        ("GET", "/metrics", f"Bearer {restricted.token}"),
        ("GET", "/metrics", "Bearer  x"),
        ("GET", "/metrics", "Basic dXNlcjpwYXNz"),
    ]


#: (method, path) that a caller allowed everything gets alike from both, byte for byte:
#: a generic API server's checks at their own paths, its probes for any method.
ALLOWED_REQUESTS = [
    ("GET", "/healthz/ping"),
    ("GET", "/livez/log"),
    ("GET", "/readyz/ping"),
    ("GET", "/readyz/shutdown"),
    ("POST", "/healthz"),
    ("PUT", "/readyz"),
    ("DELETE", "/livez"),
    ("HEAD", "/healthz"),
]
#: Paths both serve (at ``/``, and with a 404 for any other path, as JSON).
SERVED = {"/healthz", "/healthz/ping", "/livez/log", "/metrics", "/readyz", "/readyz/shutdown"}


#: The build_info series of each program as :func:`start` runs it, out of a cluster:
#: named after ``--namespace`` (the manager's flags), else library-go's fallback.
BUILD_INFO = {
    "agent": "openshift_config_managed_build_info",
    "manager": "open_cluster_management_hub_build_info",
    "grpc": "openshift_config_managed_build_info",
}


def shape(family: Metric) -> tuple[str, frozenset[frozenset[str]], frozenset[float]]:
    """A family's type, the label names of its samples and its histogram buckets."""
    labels = frozenset(
        frozenset(k for k in sample.labels if k != "le") for sample in family.samples
    )
    # Go computes its exponential buckets by multiplying (9.999999999999999e-06 for 1e-05).
    buckets = frozenset(
        float(f"{float(x.labels['le']):.12g}") for x in family.samples if "le" in x.labels
    )
    return family.type, labels, buckets


def queues(families: Iterable[Metric]) -> set[str]:
    """The work-queue names in these families, library-go's own left out."""
    return {
        sample.labels["name"]
        for family in families
        if family.name.startswith("workqueue_")
        for sample in family.samples
        if not sample.labels["name"].startswith(LIBRARY_GO_QUEUES)
    }


async def exit_code(side: Running, timeout: float = 60.0) -> int:
    """Wait for the process to end on its own; its exit code."""
    return await asyncio.to_thread(side.process.popen.wait, timeout)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
async def test_probes_and_terminate_on_files_alike(
    program: Program, realkube_pool: PlanePool, tmp_path: Path
) -> None:
    async with open_cluster(REAL, realkube_pool) as plane:
        kubeconfig = plane.write_kubeconfig(tmp_path / "hub.kubeconfig")
        # Hub and managed cluster in one, with every CRD: the informers list (and are ready).
        crds = sorted((REPO / "charts" / "crds").glob("*.yaml"))
        client = await open_test_client(
            kubeconfig, user_agent="side-by-side", name="hub", crds=crds, namespaces=["cluster1"]
        )
        await client.close()
        sides = {side: start(program, side, kubeconfig, tmp_path) for side in ("ocm", "ours")}
        try:
            for side in sides.values():

                async def ready(side: Running = side) -> bool:
                    return (await answers(side, "readyz"))[0] == 200

                await eventually(ready, timeout=90, what=f"{side.process.name} to be ready")
            for path in PROBES:
                ocm, ours = [await answers(s, path) for s in sides.values()]
                assert ours == ocm == (200, "ok"), path
                ocm, ours = [await answers(s, f"{path}?verbose") for s in sides.values()]
                assert ocm[0] == ours[0] == 200, (ocm, ours)
                # The checks differ by program; the verdict line is the same.
                last = {body.rstrip("\n").splitlines()[-1] for _, body in (ocm, ours)}
                assert last == {f"{path} check passed"}, (ocm, ours)
                assert all(line.startswith("[+]") for line in ours[1].splitlines()[:-1])

            # Delegated authentication and authorization (library-go's): the same refusals.
            assert isinstance(plane, ControlPlane)
            for method, path, authorization in callers(plane):
                refusals = [await raw(s, path, authorization, method) for s in sides.values()]
                assert refusals[0] == refusals[1], (method, path, authorization[:12])
                assert refusals[0][0] in (401, 403), refusals

            admin = f"Bearer {plane.admin_token}"
            for method, path in ALLOWED_REQUESTS:
                allowed = [await raw(s, path, admin, method) for s in sides.values()]
                assert allowed[0] == allowed[1], (method, path, allowed)
                assert allowed[0][0] == 200, (method, path, allowed)
            warned = [
                await raw(s, "/readyz?verbose&exclude=nothing", admin) for s in sides.values()
            ]
            ends = [body.decode().splitlines()[-2:] for *_, body in warned]
            assert ends[0] == ends[1], ends
            for path, code in (
                ("/", 200),
                ("/nothing", 404),
                ("/metrics/", 404),
                ("/readyz/x", 404),
            ):
                for side in sides.values():
                    status, content_type, body = await raw(side, path, admin)
                    assert (status, content_type) == (code, "application/json"), (path, body)
                    served = json.loads(body)["paths"]
                    assert served == sorted(served) and set(served) >= SERVED, (path, served)

            ocm_series, our_series = [await scrape(s, plane.admin_token) for s in sides.values()]
            assert any(name.startswith("rest_client_") for name in ocm_series)
            for name, family in ocm_series.items():
                assert name in our_series, f"{name} is not ours"
                our_family = our_series[name]
                if not our_family.samples:
                    # Our gRPC server sends no request until an agent subscribes (OCM's
                    # reads its authentication config at start): only the type to compare.
                    assert program.name == "grpc", f"{name}: no samples"
                    assert our_family.type == family.type, name
                    continue
                assert shape(our_family) == shape(family), name
            assert queues(our_series.values()) == queues(ocm_series.values())
            # One build_info series each, named alike (from --namespace, else library-go's
            # fallback), with the same labels; ours says our version.
            infos = [await scrape(s, plane.admin_token, build_info) for s in sides.values()]
            assert [list(info) for info in infos] == [[BUILD_INFO[program.name]]] * 2
            ocm_info, our_info = (next(iter(info.values())).samples for info in infos)
            assert [set(s.labels) for s in our_info] == [set(s.labels) for s in ocm_info]
            assert our_info[0].labels["gitVersion"] == f"v{version()}" and our_info[0].value == 1

            for side in sides.values():
                side.watched.write_text("v2\n")
            codes = {name: await exit_code(side) for name, side in sides.items()}
            assert codes == {"ocm": 0, "ours": 0}, [
                s.process.log.read_text() for s in sides.values()
            ]
        finally:
            for side in sides.values():
                await asyncio.to_thread(side.process.stop)


async def test_hosted_mode_alike(realkube_pool: PlanePool, tmp_path: Path) -> None:
    """OCM's Hosted mode: each agent runs "on" a management cluster (``--kubeconfig``)
    and reaches the managed cluster, also the hub, with ``--spoke-kubeconfig``. Both
    take their Lease on the management cluster, in the agent namespace that exists
    there only, and review callers of their endpoint with it."""
    async with (
        open_cluster(REAL, realkube_pool) as management,
        open_cluster(REAL, realkube_pool) as managed,
    ):
        own = management.write_kubeconfig(tmp_path / "management.kubeconfig")
        spoke = managed.write_kubeconfig(tmp_path / "managed.kubeconfig")
        namespaces = {side: f"klusterlet-{side}" for side in ("ocm", "ours")}
        admin = await open_test_client(
            own,
            user_agent="side-by-side",
            name="management",
            crds=(),
            namespaces=[*namespaces.values()],
        )
        crds = sorted((REPO / "charts" / "crds").glob("*.yaml"))
        hub = await open_test_client(
            spoke, user_agent="side-by-side", name="hub", crds=crds, namespaces=["cluster1"]
        )
        sides: dict[str, Running] = {}
        try:
            for side, namespace in namespaces.items():
                port = free_port()
                command = (
                    [str(ocm_binary("work")), "agent"]
                    if side == "ocm"
                    else [*OURS, "workagent", "agent"]
                )
                argv = [
                    *command,
                    "--spoke-cluster-name=cluster1",
                    f"--workload-source-config={spoke}",
                    f"--kubeconfig={own}",
                    f"--spoke-kubeconfig={spoke}",
                    f"--namespace={namespace}",
                    f"--listen=127.0.0.1:{port}",
                ]
                process = spawn(f"{side}-hosted", argv, tmp_path / f"{side}-hosted.log")
                sides[side] = Running(process, f"https://127.0.0.1:{port}", tmp_path)
            for side, namespace in namespaces.items():

                async def leads(namespace: str = namespace, side: str = side) -> bool:
                    sides[side].process.check_alive()
                    try:
                        lease = await admin.get(LEASES, "work-agent-lock", namespace)
                    except NotFound:
                        return False
                    return bool(lease["spec"].get("holderIdentity"))

                await eventually(
                    leads, timeout=90, what=f"{side}'s Lease on the management cluster"
                )
            leases = await hub.list(LEASES)
            assert not [
                item["metadata"]
                for item in leases["items"]
                if item["metadata"]["name"] == "work-agent-lock"
            ], "a Lease on the managed cluster"
            for token, expected in ((management.admin_token, 200), (managed.admin_token, 401)):
                statuses = {
                    side: (await raw(running, "/metrics", f"Bearer {token}"))[0]
                    for side, running in sides.items()
                }
                assert statuses == {"ocm": expected, "ours": expected}
        finally:
            for running in sides.values():
                await asyncio.to_thread(running.process.stop)
            await admin.close()
            await hub.close()
