"""OCM's Go work agent and ours on the mqtt driver, side by side.

One real broker (mosquitto) and one work source publishing as OCM's sdk-go
sources do (tests/cloudevents/mqttsource.py); each agent serves its own
managed cluster and gets the same works. Compared, field by field: the
status each agent publishes (conditions by shape, feedback, manifest
conditions), the CloudEvents attributes and extensions of its status events
and the topic they come on, and what each leaves on its cluster. OCM's own
repository no longer tests its agent on mqtt; this is where ours is held to it.

Runs in the real leg only; ``make ocm`` builds OCM's binary.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocmkit.cloudevents import CloudEvent
from ocmkit.cloudevents.works import StatusUpdate
from ocmkit.kube import CONFIGMAPS
from tests.cloudevents.mqttbroker import Mosquitto
from tests.cloudevents.mqttsource import MqttWorkSource, topics
from tests.conftest import eventually
from tests.peers.test_agent_side_by_side import (
    CASES,
    NS,
    OCM,
    OURS,
    UID,
    Case,
    Hub,
    Side,
    _strip_times,
    applied_work,
    comparable_work,
    compare_applied,
    diff,
    same_on_both,
    settled,
    spoke_side,
)
from tests.support.manifests import configmap
from tests.support.ocmpeer import Peer, start_ocm_agent, start_our_agent
from tests.support.processes import ProgramProcess
from tests.support.targets import PlanePool
from workagent.identity import hub_hash

pytestmark = pytest.mark.realkube

#: The corpus's works compared here: apply, feedback, failures and strategies.
NAMES = ["plain", "feedback", "unknown-kind", "create-only", "read-only-missing", "ssa-force"]
DIGITS = re.compile(r"^\d+$")
RESOURCE_VERSION = re.compile(r'"resourceVersion":"\d+"')
TIME = re.compile(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"')


@dataclass
class Mqtt:
    """The broker, the source, the two sides and the agents serving them."""

    hub: Hub  # no hub API server here: its client is unused
    source: MqttWorkSource
    ocm_agent: Peer
    our_agent: ProgramProcess
    uids: dict[tuple[str, str], str]  # (cluster, work name) -> the work's UID at the source
    folder: Path
    config: Path
    spoke_paths: dict[str, Path]
    starts: int = 1

    async def stop_agents(self) -> None:
        """Both agents down (SIGTERM) once ours has subscribed; ours must end cleanly."""

        async def subscribed() -> bool:
            return '"event": "subscribed"' in self.our_agent.log()

        await eventually(subscribed, what="our agent to subscribe")
        await self.ocm_agent.stop()
        code = await self.our_agent.terminate()
        assert code == 0, self.our_agent.log()[-3000:]

    async def start_agents(self) -> None:
        """Both agents again, with the flags they had."""
        self.starts += 1
        self.ocm_agent, self.our_agent = await start_agents(
            self.folder / f"start-{self.starts}", self.config, self.spoke_paths
        )
        self.hub.processes[:] = [self.ocm_agent]


async def start_agents(
    folder: Path, config: Path, spoke_paths: dict[str, Path]
) -> tuple[Peer, ProgramProcess]:
    """OCM's agent for its cluster and ours for its, both on the mqtt ``config``."""
    folder.mkdir(parents=True, exist_ok=True)
    peer = start_ocm_agent(
        folder / OCM, cluster=OCM, source=flags(OCM, config), spoke_kubeconfig=spoke_paths[OCM]
    )
    process = await start_our_agent(
        folder, cluster=OURS, source=flags(OURS, config), spoke_kubeconfig=spoke_paths[OURS]
    )
    return peer, process


def flags(cluster: str, config: Path) -> tuple[str, ...]:
    """The Klusterlet's CloudEvents flags for ``cluster`` on the mqtt driver."""
    return (
        "--workload-source-driver=mqtt",
        f"--workload-source-config={config}",
        f"--cloudevents-client-id={cluster}-work-agent",
    )


