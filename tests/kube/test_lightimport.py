"""The agent loads kubeconfigs without kubernetes_asyncio's generated models, and other
code of the same process still gets the whole library.

Each check runs in a fresh interpreter: the test process itself imports
kubernetes_asyncio in full (tests/conftest.py), which turns the light import off.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import yaml

from kubesim.sim import KubeSim
from ocmkit.kube import NAMESPACES, KubeClient
from ocmkit.kube._lightimport import install
from tests.kube.test_config import EXEC_PLUGIN

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import asyncio, sys
import workagent.agent  # everything the agent process imports
from ocmkit.kube import NAMESPACES, KubeClient

def models_loaded():
    return sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models"))

async def main(token_path, exec_path):
    for path, name in ((token_path, "by-token"), (exec_path, "by-exec")):
        async with await KubeClient.from_kubeconfig(path, qps=0) as client:
            await client.create(NAMESPACES, {"metadata": {"name": name}})
    assert models_loaded() == [], "models loaded by the light path"
    import kubernetes_asyncio
    from kubernetes_asyncio import client, watch
    from kubernetes_asyncio.client import ApiClient
    from kubernetes_asyncio.dynamic import DynamicClient
    assert kubernetes_asyncio.__version__
    assert client.V1ConfigMap(data={"a": "b"}).data == {"a": "b"}
    assert ApiClient is client.ApiClient and isinstance(ApiClient, type)
    assert watch.Watch and DynamicClient and client.CoreV1Api
    assert models_loaded(), "the full client did not load on demand"
    print("ok")

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def _run(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    return await process.wait(), out.decode(errors="replace")


async def test_kubeconfigs_load_without_the_models_and_the_full_client_loads_on_demand(
    tmp_path: Path,
) -> None:
    async with KubeSim(tls=True) as sim:
        token = sim.add_user("robot", groups=("system:masters",))
        by_token = sim.kubeconfig()
        by_token["users"][0]["user"] = {"token": token}
        (tmp_path / "token").write_text(token)
        (tmp_path / "plugin.py").write_text(EXEC_PLUGIN)
        by_exec = sim.kubeconfig()
        by_exec["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": [str(tmp_path / "plugin.py"), str(tmp_path)],
                "interactiveMode": "Never",
            }
        }
        (tmp_path / "token.kc").write_text(yaml.safe_dump(by_token))
        (tmp_path / "exec.kc").write_text(yaml.safe_dump(by_exec))
        code, out = await _run("-c", SCRIPT, str(tmp_path / "token.kc"), str(tmp_path / "exec.kc"))
        assert (code, out.strip().splitlines()[-1:]) == (0, ["ok"]), out
        async with await KubeClient.from_kubeconfig(str(tmp_path / "token.kc"), qps=0) as kube:
            for name in ("by-token", "by-exec"):
                assert (await kube.get(NAMESPACES, name))["metadata"]["name"] == name


def test_nothing_changes_once_kubernetes_asyncio_is_imported() -> None:
    imported = sys.modules["kubernetes_asyncio"]  # imported in full by tests/conftest.py
    install()
    assert sys.modules["kubernetes_asyncio"] is imported


async def test_cel_workers_import_no_kubernetes_client() -> None:
    """Each agent runs CEL worker processes: they must stay small."""
    code, out = await _run(
        "-c",
        "import sys, workagent.conditions.worker\n"
        "assert 'kubernetes_asyncio' not in sys.modules, 'worker imports kubernetes_asyncio'\n"
        "print('ok')",
    )
    assert (code, out.strip()) == (0, "ok"), out
