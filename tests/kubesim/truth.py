"""The same scripted exchanges sent to kubesim and to a real kube-apiserver, answers compared.

A scenario is an async function of a :class:`Side` (one API server) and a
:class:`Record` (what that server answered, step by step). It runs once per
side; the two records must be equal once the values a server makes up are
masked (uids, resourceVersions, timestamps) and the values that legitimately
differ are masked by the scenario itself, each with its reason.

:func:`diff` and :func:`mask` are shared with the golden replay of the
recorded v1.24 exchanges (tests/kubesim/test_golden.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def mask(value: Any, key: str = "", volatile: frozenset[str] = frozenset()) -> Any:
    """``value`` with made-up values replaced by placeholders; nulls stay null.

    Keys in ``volatile`` are masked whatever their value (``<volatile>``);
    otherwise uids and RFC 3339 timestamps (anywhere in a string) and non-empty
    resourceVersions are. A null timestamp stays null: whether a server
    writes ``null`` or omits a field is part of what is compared.
    """
    if key in volatile:
        return "<volatile>"
    if key == "managedFields" and isinstance(value, list):
        # Ordered by time (seconds) first: which of two writes made in the same
        # second or in two is timing. The order within a time stays compared.
        value = sorted(value, key=_entry_order)
    if isinstance(value, dict):
        return {k: mask(v, k, volatile) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, key, volatile) for v in value]
    if isinstance(value, str):
        if key == "resourceVersion" and value:
            return "<rv>"
        return UUID.sub("<uid>", TIMESTAMP.sub("<time>", value))
    return value


def _entry_order(entry: Any) -> tuple[str, ...]:
    """The apiserver's order of managedFields entries, the time left out."""
    if not isinstance(entry, dict):
        return ("",)
    return tuple(
        str(entry.get(k) or "") for k in ("operation", "manager", "apiVersion", "subresource")
    )


def _brief(value: Any) -> str:
    """``value`` shortened for a difference line; watch events as their type and name
    (a list of them differs in length, and their first bytes are all alike)."""
    if isinstance(value, list) and all(isinstance(e, dict) and "type" in e for e in value):
        named = [(e["type"], ((e.get("object") or {}).get("metadata") or {})) for e in value]
        return json.dumps(
            [f"{kind} {meta.get('name') or meta.get('annotations') or ''}" for kind, meta in named]
        )[:600]
    return json.dumps(value)[:300]


def diff(expected: Any, got: Any, path: str = "") -> list[str]:
    """Differences as readable lines (expected vs got) by JSON path."""
    if isinstance(expected, dict) and isinstance(got, dict):
        out: list[str] = []
        for k in sorted(set(expected) | set(got)):
            if k not in got:
                out.append(f"{path}.{k}: missing (expected {json.dumps(expected[k])[:200]})")
            elif k not in expected:
                out.append(f"{path}.{k}: unexpected {json.dumps(got[k])[:200]}")
            else:
                out += diff(expected[k], got[k], f"{path}.{k}")
        return out
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        return [
            d
            for i, (a, b) in enumerate(zip(expected, got, strict=True))
            for d in diff(a, b, f"{path}[{i}]")
        ]
    if expected != got:
        return [f"{path}: expected {_brief(expected)} got {_brief(got)}"]
    return []


