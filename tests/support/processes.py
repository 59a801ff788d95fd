"""The programs as child processes, for the suites that test them from the outside.

One way to start ``workagent``, ``hubcontroller`` (or any module of ours) with
its output in a log file, stop it with SIGTERM (SIGKILL past a timeout) and
read what it printed; and free TCP ports for the flags that need one.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: How long a SIGTERM'd process may take before it is killed.
STOP_TIMEOUT = 30.0


@dataclass
class ProgramProcess:
    """A running program and the file holding everything it printed."""

    process: asyncio.subprocess.Process
    log_path: Path
    name: str = ""

    def exited(self) -> int | None:
        """The exit code if the process has ended, else None."""
        return self.process.returncode

    async def terminate(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then wait for the exit code (SIGKILL after ``timeout``)."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return await asyncio.wait_for(self.process.wait(), timeout=timeout)
            except TimeoutError:
                self.process.kill()
        return await self.process.wait()

    def log(self) -> str:
        """What the process wrote to stdout/stderr so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def program_command(program: str, *args: str) -> list[str]:
    """``uv run PROGRAM ARGS`` (or ``python -m PROGRAM`` without uv)."""
    uv = shutil.which("uv")
    if uv:
        return [uv, "run", "--frozen", "--no-sync", program, *args]
    return [sys.executable, "-m", program, *args]


def module_command(module: str, *args: str) -> list[str]:
    """``python -m MODULE ARGS`` with this interpreter.

    Not ``uv run``: uv keeps the program as its child, so a SIGKILL sent to
    the process it returns would kill uv and orphan the program.
    """
    return [sys.executable, "-m", module, *args]


def run_console_script(
    program: str, *args: str, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run this environment's installed ``program`` script (else ``python -m program``)
    with ``args`` to its end, 60 s at most: its exit code and output."""
    script = Path(sys.executable).parent / program
    command = [str(script)] if script.exists() else [sys.executable, "-m", program]
    return subprocess.run(
        [*command, *args], cwd=REPO, capture_output=True, text=True, timeout=60, check=check
    )


async def start_program(
    command: list[str], log_path: Path, *, name: str = "", append: bool = False
) -> ProgramProcess:
    """Start ``command`` in the repository with its output (both streams) in ``log_path``."""
    with log_path.open("ab" if append else "wb") as out:
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=str(REPO),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    return ProgramProcess(process, log_path, name)


async def start_agent_process(tmp_path: Path, *args: str) -> ProgramProcess:
    """Start ``uv run workagent agent ARGS``; output in ``agent-process.log``."""
    return await start_program(
        program_command("workagent", "agent", *args), tmp_path / "agent-process.log"
    )


async def start_manager_process(tmp_path: Path, *args: str) -> ProgramProcess:
    """Start ``hubcontroller manager ARGS``; output in ``manager-process.log``."""
    return await start_program(
        program_command("hubcontroller", "manager", *args), tmp_path / "manager-process.log"
    )


async def start_grpc_server_process(tmp_path: Path, *args: str) -> ProgramProcess:
    """Start ``hubcontroller grpc-server ARGS``; output in ``grpc-server-process.log``."""
    return await start_program(
        program_command("hubcontroller", "grpc-server", *args),
        tmp_path / "grpc-server-process.log",
    )


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    For the few flags that take a port and have no "pick one" value. The port
    is drawn from below the kernel's ephemeral range: a port the kernel hands
    out (``bind(0)``) can be taken by any outgoing connection before the child
    binds it, which once stopped a kube-apiserver in CI.
    """
    low, high = _ephemeral_range()
    candidates = range(10000, low) if low > 11000 else range(high + 1, 65536)
    for _ in range(200):
        port = secrets.choice(candidates)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        chosen: int = sock.getsockname()[1]
        return chosen


async def start_module(name: str, directory: Path, module: str, *args: str) -> ProgramProcess:
    """Start ``python -m module ARGS``; output in ``directory/<name>.log``."""
    return await start_program(module_command(module, *args), directory / f"{name}.log", name=name)
