"""``hubcontroller manager`` as a real process: HTTPS probes, garbage collection, SIGTERM."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from ocmkit.kube import MANIFESTWORKS, KubeClient
from tests.conftest import eventually
from tests.hub_manager.conftest import (
    wait_deleted,
    work_body,
    write_complete,
)
from tests.support.processes import ProgramProcess, start_manager_process
from tests.support.serving_endpoint import MANAGER

PROBES_EVENT = "serving metrics and health probes"


def probe_address(process: ProgramProcess) -> str | None:
    """The host:port the process logged for its probe server, once it has."""
    for line in process.log().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == PROBES_EVENT:
            return str(record["address"])
    return None


async def test_manager_process_serves_probes_collects_and_stops_on_sigterm(
    hub_client: KubeClient, tmp_path: Path
) -> None:
    process = await start_manager_process(
        tmp_path,
        "--kubeconfig",
        str(tmp_path / "kubeconfig"),
        "--feature-gates=CleanUpCompletedManifestWork=true",
        "--disable-leader-election",
        "--listen",
        "127.0.0.1:0",
    )
    try:

        async def alive() -> bool:
            if process.process.returncode is not None:
                raise AssertionError(f"the manager exited early:\n{process.log()}")
            return True

        async def logged_address() -> bool:
            return await alive() and probe_address(process) is not None

        await eventually(logged_address, timeout=60, what="the manager to serve probes")
        # HTTPS by default, with a self-signed certificate: unverified, as kubelet probes.
        base = f"https://{probe_address(process)}"
        async with aiohttp.ClientSession() as session:

            async def ready() -> bool:
                await alive()
                async with session.get(f"{base}/readyz", ssl=False) as response:
                    return response.status == 200

            await eventually(ready, timeout=30, what="/readyz to pass")
            # The endpoint reviews the caller with the hub: its admin may read.
            admin = {"Authorization": f"Bearer {MANAGER.admin_token(tmp_path)}"}
            async with session.get(f"{base}/metrics", ssl=False, headers=admin) as response:
                metrics = await response.text()
        assert 'workqueue_adds_total{name="ManifestWorkGarbageCollectionController"}' in metrics

        await hub_client.create(MANIFESTWORKS, work_body("process-done", ttl=0))
        await write_complete(hub_client, "process-done")
        await wait_deleted(hub_client, "process-done")
    finally:
        code = await process.terminate()
    assert code == 0, process.log()
    assert '"event": "stopped"' in process.log()
