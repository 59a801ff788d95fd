"""Our agent on the mqtt driver, through a real Mosquitto broker, fed by a test source."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from ocmkit.cloudevents.works import status_hash
from ocmkit.kube import APPLIED_MANIFESTWORKS, CONFIGMAPS, KubeClient, NotFound
from tests.cloudevents.conftest import CLIENT_ID, klusterlet_args, subscribed_agent, wait_subscribed
from tests.cloudevents.mqttbroker import Mosquitto
from tests.cloudevents.mqttsource import MqttWorkSource, topics
from tests.cloudevents.pki import CertificateAuthority, Pair
from tests.conftest import eventually
from tests.integration.conftest import (
    configmap,
    exists,
)
from tests.support.processes import free_port, start_agent_process
from tests.support.programs import CLUSTER, AgentRunner, agent_settings
from workagent.identity import applied_work_name, hub_hash
from workagent.sources import mqttdriver
from workagent.sources.transport import SubscriptionFailed


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Mosquitto]:
    """Mosquitto on 127.0.0.1 and a free port."""
    mosquitto = Mosquitto(tmp_path)
    await mosquitto.start()
    try:
        yield mosquitto
    finally:
        await mosquitto.stop()


@pytest.fixture
async def source(broker: Mosquitto) -> AsyncIterator[MqttWorkSource]:
    """The test's work source, connected to the broker."""
    src = MqttWorkSource("127.0.0.1", broker.port)
    await src.start()
    try:
        yield src
    finally:
        await src.stop()


def mqtt_config(tmp_path: Path, broker: Mosquitto) -> Path:
    """The agent's ``--workload-source-config`` for the mqtt driver."""
    path = tmp_path / "mqtt.yaml"
    path.write_text(
        yaml.safe_dump({"brokerHost": broker.host, "keepAlive": 10, "topics": topics()})
    )
    return path


