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

from demo.environment import CRD_DIR, HUB_CRDS, grant_agent
from kubesim.sim import KubeSim
from ocmkit.cloudevents.pb.cloudevent_pb2_grpc import CloudEventServiceStub
from ocmkit.kube import KubeClient
from ocmkit.runtime import configure_logging
from tests.cloudevents.conftest import Pki, server_config
from tests.cloudevents.pki import CertificateAuthority
from tests.cloudevents.test_grpc_auth import channel, start_server, status_for
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


async def _serve(tmp: Path, pki: Pki, client_ca: bool, token: str) -> None:
    server = await start_server(tmp, f"server-{client_ca}", server_config(pki, client_ca=client_ca))
    try:
        async with channel(server, pki, token=token, cert=False) as chan:
            stub: CloudEventServiceAsyncStub = CloudEventServiceStub(chan)
            await stub.Publish(status_for(CLUSTER))  # token review and access cached
            what = "front (client CA set)" if client_ca else "gRPC core TLS (no client CA)"
            await _measure(f"{what}, one at a time", stub, 1)
            await _measure(f"{what}, {CONCURRENCY} in flight", stub, CONCURRENCY)
    finally:
        await server.stop()


async def main() -> None:
    """Both servers, one after the other, against one kubesim hub."""
    configure_logging("console", "warning")
    with tempfile.TemporaryDirectory(prefix="grpc-front-bench-") as name:
        tmp = Path(name)
        ca = CertificateAuthority(tmp / "pki")
        server = ca.issue("server", common_name="grpc-server", server=True)
        pki = Pki(ca=ca, server=server, agent=ca.issue("agent", common_name=USER))
        async with KubeSim() as sim:
            sim.write_kubeconfig(tmp / "hub.kubeconfig")
            token = sim.add_user(USER, ("system:serviceaccounts", "system:serviceaccounts:agents"))
            hub = await KubeClient.from_kubeconfig(str(tmp / "hub.kubeconfig"), qps=0, name="bench")
            try:
                await install_crds(hub, [CRD_DIR / name for name in HUB_CRDS])
                await grant_agent(hub, CLUSTER, "system:serviceaccounts:agents")
            finally:
                await hub.close()
            for client_ca in (False, True):
                await _serve(tmp, pki, client_ca, token)


if __name__ == "__main__":
    asyncio.run(main())