@pytest.fixture
async def mqtt(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Mqtt]:
    """Both agents subscribed to one broker, each with its managed cluster."""
    broker = Mosquitto(tmp_path)
    await broker.start()
    source = MqttWorkSource("127.0.0.1", broker.port)
    config = tmp_path / "mqtt.yaml"
    config.write_text(yaml.safe_dump({"brokerHost": broker.host, "topics": topics()}))
    try:
        await source.start()
        async with (
            spoke_side(realkube_pool, tmp_path, OCM) as (ocm, ocm_path),
            spoke_side(realkube_pool, tmp_path, OURS) as (ours, ours_path),
        ):
            ocm.hub_hash = ours.hub_hash = hub_hash(broker.host)
            paths = {OCM: ocm_path, OURS: ours_path}
            peer, process = await start_agents(tmp_path, config, paths)
            hub = Hub(ocm.spoke, ocm, ours, [peer], "mqtt")
            mqtt = Mqtt(hub, source, peer, process, {}, tmp_path, config, paths)
            try:
                yield mqtt
            finally:
                await mqtt.ocm_agent.stop()
                with contextlib.suppress(Exception):
                    await mqtt.our_agent.terminate()
    finally:
        await source.stop()
        await broker.stop()


def as_work(name: str, case: Case, update: StatusUpdate | None) -> dict[str, Any] | None:
    """The work the source holds, with the status an agent last reported for it."""
    if update is None:
        return None
    return {
        "metadata": {"name": name, "generation": update.generation},
        "spec": {"workload": {"manifests": case.manifests}},
        "status": update.status(),
    }


def event_shape(topic: str, event: CloudEvent, cluster: str) -> dict[str, Any]:
    """A status event's attributes and extensions as comparable across the two clusters:
    the cluster read as ``<cluster>``, ids and hashes by their shape."""
    extensions = dict(event.extensions)
    shaped: dict[str, Any] = {}
    for key, value in sorted(extensions.items()):
        text = str(value)
        if key in ("resourceid", "statushash"):
            shaped[key] = "<set>" if text else ""
        elif key == "sequenceid":
            shaped[key] = "<digits>" if DIGITS.match(text) else text
        else:  # the metadata JSON names the work's own UID and, in a resync answer, the
            # agent cache's resourceVersion (a counter of its own)
            text = RESOURCE_VERSION.sub('"resourceVersion":"<digits>"', text)
            text = TIME.sub('"<time>"', text)  # the source's deletion times differ
            shaped[key] = UID.sub("<uid>", text.replace(cluster, "<cluster>"))
    return {
        "topic": topic.replace(cluster, "<cluster>"),
        "type": event.type,
        "source": event.source.replace(cluster, "<cluster>"),
        "specversion": event.spec_version,
        "datacontenttype": event.data_content_type,
        "dataschema": event.data_schema,
        "subject": event.subject,
        "has_time": event.time is not None,
        "extensions": shaped,
    }


async def compare_statuses(mqtt: Mqtt, cases: dict[str, Case]) -> None:
    """Each work's last reported status is settled on both sides and the same."""
    for name, case in cases.items():

        async def reported(side: Side, name: str = name, case: Case = case) -> Any:
            return as_work(name, case, mqtt.source.last_status(mqtt.uids[(side.cluster, name)]))

        def comparable(work: Any, case: Case = case) -> Any:
            return None if work is None else comparable_work(work, case.wording)["status"]

        def ready(work: Any, case: Case = case) -> bool:
            return work is not None and settled(work, case)

        await same_on_both(mqtt.hub, f"the status of {name!r}", reported, comparable, ready=ready)


def compare_last_events(mqtt: Mqtt, names: list[str], since: int = 0) -> None:
    """The last status event of each work (after the first ``since`` events) has the same
    attributes, extensions and topic on both sides."""
    for name in names:
        shapes = []
        for side in mqtt.hub.sides:
            uid = mqtt.uids[(side.cluster, name)]
            events = [
                (t, e)
                for t, e in mqtt.source.status_events[since:]
                if e.extensions.get("resourceid") == uid
            ]
            assert events, (side.cluster, name)
            shapes.append(event_shape(*events[-1], side.cluster))
        assert shapes[0] == shapes[1], f"{name}:\n{diff(shapes[0], shapes[1])}"


