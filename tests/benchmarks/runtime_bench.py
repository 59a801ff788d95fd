"""Runtime throughput: informer list+cache of 10,000 objects, handler and watch event rates,
work queue keys/s with 10 workers.

A benchmark, not a test: it prints figures and never fails on a timing. kubesim
runs as a separate `kubesim serve` process (its own core); the informer runs
here, over loopback, through the real client.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import benchkit

from ocmkit.kube import CONFIGMAPS, NAMESPACES, KubeClient
from ocmkit.runtime import Informer, Object, WorkQueue

OBJECTS = 10_000
WATCH_UPDATES = 2_000
QUEUE_KEYS = 200_000
QUEUE_WORKERS = 10
NS = "bench"


async def informer_bench(kubeconfig: Path) -> None:
    client = await KubeClient.from_kubeconfig(str(kubeconfig), qps=0, name="bench")
    writer = await KubeClient.from_kubeconfig(str(kubeconfig), qps=0, name="bench-writer")
    try:
        await client.create(NAMESPACES, {"metadata": {"name": NS}})
        seed = await benchkit.bounded(
            OBJECTS,
            lambda i: writer.create(
                CONFIGMAPS, {"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}}, NS
            ),
        )
        print(f"{'seed: CREATE configmaps':<44} {OBJECTS:>7}  {OBJECTS / seed:>10.0f} /s")

        adds = 0
        updates = 0
        all_added = asyncio.Event()
        all_updated = asyncio.Event()
        first_update = 0.0
        first_add = 0.0

        def on_add(obj: Object) -> None:
            nonlocal adds, first_add
            adds += 1
            if adds == 1:
                first_add = time.perf_counter()
            if adds == OBJECTS:
                all_added.set()

        def on_update(old: Object, new: Object) -> None:
            nonlocal updates, first_update
            updates += 1
            if updates == 1:
                first_update = time.perf_counter()
            if updates == WATCH_UPDATES:
                all_updated.set()

        informer = Informer(client, CONFIGMAPS, NS, name="bench")
        informer.add_handler(on_add=on_add, on_update=on_update)
        t0 = time.perf_counter()
        await informer.start()
        await informer.wait_synced()
        listed = time.perf_counter() - t0
        await all_added.wait()
        handled = time.perf_counter() - t0
        delivery = time.perf_counter() - first_add
        print(
            f"{'informer: list + cache 10,000 configmaps':<44} {listed:>7.2f} s "
            f"({OBJECTS / listed:,.0f} objects/s)"
        )
        print(
            f"{'informer: 10,000 adds through a handler':<44} {handled:>7.2f} s after start "
            f"({OBJECTS / delivery:,.0f} events/s, first to last)"
        )

        t1 = time.perf_counter()
        writes = await benchkit.bounded(
            WATCH_UPDATES,
            lambda i: writer.patch(CONFIGMAPS, f"c{i}", {"data": {"i": f"u{i}"}}, NS),
        )
        await all_updated.wait()
        received = time.perf_counter() - first_update
        total = time.perf_counter() - t1
        print(
            f"{'server: PATCH configmaps (the event source)':<44} {WATCH_UPDATES:>7}  "
            f"{WATCH_UPDATES / writes:>10.0f} /s"
        )
        print(
            f"{'informer: watch updates through a handler':<44} {WATCH_UPDATES:>7}  "
            f"{WATCH_UPDATES / received:>10.0f} events/s (all in {total:.2f} s; "
            "bounded by the server's write rate)"
        )
        await informer.stop()
    finally:
        await client.close()
        await writer.close()


async def queue_bench() -> None:
    queue = WorkQueue("bench")
    processed = 0
    done = asyncio.Event()

    async def worker() -> None:
        nonlocal processed
        while True:
            try:
                key = await queue.get()
            except Exception:
                return
            processed += 1
            queue.done(key)
            if processed == QUEUE_KEYS:
                done.set()

    workers = [asyncio.create_task(worker()) for _ in range(QUEUE_WORKERS)]
    t0 = time.perf_counter()
    for i in range(QUEUE_KEYS):
        queue.add(f"ns/key-{i}")
        if i % 1000 == 999:
            await asyncio.sleep(0)  # let the workers run, as event handlers would
    await done.wait()
    dt = time.perf_counter() - t0
    print(
        f"{'queue: add/get/done, 10 workers':<44} {QUEUE_KEYS:>7}  {QUEUE_KEYS / dt:>10.0f} keys/s"
    )
    await queue.shutdown()
    await asyncio.gather(*workers)


async def main() -> None:
    await queue_bench()
    with tempfile.TemporaryDirectory() as tmp:
        async with benchkit.kubesim_process(Path(tmp)) as kc:
            await informer_bench(kc)


if __name__ == "__main__":
    asyncio.run(main())
