"""``make demo``: the command line, logging, the time budget and the exit code.

``main(argv)`` runs the whole demo in a new event loop and returns its exit
code: 0 when every expected state was reached and everything stopped
cleanly, 1 with a clear message otherwise, 130 on Ctrl-C. The agents' and the
hub controller's own logs go to a file (they would drown the view); its last
warnings and errors are shown when something fails, and the file is kept then.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import structlog

from demo.environment import CLUSTERS, Environment, StartupError
from demo.scenario import DemoFailure, HubObserver, Scenario
from demo.view import TerminalView
from ocmkit.runtime import configure_logging

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
#: The whole demo (start, steps) must fit in this many seconds by default; with the
#: bounded clean stop after it, a failing demo still ends within two minutes.
DEFAULT_BUDGET = 90.0
#: Log lines shown after a failure.
LOG_TAIL = 15
#: A warning or error line of the console log format (``[warning  ] ...``).
_PROBLEM_LINE = re.compile(r"\[(warning|error|critical)\s*\]")


@dataclass(frozen=True)
class Options:
    """What the command line chose."""

    budget: float = DEFAULT_BUDGET
    live: bool | None = None  # None: live on a terminal, plain lines otherwise
    log_level: str = "info"


def parse_args(argv: Sequence[str]) -> Options:
    """The demo's options (``python -m demo --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m demo",
        description="Run a hub, four managed clusters (kubesim), the hub controller, the hub's "
        "gRPC server and one work agent per cluster (cluster4's over gRPC) in this process; "
        "apply the user guide's examples and show the works' conditions and feedback as they "
        "change.",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_BUDGET,
        help="seconds the whole demo may take before it fails (default %(default)s)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--live", action="store_true", help="redraw a table (default on a TTY)")
    mode.add_argument("--plain", action="store_true", help="print one line per change")
    parser.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="level of the components' log file (default %(default)s)",
    )
    args = parser.parse_args(list(argv))
    live = True if args.live else False if args.plain else None
    return Options(budget=args.timeout, live=live, log_level=args.log_level)


@contextlib.contextmanager
def logs_to(path: Path, level: str) -> Iterator[None]:
    """Send every log line of this process to ``path`` while the demo runs.

    The previous logging setup is put back afterwards, so that running the demo
    inside another program (the tests) leaves that program's logging alone.
    """
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    saved_structlog = structlog.get_config()
    with path.open("a", encoding="utf-8") as stream:
        configure_logging("console", level, stream=stream)
        try:
            yield
        finally:
            root.handlers, root.level = saved_handlers, saved_level
            structlog.configure(**saved_structlog)


async def run_demo(options: Options, out: TextIO, workdir: Path) -> int:
    """The demo in the running event loop; returns the exit code."""
    live = options.live if options.live is not None else out.isatty()
    view = TerminalView(out, live=live)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + options.budget
    env = Environment(workdir)
    observer: HubObserver | None = None
    failure: str | None = None
    view.say(
        f"OCM work demo: a hub and {len(CLUSTERS)} managed clusters (kubesim), the hub "
        "controller, the hub's gRPC server and one work agent per cluster (cluster4's gets "
        "its works over gRPC, as a Klusterlet in gRPC mode), all in this process"
    )
    view.say(f"component logs: {workdir / 'demo.log'}")
    try:
        # The steps check the deadline themselves (and say what they waited for);
        # this bounds the start-up too.
        async with asyncio.timeout_at(deadline):
            await env.start_clusters(view.say)
            observer = HubObserver(env.hub_client, view)
            await observer.start()
            await env.start_components(view.say)
            await Scenario(env, view, observer, deadline=deadline).run()
    except (DemoFailure, StartupError) as err:
        failure = str(err)
    except TimeoutError:
        failure = f"the demo's time budget of {options.budget:.0f}s ran out"
    finally:
        if observer is not None:
            await observer.stop()
        if failure is not None:
            # The state at the moment of failure, before the components stop.
            view.snapshot("the hub when the demo failed:")
        view.finish()
        problems = await env.stop()
    if failure is None and problems:
        failure = "; ".join(problems)
    if failure is not None:
        out.write(f"\ndemo FAILED after {view.elapsed():.1f}s: {failure}\n")
        _show_log_problems(out, workdir / "demo.log")
        return EXIT_FAILED
    view.say(
        f"demo finished: every expected state was reached; hub controller, gRPC server, "
        f"{len(CLUSTERS)} agents and {len(CLUSTERS) + 1} API servers stopped cleanly"
    )
    return EXIT_OK


def _show_log_problems(out: TextIO, log_file: Path) -> None:
    """The last warnings and errors the components logged (the log file is kept)."""
    try:
        lines = log_file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    problems = [line for line in lines if _PROBLEM_LINE.search(line)]
    if not problems:
        out.write(f"the components logged no warning or error ({log_file} is kept)\n")
        return
    out.write(f"last warnings and errors of the components ({log_file} is kept):\n")
    for line in problems[-LOG_TAIL:]:
        out.write(f"  {line}\n")
    out.flush()


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    temp_root: Path | None = None,
) -> int:
    """Run the demo with these arguments (no program name); returns the exit code.

    Kubeconfigs and the log go to a new directory under ``temp_root`` (the
    system's temporary directory by default), removed after a success.
    """
    options = parse_args(sys.argv[1:] if argv is None else argv)
    out = stdout or sys.stdout
    workdir = Path(tempfile.mkdtemp(prefix="ocm-demo-", dir=temp_root))
    code = EXIT_FAILED
    started = time.monotonic()
    try:
        with logs_to(workdir / "demo.log", options.log_level):
            code = asyncio.run(run_demo(options, out, workdir))
    except KeyboardInterrupt:
        out.write(f"\ninterrupted after {time.monotonic() - started:.1f}s\n")
        code = EXIT_INTERRUPTED
    finally:
        if code != EXIT_FAILED:  # kept only to explain a failure
            shutil.rmtree(workdir, ignore_errors=True)
        out.flush()
    return code
