"""Entry point of the ``workagent`` command: parse the command line, then run the agent.

Exit codes: 0 after a clean stop (or help/version), 1 when the agent fails
at run time, 2 for a command line that cannot run; the last prints exactly
one ``workagent: <message>`` line on stderr, as a Go agent's flag errors do.
``workagent diff`` exits 0 (no changes), 1 (changes) or 2 (an error), as
``kubectl diff``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TextIO, cast

from workagent.cli import (
    PROG,
    AgentCommand,
    DiffCommand,
    ShowText,
    UsageError,
    parse_command_line,
)
from workagent.settings import AgentSettings

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

AGENT_MODULE = "workagent.agent"


def load_agent_runner() -> Callable[[AgentSettings], int] | None:
    """``workagent.agent.run``, or None if this build has no agent.

    Imported only when the agent is about to start, so the command line (and
    its tests) work without the agent's heavier dependencies.
    """
    try:
        module = importlib.import_module(AGENT_MODULE)
    except ModuleNotFoundError as err:
        if err.name != AGENT_MODULE:
            raise  # the agent exists but something it imports is missing: show that
        return None
    runner = getattr(module, "run", None)
    return cast("Callable[[AgentSettings], int]", runner) if callable(runner) else None


def run_agent(command: AgentCommand, stderr: TextIO) -> int:
    """Set up logging, report ignored flags, and run the agent until it stops."""
    # Imported here, not at the top: the runtime loads the Kubernetes client,
    # which help, --version and usage errors have no use for.
    import structlog  # noqa: PLC0415

    from ocmkit.runtime import configure_logging  # noqa: PLC0415

    settings = command.settings
    configure_logging(settings.log_format, settings.log_level)
    log = structlog.get_logger(__name__)
    for notice in command.notices:
        log.warning(notice.message, flag=notice.flag)
    runner = load_agent_runner()
    if runner is None:
        print(f"{PROG}: the agent is not available in this build", file=stderr)
        return EXIT_FAILURE
    return int(runner(settings))


def execute(
    argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``workagent`` with these arguments (no program name); returns the exit code."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        command = parse_command_line(argv)
    except UsageError as error:
        # One line only: a crash-looping pod's last log line must say what is wrong.
        message = " ".join(str(error).split())
        print(f"{PROG}: {message}", file=err)
        return EXIT_USAGE
    if isinstance(command, ShowText):
        out.write(command.text)
        return EXIT_OK
    if isinstance(command, DiffCommand):
        # Imported here: it loads the client and the appliers, as the agent does.
        from workagent.diff import run_diff  # noqa: PLC0415

        return run_diff(command, out, err)
    return run_agent(command, err)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: exit with :func:`execute`'s code."""
    raise SystemExit(execute(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
