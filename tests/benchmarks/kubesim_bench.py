"""kubesim throughput: prints requests/s for GET, LIST of 1,000, SSA PATCH and watch fan-out.

A benchmark, not a test: it prints figures and never fails on a timing. The
server runs as a separate `kubesim serve` process (one core), the load comes
from this process over loopback.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import benchkit
import yaml


async def _rate(name: str, n: int, make: Callable[[int], Awaitable[object]]) -> None:
    dt = await benchkit.bounded(n, make)
    print(f"{name:<40} {n:>6} requests  {n / dt:>9.0f} req/s")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with benchkit.kubesim_process(Path(tmp)) as kc:
            cfg = yaml.safe_load(kc.read_text())
            base = cfg["clusters"][0]["cluster"]["server"]
            token = cfg["users"][0]["user"]["token"]
            hdr = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            conn = aiohttp.TCPConnector(limit=benchkit.CONCURRENCY * 2)
            async with aiohttp.ClientSession(base, headers=hdr, connector=conn) as s:

                async def req(method: str, path: str, body: Any = None, **kw: Any) -> Any:
                    data = None if body is None else json.dumps(body)
                    async with s.request(method, path, data=data, **kw) as r:
                        return r.status, await r.read()

                await req("POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})
                cms = "/api/v1/namespaces/bench/configmaps"
                await _rate(
                    "CREATE configmap",
                    1000,
                    lambda i: req(
                        "POST", cms, {"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}}
                    ),
                )
                await _rate("GET configmap", 5000, lambda i: req("GET", f"{cms}/c{i % 1000}"))
                await _rate("LIST 1,000 configmaps", 100, lambda i: req("GET", cms))
                apply_hdr = {"Content-Type": "application/apply-patch+yaml"}
                await _rate(
                    "SSA PATCH configmap",
                    1000,
                    lambda i: req(
                        "PATCH",
                        f"{cms}/c{i}?fieldManager=bench",
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "metadata": {"name": f"c{i}"},
                            "data": {"i": str(i), "x": "y"},
                        },
                        headers=apply_hdr,
                    ),
                )
                # Watch fan-out: 100 watchers, N writes, time until every watcher saw every write.
                watchers, writes = 100, 50
                rv = json.loads((await req("GET", cms + "?limit=1"))[1])["metadata"][
                    "resourceVersion"
                ]
                done = asyncio.Event()
                counts = [0] * watchers

                async def watcher(k: int) -> None:
                    url = f"{cms}?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3Dhot&timeoutSeconds=60"
                    async with aiohttp.ClientSession(base, headers=hdr) as ws, ws.get(url) as r:
                        async for _ in r.content:
                            counts[k] += 1
                            if all(c >= writes for c in counts):
                                done.set()
                            if counts[k] >= writes:
                                return

                tasks = [asyncio.create_task(watcher(k)) for k in range(watchers)]
                # Let the watchers connect before the first write.
                await asyncio.sleep(1.0)  # sleep-ok: benchmark warm-up
                t0 = time.perf_counter()
                await req("POST", cms, {"metadata": {"name": "hot"}, "data": {"n": "0"}})
                for n in range(1, writes):
                    await req(
                        "PATCH",
                        f"{cms}/hot",
                        {"data": {"n": str(n)}},
                        headers={"Content-Type": "application/merge-patch+json"},
                    )
                await asyncio.wait_for(done.wait(), 120)
                dt = time.perf_counter() - t0
                print(
                    f"{'watch fan-out (100 watchers)':<40} {writes:>6} writes    {writes * watchers / dt:>9.0f} events/s delivered"
                )
                await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
