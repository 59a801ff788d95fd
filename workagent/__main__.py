"""Entry point of the ``workagent`` command: parse the command line, then run the agent.

Exit codes: 0 after a clean stop (or help/version), 1 when the agent fails
at run time, 2 for a command line that cannot run; the last prints exactly
one ``workagent: <message>`` line on stderr, as a Go agent's flag errors do.
``workagent diff`` exits 0 (no changes), 1 (changes) or 2 (an error), as
``kubectl diff``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from ocmkit.command import EXIT_FAILURE, execute_program, import_optional, start_logging
from workagent.cli import PROG, AgentCommand, DiffCommand, parse_command_line

AGENT_MODULE = "workagent.agent"


def run_agent(command: AgentCommand, stderr: TextIO) -> int:
    """Set up logging, report ignored flags, and run the agent until it stops."""
    settings = command.settings
    start_logging(settings.log_format, settings.log_level, command.notices)
    # Imported only now, so the command line (and its tests) work without the
    # agent's heavier dependencies.
    runner = getattr(import_optional(AGENT_MODULE), "run", None)
    if not callable(runner):
        print(f"{PROG}: the agent is not available in this build", file=stderr)
        return EXIT_FAILURE
    return int(runner(settings))


def execute(
    argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``workagent`` with these arguments (no program name); returns the exit code."""

    def run(command: AgentCommand | DiffCommand) -> int:
        if isinstance(command, DiffCommand):
            # Imported here: it loads the client and the appliers, as the agent does.
            from workagent.diff import run_diff  # noqa: PLC0415

            return run_diff(command, stdout or sys.stdout, stderr or sys.stderr)
        return run_agent(command, stderr or sys.stderr)

    return execute_program(PROG, lambda: parse_command_line(argv), run, stdout, stderr)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: exit with :func:`execute`'s code."""
    raise SystemExit(execute(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
