"""A short soak (about 25 s of chaos, fixed seed): no violation, every kind tried.

The full run is ``make soak`` (10 minutes); this keeps the soak itself working,
and checks that it does report a violation when there is one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak.runner import FAULT_WEIGHTS, OP_WEIGHTS, STRAY, Soak, SoakConfig


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


@pytest.mark.timeout(300)
async def test_a_stray_object_is_reported(tmp_path: Path) -> None:
    """An object no work asked for, planted on the spoke, fails the watchdog and the last check."""
    config = SoakConfig(
        workdir=tmp_path,
        duration=1.0,
        seed=3,
        converge_timeout=5.0,
        cover_every_kind=False,
        plant_stray=True,
    )
    report = await Soak(config, say=lambda line: None).run()
    found = {(v.check.split(" (")[0], d) for v in report.violations for d in v.details}
    assert ("continuous invariant", f"configmaps default/{STRAY}: no work ever listed it") in found
    leaked = f"configmaps default/{STRAY}: no work lists it (leaked)"
    assert ("not cleaned up after deleting every work", leaked) in found, report.summary()
