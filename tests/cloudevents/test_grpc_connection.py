"""The grpc driver's connection upkeep: heartbeats, a silent server, rotated client certificates."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from dataclasses import replace
from pathlib import Path

import grpc

from hubcontroller.grpcserver.broker import CloudEventBroker, Subscriber
from ocmkit.cloudevents import MANIFEST_BUNDLES
from ocmkit.cloudevents.pb.cloudevent_pb2 import SubscriptionRequest
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceStub
from ocmkit.cloudevents.protobuf import is_heartbeat
from ocmkit.kube import MANIFESTWORKS, KubeClient
from tests.cloudevents.conftest import (
    AGENT_GROUP,
    AGENT_USER,
    GrpcHub,
    Pki,
    grpc_agent_settings,
    wait_subscribed,
    write_agent_config,
)
from tests.integration.conftest import work_body
from tests.support.manifests import configmap
from tests.support.programs import CLUSTER, AgentRunner
from workagent.sources.grpcdriver import GrpcTransport
from workagent.sources.transport import SubscriptionFailed


async def test_the_server_sends_heartbeats_between_events(hub_client: KubeClient) -> None:
    broker = CloudEventBroker(hub_client, heartbeat_interval=0.05)
    sub = Subscriber("s1", CLUSTER)
    stream = broker._stream(sub)
    first = await asyncio.wait_for(anext(stream), 5)
    assert is_heartbeat(first)
    assert not first.attributes  # a heartbeat carries no attributes
    await stream.aclose()


async def test_a_silent_server_is_abandoned_after_the_healthiness_timeout(
    grpc_hub: GrpcHub, spoke_client: KubeClient, pki: Pki, tmp_path: Path
) -> None:
    grpc_hub.settings = replace(grpc_hub.settings, heartbeat_disabled=True)
    await grpc_hub.restart()
    config = write_agent_config(
        tmp_path / "silent.yaml", grpc_hub.url, pki, serverHealthinessTimeout="1s"
    )
    async with AgentRunner(grpc_agent_settings(tmp_path, config)) as runner:
        # No heartbeat ever comes: the agent reconnects (and resyncs) on its own.
        await wait_subscribed(runner, at_least=2)


async def test_spec_events_without_heartbeats_do_not_keep_the_server_healthy(
    grpc_hub: GrpcHub, hub_client: KubeClient, spoke_client: KubeClient, pki: Pki, tmp_path: Path
) -> None:
    grpc_hub.settings = replace(grpc_hub.settings, heartbeat_disabled=True)
    await grpc_hub.restart()
    config = write_agent_config(
        tmp_path / "busy.yaml", grpc_hub.url, pki, serverHealthinessTimeout="1s"
    )
    await hub_client.create(MANIFESTWORKS, work_body("busy", [configmap("busy", n="0")]))

    async def keep_changing() -> None:
        # A spec event about every 0.2 s, far more often than the timeout.
        for n in itertools.count(1):
            await hub_client.patch(
                MANIFESTWORKS,
                "busy",
                {"spec": {"workload": {"manifests": [configmap("busy", n=str(n))]}}},
                CLUSTER,
            )
            await asyncio.sleep(0.2)

    async with AgentRunner(grpc_agent_settings(tmp_path, config)) as runner:
        changes = asyncio.create_task(keep_changing())
        try:
            # Events keep coming, heartbeats never: the agent still reconnects.
            await wait_subscribed(runner, at_least=3)
        finally:
            changes.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await changes


async def test_a_rotated_client_certificate_reconnects(
    grpc_hub: GrpcHub, pki: Pki, tmp_path: Path
) -> None:
    config = write_agent_config(tmp_path / "rotating.yaml", grpc_hub.url, pki)
    transport = GrpcTransport(str(config), CLUSTER)
    transport.cert_check_seconds = 0.1
    async with transport.subscription() as events:
        pki.ca.issue("agent", common_name=AGENT_USER, organizations=(AGENT_GROUP,))
        try:
            async with asyncio.timeout(10):
                async for _ in events:
                    pass
        except SubscriptionFailed as err:
            assert "client certificate changed" in str(err)
        else:
            raise AssertionError("the subscription outlived the rotation")
    # The next subscription reads the new pair and is accepted.
    async with transport.subscription():
        pass


async def test_a_keepalive_time_below_10s_does_not_cost_the_subscription(
    grpc_hub: GrpcHub, pki: Pki, tmp_path: Path
) -> None:
    # Pinging every second, the client would get GOAWAY too_many_pings from our server
    # (5 s minimum, two strikes) seconds after subscribing, before its first heartbeat
    # (every 10 s). The transport's channel options ping at most every 10 s, as grpc-go.
    config = write_agent_config(
        tmp_path / "pings.yaml",
        grpc_hub.url,
        pki,
        keepAliveConfig={
            "enable": True,
            "time": "1s",
            "timeout": "1s",
            "permitWithoutStream": True,
        },
    )
    transport = GrpcTransport(str(config), CLUSTER)
    creds = grpc.ssl_channel_credentials(
        pki.ca.ca_file.read_bytes(), pki.agent.key.read_bytes(), pki.agent.cert.read_bytes()
    )
    async with grpc.aio.secure_channel(
        grpc_hub.url, creds, options=transport.channel_options()
    ) as channel:
        call = CloudEventServiceStub(channel).Subscribe(
            SubscriptionRequest(cluster_name=CLUSTER, data_type=MANIFEST_BUNDLES)
        )
        async with asyncio.timeout(60):
            async for message in call:
                if is_heartbeat(message):
                    break  # the stream outlived several of the client's pings
        call.cancel()
