"""The requests a cluster answered, by user agent, verb, resource and code, on both targets.

kubesim counts them itself (``state.stats``); a real API server writes one
audit event per request (:meth:`tests.support.controlplane.ControlPlane.audit_events`).
:class:`RequestRecord` reads either the same way: :meth:`~RequestRecord.mark`
a point, act, then :meth:`~RequestRecord.count` what arrived since. What a
client has seen answered is already counted: kubesim records a request in its
middleware, before the answer leaves; the apiserver logs it just after the
answer went out, so reading its log first waits for a request of our own to
be logged (:meth:`~tests.support.controlplane.ControlPlane.settle_audit`).

Resources are named as kubesim's stats name them: the plural, with
``/<subresource>`` for a subresource (``manifestworks/status``). User agents
are reduced to their program part (``workagent/0.1.0 (...)`` -> ``workagent``),
which is also how the apiserver names field managers.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubesim.sim import KubeSim
from tests.support.controlplane import ControlPlane
from tests.support.targets import Cluster

#: The program part of the agent's User-Agents: ``work-agent`` (its spoke client)
#: and ``workagent`` (its hub client, ``workagent/<version>``).
AGENT_USER_AGENTS = ("work-agent", "workagent")
#: Verbs that change something.
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class Request:
    """One kind of answered request."""

    verb: str
    resource: str
    user_agent: str
    code: int


@dataclass(frozen=True)
class Write:
    """One write request, in arrival order, and whether it was a dry run (``dryRun=All``)."""

    verb: str
    resource: str
    user_agent: str
    dry_run: bool


def program(user_agent: str) -> str:
    """The program part of a User-Agent (what the apiserver makes a field manager of)."""
    return user_agent.split("/", 1)[0].strip()


def _from_audit(event: dict[str, Any]) -> Request | None:
    ref = event.get("objectRef") or {}
    resource = str(ref.get("resource") or "")
    if not resource:
        return None  # discovery, /version, /readyz...
    if ref.get("subresource"):
        resource = f"{resource}/{ref['subresource']}"
    code = int((event.get("responseStatus") or {}).get("code") or 0)
    return Request(str(event.get("verb", "")), resource, program(event.get("userAgent", "")), code)


class RequestRecord:
    """The requests ``cluster`` answered since the last :meth:`mark` (or since created)."""

    def __init__(self, cluster: Cluster) -> None:
        if not isinstance(cluster, KubeSim | ControlPlane):
            raise TypeError(f"no request record for {type(cluster).__name__}")
        self.cluster = cluster
        self._stats_mark: Counter[tuple[str, str, str, int]] = Counter()
        self._journal_mark = 0.0
        self._audit_mark = 0
        self.mark()

    def mark(self) -> None:
        """Count from now on."""
        if isinstance(self.cluster, KubeSim):
            self._stats_mark = Counter(self.cluster.state.stats.counts)
            self._journal_mark = time.monotonic()
        else:
            self._audit_mark = self.cluster.audit_offset()

    def requests(self) -> Counter[Request]:
        """How many requests of each kind were answered since the mark."""
        found: Counter[Request] = Counter()
        if isinstance(self.cluster, KubeSim):
            now = Counter(self.cluster.state.stats.counts)
            now.subtract(self._stats_mark)
            for (verb, resource, agent, code), n in now.items():
                if n > 0:
                    found[Request(verb, resource, agent, code)] += n
            return found
        for event in self.cluster.audit_events(self._audit_mark):
            request = _from_audit(event)
            if request is not None:
                found[request] += 1
        return found

    def count(
        self,
        verb: str,
        resource: str,
        code: int | None = None,
        *,
        user_agents: tuple[str, ...] = AGENT_USER_AGENTS,
    ) -> int:
        """``verb`` requests on ``resource`` from ``user_agents`` (answered ``code``, if given)."""
        return sum(
            n
            for r, n in self.requests().items()
            if r.verb == verb
            and r.resource == resource
            and r.user_agent in user_agents
            and (code is None or r.code == code)
        )

    def writes(self, *, user_agents: tuple[str, ...] = AGENT_USER_AGENTS) -> list[Request]:
        """The write requests from ``user_agents`` since the mark (none: an empty list)."""
        return sorted(
            (r for r in self.requests() if r.verb in WRITES and r.user_agent in user_agents),
            key=lambda r: (r.resource, r.verb, r.code),
        )

    def sent_writes(self, *, user_agents: tuple[str, ...] = AGENT_USER_AGENTS) -> list[Write]:
        """Every write from ``user_agents`` since the mark, in arrival order, with its dry-run
        flag (kubesim's request journal; the audit log's request URI on a real server)."""
        found: list[Write] = []
        if isinstance(self.cluster, KubeSim):
            for entry in self.cluster.state.journal.entries:
                agent = program(entry.user_agent)
                if entry.at >= self._journal_mark and entry.verb in WRITES and agent in user_agents:
                    found.append(Write(entry.verb, entry.resource, agent, entry.dry_run))
            return found
        for event in self.cluster.audit_events(self._audit_mark):
            request = _from_audit(event)
            if (
                request is None
                or request.verb not in WRITES
                or request.user_agent not in user_agents
            ):
                continue
            query = parse_qs(urlsplit(str(event.get("requestURI", ""))).query)
            found.append(Write(request.verb, request.resource, request.user_agent,
                               "All" in query.get("dryRun", [])))  # fmt: skip
        return found
