"""Who may talk to our gRPC server: an agent only for its own cluster; tokens via TokenReview."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2

from hubcontroller.grpcserver import GrpcServerSettings
from kubesim.sim import KubeSim
from ocmkit.cloudevents import MANIFEST_BUNDLES
from ocmkit.cloudevents.pb.cloudevent_pb2 import CloudEvent as PbCloudEvent
from ocmkit.cloudevents.pb.cloudevent_pb2 import PublishRequest, SubscriptionRequest
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import (
    CloudEventServiceServicer,
    CloudEventServiceStub,
    add_CloudEventServiceServicer_to_server,
)
from ocmkit.cloudevents.protobuf import SUBSCRIPTION_ID_HEADER, to_pb
from ocmkit.cloudevents.works import SequenceIds, spec_resync_request, status_event
from ocmkit.kube import MANIFESTWORKS, ROLE_BINDINGS, KubeClient, Unauthorized
from tests.cloudevents.conftest import (
    AGENT_GROUP,
    AGENT_USER,
    CLIENT_ID,
    GrpcHub,
    Pki,
    grant_agent,
    server_config,
)
from tests.cloudevents.pki import CertificateAuthority
from tests.conftest import eventually
from tests.support.prepare import User, service_account_user, wait_allowed
from tests.support.programs import CLUSTER
from tests.support.targets import Cluster
from workagent.sources.grpcdriver import GrpcTransport
from workagent.sources.transport import SubscriptionFailed

RBAC_GROUP = "rbac.authorization.k8s.io"

if TYPE_CHECKING:
    from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceAsyncStub


def channel(hub: GrpcHub, pki: Pki, *, token: str = "", cert: bool = True) -> grpc.aio.Channel:
    """A TLS channel to the server as cluster1's agent (or with a token)."""
    creds = grpc.ssl_channel_credentials(
        root_certificates=pki.ca.ca_file.read_bytes(),
        private_key=pki.agent.key.read_bytes() if cert else None,
        certificate_chain=pki.agent.cert.read_bytes() if cert else None,
    )
    if token:
        creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
    return grpc.aio.secure_channel(hub.url, creds)


def status_for(cluster: str) -> PublishRequest:
    """A status update event that claims to come from ``cluster``."""
    work = {
        "metadata": {
            "name": "w",
            "namespace": cluster,
            "uid": "0b6d3c1e-6f0a-4c1e-9a57-3f2d5b9e8a11",
            "generation": 1,
            "labels": {"cloudevents.open-cluster-management.io/originalsource": "kube"},
        },
        "status": {"conditions": []},
    }
    event = status_event(
        work, client_id=CLIENT_ID, cluster=cluster, sequence_id=SequenceIds().next()
    )
    return PublishRequest(event=to_pb(event))


async def subscribe_code(stub: CloudEventServiceAsyncStub, cluster: str) -> grpc.StatusCode:
    """The status a Subscribe for ``cluster`` ends with (OK if it was accepted)."""
    call = stub.Subscribe(
        SubscriptionRequest(source="", cluster_name=cluster, data_type=MANIFEST_BUNDLES)
    )
    headers = await call.initial_metadata()
    if dict(headers).get("subscription-id"):
        call.cancel()
        return grpc.StatusCode.OK
    return await call.code()


async def test_an_agent_is_refused_for_another_cluster(
    grpc_hub: GrpcHub, hub_client: KubeClient, pki: Pki
) -> None:
    await grant_agent(hub_client, "cluster2", "system:open-cluster-management:cluster2")
    async with channel(grpc_hub, pki) as chan:
        stub = CloudEventServiceStub(chan)
        assert await subscribe_code(stub, CLUSTER) == grpc.StatusCode.OK
        assert await subscribe_code(stub, "cluster2") == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Publish(status_for("cluster2"))
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        resync = spec_resync_request(CLIENT_ID, "cluster2", {})
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Publish(PublishRequest(event=to_pb(resync)))
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # Its own cluster: a status for an unknown work is accepted and ignored.
        await stub.Publish(status_for(CLUSTER))
        # An action agents have no verb for (status.resync_response) is refused.
        response = status_for(CLUSTER)
        response.event.type = f"{MANIFEST_BUNDLES}.status.resync_response"
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Publish(response)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # Without a cluster name, or with one that is not a string: refused, saying which.
        for attribute, details in (
            (None, "access denied: missing ce-clustername in event attributes"),
            (5, "access denied: ce-clustername in event attributes is not a string"),
        ):
            unnamed = status_for(CLUSTER)
            del unnamed.event.attributes["ce-clustername"]
            if attribute is not None:
                unnamed.event.attributes["ce-clustername"].ce_integer = attribute
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Publish(unnamed)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert refused.value.details() == details


