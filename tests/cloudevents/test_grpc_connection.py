"""The grpc driver's connection upkeep: heartbeats, a silent server, rotated client certificates."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from hubcontroller.grpcserver.broker import CloudEventBroker, Subscriber
from ocmkit.cloudevents.protobuf import is_heartbeat
from ocmkit.kube import KubeClient
from tests.cloudevents.conftest import (
    AGENT_GROUP,
    AGENT_USER,
    GrpcHub,
    Pki,
    grpc_agent_settings,
    wait_subscribed,
    write_agent_config,
)
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
