"""OCM's own Go programs as test peers: its hub gRPC server and its work agent.

``make ocm`` builds them (``server``, ``work``) from the Go module proxy into
``.tools/ocm/<version>/`` (module ``tests/support/ocm-build``). A test that
needs one fails with a message naming that target when it is missing; the
real leg of ``make test`` builds them first. Each runs as a child process
that dies with the test run (``setpriv --pdeathsig``), its output in a log
file the failure messages quote.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.controlplane import REPO, Process, spawn
from tests.support.processes import ProgramProcess, free_port, start_agent_process
from tests.support.targets import REAL, Cluster, PlanePool, open_cluster

BUILD_MODULE = REPO / "tests" / "support" / "ocm-build"


class OcmPeerError(RuntimeError):
    """An OCM binary is missing, or one of its processes failed."""


def ocm_version() -> str:
    """The ``open-cluster-management.io/ocm`` version pinned in the build module."""
    for line in (BUILD_MODULE / "go.mod").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "open-cluster-management.io/ocm":
            return parts[1]
    raise OcmPeerError(f"{BUILD_MODULE / 'go.mod'} does not require open-cluster-management.io/ocm")


def ocm_binary(name: str) -> Path:
    """``.tools/ocm/<version>/<name>``; a clear error when ``make ocm`` has not run."""
    path = REPO / ".tools" / "ocm" / ocm_version() / name
    if not path.is_file():
        raise OcmPeerError(f"{path} is not built: run `make ocm` (needs Go and the module proxy)")
    return path


@dataclass
class Peer:
    """One running OCM process."""

    process: Process

    def log(self) -> str:
        """What the process wrote so far."""
        return self.process.log.read_text(errors="replace")

    def check_alive(self) -> None:
        """Raise with the end of its log if it has exited."""
        try:
            self.process.check_alive()
        except RuntimeError as err:
            raise OcmPeerError(str(err)) from None

    async def stop(self, *, kill: bool = False) -> None:
        """SIGTERM (SIGKILL with ``kill``: a crash), SIGKILL after 10 s."""
        await asyncio.to_thread(functools.partial(self.process.stop, 10.0, kill=kill))


class RestartablePeer:
    """Base of a test's handle on one OCM process it starts, stops and starts again."""

    peer: Peer | None

    async def stop(self, *, kill: bool = False) -> None:
        """Stop the process (with ``kill``: crash it); nothing if it never started."""
        if self.peer is not None:
            await self.peer.stop(kill=kill)

    def check_alive(self) -> None:
        """Raise with its log if it exited."""
        assert self.peer is not None
        self.peer.check_alive()


def _fresh_log(log: Path) -> Path:
    """``log``, after moving an earlier run's (a restart) aside."""
    if log.exists():
        log.rename(log.with_suffix(f".{log.stat().st_mtime_ns}.log"))
    return log


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def start_ocm_server(
    folder: Path,
    *,
    hub_kubeconfig: Path,
    cert: Path,
    key: Path,
    client_ca: Path,
    port: int = 0,
    extra: tuple[str, ...] = (),
) -> tuple[Peer, int]:
    """``server grpc`` serving mTLS on ``port`` (a free one by default; it binds every
    interface, there is no option to bind loopback only), with ``extra`` flags (e.g.
    ``--broker-heartbeat-disabled``); returns it and the port."""
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    config: dict[str, Any] = {
        "tls_cert_file": str(cert),
        "tls_key_file": str(key),
        "client_ca_file": str(client_ca),
        "server_bind_port": str(port),
    }
    config_path = folder / "server-config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    argv = [
        str(ocm_binary("server")),
        "grpc",
        f"--kubeconfig={hub_kubeconfig}",
        f"--server-config={config_path}",
        f"--listen=127.0.0.1:{free_port()}",
        "--disable-leader-election",
        *extra,
    ]
    peer = Peer(spawn("ocm-grpc-server", argv, _fresh_log(folder / "ocm-server.log")))
    await wait_port(peer, port, "OCM's gRPC server")
    return peer, port


async def wait_port(peer: Peer, port: int, what: str, timeout: float = 60.0) -> None:
    """Wait until ``peer`` listens on ``port``; stop it and raise if it does not in time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await asyncio.to_thread(_port_open, port):
        peer.check_alive()
        if loop.time() > deadline:
            await peer.stop()
            raise OcmPeerError(f"{what} did not listen on {port}:\n{peer.log()[-3000:]}")
        await asyncio.sleep(0.1)  # sleep-ok: polling a child process's port with a deadline


def grpc_source(source_config: Path, client_id: str) -> tuple[str, ...]:
    """The Klusterlet's CloudEvents flags of OCM's agent (gRPC driver)."""
    return (
        "--workload-source-driver=grpc",
        f"--workload-source-config={source_config}",
        f"--cloudevents-client-id={client_id}",
    )


def start_ocm_agent(
    folder: Path,
    *,
    cluster: str,
    source: tuple[str, ...],
    spoke_kubeconfig: Path,
    extra: tuple[str, ...] = (),
) -> Peer:
    """``work agent`` for ``cluster`` receiving works by ``source`` (its flags: a hub
    kubeconfig, or :func:`grpc_source`), applying them with ``spoke_kubeconfig``."""
    folder.mkdir(parents=True, exist_ok=True)
    argv = [
        str(ocm_binary("work")),
        "agent",
        f"--spoke-cluster-name={cluster}",
        *source,
        f"--kubeconfig={spoke_kubeconfig}",
        f"--spoke-kubeconfig={spoke_kubeconfig}",
        f"--listen=127.0.0.1:{free_port()}",
        "--disable-leader-election",
        "--status-sync-interval=1s",
        *extra,
    ]
    return Peer(spawn("ocm-work-agent", argv, _fresh_log(folder / "ocm-agent.log")))


async def start_our_agent(
    folder: Path,
    *,
    cluster: str,
    source: tuple[str, ...],
    spoke_kubeconfig: Path,
    listen: str = "127.0.0.1:0",
) -> ProgramProcess:
    """Our agent as a process with the flags :func:`start_ocm_agent` gives OCM's,
    its endpoint on plain HTTP at ``listen``."""
    return await start_agent_process(
        folder,
        f"--spoke-cluster-name={cluster}",
        *source,
        f"--kubeconfig={spoke_kubeconfig}",
        f"--spoke-kubeconfig={spoke_kubeconfig}",
        f"--listen={listen}",
        "--insecure-serving",
        "--disable-leader-election",
        "--status-sync-interval=1s",
    )


# -- real-only clusters: OCM's programs need a real API server (RBAC, SAR, watches) --


@pytest.fixture
async def hub(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Cluster]:
    """A real hub (no kubesim instance: OCM's server needs the real one)."""
    async with open_cluster(REAL, realkube_pool) as cluster:
        cluster.write_kubeconfig(tmp_path / "hub.kubeconfig")
        yield cluster


@pytest.fixture
async def spoke(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Cluster]:
    """A real managed cluster."""
    async with open_cluster(REAL, realkube_pool) as cluster:
        cluster.write_kubeconfig(tmp_path / "spoke.kubeconfig")
        yield cluster