@pytest.fixture(params=[False, True], ids=["tokens-only", "client-ca"])
async def token_hub(
    request: pytest.FixtureRequest, hub: KubeSim, hub_client: KubeClient, pki: Pki, tmp_path: Path
) -> GrpcHub:
    """Our server without a client CA (callers authenticate with bearer tokens only) and
    with one (as OCM's default config: a certificate verified if given, not required)."""
    await grant_agent(hub_client, CLUSTER, AGENT_GROUP)
    return await start_server(
        tmp_path, "grpc-token-server", server_config(pki, client_ca=request.param)
    )


async def start_server(tmp_path: Path, name: str, config: dict[str, Any]) -> GrpcHub:
    """Our server with this config file (``<name>.yaml``), on a free loopback port."""
    config_path = tmp_path / f"{name}.yaml"
    settings = GrpcServerSettings(
        kubeconfig=str(tmp_path / "hub.kubeconfig"),
        server_config=str(config_path),
        bind_address="127.0.0.1",
        listen="127.0.0.1:0",
        insecure_serving=True,
        kube_api_qps=0,
    )
    server = GrpcHub(settings, config_path, config)
    await server.start()
    return server


async def agent_account(hub: Cluster, hub_client: KubeClient, name: str) -> User:
    """A ServiceAccount of namespace ``agents`` bound to the agent's role on cluster1."""
    agent = await service_account_user(hub, hub_client, "agents", name)
    await hub_client.create(
        ROLE_BINDINGS,
        {
            "metadata": {"name": f"work-agent-{name}", "namespace": CLUSTER},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "work-agent"},
            "subjects": [
                {"apiGroup": RBAC_GROUP, "kind": "Group", "name": "system:serviceaccounts:agents"}
            ],
        },
    )
    await wait_allowed(
        hub_client, agent.name, "watch", "manifestworks",
        group=MANIFESTWORKS.group, namespace=CLUSTER, groups=("system:serviceaccounts:agents",),
    )  # fmt: skip
    return agent


async def test_bearer_tokens_are_reviewed(
    token_hub: GrpcHub, hub: Cluster, hub_client: KubeClient, pki: Pki
) -> None:
    # ServiceAccounts, so that the tokens exist on both targets (a real apiserver
    # cannot add a plain user); the agent's role (granted by ``token_hub``) is bound
    # to the group of the agent's ServiceAccount namespace too.
    agent = await agent_account(hub, hub_client, "by-token")
    try:
        token = agent.token
        async with channel(token_hub, pki, token=token, cert=False) as chan:
            assert await subscribe_code(CloudEventServiceStub(chan), CLUSTER) == grpc.StatusCode.OK
        async with channel(token_hub, pki, token="not-a-token", cert=False) as chan:
            code = await subscribe_code(CloudEventServiceStub(chan), CLUSTER)
            assert code == grpc.StatusCode.UNAUTHENTICATED
        async with channel(token_hub, pki, cert=False) as chan:
            code = await subscribe_code(CloudEventServiceStub(chan), CLUSTER)
            assert code == grpc.StatusCode.UNAUTHENTICATED
        # A valid token of a user without rights on cluster1's works.
        stranger = (await service_account_user(hub, hub_client, "others", "stranger")).token
        async with channel(token_hub, pki, token=stranger, cert=False) as chan:
            code = await subscribe_code(CloudEventServiceStub(chan), CLUSTER)
            assert code == grpc.StatusCode.PERMISSION_DENIED
        # A certificate too: with a client CA it is the identity when the token is not
        # valid (tokens first, as OCM's server); without one it is never asked for.
        with_ca = bool(token_hub.config["client_ca_file"])
        async with channel(token_hub, pki, token="not-a-token") as chan:
            code = await subscribe_code(CloudEventServiceStub(chan), CLUSTER)
            assert code == (grpc.StatusCode.OK if with_ca else grpc.StatusCode.UNAUTHENTICATED)
        async with channel(token_hub, pki, token=stranger) as chan:
            code = await subscribe_code(CloudEventServiceStub(chan), CLUSTER)
            assert code == grpc.StatusCode.PERMISSION_DENIED
    finally:
        await token_hub.stop()


