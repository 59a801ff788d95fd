"""Randomized side-by-side run of OCM's Go work agent (v1.2.1) and ours.

The harness of ``tests/peers/test_agent_side_by_side.py`` (one real hub, two real
managed clusters with simulated workloads, OCM's agent on ``cluster-ocm``, ours on
``cluster-ours``) gets random works (``tests/fuzz/works.py``): ConfigMaps, Secrets,
ServiceAccounts, Deployments,
Jobs, Namespaces, ClusterRoles, objects someone else wrote before, an unknown kind and
invalid manifests, with random update strategies, feedback rules, condition rules,
scrape types and delete options. Then random steps change, reorder, add, remove, break
and fix manifests and configs, edit objects on the managed clusters and delete works.
After each step the work's status, its AppliedManifestWork and every object it lists
are compared on both sides (``same_on_both``); a difference is a finding, and that
work is left alone from then on.

Both agents run on the ``kube`` driver; with ``FUZZ_AGENT_DRIVER=kube+grpc`` ours
runs on ``grpc`` through OCM's gRPC server instead (``make fuzz-peers
FUZZ_AREAS=agent FUZZ_AGENT_DRIVER=kube+grpc``). OCM's agent never runs on ``grpc``
here: it backs off exponentially after status conflicts and has been seen to leave
a new generation unapplied for minutes, which would read as a difference of ours.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import os
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ocmkit.kube import MANIFESTWORKS
from ocmkit.kube.errors import Conflict, Invalid
from ocmkit.kube.mergepatch import normalized
from tests.fuzz.common import FuzzRun, fuzz_marks, fuzz_run
from tests.fuzz.works import (
    Generator,
    body_spec,
    edit_on_spokes,
    listed,
    spec_outline,
    write_pre,
)
from tests.fuzz.workstatus import complete, known_lag
from tests.peers import test_agent_side_by_side as harness
from tests.peers.test_agent_side_by_side import Case, Hub, Side, peers

#: Seconds of scenarios (``FUZZ_BUDGET``); the timeout leaves room for the control
#: planes' set-up and the last comparisons of every work.
DEFAULT_BUDGET = 720.0
pytestmark = fuzz_marks(DEFAULT_BUDGET, 2400)
__all__ = ["peers"]

#: How long one comparison waits for both sides to settle alike (generous: other
#: control planes may share the machine).
SETTLE = 90.0
FIRST_WORKS = 6
MAX_WORKS = 36

#: The resources someone else edits on the managed clusters (see ``edit_on_spokes``).
EDITABLE = ("configmaps", "secrets", "serviceaccounts")


def redacted(value: Any) -> Any:
    """``value`` without Secret content: data of Secret objects and feedback values of
    Secret manifests read ``<redacted>``."""
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if not isinstance(value, dict):
        return value
    secret = (
        value.get("kind") == "Secret" or (value.get("resourceMeta") or {}).get("kind") == "Secret"
    )
    hidden = ("data", "stringData", "statusFeedback") if secret else ()
    return {k: "<redacted>" if k in hidden else redacted(v) for k, v in value.items()}


def wording_for(spec: dict[str, Any]) -> dict[str, str]:
    """Our message for a ConfigMap without a namespace -> OCM's (docs/compatibility.md,
    "a namespaced manifest without ``metadata.namespace``")."""
    wording = {}
    for m in spec["workload"]["manifests"]:
        meta = m.get("metadata") or {}
        if m.get("kind") == "ConfigMap" and "namespace" not in meta:
            ours = (
                f'Failed to apply manifest: ConfigMap "{meta.get("name")}" has no '
                "metadata.namespace, but configmaps is namespaced"
            )
            wording[ours] = (
                "Failed to apply manifest: the server does not allow this method on the "
                "requested resource"
            )
    return wording


def comparable_status(case: Case, work: dict[str, Any] | None) -> Any:
    """The side-by-side test's comparable status, without work-level rule aggregates whose
    type no manifest carries (docs/compatibility.md, "a work-level rule condition whose
    manifest left the work": OCM can keep them stale)."""
    same = harness._comparable_as(case, work)
    if same is None:
        return same
    status = same["status"]
    manifests = (status.get("resourceStatus") or {}).get("manifests") or []
    types = {c.get("type") for entry in manifests for c in entry.get("conditions") or []}
    status["conditions"] = [
        c
        for c in status.get("conditions") or []
        if c.get("reason") != "ConditionRulesAggregated" or c.get("type") in types
    ]
    return same


#: The AppliedManifestWork label naming the CloudEvents source of its work.
ORIGINAL_SOURCE = "cloudevents.open-cluster-management.io/originalsource"


def listed_of(applied: dict[str, Any] | None) -> set[tuple[str, str, str]]:
    """(resource, namespace, name) of what an AppliedManifestWork lists."""
    listed = ((applied or {}).get("status") or {}).get("appliedResources") or []
    return {(r["resource"], r.get("namespace") or "", r["name"]) for r in listed}


def comparable_record(applied: dict[str, Any] | None) -> Any:
    """The side-by-side test's comparable AppliedManifestWork; an emptied list equals no
    list (docs/compatibility.md, "an emptied AppliedManifestWork")."""
    if applied is None:
        return None
    same = harness.comparable_applied(applied)
    if same["status"].get("appliedResources") == []:
        del same["status"]["appliedResources"]
    # Set by every agent on grpc and mqtt (OCM's too), never on kube: under
    # FUZZ_AGENT_DRIVER=kube+grpc it tells the drivers apart, not the agents.
    labels = {k: v for k, v in (same["labels"] or {}).items() if k != ORIGINAL_SOURCE}
    same["labels"] = labels or None
    return same


def settled(case: Case, work: dict[str, Any] | None) -> bool:
    """Settled as the side-by-side test says, or complete: a work-level ``Complete=True``
    stops both agents' apply loops, so its generation may never be applied."""
    if work is None or harness._settled_as(case, work):
        return work is not None
    conditions = (work.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions)


class AgentFuzz:
    """The run: the works as written, and the comparisons after each step."""

    def __init__(self, hub: Hub, run: FuzzRun, rng: random.Random) -> None:
        self.hub = hub
        self.run = run
        self.gen = Generator(rng, our_agent=True, secret_feedback=True, available_rule=True)
        self.rng = rng
        self.settle = SETTLE
        self.works: dict[str, dict[str, Any]] = {}
        #: Works that differed: they are no longer changed, so one difference is one finding.
        self.diverged: set[str] = set()
        #: Works OCM's side has shown ``Complete`` (its apply loop then waits for a resync).
        self.was_complete: set[str] = set()
        self.created = 0

    async def put(self, name: str, spec: dict[str, Any]) -> bool:
        """Write the work on both sides; False when the hub refuses it."""
        body = body_spec(spec)
        try:
            for side in self.hub.sides:
                await self.put_one(side, name, body)
        except Invalid as err:
            self.run.log(f"the hub refused {name}: {str(err)[:300]}")
            return False
        return True

    async def put_one(self, side: Side, name: str, spec: dict[str, Any]) -> None:
        """Create or replace one side's work (again after a conflict with a status write)."""
        for _ in range(20):
            work = await harness.hub_work(self.hub, side, name)
            try:
                if work is None:
                    work = {"apiVersion": MANIFESTWORKS.api_version, "kind": MANIFESTWORKS.kind}
                    work["metadata"] = {"name": name, "namespace": side.cluster}
                    work["spec"] = copy.deepcopy(spec)
                    await self.hub.client.create(MANIFESTWORKS, work, side.cluster)
                else:
                    work["spec"] = copy.deepcopy(spec)
                    await self.hub.client.update(MANIFESTWORKS, work, side.cluster)
                return
            except Conflict:
                await asyncio.sleep(0.2)  # sleep-ok: backing off a conflict
        raise AssertionError(f"work {name} on {side.cluster}: a conflict on every write")

    async def differs(
        self, what: str, check: Callable[[], Awaitable[None]], secret: bool = False
    ) -> bool:
        """Run a comparison; a difference is a finding, with the diff unless it may show
        Secret content."""
        try:
            await check()
        except AssertionError as err:
            first, *diff = str(err).splitlines()
            details = {} if secret else {"diff": diff}
            self.run.finding(f"{what}: {first}", **details)
            return True
        return False

    async def check(self, name: str, after: str) -> None:
        """The work's status, then its AppliedManifestWork and objects, then the status
        again a little later, are the same on both sides."""
        if name in self.diverged:
            return
        settled_alike = await self.compare_status(name, after)
        differs = settled_alike is False
        if settled_alike and name in self.works:
            differs = await self.compare_record(name, after)
            if not differs:
                # Feedback values and rule conditions follow with the status syncs after
                # the apply.
                await asyncio.sleep(3)  # sleep-ok: an observation window
                differs = await self.compare_status(name, f"{after}, later") is False
        if differs:
            self.diverged.add(name)

    async def compare_status(self, name: str, after: str) -> bool | None:
        """Whether the work's status is the same on both sides once settled (None: alike
        but not settled)."""
        spec = self.works.get(name)
        case = Case([], wording=wording_for(spec) if spec else {})

        async def read(side: Side) -> Any:
            work = await harness.hub_work(self.hub, side, name)
            if side is self.hub.ocm and complete(work):
                self.was_complete.add(name)
            return work

        try:
            await harness.same_on_both(
                self.hub,
                f"the status of work {name!r}",
                read,
                functools.partial(comparable_status, case),
                ready=functools.partial(settled, case) if spec else (lambda w: w is None),
                timeout=self.settle,
            )
        except AssertionError as err:
            raw = [await read(side) for side in self.hub.sides]
            if comparable_status(case, raw[0]) == comparable_status(case, raw[1]):
                # Alike, neither settled (e.g. a work-level Complete stopped both apply
                # loops before this generation): not a difference.
                self.run.log(f"{name} after {after}: alike on both sides, not settled")
                return None
            if row := known_lag(raw[0], raw[1], name in self.was_complete):
                # OCM's agent behind for a documented reason (docs/compatibility.md, row).
                self.run.log(f"{name} after {after}: known ({row})")
                self.diverged.add(name)
                return None
            first = str(err).splitlines()[0]
            ocm, ours = (redacted(w and w.get("status")) for w in raw)
            where = spec_outline(spec) if spec else "deleted"
            what = f"the status of {name} after {after}: {first}"
            self.run.finding(what, spec=where, ocm=ocm, ours=ours)
            return False
        return True

    async def compare_record(self, name: str, after: str) -> bool:
        """The AppliedManifestWork and every object it lists are alike; True if not."""

        async def read(side: Side) -> Any:
            return side.unhashed(await harness.applied_work(side, name))

        known: list[str] = []

        async def record() -> None:
            what = f"the AppliedManifestWork of {name!r}"
            try:
                await harness.same_on_both(
                    self.hub, what, read, comparable_record, timeout=self.settle
                )
            except AssertionError:
                ocm, ours = [listed_of(await read(side)) for side in self.hub.sides]
                ocm_work = await harness.hub_work(self.hub, self.hub.ocm, name)
                if not (complete(ocm_work) and ocm < ours):
                    raise
                # docs/compatibility.md, "a generation whose rules complete the work at
                # once": OCM's agent may complete it before recording what it created.
                known.append("OCM's AppliedManifestWork misses objects of a Complete work")

        if await self.differs(f"the AppliedManifestWork of {name} after {after}", record):
            return True
        if known:
            self.run.log(f"{name} after {after}: known ({known[0]})")
            return True
        applied = await harness.applied_work(self.hub.ours, name)
        for res in ((applied or {}).get("status") or {}).get("appliedResources") or []:
            if await self.compare_object(res, f"after {after} of {name}"):
                return True
        return False

    async def compare_object(self, res: dict[str, Any], after: str) -> bool:
        """One managed-cluster object is alike on both sides; True if not."""
        what = f"{res['resource']} {res.get('namespace')}/{res['name']} {after}"
        secret = res["resource"] == "secrets"
        return await self.differs(
            what, lambda: harness.compare_object(self.hub, res, self.settle), secret=secret
        )

    async def create(self) -> None:
        """A new random work on both sides, compared."""
        self.created += 1
        name = f"fz{self.created}"
        spec = self.gen.work()
        self.run.log(f"create {name}: {spec_outline(spec)}")
        if await self.put(name, spec):
            self.works[name] = spec
            await self.check(name, "create")

    async def delete(self, name: str) -> None:
        """Delete the work on both sides; what it leaves is compared."""
        before = await listed(self.hub, name)
        spec = self.works.pop(name)
        self.run.log(f"delete {name} ({spec_outline(spec)}), {len(before)} resources listed")
        for side in self.hub.sides:
            await self.hub.client.delete(MANIFESTWORKS, name, side.cluster)
        await self.check(name, "its deletion")
        for res in before:
            await self.compare_object(res, f"after the deletion of {name}")

    async def edit_on_spokes(self, name: str) -> None:
        """Someone else edits one of the work's ConfigMaps, Secrets or ServiceAccounts on
        both managed clusters (not Deployments: docs/compatibility.md, "``Update`` on kinds
        without a typed path", OCM's PUT reverts others' fields)."""
        await edit_on_spokes(self.hub, name, self.rng, EDITABLE, self.run.log)

    async def step(self, number: int) -> None:
        """One random step: a new work, a deletion, or a change (perhaps after an edit on
        the managed clusters)."""
        live = [n for n in self.works if n not in self.diverged]
        roll = self.rng.random()
        if not live or (roll < 0.12 and len(self.works) < MAX_WORKS):
            await self.create()
            return
        name = self.rng.choice(live)
        if roll < 0.25:
            await self.delete(name)
            return
        if roll < 0.37:
            await self.edit_on_spokes(name)
        spec = self.works[name]
        old = copy.deepcopy(spec)
        what = self.gen.mutate(spec)
        if normalized(old) == normalized(spec):
            # Equal under Go's semantic equality: neither agent applies it before its
            # periodic resync (4 to 6 min), longer than a comparison waits.
            self.works[name] = old
            return
        self.run.log(f"step {number}: {name}: {what}: {spec_outline(spec)}")
        if not await self.put(name, spec):
            self.works[name] = old
            return
        await self.check(name, f"step {number} ({what})")


@pytest.mark.parametrize("peers", [os.environ.get("FUZZ_AGENT_DRIVER") or "kube"], indirect=True)
async def test_random_works_alike(peers: Hub) -> None:
    """Random works, changes and deletions: OCM's agent and ours write the same."""
    hub = peers
    run = fuzz_run("agent", DEFAULT_BUDGET)
    run.log(f"driver: {hub.driver}")
    fuzz = AgentFuzz(hub, run, run.rng("works"))
    await write_pre(hub.sides)
    for _ in range(FIRST_WORKS):
        await fuzz.create()
    step = 0
    while run.left() > 0:
        await fuzz.step(step)
        step += 1
    # Everything once more at the end.
    for name in list(fuzz.works):
        await fuzz.check(name, "the last step")
    run.log(f"done after {step} steps, {len(fuzz.works)} works left")
    run.assert_none()
