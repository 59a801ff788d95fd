"""Poll-mode reads of applied objects, coalesced per resource type and namespace.

OCM's status controller GETs every applied object on every status sync, so
an idle agent with N objects sends about N / ``--status-sync-interval`` GETs
a second forever (2,500 objects at 10 s: 250/s, more than its QPS budget).
Here a status sync that needs one of many objects of the same (resource,
namespace) reads them all with one paginated LIST, and the following syncs
are served from that list for a while. docs/agent.md ("Poll-mode reads")
gives the rules: when a LIST pays, how fresh a served object is, what the
apply loop's own reads add, when lists stop (refused or wasteful), and when
``metadata.managedFields`` are kept. Watch-mode objects never come here.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import structlog
from prometheus_client import Counter

from ocmkit.kube import Forbidden, KubeClient, KubeError, NotFound, Resource
from ocmkit.runtime import Object, strip_managed_fields
from workagent.controllers.ownership import is_applied_work_reference

log = structlog.get_logger(__name__)

#: Objects of one (resource, namespace) the agent must read before a LIST pays.
LIST_THRESHOLD = 8
#: Page size of a coalesced LIST: 12,500 objects (2,500 works of 5) in 3 requests.
LIST_PAGE_SIZE = 5000
#: A list serves reads for this fraction of the status-sync interval.
MAX_AGE_FRACTION = 0.5
#: An object not asked for within this many intervals of reading its (resource, namespace)
#: no longer counts as read (a pause of all those reads counts as one interval at most,
#: and the time its reads waited for its own LISTs not at all).
DEMAND_INTERVALS = 2.0
#: A list returning more than this many objects per object read is wasteful.
WASTE_FACTOR = 4
#: After a refused (403) or wasteful list: GETs for this many intervals (at least a
#: minute). Any other failure (a timeout, a 5xx) costs GETs for one interval.
BACKOFF_INTERVALS = 30.0
MIN_BACKOFF_SECONDS = 60.0

LISTS = Counter(
    "polled_reads_lists",
    "Coalesced LISTs sent for Poll-mode status syncs, by outcome.",
    ["outcome"],
)
SERVED = Counter(
    "polled_reads_served_from_list",
    "Poll-mode reads answered from a coalesced LIST instead of a GET.",
)

#: (group, version, plural, namespace)
BucketKey = tuple[str, str, str, str]


def _useful(items: list[Object], demand: dict[str, float]) -> int:
    """How many listed objects the agent reads or will read: those asked for lately
    and those some work applied (an AppliedManifestWork owns them).

    The works' own objects count even while nobody reads them, as when many
    works are being deleted (their status syncs stop; their deletion reads
    them one by one from the list).
    """
    return sum(
        1
        for obj in items
        if str((obj.get("metadata") or {}).get("name") or "") in demand
        or any(
            is_applied_work_reference(ref)
            for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
        )
    )


def _rv(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class _Listed:
    """The objects of one list, each kept as JSON text and decoded when read.

    A list serves status syncs for half an interval and is then kept only for
    :meth:`PolledReads.peek`; as text it costs about a third of the decoded
    objects' memory. Every read gets a fresh object.
    """

    def __init__(self, items: list[Object], *, managed: bool) -> None:
        self._objects: dict[str, tuple[str, bytes]] = {}
        for item in items:
            obj = item if managed else strip_managed_fields(item)
            name = str((obj.get("metadata") or {}).get("name") or "")
            self._objects[name] = (_rv(obj), json.dumps(obj, separators=(",", ":")).encode())

    def __len__(self) -> int:
        return len(self._objects)

    def get(self, name: str) -> Object | None:
        """Object ``name`` as listed (None: not in the list)."""
        entry = self._objects.get(name)
        return None if entry is None else cast(Object, json.loads(entry[1]))

    def rv(self, name: str) -> str | None:
        """The listed resourceVersion of ``name`` (None: not in the list)."""
        entry = self._objects.get(name)
        return None if entry is None else entry[0]


@dataclass
class _Bucket:
    """What is known of the objects of one (resource, namespace)."""

    #: when the first read came: demand needs a demand window to be complete
    since: float = 0.0
    #: the reads' clock: real time, but a pause longer than an interval counts as one,
    #: and the time spent listing not at all
    read_time: float = 0.0
    #: when the last read came (real time)
    last_read: float = 0.0
    #: seconds the finished lists took, and that total as of the last read
    list_seconds: float = 0.0
    list_seconds_at_read: float = 0.0
    #: when the list in flight was sent
    inflight_since: float = 0.0
    #: name -> the read time a status sync last asked for it
    demand: dict[str, float] = field(default_factory=dict)
    #: name -> the read time a status sync last asked for it with its managedFields
    demand_managed: dict[str, float] = field(default_factory=dict)
    pruned_at: float = 0.0
    #: the last list (None: no usable list)
    listed: _Listed | None = None
    #: when the last list was sent (its objects are at least this fresh)
    listed_at: float = 0.0
    #: whether the objects of the last list kept their managedFields
    listed_managed: bool = False
    #: name -> (when, object) the apply loop got from the server
    applied: dict[str, tuple[float, Object]] = field(default_factory=dict)
    #: a list being sent; readers share it
    inflight: asyncio.Task[_Listed | None] | None = None
    #: no lists before this time (failed or wasteful)
    lists_from: float = 0.0

    def advance(self, now: float, interval: float) -> float:
        """Move the read time to a read at ``now``; the new read time.

        When every status sync comes late (a stalled event loop, syncs queued
        behind the QPS budget), the names read before the pause are still read:
        counting the pause in full would forget them while the late round comes
        in one sync at a time, and turn it into one GET per object. Likewise
        when the server is slow: a LIST that takes longer than its max age is
        stale when it comes, each read of a sync then waits for a new one, and
        the syncs of a round spread over many intervals.
        """
        listing = self.list_seconds + (now - self.inflight_since if self.inflight else 0.0)
        gap = now - self.last_read - (listing - self.list_seconds_at_read)
        self.read_time += min(max(gap, 0.0), interval)
        self.last_read, self.list_seconds_at_read = now, listing
        return self.read_time


def _newest(bucket: _Bucket, listed: _Listed | None, name: str) -> Object | None:
    """What the apply loop got since ``listed`` was sent, else the listed object."""
    applied = bucket.applied.get(name)
    if applied is not None and applied[0] >= bucket.listed_at:
        return applied[1]
    return listed.get(name) if listed is not None else None


#: Told of an object a new list shows changed (or gone: then its last listed version)
#: since the list before: ``(resource, namespace, object)``.
OnChanged = Callable[[Resource, str, Object], None]


class PolledReads:
    """Live reads for Poll-mode status syncs; one per agent, shared by its controllers."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[BucketKey, _Bucket] = {}
        self._listeners: list[OnChanged] = []

    def add_listener(self, listener: OnChanged) -> None:
        """Call ``listener`` for every object a list shows changed or gone since the
        previous list of its (resource, namespace).

        So a change is reported when a list first shows it, not only at the next
        status sync of its work (up to 1.9 intervals later): the status
        controller syncs the works listing the object at once.
        """
        self._listeners.append(listener)

    async def read(
        self,
        client: KubeClient,
        res: Resource,
        namespace: str,
        name: str,
        *,
        interval: float,
        managed_fields: bool = False,
    ) -> Object | None:
        """The live object (None: it does not exist), as fresh as ``interval`` allows.

        ``interval`` is the status-sync interval. Without ``managed_fields``
        the object may lack ``metadata.managedFields``. Raises the GET's
        KubeError when the object could not be read.
        """
        now = self._clock()
        bucket = self._bucket(res, namespace, now)
        at = bucket.advance(now, interval)
        bucket.demand[name] = at
        if managed_fields:
            bucket.demand_managed[name] = at
        self._prune(bucket, now, interval)
        applied = bucket.applied.get(name)
        if (
            applied is not None
            and now - applied[0] < interval * MAX_AGE_FRACTION
            and (not managed_fields or (applied[1].get("metadata") or {}).get("managedFields"))
        ):
            # As fresh as a list would be: the server answered the apply loop just now.
            return applied[1]
        listed = await self._snapshot(client, res, namespace, bucket, now, interval)
        if listed is not None and (bucket.listed_managed or not managed_fields):
            SERVED.inc()
            # Absent from a list sent after anything the apply loop created there
            # (that is in ``applied``): not found, as a GET then would have said.
            return _newest(bucket, listed, name)
        try:
            return await client.get(res, name, namespace or None)
        except NotFound:
            return None

    def fresh(self, res: Resource, namespace: str, name: str, *, interval: float) -> Object | None:
        """The object as a list or the apply loop got it less than ``interval`` ago.

        (Lists are renewed every half interval while status syncs read them, so
        a list being renewed still serves: the apply loop's drift correction,
        every few minutes, need not be fresher than the status it reports.)

        None when no such version is known (or a fresh list lacks it: a GET
        then tells). Not a read: it adds no demand. The object may lack
        ``metadata.managedFields`` and must not be modified.
        """
        bucket = self._buckets.get((res.group, res.version, res.plural, namespace))
        if bucket is None:
            return None
        now, max_age = self._clock(), interval
        applied = bucket.applied.get(name)
        if applied is not None and now - applied[0] < max_age:
            return applied[1]
        if bucket.listed is not None and now - bucket.listed_at < max_age:
            return bucket.listed.get(name)
        return None

    def peek(
        self, res: Resource, namespace: str, name: str, *, demand: bool = False
    ) -> Object | None:
        """The newest version of an object seen in a list or an apply, however old.

        None when there is none. Only for decisions that a precondition on the
        object's resourceVersion makes the API server check again (a DELETE).
        ``demand``: count the object as read, as :meth:`read` does, so that the
        reads of its (resource, namespace) keep being served by lists.
        """
        bucket = self._buckets.get((res.group, res.version, res.plural, namespace))
        if bucket is None:
            return None
        if demand:
            bucket.demand[name] = bucket.read_time
        return _newest(bucket, bucket.listed, name)

    def note_applied(self, res: Resource, namespace: str, obj: Object) -> None:
        """The apply loop got ``obj`` from the server: newer than any earlier list."""
        if not (obj.get("metadata") or {}).get("uid"):
            return  # ReadOnly's stand-in for a missing object: nothing was read
        now = self._clock()
        bucket = self._bucket(res, namespace, now)
        name = str((obj.get("metadata") or {}).get("name") or "")
        if bucket.listed is not None and bucket.listed.rv(name) == _rv(obj):
            return  # the list has this very version
        if not bucket.demand_managed:
            # Kept without managedFields (a reader of them reads a list or GETs);
            # a shallow copy: the apply loop still holds the object.
            meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
            obj = {**obj, "metadata": meta}
        bucket.applied[name] = (now, obj)

    # -- internals ------------------------------------------------------------------------
    def _bucket(self, res: Resource, namespace: str, now: float) -> _Bucket:
        """The bucket of (``res``, ``namespace``), made now if there is none."""
        key = (res.group, res.version, res.plural, namespace)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(since=now, read_time=now, last_read=now)
        return bucket

    def _tell_changes(
        self,
        res: Resource,
        namespace: str,
        bucket: _Bucket,
        previous: _Listed,
        listed: _Listed,
    ) -> None:
        """Tell the listeners of the objects some status sync reads that changed."""
        for name in bucket.demand:
            before, now = previous.rv(name), listed.rv(name)
            if before is None or now == before:
                continue  # new to the lists (the apply loop reports it) or unchanged
            changed = listed.get(name) if now is not None else previous.get(name)
            if changed is None:
                continue
            for listener in self._listeners:
                try:
                    listener(res, namespace, changed)
                except Exception:  # a listener's bug must not cost the list
                    log.exception("polled reads listener failed")

    def _prune(self, bucket: _Bucket, now: float, interval: float) -> None:
        """Forget demand older than the window (in read time), at most once per max age
        (cheap per read)."""
        max_age = interval * MAX_AGE_FRACTION
        if now - bucket.pruned_at < max_age:
            return
        bucket.pruned_at = now
        horizon = bucket.read_time - interval * DEMAND_INTERVALS
        for demand in (bucket.demand, bucket.demand_managed):
            for name in [n for n, at in demand.items() if at < horizon]:
                del demand[name]
        # An applied object older than a list may be is served by lists (or GETs) only.
        if bucket.listed is None and bucket.inflight is None:
            for name in [n for n, (at, _) in bucket.applied.items() if now - at >= max_age]:
                del bucket.applied[name]

    async def _snapshot(
        self,
        client: KubeClient,
        res: Resource,
        namespace: str,
        bucket: _Bucket,
        now: float,
        interval: float,
    ) -> _Listed | None:
        """A list of the bucket at most max age old, listing it if due; None: use GETs."""
        max_age = interval * MAX_AGE_FRACTION
        if bucket.listed is not None and now - bucket.listed_at < max_age:
            return bucket.listed
        # Expired: never served again, only peeked at until a new list replaces it.
        if bucket.inflight is None:
            if len(bucket.demand) < LIST_THRESHOLD or now < bucket.lists_from:
                bucket.listed = None  # no list will replace it: its memory goes
                return None
            bucket.inflight_since = now
            bucket.inflight = asyncio.ensure_future(
                self._list(client, res, namespace, bucket, interval)
            )
        # Shielded: a cancelled reader must not cancel the list the others wait for.
        return await asyncio.shield(bucket.inflight)

    async def _list(
        self, client: KubeClient, res: Resource, namespace: str, bucket: _Bucket, interval: float
    ) -> _Listed | None:
        started = self._clock()
        backoff = max(MIN_BACKOFF_SECONDS, interval * BACKOFF_INTERVALS)
        try:
            answer = await client.list(res, namespace or None, page_size=LIST_PAGE_SIZE)
        except (TimeoutError, KubeError) as err:
            if not isinstance(err, Forbidden):
                backoff = interval  # likely transient: try again next period
            bucket.lists_from = started + backoff
            bucket.listed = None
            LISTS.labels("forbidden" if isinstance(err, Forbidden) else "failed").inc()
            log.info(
                "cannot list for status syncs, reading objects one by one",
                resource=str(res),
                namespace=namespace,
                error=str(err),
                for_seconds=backoff,
            )
            return None
        finally:
            bucket.inflight = None
            bucket.list_seconds += self._clock() - bucket.inflight_since
        items = answer.get("items") or []
        # While works are still being applied, what they will read is not known yet.
        settled = started - bucket.since >= interval * DEMAND_INTERVALS
        if settled and len(items) > WASTE_FACTOR * _useful(items, bucket.demand):
            # Mostly objects of others: GETs cost the server less.
            bucket.lists_from = started + backoff
            bucket.listed = None
            LISTS.labels("wasteful").inc()
            log.info(
                "listing for status syncs returns mostly other objects, reading one by one",
                resource=str(res),
                namespace=namespace,
                listed=len(items),
                read=len(bucket.demand),
                for_seconds=backoff,
            )
            return None
        LISTS.labels("served").inc()
        # Kept when any reader asked for them by now; one asking later GETs until the next list.
        managed = bool(bucket.demand_managed)
        listed = _Listed(items, managed=managed)
        previous = bucket.listed
        bucket.listed, bucket.listed_at, bucket.listed_managed = listed, started, managed
        if previous is not None and self._listeners:
            self._tell_changes(res, namespace, bucket, previous, listed)
        # What the apply loop got before this list was sent is in the list, or older.
        bucket.applied = {n: e for n, e in bucket.applied.items() if e[0] >= started}
        return listed
