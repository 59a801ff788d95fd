"""Where the agent's memory goes with N idle works: RSS, allocation sites, caches.

The scenario is the suite's (``bench_scenarios.AgentRun``): fresh kubesims, a
warm-up work, then N works of M ConfigMaps created at once, all Applied and
Available, and a quiet window. Then the agent process (started through this
file's ``agent`` wrapper) is sent SIGUSR1 and writes a report:

- VmRSS and VmHWM;
- with ``--frames`` > 0 (``PYTHONTRACEMALLOC``): the top allocation sites by
  line, and the top tracebacks, of the memory Python holds now;
- the deep size of the agent's caches, found with the garbage collector
  (informer stores, the polled-reads lists, remembered writes, the apply
  cache), each counted on its own (strings shared between them count in each).

A benchmark, not a test: it prints figures and asserts nothing. Tracing costs
time and memory itself, so RSS is comparable only between runs with the same
``--frames`` (0 for the figure the suite reports).

Usage::

    python tests/benchmarks/memory_bench.py [--n 500] [--manifests 5] [--frames 0|1|8]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import benchkit
from bench_scenarios import KUBESIM, AgentRun, AgentSpec, Clusters, Params, Target, agent_argv

REPORT_ENV = "MEMORY_BENCH_REPORT"
TOP = 30

# -- inside the agent process ----------------------------------------------------------

_JSON_CONTAINERS = (dict, list, tuple, set, frozenset)
_LEAVES = (str, bytes, int, float, bool, type(None))


def deep_size(root: Any, seen: set[int] | None = None) -> tuple[int, int]:
    """Bytes and objects reachable from ``root`` through containers and plain instances.

    Follows dicts, lists, tuples, sets and instance ``__dict__``/slots; stops at
    modules, classes, functions and anything else (their memory is not the cache's).
    """
    seen = set() if seen is None else seen
    size = count = 0
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        size += sys.getsizeof(obj)
        count += 1
        if isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        elif isinstance(obj, _JSON_CONTAINERS):
            todo.extend(obj)
        elif isinstance(obj, _LEAVES):
            continue
        elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("workagent"):
            todo.append(vars(obj))
    return size, count


def _objects(root: Any) -> list[dict[str, Any]]:
    """The Kubernetes objects (dicts with ``metadata`` and ``apiVersion``) under ``root``."""
    out, seen, todo = [], set(), [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, dict):
            if "apiVersion" in obj and isinstance(obj.get("metadata"), dict):
                out.append(obj)
                continue
            todo.extend(obj.values())
        elif isinstance(obj, _JSON_CONTAINERS):
            todo.extend(obj)
        elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("workagent"):
            todo.append(vars(obj))
    return out


def _managed_fields(root: Any) -> list[Any]:
    """The ``metadata.managedFields`` of every object under ``root``."""
    return [o["metadata"].get("managedFields") for o in _objects(root)]


def _caches() -> list[tuple[str, Any]]:
    """The agent's object caches, by a readable name (found through the collector)."""
    from ocmkit.runtime.informer import Informer
    from ocmkit.runtime.recentwrites import RecentWrites
    from workagent.apply.cache import ApplyCache
    from workagent.polledreads import PolledReads

    out: list[tuple[str, Any]] = []
    for obj in gc.get_objects():
        if isinstance(obj, Informer):
            out.append((f"informer {obj.name}: store", obj.store))
            out.append((f"informer {obj.name}: pending notifications", obj._listeners))
        elif isinstance(obj, PolledReads):
            out.append(("polled reads", obj._buckets))
        elif isinstance(obj, RecentWrites):
            out.append((f"recent writes {id(obj):x}", obj._writes))
        elif isinstance(obj, ApplyCache):
            out.append(("apply cache", obj._entries))
    return out


def _rss() -> str:
    status = Path("/proc/self/status").read_text().splitlines()
    return " ".join(
        line.replace("\t", "").replace("    ", " ")
        for line in status
        if line.startswith(("VmRSS", "VmHWM"))
    )


def write_report(path: Path) -> None:
    """The report of this process: RSS, allocation sites, caches, object counts."""
    import tracemalloc

    gc.collect()
    lines = [f"rss: {_rss()}"]
    if tracemalloc.is_tracing():
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        total = sum(s.size for s in snap.statistics("filename"))
        lines.append(f"traced: {total / 2**20:.1f} MiB")
        lines.append("top lines:")
        for stat in snap.statistics("lineno")[:TOP]:
            frame = stat.traceback[0]
            lines.append(
                f"  {stat.size / 2**20:7.2f} MiB {stat.count:8d}  {frame.filename}:{frame.lineno}"
            )
        if tracemalloc.get_traceback_limit() > 1:
            lines.append("top tracebacks:")
            for stat in snap.statistics("traceback")[:12]:
                lines.append(f"  {stat.size / 2**20:7.2f} MiB {stat.count:8d}")
                limit = tracemalloc.get_traceback_limit()
                lines.extend(f"      {text}" for text in stat.traceback.format(limit=limit))
    lines.append("caches (deep size, each on its own):")
    for name, root in _caches():
        size, count = deep_size(root)
        fields = sum(deep_size(f)[0] for f in _managed_fields(root))
        lines.append(
            f"  {size / 2**20:7.2f} MiB {count:8d}  {name} (managedFields {fields / 2**20:.2f} MiB)"
        )
    lines.append("strings (all / distinct values, MiB):")
    for name, root in _caches():
        strings: dict[int, str] = {}
        todo, seen = [root], set()
        while todo:
            obj = todo.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if isinstance(obj, str):
                strings[id(obj)] = obj
            elif isinstance(obj, dict):
                todo.extend(obj.keys())
                todo.extend(obj.values())
            elif isinstance(obj, _JSON_CONTAINERS):
                todo.extend(obj)
            elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("workagent"):
                todo.append(vars(obj))
        every = sum(sys.getsizeof(v) for v in strings.values())
        distinct = sum(sys.getsizeof(v) for v in set(strings.values()))
        lines.append(f"  {every / 2**20:7.2f} {distinct / 2**20:7.2f}  {name}")
    lines.append("sample objects (JSON bytes):")
    for name, root in _caches():
        sample = next(iter(_objects(root)), None)
        if sample is not None:
            lines.append(f"  {name}: {len(json.dumps(sample))} {json.dumps(sample)[:3000]}")
    kinds = Counter(type(o).__name__ for o in gc.get_objects())
    lines.append("gc-tracked objects: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common(12)))
    path.write_text("\n".join(lines) + "\n")


def agent_main(argv: list[str]) -> None:
    """Run ``workagent`` with ``argv``; SIGUSR1 writes the report to $MEMORY_BENCH_REPORT."""
    from workagent.__main__ import main

    report = Path(os.environ[REPORT_ENV])

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        write_report(report)

    signal.signal(signal.SIGUSR1, on_signal)
    main(argv)


# -- the driver ------------------------------------------------------------------------


class MemoryRun(AgentRun):
    """The suite's run, with the agent started through this file's wrapper."""

    frames = 0
    report = Path()

    def start_agent(self, hub_kc: Path, spoke_kc: Path) -> None:
        """The agent under ``agent_main``, traced with ``frames`` frames (0: not traced)."""
        argv = agent_argv(self.spec, hub_kc, spoke_kc, self.cluster, self.port, self.p)
        wrapped = [sys.executable, __file__, *argv[3:]]  # argv[3] is "agent"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", REPORT_ENV: str(self.report)}
        if self.frames:
            env["PYTHONTRACEMALLOC"] = str(self.frames)
        with (self.tmp / "agent.log").open("wb") as log:
            self.agent = subprocess.Popen(wrapped, stdout=log, stderr=subprocess.STDOUT, env=env)


async def measure(n: int, manifests: int, frames: int, idle: float) -> str:
    """One run: N works applied and idle, then the agent's report."""
    with tempfile.TemporaryDirectory(prefix="membench-") as name:
        tmp = Path(name)
        sims = [
            benchkit.start_kubesim(tmp / f"{w}.kubeconfig", tmp / f"{w}.log")
            for w in ("hub", "spoke")
        ]
        run = MemoryRun(
            Target(KUBESIM), AgentSpec("ours"), n, Params(manifests=manifests), "m", tmp
        )
        run.frames, run.report = frames, tmp / "report.txt"
        try:
            for w, proc in zip(("hub", "spoke"), sims, strict=True):
                await benchkit.wait_file(tmp / f"{w}.kubeconfig", proc)
            hub_kc, spoke_kc = tmp / "hub.kubeconfig", tmp / "spoke.kubeconfig"
            await run.setup(Clusters(hub_kc, spoke_kc, hub_kc, spoke_kc))
            run.start_agent(hub_kc, spoke_kc)
            await run.warm_up()
            t0 = time.perf_counter()
            await run.apply()
            print(f"applied and available in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            await asyncio.sleep(idle)  # sleep-ok: the idle window being measured
            assert run.agent is not None
            run.agent.send_signal(signal.SIGUSR1)
            await benchkit.until(run.report.exists, run.agent, 300, "the report")
            await benchkit.until(
                lambda: run.report.read_text().endswith("\n"), run.agent, 60, "the report"
            )
            return run.report.read_text()
        finally:
            await run.close()
            for proc in sims:
                benchkit.stop(proc)


def main() -> None:
    """Parse the command line; ``agent ...`` is the wrapper the driver starts."""
    if len(sys.argv) > 1 and sys.argv[1] == "agent":
        agent_main(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--manifests", type=int, default=5)
    parser.add_argument("--frames", type=int, default=0, help="tracemalloc frames (0: off)")
    parser.add_argument("--idle", type=float, default=25.0, help="seconds idle before the report")
    args = parser.parse_args()
    print(asyncio.run(measure(args.n, args.manifests, args.frames, args.idle)))


if __name__ == "__main__":
    main()
