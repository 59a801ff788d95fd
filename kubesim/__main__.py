"""The ``kubesim`` command: ``kubesim serve --port PORT --kubeconfig PATH ...``."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from pathlib import Path

from kubesim.sim import KubeSim


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubesim", description="A Kubernetes API server emulator for tests and demos."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the Kubernetes API until SIGTERM/SIGINT")
    serve.add_argument("--port", type=int, required=True, help="TCP port (0 picks a free one)")
    serve.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--tls", action="store_true", help="serve HTTPS with a self-signed CA")
    serve.add_argument(
        "--simulate-workloads",
        action="store_true",
        help="make workloads report ready/complete status after a short delay",
    )
    serve.add_argument(
        "--watch-history", type=int, default=10000, help="events kept for watch resumption"
    )
    serve.add_argument(
        "--enforce-rbac", action="store_true", help="authorize requests with stored RBAC objects"
    )
    serve.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME:TOKEN[:GROUP,...]",
        help="an extra bearer-token identity (repeatable)",
    )
    serve.add_argument(
        "--state-file",
        help="load objects from this file at start and save them at stop (restart with state)",
    )
    serve.add_argument("--log-level", default="WARNING", help="Python log level")
    return parser


async def _serve(args: argparse.Namespace) -> int:
    sim = KubeSim(
        host=args.host,
        port=args.port,
        tls=args.tls,
        simulate_workloads=args.simulate_workloads,
        watch_history=args.watch_history,
        enforce_rbac=args.enforce_rbac,
    )
    for spec in args.user:
        parts = spec.split(":")
        if len(parts) < 2 or not parts[0] or not parts[1]:
            print(f"kubesim: --user {spec!r} is not NAME:TOKEN[:GROUP,...]", file=sys.stderr)
            return 2
        groups = tuple(g for g in (parts[2].split(",") if len(parts) > 2 else []) if g)
        sim.add_user(parts[0], groups, token=parts[1])
    state_file = Path(args.state_file) if args.state_file else None
    if state_file is not None and state_file.exists():
        try:
            sim.store.restore(json.loads(state_file.read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            print(f"kubesim: cannot load state from {state_file}: {exc}", file=sys.stderr)
            return 2
        sim.api.reload_crds()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        url = await sim.start()
    except OSError as exc:
        print(f"kubesim: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    sim.write_kubeconfig(args.kubeconfig)
    print(f"kubesim serving {url}; kubeconfig {args.kubeconfig}", flush=True)
    await stop.wait()
    await sim.stop()
    if state_file is not None:
        tmp = state_file.with_suffix(state_file.suffix + ".tmp")
        tmp.write_text(json.dumps(sim.store.snapshot()))
        tmp.replace(state_file)
    return 0


def main(argv: list[str] | None = None) -> None:
    """Run the kubesim command line."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be between 0 and 65535, not {args.port}")
    if args.watch_history < 1:
        parser.error("--watch-history must be at least 1")
    level = logging.getLevelName(args.log_level.upper())
    if not isinstance(level, int):
        parser.error(f"--log-level {args.log_level!r} is not a log level")
    logging.basicConfig(level=level, format="%(levelname)s %(name)s %(message)s")
    raise SystemExit(asyncio.run(_serve(args)))


if __name__ == "__main__":
    main()
