"""Admission webhook latency and throughput: prints p50/p99 and requests/s, asserts nothing.

Four figures:

1. the pure core (``validate_json``) on a typical review: three manifests, no executor;
2. the same core on a review near the 500 KiB manifest limit;
3. HTTPS end to end on loopback (TLS, aiohttp server and client, keep-alive),
   one request at a time (latency), then 16 in flight (throughput);
4. HTTPS with an executor, so each admission also makes a SubjectAccessReview
   against an in-process kubesim.

Server, client and kubesim share one event loop (and one core): the HTTPS
figures are a lower bound for a real deployment.

Run: uv run python tests/benchmarks/webhook_bench.py
"""

from __future__ import annotations

import asyncio
import json
import ssl
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from hubcontroller.webhook import (
    ExecuteAsRequest,
    HubAccessReviewer,
    ValidationOptions,
    WebhookServer,
    WebhookSettings,
    validate_json,
)
from kubesim.sim import KubeSim
from ocmkit.kube import CLUSTER_ROLES, NAMESPACES, ROLE_BINDINGS, KubeClient
from ocmkit.runtime import configure_logging
from tests.webhook.helpers import (
    MW_PATH,
    configmap,
    executor,
    install_cert,
    make_cert,
    manifest_work,
    review,
)

CONCURRENCY = 16
CORE_RUNS = 5000
LARGE_RUNS = 200
HTTPS_RUNS = 3000
SAR_RUNS = 1000


async def _allow(request: ExecuteAsRequest) -> bool:
    return True


def _report(label: str, latencies: list[float], elapsed: float) -> None:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    print(
        f"{label:<46} {len(ordered):>6} reqs  p50 {p50:7.3f} ms  p99 {p99:7.3f} ms"
        f"  {len(ordered) / elapsed:>8.0f} req/s"
    )


async def _measure(
    label: str, runs: int, one: Callable[[int], Awaitable[Any]], concurrency: int = 1
) -> None:
    latencies: list[float] = []
    gate = asyncio.Semaphore(concurrency)

    async def timed(i: int) -> None:
        async with gate:
            started = time.perf_counter()
            await one(i)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(timed(i) for i in range(runs)))
    _report(label, latencies, time.perf_counter() - started)


def _body(work: dict[str, Any], uid: str = "bench") -> bytes:
    return json.dumps(review("CREATE", work, uid=uid)).encode()


async def core() -> None:
    typical = _body(manifest_work([configmap(f"cm{i}", data={"k": "v" * 200}) for i in range(3)]))
    options = ValidationOptions()

    async def one(_: int) -> None:
        answer = await validate_json(typical, sar=_allow, options=options)
        assert answer["response"]["allowed"]

    await _measure(f"core, 3 manifests ({len(typical)} B)", CORE_RUNS, one)
    large = _body(manifest_work([configmap(f"cm{i}", data={"k": "v" * 4000}) for i in range(120)]))

    async def one_large(_: int) -> None:
        answer = await validate_json(large, sar=_allow, options=options)
        assert answer["response"]["allowed"]

    await _measure(f"core, 120 manifests ({len(large) // 1024} KiB)", LARGE_RUNS, one_large)


async def https(tmp: Path) -> None:
    cert = make_cert("bench")
    install_cert(tmp / "certs", cert)
    settings = WebhookSettings(
        host="127.0.0.1",
        free_port=True,
        metrics_port=0,
        health_probe_port=0,
        certdir=str(tmp / "certs"),
    )
    ctx = ssl.create_default_context(cadata=cert.cert_pem.decode())
    body = _body(manifest_work([configmap(f"cm{i}") for i in range(3)]))

    async with KubeSim() as sim:
        sim.write_kubeconfig(tmp / "kubeconfig")
        hub = await KubeClient.from_kubeconfig(str(tmp / "kubeconfig"), qps=0, name="bench")
        async with hub:
            await _grant(hub)
            server = WebhookServer(settings, access=HubAccessReviewer(hub))
            await server.start()
            url = f"https://127.0.0.1:{server.port}{MW_PATH}"
            connector = aiohttp.TCPConnector(ssl=ctx, limit=CONCURRENCY)
            headers = {"Content-Type": "application/json"}
            try:
                async with aiohttp.ClientSession(connector=connector) as session:

                    async def post(data: bytes) -> None:
                        async with session.post(url, data=data, headers=headers) as resp:
                            answer = await resp.json()
                            assert answer["response"]["allowed"], answer

                    for _ in range(100):  # warm up connections
                        await post(body)
                    await _measure(
                        "HTTPS, 1 in flight, no executor", HTTPS_RUNS // 3, lambda _: post(body)
                    )
                    await _measure(
                        f"HTTPS, {CONCURRENCY} in flight, no executor",
                        HTTPS_RUNS,
                        lambda _: post(body),
                        CONCURRENCY,
                    )
                    with_executor = _body(manifest_work([configmap()], executor=executor()))
                    await _measure(
                        f"HTTPS, {CONCURRENCY} in flight, executor (SAR)",
                        SAR_RUNS,
                        lambda _: post(with_executor),
                        CONCURRENCY,
                    )
            finally:
                await server.stop()


async def _grant(hub: KubeClient) -> None:
    """Let alice (the reviews' user) run works as ns1/sa1 in cluster1."""
    await hub.create(NAMESPACES, {"metadata": {"name": "cluster1"}})
    rbac = "rbac.authorization.k8s.io/v1"
    await hub.create(
        CLUSTER_ROLES,
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": "execute-as"},
            "rules": [
                {
                    "apiGroups": ["work.open-cluster-management.io"],
                    "resources": ["manifestworks"],
                    "verbs": ["execute-as"],
                }
            ],
        },
    )
    await hub.create(
        ROLE_BINDINGS,
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": "alice", "namespace": "cluster1"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "execute-as",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}
            ],
        },
    )


async def main() -> None:
    configure_logging("json", "warning")
    await core()
    with tempfile.TemporaryDirectory() as tmp:
        await https(Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
