"""The agent started as OCM's Klusterlet starts it in gRPC mode, as a real process."""

from __future__ import annotations

from pathlib import Path

from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS, KubeClient
from tests.cloudevents.conftest import klusterlet_args
from tests.integration.conftest import (
    configmap,
    wait_applied,
    work_body,
)
from tests.support.processes import start_agent_process
from tests.support.programs import CLUSTER


async def test_klusterlet_style_command_line_converges(
    agent_config: Path, hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> None:
    await hub_client.create(MANIFESTWORKS, work_body("klusterlet", [configmap("from-grpc")]))
    process = await start_agent_process(tmp_path, *klusterlet_args("grpc", agent_config, tmp_path))
    try:
        await wait_applied(hub_client, "klusterlet")
        cm = await spoke_client.get(CONFIGMAPS, "from-grpc", "default")
        assert cm["data"] == {"key": "value"}
    finally:
        code = await process.terminate()
    assert code == 0, process.log()
    assert "subscribed" in process.log()


async def test_missing_client_id_is_a_startup_error(tmp_path: Path) -> None:
    process = await start_agent_process(
        tmp_path,
        f"--spoke-cluster-name={CLUSTER}",
        "--workload-source-driver=grpc",
        f"--workload-source-config={tmp_path / 'config.yaml'}",
    )
    code = await process.process.wait()
    assert code == 2
    assert "--cloudevents-client-id is required with --workload-source-driver=grpc" in process.log()
