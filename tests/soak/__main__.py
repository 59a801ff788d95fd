"""``python -m tests.soak``: run the soak, print and write its report, exit 1 on a violation.

    python -m tests.soak --duration 10m --seed 7 --report soak-results/run.json

The agent's log and the kubeconfigs of the run go to a directory named like the
report, without ``.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import signal
import sys
import time
from pathlib import Path

from tests.soak.report import Report
from tests.soak.runner import Soak, SoakConfig
from tests.support.processes import REPO

RESULTS = REPO / "soak-results"
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(text: str) -> float:
    """A duration such as ``90``, ``30s``, ``10m``, ``1h`` or ``1h30m``, in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 90s, 10m, 1h)")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--duration", type=seconds, default=600.0, help="how long (default 10m)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: the time)")
    parser.add_argument("--report", type=Path, default=None, help="JSON report path")
    parser.add_argument(
        "--converge-timeout", type=seconds, default=120.0, help="per check (default 120s)"
    )
    parser.add_argument("--max-works", type=int, default=12, help="works at most (default 12)")
    parser.add_argument(
        "--quiet-after-kill",
        action="store_true",
        help="end a round when the agent is killed (default: keep changing works meanwhile)",
    )
    return parser.parse_args(argv)


async def run(soak: Soak) -> Report:
    """Run the soak; SIGINT or SIGTERM ends it after the current round, with its report."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, soak.request_stop)
    return await soak.run()


def main(argv: list[str] | None = None) -> int:
    """Run the soak; 0 without violations, 1 with."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    report_path: Path = args.report or RESULTS / f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    config = SoakConfig(
        workdir=report_path.with_suffix(""),
        duration=args.duration,
        seed=seed,
        converge_timeout=args.converge_timeout,
        max_works=args.max_works,
        changes_after_kill=not args.quiet_after_kill,
    )
    # Every injected outage drops connections mid-request, and aiohttp logs each
    # with a traceback from the in-process kubesims: noise, not findings.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    report = asyncio.run(run(Soak(config, say=lambda line: print(line, flush=True))))
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    # The kubeconfigs carry the (throwaway) admin tokens of the run's kubesims.
    for name in ("hub.kubeconfig", "spoke.kubeconfig"):
        (config.workdir / name).unlink(missing_ok=True)
    print(report.summary())
    print(f"report: {report_path}")
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
