"""Randomized side by side on the mqtt driver: OCM v1.2.1's Go work agent and ours.

One mosquitto broker and the test work source of tests/cloudevents/mqttsource.py
(publishing as sdk-go sources do); OCM's agent serves ``cluster-ocm``, ours
``cluster-ours`` (the ``mqtt`` fixture of tests/peers/test_mqtt_side_by_side.py).
The random works and changes of tests/fuzz/works.py go through the source
(some works with labels and annotations, which the agents copy into their status
events' extensions), deletions as ``update_request`` or ``delete_request``; besides,
both agents are restarted (works changed, deleted or created meanwhile are lost on
the broker) and the source asks for every status again. After each step: the last
status each agent published (settled at the source's generation), the
AppliedManifestWork and its objects, and the last status event's attributes,
extensions and topic; for deletions, the confirmation, the ``Deleted`` status and
what was left. At the end every status event's ``statushash`` is checked against
ours.

Repeat a run with ``make fuzz-peers FUZZ_AREAS=mqtt FUZZ_SEED=<seed>``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from typing import Any

import aiomqtt

from ocmkit.cloudevents.event import format_time, utcnow
from ocmkit.cloudevents.works import decode_status_event, status_hash
from tests.fuzz.common import FuzzRun, budget_of, fuzz_marks, fuzz_run
from tests.fuzz.test_grpcserver import SETTLE, Scenario
from tests.fuzz.works import Generator, body_spec, listed
from tests.fuzz.workstatus import known_lag
from tests.peers.test_agent_side_by_side import (
    OCM,
    Side,
    _strip_times,
    applied_work,
    same_on_both,
)
from tests.peers.test_mqtt_side_by_side import Mqtt, event_shape, mqtt

__all__ = ["mqtt"]

DEFAULT_BUDGET = 720.0
#: How long an event already received may take to be the same (only late events change it).
FINAL = 30.0
pytestmark = fuzz_marks(DEFAULT_BUDGET, budget_of(DEFAULT_BUDGET) + 1800)


def rules_of_present_manifests(status: dict[str, Any]) -> None:
    """Drops work-level rule conditions whose type no manifest reports (OCM's side only):
    OCM's agent can keep one whose manifest left the work, ours does not
    (docs/compatibility.md row "a work-level rule condition whose manifest left the
    work")."""
    manifests = (status.get("resourceStatus") or {}).get("manifests") or []
    types = {c.get("type") for e in manifests for c in e.get("conditions") or []}
    status["conditions"] = [
        c
        for c in status.get("conditions") or []
        if c.get("reason") != "ConditionRulesAggregated" or c.get("type") in types
    ]


class MqttScenario(Scenario):
    """Works at the test source; what each agent reported, as the source received it."""

    # Not Deployments: OCM's agent PUTs its manifest over someone else's replicas, ours
    # leaves fields the manifest never set (row "`Update` on kinds without a typed path").
    edited = ("configmaps", "secrets", "serviceaccounts")

    def lag(self, ocm: dict[str, Any] | None, ours: dict[str, Any] | None, name: str) -> str | None:
        """Only OCM's agent lags for a documented reason: ours applies at once."""
        return known_lag(ocm, ours, name in self.was_complete)

    def __init__(self, run: FuzzRun, m: Mqtt, gen: Generator) -> None:
        super().__init__(run, m.hub, gen)
        self.m = m
        self.meta_rng = run.rng("metadata")
        self.seen = 0
        self.last: dict[str, tuple[str, Any]] = {}

    def alive(self) -> None:
        """Both agents still running (OCM's is checked by ``same_on_both``)."""
        code = self.m.our_agent.exited()
        assert code is None, f"our agent exited {code}: {self.m.our_agent.log()[-3000:]}"

    async def publish(self, work: dict[str, Any], action: str) -> None:
        """Publishes a spec event, again when the broker timed out (a loaded machine)."""
        for _ in range(5):
            try:
                await self.m.source.publish(work, action)
                return
            except aiomqtt.MqttError as err:
                self.run.log(f"  publish failed ({err}); again")
                await self.m.source.wait_connected()
                await asyncio.sleep(2)  # sleep-ok: pacing of the retries
        await self.m.source.publish(work, action)

    async def write(self, name: str, spec: dict[str, Any]) -> bool:
        """A new work (``create_request``) or its next generation (``update_request``)."""
        if (OCM, name) in self.m.uids:
            for side in self.hub.sides:
                work = self.m.source.works[self.m.uids[(side.cluster, name)]]
                work["metadata"]["generation"] += 1
                work["spec"] = body_spec(spec)
                await self.publish(work, "update_request")
            return True
        extra: dict[str, Any] = {}
        r = self.meta_rng
        if r.random() < 0.35:
            # Copied into the status events' metadata and logtracing extensions.
            logging = "logging.open-cluster-management.io"
            annotations = [{f"{logging}/trace-id": f"t-{name}"}, {"note": "only"}]
            annotations.append({"note": "n", f"{logging}/a": "1", f"{logging}/b": "<&>"})
            extra = {"labels": {"app": r.choice(["x", "y"]), "fz": name}}
            extra["annotations"] = r.choice(annotations)
        for side in self.hub.sides:
            uid = str(uuid.uuid4())
            meta = {"name": name, "namespace": side.cluster, "uid": uid, "generation": 1}
            work = {"metadata": {**meta, **copy.deepcopy(extra)}, "spec": body_spec(spec)}
            self.m.source.works[uid] = work
            self.m.uids[(side.cluster, name)] = uid
            await self.publish(work, "create_request")
        return True

    async def delete(self, name: str) -> None:
        """Marks the work deleting, sent as an update or as a delete request."""
        action = self.rng.choice(["update_request", "delete_request"])
        self.run.log(f"  deleted by {action}")
        for side in self.hub.sides:
            work = self.m.source.works[self.m.uids[(side.cluster, name)]]
            work["metadata"]["deletionTimestamp"] = format_time(utcnow())
            await self.publish(work, action)

    def reported(self, side: Side, name: str) -> dict[str, Any] | None:
        """The work at the source with the status its agent last reported."""
        self.alive()
        uid = self.m.uids[(side.cluster, name)]
        update = self.m.source.last_status(uid)
        if update is None:
            return None
        held = self.m.source.works.get(uid) or {"metadata": {}, "spec": None}
        meta = {"name": name, "generation": held["metadata"].get("generation")}
        work = {"metadata": meta, "spec": held["spec"], "status": update.status()}
        return {**work, "reported_generation": update.generation, "cluster": side.cluster}

    async def read(self, side: Side, name: str) -> dict[str, Any] | None:
        return self.reported(side, name)

    def comparable(self, work: dict[str, Any]) -> Any:
        same = super().comparable(work)
        if work["cluster"] == OCM:
            rules_of_present_manifests(same["status"])
        return {**same, "reported_generation": work["reported_generation"]}

    def comparable_applied(self, applied: dict[str, Any]) -> Any:
        same = super().comparable_applied(applied)
        # Ours writes an emptied list, OCM's agent omits it (row "an emptied
        # AppliedManifestWork").
        if same["status"].get("appliedResources") == []:
            del same["status"]["appliedResources"]
        return same

    def last_shape(self, side: Side, name: str) -> Any:
        """The shape of the last status event of work ``name`` on ``side``."""
        # An index of the events seen: scanning the growing list on every poll starves
        # the source's reading, and the broker drops what it does not read in time.
        events = self.m.source.status_events
        for topic, event in events[self.seen :]:
            self.last[str(event.extensions.get("resourceid"))] = (topic, event)
        self.seen = len(events)
        last = self.last.get(self.m.uids[(side.cluster, name)])
        return None if last is None else event_shape(*last, side.cluster)

    async def same_last_event(self, name: str) -> None:
        """The last status events of ``name`` have the same shape."""

        async def shape(side: Side) -> Any:
            return self.last_shape(side, name)

        what = f"the last status event of {name!r}"
        await same_on_both(self.hub, what, shape, lambda v: v, timeout=FINAL)

    async def compare_more(self, name: str) -> None:
        await self.same_last_event(name)

    async def gone(self, name: str) -> None:
        """Confirmed (the source forgot it), the AppliedManifestWork gone, the last
        event and the ``Deleted`` status alike."""

        async def left(side: Side) -> Any:
            self.alive()
            held = self.m.uids[(side.cluster, name)] in self.m.source.works
            applied = await applied_work(side, name) is not None
            return {"held": held, "applied": applied} if held or applied else None

        what = f"the deletion of {name!r} confirmed"
        await same_on_both(
            self.hub, what, left, lambda v: v, ready=lambda v: v is None, timeout=SETTLE
        )
        await self.same_last_event(name)

        async def deleted_status(side: Side) -> Any:
            update = self.m.source.last_status(self.m.uids[(side.cluster, name)])
            if update is None:
                return None
            # Only what the deletion itself writes, and Applied: OCM's agent may sync the
            # status once more while the objects go (their availability, rules), ours does
            # not (row "a deleting work").
            kept = ("Applied", "Deleting", "Deleted")
            conds = [c for c in _strip_times(update.conditions) if c.get("type") in kept]
            text = json.dumps({"conditions": conds, "generation": update.generation})
            return json.loads(text.replace(side.cluster, "<cluster>"))

        what = f"the Deleted status of {name!r}"
        await same_on_both(self.hub, what, deleted_status, lambda v: v, timeout=FINAL)

    async def special(self, step: int, live: list[str]) -> bool:
        roll = self.rng.random()
        if roll < 0.06:
            await self.restart(step, live)
        elif roll < 0.11:
            await self.resync(step)
        return roll < 0.11

    async def restart(self, step: int, live: list[str]) -> None:
        """Both agents down; some works change, go or come meanwhile; both up again."""
        self.run.log(f"step {step}: both agents restart")
        await self.m.stop_agents()
        gone = []
        for name in self.rng.sample(live, min(len(live), self.rng.randint(1, 3))):
            if self.rng.random() < 0.3:
                gone.append((name, await listed(self.hub, name)))
                self.run.log(f"  while down: delete {name}")
                await self.delete(name)
            else:
                await self.change(step, name, check=False)
        if self.rng.random() < 0.5:
            await self.create(f"fz-new{step}", self.gen.work())
        await self.m.start_agents()
        for name, before in gone:
            await self.deleted(name, before)
        for name in list(self.works):
            await self.check(name, f"the restart at step {step}")

    async def resync(self, step: int) -> None:
        """The source asks for every status: both agents answer for every work."""
        self.run.log(f"step {step}: status resync request")
        events = self.m.source.status_events
        since = len(events)
        await self.m.source.request_statuses()

        async def unanswered(side: Side) -> Any:
            self.alive()
            seen = {e.extensions.get("resourceid") for _, e in events[since:]}
            uids = {n: self.m.uids[(side.cluster, n)] for n in self.works}
            return sorted(n for n, uid in uids.items() if uid not in seen) or None

        what = "answers to a status resync"
        try:
            await same_on_both(
                self.hub, what, unanswered, lambda v: v, ready=lambda v: v is None, timeout=SETTLE
            )
        except AssertionError as err:
            self.finding(f"status resync at step {step}", err)
        for name in list(self.works):
            await self.check(name, f"the status resync at step {step}")

    def check_hashes(self) -> None:
        """Every status event's ``statushash`` is ours of its status."""
        for _, event in self.m.source.status_events:
            update = decode_status_event(event)
            status: dict[str, Any] = {"conditions": update.conditions or None}
            status["resourceStatus"] = {"manifests": update.resource_status}
            if status_hash(status) != update.status_hash:
                cluster = event.ext_str("clustername")
                what = f"statushash of a status event of {cluster} (work {update.uid})"
                self.run.finding(what, event_id=event.id)


async def test_random_works_through_one_broker(mqtt: Mqtt) -> None:
    """Random works, steps, restarts and status resyncs for the budget; every
    divergence is a finding."""
    run = fuzz_run("mqtt", DEFAULT_BUDGET)
    scenario = MqttScenario(run, mqtt, Generator(run.rng("works"), our_agent=True))
    await scenario.play()
    scenario.alive()
    scenario.check_hashes()
    run.assert_none()
