"""The agent under soak as a child process, and its memory and CPU read from ``/proc``.

The agent is started with this interpreter (``python -m workagent agent``),
not through ``uv run``: uv would keep the agent as its child, so a SIGKILL
would hit uv and the RSS read would be uv's.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.faults.invariants import CLUSTER
from tests.support.processes import free_port, module_command, start_program

#: Clock ticks per second, the unit of utime and stime in ``/proc/<pid>/stat``.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: How long a SIGTERM'ed agent may take to exit before it is killed.
SHUTDOWN_SECONDS = 30.0


def rss_kib(pid: int) -> int | None:
    """Resident set size of ``pid`` in KiB (``VmRSS``), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of ``pid`` in seconds, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    # Of the remaining fields, [0] is field 3 (state), so utime (14) and stime (15)
    # are [11] and [12].
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class Sample:
    """One reading of the running agent: seconds since the start of the soak."""

    t: float
    pid: int
    rss_kib: int
    cpu_seconds: float


class AgentProcesses:
    """Starts ``workagent agent`` for ``cluster1``, kills it, restarts it, stops it."""

    def __init__(self, workdir: Path, status_sync_seconds: float) -> None:
        self.workdir = workdir
        self.status_sync_seconds = status_sync_seconds
        self.log_path = workdir / "agent.log"
        self.process: asyncio.subprocess.Process | None = None
        self.starts = 0
        self.port = 0

    @property
    def pid(self) -> int | None:
        """The running agent's pid (None while none runs)."""
        if self.process is None or self.process.returncode is not None:
            return None
        return self.process.pid

    async def start(self) -> int:
        """Start a new agent process (output appended to ``agent.log``); returns its pid."""
        self.starts += 1
        # A known port, so the soak can ask /readyz whether the new agent is up.
        self.port = free_port()
        args = (
            f"--spoke-cluster-name={CLUSTER}",
            f"--workload-source-config={self.workdir / 'hub.kubeconfig'}",
            f"--spoke-kubeconfig={self.workdir / 'spoke.kubeconfig'}",
            f"--status-sync-interval={self.status_sync_seconds:g}s",
            "--disable-leader-election",
            f"--listen=127.0.0.1:{self.port}",
        )
        with self.log_path.open("ab") as out:
            out.write(f"--- agent process {self.starts}\n".encode())
        command = module_command("workagent", "agent", *args)
        self.process = (await start_program(command, self.log_path, append=True)).process
        return self.process.pid

    async def ready(self) -> bool:
        """Whether the running agent answers ``/readyz`` with 200 (informers synced).

        The probes are served over HTTPS with a self-signed certificate unless
        the agent runs with ``--insecure-serving``; either is accepted (the soak
        reads readiness, it does not authenticate the agent).
        """
        if self.pid is None:
            return False
        timeout = aiohttp.ClientTimeout(total=2.0)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for scheme in ("https", "http"):
                try:
                    async with session.get(
                        f"{scheme}://127.0.0.1:{self.port}/readyz", ssl=False
                    ) as response:
                        return response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    continue
        return False

    async def kill(self) -> None:
        """SIGKILL the running agent and reap it."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self.process = None

    async def stop(self) -> int | None:
        """SIGTERM the running agent and return its exit code (SIGKILL after a while)."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                return await asyncio.wait_for(process.wait(), timeout=SHUTDOWN_SECONDS)
            except TimeoutError:
                process.kill()
        return await process.wait()

    def exited(self) -> int | None:
        """The exit code if the current agent exited on its own, else None."""
        return None if self.process is None else self.process.returncode

    def sample(self, t: float) -> Sample | None:
        """Read the running agent's RSS and CPU time (None while none runs)."""
        pid = self.pid
        if pid is None:
            return None
        rss, cpu = rss_kib(pid), cpu_seconds(pid)
        if rss is None or cpu is None:
            return None
        return Sample(t, pid, rss, cpu)
