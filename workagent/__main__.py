"""Entry point of the ``workagent`` command (the agent lands in a later issue)."""

import sys


def main() -> None:
    """Report that the agent is not built yet and exit with a usage error."""
    print("workagent: the agent is not implemented yet (see issue 5)", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
