"""Logging: JSON lines, levels, and controller/key/reconcile_id on every reconcile line."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from ocmkit.runtime import (
    Controller,
    WorkQueue,
    configure_logging,
    parse_level,
    reconcile_context,
)
from tests.conftest import eventually
from tests.support.clock import FakeClock


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """Capture the process's log output; restore the defaults afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    stream = io.StringIO()
    try:
        yield stream
    finally:
        root.handlers, level = saved
        root.setLevel(level)
        structlog.reset_defaults()


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_json_lines_for_structlog_and_stdlib(log_stream: io.StringIO) -> None:
    configure_logging("json", "info", stream=log_stream)
    structlog.get_logger("test").info("hello", answer=42)
    logging.getLogger("some.library").warning("from stdlib %s", "logging")
    structlog.get_logger("test").debug("hidden")
    try:
        raise ValueError("boom")
    except ValueError:
        structlog.get_logger("test").exception("failed")
    records = lines(log_stream)
    assert [r["event"] for r in records] == ["hello", "from stdlib logging", "failed"]
    assert records[0]["answer"] == 42 and records[0]["level"] == "info"
    assert records[0]["logger"] == "test" and "timestamp" in records[0]
    assert records[1]["level"] == "warning" and records[1]["logger"] == "some.library"
    assert "ValueError: boom" in records[2]["exception"]


def test_console_format(log_stream: io.StringIO) -> None:
    configure_logging("console", "debug", stream=log_stream)
    structlog.get_logger("test").debug("visible", thing="x")
    out = log_stream.getvalue()
    assert "visible" in out and "thing=x" in out


def test_bad_format_and_level_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown log format"):
        configure_logging("xml")
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("json", "loud")
    assert parse_level("WARNING") == logging.WARNING
    assert parse_level(15) == 15


async def test_every_line_of_a_reconcile_carries_controller_key_and_id(
    log_stream: io.StringIO,
) -> None:
    configure_logging("json", "info", stream=log_stream)
    helper_log = logging.getLogger("helper")

    async def helper() -> None:
        helper_log.info("stdlib line inside the reconcile")

    async def reconcile(key: str) -> None:
        structlog.get_logger("mine").info("first")
        await asyncio.sleep(0)
        await helper()
        if key == "bad":
            raise RuntimeError("nope")

    q = WorkQueue("log-test", clock=FakeClock())
    ctl = Controller("log-test", q, reconcile, workers=2)
    run = asyncio.create_task(ctl.run())
    q.add("ns/good")
    q.add("bad")

    async def done() -> bool:
        return "bad" in q.waiting() and not q.processing()

    await eventually(done)
    await ctl.stop(5)
    await run
    structlog.get_logger("outside").info("after")
    records = lines(log_stream)
    inside = [r for r in records if r["event"] in ("first", "stdlib line inside the reconcile")]
    assert len(inside) == 4
    for record in inside:
        assert record["controller"] == "log-test"
        assert record["key"] in ("ns/good", "bad")
        assert record["reconcile_id"]
    by_key: dict[str, set[str]] = {}
    for record in inside:
        by_key.setdefault(record["key"], set()).add(record["reconcile_id"])
    assert all(len(ids) == 1 for ids in by_key.values()), "one id per reconcile"
    assert by_key["ns/good"] != by_key["bad"]
    failure = next(r for r in records if r["event"] == "reconcile failed, will retry")
    assert failure["key"] == "bad" and failure["error"] == "nope"
    assert failure["reconcile_id"] in by_key["bad"]
    after = next(r for r in records if r["event"] == "after")
    assert "key" not in after and "controller" not in after


def test_reconcile_context_unbinds(log_stream: io.StringIO) -> None:
    configure_logging("json", "info", stream=log_stream)
    with reconcile_context("c", "k") as rid:
        structlog.get_logger().info("in")
    structlog.get_logger().info("out")
    inside, outside = lines(log_stream)
    assert inside["reconcile_id"] == rid and inside["controller"] == "c"
    assert "reconcile_id" not in outside
