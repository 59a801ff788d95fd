"""The real control plane's launcher: it serves, audits, and leaves nothing behind.

Each test starts a child Python process that runs the launcher (as a test
session would), then ends it the way a run can end: normally, by SIGTERM
(Ctrl-C in CI, a timeout) or by SIGKILL. Afterwards no process it started is
alive, no port is still listening and its data folders are gone (after a
SIGKILL, at the next launcher start, which sweeps folders whose owner died).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.controlplane import RUN_PREFIX, ControlPlane, Etcd, sweep_stale
from tests.support.processes import free_port

pytestmark = pytest.mark.realkube

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys, time
from tests.support.targets import plane_pool
with plane_pool() as pool:
    plane = pool.take()
    plane.write_kubeconfig(sys.argv[1])
    info = {
        "pids": [p.popen.pid for p in plane.processes] + [pool.etcd.process.popen.pid],
        "ports": [plane.port, pool.etcd.port],
        "dirs": [str(plane.dir), str(pool.etcd.dir)],
    }
    print(json.dumps(info), flush=True)
    if sys.argv[2] == "exit":
        sys.stdin.readline()  # the test has looked at what runs: now end normally
        raise SystemExit(0)
    time.sleep(600)  # sleep-ok: waits to be signalled by the test
"""


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:port."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def wait_until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``check()`` until true or fail."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)  # sleep-ok: polling processes with a deadline


def run_child(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], dict[str, list[Any]]]:
    """Start the child and read what it started."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "kubeconfig"), mode],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line, f"the child printed nothing (exit {child.wait()})"
    return child, json.loads(line)


def assert_nothing_left(info: dict[str, list[Any]]) -> None:
    """No process, port or folder of the child's control plane remains."""
    wait_until(lambda: not any(alive(pid) for pid in info["pids"]), "the processes to end")
    wait_until(lambda: not any(listening(port) for port in info["ports"]), "the ports to close")
    sweep_stale()
    assert [d for d in info["dirs"] if Path(d).exists()] == []


@pytest.mark.parametrize("ending", ["exit", "sigterm", "sigkill"])
def test_nothing_is_left_however_the_run_ends(tmp_path: Path, ending: str) -> None:
    child, info = run_child(tmp_path, "exit" if ending == "exit" else "wait")
    assert len(info["pids"]) == 3 and all(alive(pid) for pid in info["pids"])
    assert all(listening(port) for port in info["ports"])
    if ending == "exit":
        assert child.stdin is not None
        child.stdin.close()  # the child's readline returns: it exits normally
        child.wait(timeout=60)
    else:
        got = subprocess.run(
            ["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig"), "get", "--raw", "/readyz"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert got.stdout == "ok", got.stderr
        child.send_signal(signal.SIGTERM if ending == "sigterm" else signal.SIGKILL)
        child.wait(timeout=60)
        if ending == "sigterm":
            # A SIGTERM is a clean teardown: the folders are gone at once.
            assert [d for d in info["dirs"] if Path(d).exists()] == []
    assert_nothing_left(info)


def test_serves_identities_rbac_and_the_audit_log(tmp_path: Path) -> None:
    etcd = Etcd()
    etcd.start()
    plane = ControlPlane("launcher", etcd)
    # Something else takes the chosen port before the apiserver binds it (in CI
    # an outgoing connection once did): the launcher moves to another port.
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", plane.port))
    squatter.listen()
    taken = plane.port
    try:
        plane.start()
        assert plane.port != taken
        assert plane.url == f"https://127.0.0.1:{plane.port}"
        admin = tmp_path / "admin"
        agent = tmp_path / "agent"
        plane.write_kubeconfig(admin)
        plane.write_kubeconfig(agent, token=plane.identities["ocm-work-agent"].token)
        since = plane.audit_offset()

        def kubectl(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["kubectl", "--kubeconfig", str(config), *args],
                check=False,
                capture_output=True,
                text=True,
                timeout=30,
            )

        assert kubectl(admin, "get", "ns", "default", "-o", "name").stdout.strip() == (
            "namespace/default"
        )
        denied = kubectl(agent, "get", "configmaps", "-n", "default")
        assert denied.returncode != 0 and "Forbidden" in denied.stderr
        version = json.loads(kubectl(admin, "get", "--raw", "/version").stdout)
        assert version["gitVersion"].startswith("v1.")

        # Answered requests are in the log at once (settle_audit): no waiting here.
        assert any(
            e["user"]["username"] == plane.identities["ocm-work-agent"].name
            and e["verb"] == "list"
            and e["responseStatus"]["code"] == 403
            for e in plane.audit_events(since)
        )
    finally:
        squatter.close()
        plane.stop()
        etcd.stop()
    assert not plane.dir.exists() and not etcd.dir.exists()


def test_sweep_keeps_folders_of_live_owners(tmp_path: Path) -> None:
    live = tmp_path / f"{RUN_PREFIX}live"
    dead = tmp_path / f"{RUN_PREFIX}dead"
    for folder, pid in ((live, os.getpid()), (dead, 2**22 + 7)):
        folder.mkdir()
        (folder / "owner.pid").write_text(str(pid))
    removed = sweep_stale(tmp_path)
    assert removed == [dead]
    assert live.exists() and not dead.exists()


@pytest.mark.parametrize("_", range(3))
def test_free_ports_are_outside_the_range_outgoing_connections_use(_: int) -> None:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    port = free_port()
    assert not int(low) <= port <= int(high)
    assert not listening(port)
