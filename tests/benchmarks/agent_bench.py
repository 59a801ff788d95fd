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
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import benchkit
from benchkit import StatsKey

from ocmkit.kube import (
    MANIFESTWORKS,
    NAMESPACES,
    KubeClient,
)
from ocmkit.runtime import Informer

CLUSTER = "cluster1"
MANIFESTS_PER_WORK = 5
CONCURRENCY = 32
BENCH_AGENT = "agent-bench"  # the benchmark's own User-Agent, left out of the counts


def _work(name: str, manifests: int) -> dict[str, Any]:
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": {"name": name, "namespace": CLUSTER},
        "spec": {
            "workload": {"manifests": [benchkit.configmap(f"{name}-{j}") for j in range(manifests)]}
        },
    }


# -- processes ----------------------------------------------------------------------------


def _agent(tmp: Path, qps: float) -> subprocess.Popen[bytes]:
    hub, spoke = tmp / "hub.kubeconfig", tmp / "spoke.kubeconfig"
    return benchkit.start_process(
        benchkit.agent_command(hub, spoke, CLUSTER, 0, qps), tmp / "agent.log"
    )


# -- measuring ----------------------------------------------------------------------------


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
        await benchkit.install_crds(hub, benchkit.MANIFESTWORK_CRD)
        await benchkit.install_crds(spoke, benchkit.APPLIED_MANIFESTWORK_CRD)
        await hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
        await informer.start()

        agent = _agent(tmp, qps)
        # Ready: a warm-up work is applied (informers synced, discovery done).
        await hub.create(MANIFESTWORKS, _work("warm-up", 1))

        def warm() -> bool:
            obj = informer.store.get(f"{CLUSTER}/warm-up")
            return obj is not None and benchkit.condition_true(obj, "Applied")

        started = await benchkit.until(warm, agent, 120, "the warm-up work")
        print(f"agent process ready (warm-up work applied) after {started:.2f} s")

        names = [f"work-{i:05d}" for i in range(works)]
        hub_before, spoke_before = (
            await benchkit.kubesim_stats(hub, BENCH_AGENT),
            await benchkit.kubesim_stats(spoke, BENCH_AGENT),
        )
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
                n += obj is not None and benchkit.condition_true(obj, kind)
            return n

        timeout = max(300.0, works * 1.0)
        await benchkit.until(
            lambda: count("Applied") == works, agent, timeout, "every work Applied"
        )
        applied = time.perf_counter() - t0
        hub_applied, spoke_applied = (
            await benchkit.kubesim_stats(hub, BENCH_AGENT),
            await benchkit.kubesim_stats(spoke, BENCH_AGENT),
        )
        await benchkit.until(
            lambda: count("Available") == works, agent, timeout, "every work Available"
        )
        available = time.perf_counter() - t0

        # Settled: wait until a 2 s stretch passes without any agent write.
        async def quiet() -> bool:
            before = benchkit.writes(
                await benchkit.kubesim_stats(hub, BENCH_AGENT)
            ) + benchkit.writes(await benchkit.kubesim_stats(spoke, BENCH_AGENT))
            await asyncio.sleep(2)  # sleep-ok: the 2 s quiet window is what is measured
            return (
                benchkit.writes(await benchkit.kubesim_stats(hub, BENCH_AGENT))
                + benchkit.writes(await benchkit.kubesim_stats(spoke, BENCH_AGENT))
                == before
            )

        await benchkit.until(quiet, agent, timeout, "the agent to stop writing")
        hub_settled, spoke_settled = (
            await benchkit.kubesim_stats(hub, BENCH_AGENT),
            await benchkit.kubesim_stats(spoke, BENCH_AGENT),
        )
        hub_req = hub_settled - hub_before
        spoke_req = spoke_settled - spoke_before

        # Steady state.
        await asyncio.sleep(window)
        hub_after, spoke_after = (
            await benchkit.kubesim_stats(hub, BENCH_AGENT),
            await benchkit.kubesim_stats(spoke, BENCH_AGENT),
        )
        hub_steady = hub_after - hub_settled
        spoke_steady = spoke_after - spoke_settled
        memory = benchkit.memory(agent.pid)

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
            f"{benchkit.writes(spoke_applied - spoke_before) / works:>8.2f} / {benchkit.writes(spoke_req) / works:.2f}"
            f"  (minimum {spoke_min}: {MANIFESTS_PER_WORK} manifests + the AMW;"
            f" AMW status patches {amw_status / works:.2f})"
        )
        print(
            f"{'hub writes per work (applied / settled)':<52} "
            f"{benchkit.writes(hub_applied - hub_before) / works:>8.2f} / {benchkit.writes(hub_req) / works:.2f}"
            f"  (minimum {hub_min}: finalizer + one status patch)"
        )
        print(
            f"{'steady-state writes per minute (hub / spoke)':<52} "
            f"{benchkit.writes(hub_steady) * 60 / window:>8.1f} / {benchkit.writes(spoke_steady) * 60 / window:.1f}"
            f"  ({window:.0f} s window, goal 0)"
        )
        print(
            f"{'steady-state reads per minute (hub / spoke)':<52} "
            f"{(sum(hub_steady.values()) - benchkit.writes(hub_steady)) * 60 / window:>8.1f} / "
            f"{(sum(spoke_steady.values()) - benchkit.writes(spoke_steady)) * 60 / window:.1f}"
        )
        print(
            f"{'agent RSS at the end (peak)':<52} {memory.get('VmRSS', 0) / 1024:>8.1f} MiB"
            f"  ({memory.get('VmHWM', 0) / 1024:.1f} MiB)"
        )
        print()
        print("requests per work, from the first create until settled (by verb, then detail):")
        _print_requests("hub", hub_req, works)
        _print_requests("spoke", spoke_req, works)
        if benchkit.writes(hub_steady) or benchkit.writes(spoke_steady):
            print("steady-state writes:")
            for name, counts in (("hub", hub_steady), ("spoke", spoke_steady)):
                for (verb, resource), n in sorted(counts.items()):
                    if verb in benchkit.WRITE_VERBS:
                        print(f"    {name:<6} {verb:<8} {resource:<34} {n:>7}")
    finally:
        if agent is not None:
            benchkit.stop(agent)
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
        hub = benchkit.start_kubesim(tmp / "hub.kubeconfig", tmp / "hub.log")
        spoke = benchkit.start_kubesim(tmp / "spoke.kubeconfig", tmp / "spoke.log")
        try:
            await benchkit.wait_file(tmp / "hub.kubeconfig", hub)
            await benchkit.wait_file(tmp / "spoke.kubeconfig", spoke)
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
            benchkit.stop(hub)
            benchkit.stop(spoke)


if __name__ == "__main__":
    asyncio.run(main())
