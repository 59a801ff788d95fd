"""Entry point of the ``hubcontroller`` command: parse the command line, then run a hub process.

Exit codes: 0 after a clean stop (or help/version), 1 when a process fails
at run time or is not part of this build, 2 for a command line that cannot
run; the last prints exactly one ``hubcontroller: <message>`` line on stderr,
as the Go binary's flag errors do.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import TextIO

from hubcontroller.cli import (
    PROG,
    GrpcServerCommand,
    ManagerCommand,
    WebhookCommand,
    parse_command_line,
)
from ocmkit.command import (
    EXIT_FAILURE,
    EXIT_USAGE,
    execute_program,
    import_optional,
    one_line,
    start_logging,
)

#: The webhook package: ``WebhookSettings`` (built from the parsed flags; it checks ports
#: and TLS names) and ``run_webhook_server(settings)`` (returns the exit code).
WEBHOOK_MODULE = "hubcontroller.webhook"


def run_manager_command(command: ManagerCommand) -> int:
    """Set up logging, report ignored flags, and run the work manager until it stops."""
    # Imported here, not at the top: the manager loads the runtime and the client,
    # which help, --version and usage errors have no use for.
    from hubcontroller.manager import build_hub_manager  # noqa: PLC0415
    from ocmkit.runtime import run_built  # noqa: PLC0415

    settings = command.settings
    start_logging(settings.log_format, settings.log_level, command.notices)
    return asyncio.run(
        run_built(
            lambda: build_hub_manager(settings), terminate_on_files=settings.terminate_on_files
        )
    )


def run_grpc_server_command(command: GrpcServerCommand) -> int:
    """Set up logging, report ignored flags, and serve CloudEvents over gRPC until stopped."""
    from hubcontroller.grpcserver.server import run  # noqa: PLC0415 (loads gRPC and the client)

    settings = command.settings
    start_logging(settings.log_format, settings.log_level, command.notices)
    return run(settings)


def run_webhook_command(command: WebhookCommand, stderr: TextIO) -> int:
    """Build the webhook's settings, set up logging, and run the webhook until it stops."""
    # Imported only now, so the manager (and the command line) work without the webhook.
    webhook = import_optional(WEBHOOK_MODULE)
    if webhook is None:
        print(f"{PROG}: the webhook server is not available in this build", file=stderr)
        return EXIT_FAILURE
    try:
        settings = webhook.WebhookSettings(**command.settings.settings_fields())
    except ValueError as error:
        # A value only the webhook can judge (ports, TLS names): still a usage error.
        print(f"{PROG}: {one_line(error)}", file=stderr)
        return EXIT_USAGE
    start_logging(command.settings.log_format, command.settings.log_level, command.notices)
    return int(asyncio.run(webhook.run_webhook_server(settings)))


def execute(
    argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``hubcontroller`` with these arguments (no program name); returns the exit code."""

    def run(command: ManagerCommand | WebhookCommand | GrpcServerCommand) -> int:
        if isinstance(command, WebhookCommand):
            return run_webhook_command(command, stderr or sys.stderr)
        if isinstance(command, GrpcServerCommand):
            return run_grpc_server_command(command)
        return run_manager_command(command)

    return execute_program(PROG, lambda: parse_command_line(argv), run, stdout, stderr)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: exit with :func:`execute`'s code."""
    raise SystemExit(execute(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
