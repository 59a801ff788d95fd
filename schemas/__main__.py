"""``python -m schemas crds --out DIR [--check]``: write (or check) the generated CRDs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from schemas.crdgen import render_all, write_crds


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m schemas")
    commands = parser.add_subparsers(dest="command", required=True)
    crds = commands.add_parser("crds", help="write the CustomResourceDefinitions")
    crds.add_argument("--out", type=Path, required=True, help="directory to write into")
    crds.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the files in --out differ from the generated ones",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    if args.check:
        stale = [
            name
            for name, text in render_all().items()
            if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text
        ]
        for name in stale:
            print(f"stale or missing: {out / name}", file=sys.stderr)
        return 1 if stale else 0
    for path in write_crds(out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
