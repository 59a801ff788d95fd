"""Maps manifest kinds to API resources from the server's discovery documents.

The agent applies manifests whose kinds are only known at run time, and a
CRD applied by one manifest must be usable by the next one in the same
work. So discovery is cached, and a lookup that misses triggers one new
discovery (shared by every concurrent miss, started after the miss, and at
most one per ``min_refresh_interval``) before giving up with NoKindMatch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ocmkit.kube.client import KubeClient
from ocmkit.kube.errors import KubeError, NoKindMatch
from ocmkit.kube.resource import Resource, split_api_version

log = logging.getLogger("ocmkit.kube.restmapper")

# Group-version documents fetched at once: enough to be quick, few enough not
# to swallow the client's whole burst when a cluster serves dozens of groups.
DISCOVERY_CONCURRENCY = 8

_Key = tuple[str, str, str]


class _Tables:
    """One discovery result: lookups by kind and by plural, per group-version."""

    def __init__(self) -> None:
        self.by_kind: dict[_Key, Resource] = {}
        self.by_plural: dict[_Key, Resource] = {}

    def add_document(self, group: str, version: str, doc: dict[str, Any]) -> None:
        """Add the resources of one APIResourceList.

        As client-go's discovery mapper (which OCM's agent uses), the lower-case
        kind maps too, and so do ``<Kind>List`` (plural guessed) and ``List``
        (``lists``, cluster-scoped): the server then refuses what is sent there,
        and a manifest so named fails to apply without stopping the clean-up of
        the work's other objects, as on OCM's agent.
        """
        for entry in doc.get("resources") or []:
            name = entry.get("name")
            kind = entry.get("kind")
            # Subresources ("deployments/scale") are not resources of their own.
            if not isinstance(name, str) or not isinstance(kind, str) or "/" in name:
                continue
            namespaced = bool(entry.get("namespaced"))
            res = Resource(group, version, name, kind, namespaced)
            self.by_kind.setdefault((group, version, kind), res)
            self.by_plural.setdefault((group, version, name), res)
            lower = Resource(group, version, name, kind.lower(), namespaced)
            self._guess(lower)
            self._guess(
                Resource(group, version, f"{kind}List".lower() + "s", f"{kind}List", namespaced)
            )
        self._guess(Resource(group, version, "lists", "List", False))

    def _guess(self, res: Resource) -> None:
        """Map a kind discovery does not list; a listed kind of that name wins."""
        self.by_kind.setdefault((res.group, res.version, res.kind), res)

    def copy_group_version(self, other: _Tables, group: str, version: str) -> None:
        """Keep another result's entries for a group-version that failed this time."""
        for mine, theirs in ((self.by_kind, other.by_kind), (self.by_plural, other.by_plural)):
            for key, res in theirs.items():
                if key[:2] == (group, version):
                    mine.setdefault(key, res)