@dataclass
class Answer:
    """One response: status code, decoded body (JSON, else text), Warning headers."""

    status: int
    body: Any
    warnings: list[str] = field(default_factory=list)

    @property
    def json(self) -> dict[str, Any]:
        """The body as a JSON object (fails the test when it is not one)."""
        assert isinstance(self.body, dict), f"{self.status}: {self.body!r}"[:500]
        return self.body

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events of a watch answer (fails the test when it is not one)."""
        assert isinstance(self.body, list), f"{self.status}: {self.body!r}"[:500]
        return self.body


@dataclass
class Side:
    """One API server reached over HTTP(S) with a bearer token."""

    name: str
    base: str
    token: str
    session: aiohttp.ClientSession
    kubeconfig: Path

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Answer:
        """Send one request and read the whole answer."""
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": accept,
            "User-Agent": "truth-test",
        }
        data = None
        if body is not None:
            if content_type:  # "" sends none at all
                headers["Content-Type"] = content_type
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        async with self.session.request(
            method,
            self.base + path,
            data=data,
            headers=headers,
            skip_auto_headers=() if content_type else ("Content-Type",),
        ) as r:
            text = await r.text()
            warnings = r.headers.getall("Warning", [])
        try:
            decoded: Any = json.loads(text)
        except ValueError:
            decoded = text
        return Answer(r.status, decoded, list(warnings))

    async def watch(
        self,
        path: str,
        *,
        until: Callable[[dict[str, Any]], bool] | None = None,
        on_event: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> Answer:
        """A watch request: its events (body: the list), read until the stream
        ends or ``until(event)`` holds (the connection is then closed).

        ``on_event`` runs after each event is read (to make a change the
        watch must then report). A non-200 answer's body is the Status.
        """
        headers = {"Authorization": f"Bearer {self.token}", "User-Agent": "truth-test"}
        events: list[dict[str, Any]] = []
        async with self.session.get(self.base + path, headers=headers) as r:
            if r.status != 200:
                return Answer(r.status, json.loads(await r.text()))
            async for line in r.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                events.append(event)
                if on_event is not None:
                    await on_event(event)
                if until is not None and until(event):
                    break
        return Answer(r.status, events)


@dataclass
class Record:
    """What one side answered, step by step (masked)."""

    steps: list[tuple[str, Any]] = field(default_factory=list)

    def add(self, step: str, value: Any, *, volatile: frozenset[str] = frozenset()) -> None:
        """Record ``value`` (any JSON-like data) under ``step``, masked."""
        self.steps.append((step, mask(value, volatile=volatile)))

    def answer(
        self,
        step: str,
        answer: Answer,
        *,
        keys_only: bool = False,
        volatile: frozenset[str] = frozenset(),
    ) -> None:
        """Record an answer: code, warnings, body (or only its key paths)."""
        body = key_paths(answer.body) if keys_only else answer.body
        self.add(
            step,
            {"status": answer.status, "warnings": answer.warnings, "body": body},
            volatile=volatile,
        )


def key_paths(value: Any, prefix: str = "") -> list[str]:
    """Every key path of a JSON value (list items as ``[]``), sorted: its shape."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            here = f"{prefix}.{k}"
            out.add(here)
            out.update(key_paths(v, here))
    elif isinstance(value, list):
        for v in value:
            out.update(key_paths(v, prefix + "[]"))
    return sorted(out)


Scenario = Callable[[Side, Record], Awaitable[None]]


async def run_both(scenario: Scenario, kubesim: Side, real: Side) -> list[str]:
    """Run ``scenario`` on both sides at once; the differences, kubesim vs real."""
    ours, theirs = Record(), Record()
    await asyncio.gather(scenario(kubesim, ours), scenario(real, theirs))
    out: list[str] = []
    for (step, got), (real_step, expected) in zip(ours.steps, theirs.steps, strict=False):
        assert step == real_step, f"the scenario took different steps: {step} / {real_step}"
        out += [f"{step}: {line}" for line in diff(expected, got)]
    if len(ours.steps) != len(theirs.steps):
        out.append(f"steps: kubesim {len(ours.steps)}, real {len(theirs.steps)}")
    return out


def tls_context(ca_pem: bytes) -> ssl.SSLContext:
    """A client TLS context trusting ``ca_pem``."""
    return ssl.create_default_context(cadata=ca_pem.decode())


async def same(scenario: Scenario, sides: tuple[Side, Side]) -> None:
    """Run ``scenario`` on both; fail with every difference (kubesim vs real)."""
    differences = await run_both(scenario, *sides)
    assert not differences, "kubesim differs from the real apiserver:\n" + "\n".join(differences)


async def namespace(side: Side, name: str) -> None:
    """Create namespace ``name`` (a scenario's own, on both servers)."""
    answer = await side.call("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert answer.status == 201, answer.body


def configmap(name: str, **labels: str) -> dict[str, Any]:
    """A ConfigMap body."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": name}}
