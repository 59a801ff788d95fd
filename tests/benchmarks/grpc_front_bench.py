"""What the TLS front costs the gRPC server: prints publishes per second, asserts nothing.

``hubcontroller grpc-server`` with a client CA ends TLS in its own front
(:mod:`hubcontroller.grpcserver.tlsfront`) and forwards each connection to
gRPC on loopback; without one, gRPC core serves TLS itself. The same agent
(bearer token, no certificate) sends status events of a work the hub does not
have (authenticated, authorized, decoded, then ignored), one at a time
(latency), then ``CONCURRENCY`` in flight (throughput), on both servers.

Server, client and kubesim share one event loop (and one core), so the figures
are a lower bound for a real deployment, where agents run elsewhere.

Run: uv run python tests/benchmarks/grpc_front_bench.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import yaml

from demo.environment import CRD_DIR, HUB_CRDS, grant_agent
from hubcontroller.grpcserver import GrpcServerSettings
from hubcontroller.grpcserver.server import build_grpc_server
from kubesim.sim import KubeSim
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceStub
from ocmkit.kube import KubeClient
from ocmkit.runtime import configure_logging
from tests.cloudevents.pki import CertificateAuthority
from tests.cloudevents.test_grpc_auth import status_for
from tests.support.prepare import install_crds
from tests.support.programs import CLUSTER

if TYPE_CHECKING:
    from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceAsyncStub


USER = "system:serviceaccount:agents:bench"
CONCURRENCY = 16
RUNS = 2000


async def _measure(label: str, stub: CloudEventServiceAsyncStub, in_flight: int) -> None:
    latencies: list[float] = []

    async def sender(count: int) -> None:
        for _ in range(count):
            started = time.perf_counter()
            await stub.Publish(status_for(CLUSTER))
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(sender(RUNS // in_flight) for _ in range(in_flight)))
    elapsed = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100)
    print(
        f"{label:<44} {len(latencies) / elapsed:7.0f}/s"
        f"  p50 {cuts[49] * 1e3:6.2f} ms  p99 {cuts[98] * 1e3:6.2f} ms"
    )


async def _serve(tmp: Path, ca: CertificateAuthority, client_ca: bool, token: str) -> None:
    server_pair = ca.issue("server", common_name="grpc-server", server=True)
    config = tmp / f"server-{client_ca}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "tls_cert_file": str(server_pair.cert),
                "tls_key_file": str(server_pair.key),
                "client_ca_file": str(ca.ca_file) if client_ca else "",
                "server_bind_port": "0",
            }
        )
    )
    settings = GrpcServerSettings(
        kubeconfig=str(tmp / "kubeconfig"),
        server_config=str(config),
        bind_address="127.0.0.1",
        listen="127.0.0.1:0",
        insecure_serving=True,
        kube_api_qps=0,
    )
    manager, service = await build_grpc_server(settings, handle_signals=False)
    running = asyncio.create_task(manager.run())
    # The service has no event to wait on: poll its readiness, as a probe would.
    while service.readiness_failure() is not None:  # noqa: ASYNC110
        await asyncio.sleep(0.01)  # sleep-ok: a benchmark's start-up poll
    creds = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(root_certificates=ca.ca_file.read_bytes()),
        grpc.access_token_call_credentials(token),
    )
    try:
        async with grpc.aio.secure_channel(f"127.0.0.1:{service.port}", creds) as channel:
            stub: CloudEventServiceAsyncStub = CloudEventServiceStub(channel)
            await stub.Publish(status_for(CLUSTER))  # token review and access cached
            what = "front (client CA set)" if client_ca else "gRPC core TLS (no client CA)"
            await _measure(f"{what}, one at a time", stub, 1)
            await _measure(f"{what}, {CONCURRENCY} in flight", stub, CONCURRENCY)
    finally:
        manager.request_stop("benchmark done")
        await running


async def main() -> None:
    """Both servers, one after the other, against one kubesim hub."""
    configure_logging("console", "warning")
    with tempfile.TemporaryDirectory(prefix="grpc-front-bench-") as name:
        tmp = Path(name)
        ca = CertificateAuthority(tmp / "pki")
        async with KubeSim() as sim:
            sim.write_kubeconfig(tmp / "kubeconfig")
            token = sim.add_user(USER, ("system:serviceaccounts", "system:serviceaccounts:agents"))
            hub = await KubeClient.from_kubeconfig(str(tmp / "kubeconfig"), qps=0, name="bench")
            try:
                await install_crds(hub, [CRD_DIR / name for name in HUB_CRDS])
                await grant_agent(hub, CLUSTER, "system:serviceaccounts:agents")
            finally:
                await hub.close()
            for client_ca in (False, True):
                await _serve(tmp, ca, client_ca, token)


if __name__ == "__main__":
    asyncio.run(main())
