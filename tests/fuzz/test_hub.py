"""Random replica-set scenarios and TTL collections: OCM v1.2.1's ``work manager`` beside ours.

Both tests use the ``hubs`` fixture of tests/peers/test_hub_side_by_side.py (two real
hubs, OCM's manager on one, ours on the other) and play scheduler and agent on both
alike, every choice drawn from the run's seed:

* ``test_replica_set_scenarios`` (three quarters of the budget): each scenario makes
  one or two placements from disjoint cluster pools (OCM v1.2.1 names works after the
  replica set, so overlapping placements would fight over one name), with 1-3 decision
  groups (a group sometimes split over two decisions, one name sometimes over two
  indexes), a rollout strategy of each type with random ``maxFailures``,
  ``maxConcurrency``, ``minSuccessTime``, ``progressDeadline`` and mandatory groups,
  and agent statuses of every kind (in most scenarios an agent also answers each new
  generation at once). Then 3-7 random steps: statuses, decision changes, template,
  strategy and label changes, placementRefs added and removed, placements deleted and
  created again, works deleted by hand; last, the replica set's deletion under each
  ``cascadeDeletionPolicy``, sometimes with a work held by a finalizer. After each step
  both hubs must settle (unchanged for a few seconds) on the same works and status.
* ``test_ttl_collection`` (the last quarter): standalone works with random TTLs and
  ``Complete`` conditions (some flipped later); the same works must remain.

A divergence that a row of docs/compatibility.md explains ends its scenario as known
(logged with the row); every other one is a finding. Works and statuses are logged by
their shape: manifests appear only as a version and a digest.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import os
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from ocmkit.kube import (
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    NotFound,
)
from schemas.wire import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    MANIFEST_WORK_REPLICA_SET_LABEL,
    PLACEMENT_LABEL,
    PLACEMENT_NAME_LABEL,
)
from tests.fuzz.common import FuzzRun, fuzz_marks, fuzz_run
from tests.hub.test_replicaset import NS, Hub, cond
from tests.peers import test_hub_side_by_side as harness
from tests.peers.test_agent_side_by_side import diff
from tests.peers.test_hub_side_by_side import Hubs, comparable_status
from tests.support.manifests import configmap
from tests.support.prepare import typed

DEFAULT_BUDGET = 900.0
# The scenario running when the budget ends is finished, and the hubs take a while.
pytestmark = fuzz_marks(DEFAULT_BUDGET, 900)

hubs = harness.hubs

POOLS = {0: [f"fz{i}" for i in range(8)], 1: [f"fy{i}" for i in range(4)]}
CLUSTERS = [c for pool in POOLS.values() for c in pool]
STABLE = 4.0  # seconds a hub's snapshot must stay unchanged to count as settled
CONVERGE = 60.0  # seconds both may then take to agree
GC_SHARE = 0.25  # of the budget, for test_ttl_collection

# An agent's report per kind: condition type -> status, all for the work's generation.
STATUSES = {
    "success": {"Applied": "True", "Available": "True", "Progressing": "False"},
    "progressing": {"Applied": "True", "Available": "False", "Progressing": "True"},
    "failed": {"Applied": "True", "Available": "False", "Progressing": "True", "Degraded": "True"},
    "done-degraded": {
        "Applied": "True",
        "Available": "True",
        "Progressing": "False",
        "Degraded": "True",
    },
    "apply-failed": {"Applied": "False", "Progressing": "True"},
    "unknown": {"Applied": "True", "Available": "Unknown", "Progressing": "Unknown"},
    "degraded-false": {
        "Applied": "True",
        "Available": "True",
        "Progressing": "False",
        "Degraded": "False",
    },
    "complete": {
        "Applied": "True",
        "Available": "True",
        "Progressing": "False",
        "Complete": "True",
    },
}
# Statuses without a current `Progressing` are left out: how they count is a documented
# difference ("works without a `Progressing` condition"), so they would only end scenarios.
STATUS_DRAW = ["success"] * 4 + [k for k in STATUSES if k != "success"]

Groups = list[tuple[str, list[list[str]]]]  # per index: group name, decisions' cluster lists
Status = tuple[str, float, bool]  # kind, seconds ago, Degraded one generation stale


class Divergence(Exception):
    """The hubs did not settle on the same state."""

    def __init__(self, what: str, ocm: Any, ours: Any) -> None:
        super().__init__(what)
        self.ocm, self.ours = ocm, ours


# -- drawing --------------------------------------------------------------------------------


def draw_strategy(rng: random.Random, n_groups: int) -> dict[str, Any]:
    """A rollout strategy of a random type; its block (if any) with random settings."""
    kind = rng.choice(["All", "Progressive", "Progressive", "ProgressivePerGroup"])
    body: dict[str, Any] = {}
    if rng.random() < 0.6:
        body["maxFailures"] = rng.choice([0, 1, 2, 10, "0%", "50%", "100%", "30%"])
    if rng.random() < 0.5:
        body["minSuccessTime"] = rng.choice(["0s", "2s", "1h", "0"])
    if rng.random() < 0.6:
        body["progressDeadline"] = rng.choice(["None", "3s", "1h", "0s"])
    if kind == "Progressive" and rng.random() < 0.8:
        body["maxConcurrency"] = rng.choice([0, 1, 2, 3, "0%", "50%", "100%", "34%", 100])
    if kind != "All" and n_groups and rng.random() < 0.4:
        body["mandatoryDecisionGroups"] = [
            {"groupIndex": rng.randrange(n_groups + 1)}
            if rng.random() < 0.5
            else {"groupName": rng.choice(["g0", "g1", "g2", "gx"])}
            for _ in range(rng.randint(1, 2))
        ]
    block = {
        "All": "all",
        "Progressive": "progressive",
        "ProgressivePerGroup": "progressivePerGroup",
    }
    return {"type": kind, **({block[kind]: body} if body else {})}


def draw_groups(rng: random.Random, pool: list[str], names: list[str]) -> Groups:
    """1-3 groups of clusters from ``pool``, a group sometimes split over two decisions."""
    groups: list[list[str]] = [[] for _ in range(rng.randint(1, 3))]
    for cluster in rng.sample(pool, rng.randint(0, len(pool))):
        groups[rng.randrange(len(groups))].append(cluster)
    out: Groups = []
    for index, members in enumerate(groups):
        chunks = [members]
        if len(members) >= 2 and rng.random() < 0.4:
            cut = rng.randint(1, len(members) - 1)
            chunks = [members[:cut], members[cut:]]
        out.append((names[index], chunks))
    return out


def draw_template(rng: random.Random, version: int) -> dict[str, Any]:
    """The replica set's template: one ConfigMap of ``version``, sometimes with a TTL."""
    template: dict[str, Any] = {
        "workload": {"manifests": [configmap("demo", version=str(version))]}
    }
    if rng.random() < 0.25:
        ttl = rng.choice([0, 1, 3600])
        template["deleteOption"] = {
            "propagationPolicy": "Foreground",
            "ttlSecondsAfterFinished": ttl,
        }
    return template