async def test_a_burst_of_calls_is_served_whole(
    token_hub: GrpcHub, hub: Cluster, hub_client: KubeClient, pki: Pki
) -> None:
    # Every agent's resync request and first statuses at once, as after a hub restart:
    # none is cancelled for waiting (gRPC core's default queue holds 1,000 calls).
    agent = await agent_account(hub, hub_client, "bursty")
    try:
        async with channel(token_hub, pki, token=agent.token, cert=False) as chan:
            stub = CloudEventServiceStub(chan)
            await stub.Publish(status_for(CLUSTER))
            calls = [stub.Publish(status_for(CLUSTER)) for _ in range(3000)]
            answers = await asyncio.gather(*calls, return_exceptions=True)
            refused = [a for a in answers if isinstance(a, Exception)]
            assert not refused, (len(refused), refused[0])
    finally:
        await token_hub.stop()


async def served_certificate(server: GrpcHub, pki: Pki) -> bytes:
    """The serving certificate (DER) a new TLS connection to ``server`` is shown."""
    context = ssl.create_default_context(cafile=str(pki.ca.ca_file))
    context.load_cert_chain(pki.agent.cert, pki.agent.key)
    context.set_alpn_protocols(["h2"])
    _, writer = await asyncio.open_connection(
        "127.0.0.1", server.port, ssl=context, server_hostname="127.0.0.1"
    )
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        assert isinstance(der, bytes)
        return der
    finally:
        writer.close()


async def test_the_client_ca_front_serves_a_rotated_serving_certificate(
    hub: KubeSim, hub_client: KubeClient, pki: Pki, tmp_path: Path
) -> None:
    # The files are looked at once per cert_watch_interval (more than 30 s, as OCM
    # demands); a connection after that is shown the new pair, with no restart.
    await grant_agent(hub_client, CLUSTER, AGENT_GROUP)
    config = {**server_config(pki), "cert_watch_interval": "31s"}
    server = await start_server(tmp_path, "grpc-rotating-server", config)
    try:
        first = await served_certificate(server, pki)
        assert first == ssl.PEM_cert_to_DER_cert(pki.server.cert.read_text())
        rotated = pki.ca.issue("server-2", common_name="grpc-server", server=True)
        pki.server.key.write_bytes(rotated.key.read_bytes())
        pki.server.cert.write_bytes(rotated.cert.read_bytes())
        new = ssl.PEM_cert_to_DER_cert(rotated.cert.read_text())

        async def rotated_served() -> bool:
            return await served_certificate(server, pki) == new

        await eventually(rotated_served, timeout=90, what="the rotated serving certificate")
        async with channel(server, pki) as chan:
            assert await subscribe_code(CloudEventServiceStub(chan), CLUSTER) == grpc.StatusCode.OK
    finally:
        await server.stop()


async def test_a_certificate_the_client_ca_did_not_sign_is_refused_in_the_handshake(
    grpc_hub: GrpcHub, pki: Pki, tmp_path: Path
) -> None:
    # Go's VerifyClientCertIfGiven: a certificate is optional, but one that is given
    # must verify; the connection fails before any call (no token can make up for it).
    other = CertificateAuthority(tmp_path / "other-pki")
    stranger = other.issue("agent", common_name=AGENT_USER, organizations=(AGENT_GROUP,))
    creds = grpc.ssl_channel_credentials(
        root_certificates=pki.ca.ca_file.read_bytes(),
        private_key=stranger.key.read_bytes(),
        certificate_chain=stranger.cert.read_bytes(),
    )
    async with grpc.aio.secure_channel(grpc_hub.url, creds) as chan:
        code = await subscribe_code(CloudEventServiceStub(chan), CLUSTER)
        assert code == grpc.StatusCode.UNAVAILABLE
    # The server goes on serving the agent whose certificate the CA signed.
    async with channel(grpc_hub, pki) as chan:
        assert await subscribe_code(CloudEventServiceStub(chan), CLUSTER) == grpc.StatusCode.OK


async def test_a_rotated_token_file_is_read_on_reconnect(
    token_hub: GrpcHub, hub: Cluster, hub_client: KubeClient, pki: Pki, tmp_path: Path
) -> None:
    # A projected service-account token is replaced on disk before it expires: the
    # transport reads ``tokenFile`` again for every new subscription (OCM v1.2.1's agent
    # keeps the token it started with; tests/peers/test_grpc_upkeep_side_by_side.py).
    agent = await agent_account(hub, hub_client, "by-token-file")
    token_file = tmp_path / "token"
    token_file.write_text("not-a-token\n")
    config = tmp_path / "agent-token-file.yaml"
    config.write_text(
        yaml.safe_dump(
            {"url": token_hub.url, "caFile": str(pki.ca.ca_file), "tokenFile": str(token_file)}
        )
    )
    transport = GrpcTransport(str(config), CLUSTER)
    try:
        with pytest.raises(SubscriptionFailed, match="UNAUTHENTICATED"):
            async with transport.subscription():
                pass
        token_file.write_text(agent.token + "\n")  # rotated in place
        async with transport.subscription():
            pass
    finally:
        await token_hub.stop()


