"""The agent scenarios of the benchmark suite, measured in one run of one agent.

One run: a hub and a spoke (by default one fresh real kube-apiserver that is
both, as OCM's own figures run it; or two fresh ``kubesim serve`` processes;
or the clusters given), one agent process (ours, or any agent started from a
command template), N ManifestWorks of M ConfigMaps, then in order:

1. apply throughput: the N works created at once, time to all ``Applied`` and
   all ``Available``; the requests they cost, per work;
2. steady state: requests per minute while the N works are idle;
3. end-to-end latency: one more work created while the N are idle, from the
   create request to ``Applied=True`` seen by a hub watch (several samples);
4. update latency: a change to one work's first manifest until a spoke watch
   shows it on the ConfigMap;
5. feedback latency and staleness (on clusters the suite started: nothing
   there overwrites a Deployment's status): a Deployment's ``/status`` written
   on the spoke until the value is in the work's ``statusFeedback`` on the
   hub, for ``feedbackScrapeType`` Watch and Poll;
6. deletion: the N works deleted at once until they are gone from the hub.

Cost (the agent's CPU seconds and RSS, summed over its process tree) is read
from ``/proc`` at every phase boundary. Request counts come from the real
apiserver's audit log (every client, the agent's hub and spoke clients told
apart by their tokens), from kubesim's ``/kubesim/stats`` (by User-Agent),
else from the agent's Prometheus ``/metrics`` (our
``kube_client_requests_total`` or client-go's ``rest_client_requests_total``),
else they are unavailable (None). The benchmark's own requests are left out
of the agent's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import benchkit
from benchkit import AuditTally, StatsKey

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    DEPLOYMENTS,
    MANIFESTWORKS,
    NAMESPACES,
    AlreadyExists,
    KubeClient,
    NotFound,
)
from ocmkit.kube.config import load_kubeconfig
from ocmkit.runtime import Informer
from tests.support.controlplane import ControlPlane, Etcd, Identity
from tests.support.manifests import deployment as deployment_manifest

BENCH_AGENT = "bench-suite"  # the suite's own User-Agent, left out of the counts
# The agent's identities on the real control plane: its hub and spoke clients
# get a token each, so the audit log tells them apart even on one apiserver.
HUB_USER = "bench:agent-hub"
SPOKE_USER = "bench:agent-spoke"
CONCURRENCY = 32  # creates/deletes in flight, as agent_bench.py
SETTLE_QUIET = 2.0  # "settled": this long without an agent write
# The protocol minimum per work of M objects (see docs/benchmarks.md): on the spoke one
# write per object plus the AppliedManifestWork create; on the hub the finalizer and one
# status update. Deleting: one delete per object and the AMW, and the hub finalizer removal.
HUB_MIN_WRITES = 2
DELETE_HUB_MIN_WRITES = 1

Run = dict[str, dict[str, float | None]]  # scenario -> metric -> value (None: unavailable)


def spoke_min_writes(manifests: int) -> int:
    """Spoke writes a work of ``manifests`` objects needs at least: each object and the AMW."""
    return manifests + 1


# -- what the suite is given -----------------------------------------------------------


REAL = "real"
KUBESIM = "kubesim"
CLUSTERS = "clusters"


@dataclass(frozen=True)
class Target:
    """Where to run: ``real`` (a control plane started per run), ``kubesim`` (two
    kubesims started per run) or ``clusters`` (the kubeconfigs given)."""

    kind: str = REAL
    hub_kubeconfig: Path | None = None
    spoke_kubeconfig: Path | None = None

    @property
    def kubesim(self) -> bool:
        """Whether the clusters are kubesims started per run."""
        return self.kind == KUBESIM

    @property
    def started(self) -> bool:
        """Whether the suite starts the clusters: then no controller overwrites a
        Deployment's status (kubesim simulates no workloads unless told to; the
        real control plane runs no workload controllers), so feedback is measured."""
        return self.kind in (REAL, KUBESIM)


@dataclass(frozen=True)
class AgentSpec:
    """An agent under test: ours (``command`` None) or a command template."""

    name: str
    command: str | None = None

    @property
    def serves_metrics(self) -> bool:
        """Whether we know where its Prometheus /metrics are."""
        return self.command is None or "{metrics_port}" in self.command


@dataclass(frozen=True)
class Params:
    """The suite's knobs that one run needs."""

    manifests: int = 5
    samples: int = 10
    window: float = 10.0
    status_sync_interval: float = 10.0
    agent_qps: float = 0.0  # <= 0: unlimited
    feedback: bool = True
    settle_quiet: float = SETTLE_QUIET


