"""The soak loop: rounds of random operations and faults, each ending in a convergence check.

A round is a burst of operations on the hub's works (create, change the
manifests, change the labels, delete) mixed with faults (watches closed or
expired with 410, count-limited 429/500/503 bursts and a 30% error rate on
the agent's writes, slow writes, the hub refusing connections, the spoke
apiserver restarting, the agent SIGKILLed and restarted). Then comes a quiet
period: the faults are lifted and the clusters must converge
(:func:`tests.faults.invariants.problems` empty) within ``converge_timeout``;
if they do not, what is still wrong is a violation.

Between checks a watchdog verifies what must hold at every instant, faults
or not: the agent process is alive unless the soak killed it, every object on
the spoke was asked for by some work at some time, every AppliedManifestWork
stands for a work the soak created, and no work vanished from the hub that
the soak did not delete. A sampler reads the agent's RSS and CPU time.

A work that can never be fully applied (:data:`tests.soak.workload.POISON`)
stays on the hub throughout: it must report ``Applied=False``, and its
problems are left out of the convergence check, which the others must pass
beside it.

Each kind of operation and fault is tried once before any is repeated, and
a run lasts until each has happened, so even a short run covers them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesim.errors import ApiError
from kubesim.sim import KubeSim
from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    MANIFESTWORKS,
    NAMESPACES,
    AlreadyExists,
    KubeClient,
    KubeError,
    NotFound,
    Unreachable,
)
from tests.faults.harness import (
    AGENT_ON_HUB,
    AGENT_ON_SPOKE,
    WRITE_VERBS,
    HubApi,
    admin_fault,
    create_work,
    delete_work,
    set_manifests,
)
from tests.faults.invariants import CHECKED_KINDS, CLUSTER, Expected, ObjectKey, problems
from tests.integration.conftest import (
    HUB_CRDS,
    SPOKE_CRDS,
    configmap,
    update_work,
    work_condition,
)
from tests.soak.agent import AgentProcesses
from tests.soak.report import Checkpoint, Report
from tests.soak.workload import NAMESPACE, POISON, Work, Workload, poison_manifests
from tests.support.prepare import install_crds
from tests.support.programs import CRD_DIR
from workagent.identity import applied_work_name, hub_hash, work_name_of

#: Relative weights of the operations once each has happened once.
OP_WEIGHTS = {"create": 3, "change-manifests": 4, "change-labels": 2, "delete": 2}
#: Relative weights of the faults once each has happened once.
FAULT_WEIGHTS = {
    "watch-close": 3,
    "watch-expire-410": 3,
    "throttle-429": 3,
    "error-500": 3,
    "unavailable-503": 3,
    "error-rate-500": 2,
    "slow-writes": 2,
    "hub-outage": 2,
    "spoke-restart": 2,
    "agent-kill": 1,
}
#: The soak's own clients: a User-Agent no fault rule (aimed at the agent) matches.
USER_AGENT = "soak-test"
#: How long the hub may take to serve again after an outage ended.
BACK_SECONDS = 30.0
#: A safety net for runs that cannot cover every kind (the loop ends anyway).
MAX_EXTRA_ROUNDS = 50
#: Most problems kept per violation (the JSON report is for people, not an archive).
MAX_DETAILS = 30


@dataclass(frozen=True)
class SoakConfig:
    """How long, how random, how hard; ``workdir`` gets the kubeconfigs and ``agent.log``."""

    workdir: Path
    duration: float = 600.0
    seed: int = 1
    converge_timeout: float = 120.0
    max_works: int = 12
    ops_per_round: tuple[int, int] = (3, 8)
    faults_per_round: tuple[int, int] = (1, 3)
    sample_interval: float = 1.0
    check_interval: float = 2.0
    status_sync_seconds: float = 2.0
    #: Keep changing works right after the agent is killed, while the new one starts:
    #: manifests may leave a work before the restarted agent finished the reconcile
    #: its predecessor was killed in (tests/faults/test_agent_killed.py). Off: the
    #: round ends at the kill and the restarted agent converges first.
    changes_after_kill: bool = True
    #: Least time between two SIGKILLs of the agent (None: a quarter of ``duration``,
    #: at least a minute): each restart resets the RSS a leak would grow.
    min_kill_interval: float | None = None
    #: Go on past ``duration`` until every kind of operation and fault happened once.
    cover_every_kind: bool = True
    #: Put a ConfigMap no work lists on the spoke after the first check, as a broken
    #: agent might: the soak's own test that its checks do report.
    plant_stray: bool = False

    def kill_interval(self) -> float:
        """Least seconds between two kills of the agent."""
        if self.min_kill_interval is not None:
            return self.min_kill_interval
        return max(60.0, self.duration / 4)


#: The ConfigMap ``plant_stray`` creates.
STRAY = "soak-stray"


def redact(line: str) -> str:
    """A problem line without Secret values (the checker quotes what it compares)."""
    if "secrets " not in line:
        return line
    return re.sub(r" (want|live has) .*", r" \1 <redacted>", line, count=1)


def choose(rng: random.Random, weights: dict[str, int], done: dict[str, int]) -> str:
    """A kind not yet done if any (in random order), else one drawn by weight."""
    fresh = [k for k in weights if done.get(k, 0) == 0]
    if fresh:
        return rng.choice(fresh)
    kinds = list(weights)
    return rng.choices(kinds, weights=[weights[k] for k in kinds])[0]


class Soak:
    """One soak run: :meth:`run` returns the report."""

    def __init__(self, config: SoakConfig, say: Callable[[str], None] = print) -> None:
        self.config = config
        self.say = say
        self.rng = random.Random(config.seed)
        self.workload = Workload(self.rng)
        self.report = Report(
            seed=config.seed,
            planned_seconds=config.duration,
            started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        )
        self.hub = KubeSim()
        self.spoke = KubeSim()
        self.agents = AgentProcesses(config.workdir, config.status_sync_seconds)
        self.report.agent_log = str(self.agents.log_path)
        # Set up in run():
        self.hub_client: KubeClient
        self.spoke_client: KubeClient
        self.hub_api: HubApi
        self.hub_hash = ""
        self._t0 = 0.0
        # Spoke restarts in flight, awaited before each convergence check.
        self._restarts: list[asyncio.Task[None]] = []
        self._hub_down_until = 0.0
        # Operations and the watchdog's hub reads take turns, so the watchdog never
        # compares a listing with a record that changed while it was read.
        self._hub_lock = asyncio.Lock()
        self._reported: set[str] = set()
        # The watchdog and the convergence check both restart an agent that died:
        # one at a time, and never in the middle of a deliberate kill.
        self._agent_lock = asyncio.Lock()
        self._poison_deleted = False
        self._stop_requested = False
        self._next_kill = 0.0

    def request_stop(self) -> None:
        """End after the current round (then tear down and report as usual)."""
        self._stop_requested = True
        self.report.interrupted = True

    # -- time and state ----------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the soak started."""
        return time.monotonic() - self._t0

    def hub_down(self) -> bool:
        """Whether a hub outage injected by the soak may still be on."""
        return time.monotonic() < self._hub_down_until

    def expected(self) -> Expected:
        """The converged state: the soak's works (and the poison), nothing foreign."""
        return Expected(works={*self.workload.works, POISON}, namespaces=(NAMESPACE,))

    def uncovered(self) -> list[str]:
        """Kinds of operation and fault that have not happened yet."""
        ops = [k for k in OP_WEIGHTS if not self.report.operations[k]]
        return ops + [k for k in FAULT_WEIGHTS if not self.report.faults[k]]

    # -- the run ---------------------------------------------------------------------
    async def run(self) -> Report:
        """Set up, loop until the duration is over (and every kind happened), tear down."""
        self._t0 = time.monotonic()
        async with contextlib.AsyncExitStack() as stack:
            await self._start_clusters(stack)
            background = [
                asyncio.create_task(self._sample_forever()),
                asyncio.create_task(self._watch_invariants()),
            ]
            stack.push_async_callback(self._cancel, background)
            stack.push_async_callback(self._stop_agent)
            self.report.agent_starts = 1
            await self.agents.start()
            self.say(
                f"soak: seed {self.config.seed}, {self.config.duration:.0f} s; "
                f"agent pid {self.agents.pid}, log {self.agents.log_path}"
            )
            await self._quiet("start")
            if self.config.plant_stray:
                await self.spoke_client.create(CONFIGMAPS, configmap(STRAY, NAMESPACE))
            extra = 0
            while not self._stop_requested and (
                self.now() < self.config.duration
                or (self.config.cover_every_kind and self.uncovered() and extra < MAX_EXTRA_ROUNDS)
            ):
                if self.now() >= self.config.duration:
                    extra += 1
                await self._round()
            await self._teardown()
        self.report.elapsed_seconds = self.now()
        return self.report

    async def _start_clusters(self, stack: contextlib.AsyncExitStack) -> None:
        """Hub and spoke kubesims on loopback, CRDs and namespaces, the soak's clients."""
        workdir = self.config.workdir
        workdir.mkdir(parents=True, exist_ok=True)
        for sim, name in ((self.hub, "hub"), (self.spoke, "spoke")):
            await sim.start()
            stack.push_async_callback(sim.stop)
            sim.write_kubeconfig(workdir / f"{name}.kubeconfig")
        self.hub_client = await KubeClient.from_kubeconfig(
            str(workdir / "hub.kubeconfig"), user_agent=USER_AGENT, qps=0, name="soak-hub"
        )
        stack.push_async_callback(self.hub_client.close)
        self.spoke_client = await KubeClient.from_kubeconfig(
            str(workdir / "spoke.kubeconfig"), user_agent=USER_AGENT, qps=0, name="soak-spoke"
        )
        stack.push_async_callback(self.spoke_client.close)
        await install_crds(self.hub_client, [CRD_DIR / f for f in HUB_CRDS])
        await self.hub_client.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
        await install_crds(self.spoke_client, [CRD_DIR / f for f in SPOKE_CRDS])
        with contextlib.suppress(AlreadyExists):
            await self.spoke_client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        self.hub_api = HubApi(self.hub)
        # The agent hashes the server URL exactly as its kubeconfig spells it.
        self.hub_hash = hub_hash(self.hub.kubeconfig()["clusters"][0]["cluster"]["server"])
        await create_work(self.hub_client, POISON, poison_manifests())

    async def _round(self) -> None:
        """One burst of operations and faults, then a quiet period."""
        rng, cfg = self.rng, self.config
        steps = ["op"] * rng.randint(*cfg.ops_per_round)
        steps += ["fault"] * rng.randint(*cfg.faults_per_round)
        rng.shuffle(steps)
        done: list[str] = []
        for step in steps:
            if step == "op":
                done.append(await self._operate())
            else:
                kind = self._choose_fault()
                await self._inject(kind)
                done.append(kind)
                if kind == "agent-kill" and not cfg.changes_after_kill:
                    break  # the restarted agent converges before anything else changes
            await asyncio.sleep(rng.uniform(0.0, 0.3))  # sleep-ok: spacing between changes
        self.report.rounds += 1
        faults = [k for k in done if k in FAULT_WEIGHTS]
        await self._quiet(
            f"round {self.report.rounds}: {len(done) - len(faults)} ops, "
            f"faults {', '.join(faults) or '-'}"
        )

    # -- operations ------------------------------------------------------------------
    async def _operate(self) -> str:
        """One random operation on the hub's works; returns its kind."""
        kind = choose(self.rng, OP_WEIGHTS, self.report.operations)
        count = len(self.workload.works)
        if kind == "create" and count >= self.config.max_works:
            kind = "delete"
        elif kind != "create" and count == 0:
            kind = "create"
        async with self._hub_lock:
            if kind == "create":
                await self._create()
            elif kind == "delete":
                await self._delete()
            elif kind == "change-labels":
                await self._relabel()
            else:
                await self._change()
        self.report.operations[kind] += 1
        return kind

    async def _create(self) -> None:
        name = self.workload.new_name()
        manifests, labels = self.workload.manifests(name), self.workload.labels()

        def local() -> None:
            self.hub_api.create(name, manifests)
            if labels:
                self.hub_api.set_labels(name, labels)

        how = await self._hub_write(
            lambda: create_work(self.hub_client, name, manifests, **labels), local
        )
        self.workload.works[name] = Work(manifests, labels)
        self._log(f"create {name} ({len(manifests)} manifests, {how})")

    async def _change(self) -> None:
        name = self.workload.pick()
        assert name is not None
        manifests = self.workload.manifests(name)
        how = await self._hub_write(
            lambda: set_manifests(self.hub_client, name, manifests),
            lambda: self.hub_api.set_manifests(name, manifests),
        )
        self.workload.works[name].manifests = manifests
        self._log(f"change-manifests {name} ({len(manifests)} manifests, {how})")

    async def _relabel(self) -> None:
        name = self.workload.pick()
        assert name is not None
        labels = self.workload.labels()

        def change(work: dict[str, Any]) -> None:
            work["metadata"]["labels"] = dict(labels)

        how = await self._hub_write(
            lambda: update_work(self.hub_client, name, change),
            lambda: self.hub_api.set_labels(name, labels),
        )
        self.workload.works[name].labels = labels
        self._log(f"change-labels {name} ({how})")

    async def _delete(self) -> None:
        name = self.workload.pick()
        assert name is not None
        how = await self._hub_write(
            lambda: delete_work(self.hub_client, name), lambda: self.hub_api.delete(name)
        )
        del self.workload.works[name]
        self._log(f"delete {name} ({how})")

    async def _hub_write(
        self, over_http: Callable[[], Awaitable[Any]], in_process: Callable[[], Any]
    ) -> str:
        """Write over HTTP; while the hub refuses connections, into its storage instead.

        Other clients of a hub go on writing while one agent cannot reach it: the
        agent must see those writes when it reconnects. A write whose answer was
        lost may have been done: doing it again in-process then finds the work
        already there (create) or gone (delete), which is the same outcome.
        Returns which way it went.
        """
        if not self.hub_down():
            try:
                await over_http()
                return "http"
            except Unreachable:
                pass
        try:
            in_process()
        except ApiError as err:
            if err.code not in (404, 409):
                raise
        return "in-process"

    # -- faults ----------------------------------------------------------------------
    def _choose_fault(self) -> str:
        """A fault kind that can be injected now."""
        while True:
            kind = choose(self.rng, FAULT_WEIGHTS, self.report.faults)
            if kind == "hub-outage" and self.hub_down():
                continue
            if kind == "spoke-restart" and any(not t.done() for t in self._restarts):
                continue
            if kind == "agent-kill" and self.now() < self._next_kill:
                continue
            return kind

    def _sides(self) -> list[KubeSim]:
        """The hub, the spoke or both, at random."""
        return self.rng.choice(([self.hub], [self.spoke], [self.hub, self.spoke]))

    def _write_burst(self, code: int, count: int) -> None:
        """The next ``count`` matching writes of the agent fail with ``code``."""
        rng = self.rng
        rule: dict[str, Any] = {"code": code, "count": count, "retryAfter": 1}
        if rng.random() < 0.5:
            resource = rng.choice(("configmaps", "secrets", "deployments", "appliedmanifestworks"))
            verb = rng.choice(WRITE_VERBS)
            self.spoke.inject(verb=verb, resource=resource, userAgent=AGENT_ON_SPOKE, **rule)
        else:
            resource = rng.choice(("manifestworks/status", "manifestworks"))
            self.hub.inject(verb="patch", resource=resource, userAgent=AGENT_ON_HUB, **rule)

    async def _inject(self, kind: str) -> None:
        """Inject one fault; those that last are lifted by the next quiet period."""
        rng = self.rng
        if kind == "watch-close":
            for sim in self._sides():
                sim.close_watches()
        elif kind == "watch-expire-410":
            for sim in self._sides():
                sim.expire_watches()
        elif kind == "throttle-429":
            self._write_burst(429, rng.randint(2, 5))
        elif kind == "error-500":
            self._write_burst(500, rng.randint(2, 6))
        elif kind == "unavailable-503":
            self._write_burst(503, rng.randint(2, 6))
        elif kind == "error-rate-500":
            for verb in WRITE_VERBS:
                self.spoke.inject(
                    verb=verb, resource="*", code=500, fraction=0.3, userAgent=AGENT_ON_SPOKE
                )
            self.hub.inject(
                verb="patch", resource="*", code=500, fraction=0.3, userAgent=AGENT_ON_HUB
            )
        elif kind == "slow-writes":
            self.spoke.inject(
                verb=rng.choice(("create", "update", "delete")),
                resource="*",
                latency=rng.uniform(0.05, 0.3),
                userAgent=AGENT_ON_SPOKE,
            )
        elif kind == "hub-outage":
            seconds = rng.uniform(1.0, 4.0)
            # Marked down first, with a margin for the listener to come back.
            self._hub_down_until = time.monotonic() + seconds + 1.0
            await admin_fault(self.hub, {"action": "refuse-connections", "seconds": seconds})
        elif kind == "spoke-restart":
            downtime = rng.uniform(0.5, 2.5)
            self._restarts.append(asyncio.create_task(self.spoke.restart(downtime=downtime)))
        elif kind == "agent-kill":
            # Spaced out, so some agent processes live long enough to show their memory.
            self._next_kill = self.now() + self.config.kill_interval()
            async with self._agent_lock:
                await self.agents.kill()
                await asyncio.sleep(rng.uniform(0.0, 2.0))  # sleep-ok: the agent stays down a while
                await self.agents.start()
                self.report.agent_starts += 1
        else:
            raise ValueError(f"unknown fault {kind}")
        self.report.faults[kind] += 1
        self._log(f"fault {kind}")

    def _log(self, what: str) -> None:
        self.report.timeline.append((self.now(), what))

    # -- checks ----------------------------------------------------------------------
    async def _quiet(self, what: str) -> None:
        """Lift the faults, wait for convergence, record a checkpoint and a progress line."""
        for task in self._restarts:
            await task
        self._restarts.clear()
        self.hub.clear_faults()
        self.spoke.clear_faults()
        await self._hub_back()
        started = time.monotonic()
        self.report.convergence_checks += 1
        # A restarted agent must come up (and must not pass a check on its
        # predecessor's work before it does).
        remaining = await self._agent_ready() or await self._converge(self.expected())
        took = time.monotonic() - started
        if remaining:
            self.report.violate(
                self.now(),
                f"not converged within {self.config.converge_timeout:g} s ({what})",
                remaining + self._diagnosis(),
            )
        else:
            self.report.converge_seconds.append(took)
        self._checkpoint(took)
        sample = self.agents.sample(self.now())
        rss = "-" if sample is None else f"{sample.rss_kib / 1024:.1f} MiB"
        cpu = "-" if sample is None else f"{sample.cpu_seconds:.1f} s"
        state = "NOT converged" if remaining else "converged"
        self.say(
            f"[{self.now():6.0f}s] {what}; {state} in {took:.1f} s; "
            f"{len(self.workload.works)} works; agent RSS {rss}, CPU {cpu}; "
            f"violations {len(self.report.violations)}"
        )

    async def _agent_ready(self) -> list[str]:
        """Wait until the agent reports ready; what is wrong if it does not in time."""
        deadline = time.monotonic() + self.config.converge_timeout
        while not await self.agents.ready():
            await self._agent_alive()
            if time.monotonic() > deadline:
                return [
                    f"the agent is not ready (/readyz) after {self.config.converge_timeout:g} s"
                ]
            await asyncio.sleep(0.2)  # sleep-ok: polling with a deadline
        return []

    def _diagnosis(self) -> list[str]:
        """What the clusters can tell about a failed check: the watches open on each."""
        return [
            f"(open watches: hub {self.hub.store.watch_count()}, "
            f"spoke {self.spoke.store.watch_count()})"
        ]

    async def _hub_back(self) -> None:
        """Wait until the hub answers again after an outage."""
        deadline = (
            time.monotonic() + BACK_SECONDS + max(0.0, self._hub_down_until - time.monotonic())
        )
        while True:
            try:
                await self.hub_client.list(MANIFESTWORKS, CLUSTER)
                return
            except Unreachable:
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.1)  # sleep-ok: polling with a deadline

    async def _converge(self, expected: Expected) -> list[str]:
        """Poll until nothing is wrong; returns what still is at the timeout (empty: converged)."""
        deadline = time.monotonic() + self.config.converge_timeout
        while True:
            found = await self._problems(expected)
            if not found or time.monotonic() > deadline:
                return [redact(p) for p in found[:MAX_DETAILS]]
            await asyncio.sleep(0.5)  # sleep-ok: polling with a deadline

    async def _problems(self, expected: Expected) -> list[str]:
        """What differs from the converged state, the poison work judged on its own terms."""
        await self._agent_alive()
        try:
            found = await problems(self.hub_client, self.spoke_client, self.hub_hash, expected)
            if POISON in (expected.works or ()):
                found = [p for p in found if not self._about_poison(p)]
                found += await self._poison_problems()
        except KubeError as err:  # a cluster still coming back
            found = [f"cannot read the clusters: {err}"]
        return found

    def _about_poison(self, problem: str) -> bool:
        """Whether a checker line is about the poison work itself (expected to be unapplied)."""
        amw = applied_work_name(self.hub_hash, POISON)
        return problem.startswith((f"work {POISON}:", f"AppliedManifestWork {amw}:"))

    async def _poison_problems(self) -> list[str]:
        """The poison work must say it is not applied, and apply what it can."""
        out = []
        work = await self.hub_client.get(MANIFESTWORKS, POISON, CLUSTER)
        applied = work_condition(work, "Applied")
        if applied is None or applied.get("status") != "False":
            status = None if applied is None else applied.get("status")
            out.append(f"work {POISON}: Applied is {status}, want False (a manifest cannot apply)")
        try:
            await self.spoke_client.get(CONFIGMAPS, f"{POISON}-ok", NAMESPACE)
        except NotFound:
            out.append(f"work {POISON}: its applicable ConfigMap {POISON}-ok is missing")
        return out

    async def _agent_alive(self) -> None:
        """A violation if the agent exited on its own; it is restarted so the soak goes on."""
        async with self._agent_lock:
            code = self.agents.exited()
            if code is None:
                return
            self.report.violate(
                self.now(), "agent exited", [f"exit code {code}, see {self.agents.log_path}"]
            )
            await self.agents.start()
            self.report.agent_starts += 1

    def _checkpoint(self, took: float) -> None:
        sample = self.agents.sample(self.now())
        self.report.checkpoints.append(
            Checkpoint(
                t=round(self.now(), 1),
                pid=None if sample is None else sample.pid,
                rss_kib=None if sample is None else sample.rss_kib,
                works=len(self.workload.works),
                seconds_to_converge=round(took, 2),
            )
        )

    async def _watch_invariants(self) -> None:
        """Check the always-true invariants every ``check_interval`` seconds."""
        while True:
            await asyncio.sleep(self.config.check_interval)  # sleep-ok: the check period
            await self._agent_alive()
            found = await self._safety_problems()
            self.report.continuous_checks += 1
            new = [p for p in found if p not in self._reported]
            if new:
                self._reported.update(new)
                self.report.violate(self.now(), "continuous invariant", new[:MAX_DETAILS])
                self.say(f"[{self.now():6.0f}s] VIOLATION: {new[0]}")

    async def _safety_problems(self) -> list[str]:
        """What must hold at any instant, faults or not (unreadable clusters are skipped)."""
        out: list[str] = []
        with contextlib.suppress(KubeError):
            for res in CHECKED_KINDS.values():
                for obj in (await self.spoke_client.list(res, NAMESPACE))["items"]:
                    key: ObjectKey = (res.group, res.plural, NAMESPACE, obj["metadata"]["name"])
                    if key not in self.workload.ever_listed and not key[3].startswith(POISON):
                        out.append(f"{res.plural} {NAMESPACE}/{key[3]}: no work ever listed it")
            created = {f"soak-{i}" for i in range(1, self.workload.created + 1)} | {POISON}
            for amw in (await self.spoke_client.list(APPLIED_MANIFESTWORKS))["items"]:
                name = amw["metadata"]["name"]
                if work_name_of(self.hub_hash, name) not in created:
                    out.append(f"AppliedManifestWork {name}: for no work the soak created")
        if self.hub_down():
            return out
        async with self._hub_lock:
            with contextlib.suppress(KubeError):
                works = (await self.hub_client.list(MANIFESTWORKS, CLUSTER))["items"]
                on_hub = {w["metadata"]["name"]: w for w in works}
                kept = {*self.workload.works} | (set() if self._poison_deleted else {POISON})
                for name in sorted(kept - set(on_hub)):
                    out.append(f"work {name}: gone from the hub, never deleted")
                for name, work in sorted(on_hub.items()):
                    ours = name in self.workload.works or name == POISON
                    if not ours and not work["metadata"].get("deletionTimestamp"):
                        out.append(f"work {name}: deleted, yet not being deleted")
        return out

    async def _sample_forever(self) -> None:
        """Read the agent's RSS and CPU time every ``sample_interval`` seconds."""
        while True:
            sample = self.agents.sample(self.now())
            if sample is not None:
                self.report.samples.append(sample)
            await asyncio.sleep(self.config.sample_interval)  # sleep-ok: the sampling period

    # -- the end ---------------------------------------------------------------------
    async def _teardown(self) -> None:
        """Delete every work: the spoke must end up clean; then stop the agent gracefully."""
        async with self._hub_lock:
            for name in sorted(self.workload.works):
                await delete_work(self.hub_client, name)
            self.workload.works.clear()
            await delete_work(self.hub_client, POISON)
            self._poison_deleted = True
        started = time.monotonic()
        self.report.convergence_checks += 1
        remaining = await self._converge(Expected(works=set(), namespaces=(NAMESPACE,)))
        took = time.monotonic() - started
        if remaining:
            self.report.violate(self.now(), "not cleaned up after deleting every work", remaining)
        else:
            self.report.converge_seconds.append(took)
        self._checkpoint(took)
        self.say(
            f"[{self.now():6.0f}s] teardown: every work deleted; "
            f"{'NOT ' if remaining else ''}clean in {took:.1f} s"
        )

    async def _stop_agent(self) -> None:
        """SIGTERM: a graceful exit must return 0."""
        code = await self.agents.stop()
        self.report.agent_exit_code = code
        if code not in (0, None):
            self.report.violate(self.now(), "agent shutdown", [f"exit code {code} after SIGTERM"])

    @staticmethod
    async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
