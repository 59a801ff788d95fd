"""The CloudEvents work source: spec events into the local store, status events out.

One task keeps the driver subscribed (reconnecting with backoff; on each new
subscription a resync request, asked again while the source refuses it); a
second confirms to the source the deletions the agent finished.
docs/cloudevents.md describes the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from ocmkit.cloudevents import CloudEvent, EventDecodeError, EventType
from ocmkit.cloudevents.event import (
    CONDITION_DELETED,
    EXT_CLUSTER_NAME,
    EXT_RESOURCE_ID,
    MANIFEST_BUNDLES,
    MANIFESTS_DELETED_MESSAGE,
    REASON_MANIFESTS_DELETED,
    RESYNC_REQUEST,
    RESYNC_RESPONSE,
    SPEC,
    STATUS,
    format_time,
    utcnow,
)
from ocmkit.cloudevents.works import (
    SequenceIds,
    SpecRejected,
    spec_resync_request,
    status_event,
    status_hash,
    status_hashes,
    work_from_spec_event,
)
from ocmkit.kube import KubeError
from ocmkit.runtime.backoff import Backoff
from workagent.sources.store import LocalWorkStore, Object
from workagent.sources.transport import NotReady, SubscriptionFailed, Transport

log = structlog.get_logger(__name__)

#: How often finalized works are confirmed again after a failed publish.
DELETION_SCAN_SECONDS = 2.0
#: Failures this far apart start the reconnect backoff from the beginning.
BACKOFF_RESET_SECONDS = 600.0
#: The longest wait between two spec resync requests the source refused.
RESYNC_RETRY_MAX_SECONDS = 30.0
#: After the first resync request is accepted, the answer is taken as complete once
#: no spec event came for this long (sources answer at once), or this long at most.
RESYNC_QUIET_SECONDS = 1.0
RESYNC_SETTLE_MAX_SECONDS = 10.0


class CloudEventsWorkSource:
    """The agent's side of a CloudEvents connection, feeding one LocalWorkStore.

    Its ``start``/``stop`` and health checks are run by the manager (only
    while this replica leads), like an informer's.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        cluster: str,
        client_id: str,
        reconnect_initial: float = 5.0,
    ) -> None:
        self.transport = transport
        self.cluster = cluster
        self.client_id = client_id
        self.name = f"cloudevents-{transport.name}"
        self._deletions = asyncio.Event()
        self.store = LocalWorkStore(cluster, self._publish_status)
        self.store.on_finalized(self._deletions.set)
        self._backoff = Backoff(reconnect_initial, 60.0, factor=5.0)  # with jitter 1-2 min at most
        self._sequence = SequenceIds()
        #: Whether the subscription is up (publishes can go out).
        self.subscribed = False
        #: How many times the source subscribed (1 + reconnects).
        self.subscriptions = 0
        #: How many spec resync requests the source refused (each asked again).
        self.resync_refusals = 0
        self._last_error = "not connected yet"
        self._resync_error = "waiting for the answer"
        self._last_failure = float("-inf")
        self._last_spec_event = float("-inf")
        self._tasks: list[asyncio.Task[None]] = []
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._log = log.bind(driver=transport.name, cluster=cluster)

    # -- lifecycle (the manager's) ---------------------------------------------------
    async def start(self) -> None:
        """Connect, subscribe and confirm deletions in the background."""
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._run(), name=f"{self.name}-subscription"),
            asyncio.create_task(self._confirm_deletions(), name=f"{self.name}-deletions"),
        ]

    async def stop(self) -> None:
        """Stop receiving and close the connection."""
        tasks = [*self._tasks, *self._side_tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.subscribed = False
        await self.store.close()

    def readiness_failure(self) -> str | None:
        """Why the agent cannot work now: not subscribed, or its first spec resync not
        answered yet (as an informer before its first list; None once both hold)."""
        if not self.subscribed:
            return f"not subscribed: {self._last_error}"
        if not self.store.primed:
            return f"first spec resync not answered: {self._resync_error}"
        return None

    def liveness_failure(self) -> str | None:
        """A background task that died is a bug: report it."""
        for task in self._tasks:
            if task.done() and not task.cancelled():
                return f"{task.get_name()} exited unexpectedly"
        return None

    # -- the subscription loop --------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                async with self.transport.subscription() as events:
                    self.subscribed = True
                    self.subscriptions += 1
                    self._log.info(
                        "subscribed",
                        endpoint=self.transport.endpoint,
                        works=len(self.store.works()),
                    )
                    resync = asyncio.create_task(
                        self._resync_until_accepted(), name=f"{self.name}-resync"
                    )
                    try:
                        async for event in events:
                            await self._handle(event)
                    finally:
                        resync.cancel()
                        await asyncio.gather(resync, return_exceptions=True)
                raise SubscriptionFailed("the subscription ended")
            except asyncio.CancelledError:
                raise
            except (SubscriptionFailed, KubeError) as err:
                self._last_error = str(err)
            except Exception as err:
                self._last_error = repr(err)
                self._log.exception("cloudevents subscription failed unexpectedly")
            self.subscribed = False
            now = loop.time()
            if now - self._last_failure > BACKOFF_RESET_SECONDS:
                self._backoff.reset()
            self._last_failure = now
            delay = self._backoff.next()
            self._log.warning(
                "cloudevents connection lost, reconnecting",
                error=self._last_error,
                retry_in_seconds=round(delay, 2),
            )
            await asyncio.sleep(delay)

    async def _resync_until_accepted(self) -> None:
        """Ask for a spec resync until the source takes the request.

        A refusal (the hub cannot list our works yet, a token being rotated) is
        asked again on the open stream with backoff: reconnecting would not help,
        and events keep arriving meanwhile. A broken stream ends the subscription,
        which cancels this.
        """
        backoff = Backoff(self._backoff.initial, RESYNC_RETRY_MAX_SECONDS)
        while True:
            try:
                await self._request_resync()
                if not self.store.primed:
                    await self._settle_first_resync()
                    self.store.prime()
                    self._log.info("first resync answered", works=len(self.store.works()))
                return
            except (KubeError, NotReady) as err:
                self.resync_refusals += 1
                self._resync_error = f"refused: {err}"
                delay = backoff.next()
                self._log.warning(
                    "spec resync request refused, asking again",
                    error=str(err),
                    retry_in_seconds=round(delay, 2),
                )
                await asyncio.sleep(delay)  # sleep-ok: backoff between refused requests

    async def _settle_first_resync(self) -> None:
        """Wait for the answer to the agent's first resync request (accepted now).

        The protocol marks no end of the answer; the sources send it at once, so
        it is taken as complete when the stream has had no spec event for
        RESYNC_QUIET_SECONDS (RESYNC_SETTLE_MAX_SECONDS at most, for a busy hub).
        """
        loop = asyncio.get_running_loop()
        accepted = loop.time()
        while True:
            now = loop.time()
            quiet = now - max(accepted, self._last_spec_event)
            if quiet >= RESYNC_QUIET_SECONDS or now - accepted >= RESYNC_SETTLE_MAX_SECONDS:
                return
            await asyncio.sleep(RESYNC_QUIET_SECONDS - quiet)  # sleep-ok: until quiet

    async def _request_resync(self) -> None:
        """Ask the source for every work that changed while we were not listening."""
        versions = self.store.generations()
        await self.transport.publish(spec_resync_request(self.client_id, self.cluster, versions))
        self._log.info("requested a spec resync", works=len(versions))

    async def _handle(self, event: CloudEvent) -> None:
        try:
            kind = EventType.parse(event.type)
            cluster = event.ext_str(EXT_CLUSTER_NAME, "")
        except EventDecodeError as err:
            # A bad event is dropped; it must not cost the connection.
            self._log.warning("dropping an event", event_id=event.id, error=str(err))
            return
        if kind.data_type != MANIFEST_BUNDLES:
            return
        if kind.subresource == SPEC and kind.action != RESYNC_REQUEST:
            if not cluster:
                # Another cluster's events are skipped quietly; one for no cluster is a
                # source's bug, worth a line.
                self._log.warning(
                    "dropping a spec event",
                    event_id=event.id,
                    type=event.type,
                    error=f"missing extension {EXT_CLUSTER_NAME!r}",
                )
                return
            if cluster != self.cluster:
                return
            self._apply_spec(event)
        elif kind.subresource == STATUS and kind.action == RESYNC_REQUEST:
            if cluster not in ("", self.cluster):
                return
            task = asyncio.create_task(self._answer_status_resync(event))
            self._side_tasks.add(task)
            task.add_done_callback(self._side_tasks.discard)

    def _apply_spec(self, event: CloudEvent) -> None:
        self._last_spec_event = asyncio.get_running_loop().time()
        try:
            work = work_from_spec_event(event, self.cluster)
        except (EventDecodeError, SpecRejected) as err:
            self._log.warning(
                "dropping a spec event",
                event_id=event.id,
                type=event.type,
                resource_id=event.extensions.get(EXT_RESOURCE_ID),
                error=str(err),
            )
            return
        outcome = self.store.apply_spec(work)
        meta = work["metadata"]
        self._log.debug(
            "spec event",
            type=event.type,
            work=meta.get("name"),
            generation=meta.get("generation"),
            outcome=outcome,
        )

    async def _answer_status_resync(self, event: CloudEvent) -> None:
        try:
            wanted = status_hashes(event)
        except EventDecodeError as err:
            self._log.warning("dropping a status resync request", error=str(err))
            return
        for work in self.store.works():
            uid = str(work["metadata"].get("uid"))
            if wanted and (uid not in wanted or wanted[uid] == status_hash(work.get("status"))):
                continue
            try:
                await self._publish(work, RESYNC_RESPONSE)
            except (KubeError, EventDecodeError) as err:
                self._log.warning(
                    "status resync answer failed", work=work["metadata"].get("name"), error=str(err)
                )

    # -- publishing ----------------------------------------------------------------
    async def _publish(self, work: Object, action: str) -> None:
        if not self.subscribed:
            raise NotReady()
        event = status_event(
            work,
            client_id=self.client_id,
            cluster=self.cluster,
            sequence_id=self._sequence.next(),
            action=action,
        )
        await self.transport.publish(event)

    async def _publish_status(self, work: Object) -> None:
        """The store's status patches: one ``status.update_request`` each."""
        try:
            await self._publish(work, "update_request")
        except EventDecodeError as err:
            # Not from a source (no original-source label): nothing can carry it.
            raise NotReady(str(err)) from None

    async def _confirm_deletions(self) -> None:
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can lose a cancel.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DELETION_SCAN_SECONDS):
                    await self._deletions.wait()
            self._deletions.clear()
            for work in self.store.finalized():
                await self._confirm_deleted(work)

    async def _confirm_deleted(self, work: Object) -> None:
        meta = work["metadata"]
        status: dict[str, Any] = dict(work.get("status") or {})
        conditions = [
            c for c in status.get("conditions") or [] if c.get("type") != CONDITION_DELETED
        ]
        conditions.append(
            {  # no observedGeneration: sdk-go sets none on this condition
                "type": CONDITION_DELETED,
                "status": "True",
                "lastTransitionTime": format_time(utcnow()),
                "reason": REASON_MANIFESTS_DELETED,
                "message": MANIFESTS_DELETED_MESSAGE.format(cluster=self.cluster),
            }
        )
        status["conditions"] = conditions
        work["status"] = status
        try:
            await self._publish(work, "update_request")
        except (KubeError, EventDecodeError) as err:
            self._log.info("deletion not confirmed yet", work=meta.get("name"), error=str(err))
            return
        self.store.remove_uid(str(meta.get("uid")))
        self._log.info("confirmed the deletion to the source", work=meta.get("name"))