def qps_label(qps: float) -> str:
    """``"QPS 50/100"`` or ``"QPS unlimited"``."""
    if qps <= 0:
        return "QPS unlimited"
    return "QPS {}/{}".format(*benchkit.qps_flags(qps))


def agent_argv(
    spec: AgentSpec, hub: Path, spoke: Path, cluster: str, port: int, p: Params
) -> list[str]:
    """The agent's command line: ours with the suite's flags, or the template filled in."""
    interval = f"{p.status_sync_interval:g}s"
    if spec.command is not None:
        qps, burst = benchkit.qps_flags(p.agent_qps)
        values = {
            "hub_kubeconfig": str(hub),
            "spoke_kubeconfig": str(spoke),
            "cluster": cluster,
            "metrics_port": str(port),
            "status_sync_interval": interval,
            "kube_api_qps": qps,
            "kube_api_burst": burst,
        }
        try:
            return shlex.split(spec.command.format(**values))
        except (KeyError, IndexError) as err:
            raise SystemExit(
                f"--agent-cmd: unknown placeholder {err}; known: {sorted(values)}"
            ) from None
    return benchkit.agent_command(
        hub, spoke, cluster, port, p.agent_qps, f"--status-sync-interval={interval}"
    )


# -- objects ---------------------------------------------------------------------------