class RESTMapper:
    """Resolves (apiVersion, kind) and (group, version, plural) to a Resource.

    ``clock`` and ``sleep`` are injectable so tests can check the refresh rate
    limit without waiting.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        min_refresh_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._client = client
        self._interval = min_refresh_interval
        self._clock = clock
        self._sleep = sleep
        self._tables = _Tables()
        self._loaded = False
        self._last_start = float("-inf")
        # A discovery that has been asked for but has not started yet: every miss
        # until it starts joins it, since it is guaranteed to see their kinds.
        self._scheduled: asyncio.Task[None] | None = None
        # The discovery currently talking to the server.
        self._running: asyncio.Task[None] | None = None
        # Discoveries started so far, and the number of the last one that succeeded.
        self.discoveries = 0
        self._completed = 0

    async def resource_for(
        self, api_version: str, kind: str, *, rediscover: bool = True
    ) -> Resource:
        """The resource serving ``kind`` in ``api_version`` (e.g. ``"apps/v1"``, ``"Deployment"``).

        Raises NoKindMatch when discovery, refreshed once, does not know it.
        With ``rediscover=False`` a miss in the cached discovery raises at once
        (for callers that only want what is already known, at no cost).
        """
        try:
            group, version = split_api_version(api_version)
        except ValueError as exc:
            raise NoKindMatch(f"no matches for kind {kind!r}: {exc}") from exc
        return await self._lookup(
            lambda t: t.by_kind.get((group, version, kind)),
            f'no matches for kind "{kind}" in version "{api_version}"',
            rediscover=rediscover,
        )

    async def resource_for_plural(self, group: str, version: str, plural: str) -> Resource:
        """The resource ``plural`` in ``group``/``version``; NoKindMatch if it is not served."""
        gv = f"{group}/{version}" if group else version
        return await self._lookup(
            lambda t: t.by_plural.get((group, version, plural)),
            f'the server does not serve resource "{plural}" in version "{gv}"',
        )

    def invalidate(self) -> None:
        """Forget that discovery is current: the next lookup rediscovers first."""
        self._loaded = False

    async def _lookup(
        self,
        find: Callable[[_Tables], Resource | None],
        missing: str,
        *,
        rediscover: bool = True,
    ) -> Resource:
        entry = self.discoveries
        if not self._loaded:
            await self._discover(fresh=False)
        found = find(self._tables)
        if found is not None:
            return found
        # Unknown: rediscover unless a discovery that began after this call already ran.
        if rediscover and self._completed <= entry:
            await self._discover(fresh=True)
            found = find(self._tables)
            if found is not None:
                return found
        raise NoKindMatch(missing)

    async def _discover(self, *, fresh: bool) -> None:
        """Wait for a discovery; ``fresh`` requires one that starts after now."""
        if not fresh and self._running is not None and not self._running.done():
            await asyncio.shield(self._running)
            return
        if self._scheduled is None or self._scheduled.done():
            self._scheduled = asyncio.get_running_loop().create_task(self._scheduled_run())
            self._scheduled.add_done_callback(_consume_exception)
        await asyncio.shield(self._scheduled)

    async def _scheduled_run(self) -> None:
        delay = self._last_start + self._interval - self._clock()
        if delay > 0:
            await self._sleep(delay)
        previous = self._running
        if previous is not None and not previous.done():
            # Never let an older, slower discovery overwrite a newer result.
            await asyncio.wait([previous])
        me = asyncio.current_task()
        # From here on, new misses schedule another run: this one may have
        # fetched their group-version already.
        if self._scheduled is me:
            self._scheduled = None
        self._running = me
        self._last_start = self._clock()
        self.discoveries += 1
        number = self.discoveries
        try:
            await self._run()
            self._completed = number
        finally:
            if self._running is me:
                self._running = None

    async def _run(self) -> None:
        client = self._client
        core = await client.get_raw("/api/v1")
        groups = await client.get_raw("/apis")
        wanted: list[tuple[str, str]] = []
        for group in groups.get("groups") or []:
            for gv in group.get("versions") or []:
                g, _, v = str(gv.get("groupVersion", "")).partition("/")
                if g and v:
                    wanted.append((g, v))
        limit = asyncio.Semaphore(DISCOVERY_CONCURRENCY)

        async def fetch(group: str, version: str) -> dict[str, Any] | KubeError:
            async with limit:
                try:
                    return await client.get_raw(f"/apis/{group}/{version}")
                except KubeError as exc:
                    return exc

        answers = await asyncio.gather(*(fetch(g, v) for g, v in wanted))
        tables = _Tables()
        tables.add_document("", "v1", core)
        for (group, version), answer in zip(wanted, answers, strict=True):
            if isinstance(answer, KubeError):
                # As client-go: one broken aggregated API must not hide every other
                # group. Keep what was known of it before.
                log.warning(
                    "discovery of %s/%s failed: %s; keeping its previous resources",
                    group,
                    version,
                    answer,
                )
                tables.copy_group_version(self._tables, group, version)
            else:
                tables.add_document(group, version, answer)
        self._tables = tables
        self._loaded = True


def _consume_exception(task: asyncio.Task[None]) -> None:
    # Every waiter sees the error through its shield; this only keeps asyncio from
    # reporting "exception never retrieved" when all waiters were cancelled.
    if not task.cancelled():
        task.exception()
