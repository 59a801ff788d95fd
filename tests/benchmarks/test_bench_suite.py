"""The benchmark suite runs end to end with a tiny N and writes what it promises.

On kubesim our own agent stands in as the ``--agent-cmd`` peer, so the A/B
path and the ratios per QPS column are exercised too; on the real control
plane (the default target) one run of 5 works checks the audit-log counts and
that nothing of the control plane is left behind. Nothing here checks a
timing: only that the files exist with the documented structure and that the
figures are present, positive and consistent with each other.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from bench_report import NO_MATPLOTLIB
from benchkit import start_kubesim, stop, wait_file

from ocmkit.kube import MANIFESTWORKS, KubeClient
from tests.support.controlplane import OWNER_FILE, RUN_PREFIX, kube_version

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
CLIENT_SCENARIOS = {"clients_apply", "clients_steady", "clients_delete"}
DETAIL_SCENARIOS = {"detail_apply", "detail_steady", "detail_delete"}
SAMPLES = 2
TINY = ("--runs", "1", "--samples", str(SAMPLES), "--window", "1", "--settle", "1")
PEER = (
    f"{sys.executable} -m workagent agent --hub-kubeconfig {{hub_kubeconfig}} "
    "--spoke-kubeconfig {spoke_kubeconfig} --spoke-cluster-name {cluster} "
    "--disable-leader-election --listen 127.0.0.1:{metrics_port} "
    "--status-sync-interval {status_sync_interval} --kube-api-qps {kube_api_qps} "
    "--kube-api-burst {kube_api_burst} --hub-kube-api-qps {kube_api_qps} "
    "--hub-kube-api-burst {kube_api_burst} --log-level warning"
)
COLUMNS = ["ours, QPS 50/100", "peer, QPS 50/100", "ours, QPS unlimited", "peer, QPS unlimited"]


def run_suite(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """The suite as ``make bench`` runs it (its own process); the result and its pid."""
    with subprocess.Popen(
        [sys.executable, str(SUITE), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done, proc.pid


def read_results(out: Path) -> tuple[dict[str, Any], str]:
    """The one results JSON of ``out`` and its Markdown."""
    (json_path,) = out.glob("*.json")
    (md_path,) = out.glob("*.md")
    assert md_path.stem == json_path.stem
    return json.loads(json_path.read_text()), md_path.read_text()


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, str, Path]:
    """One tiny run of the suite on kubesim, two QPS columns, ours and a peer:
    (results JSON, Markdown, stdout, output directory)."""
    out = tmp_path_factory.mktemp("bench-results")
    done, _pid = run_suite(
        *("--target", "kubesim", "--n", "2", *TINY, "--agent-qps", "50,0"),
        *("--status-sync-interval", "1", "--fanout-clusters", "2", "--out", str(out)),
        *("--agent-cmd", PEER),
    )
    results, md = read_results(out)
    return results, md, done.stdout, out


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
    assert params["agent_qps"] == [50.0, 0.0] and params["feedback_n"] == [2]
    assert results["protocol_minimum"]["apply"] == {"spoke_writes": 6, "hub_writes": 2, "reads": 0}


@pytest.mark.timeout(600)
def test_every_scenario_has_consistent_positive_figures(
    suite: tuple[dict[str, Any], str, str, Path],
) -> None:
    results, _md, _out, _dir = suite
    runs = results["runs"]
    # A/B order within each QPS column (the headline first), then the hub fan-out.
    assert [r.get("column", r["agent"]) for r in runs] == [*COLUMNS, "hubcontroller"]
    assert [r["qps"] for r in runs[:4]] == [50.0, 50.0, 0.0, 0.0]
    for run in runs[:4]:
        assert len(run["load"]) == 2
        s = run["scenarios"]
        assert set(s) == AGENT_SCENARIOS | CLIENT_SCENARIOS | DETAIL_SCENARIOS
        t = s["throughput"]
        assert 0 < t["applied_s"] <= t["available_s"]
        req = s["requests"]
        assert req["minimum_writes"] == 8
        assert req["writes_per_work"] >= req["minimum_writes"]  # counted by kubesim
        assert req["per_work"] == pytest.approx(req["writes_per_work"] + req["reads_per_work"])
        assert req["ratio_to_minimum"] == pytest.approx(req["per_work"] / 8)
        # kubesim's stats by User-Agent: the agent's clients add up to its figure, and
        # the suite's own creates (one per work) are counted apart from them.
        assert agent_requests(s["clients_apply"]) == pytest.approx(req["per_work"])
        assert s["clients_apply"]["driver · bench-suite"] >= 1
        assert sum(s["detail_apply"].values()) == pytest.approx(req["per_work"])
        for name in ("e2e_latency", "update_latency", "feedback_watch", "feedback_poll"):
            lat = s[name]
            assert lat["samples"] + lat["timeouts"] == SAMPLES, name
            if lat["samples"]:
                assert 0 < lat["p50_ms"] <= lat["p99_ms"], name
        check_common(s)
    fanout = runs[4]["scenarios"]["fanout"]
    assert all(v > 0 for v in fanout.values())


def agent_requests(clients: dict[str, float]) -> float:
    """The agent's requests among a phase's clients (its hub and spoke clients)."""
    return sum(v for k, v in clients.items() if k.startswith(("hub · ", "spoke · ")))


def check_common(s: dict[str, Any]) -> None:
    """What every agent run must show, on any target that counts requests."""
    assert s["deletion"]["deleted_s"] > 0
    assert s["deletion"]["writes_per_work"] >= 1  # at least the hub finalizer
    assert agent_requests(s["clients_delete"]) == pytest.approx(s["deletion"]["per_work"])
    steady = s["steady"]
    assert all(steady[k] >= 0 for k in ("hub_requests_per_min", "spoke_writes_per_min"))
    per_min = steady["hub_requests_per_min"] + steady["spoke_requests_per_min"]
    assert steady["requests_per_s"] == pytest.approx(per_min / 60)
    assert agent_requests(s["clients_steady"]) == pytest.approx(per_min)
    poll = s["feedback_poll"]
    if poll["samples"]:
        assert poll["staleness_s"] >= poll["max_ms"] / 1e3 >= poll["p50_ms"] / 1e3 > 0
        assert poll["staleness_ratio"] == pytest.approx(poll["staleness_s"] / 1.0)  # interval 1 s
    cost = s["cost"]
    assert cost["startup_s"] > 0 and cost["cpu_total_s"] > 0
    assert 0 < cost["rss_mib"] <= cost["peak_rss_mib"]
    # Measured in clock ticks (10 ms): the few requests of this small run may take none.
    assert cost["server_apply_cpu_s"] >= 0 and cost["server_delete_cpu_s"] >= 0


@pytest.mark.timeout(600)
def test_medians_ratios_and_headline(suite: tuple[dict[str, Any], str, str, Path]) -> None:
    results, _md, _out, _dir = suite
    assert list(results["summary"]["throughput"]) == COLUMNS
    for qps in ("QPS 50/100", "QPS unlimited"):
        applied = results["summary"]["throughput"][f"ours, {qps}"]["2"]["applied_s"]
        assert applied["median"] == applied["runs"][0]  # one run: its own median
        ratio = results["ratios"][qps]["throughput"]["2"]["applied_s"]
        peer = results["summary"]["throughput"][f"peer, {qps}"]["2"]["applied_s"]["median"]
        assert ratio["median"] == pytest.approx(peer / applied["median"])
        head = results["headline"][f"ours, {qps}"]["2"]
        assert head["ratio_to_minimum"] == pytest.approx(head["per_work"] / head["minimum_writes"])


@pytest.mark.timeout(600)
def test_markdown_and_plots(suite: tuple[dict[str, Any], str, str, Path]) -> None:
    _results, md, stdout, directory = suite
    assert "Headline: requests per work ÷ the protocol minimum" in md
    assert "Peer ÷ ours" in md and "ManifestWorkReplicaSet fan-out" in md
    assert "| ours, QPS 50/100, N=2 | peer, QPS 50/100, N=2 | ours, QPS unlimited, N=2 |" in md
    assert "Requests by client while applying (per work)" in md
    assert "| driver · bench-suite |" in md and "staleness" in md
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
        run_suite(
            *("--n", "2", *TINY, "--agent-qps", "50"),
            *("--status-sync-interval", "1", "--out", str(out)),
            *("--kubeconfig", str(tmp_path / "spoke.kubeconfig")),
            *("--hub-kubeconfig", str(tmp_path / "hub.kubeconfig")),
        )
        results, _md = read_results(out)
        assert results["parameters"]["target"] == "clusters"
        assert results["parameters"]["feedback_n"] == []
        assert any("fan-out runs on the kubesim target only" in n for n in results["notes"])
        (run,) = results["runs"]  # no fan-out: it needs kubesim
        s = run["scenarios"]
        assert "feedback_watch" not in s and "feedback_poll" not in s
        assert s["clients_apply"] == {}  # the agent's /metrics cannot tell clients apart
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


@pytest.mark.realkube
@pytest.mark.timeout(600)
def test_the_default_target_is_a_real_control_plane_counted_by_its_audit_log(
    tmp_path: Path,
) -> None:
    """``make bench`` without a target: a kube-apiserver started for the run, the
    requests counted from its audit log with every client told apart, the feedback
    scenario measured there (no controller overwrites Deployment status), and nothing
    of the control plane left afterwards."""
    out = tmp_path / "results"
    _done, pid = run_suite(
        *("--n", "5", *TINY, "--agent-qps", "50", "--status-sync-interval", "1"),
        *("--out", str(out)),
    )
    results, md = read_results(out)
    params = results["parameters"]
    assert params["target"] == "real" and params["kube_version"] == kube_version()
    assert params["agent_qps"] == [50.0] and params["feedback_n"] == [5]
    assert "a real kube-apiserver v" in md and "requests counted from its audit log" in md
    (run,) = results["runs"]
    assert run["column"] == "ours, QPS 50/100"
    s = run["scenarios"]
    assert set(s) == AGENT_SCENARIOS | CLIENT_SCENARIOS | DETAIL_SCENARIOS
    req = s["requests"]
    # The server's own record: at least the protocol's writes on each side, and the
    # agent's two tokens add up to its figure; the suite's creates are not in it.
    assert req["hub_writes_per_work"] >= 2 and req["spoke_writes_per_work"] >= 6
    assert req["per_work"] == pytest.approx(req["writes_per_work"] + req["reads_per_work"])
    clients = s["clients_apply"]
    assert agent_requests(clients) == pytest.approx(req["per_work"])
    assert clients["driver · bench-suite"] >= 1  # its 5 creates, its watches
    assert any(k.startswith("hub · workagent/") for k in clients)
    assert clients["spoke · work-agent"] == pytest.approx(req["spoke_per_work"])
    assert sum(s["detail_apply"].values()) == pytest.approx(req["per_work"])
    assert s["detail_apply"]["spoke create configmaps"] >= 5
    for name in ("e2e_latency", "update_latency", "feedback_watch", "feedback_poll"):
        assert s[name]["samples"] + s[name]["timeouts"] == SAMPLES, name
    check_common(s)
    # Torn down: no data folder of the suite's process is left.
    left = [
        d
        for d in Path(tempfile.gettempdir()).glob(RUN_PREFIX + "*")
        if (d / OWNER_FILE).is_file() and (d / OWNER_FILE).read_text().strip() == str(pid)
    ]
    assert left == []
