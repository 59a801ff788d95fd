"""``make demo``: start kubesim, apply a few objects through the client, show the watch stream.

Runs entirely on loopback with the embedded kubesim and exits 0 when every
step behaved as a real cluster would.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config, watch

from kubesim.sim import KubeSim

NAMESPACE = "demo"
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "hello", "namespace": NAMESPACE},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "hello"}},
        "template": {
            "metadata": {"labels": {"app": "hello"}},
            "spec": {"containers": [{"name": "hello", "image": "nginx:1.27"}]},
        },
    },
}


def _say(text: str) -> None:
    print(text, flush=True)


async def _watch(apps: client.AppsV1Api, seen: list[str], ready: asyncio.Event) -> None:
    w = watch.Watch()
    async with w.stream(
        apps.list_namespaced_deployment, NAMESPACE, timeout_seconds=30, _request_timeout=40
    ) as stream:
        async for ev in stream:
            dep = ev["object"]
            status = dep.status
            line = (
                f"  watch: {ev['type']:<8} deployment/{dep.metadata.name} "
                f"rv={dep.metadata.resource_version} generation={dep.metadata.generation} "
                f"ready={(status.ready_replicas if status else None) or 0}/{dep.spec.replicas}"
            )
            _say(line)
            seen.append(ev["type"])
            if ev["type"] == "DELETED":
                w.stop()
            if status and status.ready_replicas == dep.spec.replicas == 3:
                ready.set()


async def run() -> int:
    """The demo; returns the process exit code."""
    with tempfile.TemporaryDirectory(prefix="kubesim-demo-") as tmp:
        sim = KubeSim(simulate_workloads=True, workload_delay=0.3)
        url = await sim.start()
        kubeconfig = sim.write_kubeconfig(Path(tmp) / "kubeconfig")
        _say(f"kubesim serving {url} (kubeconfig {kubeconfig})")
        try:
            cfg = client.Configuration()
            await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
            async with client.ApiClient(cfg) as api:
                core = client.CoreV1Api(api)
                apps = client.AppsV1Api(api)
                ns = await core.create_namespace({"metadata": {"name": NAMESPACE}})
                _say(f"created namespace/{ns.metadata.name} phase={ns.status.phase}")
                cm = await core.create_namespaced_config_map(
                    NAMESPACE, {"metadata": {"name": "greeting"}, "data": {"hello": "world"}}
                )
                _say(f"created configmap/{cm.metadata.name} uid={cm.metadata.uid}")
                seen: list[str] = []
                ready = asyncio.Event()
                watcher = asyncio.create_task(_watch(apps, seen, ready))
                dep = await apps.patch_namespaced_deployment(
                    "hello",
                    NAMESPACE,
                    DEPLOYMENT,
                    field_manager="demo",
                    _content_type="application/apply-patch+yaml",
                )
                _say(
                    f"server-side applied deployment/{dep.metadata.name} "
                    f"(strategy {dep.spec.strategy.type}, manager "
                    f"{dep.metadata.managed_fields[0].manager})"
                )
                dep = await apps.patch_namespaced_deployment(
                    "hello", NAMESPACE, {"spec": {"replicas": 3}}
                )
                _say(f"scaled to 3 replicas: generation {dep.metadata.generation}")
                await asyncio.wait_for(ready.wait(), timeout=15)
                await apps.delete_namespaced_deployment("hello", NAMESPACE)
                await asyncio.wait_for(watcher, timeout=15)
                stats = sim.state.stats.to_json()
                _say(f"requests served: {stats['total']} {stats['byVerb']}")
                if seen[0] != "ADDED" or seen[-1] != "DELETED" or "MODIFIED" not in seen:
                    _say(f"unexpected event sequence: {seen}")
                    return 1
        finally:
            await sim.stop()
        _say("kubesim stopped cleanly")
    return 0


def main() -> None:
    """Run the demo and exit with its result."""
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(asyncio.run(run()))
    sys.exit(130)


if __name__ == "__main__":
    main()
