"""The read guard (tests/readguard.py) fails a pytest run that reads the reference folder.

Each check runs a small test file in a pytest of its own, with the guard loaded
as ``tests/conftest.py`` loads it and ``$OCM_SHARED`` pointing at a folder of
the temporary directory, and looks at the outcomes and the exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.readguard import REPO, ReadGuard, ReferenceRead

INNER_TESTS = """
import os
from pathlib import Path

SHARED = Path(os.environ["OCM_SHARED"])


def test_reads_a_reference_file():
    assert (SHARED / "spec.md").read_text() == "reference\\n"


def test_lists_the_reference_folder():
    assert sorted(p.name for p in SHARED.glob("*")) == ["spec.md"]


def test_swallows_the_refusal():
    try:
        (SHARED / "spec.md").read_bytes()
    except Exception:
        pass


def test_reads_elsewhere():
    assert (SHARED.parent / "elsewhere.txt").read_text() == "fine\\n"
"""

INNER_IMPORT_TIME = """
import os
from pathlib import Path

try:  # at import time, and the refusal swallowed: no test sees it
    SPEC = (Path(os.environ["OCM_SHARED"]) / "spec.md").read_text()
except Exception:
    SPEC = ""


def test_passes():
    assert True
"""


def _run_inner(tmp_path: Path, source: str, *extra: str) -> subprocess.CompletedProcess[str]:
    shared = tmp_path / "shared"
    shared.mkdir(exist_ok=True)
    (shared / "spec.md").write_text("reference\n")
    (tmp_path / "elsewhere.txt").write_text("fine\n")
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(source))
    env = {**os.environ, "OCM_SHARED": str(shared), "PYTHONPATH": str(REPO)}
    plugins = ["-p", "tests.readguard", "-p", "no:cacheprovider"]
    # A temporary folder of its own: pytest's clean-up of old numbered folders
    # under the shared one opens names relative to a folder descriptor, which
    # the guard resolves against the working directory (holding "shared").
    options = [
        "-rA",
        "-o",
        "addopts=",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        f"--basetemp={tmp_path / 'inner-tmp'}",
    ]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, *options, *extra, "test_inner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_reads_fail_the_tests_that_made_them(tmp_path: Path) -> None:
    result = _run_inner(tmp_path, INNER_TESTS)
    out = result.stdout
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, out + result.stderr
    assert "3 failed, 1 passed in" in out
    assert "FAILED test_inner.py::test_reads_a_reference_file" in out
    assert "FAILED test_inner.py::test_lists_the_reference_folder" in out
    assert "FAILED test_inner.py::test_swallows_the_refusal" in out  # caught, still failed
    assert "PASSED test_inner.py::test_reads_elsewhere" in out
    assert "tests.readguard.ReferenceRead: a test read the reference folder" in out
    assert f"read the reference folder: open {tmp_path / 'shared' / 'spec.md'}" in out
    assert "reads of the reference folder" in out
    assert f"open {tmp_path / 'shared' / 'spec.md'}" in out
    assert f"os.scandir {tmp_path / 'shared'}" in out


def test_a_read_outside_any_test_fails_the_run(tmp_path: Path) -> None:
    result = _run_inner(tmp_path, INNER_IMPORT_TIME)
    out = result.stdout
    assert "1 passed" in out
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, out + result.stderr
    assert f"open {tmp_path / 'shared' / 'spec.md'}" in out


@pytest.mark.parametrize("source", [INNER_TESTS, INNER_IMPORT_TIME], ids=["tests", "import"])
def test_reads_in_xdist_workers_fail_the_run(tmp_path: Path, source: str) -> None:
    """``make test`` runs the kubesim leg on two xdist workers: their reads count too."""
    result = _run_inner(tmp_path, source, "-n", "2")
    out = result.stdout
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, out + result.stderr
    assert "reads of the reference folder" in out
    assert f"open {tmp_path / 'shared' / 'spec.md'}" in out


def test_guard_matches_paths_not_prefixes_of_names(tmp_path: Path) -> None:
    guard = ReadGuard([tmp_path / "shared"])
    guard("open", (str(tmp_path / "shared-notes" / "x"), "r", 0))
    guard("open", (3, "r", 0))  # a file descriptor
    guard("os.listdir", (str(tmp_path),))
    assert guard.reads == []
    with pytest.raises(ReferenceRead):
        guard("open", (os.fsencode(tmp_path / "shared" / "a" / "b"), "r", 0))
    with pytest.raises(ReferenceRead):
        guard("os.scandir", (tmp_path / "shared",))
    assert guard.reads == [
        f"open {tmp_path / 'shared' / 'a' / 'b'}",
        f"os.scandir {tmp_path / 'shared'}",
    ]