async def test_same_works_same_status_events(mqtt: Mqtt) -> None:
    hub, source = mqtt.hub, mqtt.source
    for name in NAMES:
        case = CASES[name]
        for side in hub.sides:
            uid = await source.create(
                side.cluster, name, copy.deepcopy(case.manifests), **copy.deepcopy(case.spec)
            )
            mqtt.uids[(side.cluster, name)] = uid
    await compare_statuses(mqtt, {name: CASES[name] for name in NAMES})
    compare_last_events(mqtt, NAMES)
    await compare_applied(hub, NAMES)

    # A new generation.
    changed = Case([configmap("plain-cm", a="2")])
    for side in hub.sides:
        await source.update(mqtt.uids[(side.cluster, "plain")], copy.deepcopy(changed.manifests))
    await compare_statuses(mqtt, {"plain": changed})
    compare_last_events(mqtt, ["plain"])
    await compare_applied(hub, ["plain"])

    # The source asks every agent for every status: both answer alike.
    since = len(source.status_events)
    await source.request_statuses()

    async def answered(side: Side) -> Any:
        uids = {mqtt.uids[(side.cluster, name)] for name in NAMES}
        seen = {e.extensions.get("resourceid") for _, e in source.status_events[since:]}
        return sorted(uids - seen) or None

    await same_on_both(
        hub, "the answers to a status resync", answered, lambda v: v, ready=lambda v: v is None
    )
    compare_last_events(mqtt, NAMES, since)

    # Deletion: both report Deleting, clean up and confirm with a Deleted status.
    before_delete: dict[str, int] = {}
    for side in hub.sides:
        uid = mqtt.uids[(side.cluster, "plain")]
        before_delete[side.cluster] = len(source.statuses[uid])
        await source.delete(uid)

    async def confirmed(side: Side) -> Any:
        return mqtt.uids[(side.cluster, "plain")] in source.works or None

    await same_on_both(hub, "the deletion confirmed", confirmed, bool, ready=lambda v: v is None)
    compare_last_events(mqtt, ["plain"])
    shapes = []
    for side in hub.sides:  # the confirmation's conditions, the cluster's name read as such
        uid = mqtt.uids[(side.cluster, "plain")]
        update = source.last_status(uid)
        assert update is not None and update.deleted, side.cluster
        # Before the confirmation, a status with Deleting and not yet Deleted.
        first = next(
            (
                u
                for u in source.statuses[uid][before_delete[side.cluster] :]
                if "Deleting" in {c["type"] for c in u.conditions}
            ),
            None,
        )
        assert first is not None and not first.deleted, (side.cluster, first)
        pair = [_strip_times(first.conditions), _strip_times(update.conditions)]
        text = json.dumps(pair).replace(side.cluster, "<cluster>")
        shapes.append(json.loads(text))
    assert shapes[0] == shapes[1], diff(shapes[0], shapes[1])


