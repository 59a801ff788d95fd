"""The CEL worker process: ``python -m workagent.conditions.worker``.

Reads one request per line on stdin and writes the answer lines of
:mod:`workagent.conditions.protocol` on stdout, flushing each line at once so
that the agent has every result obtained before it stops waiting. It exits
when stdin closes (the agent went away or no longer needs it).

Kernel limits back up the agent's timeout, so that a runaway evaluation dies
even if the agent cannot kill it (the agent itself killed with SIGKILL):

* ``--cpu-limit-seconds``: before each request the soft ``RLIMIT_CPU`` is set
  to the CPU time used so far plus this; past it the kernel ends the process;
* ``--memory-limit-mb``: ``RLIMIT_AS``, so a huge value fails with
  MemoryError (reported as over budget) instead of swapping the node.

``--cost-limit`` is the per-call cost limit (cel-go units; OCM's by default).

The worker imports only the standard library, celpy and the CEL modules of
this package, to start fast (~0.5 s, most of it building celpy's parser).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import BinaryIO

from workagent.conditions.celengine import CelEngine
from workagent.conditions.protocol import ProtocolError, decode_request
from workagent.conditions.reasons import PER_CALL_LIMIT

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None  # type: ignore[assignment]


def _limit_memory(megabytes: int) -> None:
    if resource is None or megabytes <= 0:
        return
    wanted = megabytes * 1024 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft <= wanted:
        return
    if hard != resource.RLIM_INFINITY and hard < wanted:
        wanted = hard
    with contextlib.suppress(ValueError, OSError):  # best effort
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def _arm_cpu_limit(seconds: int) -> None:
    """Allow ``seconds`` more CPU time from now."""
    if resource is None or seconds <= 0:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    wanted = int(usage.ru_utime + usage.ru_stime) + seconds
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        return
    with contextlib.suppress(ValueError, OSError):  # best effort
        resource.setrlimit(resource.RLIMIT_CPU, (wanted, hard))


def _protocol_stream() -> BinaryIO:
    # Keep the real stdout for protocol lines and point fd 1 at stderr, so
    # that a stray print (from celpy, lark or a warning) cannot corrupt them.
    stream = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def serve(
    stdin: BinaryIO, stdout: BinaryIO, *, cpu_limit_seconds: int, cost_limit: int = PER_CALL_LIMIT
) -> int:
    """Answer requests until stdin closes."""
    engine = CelEngine(cost_limit=cost_limit)
    stdout.write(json.dumps({"ready": True, "pid": os.getpid()}).encode() + b"\n")
    stdout.flush()
    while True:
        line = stdin.readline()
        if not line:
            return 0
        _arm_cpu_limit(cpu_limit_seconds)
        try:
            obj, programs, limits = decode_request(line)
        except (ValueError, KeyError, TypeError, ProtocolError) as exc:
            # The agent is out of step with us: only a restart can fix that.
            print(f"cel worker: bad request: {exc}", file=sys.stderr)
            return 2
        for answer in engine.run(obj, programs, limits):
            stdout.write(answer)
            stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the worker process."""
    parser = argparse.ArgumentParser(prog="workagent.conditions.worker")
    parser.add_argument("--memory-limit-mb", type=int, default=1024)
    parser.add_argument("--cpu-limit-seconds", type=int, default=60)
    parser.add_argument("--cost-limit", type=int, default=PER_CALL_LIMIT)
    args = parser.parse_args(argv)
    _limit_memory(args.memory_limit_mb)
    stream = _protocol_stream()
    try:
        return serve(
            sys.stdin.buffer,
            stream,
            cpu_limit_seconds=args.cpu_limit_seconds,
            cost_limit=args.cost_limit,
        )
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # pragma: no cover - interactive use
        return 130


if __name__ == "__main__":
    sys.exit(main())