def draw_status(rng: random.Random) -> Status:
    """A report; transition times now or exactly at the `1h` deadlines and soak times."""
    return rng.choice(STATUS_DRAW), rng.choice([0, 0, 3600]), rng.random() < 0.15


# -- playing scheduler and agent ------------------------------------------------------------


def decision_index(decision: str) -> tuple[int, int]:
    """(group index, chunk) of a decision named ``<placement>-decision-<index>-<chunk>``."""
    index, chunk = decision.rsplit("-", 2)[1:]
    return int(index), int(chunk)


async def decide(hub: Hub, name: str, groups: Groups, *, create_placement: bool = False) -> None:
    """The placement's decisions and status as ``groups`` say (the Placement made last,
    when asked: a Placement seen without decisions loses every cluster for a moment,
    a transient both managers act on at their own pace)."""
    existing = await hub.client.list(
        PLACEMENT_DECISIONS, NS, label_selector=f"{PLACEMENT_LABEL}={name}"
    )
    have = {item["metadata"]["name"]: item for item in existing["items"]}
    wanted: dict[str, tuple[dict[str, str], list[str]]] = {}  # decision: labels, clusters
    status_groups = []
    for index, (group, chunks) in enumerate(groups):
        labels = {
            PLACEMENT_LABEL: name,
            DECISION_GROUP_INDEX_LABEL: str(index),
            DECISION_GROUP_NAME_LABEL: group,
        }
        # Named by index: a decision never moves to another index. Relabelling one
        # would pass through an index with no decision, and OCM's manager drops the
        # groups past such a gap, deleting their works (row "decision groups").
        names = [f"{name}-decision-{index}-{k}" for k in range(len(chunks))]
        wanted.update({n: (labels, chunk) for n, chunk in zip(names, chunks, strict=True)})
        count = sum(len(c) for c in chunks)
        status_groups.append(
            {
                "decisionGroupIndex": index,
                "decisionGroupName": group,
                "decisions": names,
                "clusterCount": count,
            }
        )
    # First every decision holds its old and new clusters, then only the new ones: a
    # cluster moving between decisions is never in none (which removes its work).
    for final in (False, True):
        for decision, (labels, members) in wanted.items():
            if decision not in have:
                body = typed(PLACEMENT_DECISIONS, metadata={"name": decision, "labels": labels})
                have[decision] = await hub.client.create(PLACEMENT_DECISIONS, body, NS)
            elif not final and have[decision]["metadata"].get("labels") != labels:
                patch = {"metadata": {"labels": labels}}
                await hub.client.patch(PLACEMENT_DECISIONS, decision, patch, NS)
            clusters = list(members)
            if not final:
                status = have[decision].get("status") or {}
                old = [d["clusterName"] for d in status.get("decisions") or []]
                clusters = old + [c for c in members if c not in old]
            listed = {"status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}}
            await hub.client.patch(PLACEMENT_DECISIONS, decision, listed, NS, subresource="status")
    # The highest indexes first, for the same reason.
    for decision in sorted(have, key=decision_index, reverse=True):
        if decision not in wanted:
            await hub.client.delete(PLACEMENT_DECISIONS, decision, NS)
    if create_placement:
        body = typed(PLACEMENTS, metadata={"name": name}, spec={})
        await hub.client.create(PLACEMENTS, body, NS)
    selected = sum(len(c) for _, chunks in groups for c in chunks)
    placement = {"status": {"numberOfSelectedClusters": selected, "decisionGroups": status_groups}}
    await hub.client.patch(PLACEMENTS, name, placement, NS, subresource="status")


async def all_works(hub: Hub, rs: str) -> list[dict[str, Any]]:
    """Every work carrying the replica set's owner label."""
    selector = f"{MANIFEST_WORK_REPLICA_SET_LABEL}={NS}.{rs}"
    return list((await hub.client.list(MANIFESTWORKS, label_selector=selector))["items"])


def work_key(work: dict[str, Any]) -> str:
    """``<cluster>/<placement>``: what identifies a work on both hubs (names differ)."""
    placement = (work["metadata"].get("labels") or {}).get(PLACEMENT_NAME_LABEL)
    return f"{work['metadata']['namespace']}/{placement}"


async def write_status(hub: Hub, work: dict[str, Any], status: Status) -> None:
    """The agent's report ``status`` on ``work`` (gone already: nothing to report)."""
    kind, ago, stale_degraded = status
    generation = work["metadata"]["generation"]
    at = datetime.now(UTC) - timedelta(seconds=ago)
    conditions = [
        cond(t, s, generation - 1 if stale_degraded and t == "Degraded" else generation, at)
        for t, s in STATUSES[kind].items()
    ]
    name, namespace = work["metadata"]["name"], work["metadata"]["namespace"]
    try:
        patch = {"status": {"conditions": conditions}}
        await hub.client.patch(MANIFESTWORKS, name, patch, namespace, subresource="status")
    except NotFound:
        pass


# -- what is compared -----------------------------------------------------------------------


def manifests_shape(spec: dict[str, Any]) -> dict[str, Any]:
    """A work's spec with its manifests as template version and digest (never logged whole)."""
    manifests = (spec.get("workload") or {}).get("manifests") or []
    digest = hashlib.sha256(json.dumps(manifests, sort_keys=True).encode()).hexdigest()[:12]
    versions = [(m.get("data") or {}).get("version") for m in manifests]
    return {**{k: v for k, v in spec.items() if k != "workload"}, "manifests": [versions, digest]}


async def snapshot(hub: Hub, rs: str) -> dict[str, Any]:
    """The replica set's works by cluster and placement, and its comparable status."""
    works: dict[str, list[dict[str, Any]]] = {}
    for w in await all_works(hub, rs):
        conditions = (w.get("status") or {}).get("conditions") or []
        works.setdefault(work_key(w), []).append(
            {
                "labels": w["metadata"].get("labels"),
                "annotations": w["metadata"].get("annotations"),
                "spec": manifests_shape(w["spec"]),
                "deleting": bool(w["metadata"].get("deletionTimestamp")),
                "generation": w["metadata"].get("generation"),
                "conditions": sorted(
                    [c["type"], c["status"], c.get("observedGeneration")] for c in conditions
                ),
            }
        )
    try:
        status = comparable_status(await hub.get_rs(rs))
    except NotFound:
        status = None
    return {"works": works, "status": status}


def comparable(ocm: Any, ours: Any) -> tuple[Any, Any]:
    """Both snapshots without the messages only ours writes (docs/compatibility.md,
    "problems the user must fix": OCM leaves `PlacementVerified` and
    `ManifestworkApplied` messages empty)."""
    ocm, ours = copy.deepcopy(ocm), copy.deepcopy(ours)
    if ocm["status"] and ours["status"]:
        empty = {c["type"] for c in ocm["status"]["conditions"] if not c.get("message")}
        for side in (ocm, ours):
            for c in side["status"]["conditions"]:
                if c["type"] in empty & {"PlacementVerified", "ManifestworkApplied"}:
                    c["message"] = ""
    return ocm, ours


def without_work_labels(snap: dict[str, Any]) -> dict[str, Any]:
    """``snap`` with the works' labels left out."""
    works = {k: [{**w, "labels": None} for w in ws] for k, ws in snap["works"].items()}
    return {**snap, "works": works}


class Scenario:
    """One replica set's life on both hubs, drawn from ``rng``."""

    def __init__(self, run: FuzzRun, hubs: Hubs, number: int) -> None:
        self.run, self.hubs, self.n = run, hubs, number
        self.rng = run.rng(f"scenario-{number}")
        self.agent_rng = run.rng(f"agent-{number}")
        self.rs = f"rs{number}"
        self.steps: list[Any] = []
        self.version = 1
        self.template: dict[str, Any] = {}
        # name -> pool, group names, groups, strategy
        self.placements: dict[str, dict[str, Any]] = {}
        self.refs: list[str] = []
        self.deleted: set[str] = set()
        self.relabelled = False
        self.auto = self.rng.random() < 0.8
        self.answered: dict[tuple[str, int], Status] = {}
        self.cascade = self.rng.choice([None, None, "Background", "Foreground"])

    def note(self, step: dict[str, Any]) -> None:
        """Logs a step and keeps it for the finding."""
        self.steps.append(step)
        self.run.log(f"  #{self.n} {json.dumps(step, default=str)[:400]}")

    async def on_both(self, name: str, *, create: bool = False) -> None:
        """The placement's current groups written on both hubs."""
        for hub in self.hubs.both:
            await decide(hub, name, self.placements[name]["groups"], create_placement=create)

    async def new_placement(self, pool: int, *, create: bool = True) -> str:
        """A new placement of cluster ``pool`` with random groups and strategy."""
        name = f"p{self.n}-{pool}-{len(self.placements)}"
        # One index keeps one group name for the placement's life: decisions of one index
        # with two names are a documented difference ("decision groups"), and relabelling
        # decisions one by one passes through that state.
        names = ["g0", "g0", "g1"] if self.rng.random() < 0.2 else ["g0", "g1", "g2"]
        groups = draw_groups(self.rng, POOLS[pool], names)
        strategy = draw_strategy(self.rng, len(groups))
        self.placements[name] = {
            "pool": pool,
            "names": names,
            "groups": groups,
            "strategy": strategy,
        }
        self.note({"placement": name, "groups": groups, "strategy": strategy, "late": not create})
        if create:
            await self.on_both(name, create=True)
        return name

    def redraw(self, name: str) -> None:
        """New random groups for the placement (its group names kept)."""
        entry = self.placements[name]
        entry["groups"] = draw_groups(self.rng, POOLS[entry["pool"]], entry["names"])

    async def write_rs(self, *, create: bool) -> None:
        """The replica set as the scenario has it now, created or patched on both hubs."""
        refs = [{"name": n, "rolloutStrategy": self.placements[n]["strategy"]} for n in self.refs]
        spec = {"placementRefs": refs, "manifestWorkTemplate": self.template}
        for hub in self.hubs.both:
            if create:
                cascade = {"cascadeDeletionPolicy": self.cascade} if self.cascade else {}
                metadata = {"name": self.rs, "labels": {"app": "fuzz"}}
                body = typed(MANIFESTWORK_REPLICASETS, metadata=metadata, spec={**spec, **cascade})
                await hub.client.create(MANIFESTWORK_REPLICASETS, body, NS)
            else:
                await hub.client.patch(MANIFESTWORK_REPLICASETS, self.rs, {"spec": spec}, NS)

    def new_template(self) -> None:
        """A new random template of the current version (logged by its version)."""
        self.template = draw_template(self.rng, self.version)
        delete_option = self.template.get("deleteOption")
        self.note({"template": self.version, "deleteOption": delete_option})

    async def report(self, *, everyone: bool) -> None:
        """Random reports, the same per cluster and placement on both hubs."""
        works = [await all_works(hub, self.rs) for hub in self.hubs.both]
        keys = sorted({work_key(w) for ws in works for w in ws})
        plan = {k: draw_status(self.rng) for k in keys if everyone or self.rng.random() < 0.5}
        self.note({"agent": plan})
        for hub, hub_works in zip(self.hubs.both, works, strict=True):
            for w in hub_works:
                if work_key(w) in plan and not w["metadata"].get("deletionTimestamp"):
                    await write_status(hub, w, plan[work_key(w)])

    async def answer(self) -> None:
        """A prompt agent: a work not yet applied at its generation gets a report at once
        (the same per cluster, placement and generation on both hubs)."""
        for hub in self.hubs.both:
            for w in await all_works(hub, self.rs):
                generation = w["metadata"]["generation"]
                conditions = (w.get("status") or {}).get("conditions") or []
                applied = [c for c in conditions if c["type"] == "Applied"]
                if w["metadata"].get("deletionTimestamp") or (
                    applied and applied[0].get("observedGeneration") == generation
                ):
                    continue
                key = (work_key(w), generation)
                if key not in self.answered:
                    self.answered[key] = draw_status(self.agent_rng)
                    self.note({"answer": key, "status": self.answered[key]})
                await write_status(hub, w, self.answered[key])

    async def settle(self, what: str) -> None:
        """Waits until both hubs stayed unchanged for ``STABLE`` seconds and agree."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        last: list[Any] = [None, None]
        since = [start, start]
        while True:
            self.hubs.manager.check_alive()
            if self.auto:
                await self.answer()
            now = loop.time()
            for i, hub in enumerate(self.hubs.both):
                snap = await snapshot(hub, self.rs)
                if snap != last[i]:
                    last[i], since[i] = snap, now
            settled = all(now - t >= STABLE for t in since)
            ocm, ours = comparable(last[0], last[1])
            if settled and ocm == ours:
                return
            if (settled and now - start > CONVERGE) or now - start > 2 * CONVERGE:
                raise Divergence(f"scenario {self.n}: {what}", ocm, ours)
            await asyncio.sleep(0.5)  # sleep-ok: polling with a deadline

    def documented(self, ocm: dict[str, Any], ours: dict[str, Any]) -> str | None:
        """The docs/compatibility.md row that explains a divergence, if one applies."""
        works = [w for snap in (ocm, ours) for ws in snap["works"].values() for w in ws]
        if any(
            ["Progressing", w["generation"]] not in [[t, g] for t, _, g in w["conditions"]]
            for w in works
        ):
            return "works without a `Progressing` condition"  # e.g. unreported, past a deadline
        if self.relabelled and without_work_labels(ocm) == without_work_labels(ours):
            return "labels of existing works"
        current = manifests_shape(self.template)["manifests"]
        for key, ws in ocm["works"].items():
            cluster, placement = key.split("/", 1)
            entry = self.placements.get(placement)
            left = (
                entry is None
                or placement in self.deleted
                or all(cluster not in chunk for _, chunks in entry["groups"] for chunk in chunks)
            )
            outdated = any(w["spec"]["manifests"] != current for w in ws)
            if left and outdated:
                return "outdated works of clusters that left the placement"
        for name in self.refs:
            strategy = self.placements[name]["strategy"]
            body: dict[str, Any] = next((v for k, v in strategy.items() if k != "type"), {})
            sizes = [sum(map(len, chunks)) for _, chunks in self.placements[name]["groups"]]
            if body.get("mandatoryDecisionGroups"):
                return "mandatory decision groups"
            failures = body.get("maxFailures")
            limits = sizes if strategy["type"] == "ProgressivePerGroup" else [sum(sizes)]
            if isinstance(failures, int) and any(failures > size for size in limits):
                return "`maxFailures` above the number of clusters"
            deadline = body.get("progressDeadline", "None")
            if strategy["type"] == "ProgressivePerGroup" and deadline != "None":
                return "moving to the next group"  # a timed-out cluster in OCM's arithmetic
        return None

    async def step(self, action: str) -> bool:
        """One random change on both hubs; False when it does not apply now."""
        rng = self.rng
        if action == "agent":
            await self.report(everyone=rng.random() < 0.6)
        elif action == "decide":
            name = rng.choice(self.refs)
            if name in self.deleted:
                return False
            self.redraw(name)
            self.note({"decide": name, "groups": self.placements[name]["groups"]})
            await self.on_both(name)
        elif action == "template":
            self.version += 1
            self.new_template()
            await self.write_rs(create=False)
        elif action == "strategy":
            name = rng.choice(self.refs)
            groups = self.placements[name]["groups"]
            self.placements[name]["strategy"] = draw_strategy(rng, len(groups))
            self.note({"strategy": name, "to": self.placements[name]["strategy"]})
            await self.write_rs(create=False)
        elif action == "refs":
            if len(self.refs) == 2:
                self.note({"remove ref": self.refs.pop(rng.randrange(2))})
            else:
                pool = 1 - self.placements[self.refs[0]]["pool"]
                self.refs.append(await self.new_placement(pool))
            await self.write_rs(create=False)
        elif action == "delete-placement":
            name = rng.choice(self.refs)
            if name in self.deleted:
                return False
            self.note({"delete placement": name})
            selector = f"{PLACEMENT_LABEL}={name}"
            for hub in self.hubs.both:
                await hub.client.delete(PLACEMENTS, name, NS)
                decisions = await hub.client.list(PLACEMENT_DECISIONS, NS, label_selector=selector)
                for d in decisions["items"]:
                    await hub.client.delete(PLACEMENT_DECISIONS, d["metadata"]["name"], NS)
            self.deleted.add(name)
        elif action == "recreate-placement":
            if not self.deleted:
                return False
            name = sorted(self.deleted)[0]
            self.deleted.discard(name)
            self.redraw(name)
            self.note({"recreate placement": name, "groups": self.placements[name]["groups"]})
            await self.on_both(name, create=True)
        elif action == "rs-labels":
            labels = rng.choice([{"app": "fuzz"}, {"app": "fuzz2"}, {"app": "fuzz", "t": "x"}, {}])
            self.note({"rs labels": labels})
            self.relabelled = True
            for hub in self.hubs.both:
                old = (await hub.get_rs(self.rs))["metadata"].get("labels") or {}
                patch = {"metadata": {"labels": {**dict.fromkeys(old), **labels}}}
                await hub.client.patch(MANIFESTWORK_REPLICASETS, self.rs, patch, NS)
        elif action == "delete-work":
            keys = sorted((await snapshot(self.hubs.ours, self.rs))["works"])
            if not keys:
                return False
            key = rng.choice(keys)
            self.note({"delete work": key})
            for hub in self.hubs.both:
                for w in await all_works(hub, self.rs):
                    if work_key(w) == key:
                        await self.delete_work(hub, w)
        return True

    async def delete_work(self, hub: Hub, work: dict[str, Any]) -> None:
        """Deletes ``work`` (gone already: fine)."""
        with contextlib.suppress(NotFound):
            await hub.client.delete(
                MANIFESTWORKS, work["metadata"]["name"], work["metadata"]["namespace"]
            )

    async def hold(self, key: str, finalizers: list[str] | None) -> None:
        """Sets the finalizers of the work of ``key`` on both hubs."""
        for hub in self.hubs.both:
            for w in await all_works(hub, self.rs):
                if work_key(w) == key:
                    patch = {"metadata": {"finalizers": finalizers}}
                    await hub.client.patch(
                        MANIFESTWORKS, w["metadata"]["name"], patch, w["metadata"]["namespace"]
                    )

    async def play(self) -> None:
        """The whole scenario; raises :class:`Divergence` at the first difference."""
        rng = self.rng
        late = rng.random() < 0.15  # the replica set made before its placement
        for pool in range(1 if rng.random() < 0.7 else 2):
            self.refs.append(await self.new_placement(pool, create=not (late and pool == 0)))
        self.new_template()
        self.note({"replica set": self.refs, "auto agent": self.auto, "cascade": self.cascade})
        await self.write_rs(create=True)
        await self.settle("after creation")
        if late:
            await self.on_both(self.refs[0], create=True)
            await self.settle("after the late placement")
        for i in range(rng.randint(3, 7)):
            action = rng.choice(
                ["agent"] * 4 + ["decide"] * 2 + ["template", "strategy", "refs", "delete-work"]
                + ["delete-placement", "recreate-placement", "rs-labels"]
            )  # fmt: skip
            if not await self.step(action):
                continue
            await self.settle(f"after step {i} ({action})")
            if action != "agent":
                await self.report(everyone=True)
                await self.settle(f"after step {i} ({action}) and reports")
        held = None
        works = (await snapshot(self.hubs.ours, self.rs))["works"]
        if works and rng.random() < 0.5:
            held = rng.choice(sorted(works))
            await self.hold(held, ["fuzz.example.com/hold"])
        self.note({"delete replica set": self.rs, "held": held})
        for hub in self.hubs.both:
            await hub.client.delete(MANIFESTWORK_REPLICASETS, self.rs, NS)
        await self.settle("after deletion")
        if held:
            await self.hold(held, None)
            await self.settle("after deletion, work released")

    async def clean_up(self) -> None:
        """Leftovers of an ended scenario gone, so that the next one starts clean."""
        for hub in self.hubs.both:
            with contextlib.suppress(NotFound):
                await hub.client.delete(MANIFESTWORK_REPLICASETS, self.rs, NS)
            for w in await all_works(hub, self.rs):
                if w["metadata"].get("finalizers"):
                    patch = {"metadata": {"finalizers": None}}
                    await hub.client.patch(
                        MANIFESTWORKS, w["metadata"]["name"], patch, w["metadata"]["namespace"]
                    )
                await self.delete_work(hub, w)


async def create_cluster_namespaces(hubs: Hubs) -> None:
    """The namespaces of every cluster of the pools, on both hubs."""
    for hub in hubs.both:
        for name in CLUSTERS:
            await hub.client.create(NAMESPACES, {"metadata": {"name": name}})


async def test_replica_set_scenarios(hubs: Hubs) -> None:
    """Random replica-set scenarios settle on the same works and status on both hubs."""
    run = fuzz_run("hub", DEFAULT_BUDGET)
    await create_cluster_namespaces(hubs)
    # FUZZ_SCENARIO=n replays from scenario n on (each draws from its own stream).
    number = int(os.environ.get("FUZZ_SCENARIO") or 1) - 1
    known = 0
    while run.left() > run.budget * GC_SHARE:
        number += 1
        scenario = Scenario(run, hubs, number)
        run.log(f"scenario {number}")
        try:
            await scenario.play()
            run.log(f"scenario {number}: same")
        except Divergence as err:
            row = scenario.documented(err.ocm, err.ours)
            if row is not None:
                known += 1
                run.log(f"{err}: known (docs/compatibility.md: {row})")
            else:
                run.log(f"{err}\n{diff(err.ocm, err.ours)}")
                run.finding(
                    str(err), steps=scenario.steps, ocm=err.ocm, ours=err.ours, auto=scenario.auto
                )
            await scenario.clean_up()
    run.log(f"scenarios up to {number} played, {known} ended by documented differences")
    run.assert_none()


def draw_standalone_work(rng: random.Random, name: str) -> tuple[dict[str, Any], list[Any]]:
    """A work outside any replica set with a random TTL, and its random conditions."""
    spec: dict[str, Any] = {"workload": {"manifests": [configmap(name)]}}
    ttl = rng.choice(["absent", "no-option", 0, 1, 2, -5, 3600, 5])
    if ttl == "absent":
        spec["deleteOption"] = {"propagationPolicy": rng.choice(["Foreground", "Orphan"])}
    elif ttl != "no-option":
        spec["deleteOption"] = {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": ttl}
    metadata: dict[str, Any] = {"name": name}
    draw = rng.random()
    if draw < 0.15:  # the owner label (even empty): never collected
        metadata["labels"] = {MANIFEST_WORK_REPLICA_SET_LABEL: rng.choice(["", "ocm-ns.nothere"])}
    elif draw < 0.3:
        metadata["labels"] = {"app": "gc"}
    body = typed(MANIFESTWORKS, metadata=metadata, spec=spec)
    complete = rng.choice(["none", "True", "True", "False", "Unknown"])
    if complete == "none":
        return body, []
    ago = rng.choice([0, 0, 3600, -30, 4])  # negative: in the future
    at = datetime.now(UTC) - timedelta(seconds=ago)
    conditions = [cond("Complete", complete, rng.choice([1, 1, 0, 7]), at)]
    if rng.random() < 0.3:
        conditions.insert(0, cond("Applied", "True", 1, datetime.now(UTC)))
    return body, conditions


async def remaining(hub: Hub, prefix: str) -> list[str]:
    """The works named ``prefix...`` that still exist, as ``<cluster>/<name>``."""
    names = []
    for ns in CLUSTERS[:4]:
        for w in (await hub.client.list(MANIFESTWORKS, ns))["items"]:
            if w["metadata"]["name"].startswith(prefix):
                names.append(f"{ns}/{w['metadata']['name']}")
    return sorted(names)


async def test_ttl_collection(hubs: Hubs) -> None:
    """Completed standalone works are collected after their TTL alike on both hubs."""
    run = fuzz_run("hub", DEFAULT_BUDGET)
    rng = run.rng("gc")
    await create_cluster_namespaces(hubs)
    loop = asyncio.get_running_loop()
    round_ = 0
    while run.left() > run.budget * (1 - GC_SHARE) or round_ == 0:
        round_ += 1
        prefix = f"gc{round_}-"
        plan = [
            (rng.choice(CLUSTERS[:4]), *draw_standalone_work(rng, f"{prefix}{i}"))
            for i in range(rng.randint(3, 8))
        ]
        shapes = [
            (ns, b["metadata"].get("labels"), b["spec"].get("deleteOption"), c) for ns, b, c in plan
        ]
        run.log(f"gc round {round_}: {json.dumps(shapes, default=str)[:1500]}")
        for hub in hubs.both:
            for ns, body, conditions in plan:
                await hub.client.create(MANIFESTWORKS, copy.deepcopy(body), ns)
                if conditions:
                    patch = {"status": {"conditions": conditions}}
                    name = body["metadata"]["name"]
                    await hub.client.patch(MANIFESTWORKS, name, patch, ns, subresource="status")
        # Part of the input: some Complete conditions flip 2 s later, while TTLs run.
        await asyncio.sleep(2)  # sleep-ok: the input's timeline
        flips = [
            (ns, b["metadata"]["name"], rng.choice(["True", "False"]))
            for ns, b, _ in plan
            if rng.random() < 0.3
        ]
        run.log(f"gc round {round_} flips: {flips}")
        flipped_at = loop.time()
        for hub in hubs.both:
            for ns, name, status in flips:
                patch = {"status": {"conditions": [cond("Complete", status, 1, datetime.now(UTC))]}}
                with contextlib.suppress(NotFound):
                    await hub.client.patch(MANIFESTWORKS, name, patch, ns, subresource="status")
        # Every TTL drawn (at most 5 s) has run out 8 s after the flips; then both must
        # agree within 10 s.
        while True:
            await asyncio.sleep(max(0.5, flipped_at + 8 - loop.time()))  # sleep-ok: TTLs
            ocm, ours = await remaining(hubs.ocm, prefix), await remaining(hubs.ours, prefix)
            if ocm == ours or loop.time() > flipped_at + 18:
                break
        if ocm != ours:
            what = f"gc round {round_}: different works remain"
            run.finding(what, plan=shapes, flips=flips, ocm=ocm, ours=ours)
        else:
            run.log(f"gc round {round_}: same ({len(ocm)} left)")
    run.assert_none()
