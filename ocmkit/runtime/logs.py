"""Logging setup: structlog, JSON lines by default, with per-reconcile context.

Both structlog loggers and stdlib ``logging`` records (aiohttp, libraries) go
through the same renderer, so every line of the process has one format.
Context is bound in :mod:`contextvars`, which asyncio copies into each task:
a worker that binds ``controller``, ``key`` and ``reconcile_id`` gets them on
every line logged while it reconciles, including lines from code it calls.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import uuid
from collections.abc import Iterator
from typing import Any, TextIO

import structlog
from structlog.typing import Processor

from ocmkit.command import LOG_FORMATS

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def parse_level(level: str | int) -> int:
    """A stdlib level number from a name (``info``) or a number; ValueError otherwise."""
    if isinstance(level, int):
        return level
    try:
        return _LEVELS[level.strip().lower()]
    except KeyError:
        raise ValueError(
            f"unknown log level {level!r}: use one of {', '.join(sorted(set(_LEVELS)))}"
        ) from None


def configure_logging(
    format: str = "json",
    level: str | int = "info",
    *,
    stream: TextIO | None = None,
) -> None:
    """Route structlog and stdlib logging to ``stream`` (stderr) as JSON or console lines.

    Safe to call again (tests, reconfiguration): it replaces the root handler.
    """
    if format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {format!r}: use one of {', '.join(LOG_FORMATS)}")
    numeric = parse_level(level)
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Processor
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if format == "json":
        # Tracebacks as one string field keep each record on one line.
        final.append(structlog.processors.format_exc_info)
        renderer = structlog.processors.JSONRenderer(default=str)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    final.append(renderer)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached, so a later configure_logging() applies to existing loggers.
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(foreign_pre_chain=shared, processors=final)
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)
    # aiohttp's access log would log every probe and scrape.
    logging.getLogger("aiohttp.access").setLevel(max(numeric, logging.WARNING))


@contextlib.contextmanager
def reconcile_context(controller: str, key: str) -> Iterator[str]:
    """Bind ``controller``, ``key`` and a new ``reconcile_id`` to every log line in this block.

    Yields the reconcile id. The binding lives in contextvars, so it is local
    to the current task and undone when the block exits.
    """
    rid = str(uuid.uuid4())
    with structlog.contextvars.bound_contextvars(controller=controller, key=key, reconcile_id=rid):
        yield rid


def bound_context(**values: Any) -> contextlib.AbstractContextManager[Any]:
    """Bind arbitrary key/values to the log lines of the current task within a block."""
    return structlog.contextvars.bound_contextvars(**values)
