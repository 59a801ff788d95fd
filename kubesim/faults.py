"""Fault injection and request statistics behind kubesim's admin API."""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from dataclasses import dataclass, field, fields
from typing import Any

from kubesim import errors
from kubesim.errors import ApiError

FAULT_CODES = (409, 429, 500, 503)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _admin_json(record: Any) -> dict[str, Any]:
    """A record as the admin API shows it: every field, camelCase, in declared order."""
    return {_camel(f.name): getattr(record, f.name) for f in fields(record)}


@dataclass
class FaultRule:
    """Fail (or slow down) requests matching ``verb`` and ``resource``.

    ``count`` limits how many requests fail (0 = unlimited until removed);
    ``fraction`` fails that share of matching requests at random; ``latency``
    delays matching requests by that many seconds (with or without an error).
    """

    verb: str = "*"
    resource: str = "*"
    code: int | None = None
    count: int = 0
    fraction: float = 1.0
    retry_after: int = 1
    latency: float = 0.0
    user_agent: str = "*"
    hits: int = 0

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> FaultRule:
        """Build a rule from the admin API's JSON, rejecting bad values with 400."""
        allowed = {_camel(f.name) for f in fields(cls)} - {"hits"}
        unknown = set(body) - allowed
        if unknown:
            raise errors.bad_request(f"unknown fault fields: {sorted(unknown)}")
        code = body.get("code")
        if code is not None and code not in FAULT_CODES:
            raise errors.bad_request(f"fault code must be one of {list(FAULT_CODES)}, not {code!r}")
        try:
            rule = cls(
                verb=str(body.get("verb", "*")),
                resource=str(body.get("resource", "*")),
                code=None if code is None else int(code),
                count=int(body.get("count", 0)),
                fraction=float(body.get("fraction", 1.0)),
                retry_after=int(body.get("retryAfter", 1)),
                latency=float(body.get("latency", 0.0)),
                user_agent=str(body.get("userAgent", "*")),
            )
        except (TypeError, ValueError) as exc:
            raise errors.bad_request(f"invalid fault: {exc}") from exc
        if not 0.0 <= rule.fraction <= 1.0 or rule.count < 0 or rule.latency < 0:
            raise errors.bad_request("fraction must be in [0, 1]; count and latency >= 0")
        if rule.code is None and rule.latency == 0:
            raise errors.bad_request("a fault needs a code, a latency or both")
        return rule

    def to_json(self) -> dict[str, Any]:
        """The rule as the admin API shows it."""
        return _admin_json(self)

    def matches(self, verb: str, resource: str, user_agent: str) -> bool:
        """Whether a request is subject to this rule."""
        return (
            self.verb in ("*", verb)
            and self.resource in ("*", resource)
            and (self.user_agent == "*" or user_agent.startswith(self.user_agent))
        )

    def error(self) -> ApiError | None:
        """The error to answer, if the rule has a code."""
        if self.code == 429:
            return errors.too_many_requests(self.retry_after)
        if self.code == 500:
            return errors.internal_error("injected fault")
        if self.code == 503:
            return errors.service_unavailable()
        if self.code == 409:
            return ApiError(
                409,
                "Conflict",
                "Operation cannot be fulfilled: injected conflict; please apply your changes "
                "to the latest version and try again",
                {},
            )
        return None


@dataclass
class Faults:
    """The active fault rules and the refusal window."""

    rules: list[FaultRule] = field(default_factory=list)
    refuse_until: float = 0.0
    rng: random.Random = field(default_factory=random.Random)

    def check(self, verb: str, resource: str, user_agent: str) -> tuple[float, ApiError | None]:
        """(latency to add, error to answer) for a request; spends rule counts."""
        latency = 0.0
        for rule in list(self.rules):
            if not rule.matches(verb, resource, user_agent):
                continue
            if rule.fraction < 1.0 and self.rng.random() >= rule.fraction:
                continue
            rule.hits += 1
            if rule.count and rule.hits >= rule.count:
                self.rules.remove(rule)
            latency = max(latency, rule.latency)
            err = rule.error()
            if err is not None:
                return latency, err
        return latency, None

    def refusing(self) -> bool:
        """True while connections are refused."""
        return time.monotonic() < self.refuse_until

    def clear(self) -> None:
        """Remove every rule and end any refusal window."""
        self.rules.clear()
        self.refuse_until = 0.0


@dataclass
class Stats:
    """Request counts by verb, resource, user agent and status code."""

    counts: Counter[tuple[str, str, str, int]] = field(default_factory=Counter)

    def record(self, verb: str, resource: str, user_agent: str, code: int) -> None:
        """Count one answered request."""
        self.counts[(verb, resource, user_agent, code)] += 1

    def reset(self) -> None:
        """Forget every count."""
        self.counts.clear()

    def to_json(self) -> dict[str, Any]:
        """Totals plus one row per (verb, resource, userAgent, code)."""
        by_verb: Counter[str] = Counter()
        by_code: Counter[str] = Counter()
        rows = []
        for (verb, resource, agent, code), n in sorted(self.counts.items()):
            by_verb[verb] += n
            by_code[str(code)] += n
            rows.append(
                {"verb": verb, "resource": resource, "userAgent": agent, "code": code, "count": n}
            )
        return {
            "total": sum(self.counts.values()),
            "byVerb": dict(by_verb),
            "byCode": dict(by_code),
            "requests": rows,
        }


#: Requests the journal keeps (the oldest are forgotten first).
JOURNAL_SIZE = 100_000


@dataclass(frozen=True)
class JournalEntry:
    """One answered API request: when it arrived, what it was, who sent it, its code.

    ``at`` is ``time.monotonic()`` at arrival, so entries of several kubesims in
    one process can be ordered against each other and against the test's clock.
    ``user`` is the authenticated user ("" when the credentials were refused or
    absent); telling two processes with the same User-Agent apart needs
    different tokens. ``dry_run`` is true for a write sent with ``dryRun=All``
    (query parameter or DeleteOptions), which changed nothing.
    """

    at: float
    verb: str
    resource: str
    user: str
    user_agent: str
    code: int
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        """The entry as the admin API shows it."""
        return _admin_json(self)


@dataclass
class Journal:
    """The most recent requests in arrival order (bounded by ``JOURNAL_SIZE``).

    Stats only count; tests that must prove *who* did *what* *when* (a standby
    agent that writes before it holds the Lease) read the journal.
    """

    entries: deque[JournalEntry] = field(default_factory=lambda: deque(maxlen=JOURNAL_SIZE))

    def record(
        self,
        at: float,
        verb: str,
        resource: str,
        user: str,
        user_agent: str,
        code: int,
        *,
        dry_run: bool = False,
    ) -> None:
        """Remember one answered request."""
        self.entries.append(JournalEntry(at, verb, resource, user, user_agent, code, dry_run))

    def select(
        self, *, user: str | None = None, verbs: tuple[str, ...] | None = None
    ) -> list[JournalEntry]:
        """The entries of ``user`` (any when None) with one of ``verbs`` (any when None)."""
        return [
            e
            for e in self.entries
            if (user is None or e.user == user) and (verbs is None or e.verb in verbs)
        ]

    def reset(self) -> None:
        """Forget every entry."""
        self.entries.clear()
