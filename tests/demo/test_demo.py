"""``make demo``: the entry point run in-process, plus the view's pure parts.

The end-to-end test runs exactly what ``python -m demo`` runs (hub and four
managed clusters, the hub controller, the gRPC server, four agents, cluster4's
over gRPC) with a budget well under
a minute, in plain mode as in CI, and checks the exit code and the lines a
reader relies on. The failure test gives it no time at all and expects a
clear message and exit code 1.
"""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog

from demo import examples as examples_module
from demo import scenario as scenario_module
from demo.app import EXIT_FAILED, EXIT_OK, main, parse_args
from demo.view import TerminalView, feedback_values, format_value, render_table, work_row

REPO = Path(__file__).resolve().parents[2]
#: What the demo may take inside the tests (the demo itself allows 90 s).
TEST_BUDGET = "50"


def test_demo_runs_end_to_end_and_exits_0(tmp_path: Path) -> None:
    root = logging.getLogger()
    handlers_before = list(root.handlers)
    structlog_before = structlog.get_config()
    out = io.StringIO()

    code = main(["--plain", "--timeout", TEST_BUDGET], stdout=out, temp_root=tmp_path)

    text = out.getvalue()
    assert code == EXIT_OK, text
    assert list(tmp_path.iterdir()) == [], "the work directory is removed after a success"
    expected = [
        "work agent cluster1 running",
        "work agent cluster3 running",
        "gRPC server serving at 127.0.0.1:",
        "work agent cluster4 (over gRPC) running",
        "hub controller running",
        "ok: cluster1/hello-work-demo Applied=True and Available=True",
        "ok: cluster1/hello-work-demo reports ReadyReplicas=1 and isAvailable=True",
        "ok: cluster1/hello-work-demo reports ReadyReplicas=3, Replicas=3, AvailableReplicas=3",
        "ok: cluster2/pi-job Complete=True",
        "ok: cluster2/pi-job deleted from the hub by the TTL garbage collector",
        "ok: Job default/pi-calculation removed from cluster2",
        "ok: a ManifestWork of web-rollout in each of cluster1, cluster2, cluster3, cluster4",
        "ok: demo/web-rollout PlacementRolledOut=True and ManifestworkApplied=True",
        "ok: every web-rollout work reports ReadyReplicas=2",
        "ok: no ManifestWork left on the hub",
        "ok: Deployment web/web removed from cluster4",
        "demo finished: every expected state was reached",
    ]
    for line in expected:
        assert line in text, f"missing {line!r} in:\n{text}"
    # Plain mode: one timestamped line per change, the feedback values in it.
    assert re.search(
        r"^\[ *[0-9.]+s\] work cluster1/hello-work-demo: Applied=True Available=True \| "
        r"ReadyReplicas=3 Replicas=3 AvailableReplicas=3 isAvailable=True$",
        text,
        re.M,
    ), text
    assert "work cluster2/pi-job: deleted" in text
    assert "\x1b[" not in text  # no cursor movements outside a terminal
    # The components logged to the demo's file, and the caller's logging is back.
    assert root.handlers == handlers_before
    assert structlog.get_config() == structlog_before


def test_demo_reports_an_unreached_state_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A kind no cluster serves: the first expectation (Applied=True) cannot be met.
    original = examples_module.hello_work

    def broken_work(replicas: int | None = None) -> dict[str, Any]:
        work = original(replicas)
        work["spec"]["workload"]["manifests"][0]["kind"] = "NoSuchKind"
        return work

    monkeypatch.setattr(examples_module, "hello_work", broken_work)
    monkeypatch.setattr(scenario_module, "STEP_TIMEOUT", 3.0)
    out = io.StringIO()

    code = main(["--plain", "--timeout", TEST_BUDGET], stdout=out, temp_root=tmp_path)

    text = out.getvalue()
    assert code == EXIT_FAILED, text
    assert (
        "demo FAILED after" in text
        and "not reached within 3s: cluster1/hello-work-demo Applied=True and Available=True"
        in text
    ), text
    # The state at that moment says why: the manifest's kind is unknown.
    assert "the hub when the demo failed:" in text
    assert (
        'NoSuchKind hello: Failed to apply manifest: the server doesn\'t have a resource type "NoSuchKind"'
        in text
    )
    assert "is kept)" in text
    (workdir,) = tmp_path.iterdir()
    assert (workdir / "demo.log").read_text(), "the components' log is kept"
    print(text)  # shown with -s: what a failing demo looks like