@pytest.fixture
async def mqtt_agent(
    broker: Mosquitto, source: MqttWorkSource, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """cluster1's agent on the mqtt driver."""
    settings = replace(
        agent_settings(tmp_path),
        workload_source_driver="mqtt",
        hub_kubeconfig=str(mqtt_config(tmp_path, broker)),
        cloudevents_client_id=CLIENT_ID,
        cloudevents_reconnect_seconds=0.2,
    )
    async with subscribed_agent(settings) as runner:
        yield runner


async def wait_condition(source: MqttWorkSource, uid: str, ctype: str, generation: int = 1) -> None:
    """Until the source has a status of ``uid`` with ``ctype`` True for ``generation``."""

    async def reported() -> bool:
        update = source.last_status(uid)
        if update is None or update.generation != generation:
            return False
        return any(c.get("type") == ctype and c.get("status") == "True" for c in update.conditions)

    await eventually(reported, what=f"{ctype}=True reported for generation {generation}")


async def cm_value(client: KubeClient, name: str) -> str | None:
    """The ``key`` of ConfigMap ``name`` (None when absent)."""
    try:  # one read: the agent may delete it between an existence check and a GET
        obj = await client.get(CONFIGMAPS, name, "default")
    except NotFound:
        return None
    value = (obj.get("data") or {}).get("key")
    return str(value) if value is not None else None


async def test_klusterlet_style_mqtt_agent_applies_updates_and_deletes(
    broker: Mosquitto,
    source: MqttWorkSource,
    spoke: Any,
    spoke_client: KubeClient,
    tmp_path: Path,
) -> None:
    config = mqtt_config(tmp_path, broker)
    process = await start_agent_process(tmp_path, *klusterlet_args("mqtt", config, tmp_path))
    try:
        # Most likely published before the agent subscribed (it is still starting):
        # then the agent's spec resync request brings the work.
        uid = await source.create(CLUSTER, "work1", [configmap("mq", key="v1")])

        async def value_is(expected: str | None) -> bool:
            return await cm_value(spoke_client, "mq") == expected

        await eventually(lambda: value_is("v1"), what="the ConfigMap applied", timeout=60)
        await wait_condition(source, uid, "Applied")
        amw = applied_work_name(hub_hash(broker.host), "work1")
        assert await exists(spoke_client, APPLIED_MANIFESTWORKS, amw)
        update = source.last_status(uid)
        assert update is not None and update.sequence_id.isdigit()
        await source.update(uid, [configmap("mq", key="v2")])
        await eventually(lambda: value_is("v2"), what="the ConfigMap updated")
        await wait_condition(source, uid, "Applied", generation=2)
        await source.delete(uid)
        await eventually(lambda: value_is(None), what="the ConfigMap deleted")

        async def confirmed() -> bool:
            return uid not in source.works

        await eventually(confirmed, what="the deletion confirmed to the source")
        update = source.last_status(uid)
        assert update is not None
        (deleted,) = [c for c in update.conditions if c["type"] == "Deleted"]
        # As sdk-go writes it: no observedGeneration.
        assert sorted(deleted) == ["lastTransitionTime", "message", "reason", "status", "type"]
        assert (deleted["reason"], deleted["message"]) == (
            "ManifestsDeleted",
            f"The manifests are deleted from the cluster {CLUSTER}",
        )
    finally:
        code = await process.terminate()
    assert code == 0, process.log()


async def test_broker_restart_converges_through_resync(
    mqtt_agent: AgentRunner,
    broker: Mosquitto,
    source: MqttWorkSource,
    spoke_client: KubeClient,
) -> None:
    uid = await source.create(CLUSTER, "work1", [configmap("mq", key="v1")])
    await wait_condition(source, uid, "Applied")
    await broker.restart()
    # Changed while the agent is away: the event is lost, the resync finds it.
    await source.update(uid, [configmap("mq", key="v2")], publish=False)
    await source.wait_connected()
    await wait_subscribed(mqtt_agent, at_least=2)

    async def converged() -> bool:
        return await cm_value(spoke_client, "mq") == "v2"

    await eventually(converged, what="the update applied after the broker restart")
    await wait_condition(source, uid, "Applied", generation=2)


async def test_status_resync_request_is_answered(
    mqtt_agent: AgentRunner, source: MqttWorkSource
) -> None:
    uid = await source.create(CLUSTER, "work1", [configmap("mq")])
    await wait_condition(source, uid, "Applied")

    async def available() -> bool:
        update = source.last_status(uid)
        return update is not None and any(c.get("type") == "Available" for c in update.conditions)

    await eventually(available, what="Available reported")
    before = len(source.statuses[uid])
    await source.request_statuses()

    async def answered() -> bool:
        updates = source.statuses[uid][before:]
        return any(u.action == "resync_response" for u in updates)

    await eventually(answered, what="a status.resync_response")
    last = source.statuses[uid][-1]
    assert last.status_hash == status_hash(last.status())
    # The source's hash matches the agent's: nothing is sent for it. A stale hash
    # asked next is answered, and is then the only answer since.
    count = len(source.statuses[uid])
    await source.request_statuses({uid: last.status_hash})
    await source.request_statuses({uid: "stale"})

    async def answered_again() -> bool:
        return len(source.statuses[uid]) > count

    await eventually(answered_again, what="the stale hash answered")
    # (Status changes of the work itself would be update_requests: not counted.)
    newer = [u.action for u in source.statuses[uid][count:] if u.action == "resync_response"]
    assert newer == ["resync_response"], newer


async def test_a_resourceversion_outside_int32_is_dropped_as_ocms_agent_drops_it(
    mqtt_agent: AgentRunner, source: MqttWorkSource, spoke_client: KubeClient
) -> None:
    # OCM's agent: "cannot convert "3000000000" to int32: out of range", work dropped.
    big = str(uuid.uuid4())
    source.works[big] = {
        "metadata": {"name": "big", "namespace": CLUSTER, "uid": big, "generation": 3_000_000_000},
        "spec": {"workload": {"manifests": [configmap("big-cm")]}},
    }
    await source.publish(source.works[big], "create_request")
    # Published after it on the same topic: once this one is applied, the big one
    # has been handled (MQTT keeps one publisher's order; the agent reads in order).
    uid = await source.create(CLUSTER, "work1", [configmap("mq")])
    await wait_condition(source, uid, "Applied")
    assert mqtt_agent.agent is not None
    store: Any = mqtt_agent.agent.deps.hub
    assert [w["metadata"]["uid"] for w in store.works()] == [uid]
    assert big not in source.statuses
    assert not await exists(spoke_client, CONFIGMAPS, "big-cm", "default")


async def test_deletion_reports_deleting_before_the_deleted_confirmation(
    mqtt_agent: AgentRunner, source: MqttWorkSource, spoke_client: KubeClient
) -> None:
    # As OCM's agent (agent.md 8.1, cloudevents.md 4.6): [..., Deleting], then
    # [..., Deleting, Deleted], even when the clean-up is immediate.
    uid = await source.create(CLUSTER, "work1", [configmap("mq")])
    await wait_condition(source, uid, "Applied")
    since = len(source.statuses[uid])
    await source.delete(uid)

    async def confirmed() -> bool:
        return uid not in source.works

    await eventually(confirmed, what="the deletion confirmed to the source")
    assert not await exists(spoke_client, CONFIGMAPS, "mq", "default")
    updates = source.statuses[uid][since:]
    types = [[c["type"] for c in u.conditions] for u in updates]
    with_deleting = [i for i, t in enumerate(types) if "Deleting" in t]
    with_deleted = [i for i, t in enumerate(types) if "Deleted" in t]
    assert with_deleting and with_deleted, types
    first_deleting, first_deleted = with_deleting[0], with_deleted[0]
    assert first_deleting < first_deleted, types
    assert "Deleting" in types[first_deleted], types
    (deleting,) = [c for c in updates[first_deleting].conditions if c["type"] == "Deleting"]
    assert {k: v for k, v in deleting.items() if k != "lastTransitionTime"} == {
        "type": "Deleting",
        "status": "True",
        "reason": "WorkDeleting",
        "message": "ManifestWork is being deleted",
        "observedGeneration": 1,
    }


async def test_a_deletion_of_a_work_never_received_is_confirmed_without_deleting(
    mqtt_agent: AgentRunner, source: MqttWorkSource
) -> None:
    # OCM's server repeats a delete_request after the confirmation (cloudevents.md 4.6);
    # OCM's agent answers a deletion of a work it does not hold with one Deleted status:
    # no AppliedManifestWork to delete, so no Deleting first (agent.md 8.1).
    gone = str(uuid.uuid4())
    source.works[gone] = {
        "metadata": {"name": "gone", "namespace": CLUSTER, "uid": gone, "generation": 2},
        "spec": {"workload": {"manifests": [configmap("gone-cm")]}},
    }
    await source.delete(gone)
    # Published after it: once this work is applied, the deletion was handled and confirmed.
    uid = await source.create(CLUSTER, "work1", [configmap("mq")])
    await wait_condition(source, uid, "Applied")

    async def confirmed() -> bool:
        return gone not in source.works

    await eventually(confirmed, what="the deletion confirmed to the source")
    types = [[c["type"] for c in u.conditions] for u in source.statuses[gone]]
    assert types == [["Deleted"]], types


AGENT_READS = (
    "topic read sources/maestro/consumers/+/sourceevents\ntopic read sources/+/sourcebroadcast\n"
)
AGENT_WRITES = "topic write sources/maestro/consumers/+/agentevents\n"


async def test_a_status_the_broker_refuses_is_sent_again_once_allowed(
    source: MqttWorkSource, spoke_client: KubeClient, tmp_path: Path
) -> None:
    # The broker's ACL lets the agent (user "agent") subscribe but not publish: mosquitto
    # answers each QoS 1 PUBLISH with PUBACK "Not authorized". aiomqtt alone took that
    # for a delivery, so the status was stored as sent and never sent again.
    acl = tmp_path / "acl"
    acl.write_text(f"topic readwrite #\nuser agent\n{AGENT_READS}")  # anonymous: the source
    # user root: mosquitto started as root reads the ACL after dropping to its own
    # user, who cannot enter pytest's folders (no effect when not started as root).
    broker = Mosquitto(tmp_path / "acl-broker", extra=f"user root\nlog_type all\nacl_file {acl}\n")
    broker.directory.mkdir()
    await broker.start()
    try:
        await _refused_then_allowed(broker, acl, spoke_client, tmp_path)
    finally:
        await broker.stop()


async def _refused_then_allowed(
    broker: Mosquitto, acl: Path, spoke_client: KubeClient, tmp_path: Path
) -> None:
    source = MqttWorkSource("127.0.0.1", broker.port)
    await source.start()
    config = tmp_path / "mqtt.yaml"
    config.write_text(
        yaml.safe_dump(
            {"brokerHost": broker.host, "username": "agent", "keepAlive": 10, "topics": topics()}
        )
    )
    settings = replace(
        agent_settings(tmp_path),
        workload_source_driver="mqtt",
        hub_kubeconfig=str(config),
        cloudevents_client_id=CLIENT_ID,
        cloudevents_reconnect_seconds=0.2,
    )
    try:
        async with subscribed_agent(settings) as runner:
            uid = await source.create(CLUSTER, "work1", [configmap("mq", key="v1")])

            async def applied() -> bool:
                return await cm_value(spoke_client, "mq") == "v1"

            await eventually(applied, what="the ConfigMap applied")

            async def status_refused() -> bool:
                return f"Denied PUBLISH from {CLIENT_ID}-client" in broker.log() and (
                    "/agentevents" in broker.log()
                )

            await eventually(status_refused, what="the broker to refuse a status event")
            assert source.last_status(uid) is None
            service = runner.agent.manager.services[0] if runner.agent else None
            assert getattr(service, "resync_refusals", 0) >= 1  # asked again, not lost
            acl.write_text(f"topic readwrite #\nuser agent\n{AGENT_READS}{AGENT_WRITES}")
            broker.reload()
            # Nothing changed on the work: only a retry of the refused publish sends it.
            await wait_condition(source, uid, "Applied")
    finally:
        await source.stop()


async def test_a_refused_subscription_fails_the_subscription(
    broker: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mosquitto 2.0 grants every subscription and filters on delivery; other brokers
    # answer SUBACK "Not authorized", which left the agent "subscribed" and deaf.
    async def refuse(self: Any, topic: str, qos: int = 0, **_: Any) -> list[ReasonCode]:
        return [ReasonCode(PacketTypes.SUBACK, "Not authorized")]

    monkeypatch.setattr(mqttdriver._Client, "subscribe", refuse)
    transport = mqttdriver.MqttTransport(str(mqtt_config(tmp_path, broker)), CLUSTER, CLIENT_ID)
    expected = "refused the subscription to 'sources/maestro/consumers/cluster1/sourceevents'"
    with pytest.raises(SubscriptionFailed, match=f"{expected}: Not authorized"):
        async with transport.subscription():
            pass


@dataclass
class TlsBroker:
    """A broker with a plain listener (the test source's) and a TLS one that wants a
    client certificate of ``ca`` (the agent's)."""

    broker: Mosquitto
    tls_port: int
    ca: CertificateAuthority


@pytest.fixture
async def tls_broker(tmp_path: Path) -> AsyncIterator[TlsBroker]:
    """Mosquitto with a mutual-TLS listener beside the plain one."""
    ca = CertificateAuthority(tmp_path / "pki", "broker-ca")
    server = ca.issue("broker", common_name="broker", server=True)
    tls_port = free_port()
    mosquitto = Mosquitto(
        tmp_path / "tls-broker",
        # user root: as for the ACL broker, the files stay readable after the
        # broker drops its privileges.
        extra=(
            f"user root\nlistener {tls_port} 127.0.0.1\ncafile {ca.ca_file}\n"
            f"certfile {server.cert}\nkeyfile {server.key}\nrequire_certificate true\n"
        ),
    )
    mosquitto.directory.mkdir()
    await mosquitto.start()
    try:
        yield TlsBroker(mosquitto, tls_port, ca)
    finally:
        await mosquitto.stop()


def tls_config(tmp_path: Path, tls: TlsBroker, client: Pair) -> Path:
    """An mqtt driver config for the TLS listener with this client certificate pair."""
    path = tmp_path / "mqtt-tls.yaml"
    doc = {
        "brokerHost": f"127.0.0.1:{tls.tls_port}",
        "caFile": str(tls.ca.ca_file),
        "clientCertFile": str(client.cert),
        "clientKeyFile": str(client.key),
        "topics": topics(),
    }
    path.write_text(yaml.safe_dump(doc))
    return path


async def test_an_agent_with_a_client_certificate_gets_its_works_over_tls(
    tls_broker: TlsBroker, spoke_client: KubeClient, tmp_path: Path
) -> None:
    client = tls_broker.ca.issue("agent", common_name="cluster1-work-agent")
    settings = replace(
        agent_settings(tmp_path),
        workload_source_driver="mqtt",
        hub_kubeconfig=str(tls_config(tmp_path, tls_broker, client)),
        cloudevents_client_id=CLIENT_ID,
    )
    source = MqttWorkSource("127.0.0.1", tls_broker.broker.port)
    await source.start()
    try:
        async with subscribed_agent(settings):
            uid = await source.create(CLUSTER, "tls-work", [configmap("over-tls", key="v1")])
            await eventually(
                lambda: _value_is(spoke_client, "over-tls", "v1"), what="the ConfigMap applied"
            )
            await wait_condition(source, uid, "Applied")
    finally:
        await source.stop()
    # The agent came through the TLS listener (the source through the plain one).
    assert "New connection from 127.0.0.1:" in tls_broker.broker.log()
    assert f"on port {tls_broker.tls_port}." in tls_broker.broker.log()


async def _value_is(client: KubeClient, name: str, expected: str) -> bool:
    return await cm_value(client, name) == expected


async def test_a_client_certificate_the_broker_does_not_trust_fails_naming_the_cause(
    tls_broker: TlsBroker, tmp_path: Path
) -> None:
    # aiomqtt ignored the connection lost before CONNACK: the agent waited out
    # dialTimeout (60 s) at start and on every reconnect, then said only
    # "Operation timed out". OCM's agent fails at once, naming the TLS alert.
    stranger = CertificateAuthority(tmp_path / "other-pki", "other-ca")
    client = stranger.issue("agent", common_name="cluster1-work-agent")
    config = str(tls_config(tmp_path, tls_broker, client))
    transport = mqttdriver.MqttTransport(config, CLUSTER, CLIENT_ID)
    cause = "connection lost before the broker answered: .*unknown ca"
    with pytest.raises(ValueError, match=f"^cannot connect to the MQTT broker .*: {cause}"):
        await transport.check()
    with pytest.raises(SubscriptionFailed, match=f"^mqtt: {cause}"):
        async with transport.subscription():
            pass


async def test_a_rotated_client_certificate_reconnects_with_the_new_pair(
    tls_broker: TlsBroker, tmp_path: Path
) -> None:
    # As OCM's agent: the files are checked (every 5 min; here 0.1 s) and a change
    # ends the connection, so the next one presents the new pair before the old expires.
    client = tls_broker.ca.issue("agent", common_name="cluster1-work-agent")
    transport = mqttdriver.MqttTransport(
        str(tls_config(tmp_path, tls_broker, client)), CLUSTER, CLIENT_ID
    )
    transport.cert_check_seconds = 0.1
    with pytest.raises(SubscriptionFailed, match=r"^the client certificate changed$"):
        async with transport.subscription() as events:
            tls_broker.ca.issue("agent", common_name="cluster1-work-agent")
            async with asyncio.timeout(30):  # a hang guard: the check runs every 0.1 s
                async for _ in events:
                    pass
    async with transport.subscription():
        pass
    assert tls_broker.broker.log().count(f"as {CLIENT_ID}-client") == 2


def password_file(path: Path, user: str, password: str) -> Path:
    """A mosquitto password file with one user."""
    path.write_text("")
    subprocess.run(["mosquitto_passwd", "-b", str(path), user, password], check=True)
    return path


async def test_username_and_password_are_sent_and_a_wrong_password_is_named(
    tmp_path: Path,
) -> None:
    passwords = password_file(tmp_path / "passwd", "agent", "s3cret")
    broker = Mosquitto(tmp_path / "pw-broker", extra=f"user root\npassword_file {passwords}\n")
    broker.directory.mkdir()
    await broker.start()
    try:
        for password in ("s3cret", "wrong"):
            path = tmp_path / f"mqtt-{password}.yaml"
            doc = {"brokerHost": broker.host, "username": "agent", "password": password}
            path.write_text(yaml.safe_dump({**doc, "topics": topics()}))
            transport = mqttdriver.MqttTransport(str(path), CLUSTER, CLIENT_ID)
            if password == "wrong":
                with pytest.raises(ValueError, match=r": \[code:135\] Not authorized$"):
                    await transport.check()
            else:
                await transport.check()
        assert f"as {CLIENT_ID}-client (p5, c1, k60, u'agent')" in broker.log()
    finally:
        await broker.stop()
