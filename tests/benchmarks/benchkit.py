"""Pieces shared by the end-to-end benchmarks: processes, counters, waiting.

The benchmarks run hub and spoke as ``kubesim serve`` processes (or a real
kube-apiserver) and the agent as its own process, so each has its own core
time; this module starts and stops them, reads what they cost (``/proc``),
what they were asked (a real apiserver's audit log, kubesim's
``/kubesim/stats``, or the agent's ``/metrics`` on clusters the suite did
not start), and waits for conditions with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from ocmkit.kube import CRDS, AlreadyExists, KubeClient, Resource, TooManyRequests
from tests.support.manifests import configmap as configmap_manifest
from tests.support.prepare import crd_documents, wait_served
from tests.support.processes import free_port

__all__ = ["free_port"]  # the agents' /metrics ports, with the tests' helper

REPO = Path(__file__).resolve().parents[2]
#: The Python our agent runs on: the runtime dependencies only (``make runtime-env``), as
#: in the container image. The development environment's extras would count in its RSS
#: (structlog imports rich when it is installed: about 3 MiB).
RUNTIME_PYTHON = REPO / ".tools" / "runtime" / "bin" / "python"


def agent_python() -> str:
    """The interpreter for our agent: :data:`RUNTIME_PYTHON`, else this one (said once)."""
    if RUNTIME_PYTHON.exists():
        return str(RUNTIME_PYTHON)
    if not _warned:
        _warned.append(True)
        print(
            f"note: {RUNTIME_PYTHON} is missing (make runtime-env): the agent runs with the "
            "development dependencies, which add to its RSS",
            file=sys.stderr,
        )
    return sys.executable


_warned: list[bool] = []
CRD_DIR = REPO / "charts" / "crds"
MANIFESTWORK_CRD = "work.open-cluster-management.io_manifestworks.yaml"
APPLIED_MANIFESTWORK_CRD = "work.open-cluster-management.io_appliedmanifestworks.yaml"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: Requests in flight in the micro-benchmarks.
CONCURRENCY = 16

StatsKey = tuple[str, str]  # (verb, resource)


# -- objects --------------------------------------------------------------------------------


def configmap(name: str, namespace: str = "default", value: str = "value") -> dict[str, Any]:
    """A small ConfigMap manifest."""
    return configmap_manifest(name, namespace, key=value)


def condition_true(work: dict[str, Any], kind: str) -> bool:
    """Whether ``kind`` is True on the work for its current generation."""
    generation = work["metadata"].get("generation")
    for cond in (work.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return bool(
                cond.get("status") == "True" and cond.get("observedGeneration") == generation
            )
    return False


async def install_crds(client: KubeClient, *files: str) -> None:
    """Create the CRDs of ``files`` (from charts/crds) and wait until they are served.

    Existing ones are kept: a real cluster that already runs OCM keeps its CRDs.
    """
    crds = crd_documents(CRD_DIR / file for file in files)
    for crd in crds:
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)
    await wait_served(client, crds)


async def wait_watchable(client: KubeClient, res: Resource, timeout: float = 60) -> None:
    """Until a watch of ``res`` opens: a real apiserver answers 429 "storage is
    (re)initializing" for a moment after a CRD is established, which would
    otherwise show up as the agent's start-up time."""

    async def opens() -> bool:
        try:
            async with client.watch(res, resource_version="", timeout_seconds=1):
                return True
        except TooManyRequests:
            return False

    await until(opens, None, timeout, f"a watch of {res.plural} to open", period=0.2)


# -- processes ------------------------------------------------------------------------------


def start_process(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``args`` as a child process, everything it prints in ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )


def start_kubesim(kubeconfig: Path, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``kubesim serve`` on a port the OS picks; it writes ``kubeconfig`` when ready."""
    args = [sys.executable, "-m", "kubesim", "serve", "--port", "0", "--kubeconfig"]
    return start_process([*args, str(kubeconfig), *extra], log)


def qps_flags(qps: float) -> tuple[str, str]:
    """``--kube-api-qps`` and ``--kube-api-burst`` values for a QPS column.

    The burst is twice the QPS, as OCM's defaults (50/100). Unlimited is -1:
    client-go takes 0 for its default of 5 and disables the limiter only
    below 0; ours takes any value <= 0 as unlimited.
    """
    if qps <= 0:
        return "-1", "100"
    return f"{qps:g}", str(max(int(qps * 2), 1))


def agent_command(
    hub: Path, spoke: Path, cluster: str, port: int, qps: float, *extra: str
) -> list[str]:
    """Our agent's command line: the cluster's kubeconfigs, /metrics on ``port`` (0: any),
    ``qps`` on both clients (:func:`qps_flags`), then ``extra`` flags."""
    qps_value, burst = qps_flags(qps)
    return [
        agent_python(),
        "-m",
        "workagent",
        "agent",
        f"--spoke-cluster-name={cluster}",
        f"--workload-source-config={hub}",
        f"--spoke-kubeconfig={spoke}",
        "--disable-leader-election",
        f"--listen=127.0.0.1:{port}",
        *extra,
        f"--kube-api-qps={qps_value}",
        f"--kube-api-burst={burst}",
        f"--hub-kube-api-qps={qps_value}",
        f"--hub-kube-api-burst={burst}",
        "--log-level=warning",
    ]


async def wait_file(path: Path, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Wait until ``proc`` wrote ``path`` (kubesim's kubeconfig means it is serving)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"kubesim did not start ({path.name})")
        await asyncio.sleep(0.05)  # sleep-ok: polling with a deadline


@contextlib.asynccontextmanager
async def kubesim_process(directory: Path) -> AsyncIterator[Path]:
    """A serving ``kubesim serve`` (output in ``directory``); yields its kubeconfig."""
    kubeconfig = directory / "kubeconfig"
    proc = start_kubesim(kubeconfig, directory / "kubesim.log")
    try:
        await wait_file(kubeconfig, proc)
        yield kubeconfig
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def log_tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file (empty when there is none)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


# -- what a process costs -------------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (an agent may run worker processes, or be a wrapper)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                continue  # the thread or process ended meanwhile
    return out


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of one process, in KiB (empty if it is gone)."""
    out = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def tree_memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM summed over the process tree of ``pid``, in KiB."""
    total: Counter[str] = Counter()
    for each in process_tree(pid):
        total.update(memory(each))
    return dict(total)


def cpu(pid: int) -> float:
    """utime + stime of one process, in seconds (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()  # the name may hold spaces
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


def tree_cpu(pid: int) -> float:
    """CPU seconds of the process tree of ``pid``."""
    return sum(cpu(each) for each in process_tree(pid))


# -- what the servers were asked ------------------------------------------------------------


async def kubesim_stats(client: KubeClient, exclude_agent: str) -> Counter[StatsKey]:
    """Requests kubesim answered so far, by (verb, resource), without ``exclude_agent``'s.

    Failed requests count under ``"resource (code)"``.
    """
    body = await client.get_raw("/kubesim/stats")
    counts: Counter[StatsKey] = Counter()
    for row in body.get("requests") or []:
        if row["userAgent"] == exclude_agent:
            continue
        resource = row["resource"]
        if row["code"] >= 400:
            resource = f"{resource} ({row['code']})"
        counts[(row["verb"], resource)] += row["count"]
    return counts


async def kubesim_clients(client: KubeClient, side: str, driver: str) -> Counter[str]:
    """Requests kubesim answered so far by client: ``"<side> · <User-Agent>"``.

    ``driver``'s requests (the benchmark's own) count as ``"driver · <agent>"``.
    """
    body = await client.get_raw("/kubesim/stats")
    counts: Counter[str] = Counter()
    for row in body.get("requests") or []:
        agent = row["userAgent"]
        counts[client_label("driver" if agent == driver else side, agent)] += row["count"]
    return counts


def client_label(role: str, user_agent: str) -> str:
    """``"<role> · <program>"``: the User-Agent's first word, and for a Kubernetes
    component the controller it names last (``.../generic-garbage-collector``)."""
    program = user_agent.split(" ", 1)[0] or "(none)"
    # client-go: "NAME/VERSION (OS/ARCH) kubernetes/COMMIT[/CONTROLLER]".
    if " " in user_agent and user_agent.rsplit(" ", 1)[1].count("/") >= 2:
        program += " …/" + user_agent.rsplit("/", 1)[1]
    return f"{role} · {program}"


@dataclass
class AuditTally:
    """Requests a real apiserver recorded in its audit log, read on from where it stopped.

    Each request counts once: a watch when its response starts (its
    ``ResponseComplete`` comes when it ends, and is only counted for a watch
    that never started, e.g. refused), any other request when it completes.
    ``roles`` maps user names to a role (the agent's ``hub`` and ``spoke``
    tokens); requests with the ``driver`` User-Agent are the benchmark's own,
    everything else (kube-controller-manager, the apiserver's loopback) is
    ``other``. ``by_role`` holds (verb, resource) counts per role and
    ``by_client`` counts per :func:`client_label`.
    """

    path: Path
    roles: dict[str, str]
    driver: str
    offset: int = 0
    by_role: dict[str, Counter[StatsKey]] = field(default_factory=dict)
    by_client: Counter[str] = field(default_factory=Counter)
    _started: set[str] = field(default_factory=set)

    def read(self) -> None:
        """Count the events written since the last call (a half-written line waits)."""
        with contextlib.suppress(FileNotFoundError), self.path.open("rb") as fh:
            fh.seek(self.offset)
            for line in fh:
                if not line.endswith(b"\n"):
                    break
                self.offset += len(line)
                self._count(json.loads(line))

    def _count(self, event: dict[str, Any]) -> None:
        stage, verb = event.get("stage"), event.get("verb", "")
        audit_id = event.get("auditID", "")
        if stage == "ResponseStarted":
            if verb != "watch":
                return  # another long-running request: counted when it completes
            self._started.add(audit_id)
        elif stage in ("ResponseComplete", "Panic"):
            if verb == "watch" and audit_id in self._started:
                self._started.discard(audit_id)
                return
        else:
            return
        user = (event.get("user") or {}).get("username", "")
        agent = event.get("userAgent", "")
        role = self.roles.get(user) or ("driver" if agent == self.driver else "other")
        ref = event.get("objectRef") or {}
        if ref.get("resource"):
            resource = ref["resource"] + (
                f"/{ref['subresource']}" if ref.get("subresource") else ""
            )
        else:  # a non-resource URL (discovery, /version...)
            resource = event.get("requestURI", "").split("?", 1)[0]
        code = (event.get("responseStatus") or {}).get("code", 200)
        if code >= 400:
            resource = f"{resource} ({code})"
        self.by_role.setdefault(role, Counter())[(verb, resource)] += 1
        self.by_client[client_label(role, agent)] += 1


async def open_watches(client: KubeClient) -> int:
    """Watches kubesim holds open."""
    return int((await client.get_raw("/kubesim/watches")).get("open", 0))


def writes(counts: Counter[StatsKey]) -> int:
    """The write requests among ``counts``."""
    return sum(n for (verb, _), n in counts.items() if verb in WRITE_VERBS)


async def _metrics_text(host: str, port: int, authorization: str | None) -> str | None:
    """The body of ``/metrics`` over HTTPS, else plain HTTP; None when neither answers."""
    headers = {"Authorization": authorization} if authorization else {}
    async with aiohttp.ClientSession() as session:
        for scheme in ("https", "http"):
            try:
                url = f"{scheme}://{host}:{port}/metrics"
                async with session.get(url, ssl=False, headers=headers) as resp:
                    return await resp.text()
            except aiohttp.ClientError:
                continue
    return None


async def scrape(
    port: int, host: str = "127.0.0.1", *, authorization: str | None = None
) -> dict[str, float]:
    """A process's Prometheus ``/metrics``: {"series{labels}": value, "name": sum over labels}.

    Empty when nothing answers yet (a starting agent). Agents serve HTTPS with a
    self-signed certificate (ours by default, as OCM's Go agent), or plain HTTP
    with ``--insecure-serving``: both are read, without verifying the certificate.
    Over HTTPS both review the caller with their cluster: ``authorization`` (the
    ``Authorization`` header of someone allowed ``get`` on ``/metrics``) is sent.
    """
    text = await _metrics_text(host, port, authorization)
    if text is None:
        return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name = series.split("{", 1)[0]
        try:
            number = float(value)
        except ValueError:
            continue
        out[series] = number
        if "{" in series:
            out[name] = out.get(name, 0.0) + number
    return out


def labels(series: str) -> dict[str, str]:
    """The labels of a Prometheus series name (values without quotes)."""
    if "{" not in series:
        return {}
    body = series[series.index("{") + 1 : series.rindex("}")]
    out = {}
    for part in body.split('",'):
        key, _, value = part.partition("=")
        out[key.strip(", ")] = value.strip('"')
    return out


# -- waiting and statistics -----------------------------------------------------------------


async def until(
    check: Callable[[], bool | Awaitable[bool]],
    proc: subprocess.Popen[bytes] | None,
    timeout: float,
    what: str,
    period: float = 0.02,
) -> float:
    """Seconds until ``check`` holds, polled every ``period``; fails if ``proc`` exits."""
    t0 = time.perf_counter()
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return time.perf_counter() - t0
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"the agent exited with {proc.returncode} while waiting for {what}")
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(period)  # sleep-ok: polling with a deadline


async def bounded(
    n: int, make: Callable[[int], Awaitable[object]], concurrency: int = CONCURRENCY
) -> float:
    """Run ``make(i)`` for i < n, ``concurrency`` at a time; the seconds it took."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await make(i)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - t0


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of non-empty ``values``."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * q // 100)))
    return ordered[int(rank) - 1]