def test_server_config_file_errors_name_the_key(tmp_path: Path) -> None:
    from hubcontroller.grpcserver.config import load_server_config

    path = tmp_path / "server.yaml"
    path.write_text(yaml.safe_dump({"server_bind_port": "grpc"}))
    with pytest.raises(ValueError, match="server_bind_port"):
        load_server_config(str(path))
    path.write_text(yaml.safe_dump({"cert_watch_interval": "10s"}))
    with pytest.raises(ValueError, match="must be greater than 30 seconds"):
        load_server_config(str(path))
    path.write_text(yaml.safe_dump({"tls_cert_fil": "/x"}))
    with pytest.raises(ValueError, match="unknown key 'tls_cert_fil'"):
        load_server_config(str(path))
    assert load_server_config(str(tmp_path / "missing.yaml")).port == 8090


class _TokenRecorder(CloudEventServiceServicer):
    """A stand-in CloudEventService that records each call's bearer token and
    refuses ``refused`` on publishes (a token the hub stopped accepting); it answers a
    subscription after ``review_seconds`` (the token and access reviews of a busy hub)."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.refused = ""
        self.review_seconds = 0.0

    def _token(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        header = dict(context.invocation_metadata() or ()).get("authorization", "")
        token = str(header).removeprefix("Bearer ")
        self.tokens.append(token)
        return token

    async def Subscribe(
        self, request: SubscriptionRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[PbCloudEvent]:
        self._token(context)
        await asyncio.sleep(self.review_seconds)
        await context.send_initial_metadata(((SUBSCRIPTION_ID_HEADER, "recorder"),))
        await asyncio.Event().wait()  # open until the client goes
        yield PbCloudEvent()

    async def Publish(
        self, request: PublishRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> empty_pb2.Empty:
        if self._token(context) == self.refused:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "token no longer valid")
        return empty_pb2.Empty()


async def _serve(recorder: _TokenRecorder, pki: Pki, tmp_path: Path) -> grpc.aio.Server:
    """Serve ``recorder`` over TLS; the agent's config (``agent.yaml``) reads the token
    from ``token``."""
    server = grpc.aio.server()
    add_CloudEventServiceServicer_to_server(recorder, server)
    creds = grpc.ssl_server_credentials(
        [(pki.server.key.read_bytes(), pki.server.cert.read_bytes())]
    )
    port = server.add_secure_port("127.0.0.1:0", creds)
    await server.start()
    token_file = tmp_path / "token"
    token_file.write_text("old-token\n")
    (tmp_path / "agent.yaml").write_text(
        yaml.safe_dump(
            {
                "url": f"127.0.0.1:{port}",
                "caFile": str(pki.ca.ca_file),
                "tokenFile": str(token_file),
            }
        )
    )
    return server


async def test_an_open_streams_publishes_follow_a_rotated_token_file(
    pki: Pki, tmp_path: Path
) -> None:
    # A stream lives longer than its token: once the hub refuses the old token, the
    # next publish carries the token on disk, without a reconnect.
    recorder = _TokenRecorder()
    server = await _serve(recorder, pki, tmp_path)
    token_file = tmp_path / "token"
    transport = GrpcTransport(str(tmp_path / "agent.yaml"), CLUSTER)
    resync = spec_resync_request(f"{CLUSTER}-work-agent", CLUSTER, {})
    try:
        async with transport.subscription():
            await transport.publish(resync)
            token_file.write_text("new-token\n")  # rotated in place
            recorder.refused = "old-token"
            with pytest.raises(Unauthorized):
                await transport.publish(resync)
            await transport.publish(resync)
    finally:
        await server.stop(None)
    assert recorder.tokens == ["old-token", "old-token", "old-token", "new-token"]


async def test_a_server_slow_to_answer_a_subscription_is_waited_for(
    pki: Pki, tmp_path: Path
) -> None:
    # Many agents reconnecting at once keep the hub's reviews busy for seconds; as
    # OCM's agent, ours waits for the headers instead of giving up and backing off.
    recorder = _TokenRecorder()
    recorder.review_seconds = 6.0
    server = await _serve(recorder, pki, tmp_path)
    transport = GrpcTransport(str(tmp_path / "agent.yaml"), CLUSTER)
    try:
        async with transport.subscription():
            await transport.publish(spec_resync_request(f"{CLUSTER}-work-agent", CLUSTER, {}))
    finally:
        await server.stop(None)
    assert recorder.tokens == ["old-token", "old-token"]
