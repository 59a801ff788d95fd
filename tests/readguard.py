"""A pytest plugin that fails the run if anything reads the reference folder.

``make test`` must pass on a clone with nothing beside it, so no test may read
the reference documents that sit beside the repository (``../shared``, or
``$OCM_SHARED``): what a test needs is in ``tests/fixtures/``; comparing the
project with those documents is ``make conformance``'s job.

An audit hook (PEP 578) sees every file the test process opens and every
directory it lists. One under a guarded folder is refused where it happens
(:class:`ReferenceRead`) and recorded: the test during which it happened fails
(also when it caught the error), and the session fails as well, so a caller that swallows the
error, or a read at import time, cannot hide it. ``tests/conftest.py`` loads
the plugin; ``tests/test_readguard.py`` proves it fails a run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The variable ``make conformance`` reads the reference folder's location from.
ENV = "OCM_SHARED"
#: Audit events that read a path: its first argument is the path.
_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "glob.glob", "shutil.copyfile"})
#: Where an xdist worker leaves its reads for the controller.
WORKER_KEY = "reference_reads"


class ReferenceRead(RuntimeError):
    """Raised where a test reads the reference folder."""


def guarded_folders() -> list[Path]:
    """``shared`` beside the repository, and ``$OCM_SHARED`` when set."""
    folders = [REPO.parent / "shared"]
    configured = os.environ.get(ENV)
    if configured:
        folders.append(Path(configured))
    return folders


class ReadGuard:
    """The audit hook: refuses and records reads under the guarded folders."""

    def __init__(self, folders: list[Path]) -> None:
        prefixes: set[str] = set()
        for folder in folders:
            for form in (os.path.abspath(folder), os.path.realpath(folder)):
                prefixes.add(form.rstrip(os.sep) + os.sep)
        self.prefixes = tuple(sorted(prefixes))
        #: Every refused read, as ``"<event> <path>"``, in order.
        self.reads: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _EVENTS or not args:
            return
        target = args[0]
        if target is None:  # os.listdir() / os.scandir(): the working directory
            target = "."
        if not isinstance(target, str | bytes | os.PathLike):
            return  # a file descriptor
        path = os.path.abspath(os.fsdecode(target)) + os.sep
        if path.startswith(self.prefixes):
            read = f"{event} {path.rstrip(os.sep)}"
            self.reads.append(read)
            raise ReferenceRead(
                f"a test read the reference folder ({read}); tests must use tests/fixtures/, "
                "and comparisons with the reference documents belong in conformance/"
            )


_GUARD: ReadGuard | None = None


def guard() -> ReadGuard:
    """The process's guard, installed on first use (an audit hook cannot be removed)."""
    global _GUARD
    if _GUARD is None:
        _GUARD = ReadGuard(guarded_folders())
        sys.addaudithook(_GUARD)
    return _GUARD


def pytest_configure(config: pytest.Config) -> None:
    """Install the hook before collection: reads at import time count too."""
    guard()


_reported = 0  # how many reads were already attributed (or made before the tests ran)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Reads at import time belong to no test: only the session fails for them."""
    global _reported
    _reported = len(guard().reads)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Fail the setup, call or teardown during which the reference folder was read, also
    when the test caught the error."""
    global _reported
    report = yield
    reads = guard().reads
    new, _reported = reads[_reported:], len(reads)
    if new and report.passed:
        report.outcome = "failed"
        report.longrepr = "read the reference folder: " + "; ".join(new)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if anything read the reference folder, in a test or not.

    An xdist worker's exit status does not reach the controller: a worker hands
    its reads over (``workeroutput``) and the controller fails the run for them.
    """
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:
        worker_output[WORKER_KEY] = list(guard().reads)
        return
    ok = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    if guard().reads and session.exitstatus in ok:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """(xdist controller) Take over the reads a finished worker made."""
    guard().reads.extend(getattr(node, "workeroutput", {}).get(WORKER_KEY, []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """List the reads, so the failure says what to fix."""
    reads = guard().reads
    if reads:
        terminalreporter.section("reads of the reference folder", red=True)
        for read in reads:
            terminalreporter.write_line(read)
