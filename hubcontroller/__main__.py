"""Entry point of the ``hubcontroller`` command (the agent lands in a later issue)."""

import sys


def main() -> None:
    """Report that the hub controller is not built yet and exit with a usage error."""
    print("hubcontroller: the hub controller is not implemented yet (see issue 7)", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
