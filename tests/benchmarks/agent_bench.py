"""The work agent end to end: N ManifestWorks x 5 ConfigMaps created at once.

A benchmark, not a test: it prints figures and never fails on a timing.
The hub and the spoke are two ``kubesim serve`` processes (ports picked by the
OS, kubeconfigs in a temporary directory) and the agent is a ``workagent
agent`` process (leader election off, probes on 127.0.0.1:0), so all three
have their own core time and talk over loopback. Figures:

1. convergence: from the first create until every work is ``Applied=True``
   (and, for information, ``Available=True``) on the hub;
2. requests the agent sent per work to each cluster (``GET /kubesim/stats``,
   by verb and resource; the benchmark's own requests are left out), and the
   writes per work against the minimum: on the spoke one write per manifest
   plus the AppliedManifestWork, on the hub the finalizer patch plus one
   status patch;
3. steady state: the agent's writes per minute over a 30 s window after
   convergence (the goal is 0: a converged work costs no write);
4. the agent's resident memory (``/proc/<pid>/status``) at the end.

``uv run python tests/benchmarks/agent_bench.py [--works N] [--qps Q] [--window S]``:
``--qps 0`` (the default) lifts the agent's client-side limits; OCM's default is 50.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

from workagent.kube import (
    CRDS,
    MANIFESTWORKS,
    NAMESPACES,
    KubeClient,
)
from workagent.runtime import Informer

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "charts" / "crds"
CLUSTER = "cluster1"
MANIFESTS_PER_WORK = 5
CONCURRENCY = 32
BENCH_AGENT = "agent-bench"  # the benchmark's own User-Agent, left out of the counts
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")

StatsKey = tuple[str, str]  # (verb, resource); failed requests: (verb, "resource code")


def _configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"key": "value"},
    }


def _work(name: str, manifests: int) -> dict[str, Any]:
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": {"name": name, "namespace": CLUSTER},
        "spec": {"workload": {"manifests": [_configmap(f"{name}-{j}") for j in range(manifests)]}},
    }


def _condition(work: dict[str, Any], kind: str) -> bool:
    generation = work["metadata"].get("generation")
    for cond in (work.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return bool(
                cond.get("status") == "True" and cond.get("observedGeneration") == generation
            )
    return False


# -- processes ----------------------------------------------------------------------------


def _kubesim(kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesim",
                "serve",
                "--port",
                "0",
                "--kubeconfig",
                str(kubeconfig),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )


def _agent(tmp: Path, qps: float) -> subprocess.Popen[bytes]:
    burst = max(int(qps * 2), 1) if qps > 0 else 100
    args = [
        sys.executable,
        "-m",
        "workagent",
        "agent",
        f"--spoke-cluster-name={CLUSTER}",
        f"--workload-source-config={tmp / 'hub.kubeconfig'}",
        f"--spoke-kubeconfig={tmp / 'spoke.kubeconfig'}",
        "--disable-leader-election",
        "--listen=127.0.0.1:0",
        f"--kube-api-qps={qps:g}",
        f"--kube-api-burst={burst}",
        f"--hub-kube-api-qps={qps:g}",
        f"--hub-kube-api-burst={burst}",
        "--log-level=warning",
    ]
    with (tmp / "agent.log").open("wb") as out:
        return subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )


async def _wait_file(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"kubesim did not start ({path.name})")
        await asyncio.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


# -- measuring ----------------------------------------------------------------------------


async def _stats(client: KubeClient) -> Counter[StatsKey]:
    """Requests answered so far, by (verb, resource), without the benchmark's own."""
    body = await client.get_raw("/kubesim/stats")
    counts: Counter[StatsKey] = Counter()
    for row in body.get("requests") or []:
        if row["userAgent"] == BENCH_AGENT:
            continue
        resource = row["resource"]
        if row["code"] >= 400:
            resource = f"{resource} ({row['code']})"
        counts[(row["verb"], resource)] += row["count"]
    return counts


