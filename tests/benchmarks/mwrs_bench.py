"""ManifestWorkReplicaSet fan-out: one replica set, strategy All, 1,000 clusters.

A benchmark, not a test: it prints figures and never fails on a timing.
kubesim runs as a separate ``kubesim serve`` process (its own core); the
controller runs here, in-process, built with ``build_replicaset_controller``
exactly as the composition root builds it, over loopback through the real
client. Figures:

1. fan-out: from creating the replica set until every ManifestWork exists
   and ``status.summary.total`` is 1,000 with ``PlacementVerified`` True;
2. status convergence: from writing Applied/Available on every work (as
   1,000 agents would) until the summary counts them all and
   ``ManifestworkApplied`` is True.

``python tests/benchmarks/mwrs_bench.py [CLUSTERS] [QPS]``: QPS 0 (the
default) means no client-side limit; OCM's default is 50.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import benchkit

from hubcontroller.controllers.replicaset import build_replicaset_controller
from hubcontroller.deps import HubDeps
from ocmkit.kube import (
    MANIFESTWORK_REPLICASETS,
    MANIFESTWORKS,
    NAMESPACES,
    PLACEMENT_DECISIONS,
    PLACEMENTS,
    KubeClient,
)
from ocmkit.runtime import Informer
from schemas.meta import format_time, now
from schemas.wire import (
    DECISION_GROUP_INDEX_LABEL,
    MANIFEST_WORK_REPLICA_SET_LABEL,
    PLACEMENT_LABEL,
)
from tests.support.manifests import configmap

CRD_FILES = (
    "work.open-cluster-management.io_manifestworks.yaml",
    "work.open-cluster-management.io_manifestworkreplicasets.yaml",
    "cluster.open-cluster-management.io_placements.yaml",
    "cluster.open-cluster-management.io_placementdecisions.yaml",
)
NS = "bench"
#: How long any phase may take.
TIMEOUT = 600.0
PER_DECISION = 100  # the API's documented limit of decisions per PlacementDecision
TEMPLATE = {"workload": {"manifests": [configmap("bench", key="value")]}}


async def _seed(client: KubeClient, clusters: list[str]) -> None:
    await benchkit.install_crds(client, *CRD_FILES)
    await client.create(NAMESPACES, {"metadata": {"name": NS}})
    took = await benchkit.bounded(
        len(clusters), lambda i: client.create(NAMESPACES, {"metadata": {"name": clusters[i]}})
    )
    print(f"{'seed: cluster namespaces':<48} {len(clusters):>6}  in {took:.2f} s")
    await client.create(PLACEMENTS, {"metadata": {"name": "all"}, "spec": {}}, NS)
    chunks = [clusters[i : i + PER_DECISION] for i in range(0, len(clusters), PER_DECISION)]
    for i, chunk in enumerate(chunks):
        labels = {PLACEMENT_LABEL: "all", DECISION_GROUP_INDEX_LABEL: "0"}
        name = f"all-decision-{i}"
        await client.create(PLACEMENT_DECISIONS, {"metadata": {"name": name, "labels": labels}}, NS)
        decisions = [{"clusterName": c, "reason": ""} for c in chunk]
        await client.patch(
            PLACEMENT_DECISIONS,
            name,
            {"status": {"decisions": decisions}},
            NS,
            subresource="status",
        )
    status = {
        "numberOfSelectedClusters": len(clusters),
        "decisionGroups": [
            {
                "decisionGroupIndex": 0,
                "decisionGroupName": "",
                "decisions": [f"all-decision-{i}" for i in range(len(chunks))],
                "clusterCount": len(clusters),
            }
        ],
    }
    await client.patch(PLACEMENTS, "all", {"status": status}, NS, subresource="status")


async def bench(kubeconfig: Path, clusters: list[str], qps: float) -> dict[str, float]:
    """Fan out to ``clusters``, then converge their status; prints and returns the times (s)."""
    client = await KubeClient.from_kubeconfig(str(kubeconfig), qps=0, name="bench")
    hub = await KubeClient.from_kubeconfig(
        str(kubeconfig), qps=qps, burst=max(int(qps * 2), 1), name="hub"
    )
    works = Informer(hub, MANIFESTWORKS)
    deps = HubDeps(hub=hub, works=works)
    informers, controller = build_replicaset_controller(deps)
    task: asyncio.Task[None] | None = None
    try:
        await _seed(client, clusters)
        for informer in (works, *informers):
            await informer.start()
        task = asyncio.create_task(controller.run())
        await controller.wait_started()

        selector = f"{MANIFEST_WORK_REPLICA_SET_LABEL}={NS}.fanout"

        async def all_works() -> bool:
            items = (await client.list(MANIFESTWORKS, label_selector=selector))["items"]
            return len(items) == len(clusters)

        async def summary(**expected: int) -> bool:
            rs = await client.get(MANIFESTWORK_REPLICASETS, "fanout", NS)
            got = (rs.get("status") or {}).get("summary") or {}
            return all(got.get(k) == v for k, v in expected.items())

        async def condition(kind: str, status: str) -> bool:
            rs = await client.get(MANIFESTWORK_REPLICASETS, "fanout", NS)
            for c in (rs.get("status") or {}).get("conditions") or []:
                if c["type"] == kind:
                    return bool(c["status"] == status)
            return False

        body = {
            "metadata": {"name": "fanout"},
            "spec": {
                "placementRefs": [{"name": "all", "rolloutStrategy": {"type": "All"}}],
                "manifestWorkTemplate": TEMPLATE,
            },
        }
        t0 = time.perf_counter()
        await client.create(MANIFESTWORK_REPLICASETS, body, NS)
        works_at = await benchkit.until(all_works, None, TIMEOUT, "every ManifestWork", period=0.05)
        total = len(clusters)

        async def fanned_out() -> bool:
            return await summary(total=total) and await condition("PlacementVerified", "True")

        await benchkit.until(fanned_out, None, TIMEOUT, "the fan-out summary", period=0.05)
        summary_at = time.perf_counter() - t0
        limit = "no QPS limit" if qps <= 0 else f"qps={qps:g}"
        print(
            f"{'fan-out: every ManifestWork exists':<48} {total:>6}  {works_at:>6.2f} s "
            f"({total / works_at:,.0f} works/s, {limit})"
        )
        print(f"{'fan-out: summary total correct':<48} {total:>6}  {summary_at:>6.2f} s")

        items = (await client.list(MANIFESTWORKS, label_selector=selector))["items"]
        stamp = format_time(now())

        async def report(i: int) -> None:
            work = items[i]
            generation = work["metadata"]["generation"]
            conditions = [
                {
                    "type": kind,
                    "status": "True",
                    "reason": "Bench",
                    "message": "",
                    "lastTransitionTime": stamp,
                    "observedGeneration": generation,
                }
                for kind in ("Applied", "Available")
            ]
            await client.patch(
                MANIFESTWORKS,
                work["metadata"]["name"],
                {"status": {"conditions": conditions}},
                work["metadata"]["namespace"],
                subresource="status",
            )

        t1 = time.perf_counter()
        writes = await benchkit.bounded(len(items), report)

        async def converged() -> bool:
            return await summary(total=total, applied=total, available=total) and await condition(
                "ManifestworkApplied", "True"
            )

        await benchkit.until(converged, None, TIMEOUT, "the rollout to converge", period=0.05)
        settled = time.perf_counter() - t1
        print(
            f"{'status: agents report (the event source)':<48} {total:>6}  {writes:>6.2f} s "
            f"({total / writes:,.0f} status writes/s)"
        )
        print(
            f"{'status: summary counts every work, Applied True':<48} {total:>6}  {settled:>6.2f} s"
        )
        return {
            "works_exist_s": works_at,
            "summary_s": summary_at,
            "reports_s": writes,
            "status_converged_s": settled,
        }
    finally:
        await controller.stop(deadline=10)
        if task is not None:
            await task
        for informer in (works, *informers):
            await informer.stop()
        await hub.close()
        await client.close()


async def measure(count: int, qps: float = 0.0) -> dict[str, float]:
    """One fan-out to ``count`` clusters in a fresh ``kubesim serve``; the figures of ``bench``."""
    clusters = [f"cluster{i:04d}" for i in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        async with benchkit.kubesim_process(Path(tmp)) as kc:
            return await bench(kc, clusters, qps)


async def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    qps = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    await measure(count, qps)


if __name__ == "__main__":
    asyncio.run(main())
