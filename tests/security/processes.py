"""Our commands as child processes, their output kept whole for inspection.

Each process is started with ``sys.executable -m <module>`` (the interpreter
of the test run, so the locked dependencies) and writes stdout and stderr to
one file: every line it ever logged, with its real logging configuration.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STOP_TIMEOUT = 30.0


@dataclass
class ChildProcess:
    """A running command and the file holding everything it printed."""

    name: str
    process: asyncio.subprocess.Process
    log_path: Path

    def exited(self) -> int | None:
        """The exit code if the process has ended, else None."""
        return self.process.returncode

    async def stop(self) -> int:
        """SIGTERM and wait for the exit code (SIGKILL after :data:`STOP_TIMEOUT`)."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return await asyncio.wait_for(self.process.wait(), timeout=STOP_TIMEOUT)
            except TimeoutError:
                self.process.kill()
        return await self.process.wait()

    def output(self) -> str:
        """Everything the process printed so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


async def start_module(name: str, directory: Path, module: str, *args: str) -> ChildProcess:
    """Start ``python -m module ARGS`` with its output going to ``directory/<name>.log``."""
    log_path = directory / f"{name}.log"
    with log_path.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            *args,
            cwd=str(REPO),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    return ChildProcess(name, process, log_path)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    For the few flags that take a port and have no "pick one" value; the
    window between closing and the child binding it is short enough here.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
