"""What the agent and a CEL worker process say to each other.

The agent sends one request per manifest sync: the live object and the CEL
programs of its rules. The worker answers with one JSON line per program
phase, as soon as each is known, so that a request cut short by the time
budget still yields every result obtained before the cut:

* an *expressions* line ``{"p": i, "status": ..., "reason": ..., "error": ...}``
  for program ``i``;
* then, only when that line carries no error and the program has a
  ``messageExpression``, a *message* line ``{"p": i, "message": ..., "error": ...}``.

This module imports neither celpy nor anything of the agent, so both sides
can use it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workagent.conditions.reasons import (
    BUDGET_EXCEEDED_MESSAGE,
    FALSE,
    REASON_EXPRESSION_ERROR,
    REASON_INTERNAL_ERROR,
    UNKNOWN,
)


@dataclass(frozen=True)
class CelProgram:
    """The CEL part of one condition rule: expressions ANDed, then a message expression."""

    expressions: tuple[str, ...]
    message_expression: str = ""


@dataclass(frozen=True)
class ExpressionsOutcome:
    """The result of a program's expressions: a condition status and reason.

    ``error`` is the condition message when the expressions failed (the message
    expression is then not evaluated).
    """

    status: str
    reason: str
    error: str | None = None


@dataclass(frozen=True)
class MessageOutcome:
    """The result of a message expression.

    ``message`` is its non-empty string result; ``error`` the message to use
    instead when it failed. Both None: it yielded an empty string, so the
    rule's static or default message applies.
    """

    message: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class ProgramOutcome:
    """Everything known about one program; ``message`` is None when it was not evaluated."""

    expressions: ExpressionsOutcome
    message: MessageOutcome | None = None


def budget_exceeded() -> ExpressionsOutcome:
    """The outcome of expressions cut short by the evaluation budget."""
    return ExpressionsOutcome(FALSE, REASON_EXPRESSION_ERROR, BUDGET_EXCEEDED_MESSAGE)


def internal_error(message: str) -> ExpressionsOutcome:
    """The outcome when the evaluator, not the expression, failed."""
    return ExpressionsOutcome(UNKNOWN, REASON_INTERNAL_ERROR, message)


def expects_message_line(program: CelProgram, outcome: ExpressionsOutcome) -> bool:
    """Whether a message line follows the expressions line of ``program``."""
    return outcome.error is None and bool(program.message_expression)


@dataclass(frozen=True)
class TimeLimits:
    """Wall-clock seconds a worker gives each program of a request, and all of them."""

    program: float
    request: float


def encode_request(
    obj: Mapping[str, Any], programs: Sequence[CelProgram], limits: TimeLimits | None = None
) -> bytes:
    """One request line (JSON, newline-terminated)."""
    body: dict[str, Any] = {
        "object": obj,
        "programs": [{"e": list(p.expressions), "m": p.message_expression} for p in programs],
    }
    if limits is not None:
        body["limits"] = [limits.program, limits.request]
    # default=str: a live object is plain JSON, but a caller's stray value
    # (a datetime ...) must not make the whole sync fail.
    return json.dumps(body, separators=(",", ":"), default=str).encode() + b"\n"


def decode_request(line: bytes) -> tuple[Any, list[CelProgram], TimeLimits | None]:
    """The object, programs and time limits (if any) of a request line."""
    body = json.loads(line)
    programs = [
        CelProgram(tuple(str(e) for e in p.get("e") or ()), str(p.get("m") or ""))
        for p in body["programs"]
    ]
    limits = body.get("limits")
    time_limits = None if limits is None else TimeLimits(float(limits[0]), float(limits[1]))
    return body["object"], programs, time_limits


def encode_expressions(index: int, outcome: ExpressionsOutcome) -> bytes:
    """An expressions line."""
    body = {"p": index, "status": outcome.status, "reason": outcome.reason, "error": outcome.error}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def encode_message(index: int, outcome: MessageOutcome) -> bytes:
    """A message line."""
    body = {"p": index, "message": outcome.message, "error": outcome.error}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


class ProtocolError(Exception):
    """A worker said something that does not follow the protocol."""


def decode_response(line: bytes, index: int) -> ExpressionsOutcome | MessageOutcome:
    """An expressions or message line for program ``index``."""
    try:
        body = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"unreadable worker answer: {exc}") from exc
    if not isinstance(body, dict) or body.get("p") != index:
        raise ProtocolError(f"worker answered out of order (expected program {index})")
    error = body.get("error")
    if not (error is None or isinstance(error, str)):
        raise ProtocolError("worker answer has a non-string error")
    if "status" in body:
        status, reason = body.get("status"), body.get("reason")
        if not isinstance(status, str) or not isinstance(reason, str):
            raise ProtocolError("worker answer has no status or reason")
        return ExpressionsOutcome(status, reason, error)
    message = body.get("message")
    if not (message is None or isinstance(message, str)):
        raise ProtocolError("worker answer has a non-string message")
    return MessageOutcome(message, error)