def work(name: str, cluster: str, manifests: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A ManifestWork holding ``manifests``."""
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": {"name": name, "namespace": cluster},
        "spec": {"workload": {"manifests": manifests}, **spec},
    }


def deployment(name: str, namespace: str) -> dict[str, Any]:
    """A one-replica Deployment (kubesim without simulated workloads leaves its status alone)."""
    return deployment_manifest(name, namespace)


def feedback_config(name: str, namespace: str, scrape: str) -> dict[str, Any]:
    """The manifestConfigs entry asking for WellKnownStatus feedback in ``scrape`` mode."""
    return {
        "resourceIdentifier": {
            "group": "apps",
            "resource": "deployments",
            "namespace": namespace,
            "name": name,
        },
        "feedbackScrapeType": scrape,
        "feedbackRules": [{"type": "WellKnownStatus"}],
    }


def replicas_feedback(obj: dict[str, Any]) -> Any:
    """The ``ReadyReplicas`` feedback value of a work's (only) manifest, or None."""
    manifests = ((obj.get("status") or {}).get("resourceStatus") or {}).get("manifests") or []
    for entry in manifests:
        for value in (entry.get("statusFeedback") or {}).get("values") or []:
            if value.get("name") == "ReadyReplicas":
                return (value.get("fieldValue") or {}).get("integer")
    return None


def holds(value: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a ConfigMap whose ``data.key`` is ``value``."""
    return lambda obj: (obj.get("data") or {}).get("key") == value


def status_patch(value: int) -> dict[str, Any]:
    """A Deployment /status merge patch setting every replica count to ``value``."""
    counts = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    return {"status": dict.fromkeys(counts, value)}


# -- watching for a condition ----------------------------------------------------------


@dataclass
class Waiters:
    """Futures resolved, with the time the event arrived, when an object matches."""

    pending: dict[str, tuple[Callable[[dict[str, Any]], bool], asyncio.Future[float]]] = field(
        default_factory=dict
    )

    def expect(self, name: str, match: Callable[[dict[str, Any]], bool]) -> asyncio.Future[float]:
        """A future for the first event on ``name`` that satisfies ``match``."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.pending[name] = (match, future)
        return future

    def on_event(self, obj: dict[str, Any]) -> None:
        """Informer handler: the arrival time is taken first, before any matching work."""
        received = time.perf_counter()
        name = obj["metadata"]["name"]
        waiting = self.pending.get(name)
        if waiting is not None and waiting[0](obj):
            del self.pending[name]
            if not waiting[1].done():
                waiting[1].set_result(received)

    def attach(self, informer: Informer) -> None:
        """Feed this from ``informer``'s adds and updates."""
        informer.add_handler(on_add=self.on_event, on_update=lambda _old, new: self.on_event(new))


async def timed(t0: float, future: asyncio.Future[float], timeout: float) -> float | None:
    """Seconds from ``t0`` until ``future`` resolved, None after ``timeout``."""
    try:
        return await asyncio.wait_for(future, timeout) - t0
    except TimeoutError:
        return None


def latency_figures(values: list[float | None]) -> dict[str, float | None]:
    """p50/p99/max in ms of the samples that arrived, and how many timed out."""
    got = [v for v in values if v is not None]
    return {
        "p50_ms": benchkit.percentile(got, 50) * 1e3 if got else None,
        "p99_ms": benchkit.percentile(got, 99) * 1e3 if got else None,
        "max_ms": max(got) * 1e3 if got else None,
        "samples": float(len(got)),
        "timeouts": float(len(values) - len(got)),
    }


# -- counting requests -----------------------------------------------------------------

Counts = dict[str, Counter[StatsKey]]  # "hub" / "spoke" -> (verb, resource) -> requests
METHOD_VERBS = {
    "GET": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class Snapshot:
    """Requests so far: the agent's, per cluster, and every client's (when the source
    can tell clients apart: the audit log and kubesim, not the agent's /metrics)."""

    agent: Counts
    clients: Counter[str]


@dataclass
class RequestCounter:
    """The agent's requests so far, per cluster, from the best source available."""

    hub: KubeClient
    spoke: KubeClient
    kubesim: bool
    metrics_port: int | None
    hub_host: str
    spoke_host: str
    audit: AuditTally | None = None

    @property
    def available(self) -> bool:
        """Whether requests can be counted at all."""
        return self.audit is not None or self.kubesim or self.metrics_port is not None

    async def snapshot(self) -> Snapshot | None:
        """Counts now (None: no source)."""
        if self.audit is not None:
            self.audit.read()
            roles = self.audit.by_role
            agent = {side: Counter(roles.get(side) or {}) for side in ("hub", "spoke")}
            return Snapshot(agent, Counter(self.audit.by_client))
        if self.kubesim:
            return Snapshot(
                {
                    "hub": await benchkit.kubesim_stats(self.hub, BENCH_AGENT),
                    "spoke": await benchkit.kubesim_stats(self.spoke, BENCH_AGENT),
                },
                await benchkit.kubesim_clients(self.hub, "hub", BENCH_AGENT)
                + await benchkit.kubesim_clients(self.spoke, "spoke", BENCH_AGENT),
            )
        if self.metrics_port is None:
            return None
        # The suite's own credentials for the managed cluster: the agent asks it.
        authorization = await self.spoke.config.credentials.authorization()
        metrics = await benchkit.scrape(self.metrics_port, authorization=authorization)
        return Snapshot(self._from_metrics(metrics), Counter())

    def _from_metrics(self, metrics: dict[str, float]) -> Counts:
        out: Counts = {"hub": Counter(), "spoke": Counter()}
        for series, value in metrics.items():
            name = series.split("{", 1)[0]
            lab = benchkit.labels(series)
            if name == "kube_client_requests_total":  # ours: client, verb, code
                side = "hub" if lab.get("client") == "hub" else "spoke"
                out[side][(lab.get("verb", "?"), "*")] += int(value)
            elif name == "rest_client_requests_total":  # client-go: code, host, method
                host = lab.get("host", "")
                side = "hub" if host == self.hub_host and host != self.spoke_host else "spoke"
                out[side][(METHOD_VERBS.get(lab.get("method", ""), "get"), "*")] += int(value)
        return out


def diff(after: Snapshot | None, before: Snapshot | None) -> Snapshot | None:
    """Requests between two snapshots."""
    if after is None or before is None:
        return None
    agent = {side: after.agent[side] - before.agent[side] for side in after.agent}
    return Snapshot(agent, after.clients - before.clients)


def per_client(counts: Snapshot | None, scale: float) -> dict[str, float | None]:
    """Every client's requests in ``counts`` times ``scale`` (per work, per minute)."""
    if counts is None:
        return {}
    return {label: n * scale for label, n in sorted(counts.clients.items())}


def per_request(counts: Snapshot | None, scale: float) -> dict[str, float | None]:
    """The agent's requests by ``"<side> <verb> <resource>"``, times ``scale`` (the
    results' detail: which requests make up a figure)."""
    if counts is None:
        return {}
    return {
        f"{side} {verb} {resource}": n * scale
        for side, counter in counts.agent.items()
        for (verb, resource), n in sorted(counter.items())
        if n
    }


def total(counts: Counter[StatsKey]) -> int:
    """All requests in ``counts``."""
    return sum(counts.values())


@dataclass(frozen=True)
class Clusters:
    """Where one run talks to: the agent's kubeconfigs, the benchmark's own (the
    admin's on the real control plane, so that its requests are not the agent's),
    and the audit log to count from (real control plane only)."""

    hub: Path
    spoke: Path
    driver_hub: Path
    driver_spoke: Path
    audit: AuditTally | None = None
    servers: tuple[int, ...] = ()  # the API servers' (and etcd's) pids, for their CPU


# -- one run ---------------------------------------------------------------------------


class AgentRun:
    """One agent, one N, one set of clusters: every scenario once, figures in ``out``."""

    def __init__(
        self, target: Target, spec: AgentSpec, n: int, params: Params, tag: str, tmp: Path
    ) -> None:
        self.target = target
        self.spec = spec
        self.n = n
        self.p = params
        self.tmp = tmp
        self.cluster = f"bench-{tag}"  # hub namespace; unique per run on a shared real cluster
        self.ns = f"bench-ws-{tag}"  # spoke namespace of the ConfigMaps
        self.prefix = f"{tag}-"
        self.names = [f"{self.prefix}w{i:05d}" for i in range(n)]
        self.out: Run = {}
        self.agent: subprocess.Popen[bytes] | None = None
        self.port = benchkit.free_port()
        self.hub_works = Waiters()
        self.spoke_configmaps = Waiters()
        self.cpu_mark = 0.0
        self.servers: tuple[int, ...] = ()
        self.server_mark = 0.0
        self.informers: list[Informer] = []

    # -- plumbing --------------------------------------------------------------------
    def cost(self) -> float:
        """CPU seconds the agent used since the previous call."""
        assert self.agent is not None
        now = benchkit.tree_cpu(self.agent.pid)
        used, self.cpu_mark = now - self.cpu_mark, now
        return used

    def server_cost(self) -> float | None:
        """CPU seconds the API servers (and etcd) used since the previous call."""
        if not self.servers:
            return None
        now = sum(benchkit.tree_cpu(pid) for pid in self.servers)
        used, self.server_mark = now - self.server_mark, now
        return used

    def rss_mib(self) -> float:
        """The agent's resident memory now, MiB (its process tree)."""
        assert self.agent is not None
        return benchkit.tree_memory(self.agent.pid).get("VmRSS", 0) / 1024

    def count(self, kind: str, names: list[str]) -> int:
        """How many of ``names`` have condition ``kind`` True on the hub."""
        store = self.works.store
        n = 0
        for name in names:
            obj = store.get(f"{self.cluster}/{name}")
            n += obj is not None and benchkit.condition_true(obj, kind)
        return n

    async def settle(self) -> None:
        """Until the agent made no write for ``settle_quiet`` s (a fixed pause without counts)."""
        if not self.counter.available:
            await asyncio.sleep(self.p.settle_quiet + 1)  # sleep-ok: no counts to watch
            return

        async def quiet() -> bool:
            before = await self.counter.snapshot()
            await asyncio.sleep(self.p.settle_quiet)  # sleep-ok: the quiet window itself
            after = await self.counter.snapshot()
            moved = diff(after, before)
            assert moved is not None
            return sum(benchkit.writes(c) for c in moved.agent.values()) == 0

        await benchkit.until(quiet, self.agent, self.timeout, "the agent to stop writing")

    async def bounded(self, items: list[str], action: Callable[[str], Any]) -> None:
        """``await action(item)`` for every item, CONCURRENCY at a time."""
        sem = asyncio.Semaphore(CONCURRENCY)

        async def one(item: str) -> None:
            async with sem:
                await action(item)

        await asyncio.gather(*(one(i) for i in items))

    @property
    def timeout(self) -> float:
        """Generous: a deadline only stops a hung run."""
        return max(300.0, self.n * 1.0)

    # -- setup -----------------------------------------------------------------------
    async def setup(self, where: Clusters) -> None:
        """Clients, CRDs, namespaces and the suite's watches."""
        self.hub = await KubeClient.from_kubeconfig(
            str(where.driver_hub), qps=0, user_agent=BENCH_AGENT, name="bench-hub"
        )
        self.spoke = await KubeClient.from_kubeconfig(
            str(where.driver_spoke), qps=0, user_agent=BENCH_AGENT, name="bench-spoke"
        )
        hub_host = urlsplit((await load_kubeconfig(str(where.hub))).host).netloc
        spoke_host = urlsplit((await load_kubeconfig(str(where.spoke))).host).netloc
        self.counter = RequestCounter(
            self.hub,
            self.spoke,
            self.target.kubesim,
            self.port if self.spec.serves_metrics else None,
            hub_host,
            spoke_host,
            where.audit,
        )
        await benchkit.install_crds(self.hub, benchkit.MANIFESTWORK_CRD)
        await benchkit.install_crds(self.spoke, benchkit.APPLIED_MANIFESTWORK_CRD)
        await benchkit.wait_watchable(self.hub, MANIFESTWORKS)
        await benchkit.wait_watchable(self.spoke, APPLIED_MANIFESTWORKS)
        for client, ns in (
            (self.hub, self.cluster),
            (self.spoke, self.ns),
            (self.spoke, f"{self.ns}-fbw"),
            (self.spoke, f"{self.ns}-fbp"),
        ):
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACES, {"metadata": {"name": ns}})
        self.works = Informer(self.hub, MANIFESTWORKS, self.cluster, name="bench-works")
        self.hub_works.attach(self.works)
        # Only the first ConfigMap of the first work: the update-latency target.
        target = f"metadata.name={self.names[0]}-0" if self.names else "metadata.name=-"
        configmaps = Informer(
            self.spoke, CONFIGMAPS, self.ns, field_selector=target, name="bench-configmaps"
        )
        self.spoke_configmaps.attach(configmaps)
        self.informers = [self.works, configmaps]
        for informer in self.informers:
            await informer.start()
            await informer.wait_synced(30)

    def start_agent(self, hub_kc: Path, spoke_kc: Path) -> None:
        """The agent process, its output in agent.log."""
        argv = agent_argv(self.spec, hub_kc, spoke_kc, self.cluster, self.port, self.p)
        with (self.tmp / "agent.log").open("wb") as log:
            self.agent = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    async def close(self) -> None:
        """Stop the agent and the suite's watches and clients."""
        if self.agent is not None:
            benchkit.stop(self.agent)
        for informer in self.informers:
            await informer.stop()
        for client in (getattr(self, "hub", None), getattr(self, "spoke", None)):
            if client is not None:
                await client.close()

    # -- scenarios -------------------------------------------------------------------
    async def warm_up(self) -> None:
        """A one-ConfigMap work applied: the agent is up (informers synced, discovery done)."""
        name = f"{self.prefix}warm-up"
        t0 = time.perf_counter()
        done = self.hub_works.expect(name, lambda o: benchkit.condition_true(o, "Applied"))
        await self.hub.create(
            MANIFESTWORKS, work(name, self.cluster, [benchkit.configmap(name, self.ns)])
        )
        await benchkit.until(done.done, self.agent, 120, "the warm-up work", period=0.05)
        self.out["cost"] = {"startup_s": done.result() - t0}
        await self.settle()
        self.cost()
        self.server_cost()

    def manifests(self, name: str, value: str = "value") -> list[dict[str, Any]]:
        """The M ConfigMaps of work ``name`` (the first carries ``value``)."""
        return [
            benchkit.configmap(f"{name}-{j}", self.ns, value if j == 0 else "value")
            for j in range(self.p.manifests)
        ]

    async def apply(self) -> None:
        """N works created at once: time to all Applied/Available, requests per work."""
        before = await self.counter.snapshot()
        t0 = time.perf_counter()
        await self.bounded(
            self.names,
            lambda n: self.hub.create(MANIFESTWORKS, work(n, self.cluster, self.manifests(n))),
        )
        created = time.perf_counter() - t0
        await benchkit.until(
            lambda: self.count("Applied", self.names) == self.n, self.agent, self.timeout, "Applied"
        )
        applied = time.perf_counter() - t0
        await benchkit.until(
            lambda: self.count("Available", self.names) == self.n,
            self.agent,
            self.timeout,
            "Available",
        )
        available = time.perf_counter() - t0
        await self.settle()
        cpu = self.cost()
        server_cpu = self.server_cost()
        self.out["throughput"] = {
            "create_s": created,
            "applied_s": applied,
            "available_s": available,
            "works_per_s": self.n / applied,
        }
        counts = diff(await self.counter.snapshot(), before)
        self.out["requests"] = self.per_work(
            counts, spoke_min_writes(self.p.manifests), HUB_MIN_WRITES
        )
        self.out["clients_apply"] = per_client(counts, 1 / self.n)
        self.out["detail_apply"] = per_request(counts, 1 / self.n)
        memory = benchkit.tree_memory(self.agent.pid) if self.agent else {}
        self.out["cost"].update(
            {
                "apply_cpu_s": cpu,
                "apply_cpu_ms_per_work": cpu * 1e3 / self.n,
                "rss_mib": memory.get("VmRSS", 0) / 1024,
                "server_apply_cpu_s": server_cpu,
            }
        )

    def per_work(
        self, counts: Snapshot | None, spoke_min: int, hub_min: int
    ) -> dict[str, float | None]:
        """Requests per work against the protocol minimum (writes; reads have minimum 0)."""
        minimum = spoke_min + hub_min
        if counts is None:
            return {"minimum_writes": float(minimum)}
        hub, spoke = counts.agent["hub"], counts.agent["spoke"]
        out: dict[str, float | None] = {
            "hub_per_work": total(hub) / self.n,
            "spoke_per_work": total(spoke) / self.n,
            "hub_writes_per_work": benchkit.writes(hub) / self.n,
            "spoke_writes_per_work": benchkit.writes(spoke) / self.n,
        }
        every = (total(hub) + total(spoke)) / self.n
        written = (benchkit.writes(hub) + benchkit.writes(spoke)) / self.n
        out.update(
            {
                "per_work": every,
                "writes_per_work": written,
                "reads_per_work": every - written,
                "minimum_writes": float(minimum),
                "ratio_to_minimum": every / minimum,
                "writes_ratio_to_minimum": written / minimum,
            }
        )
        return out

    async def steady(self) -> None:
        """Requests per minute with the N works idle (writes should be 0)."""
        before = await self.counter.snapshot()
        self.cost()
        rss_start = self.rss_mib()
        t0 = time.perf_counter()
        await asyncio.sleep(self.p.window)  # sleep-ok: the measured idle window
        window = time.perf_counter() - t0
        cpu = self.cost()
        counts = diff(await self.counter.snapshot(), before)
        figures: dict[str, float | None] = {
            "cpu_percent_core": 100 * cpu / window,
            "window_s": window,
        }
        for side in ("hub", "spoke"):
            figures[f"{side}_requests_per_min"] = (
                total(counts.agent[side]) * 60 / window if counts else None
            )
            figures[f"{side}_writes_per_min"] = (
                benchkit.writes(counts.agent[side]) * 60 / window if counts else None
            )
        figures["requests_per_s"] = (
            sum(total(c) for c in counts.agent.values()) / window if counts else None
        )
        rss_end = self.rss_mib()
        # Flat memory over the window: what the agent keeps does not grow while idle.
        figures["rss_growth_mib"] = rss_end - rss_start if rss_start and rss_end else None
        self.out["steady"] = figures
        self.out["clients_steady"] = per_client(counts, 60 / window)
        self.out["detail_steady"] = per_request(counts, 60 / window)
        self.out["cost"]["idle_rss_mib"] = rss_end

    async def e2e_latency(self) -> None:
        """One new work at a time while N are idle: create request to Applied=True on the hub."""
        samples: list[float | None] = []
        for k in range(self.p.samples):
            name = f"{self.prefix}lat-{k:03d}"
            body = work(name, self.cluster, [benchkit.configmap(name, self.ns)])
            done = self.hub_works.expect(name, lambda o: benchkit.condition_true(o, "Applied"))
            t0 = time.perf_counter()
            await self.hub.create(MANIFESTWORKS, body)
            samples.append(await timed(t0, done, 60))
            await asyncio.sleep(random.uniform(0.02, 0.1))  # sleep-ok: decorrelate samples
        self.out["e2e_latency"] = latency_figures(samples)

    async def update_latency(self) -> None:
        """A new value in work 0's first ConfigMap until the spoke's watch shows it."""
        if not self.names:
            return
        name = self.names[0]
        samples: list[float | None] = []
        for k in range(self.p.samples):
            value = f"update-{k}"
            done = self.spoke_configmaps.expect(f"{name}-0", holds(value))
            patch = {"spec": {"workload": {"manifests": self.manifests(name, value)}}}
            t0 = time.perf_counter()
            await self.hub.patch(MANIFESTWORKS, name, patch, self.cluster)
            samples.append(await timed(t0, done, 60))
            await asyncio.sleep(random.uniform(0.02, 0.1))  # sleep-ok: decorrelate samples
        self.out["update_latency"] = latency_figures(samples)
        self.out["cost"]["latency_cpu_s"] = self.cost()

    async def feedback(self) -> None:
        """Spoke Deployment /status write until the value is in the hub work's feedback.

        Poll mode also gives the staleness: with the writes spread over one
        interval, the longest wait is how old a work's feedback gets between
        two status syncs while the N works are idle beside it (a sample that
        timed out counts as its timeout: a lower bound).
        """
        count = max(self.p.samples, 1)
        sets = {"Watch": f"{self.ns}-fbw", "Poll": f"{self.ns}-fbp"}
        names = {
            mode: [f"{self.prefix}fb{mode[0].lower()}{i:03d}" for i in range(count)]
            for mode in sets
        }
        every = [n for group in names.values() for n in group]
        for mode, ns in sets.items():
            for name in names[mode]:
                body = work(
                    name,
                    self.cluster,
                    [deployment(name, ns)],
                    manifestConfigs=[feedback_config(name, ns, mode)],
                )
                await self.hub.create(MANIFESTWORKS, body)
        await benchkit.until(
            lambda: self.count("Applied", every) == len(every),
            self.agent,
            self.timeout,
            "feedback works",
        )
        interval = self.p.status_sync_interval
        value = 0

        async def sample(mode: str, name: str, timeout: float) -> float | None:
            nonlocal value
            value += 1
            want = value
            done = self.hub_works.expect(name, lambda o: replicas_feedback(o) == want)
            t0 = time.perf_counter()
            await self.spoke.patch(
                DEPLOYMENTS, name, status_patch(want), sets[mode], subresource="status"
            )
            return await timed(t0, done, timeout)

        # The first value of every Watch work primes it (its watch may still be starting).
        await asyncio.gather(*(sample("Watch", n, 2 * interval + 10) for n in names["Watch"]))
        self.cost()
        watch = []
        for k in range(count):
            watch.append(await sample("Watch", names["Watch"][k % len(names["Watch"])], 30))
            await asyncio.sleep(random.uniform(0.02, 0.1))  # sleep-ok: decorrelate samples

        # Poll samples overlap (distinct works, starts spread over one interval): each
        # waits for its own work's next sync, so they are independent. The timeout
        # leaves room for an agent whose syncs fall behind (OCM's reported 5 times).
        poll_timeout = max(6 * interval, 2 * interval + 10)

        async def poll(name: str) -> float | None:
            await asyncio.sleep(random.uniform(0, interval))  # sleep-ok: staggered start
            return await sample("Poll", name, poll_timeout)

        polled = list(await asyncio.gather(*(poll(n) for n in names["Poll"])))
        self.out["feedback_watch"] = latency_figures(watch)
        self.out["feedback_poll"] = latency_figures(polled)
        stalest = max(poll_timeout if v is None else v for v in polled)
        self.out["feedback_poll"].update(
            {"staleness_s": stalest, "staleness_ratio": stalest / interval}
        )
        self.out["cost"]["feedback_cpu_s"] = self.cost()

    async def delete(self) -> None:
        """The N works deleted at once, until they are gone from the hub."""
        await self.settle()
        self.cost()
        self.server_cost()
        before = await self.counter.snapshot()
        t0 = time.perf_counter()

        async def remove(name: str) -> None:
            with contextlib.suppress(NotFound):
                await self.hub.delete(MANIFESTWORKS, name, self.cluster)

        await self.bounded(self.names, remove)
        store = self.works.store
        await benchkit.until(
            lambda: all(store.get(f"{self.cluster}/{n}") is None for n in self.names),
            self.agent,
            self.timeout,
            "the works to be deleted",
        )
        deleted = time.perf_counter() - t0
        await self.settle()
        figures: dict[str, float | None] = {"deleted_s": deleted, "works_per_s": self.n / deleted}
        counts = diff(await self.counter.snapshot(), before)
        figures.update(
            {
                f"{k}": v
                for k, v in self.per_work(
                    counts, spoke_min_writes(self.p.manifests), DELETE_HUB_MIN_WRITES
                ).items()
                if k in ("per_work", "writes_per_work", "minimum_writes", "ratio_to_minimum")
            }
        )
        self.out["deletion"] = figures
        self.out["clients_delete"] = per_client(counts, 1 / self.n)
        self.out["detail_delete"] = per_request(counts, 1 / self.n)
        cost = self.out["cost"]
        cost["delete_cpu_s"] = self.cost()
        cost["server_delete_cpu_s"] = self.server_cost()
        assert self.agent is not None
        cost["peak_rss_mib"] = benchkit.tree_memory(self.agent.pid).get("VmHWM", 0) / 1024
        cost["cpu_total_s"] = benchkit.tree_cpu(self.agent.pid)

    async def cleanup(self) -> None:
        """On a cluster the suite did not start: remove what is left of this run
        (untimed, best effort)."""
        for obj in self.works.store.list():
            with contextlib.suppress(NotFound):
                await self.hub.delete(MANIFESTWORKS, obj["metadata"]["name"], self.cluster)
        try:
            await benchkit.until(lambda: len(self.works.store) == 0, self.agent, 120, "cleanup")
        except SystemExit as err:
            print(f"  cleanup: {err}", file=sys.stderr)
        for client, ns in ((self.hub, self.cluster), (self.spoke, self.ns)):
            for each in (ns, f"{ns}-fbw", f"{ns}-fbp") if client is self.spoke else (ns,):
                with contextlib.suppress(NotFound):
                    await client.delete(NAMESPACES, each)

    async def run(self, where: Clusters) -> Run:
        """Every scenario, in order; returns the figures."""
        self.servers = where.servers
        await self.setup(where)
        self.start_agent(where.hub, where.spoke)
        await self.warm_up()
        await self.apply()
        await self.steady()
        await self.e2e_latency()
        await self.update_latency()
        if self.p.feedback and self.target.started:
            await self.feedback()
        await self.delete()
        if not self.target.started:
            await self.cleanup()
        return self.out


def start_control_plane(tmp: Path) -> tuple[Etcd, ControlPlane, Clusters]:
    """etcd, kube-apiserver and kube-controller-manager for one run: one apiserver is
    hub and spoke, the agent gets a token for each side, the benchmark the admin's.

    Started from the calling (main) thread: the processes die with it.
    """
    etcd = Etcd()
    plane: ControlPlane | None = None
    try:
        etcd.start()
        plane = ControlPlane("bench", etcd)
        hub = Identity(HUB_USER, ("system:masters",))
        spoke = Identity(SPOKE_USER, ("system:masters",))
        plane.identities.update({"bench-hub": hub, "bench-spoke": spoke})
        plane.start()
        admin = plane.write_kubeconfig(tmp / "admin.kubeconfig")
        where = Clusters(
            hub=plane.write_kubeconfig(tmp / "hub.kubeconfig", token=hub.token),
            spoke=plane.write_kubeconfig(tmp / "spoke.kubeconfig", token=spoke.token),
            driver_hub=admin,
            driver_spoke=admin,
            audit=AuditTally(
                plane.audit_log,
                {HUB_USER: "hub", SPOKE_USER: "spoke"},
                BENCH_AGENT,
                offset=plane.audit_offset(),
            ),
            servers=tuple(
                proc.popen.pid
                for proc in (*plane.processes, etcd.process)
                if proc is not None and proc.name != "kube-controller-manager"
            ),
        )
    except BaseException:
        if plane is not None:
            plane.stop(kill=True)
        etcd.stop()
        raise
    return etcd, plane, where


async def run_once(target: Target, spec: AgentSpec, n: int, params: Params, tag: str) -> Run:
    """One run on a fresh control plane or kubesims (or the target clusters); the agent's
    log tail on failure."""
    with tempfile.TemporaryDirectory(prefix="bench-") as name:
        tmp = Path(name)
        sims: list[subprocess.Popen[bytes]] = []
        real: tuple[Etcd, ControlPlane] | None = None
        run = AgentRun(target, spec, n, params, tag, tmp)
        try:
            if target.kind == REAL:
                etcd, plane, where = start_control_plane(tmp)
                real = (etcd, plane)
            elif target.kubesim:
                for which in ("hub", "spoke"):
                    sims.append(
                        benchkit.start_kubesim(tmp / f"{which}.kubeconfig", tmp / f"{which}.log")
                    )
                for which, proc in zip(("hub", "spoke"), sims, strict=True):
                    await benchkit.wait_file(tmp / f"{which}.kubeconfig", proc)
                hub_kc, spoke_kc = tmp / "hub.kubeconfig", tmp / "spoke.kubeconfig"
                where = Clusters(
                    hub_kc, spoke_kc, hub_kc, spoke_kc, None, tuple(p.pid for p in sims)
                )
            else:
                assert target.spoke_kubeconfig is not None
                spoke_kc = target.spoke_kubeconfig
                hub_kc = target.hub_kubeconfig or spoke_kc
                where = Clusters(hub_kc, spoke_kc, hub_kc, spoke_kc)
            return await run.run(where)
        except BaseException:
            tail = benchkit.log_tail(tmp / "agent.log")
            if tail:
                print(f"--- agent log ({spec.name}, last 40 lines) ---\n{tail}", file=sys.stderr)
            raise
        finally:
            await run.close()
            for proc in sims:
                benchkit.stop(proc)
            if real is not None:
                real[1].stop(kill=True)
                real[0].stop()
