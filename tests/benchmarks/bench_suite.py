"""The benchmark suite: every scenario, several runs, one JSON, a Markdown summary, plots.

``make bench`` runs it. A benchmark, not a test: it prints figures and never
fails on a timing. Each run of the agent scenarios (``bench_scenarios.py``)
gets a fresh real control plane (etcd, kube-apiserver, kube-controller-manager
from ``make realkube``; ``--target kubesim``: two fresh kubesims) and a fresh
agent process, once per client QPS column (OCM's default 50/100 first, then
unlimited). On kubesim the hub fan-out also runs the ManifestWorkReplicaSet
controller as ``mwrs_bench.py`` does. Runs are interleaved (run 1 of every
QPS, N and agent, then run 2, ...), and with ``--agent-cmd`` ours and the peer
alternate (A/B/A/B), so both see the same machine; ratios are taken within a
run, then their median.

Usage::

    python tests/benchmarks/bench_suite.py [--n 100,500] [--runs 3] [--full] ...
    python tests/benchmarks/bench_suite.py report bench-results/STAMP.json
    python tests/benchmarks/bench_suite.py docs [bench-results/STAMP.json]

Output: ``bench-results/<timestamp>.json`` (machine, commit, parameters, every
run's raw figures, medians, ratios), ``<timestamp>.md`` and
``<timestamp>-*.png`` (when matplotlib is installed: the ``bench`` group).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import bench_report
import bench_scenarios
import mwrs_bench
from bench_scenarios import CLUSTERS, KUBESIM, REAL, AgentSpec, Params, Target

from ocmkit.runtime import configure_logging
from tests.support.controlplane import bin_dir, kube_version

REPO = Path(__file__).resolve().parents[2]
QUICK_N = (100, 500)
FULL_N = (100, 500, 1000)
DEFAULT_QPS = "50,0"  # OCM's default (burst 100), then unlimited
SCHEMA = "ocm-work-bench/2"


#: OCM's work agent (``work agent``) at the suite's flags. ``--kubeconfig`` too: its
#: controller framework (library-go) builds a client from it, else from the pod's
#: service account, and exits outside a pod.
OCM_AGENT_CMD = (
    "{binary} agent --spoke-cluster-name={{cluster}} "
    "--workload-source-config={{hub_kubeconfig}} --kubeconfig={{spoke_kubeconfig}} "
    "--spoke-kubeconfig={{spoke_kubeconfig}} --disable-leader-election "
    "--listen=127.0.0.1:{{metrics_port}} --status-sync-interval={{status_sync_interval}} "
    "--kube-api-qps={{kube_api_qps}} --kube-api-burst={{kube_api_burst}} "
    "--hub-kube-api-qps={{kube_api_qps}} --hub-kube-api-burst={{kube_api_burst}}"
)


# -- the machine and the tree ----------------------------------------------------------


def machine() -> dict[str, Any]:
    """Cores, CPU model, memory, OS, Python and the load average now."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_kib = 0
    try:
        first = Path("/proc/meminfo").read_text().splitlines()[0]
        memory_kib = int(first.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return {
        "cores": len(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": round(memory_kib / 2**20, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_start": list(os.getloadavg()),
    }


def git() -> dict[str, Any]:
    """The commit measured, and whether the tree had changes (other work in progress)."""

    def out(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    return {
        "commit": out("rev-parse", "HEAD") or "unknown",
        "dirty": bool(out("status", "--porcelain")),
    }


# -- the command line ------------------------------------------------------------------


def parse(argv: list[str]) -> argparse.Namespace:
    """The ``run`` options."""
    parser = argparse.ArgumentParser(
        prog="bench_suite.py", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--n", help=f"works per run, comma-separated (default {QUICK_N})")
    parser.add_argument("--full", action="store_true", help=f"N = {FULL_N}, feedback at every N")
    parser.add_argument("--runs", type=int, default=3, help="runs per scenario (medians)")
    parser.add_argument("--manifests", type=int, default=5, help="ConfigMaps per work (M)")
    parser.add_argument("--samples", type=int, default=10, help="latency samples per run")
    parser.add_argument("--window", type=float, default=10.0, help="steady-state window, s")
    parser.add_argument(
        "--settle",
        type=float,
        default=bench_scenarios.SETTLE_QUIET,
        help="seconds without a write of the agent that count as settled",
    )
    parser.add_argument(
        "--status-sync-interval", type=float, default=10.0, help="the agent's, s (OCM's default)"
    )
    parser.add_argument(
        "--agent-qps",
        default=DEFAULT_QPS,
        help="the agents' client QPS, one column each, comma-separated; burst = 2 x QPS, "
        f"hub the same; 0: unlimited (default {DEFAULT_QPS}: OCM's 50/100, then unlimited)",
    )
    parser.add_argument(
        "--feedback-n", help="N values that run the feedback scenario (default: every N)"
    )
    parser.add_argument(
        "--fanout-clusters",
        type=int,
        default=1000,
        help="clusters of the hub fan-out, kubesim target only (0: skip)",
    )
    parser.add_argument(
        "--target",
        choices=(REAL, KUBESIM),
        help="real: a kube-apiserver the suite starts per run (the default); "
        "kubesim: two kubesims per run",
    )
    parser.add_argument(
        "--kubeconfig", type=Path, help="a spoke cluster the suite did not start (the target)"
    )
    parser.add_argument(
        "--hub-kubeconfig", type=Path, help="its hub cluster (default: --kubeconfig)"
    )
    parser.add_argument(
        "--agent-cmd",
        help="a peer agent: 'COMMAND {hub_kubeconfig} {spoke_kubeconfig} {cluster}' "
        "(also {metrics_port}, {status_sync_interval}, {kube_api_qps}, {kube_api_burst}); "
        "run A/B against ours",
    )
    parser.add_argument(
        "--peer",
        type=Path,
        help="OCM's work agent binary (e.g. .tools/ocm/v1.2.1/work): run it as the peer, "
        "with the --agent-cmd of OCM_AGENT_CMD",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench-results", help="results dir")
    args = parser.parse_args(argv)
    if args.peer:
        if args.agent_cmd:
            parser.error("--peer and --agent-cmd are two ways to name the peer: give one")
        if not args.peer.is_file():
            parser.error(f"--peer {args.peer}: no such file (make ocm builds it)")
        args.agent_cmd = OCM_AGENT_CMD.format(binary=args.peer.resolve())
    if args.hub_kubeconfig and not args.kubeconfig:
        parser.error("--hub-kubeconfig needs --kubeconfig (the spoke)")
    if args.kubeconfig and args.target:
        parser.error("--kubeconfig is the target: leave out --target")
    if args.runs < 1 or args.samples < 1 or args.manifests < 1:
        parser.error("--runs, --samples and --manifests must be at least 1")
    if not (args.window > 0 and args.settle > 0 and args.status_sync_interval > 0):
        parser.error("--window, --settle and --status-sync-interval must be positive")
    try:
        args.qps = qps_columns(args.agent_qps)
        args.ns = numbers(args.n) if args.n else list(FULL_N if args.full else QUICK_N)
        args.feedback = numbers(args.feedback_n) if args.feedback_n is not None else args.ns
    except ValueError as err:
        parser.error(f"--n, --feedback-n, --agent-qps: not a list of numbers ({err})")
    if not args.ns or args.ns[0] < 1:
        parser.error("--n: every N must be at least 1")
    if args.kubeconfig is None and (args.target or REAL) == REAL:
        try:
            bin_dir()
        except RuntimeError as err:  # the control plane is not built
            parser.error(str(err))
    return args


def qps_columns(text: str) -> list[float]:
    """ "50,0" -> [50.0, 0.0], in the order given (the first is the headline)."""
    out: list[float] = []
    for part in text.split(","):
        if part.strip():
            value = float(part)
            if not math.isfinite(value):
                raise ValueError(part)
            if max(value, 0.0) not in out:
                out.append(max(value, 0.0))
    if not out:
        raise ValueError(text)
    return out


def numbers(text: str) -> list[int]:
    """ "100,500" -> [100, 500]."""
    return sorted({int(part) for part in text.split(",") if part.strip()})


# -- running ---------------------------------------------------------------------------


async def run_suite(args: argparse.Namespace) -> dict[str, Any]:
    """Every run, interleaved; returns the results document (not yet written)."""
    ns, feedback_n = args.ns, args.feedback
    if args.kubeconfig:
        target = Target(CLUSTERS, args.hub_kubeconfig, args.kubeconfig)
    else:
        target = Target(args.target or REAL)
    agents = [AgentSpec("ours")]
    if args.agent_cmd:
        agents.append(AgentSpec("peer", args.agent_cmd))
    fanout = args.fanout_clusters if target.kubesim else 0
    started = datetime.now(UTC)
    results: dict[str, Any] = {
        "schema": SCHEMA,
        "timestamp": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "git": git(),
        "parameters": {
            "n": ns,
            "runs": args.runs,
            "manifests": args.manifests,
            "samples": args.samples,
            "window": args.window,
            "settle": args.settle,
            "status_sync_interval": args.status_sync_interval,
            "agent_qps": args.qps,
            "feedback_n": [n for n in feedback_n if n in ns] if target.started else [],
            "fanout_clusters": fanout,
            "target": target.kind,
            "kube_version": kube_version() if target.kind == REAL else None,
            "agents": [a.name for a in agents],
            "agent_cmd": args.agent_cmd,
        },
        "protocol_minimum": {
            "apply": {
                "spoke_writes": bench_scenarios.spoke_min_writes(args.manifests),
                "hub_writes": bench_scenarios.HUB_MIN_WRITES,
                "reads": 0,
            },
            "delete": {
                "spoke_writes": bench_scenarios.spoke_min_writes(args.manifests),
                "hub_writes": bench_scenarios.DELETE_HUB_MIN_WRITES,
                "reads": 0,
            },
        },
        "runs": [],
        "notes": [],
    }
    notes: list[str] = results["notes"]
    if target.kind == REAL:
        notes.append(
            f"one kube-apiserver {kube_version()} (etcd, kube-controller-manager with the "
            "namespace, garbage-collector, serviceaccount and clusterrole-aggregation "
            "controllers only) per run, hub and spoke on it; the agent's hub and spoke "
            "clients each with their own token; requests counted from its audit log"
        )
    if not target.started:
        notes.append(
            "feedback latency ran only on clusters the suite started (a controller may "
            "overwrite Deployment status here): skipped"
        )
    if not target.kubesim and args.fanout_clusters:
        notes.append("the hub fan-out runs on the kubesim target only (skipped here)")
    for spec in agents:
        if target.kind == CLUSTERS and not spec.serves_metrics:
            notes.append(f"{spec.name}: no /metrics port given, request counts unavailable")
    t_start = time.monotonic()
    for run in range(1, args.runs + 1):
        for q, qps in enumerate(args.qps):
            for n in ns:
                for spec in agents:  # A/B within the run: the same machine state for both
                    params = Params(
                        manifests=args.manifests,
                        samples=args.samples,
                        window=args.window,
                        status_sync_interval=args.status_sync_interval,
                        agent_qps=qps,
                        feedback=n in feedback_n,
                        settle_quiet=args.settle,
                    )
                    tag = f"{spec.name[0]}{n}q{q}r{run}"
                    label = bench_scenarios.qps_label(qps)
                    print(f"run {run}/{args.runs}: {spec.name}, {label}, N={n} ...", flush=True)
                    load = os.getloadavg()[0]
                    t0 = time.monotonic()
                    figures = await bench_scenarios.run_once(target, spec, n, params, tag)
                    results["runs"].append(
                        {
                            "run": run,
                            "agent": spec.name,
                            "qps": qps,
                            "column": f"{spec.name}, {label}",
                            "n": n,
                            "seconds": time.monotonic() - t0,
                            "load": [load, os.getloadavg()[0]],
                            "scenarios": figures,
                        }
                    )
                    print(brief(figures), flush=True)
        if fanout:
            print(f"run {run}/{args.runs}: hub fan-out to {fanout} clusters ...", flush=True)
            t0 = time.monotonic()
            fanned = await mwrs_bench.measure(fanout)
            results["runs"].append(
                {
                    "run": run,
                    "agent": "hubcontroller",
                    "n": fanout,
                    "seconds": time.monotonic() - t0,
                    "scenarios": {"fanout": fanned},
                }
            )
    results["duration_s"] = time.monotonic() - t_start
    results["machine"]["load_end"] = list(os.getloadavg())
    finish(results)
    return results


def finish(results: dict[str, Any]) -> None:
    """Medians, ratios and the headline, from the raw runs."""
    results["summary"] = bench_report.summarize(results["runs"])
    agents = results["parameters"]["agents"]
    results["ratios"] = {}
    if len(agents) > 1:
        for qps in results["parameters"]["agent_qps"]:
            label = bench_scenarios.qps_label(qps)
            results["ratios"][label] = bench_report.ratios(
                results["runs"], f"{agents[0]}, {label}", f"{agents[1]}, {label}"
            )
    results["headline"] = bench_report.headline(results["summary"])


def brief(figures: bench_scenarios.Run) -> str:
    """One progress line of a run's main figures."""

    def get(scenario: str, metric: str) -> str:
        return bench_report.fmt((figures.get(scenario) or {}).get(metric))

    return (
        f"  Applied {get('throughput', 'applied_s')} s, Available {get('throughput', 'available_s')} s, "
        f"requests/work {get('requests', 'per_work')} (÷ minimum {get('requests', 'ratio_to_minimum')}), "
        f"create→Applied p50 {get('e2e_latency', 'p50_ms')} ms, idle {get('steady', 'requests_per_s')} "
        f"requests/s, deleted {get('deletion', 'deleted_s')} s ({get('deletion', 'per_work')} "
        f"requests/work), settled RSS {get('cost', 'idle_rss_mib')} MiB"
    )


def write(results: dict[str, Any], directory: Path) -> Path:
    """The JSON, the Markdown and the plots; returns the JSON's path."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = results["timestamp"].replace("-", "").replace(":", "")
    path = directory / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {path}")
    report(path)
    return path


def report(path: Path) -> None:
    """Markdown and plots for a results JSON (again)."""
    results = json.loads(path.read_text())
    drawn = bench_report.plots(results, path.with_suffix(""))
    text = bench_report.markdown(results)
    if isinstance(drawn, str):
        print(drawn)
        text += f"\n_{drawn}._\n"
    else:
        text += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in drawn) + "\n"
        for p in drawn:
            print(f"wrote {p}")
    path.with_suffix(".md").write_text(text)
    print(f"wrote {path.with_suffix('.md')}")


def main(argv: list[str]) -> None:
    """``run`` (the default), ``report FILE`` or ``docs [FILE]``."""
    configure_logging("console", "warning")
    if argv[:1] == ["report"]:
        for name in argv[1:]:
            report(Path(name))
        return
    if argv[:1] == ["docs"]:
        path = Path(argv[1]) if len(argv) > 1 else bench_report.latest(REPO / "bench-results")
        doc = REPO / "docs" / "benchmarks.md"
        bench_report.update_docs(doc, json.loads(path.read_text()))
        print(f"updated {doc.relative_to(REPO)} from {path}")
        return
    args = parse(argv[1:] if argv[:1] == ["run"] else argv)

    def on_term(signum: int, frame: FrameType | None) -> None:
        # As Ctrl-C: the runs' clean-up stops the control plane and the agent.
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    results = asyncio.run(run_suite(args))
    write(results, args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
