"""ocmkit.kube throughput: prints GETs/s through KubeClient against an in-process kubesim.

A benchmark, not a test: it prints figures and never fails on a timing. The
server and the client share one event loop (and one core), so the figure is
the client's cost plus kubesim's, a lower bound for a real cluster. For
comparison it also prints the same GETs sent with bare aiohttp.

Run: uv run python tests/benchmarks/kube_client_bench.py
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import benchkit

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, NAMESPACES, KubeClient

OBJECTS = 200
GETS = 5000


async def _rate(label: str, n: int, one: Callable[[int], Awaitable[object]]) -> None:
    elapsed = await benchkit.bounded(n, one)
    print(f"{label:<44} {n:>6} requests  {n / elapsed:>8.0f} req/s")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with KubeSim() as sim:
            kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
            client = await KubeClient.from_kubeconfig(str(kubeconfig), qps=0, name="bench")
            async with client:
                await client.create(NAMESPACES, {"metadata": {"name": "bench"}})
                for i in range(OBJECTS):
                    await client.create(
                        CONFIGMAPS, {"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}}, "bench"
                    )
                # Warm up connections and caches so the first figure is not penalised.
                for _ in range(200):
                    await client.get(CONFIGMAPS, "c0", "bench")
                await _rate(
                    "KubeClient.get (unlimited QPS)",
                    GETS,
                    lambda i: client.get(CONFIGMAPS, f"c{i % OBJECTS}", "bench"),
                )
                limited = await KubeClient.from_kubeconfig(
                    str(kubeconfig), qps=500, burst=50, name="bench-limited"
                )
                async with limited:
                    await _rate(
                        "KubeClient.get (qps=500, burst=50)",
                        1000,
                        lambda i: limited.get(CONFIGMAPS, f"c{i % OBJECTS}", "bench"),
                    )
                await _rate(
                    "KubeClient.list of 200 (page size 500)",
                    100,
                    lambda i: client.list(CONFIGMAPS, "bench"),
                )
            headers = {"Authorization": f"Bearer {sim.admin_token}"}
            base = f"{sim.url}/api/v1/namespaces/bench/configmaps"
            async with aiohttp.ClientSession(headers=headers) as session:

                async def bare(i: int) -> object:
                    async with session.get(f"{base}/c{i % OBJECTS}") as response:
                        return await response.json()

                for _ in range(200):
                    await bare(0)
                await _rate("bare aiohttp GET (baseline)", GETS, bare)


if __name__ == "__main__":
    asyncio.run(main())