async def _until(
    check: Callable[[], bool | Awaitable[bool]],
    agent: subprocess.Popen[bytes],
    timeout: float,
    what: str,
) -> float:
    """Seconds until ``check`` holds (polled every 20 ms)."""
    t0 = time.perf_counter()
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return time.perf_counter() - t0
        if agent.poll() is not None:
            raise SystemExit(f"the agent exited with {agent.returncode} while waiting for {what}")
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.02)


def _writes(counts: Counter[StatsKey]) -> int:
    return sum(n for (verb, _), n in counts.items() if verb in WRITE_VERBS)


def _print_requests(name: str, counts: Counter[StatsKey], works: int) -> None:
    by_verb: Counter[str] = Counter()
    for (verb, _), n in counts.items():
        by_verb[verb] += n
    print(f"  {name}: " + ", ".join(f"{v} {n / works:.2f}" for v, n in sorted(by_verb.items())))
    for (verb, resource), n in sorted(counts.items()):
        print(f"    {verb:<8} {resource:<34} {n:>7}  {n / works:>6.2f}/work")


# -- the benchmark ------------------------------------------------------------------------


async def bench(tmp: Path, works: int, qps: float, window: float) -> None:
    hub = await KubeClient.from_kubeconfig(
        str(tmp / "hub.kubeconfig"), qps=0, user_agent=BENCH_AGENT, name="bench-hub"
    )
    spoke = await KubeClient.from_kubeconfig(
        str(tmp / "spoke.kubeconfig"), qps=0, user_agent=BENCH_AGENT, name="bench-spoke"
    )
    agent: subprocess.Popen[bytes] | None = None
    informer = Informer(hub, MANIFESTWORKS, CLUSTER, name="bench-works")
    try:
        for client, file in (
            (hub, "work.open-cluster-management.io_manifestworks.yaml"),
            (spoke, "work.open-cluster-management.io_appliedmanifestworks.yaml"),
        ):
            for doc in yaml.safe_load_all((CRD_DIR / file).read_text()):
                if doc:
                    await client.create(CRDS, doc)
        await hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
        await spoke.create(NAMESPACES, {"metadata": {"name": "default"}})
        await informer.start()

        agent = _agent(tmp, qps)
        # Ready: a warm-up work is applied (informers synced, discovery done).
        await hub.create(MANIFESTWORKS, _work("warm-up", 1))

        def warm() -> bool:
            obj = informer.store.get(f"{CLUSTER}/warm-up")
            return obj is not None and _condition(obj, "Applied")

        started = await _until(warm, agent, 120, "the warm-up work")
        print(f"agent process ready (warm-up work applied) after {started:.2f} s")

        names = [f"work-{i:05d}" for i in range(works)]
        hub_before, spoke_before = await _stats(hub), await _stats(spoke)
        sem = asyncio.Semaphore(CONCURRENCY)

        async def create(name: str) -> None:
            async with sem:
                await hub.create(MANIFESTWORKS, _work(name, MANIFESTS_PER_WORK))

        t0 = time.perf_counter()
        await asyncio.gather(*(create(n) for n in names))
        created = time.perf_counter() - t0

        def count(kind: str) -> int:
            n = 0
            for name in names:
                obj = informer.store.get(f"{CLUSTER}/{name}")
                n += obj is not None and _condition(obj, kind)
            return n

        timeout = max(300.0, works * 1.0)
        await _until(lambda: count("Applied") == works, agent, timeout, "every work Applied")
        applied = time.perf_counter() - t0
        hub_applied, spoke_applied = await _stats(hub), await _stats(spoke)
        await _until(lambda: count("Available") == works, agent, timeout, "every work Available")
        available = time.perf_counter() - t0

        # Settled: wait until a 2 s stretch passes without any agent write.
        async def quiet() -> bool:
            before = _writes(await _stats(hub)) + _writes(await _stats(spoke))
            await asyncio.sleep(2)
            return _writes(await _stats(hub)) + _writes(await _stats(spoke)) == before

        await _until(quiet, agent, timeout, "the agent to stop writing")
        hub_settled, spoke_settled = await _stats(hub), await _stats(spoke)
        hub_req = hub_settled - hub_before
        spoke_req = spoke_settled - spoke_before

        # Steady state.
        await asyncio.sleep(window)
        hub_after, spoke_after = await _stats(hub), await _stats(spoke)
        hub_steady = hub_after - hub_settled
        spoke_steady = spoke_after - spoke_settled
        memory = _memory(agent.pid)

        spoke_min = MANIFESTS_PER_WORK + 1
        hub_min = 2
        amw_status = spoke_req[("patch", "appliedmanifestworks/status")]
        print()
        print(f"{'works x ConfigMaps':<52} {works} x {MANIFESTS_PER_WORK}")
        limit = "no client-side limit" if qps <= 0 else f"qps={qps:g}"
        print(f"{'agent QPS':<52} {limit}")
        print(f"{'create all works on the hub':<52} {created:>8.2f} s")
        print(
            f"{'until every work is Applied=True':<52} {applied:>8.2f} s  ({works / applied:,.0f} works/s)"
        )
        print(f"{'until every work is Available=True':<52} {available:>8.2f} s")
        print(
            f"{'spoke writes per work (applied / settled)':<52} "
            f"{_writes(spoke_applied - spoke_before) / works:>8.2f} / {_writes(spoke_req) / works:.2f}"
            f"  (minimum {spoke_min}: {MANIFESTS_PER_WORK} manifests + the AMW;"
            f" AMW status patches {amw_status / works:.2f})"
        )
        print(
            f"{'hub writes per work (applied / settled)':<52} "
            f"{_writes(hub_applied - hub_before) / works:>8.2f} / {_writes(hub_req) / works:.2f}"
            f"  (minimum {hub_min}: finalizer + one status patch)"
        )
        print(
            f"{'steady-state writes per minute (hub / spoke)':<52} "
            f"{_writes(hub_steady) * 60 / window:>8.1f} / {_writes(spoke_steady) * 60 / window:.1f}"
            f"  ({window:.0f} s window, goal 0)"
        )
        print(
            f"{'steady-state reads per minute (hub / spoke)':<52} "
            f"{(sum(hub_steady.values()) - _writes(hub_steady)) * 60 / window:>8.1f} / "
            f"{(sum(spoke_steady.values()) - _writes(spoke_steady)) * 60 / window:.1f}"
        )
        print(
            f"{'agent RSS at the end (peak)':<52} {memory.get('VmRSS', 0) / 1024:>8.1f} MiB"
            f"  ({memory.get('VmHWM', 0) / 1024:.1f} MiB)"
        )
        print()
        print("requests per work, from the first create until settled (by verb, then detail):")
        _print_requests("hub", hub_req, works)
        _print_requests("spoke", spoke_req, works)
        if _writes(hub_steady) or _writes(spoke_steady):
            print("steady-state writes:")
            for name, counts in (("hub", hub_steady), ("spoke", spoke_steady)):
                for (verb, resource), n in sorted(counts.items()):
                    if verb in WRITE_VERBS:
                        print(f"    {name:<6} {verb:<8} {resource:<34} {n:>7}")
    finally:
        if agent is not None:
            _stop(agent)
        await informer.stop()
        await hub.close()
        await spoke.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--works", type=int, default=500, help="ManifestWorks to create")
    parser.add_argument("--qps", type=float, default=0.0, help="agent QPS per client (0: none)")
    parser.add_argument("--window", type=float, default=30.0, help="steady-state window, s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        hub = _kubesim(tmp / "hub.kubeconfig", tmp / "hub.log")
        spoke = _kubesim(tmp / "spoke.kubeconfig", tmp / "spoke.log")
        try:
            await _wait_file(tmp / "hub.kubeconfig", hub)
            await _wait_file(tmp / "spoke.kubeconfig", spoke)
            await bench(tmp, args.works, args.qps, args.window)
        except BaseException:
            log = tmp / "agent.log"
            if log.exists():
                print("--- agent log (last 40 lines) ---", file=sys.stderr)
                print(
                    "\n".join(log.read_text(errors="replace").splitlines()[-40:]), file=sys.stderr
                )
            raise
        finally:
            _stop(hub)
            _stop(spoke)


if __name__ == "__main__":
    asyncio.run(main())