async def test_an_agent_restart_keeps_works_and_sends_their_status_again(mqtt: Mqtt) -> None:
    # MQTT sessions start clean: what the source publishes while the agents are down is
    # lost, and the agents' caches are gone. The spec resync after the restart (an empty
    # list) brings every work back; nothing applied is deleted on the way.
    hub, source = mqtt.hub, mqtt.source
    steady = Case([configmap("steady-cm", a="1")])
    cases = {"plain": CASES["plain"], "steady": steady, "doomed": Case([configmap("doomed-cm")])}
    for name, case in cases.items():
        for side in hub.sides:
            uid = await source.create(
                side.cluster, name, copy.deepcopy(case.manifests), **copy.deepcopy(case.spec)
            )
            mqtt.uids[(side.cluster, name)] = uid
    await compare_statuses(mqtt, cases)
    await compare_applied(hub, list(cases))
    before = {side.cluster: await steady_uid(side) for side in hub.sides}

    await mqtt.stop_agents()
    changed = Case([configmap("plain-cm", a="2")])
    created = Case([configmap("created-cm", a="1")])
    for side in hub.sides:  # all lost on the broker: nobody listens
        await source.update(mqtt.uids[(side.cluster, "plain")], copy.deepcopy(changed.manifests))
        await source.delete(mqtt.uids[(side.cluster, "doomed")])
        mqtt.uids[(side.cluster, "created")] = await source.create(
            side.cluster, "created", copy.deepcopy(created.manifests)
        )
    since = len(source.status_events)
    await mqtt.start_agents()

    after = {"plain": changed, "steady": steady, "created": created}
    await compare_statuses(mqtt, after)
    await compare_applied(hub, list(after))

    async def resent(side: Side) -> Any:
        """The works whose status has not come again since the restart (None: all)."""
        seen = {e.extensions.get("resourceid") for _, e in source.status_events[since:]}
        missing = [n for n in after if mqtt.uids[(side.cluster, n)] not in seen]
        return missing or None

    await same_on_both(hub, "statuses sent again", resent, lambda v: v, ready=lambda v: v is None)

    async def doomed(side: Side) -> Any:
        """What is left of the work deleted while the agents were down (None: nothing)."""
        held = mqtt.uids[(side.cluster, "doomed")] in source.works
        applied = await applied_work(side, "doomed")
        return {"held": held, "applied": applied is not None} if held or applied else None

    await same_on_both(hub, "the deleted work gone", doomed, lambda v: v, ready=lambda v: v is None)
    # The unchanged work's object was neither deleted nor created again.
    assert {side.cluster: await steady_uid(side) for side in hub.sides} == before


async def steady_uid(side: Side) -> str:
    """The UID of the steady work's ConfigMap on ``side``'s cluster."""
    cm = await side.spoke.get(CONFIGMAPS, "steady-cm", NS)
    return str(cm["metadata"]["uid"])


async def test_shared_subscriptions(mqtt: Mqtt) -> None:
    # Every topic in one `$share` group (both agents in it, each for its own cluster).
    # Ours subscribes with the prefix, publishes without it (a `$share` topic is no
    # topic to publish to), applies its work and reports it. OCM v1.2.1's agent keeps
    # the prefix when publishing: mosquitto refuses its spec resync request
    # ("not authorized"), and it receives no spec event at all (docs/cloudevents.md).
    source = mqtt.source
    await mqtt.stop_agents()
    shared = {key: f"$share/agents/{topic}" for key, topic in topics().items()}
    broker = f"127.0.0.1:{source.port}"
    mqtt.config.write_text(yaml.safe_dump({"brokerHost": broker, "topics": shared}))
    await mqtt.start_agents()
    case = Case([configmap("shared-cm", a="1")])
    uid = await source.create(OURS, "shared", copy.deepcopy(case.manifests))
    await source.create(OCM, "shared", copy.deepcopy(case.manifests))

    async def reported() -> bool:
        update = source.last_status(uid)
        return update is not None and update.generation == 1 and bool(update.conditions)

    await eventually(reported, timeout=60, what="our agent's status through $share topics")
    topic = next(t for t, e in source.status_events if e.extensions.get("resourceid") == uid)
    assert topic == f"sources/maestro/consumers/{OURS}/agentevents"

    # A broadcast status resync reaches one subscriber of the share group at a time
    # (mosquitto takes turns): of four, ours gets some.
    since = len(source.status_events)
    for _ in range(4):
        await source.request_statuses()

    async def answered() -> bool:
        return any(
            e.type.endswith("status.resync_response") for _, e in source.status_events[since:]
        )

    await eventually(answered, timeout=60, what="our agent to answer a shared status resync")

    async def refused() -> bool:
        return "error publishing: The PUBLISH is not authorized" in mqtt.ocm_agent.log()

    await eventually(refused, what="OCM's agent's resync request refused by the broker")
