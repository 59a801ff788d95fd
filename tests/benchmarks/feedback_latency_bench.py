"""Status feedback end to end: Watch vs Poll latency, and the agent's idle cost.

A benchmark, not a test: it prints figures and never fails on a timing
(issue #6, performance). The hub and the spoke are two ``kubesim serve``
processes and the agent is a ``workagent agent`` process (leader election
off, ``/metrics`` on a free loopback port picked here), as in
``agent_bench.py``. Every ManifestWork holds one small Deployment (1
replica) with the feedback rules of the documentation's example:
``WellKnownStatus`` plus a ``JSONPaths`` rule
(``isAvailable: .status.conditions[?(@.type=="Available")].status``);
``--watch-works`` of them use ``feedbackScrapeType: Watch``, the others Poll.

Figures:

1. Watch-mode feedback latency, agent run with ``--status-sync-interval=60s``
   (a sync every 60-114 s, so polling cannot explain a sub-second figure):
   one sample = write a Watch Deployment's ``/status`` subresource on the
   spoke (new ``replicas``/``readyReplicas``/``availableReplicas``, a
   merge PATCH through the spoke's HTTP API; the clock starts just before
   the request is sent) until the new ``ReadyReplicas`` and ``Replicas``
   appear in the work's ``status.resourceStatus.manifests[].statusFeedback``
   on the hub (the clock stops when the benchmark's hub ManifestWork watch
   delivers that event). Samples are taken one at a time.
2. Poll-mode feedback latency: the same measurement on Poll works after the
   agent is restarted with ``--status-sync-interval=5s`` (same hub and spoke
   state). Expected: the time to the work's next sync, periods of
   5 s x [0.8, 1), i.e. about 2.25 s on average and at most 5 s. Samples
   overlap (staggered starts, distinct works) so that they take tens of
   seconds, not minutes; each sample's latency is independent of the others
   because every work has its own jittered sync timer.
3. The agent's cost with ``--works`` works of which ``--watch-works`` use
   Watch, in the Watch-mode run (60 s interval): RSS (``VmRSS``, and the peak
   ``VmHWM``, from ``/proc/<pid>/status``) and CPU seconds (``utime+stime``
   from ``/proc/<pid>/stat``) until convergence and over an idle window
   after convergence; the open watches on the spoke and the hub
   (``GET /kubesim/watches``) and the agent's pool metrics
   (``feedback_watch_pool_informers``, ``..._registrations``,
   ``feedback_watch_fallbacks_total``) from its ``/metrics``; the agent's
   requests per second while idle (``GET /kubesim/stats``) and its
   reconciles in the window: "idle" still means a status sync per work every
   60-114 s (a GET for a Poll work, a cache read for a Watch work), so a
   window right after a convergence shorter than 60 s holds none. For
   comparison the Poll-mode run's CPU, requests and RSS are reported over
   its sampling window. ``--idle-delay 60`` starts the idle window a minute
   later, when the periodic syncs run (about works / 87 per second).

Choices:

- The spoke runs WITHOUT ``--simulate-workloads``: the benchmark's
  ``/status`` writes are the only status changes, so every hub update that
  carries a sample's value was caused by that sample (a simulated controller
  would write its own status after ``kubesim.io/delay-seconds`` and could
  race with a sample). A Deployment therefore has no status until its first
  sample; it is still ``Available`` on the hub (the object exists).
- The feedback watch pool has one informer per (resource, namespace), and a
  synced pool informer serves *every* work listing an object of that
  namespace (its events trigger the status sync of any work listing the
  object, Poll or Watch, as in OCM). Watch Deployments therefore live in
  ``fb-watch-<i>`` namespaces and Poll Deployments in separate
  ``fb-poll-<i>`` namespaces, ``--namespaces`` of each (default 10, under
  the default ``--max-feedback-watch`` of 50): the pool is expected to hold
  ``min(namespaces, watch works, max-feedback-watch)`` informers, and a
  Poll sample is never served by a watch.
- Watch works are spread evenly through the creation order (every tenth by
  default), so both kinds converge and come due for syncs at the same pace.
- Client-side QPS limits are lifted by default (``--qps 0``, as in
  ``agent_bench.py``); with OCM's default of 50 the Poll figure at 5 s with
  hundreds of Poll works measures the QPS limit rather than the interval.

``uv run python tests/benchmarks/feedback_latency_bench.py [--works N]
[--watch-works M] [--samples K]``; a quick run: ``--works 100 --watch-works 10``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchkit
from benchkit import StatsKey

from ocmkit.kube import (
    DEPLOYMENTS,
    MANIFESTWORKS,
    NAMESPACES,
    KubeClient,
)
from ocmkit.runtime import Informer, configure_logging
from tests.support.manifests import deployment as deployment_manifest

CLUSTER = "cluster1"
CONCURRENCY = 32
BENCH_AGENT = "feedback-latency-bench"  # our own User-Agent, left out of request counts
APPLY = "manifestwork-controller"  # controller names in the agent's metrics
STATUS = "AvailableStatusController"
WATCH_INTERVAL = "60s"
POLL_INTERVAL = "5s"
POLL_PERIOD = (4.0, 5.0)  # --status-sync-interval x [0.8, 1)
WATCH_SAMPLE_TIMEOUT = 30.0
POLL_SAMPLE_TIMEOUT = 60.0
FIXED_TIME = "2025-01-01T00:00:00Z"


# -- objects --------------------------------------------------------------------------------


def _namespace(watch: bool, index: int, namespaces: int) -> str:
    return f"fb-{'watch' if watch else 'poll'}-{index % namespaces}"


def _deployment(name: str, namespace: str) -> dict[str, Any]:
    return deployment_manifest(name, namespace)


def _work(name: str, namespace: str, watch: bool) -> dict[str, Any]:
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": {"name": name, "namespace": CLUSTER},
        "spec": {
            "workload": {"manifests": [_deployment(name, namespace)]},
            "manifestConfigs": [
                {
                    "resourceIdentifier": {
                        "group": "apps",
                        "resource": "deployments",
                        "namespace": namespace,
                        "name": name,
                    },
                    "feedbackScrapeType": "Watch" if watch else "Poll",
                    "feedbackRules": [
                        {"type": "WellKnownStatus"},
                        {
                            "type": "JSONPaths",
                            "jsonPaths": [
                                {
                                    "name": "isAvailable",
                                    "path": '.status.conditions[?(@.type=="Available")].status',
                                }
                            ],
                        },
                    ],
                }
            ],
        },
    }


def _status(value: int) -> dict[str, Any]:
    """A Deployment /status merge patch: every replica count is ``value``."""
    return {
        "status": {
            "replicas": value,
            "updatedReplicas": value,
            "readyReplicas": value,
            "availableReplicas": value,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "message": "Deployment has minimum availability.",
                    "lastUpdateTime": FIXED_TIME,
                    "lastTransitionTime": FIXED_TIME,
                }
            ],
        }
    }


def _feedback(work: dict[str, Any]) -> dict[str, Any]:
    """The feedback values of the work's (only) manifest, by name."""
    out: dict[str, Any] = {}
    manifests = ((work.get("status") or {}).get("resourceStatus") or {}).get("manifests") or []
    for entry in manifests:
        for value in (entry.get("statusFeedback") or {}).get("values") or []:
            field_value = value.get("fieldValue") or {}
            kind = str(field_value.get("type") or "").lower()
            key = {"jsonraw": "jsonRaw"}.get(kind, kind)
            out[value.get("name")] = field_value.get(key)
    return out


