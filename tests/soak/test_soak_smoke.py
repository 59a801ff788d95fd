"""A short soak (about 25 s of chaos, fixed seed): no violation, every kind tried.

The full run is ``make soak`` (10 minutes); this keeps the soak itself working.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak.runner import FAULT_WEIGHTS, OP_WEIGHTS, Soak, SoakConfig


@pytest.mark.timeout(600)
async def test_short_soak_finds_no_violation(tmp_path: Path) -> None:
    config = SoakConfig(workdir=tmp_path, duration=25.0, seed=7, faults_per_round=(3, 4))
    lines: list[str] = []
    report = await Soak(config, say=lines.append).run()
    summary = report.summary() + "\n" + "\n".join(lines)
    assert report.violations == [], summary
    assert set(report.operations) == set(OP_WEIGHTS), summary
    assert set(report.faults) == set(FAULT_WEIGHTS), summary
    assert report.agent_starts >= 2 and report.agent_exit_code == 0, summary
    assert report.convergence_checks >= 3, summary
    memory = report.memory()
    assert memory["rss_start_kib"] and memory["rss_end_kib"] and memory["cpu_seconds"] > 0, summary
