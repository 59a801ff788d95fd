"""The benchmark suite runs end to end with a tiny N and writes what it promises.

Our own agent stands in as the ``--agent-cmd`` peer, so the A/B path and the
ratios are exercised too. Nothing here checks a timing: only that the files
exist with the documented structure and that the figures are present,
positive and consistent with each other.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench_report import NO_MATPLOTLIB
from benchkit import start_kubesim, stop, wait_file

from workagent.kube import MANIFESTWORKS, KubeClient

SUITE = Path(__file__).with_name("bench_suite.py")
AGENT_SCENARIOS = {
    "throughput",
    "requests",
    "e2e_latency",
    "update_latency",
    "feedback_watch",
    "feedback_poll",
    "deletion",
    "steady",
    "cost",
}
SAMPLES = 2
PEER = (
    f"{sys.executable} -m workagent agent --hub-kubeconfig {{hub_kubeconfig}} "
    "--spoke-kubeconfig {spoke_kubeconfig} --spoke-cluster-name {cluster} "
    "--disable-leader-election --listen 127.0.0.1:{metrics_port} "
    "--status-sync-interval {status_sync_interval} --log-level warning"
)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, str, Path]:
    """One tiny run of the suite: (results JSON, Markdown, stdout, output directory)."""
    out = tmp_path_factory.mktemp("bench-results")
    args = [
        *("--n", "2", "--runs", "1", "--samples", str(SAMPLES), "--window", "1"),
        *("--status-sync-interval", "1", "--fanout-clusters", "2", "--out", str(out)),
        *("--agent-cmd", PEER),
    ]
    done = subprocess.run(
        [sys.executable, str(SUITE), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (json_path,) = out.glob("*.json")
    (md_path,) = out.glob("*.md")
    assert md_path.stem == json_path.stem
    return json.loads(json_path.read_text()), md_path.read_text(), done.stdout, out


@pytest.mark.timeout(600)
def test_results_record_machine_commit_and_parameters(
    suite: tuple[dict[str, Any], str, str, Path],
) -> None:
    results, _md, _out, _dir = suite
    machine = results["machine"]
    assert machine["cores"] >= 1
    assert machine["python"] and machine["os"] and machine["cpu_model"]
    assert len(machine["load_start"]) == 3 and len(machine["load_end"]) == 3
    assert len(results["git"]["commit"]) == 40 and isinstance(results["git"]["dirty"], bool)
    params = results["parameters"]
    assert params["n"] == [2] and params["runs"] == 1 and params["agents"] == ["ours", "peer"]
    assert params["agent_cmd"] == PEER and params["target"] == "kubesim"
    assert results["protocol_minimum"]["apply"] == {"spoke_writes": 6, "hub_writes": 2, "reads": 0}


@pytest.mark.timeout(600)
def test_every_scenario_has_consistent_positive_figures(
    suite: tuple[dict[str, Any], str, str, Path],
) -> None:
    results, _md, _out, _dir = suite
    runs = results["runs"]
    # A/B order within the run, then the hub fan-out.
    assert [r["agent"] for r in runs] == ["ours", "peer", "hubcontroller"]
    for run in runs[:2]:
        s = run["scenarios"]
        assert set(s) == AGENT_SCENARIOS
        t = s["throughput"]
        assert 0 < t["applied_s"] <= t["available_s"]
        req = s["requests"]
        assert req["minimum_writes"] == 8
        assert req["writes_per_work"] >= req["minimum_writes"]  # counted by kubesim
        assert req["per_work"] == pytest.approx(req["writes_per_work"] + req["reads_per_work"])
        assert req["ratio_to_minimum"] == pytest.approx(req["per_work"] / 8)
        for name in ("e2e_latency", "update_latency", "feedback_watch", "feedback_poll"):
            lat = s[name]
            assert lat["samples"] + lat["timeouts"] == SAMPLES, name
            if lat["samples"]:
                assert 0 < lat["p50_ms"] <= lat["p99_ms"], name
        assert s["deletion"]["deleted_s"] > 0
        assert s["deletion"]["writes_per_work"] >= 1  # at least the hub finalizer
        steady = s["steady"]
        assert all(steady[k] >= 0 for k in ("hub_requests_per_min", "spoke_writes_per_min"))
        cost = s["cost"]
        assert cost["startup_s"] > 0 and cost["cpu_total_s"] > 0
        assert 0 < cost["rss_mib"] <= cost["peak_rss_mib"]
    fanout = runs[2]["scenarios"]["fanout"]
    assert all(v > 0 for v in fanout.values())


@pytest.mark.timeout(600)
def test_medians_ratios_and_headline(suite: tuple[dict[str, Any], str, str, Path]) -> None:
    results, _md, _out, _dir = suite
    applied = results["summary"]["throughput"]["ours"]["2"]["applied_s"]
    assert applied["median"] == applied["runs"][0]  # one run: its own median
    ratio = results["ratios"]["throughput"]["2"]["applied_s"]
    peer = results["summary"]["throughput"]["peer"]["2"]["applied_s"]["median"]
    assert ratio["median"] == pytest.approx(peer / applied["median"])
    head = results["headline"]["ours"]["2"]
    assert head["ratio_to_minimum"] == pytest.approx(head["per_work"] / head["minimum_writes"])


@pytest.mark.timeout(600)
def test_markdown_and_plots(suite: tuple[dict[str, Any], str, str, Path]) -> None:
    _results, md, stdout, directory = suite
    assert "Headline: requests per work ÷ the protocol minimum" in md
    assert "Peer ÷ ours" in md and "ManifestWorkReplicaSet fan-out" in md
    pngs = sorted(p.name.rsplit("-", 1)[1] for p in directory.glob("*.png"))
    if importlib.util.find_spec("matplotlib") is None:
        assert NO_MATPLOTLIB in stdout and NO_MATPLOTLIB in md
        assert pngs == []
    else:
        assert pngs == ["cost.png", "latency.png", "requests.png", "throughput.png"]
        assert NO_MATPLOTLIB not in md


@pytest.mark.timeout(600)
def test_existing_clusters_are_measured_through_the_agents_metrics(tmp_path: Path) -> None:
    """``--kubeconfig``/``--hub-kubeconfig``: clusters the suite did not start (two
    ``kubesim serve`` processes stand in for real ones), request counts from the
    agent's /metrics instead of kubesim's journal, and the clusters left clean."""
    sims = [
        start_kubesim(tmp_path / f"{which}.kubeconfig", tmp_path / f"{which}.log")
        for which in ("hub", "spoke")
    ]
    try:
        for which, proc in zip(("hub", "spoke"), sims, strict=True):
            asyncio.run(wait_file(tmp_path / f"{which}.kubeconfig", proc))
        out = tmp_path / "results"
        args = [
            *("--n", "2", "--runs", "1", "--samples", str(SAMPLES), "--window", "1"),
            *("--status-sync-interval", "1", "--out", str(out)),
            *("--kubeconfig", str(tmp_path / "spoke.kubeconfig")),
            *("--hub-kubeconfig", str(tmp_path / "hub.kubeconfig")),
        ]
        done = subprocess.run(
            [sys.executable, str(SUITE), *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        (json_path,) = out.glob("*.json")
        results = json.loads(json_path.read_text())
        assert results["parameters"]["target"] == "clusters"
        assert any("kubesim only" in note for note in results["notes"])
        (run,) = results["runs"]  # no fan-out: it needs kubesim
        s = run["scenarios"]
        assert "feedback_watch" not in s and "feedback_poll" not in s
        req = s["requests"]
        # From the agent's own counters: at least the protocol's writes were seen.
        assert req["writes_per_work"] >= req["minimum_writes"] == 8
        assert s["throughput"]["applied_s"] > 0
        left = asyncio.run(_leftover_works(tmp_path / "hub.kubeconfig"))
        assert left == [], "the suite left ManifestWorks on the cluster"
    finally:
        for proc in sims:
            stop(proc)


async def _leftover_works(kubeconfig: Path) -> list[str]:
    """Names of the ManifestWorks in any namespace of the cluster."""
    async with await KubeClient.from_kubeconfig(str(kubeconfig), qps=0) as client:
        listed = await client.list(MANIFESTWORKS)
    return [w["metadata"]["name"] for w in listed.get("items") or []]