# -- processes ------------------------------------------------------------------------------


def _agent(
    tmp: Path, port: int, interval: str, qps: float, max_watch: int, log_name: str
) -> subprocess.Popen[bytes]:
    hub, spoke = tmp / "hub.kubeconfig", tmp / "spoke.kubeconfig"
    extra = (f"--status-sync-interval={interval}", f"--max-feedback-watch={max_watch}")
    return benchkit.start_process(
        benchkit.agent_command(hub, spoke, CLUSTER, port, qps, *extra), tmp / log_name
    )


# -- measuring ------------------------------------------------------------------------------


def _reconciles(metrics: dict[str, float], controller: str) -> float:
    """``controller_runtime_reconcile_total`` of one controller, over every result."""
    return sum(
        value
        for series, value in metrics.items()
        if series.startswith("controller_runtime_reconcile_total{")
        and f'controller="{controller}"' in series
    )


@dataclass
class Sampler:
    """Pending samples, resolved by the hub ManifestWork watch as events arrive."""

    pending: dict[str, tuple[int, asyncio.Future[float]]] = field(default_factory=dict)

    def expect(self, work: str, value: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.pending[work] = (value, future)
        return future

    def forget(self, work: str) -> None:
        self.pending.pop(work, None)

    def on_event(self, obj: dict[str, Any]) -> None:
        received = time.perf_counter()
        name = obj["metadata"]["name"]
        waiting = self.pending.get(name)
        if waiting is None:
            return
        value, future = waiting
        values = _feedback(obj)
        if values.get("ReadyReplicas") == value and values.get("Replicas") == value:
            del self.pending[name]
            if not future.done():
                future.set_result(received)


@dataclass
class Samples:
    latencies: list[float] = field(default_factory=list)
    writes: list[float] = field(default_factory=list)  # the /status PATCH round trips
    timeouts: int = 0
    window: float = 0.0
    cpu: float = 0.0


class Bench:
    def __init__(
        self, tmp: Path, args: argparse.Namespace, hub: KubeClient, spoke: KubeClient
    ) -> None:
        self.tmp = tmp
        self.hub = hub
        self.spoke = spoke
        self.args = args
        self.port = benchkit.free_port()
        self.sampler = Sampler()
        self.value = 1  # the last replica count written; every sample writes a new one
        self.agent: subprocess.Popen[bytes] | None = None
        self.locks: dict[str, asyncio.Lock] = {}
        self.informer = Informer(hub, MANIFESTWORKS, CLUSTER, name="bench-works")
        self.informer.add_handler(
            on_add=self.sampler.on_event,
            on_update=lambda _old, new: self.sampler.on_event(new),
        )
        self.names = [f"fb-{i:05d}" for i in range(args.works)]
        # Watch works spread evenly through the creation order, so that both kinds
        # converge, and come due for their periodic syncs, at the same pace.
        watch_index = {i * args.works // args.watch_works for i in range(args.watch_works)}
        self.watch_names = [n for i, n in enumerate(self.names) if i in watch_index]
        self.poll_names = [n for i, n in enumerate(self.names) if i not in watch_index]
        self.namespace = {
            **{n: _namespace(True, i, args.namespaces) for i, n in enumerate(self.watch_names)},
            **{n: _namespace(False, i, args.namespaces) for i, n in enumerate(self.poll_names)},
        }

    # -- setup ----------------------------------------------------------------------
    async def setup(self) -> None:
        await benchkit.install_crds(self.hub, benchkit.MANIFESTWORK_CRD)
        await benchkit.install_crds(self.spoke, benchkit.APPLIED_MANIFESTWORK_CRD)
        await self.hub.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
        for ns in sorted(set(self.namespace.values())):
            await self.spoke.create(NAMESPACES, {"metadata": {"name": ns}})
        await self.informer.start()
        await self.informer.wait_synced(30)

    async def close(self) -> None:
        if self.agent is not None:
            benchkit.stop(self.agent)
        await self.informer.stop()

    async def metrics(self) -> dict[str, float]:
        """The agent's /metrics, read with the bench's managed-cluster credentials (the
        agent asks its cluster who may read them)."""
        authorization = await self.spoke.config.credentials.authorization()
        return await benchkit.scrape(self.port, authorization=authorization)

    def start_agent(self, interval: str, log_name: str) -> subprocess.Popen[bytes]:
        self.agent = _agent(
            self.tmp, self.port, interval, self.args.qps, self.args.max_feedback_watch, log_name
        )
        return self.agent

    async def create_works(self) -> float:
        sem = asyncio.Semaphore(CONCURRENCY)
        watch = set(self.watch_names)

        async def create(name: str) -> None:
            async with sem:
                await self.hub.create(
                    MANIFESTWORKS, _work(name, self.namespace[name], name in watch)
                )

        t0 = time.perf_counter()
        await asyncio.gather(*(create(n) for n in self.names))
        return time.perf_counter() - t0

    def count(self, kind: str) -> int:
        n = 0
        for name in self.names:
            obj = self.informer.store.get(f"{CLUSTER}/{name}")
            n += obj is not None and benchkit.condition_true(obj, kind)
        return n

    async def quiet(self) -> bool:
        """No agent write on either cluster for 2 s."""
        before = benchkit.writes(
            await benchkit.kubesim_stats(self.hub, BENCH_AGENT)
        ) + benchkit.writes(await benchkit.kubesim_stats(self.spoke, BENCH_AGENT))
        await asyncio.sleep(2)  # sleep-ok: the 2 s quiet window is what is measured
        return (
            benchkit.writes(await benchkit.kubesim_stats(self.hub, BENCH_AGENT))
            + benchkit.writes(await benchkit.kubesim_stats(self.spoke, BENCH_AGENT))
            == before
        )

    # -- one sample -----------------------------------------------------------------
    async def sample(self, name: str, timeout: float, out: Samples) -> None:
        lock = self.locks.setdefault(name, asyncio.Lock())
        async with lock:
            self.value += 1
            value = self.value
            future = self.sampler.expect(name, value)
            t0 = time.perf_counter()
            await self.spoke.patch(
                DEPLOYMENTS, name, _status(value), self.namespace[name], subresource="status"
            )
            out.writes.append(time.perf_counter() - t0)
            try:
                received = await asyncio.wait_for(future, timeout)
            except TimeoutError:
                self.sampler.forget(name)
                out.timeouts += 1
                return
            out.latencies.append(received - t0)

    async def watch_samples(self, count: int) -> Samples:
        """One at a time, on the Watch works in turn, with a small random pause between."""
        out = Samples()
        assert self.agent is not None
        cpu0, t0 = benchkit.cpu(self.agent.pid), time.perf_counter()
        for i in range(count):
            await self.sample(
                self.watch_names[i % len(self.watch_names)], WATCH_SAMPLE_TIMEOUT, out
            )
            await asyncio.sleep(random.uniform(0.02, 0.1))
        out.window = time.perf_counter() - t0
        out.cpu = benchkit.cpu(self.agent.pid) - cpu0
        return out

    async def poll_samples(self, count: int) -> Samples:
        """Staggered over ``spread`` seconds, on distinct Poll works (shuffled)."""
        out = Samples()
        assert self.agent is not None
        names = list(self.poll_names)
        random.shuffle(names)
        spread = max(20.0, count * 0.15)
        starts = sorted(random.uniform(0, spread) for _ in range(count))

        async def one(i: int, start: float) -> None:
            await asyncio.sleep(start)
            await self.sample(names[i % len(names)], POLL_SAMPLE_TIMEOUT, out)

        cpu0, t0 = benchkit.cpu(self.agent.pid), time.perf_counter()
        await asyncio.gather(*(one(i, s) for i, s in enumerate(starts)))
        out.window = time.perf_counter() - t0
        out.cpu = benchkit.cpu(self.agent.pid) - cpu0
        return out

    # -- the run --------------------------------------------------------------------
    async def run(self) -> None:
        args = self.args
        await self.setup()
        print(
            f"{args.works} works (1 Deployment each), {len(self.watch_names)} Watch in "
            f"{min(args.namespaces, len(self.watch_names))} namespaces, "
            f"{len(self.poll_names)} Poll in {min(args.namespaces, len(self.poll_names))} "
            f"namespaces; agent /metrics on 127.0.0.1:{self.port}",
            flush=True,
        )

        # ---- phase 1: Watch mode, --status-sync-interval=60s --------------------
        agent = self.start_agent(WATCH_INTERVAL, "agent-watch.log")
        t_start = time.perf_counter()
        created = await self.create_works()
        works = args.works
        timeout = max(300.0, works * 1.0)
        await benchkit.until(
            lambda: self.count("Applied") == works, agent, timeout, "every work Applied"
        )
        applied = time.perf_counter() - t_start
        await benchkit.until(
            lambda: self.count("Available") == works, agent, timeout, "every work Available"
        )
        available = time.perf_counter() - t_start

        async def registered() -> bool:
            m = await self.metrics()
            return m.get("feedback_watch_pool_registrations", 0) + m.get(
                "feedback_watch_fallbacks_total", 0
            ) >= len(self.watch_names)

        await benchkit.until(registered, agent, timeout, "every Watch work registered", period=0.5)
        await benchkit.until(self.quiet, agent, timeout, "the agent to stop writing")
        converged = time.perf_counter() - t_start
        cpu_converged = benchkit.cpu(agent.pid)
        mem_converged = benchkit.memory(agent.pid)
        print(f"converged after {converged:.1f} s; idle window {args.window:.0f} s", flush=True)
        if args.idle_delay > 0:
            await asyncio.sleep(args.idle_delay)

        hub0, spoke0 = (
            await benchkit.kubesim_stats(self.hub, BENCH_AGENT),
            await benchkit.kubesim_stats(self.spoke, BENCH_AGENT),
        )
        metrics0 = await self.metrics()
        cpu0, w0 = benchkit.cpu(agent.pid), time.perf_counter()
        await asyncio.sleep(args.window)
        idle_cpu = benchkit.cpu(agent.pid) - cpu0
        idle_window = time.perf_counter() - w0
        hub1, spoke1 = (
            await benchkit.kubesim_stats(self.hub, BENCH_AGENT),
            await benchkit.kubesim_stats(self.spoke, BENCH_AGENT),
        )
        mem_idle = benchkit.memory(agent.pid)
        metrics = await self.metrics()
        idle_syncs = {
            c: _reconciles(metrics, c) - _reconciles(metrics0, c) for c in (APPLY, STATUS)
        }
        spoke_watches = await benchkit.open_watches(self.spoke)
        hub_watches = await benchkit.open_watches(self.hub)
        hub_idle, spoke_idle = hub1 - hub0, spoke1 - spoke0

        print(f"Watch-mode samples ({args.samples}) ...", flush=True)
        watch = await self.watch_samples(args.samples)
        benchkit.stop(agent)

        # ---- phase 2: Poll mode, --status-sync-interval=5s -----------------------
        print("restarting the agent with --status-sync-interval=5s ...", flush=True)
        agent = self.start_agent(POLL_INTERVAL, "agent-poll.log")
        t_restart = time.perf_counter()

        async def caught_up() -> bool:
            # Every work went through the apply loop and the status controller once.
            m = await self.metrics()
            return all(_reconciles(m, ctrl) >= works for ctrl in (APPLY, STATUS))

        await benchkit.until(
            caught_up, agent, timeout, "the restarted agent to catch up", period=0.5
        )
        restarted = time.perf_counter() - t_restart
        print(
            f"caught up after {restarted:.1f} s; Poll-mode samples ({args.samples}) ...", flush=True
        )
        poll_hub0, poll_spoke0 = (
            await benchkit.kubesim_stats(self.hub, BENCH_AGENT),
            await benchkit.kubesim_stats(self.spoke, BENCH_AGENT),
        )
        poll = await self.poll_samples(args.samples)
        poll_hub, poll_spoke = (
            await benchkit.kubesim_stats(self.hub, BENCH_AGENT),
            await benchkit.kubesim_stats(self.spoke, BENCH_AGENT),
        )
        poll_hub, poll_spoke = poll_hub - poll_hub0, poll_spoke - poll_spoke0
        poll_metrics = await self.metrics()
        poll_mem = benchkit.memory(agent.pid)
        poll_spoke_watches = await benchkit.open_watches(self.spoke)
        benchkit.stop(agent)

        # ---- report --------------------------------------------------------------
        def row(label: str, value: str) -> None:
            print(f"  {label:<58} {value}")

        def latency_rows(name: str, s: Samples) -> None:
            if not s.latencies:
                row(f"{name}: no sample arrived", f"{s.timeouts} timed out")
                return
            lat = s.latencies
            row(
                f"{name}: samples (timed out)",
                f"{len(lat)} ({s.timeouts})",
            )
            row(
                "  p50 / p90 / p99 / max",
                f"{benchkit.percentile(lat, 50) * 1e3:8.1f} / {benchkit.percentile(lat, 90) * 1e3:.1f} / "
                f"{benchkit.percentile(lat, 99) * 1e3:.1f} / {max(lat) * 1e3:.1f} ms",
            )
            row(
                "  mean / min",
                f"{statistics.fmean(lat) * 1e3:8.1f} / {min(lat) * 1e3:.1f} ms",
            )
            row(
                "  the /status PATCH alone (p50 / p99)",
                f"{benchkit.percentile(s.writes, 50) * 1e3:8.1f} / {benchkit.percentile(s.writes, 99) * 1e3:.1f} ms",
            )
            row(
                "  agent CPU while sampling",
                f"{s.cpu:8.2f} s in {s.window:.1f} s ({100 * s.cpu / s.window:.0f} % of a core)",
            )

        def per_s(counts: Counter[StatsKey], window: float) -> str:
            reads = sum(counts.values()) - benchkit.writes(counts)
            return f"{reads / window:.2f} reads/s, {benchkit.writes(counts) / window:.2f} writes/s"

        print()
        print("=" * 92)
        print(
            f"status feedback benchmark: {works} works x 1 Deployment, "
            f"{len(self.watch_names)} Watch / {len(self.poll_names)} Poll, "
            f"agent QPS {'unlimited' if args.qps <= 0 else f'{args.qps:g}'}, "
            f"--max-feedback-watch={args.max_feedback_watch}"
        )
        print("=" * 92)
        print("feedback latency (spoke /status write -> value in the hub ManifestWork watch)")
        latency_rows(f"Watch mode, --status-sync-interval={WATCH_INTERVAL}", watch)
        latency_rows(f"Poll mode,  --status-sync-interval={POLL_INTERVAL}", poll)
        lo, hi = POLL_PERIOD
        expected = (((hi - lo) ** 2 / 12) + ((lo + hi) / 2) ** 2) / (lo + hi)
        row(
            "  (Poll expectation: time to the next sync)",
            f"mean ~{expected * 1e3:.0f} ms, max ~{hi * 1e3:.0f} ms",
        )
        print()
        print(f"agent cost (Watch-mode run, --status-sync-interval={WATCH_INTERVAL})")
        row("create all works on the hub", f"{created:8.1f} s")
        row("until every work is Applied / Available", f"{applied:8.1f} / {available:.1f} s")
        row("until converged (Watch registered, 2 s without writes)", f"{converged:8.1f} s")
        row("CPU until converged", f"{cpu_converged:8.1f} s")
        row(
            "RSS at convergence (peak)",
            f"{mem_converged.get('VmRSS', 0) / 1024:8.1f} MiB "
            f"({mem_converged.get('VmHWM', 0) / 1024:.1f} MiB)",
        )
        row(
            f"idle: CPU over {idle_window:.0f} s, from {args.idle_delay:.0f} s after convergence",
            f"{idle_cpu:8.2f} s ({100 * idle_cpu / idle_window:.1f} % of a core)",
        )
        row(
            "idle: RSS at the end (peak)",
            f"{mem_idle.get('VmRSS', 0) / 1024:8.1f} MiB ({mem_idle.get('VmHWM', 0) / 1024:.1f} MiB)",
        )
        row(
            "idle: reconciles (status controller / apply loop)",
            f"{idle_syncs[STATUS]:8.0f} / {idle_syncs[APPLY]:.0f}"
            "  (status syncs come due 60-114 s after the last)",
        )
        row("idle: agent requests to the spoke", per_s(spoke_idle, idle_window))
        row("idle: agent requests to the hub", per_s(hub_idle, idle_window))
        row("open watches on the spoke / hub (kubesim)", f"{spoke_watches:8d} / {hub_watches}")
        row("  (the hub count includes this benchmark's own watch)", "")
        row(
            "feedback_watch_pool_informers",
            f"{metrics.get('feedback_watch_pool_informers', 0):8.0f}"
            f"  (expected {min(args.namespaces, len(self.watch_names), args.max_feedback_watch)})",
        )
        row(
            "feedback_watch_pool_registrations",
            f"{metrics.get('feedback_watch_pool_registrations', 0):8.0f}"
            f"  (Watch works: {len(self.watch_names)})",
        )
        row(
            "feedback_watch_fallbacks_total",
            f"{metrics.get('feedback_watch_fallbacks_total', 0):8.0f}",
        )
        print()
        print(f"Poll-mode run (--status-sync-interval={POLL_INTERVAL})")
        row("restart until every work was reconciled once", f"{restarted:8.1f} s")
        row(
            "agent CPU while sampling",
            f"{poll.cpu:8.2f} s in {poll.window:.1f} s ({100 * poll.cpu / poll.window:.0f} % of a core)",
        )
        row("agent requests to the spoke while sampling", per_s(poll_spoke, poll.window))
        row("agent requests to the hub while sampling", per_s(poll_hub, poll.window))
        row(
            "RSS at the end (peak)",
            f"{poll_mem.get('VmRSS', 0) / 1024:8.1f} MiB ({poll_mem.get('VmHWM', 0) / 1024:.1f} MiB)",
        )
        row(
            "open watches on the spoke (see below) / pool informers",
            f"{poll_spoke_watches:8d} / {poll_metrics.get('feedback_watch_pool_informers', 0):.0f}",
        )
        row("  (kubesim counts the stopped agent's watches until their next event", "")
        row("   or bookmark, up to 60 s: this may include the first run's)", "")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--works", type=int, default=1000, help="ManifestWorks (1 Deployment each)")
    parser.add_argument("--watch-works", type=int, default=100, help="of which use Watch")
    parser.add_argument("--samples", type=int, default=200, help="latency samples per mode")
    parser.add_argument("--namespaces", type=int, default=10, help="namespaces per scrape type")
    parser.add_argument("--window", type=float, default=30.0, help="idle window, s")
    parser.add_argument(
        "--idle-delay",
        type=float,
        default=0.0,
        help="wait this long after convergence before the idle window, s (60+: the "
        "window includes the periodic status syncs)",
    )
    parser.add_argument("--qps", type=float, default=0.0, help="agent QPS per client (0: none)")
    parser.add_argument(
        "--max-feedback-watch", type=int, default=50, help="the agent's --max-feedback-watch"
    )
    args = parser.parse_args()
    configure_logging("console", "warning")
    if not 0 < args.watch_works < args.works:
        parser.error("need 0 < --watch-works < --works (both modes are measured)")
    if args.namespaces < 1 or args.samples < 1:
        parser.error("--namespaces and --samples must be at least 1")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        hub = benchkit.start_kubesim(tmp / "hub.kubeconfig", tmp / "hub.log")
        spoke = benchkit.start_kubesim(tmp / "spoke.kubeconfig", tmp / "spoke.log")
        bench: Bench | None = None
        clients: list[KubeClient] = []
        try:
            await benchkit.wait_file(tmp / "hub.kubeconfig", hub)
            await benchkit.wait_file(tmp / "spoke.kubeconfig", spoke)
            for which in ("hub", "spoke"):
                clients.append(
                    await KubeClient.from_kubeconfig(
                        str(tmp / f"{which}.kubeconfig"),
                        qps=0,
                        user_agent=BENCH_AGENT,
                        name=f"bench-{which}",
                    )
                )
            bench = Bench(tmp, args, *clients)
            await bench.run()
        except BaseException:
            for log_name in ("agent-watch.log", "agent-poll.log"):
                log = tmp / log_name
                if log.exists() and log.stat().st_size:
                    print(f"--- {log_name} (last 40 lines) ---", file=sys.stderr)
                    print(
                        "\n".join(log.read_text(errors="replace").splitlines()[-40:]),
                        file=sys.stderr,
                    )
            raise
        finally:
            if bench is not None:
                await bench.close()
            for client in clients:
                await client.close()
            benchkit.stop(hub)
            benchkit.stop(spoke)


if __name__ == "__main__":
    asyncio.run(main())
