"""Randomized side by side: OCM v1.2.1's gRPC server (``server grpc``) and ours.

OCM's Go work agent serves both managed clusters (the ``grpc-server`` leg of the
``peers`` fixture of tests/peers/test_agent_side_by_side.py): ``cluster-ocm``
through OCM's server, ``cluster-ours`` through ``hubcontroller grpc-server``, in
front of one real hub. Random works (ConfigMaps, Secrets, ServiceAccounts,
Deployments, Jobs, Namespaces, ClusterRoles, objects someone else wrote first, an
unknown kind, invalid manifests; update strategies, feedback, condition rules,
delete options) are created on the hub, changed, deleted, and their objects edited
on the managed clusters. After every step the hub's work (status, finalizers,
labels, annotations, generation, deletion), its AppliedManifestWork and every
object it lists must settle the same on both sides. The agents are one program,
so a difference is the servers'.

The works come from ``Generator`` (tests/fuzz/works.py); the step loop (``Scenario``)
serves tests/fuzz/test_mqtt.py too. Repeat a run with ``make fuzz-peers
FUZZ_AREAS=grpcserver FUZZ_SEED=<seed>``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

import pytest
import structlog
from structlog.typing import EventDict

from ocmkit.cloudevents.event import DELETE_REQUEST
from ocmkit.kube import MANIFESTWORKS, Conflict
from ocmkit.kube.errors import Invalid
from ocmkit.kube.mergepatch import normalized
from tests.fuzz.common import FuzzRun, budget_of, fuzz_marks, fuzz_run
from tests.fuzz.works import Generator, body_spec, edit_on_spokes, listed, spec_outline, write_pre
from tests.fuzz.workstatus import applied_at, complete, known_lag
from tests.integration.conftest import work_body
from tests.peers.test_agent_side_by_side import (
    Case,
    Hub,
    Side,
    applied_work,
    comparable_applied,
    comparable_object,
    comparable_work,
    compare_object,
    hub_work,
    listed_object,
    peers,
    same_on_both,
    settled,
)
from tests.support.manifests import configmap

__all__ = ["Scenario", "peers"]

#: How long one comparison waits to settle: OCM's agent backs off after bursts of
#: conflicts, and the machine may be shared.
SETTLE = 150.0
#: The managedFields manager the API server names for fields set before an object's
#: first server-side apply.
FIRST_APPLY = "before-first-apply"
DEFAULT_BUDGET = 720.0
#: What OCM's agent logs when its local work store refuses its own write (row "a spec
#: event racing the agent's own status write").
RACED = "the resource version of the work is outdated"
STALLED = "a spec event racing the agent's own status write"


# The final check of every work comes after the budget, and may take as long again.
pytestmark = fuzz_marks(DEFAULT_BUDGET, budget_of(DEFAULT_BUDGET) + 1800)


def settled_or_complete(work: dict[str, Any] | None) -> bool:
    """Settled as the side-by-side test says, or ``Complete`` (the apply stops then)."""
    if work is None:
        return False
    conds = (work.get("status") or {}).get("conditions") or []
    complete = any(c.get("type") == "Complete" and c.get("status") == "True" for c in conds)
    return complete or settled(work, Case([]))


async def compare_listed(hub: Hub, res: dict[str, Any]) -> None:
    """One listed object is the same on both sides (a Secret's difference unshown: the
    run's log must not carry its data)."""
    try:
        await compare_object(hub, res, SETTLE)
    except AssertionError as err:
        if res["resource"] != "secrets":
            raise
        raise AssertionError(str(err).splitlines()[0]) from None


# -- the steps -----------------------------------------------------------------------------


class Scenario:
    """Works created, changed and deleted at random, objects edited on the managed
    clusters, and after each step everything compared. Subclasses say how works reach
    the sides (``write``, ``delete``), how a side reports one (``read``, ``comparable``,
    ``gone``) and may add steps of their own (``special``)."""

    #: What someone else edits on the managed clusters.
    edited: tuple[str, ...] = ("configmaps", "secrets", "serviceaccounts", "deployments")

    def __init__(self, run: FuzzRun, hub: Hub, gen: Generator) -> None:
        self.run = run
        self.hub = hub
        self.gen = gen
        self.rng = run.rng("steps")
        self.works: dict[str, dict[str, Any]] = {}
        self.diverged: set[str] = set()
        #: Works a side has shown ``Complete`` (OCM's apply loop then waits for a resync).
        self.was_complete: set[str] = set()

    async def write(self, name: str, spec: dict[str, Any]) -> bool:
        """Create or update work ``name`` on both sides; False when it is refused."""
        raise NotImplementedError

    def lag(self, ocm: dict[str, Any] | None, ours: dict[str, Any] | None, name: str) -> str | None:
        """The row that explains one side's agent being behind the other.
        Here OCM's agent serves both sides, so either may lag."""
        seen = name in self.was_complete
        return known_lag(ocm, ours, seen) or known_lag(ours, ocm, seen)

    def stalled(
        self, ocm: dict[str, Any] | None, ours: dict[str, Any] | None, name: str
    ) -> str | None:
        """The row when the ``cluster-ocm`` side stays behind ours after OCM's agent there
        logged its store race for the work. Only in that direction: the race is logged
        for most works on both sides, so it cannot excuse the side behind our server."""
        if applied_at(ocm) < applied_at(ours) and self.ocm_raced(name):
            return STALLED
        return None

    def ocm_raced(self, name: str) -> bool:
        """Whether OCM's agent serving ``cluster-ocm`` logged its store race for ``name``."""
        return self.raced(self.hub.ocm.cluster, name)

    def raced(self, cluster: str, name: str) -> bool:
        """Whether OCM's agent serving ``cluster`` logged its store race for ``name``."""
        key = f'key="{name}"'
        return any(
            peer.process.log.name == "ocm-agent.log"
            and peer.process.log.parent.name == cluster
            and any(RACED in line and key in line for line in peer.log().splitlines())
            for peer in self.hub.processes
        )

    async def deletion_stalled(self, name: str) -> str | None:
        """The row that explains a deletion not done alike; None: none."""
        return None

    async def delete(self, name: str) -> None:
        """Delete work ``name`` on both sides."""
        raise NotImplementedError

    async def read(self, side: Side, name: str) -> dict[str, Any] | None:
        """The work as ``side`` reports it (None: none)."""
        raise NotImplementedError

    def comparable(self, work: dict[str, Any]) -> Any:
        """What must be the same of a work read on both sides."""
        return comparable_work(work, {})

    def comparable_applied(self, applied: dict[str, Any]) -> Any:
        """What must be the same of an AppliedManifestWork."""
        return comparable_applied(applied)

    async def gone(self, name: str) -> None:
        """Until the deletion of ``name`` is done on both sides, alike."""
        raise NotImplementedError

    async def compare_more(self, name: str) -> None:
        """Anything else to compare of a settled work."""

    async def listed_known(self, res: dict[str, Any]) -> str | None:
        """The row that explains a listed object differing on the two sides; None: none."""
        return None

    async def special(self, step: int, live: list[str]) -> bool:
        """A step of the subclass's own; False: none was taken."""
        return False

    def finding(self, what: str, err: AssertionError, name: str = "") -> None:
        """Records a divergence with the work's outline and the difference."""
        spec = self.works.get(name) if name else None
        self.run.finding(what, work=spec_outline(spec), diff=str(err)[-6000:])

    async def play(self) -> None:
        """The whole run: the managed clusters' own objects, works, steps, final check."""
        await write_pre(self.hub.sides)
        # Both agents subscribed (and their first resync answered) before the random
        # works come: one work applied on both sides.
        await self.create("fz-warmup", {"workload": {"manifests": [configmap("fz-warmup")]}})
        await self.check("fz-warmup", "create")
        for i in range(max(6, int(self.run.budget / 40))):
            await self.create(f"fz{i}", self.gen.work())
        for name in list(self.works)[1:]:
            await self.check(name, "create")
        self.run.log(f"created: {len(self.works)} works, {len(self.diverged)} diverged")
        step = 0
        while self.run.left() > 0:
            await self.step(step)
            step += 1
        late = sorted(self.diverged)
        for name in list(self.works):
            await self.check(name, "final")
        for name in late:
            self.diverged.discard(name)
            if name in self.works:
                await self.check(name, "final (diverged before)")
                if name not in self.diverged:
                    self.run.log(f"  {name} converged by the end")
        self.run.log(f"done after {step} steps; diverged: {sorted(self.diverged)}")

    async def create(self, name: str, spec: dict[str, Any]) -> None:
        """A new work (dropped when the hub refuses it)."""
        self.run.log(f"create {name}: {spec_outline(spec)}")
        if await self.write(name, spec):
            self.works[name] = spec

    async def step(self, step: int) -> None:
        """One random step."""
        live = sorted(n for n in self.works if n not in self.diverged)
        roll = self.rng.random()
        if len(live) < 4 or roll < 0.08:  # new works: the run must not run out of them
            await self.create(f"fz-new{step}", self.gen.work())
            await self.check(f"fz-new{step}", "create")
            return
        if await self.special(step, live):
            return
        name = self.rng.choice(live)
        if roll < 0.22:
            before = await listed(self.hub, name)
            self.run.log(f"step {step}: delete {name}")
            await self.delete(name)
            await self.deleted(name, before)
            return
        if roll < 0.34:
            await self.edit_spoke(step, name)
        await self.change(step, name)

    async def change(self, step: int, name: str, check: bool = True) -> None:
        """A random change of work ``name``, compared unless ``check`` is off."""
        spec = self.works[name]
        old = copy.deepcopy(spec)
        what = self.gen.mutate(spec)
        self.run.log(f"step {step}: {name}: {what}")
        if normalized(old) == normalized(spec):
            # Go's semantic equality: no agent applies it before its periodic resync.
            self.works[name] = old
            return
        if not await self.write(name, spec):
            self.works[name] = old
        elif check:
            await self.check(name, f"step {step} ({what})")

    async def edit_spoke(self, step: int, name: str) -> None:
        """Someone else edits one of the work's objects on both managed clusters."""
        if not await edit_on_spokes(
            self.hub, name, self.rng, self.edited, lambda line: self.run.log(f"step {step}: {line}")
        ):
            return
        # sleep-ok: the agents see the edit before the next spec (the order matters)
        await asyncio.sleep(2)

    async def check(self, name: str, what: str) -> None:
        """Work ``name`` settles the same on both sides; so do its AppliedManifestWork
        and its objects, and a few status syncs later its status still."""
        if name in self.diverged or name not in self.works:
            return

        async def read(side: Side) -> Any:
            work = await self.read(side, name)
            if complete(work):
                self.was_complete.add(name)
            return work

        def comparable(work: Any) -> Any:
            return None if work is None else self.comparable(work)

        status = f"the status of work {name!r}"
        try:
            await same_on_both(
                self.hub, status, read, comparable, ready=settled_or_complete, timeout=SETTLE
            )
            await self.compare_applied(name)
            # sleep-ok: feedback and rule conditions follow with the status syncs after
            # the apply (1 s apart); nothing marks the last of them
            await asyncio.sleep(3)
            await same_on_both(
                self.hub,
                f"{status} (later)",
                read,
                comparable,
                ready=settled_or_complete,
                timeout=SETTLE,
            )
            await self.compare_more(name)
        except AssertionError as err:
            raw = [await read(side) for side in self.hub.sides]
            if row := self.lag(raw[0], raw[1], name) or self.stalled(raw[0], raw[1], name):
                # OCM's agent behind for a documented reason (docs/compatibility.md, row).
                self.run.log(f"  {name} after {what}: known ({row})")
                self.diverged.add(name)
                return
            both = [comparable(work) for work in raw]
            if (
                str(err).startswith(f"timed out after {SETTLE}s waiting for {status}")
                and both[0] == both[1]
            ):
                # Not a divergence: the same, only not settled (in time) on one side or both.
                self.run.log(f"  {name} after {what}: the same on both sides, not settled")
                return
            self.diverged.add(name)
            self.finding(f"work {name} after {what}", err, name)

    async def compare_applied(self, name: str) -> None:
        """The AppliedManifestWork of ``name``, then every object it lists."""

        async def read(side: Side) -> Any:
            return side.unhashed(await applied_work(side, name))

        def comparable(applied: Any) -> Any:
            return None if applied is None else self.comparable_applied(applied)

        what = f"the AppliedManifestWork of {name!r}"
        await same_on_both(self.hub, what, read, comparable, timeout=SETTLE)
        for res in await listed(self.hub, name):
            try:
                await compare_listed(self.hub, res)
            except AssertionError:
                row = await self.listed_known(res)
                if row is None:
                    raise
                self.run.log(f"  {res['resource']} {res['name']} of {name}: known ({row})")

    async def deleted(self, name: str, before: list[dict[str, Any]]) -> None:
        """The deletion of ``name`` done alike, and what it left on the managed clusters."""
        self.works.pop(name)
        try:
            await self.gone(name)
        except AssertionError as err:
            if row := await self.deletion_stalled(name):
                # OCM's side kept the work, so its objects were neither deleted nor orphaned.
                self.run.log(f"  deleting {name}: known ({row})")
                return
            self.finding(f"deleting work {name}", err)
        for res in before:
            try:
                await compare_listed(self.hub, res)
            except AssertionError as err:
                self.finding(f"{res['resource']} {res['name']} after deleting {name}", err)


class SpecEvents:
    """The spec events our server logged (``spec event``, at debug), recorded while
    the run lasts: the evidence that it sent a generation or a deletion that its
    agent then did not act on. Everything else is logged as before."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self._saved: dict[str, Any] = {}
        self._show_debug = True

    def __enter__(self) -> SpecEvents:
        self._saved = structlog.get_config()
        self._show_debug = self._saved["wrapper_class"](None, [], {}).is_enabled_for(logging.DEBUG)
        processors = [self._record, *self._saved["processors"]]
        # Debug must reach the recorder; _record drops it afterwards unless the
        # configuration before let it through.
        structlog.configure(
            processors=processors, wrapper_class=structlog.make_filtering_bound_logger(0)
        )
        return self

    def __exit__(self, *exc: object) -> None:
        structlog.configure(**self._saved)

    def _record(self, _logger: Any, method: str, event: EventDict) -> EventDict:
        if event.get("event") == "spec event":
            self.sent.append({k: event.get(k) for k in ("cluster", "work", "action", "generation")})
        if method == "debug" and not self._show_debug:
            raise structlog.DropEvent
        return event

    def sent_generation(self, cluster: str, name: str, generation: int) -> bool:
        """Whether our server sent ``name`` to ``cluster`` at ``generation`` or later."""
        return any(
            e["cluster"] == cluster
            and e["work"] == name
            and e["action"] != DELETE_REQUEST
            and int(e["generation"] or 0) >= generation
            for e in self.sent
        )

    def sent_deletion(self, cluster: str, name: str) -> bool:
        """Whether our server sent the deletion of ``name`` to ``cluster``."""
        return any(
            e["cluster"] == cluster and e["work"] == name and e["action"] == DELETE_REQUEST
            for e in self.sent
        )


class HubScenario(Scenario):
    """Works on the hub, served to each side's agent by its server. ``events`` holds
    what our server sent, so that OCM's agent stalling behind ours after its store
    race is told from our server not sending."""

    def __init__(self, run: FuzzRun, hub: Hub, gen: Generator, events: SpecEvents) -> None:
        super().__init__(run, hub, gen)
        self.events = events

    def stalled(
        self, ocm: dict[str, Any] | None, ours: dict[str, Any] | None, name: str
    ) -> str | None:
        """The row for either side: behind OCM's server as the base says; behind ours
        when our server sent the generation the other side applied and OCM's agent
        there logged its store race."""
        if row := super().stalled(ocm, ours, name):
            return row
        cluster = self.hub.ours.cluster
        if (
            applied_at(ours) < applied_at(ocm)
            and self.events.sent_generation(cluster, name, applied_at(ocm))
            and self.raced(cluster, name)
        ):
            self.run.log(f"  {name}: behind our server, which sent generation {applied_at(ocm)}")
            return STALLED
        return None

    async def write(self, name: str, spec: dict[str, Any]) -> bool:
        """Create or update (retrying conflicts with the servers' own writes)."""
        for side in self.hub.sides:
            for _ in range(20):
                work = await hub_work(self.hub, side, name)
                try:
                    if work is None:
                        body = work_body(name, [], **body_spec(spec))
                        body["metadata"]["namespace"] = side.cluster
                        await self.hub.client.create(MANIFESTWORKS, body, side.cluster)
                    else:
                        work["spec"] = body_spec(spec)
                        await self.hub.client.update(MANIFESTWORKS, work, side.cluster)
                    break
                except Conflict:
                    continue
                except Invalid as err:
                    # The hub's validation: the same for both sides, the first refuses.
                    self.run.log(f"  the hub refused {name}: {str(err)[:300]}")
                    return False
        return True

    async def delete(self, name: str) -> None:
        for side in self.hub.sides:
            await self.hub.client.delete(MANIFESTWORKS, name, side.cluster)

    async def read(self, side: Side, name: str) -> dict[str, Any] | None:
        return await hub_work(self.hub, side, name)

    def comparable(self, work: dict[str, Any]) -> Any:
        """The status and finalizers, and what the servers may touch of the rest."""
        meta = work.get("metadata") or {}
        hub_meta = {"labels": meta.get("labels"), "annotations": meta.get("annotations")}
        hub_meta.update({"deleting": bool(meta.get("deletionTimestamp"))})
        return {**super().comparable(work), "hub": hub_meta, "generation": meta.get("generation")}

    async def deletion_stalled(self, name: str) -> str | None:
        """One side still holds the work after OCM's agent there raced, the other is done;
        behind ours, only once our server sent the deletion."""
        ocm, ours = [await self.read(side, name) for side in self.hub.sides]
        if ocm is not None and ours is None and self.ocm_raced(name):
            return STALLED
        cluster = self.hub.ours.cluster
        if (
            ours is not None
            and ocm is None
            and self.events.sent_deletion(cluster, name)
            and self.raced(cluster, name)
        ):
            self.run.log(f"  {name}: behind our server, which sent the deletion")
            return STALLED
        return None

    async def listed_known(self, res: dict[str, Any]) -> str | None:
        """OCM's agent applies a work once more after OCM's server refused its first
        status, and that second server-side apply adds a ``before-first-apply``
        managedFields entry; behind ours it comes at a later apply, if at all."""
        ocm, ours = [await listed_object(side, res) for side in self.hub.sides]
        if ocm is None or ours is None:
            return None
        trimmed = [comparable_object(ocm), comparable_object(ours)]
        entries = trimmed[0]["metadata"]["managedFields"]
        if not any(e.get("manager") == FIRST_APPLY for e in entries):
            return None
        if any(e.get("manager") == FIRST_APPLY for e in trimmed[1]["metadata"]["managedFields"]):
            return None
        trimmed[0]["metadata"]["managedFields"] = [
            e for e in entries if e.get("manager") != FIRST_APPLY
        ]
        return "first status of a work" if trimmed[0] == trimmed[1] else None

    async def gone(self, name: str) -> None:
        async def read(side: Side) -> Any:
            work = await hub_work(self.hub, side, name)
            return None if work is None else self.comparable(work)

        await same_on_both(
            self.hub,
            f"work {name!r} deleted",
            read,
            lambda w: w,
            ready=lambda w: w is None,
            timeout=SETTLE,
        )


@pytest.mark.parametrize("peers", ["grpc-server"], indirect=True)
async def test_random_works_through_both_servers(peers: Hub) -> None:
    """Random works and steps for the budget; every divergence is a finding."""
    run = fuzz_run("grpcserver", DEFAULT_BUDGET)
    gen = Generator(run.rng("works"), our_agent=False, raw_feedback=True)
    with SpecEvents() as events:
        await HubScenario(run, peers, gen, events).play()
    run.assert_none()
