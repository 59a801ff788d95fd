"""The ``kubesim serve`` command: kubeconfig, signals, state file, bad flags."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import yaml

from tests.conftest import Kubectl, eventually


async def _serve(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubesim",
        "serve",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _wait_file(path: Path, proc: asyncio.subprocess.Process) -> None:
    async def ready() -> bool:
        assert proc.returncode is None, "kubesim exited early"
        return path.exists()

    await eventually(ready, timeout=20, what=f"{path} to be written")


async def _stop(proc: asyncio.subprocess.Process) -> int:
    proc.send_signal(signal.SIGTERM)
    # Reading the pipes while waiting: a child blocked on a full pipe never exits.
    # The deadline is a hang guard (a loaded CI machine once took over 10 s).
    await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode


async def test_serve_writes_kubeconfig_and_stops_on_sigterm(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    proc = await _serve("--port", "0", "--kubeconfig", str(kc), "--simulate-workloads")
    await _wait_file(kc, proc)
    cfg = yaml.safe_load(kc.read_text())
    assert cfg["clusters"][0]["cluster"]["server"].startswith("http://127.0.0.1:")
    assert cfg["users"][0]["user"]["token"]
    assert oct(kc.stat().st_mode & 0o777) == "0o600"
    kubectl = Kubectl(kc)
    await kubectl("create", "namespace", "cli")
    out = await kubectl("get", "ns", "cli", "-o", "jsonpath={.status.phase}")
    assert out.stdout == "Active"
    assert await _stop(proc) == 0


async def test_state_file_survives_a_restart_on_the_same_port(tmp_path: Path) -> None:
    kc, state = tmp_path / "kc", tmp_path / "state.json"
    proc = await _serve("--port", "0", "--kubeconfig", str(kc), "--state-file", str(state))
    await _wait_file(kc, proc)
    server = yaml.safe_load(kc.read_text())["clusters"][0]["cluster"]["server"]
    port = server.rsplit(":", 1)[1]
    await Kubectl(kc)("create", "namespace", "kept")
    assert await _stop(proc) == 0
    assert state.exists()
    kc.unlink()
    proc = await _serve("--port", port, "--kubeconfig", str(kc), "--state-file", str(state))
    await _wait_file(kc, proc)
    out = await Kubectl(kc)("get", "ns", "kept", "-o", "name")
    assert out.stdout.strip() == "namespace/kept"
    assert await _stop(proc) == 0


async def test_tls_mode_requires_a_token(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    proc = await _serve(
        "--port", "0", "--kubeconfig", str(kc), "--tls", "--user", "bob:bobtoken:devs"
    )
    await _wait_file(kc, proc)
    cfg = yaml.safe_load(kc.read_text())
    assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]
    kubectl = Kubectl(kc)
    assert (await kubectl("get", "ns", "-o", "name")).returncode == 0
    denied = await kubectl("get", "ns", "--token=wrong", check=False)
    assert denied.returncode != 0
    assert "Unauthorized" in denied.stderr or "credentials" in denied.stderr
    assert (await kubectl("get", "ns", "-o", "name", "--token=bobtoken")).returncode == 0
    assert await _stop(proc) == 0


async def test_bad_flags_fail_fast_with_exit_code_2(tmp_path: Path) -> None:
    for args in (
        ["--port", "nope", "--kubeconfig", "x"],
        ["--port", "70000", "--kubeconfig", "x"],
        ["--kubeconfig", "x"],
        ["--port", "0", "--kubeconfig", "x", "--bogus"],
        ["--port", "0", "--kubeconfig", str(tmp_path / "kc"), "--user", "nocolon"],
    ):
        proc = await _serve(*args)
        _, err = await asyncio.wait_for(proc.communicate(), timeout=20)
        assert proc.returncode == 2, (args, err)
        assert err.decode().strip(), args


async def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    first = await _serve("--port", "0", "--kubeconfig", str(kc))
    await _wait_file(kc, first)
    port = yaml.safe_load(kc.read_text())["clusters"][0]["cluster"]["server"].rsplit(":", 1)[1]
    second = await _serve("--port", port, "--kubeconfig", str(tmp_path / "kc2"))
    _, err = await asyncio.wait_for(second.communicate(), timeout=20)
    assert second.returncode == 1 and b"cannot listen" in err
    assert not (tmp_path / "kc2").exists()
    assert await _stop(first) == 0
    assert os.path.exists(kc)