def test_demo_within_no_time_at_all_fails_clearly(tmp_path: Path) -> None:
    out = io.StringIO()

    code = main(["--plain", "--timeout", "0"], stdout=out, temp_root=tmp_path)

    text = out.getvalue()
    assert code == EXIT_FAILED, text
    assert "demo FAILED after" in text and "the demo's time budget of 0s ran out" in text


def test_demo_package_is_type_checked() -> None:
    """``make typecheck`` checks the files pyproject's ``[tool.mypy]`` lists; ``demo``
    is not among them, and found through the editable install's path entry mypy
    reports none of its errors. So the house style's strict check runs here, until
    ``demo`` is added to that list."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "demo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_options() -> None:
    assert parse_args([]).live is None
    assert parse_args(["--plain"]).live is False
    assert parse_args(["--live", "--timeout", "7"]).live is True
    assert parse_args(["--timeout", "7"]).budget == 7.0


# -- the view ---------------------------------------------------------------------------


def _work(**status: object) -> dict[str, object]:
    return {
        "metadata": {"namespace": "cluster1", "name": "w", "generation": 1},
        "status": status,
    }


def _condition(ctype: str, status: str, reason: str = "R", message: str = "") -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def test_feedback_values_of_every_type() -> None:
    assert format_value({"type": "Integer", "integer": 3}) == "3"
    assert format_value({"type": "String", "string": "True"}) == "True"
    assert format_value({"type": "Boolean", "boolean": False}) == "false"
    raw = format_value({"type": "JsonRaw", "jsonRaw": "[" + "1," * 40 + "1]"})
    assert len(raw) == 40 and raw.endswith("...")


def test_work_row_shows_conditions_and_feedback() -> None:
    def entry(name: str, *values: tuple[str, int]) -> dict[str, object]:
        return {
            "resourceMeta": {"name": name},
            "statusFeedback": {
                "values": [
                    {"name": n, "fieldValue": {"type": "Integer", "integer": v}} for n, v in values
                ]
            },
        }

    one = _work(
        conditions=[_condition("Applied", "True"), _condition("Available", "True")],
        resourceStatus={"manifests": [entry("hello", ("ReadyReplicas", 2))]},
    )
    row = work_row(one)
    assert (row.applied, row.available, row.complete) == ("True", "True", "-")
    assert row.line() == "work cluster1/w: Applied=True Available=True | ReadyReplicas=2"
    assert feedback_values(one) == {"ReadyReplicas": "2"}
    two = _work(resourceStatus={"manifests": [entry("a", ("X", 1)), entry("b", ("Y", 2))]})
    assert work_row(two).detail == "a:X=1 b:Y=2"
    failed = _work(conditions=[_condition("Applied", "False", "AppliedManifestWorkFailed", "m")])
    assert work_row(failed).detail == "AppliedManifestWorkFailed: m"
    failed = _work(
        conditions=[_condition("Applied", "False", "AppliedManifestWorkFailed", "m")],
        resourceStatus={
            "manifests": [
                {
                    "resourceMeta": {"kind": "Job", "name": "j"},
                    "conditions": [_condition("Applied", "False", message="no")],
                }
            ]
        },
    )
    assert work_row(failed).detail == "Job j: no"


def test_table_and_live_redraw() -> None:
    out = io.StringIO()
    view = TerminalView(out, live=True, clock=lambda: 0.0, width=lambda: 60)
    view.work_changed(_work(conditions=[_condition("Applied", "True")]))
    view.say("step")
    text = out.getvalue()
    # The table (2 rows + its title) is erased before the step line and drawn again.
    assert "\r\x1b[3A\x1b[J[   0.0s] step\n" in text
    assert all(len(line) < 60 for line in text.split("\n"))
    assert render_table([], []) == ["(no ManifestWorks on the hub)"]
    view.finish()
    assert out.getvalue().endswith("\r\x1b[3A\x1b[J")
