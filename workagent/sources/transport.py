"""What a CloudEvents driver (grpc, mqtt) provides to the agent's work source."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from ocmkit.cloudevents import CloudEvent
from ocmkit.kube import Unreachable
from ocmkit.runtime.manager import file_fingerprint

#: What a publish says while the driver is not connected (OCM's wording).
NOT_READY = "the cloudevents client is not ready"


class SubscriptionFailed(Exception):
    """The connection or the subscription failed (the source reconnects with backoff)."""


#: Why a connection ends when its client certificate files change.
CERTIFICATE_CHANGED = "the client certificate changed"


async def certificate_changed(paths: tuple[str, ...], seen: str, every: float) -> None:
    """Return once the files' fingerprint is not ``seen``, checking ``every`` seconds.

    OCM's drivers re-read a rotated client certificate by reconnecting (5 min checks).
    """
    while True:
        await asyncio.sleep(every)  # sleep-ok: how often the files are checked
        if file_fingerprint(*paths) != seen:
            return


class NotReady(Unreachable):
    """A publish while the driver is not subscribed: the controller retries later."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(NOT_READY + (f": {detail}" if detail else ""))


class Transport(Protocol):
    """One CloudEvents connection of the agent.

    ``subscription()`` connects and subscribes for the agent's cluster; entered,
    it yields the decoded events the source sends (heartbeats already
    dropped) and raises SubscriptionFailed when the connection fails. Only
    while it is entered can :meth:`publish` send.
    """

    name: str
    #: The string the hub hash is derived from (grpc ``url``, mqtt ``brokerHost``).
    endpoint: str

    def subscription(self) -> AbstractAsyncContextManager[AsyncIterator[CloudEvent]]:
        """Connect and subscribe; the events until the connection ends."""
        ...

    async def publish(self, event: CloudEvent) -> None:
        """Send one event; raises a KubeError subtype (NotReady when disconnected)."""
