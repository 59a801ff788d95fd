"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go does it.

Expiry is measured on each candidate's own clock from when it last saw the
Lease change, so clocks need not agree; on a clean shutdown the leader
releases the Lease so a standby takes over at once (docs/runtime.md).
"""

from __future__ import annotations

import asyncio
import datetime
import random
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

import structlog

from ocmkit.kube import LEASES, AlreadyExists, Conflict, KubeClient, KubeError, NotFound
from ocmkit.runtime import metrics

log = structlog.get_logger(__name__)

# client-go's JitterFactor: retries wait retry_period * [1, 1.2).
JITTER_FACTOR = 1.2


def default_identity() -> str:
    """``<hostname>_<uuid>``, as library-go names lease holders."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionSettings:
    """Leader-election settings; the ``--leader-election-*`` flags map onto these fields.

    ``disabled`` is ``--disable-leader-election``: the process then leads at
    once without touching any Lease.
    """

    lease_name: str = "work-agent-lock"
    namespace: str = "open-cluster-management-agent"
    disabled: bool = False
    lease_duration: float = 137.0
    renew_deadline: float = 107.0
    retry_period: float = 26.0
    identity: str = field(default_factory=default_identity)
    release_on_cancel: bool = True

    def validate(self) -> None:
        """Raise ValueError for settings client-go would refuse."""
        if self.disabled:
            return
        if not self.lease_name or not self.namespace:
            raise ValueError("leader election needs a lease name and a namespace")
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"leader election lease duration ({self.lease_duration}s) must be greater "
                f"than the renew deadline ({self.renew_deadline}s)"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"leader election renew deadline ({self.renew_deadline}s) must be greater "
                f"than {JITTER_FACTOR} x the retry period ({self.retry_period}s)"
            )
        if self.retry_period <= 0:
            raise ValueError("leader election retry period must be > 0")


def _micro_time(moment: datetime.datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 with microseconds, UTC."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Campaigns for a Lease and keeps it while this process leads.

    States (``state``): ``initializing`` until the Lease was read once,
    ``standby`` while another holder's Lease is valid, ``leader``, ``lost``
    after a failed renewal, ``stopped`` after :meth:`stop`. ``leader`` and
    ``standby`` are both healthy for readiness.
    """

    def __init__(self, client: KubeClient | None, settings: LeaderElectionSettings) -> None:
        settings.validate()
        if client is None and not settings.disabled:
            raise ValueError("leader election needs a client unless it is disabled")
        self.client = client
        self.settings = settings
        self.name = settings.lease_name
        self._state = "initializing"
        self._leading = asyncio.Event()
        self._stopped_leading = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._lease: dict[str, Any] | None = None  # last Lease we read or wrote
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._observed_duration = settings.lease_duration
        self._holder = ""
        self._last_error: str | None = None
        self._log = log.bind(
            lease=f"{settings.namespace}/{settings.lease_name}", identity=settings.identity
        )
        self._m_status = metrics.LEADER_STATUS.labels(name=self.name)
        self._m_slowpath = metrics.LEADER_SLOWPATH.labels(name=self.name)
        self._m_status.set(0)

    # -- observation -----------------------------------------------------------------
    def is_leader(self) -> bool:
        """True while this process holds the Lease (always, when disabled)."""
        return self._state == "leader"

    @property
    def state(self) -> str:
        """``initializing``, ``standby``, ``leader``, ``lost`` or ``stopped``."""
        return self._state

    @property
    def leader_identity(self) -> str:
        """The holder last seen on the Lease ("" if none)."""
        return self._holder

    async def wait_leading(self) -> None:
        """Wait until this process leads."""
        await self._leading.wait()

    async def wait_stopped_leading(self) -> None:
        """Wait until this process, having led, stops leading (lost or released)."""
        await self._stopped_leading.wait()

    def readiness_failure(self) -> str | None:
        """None while leading or standing by; otherwise why not."""
        if self._state in ("leader", "standby"):
            return None
        if self._state == "initializing":
            if self._last_error:
                return f"cannot read Lease: {self._last_error}"
            return "waiting for the first Lease check"
        if self._state == "lost":
            return "leadership lost"
        return self._state

    def liveness_failure(self) -> str | None:
        """The election loop must not have died by accident."""
        task = self._task
        if task is not None and task.done() and not task.cancelled() and task.exception():
            return f"leader election loop failed: {task.exception()!r}"
        return None

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Start campaigning in the background (returns at once)."""
        if self._task is not None or self._state == "stopped":
            return
        if self.settings.disabled:
            self._log.info("leader election disabled, leading")
            self._become_leader()
            return
        self._task = asyncio.create_task(self._run(), name=f"leader-election-{self.name}")

    async def stop(self) -> None:
        """Stop campaigning; release the Lease if leading (and ``release_on_cancel``)."""
        if self._state == "stopped":
            return
        was_leader = self.is_leader()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if was_leader and not self.settings.disabled and self.settings.release_on_cancel:
            await self._release()
        self._state = "stopped"
        if was_leader:
            self._stop_leading("shutting down")

    # -- the election loop -----------------------------------------------------------
    async def _run(self) -> None:
        s = self.settings
        self._log.info("campaigning for the lease")
        while True:
            if await self._attempt(s.renew_deadline):
                break
            # Polling is the protocol here: the Lease can only be watched for changes,
            # not for expiry.
            await asyncio.sleep(s.retry_period * random.uniform(1.0, JITTER_FACTOR))
        self._become_leader()
        loop = asyncio.get_running_loop()
        last_renew = loop.time()
        while True:
            await asyncio.sleep(s.retry_period)
            remaining = s.renew_deadline - (loop.time() - last_renew)
            if remaining > 0 and await self._attempt(remaining):
                last_renew = loop.time()
                continue
            if loop.time() - last_renew >= s.renew_deadline:
                self._log.error(
                    "failed to renew the lease within the renew deadline, stopping leading",
                    renew_deadline_seconds=s.renew_deadline,
                    last_error=self._last_error,
                )
                self._state = "lost"
                self._stop_leading("renew deadline passed")
                return

    async def _attempt(self, timeout: float) -> bool:
        """One try to acquire or renew, bounded by ``timeout``; True if we hold the Lease."""
        try:
            async with asyncio.timeout(timeout):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            self._last_error = f"Lease request timed out after {timeout:.1f}s"
        except KubeError as err:
            self._last_error = str(err)
        self._log.warning("lease acquire/renew failed", error=self._last_error)
        return False

    async def _try_acquire_or_renew(self) -> bool:
        assert self.client is not None
        s = self.settings
        now = datetime.datetime.now(datetime.UTC)
        if self.is_leader() and self._lease is not None:
            # Fast path: renew from the Lease we wrote last, without a GET.
            try:
                self._lease = await self.client.update(
                    LEASES, self._renewed(self._lease, now), s.namespace
                )
                self._observe(self._lease)
                self._last_error = None
                return True
            except KubeError as err:
                self._m_slowpath.inc()
                self._log.info("fast lease renewal failed, re-reading the lease", error=str(err))
        try:
            lease = await self.client.get(LEASES, s.lease_name, s.namespace)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": s.lease_name, "namespace": s.namespace},
                "spec": self._record(now, acquire=now, transitions=0),
            }
            try:
                self._lease = await self.client.create(LEASES, body, s.namespace)
            except (AlreadyExists, Conflict):
                return False  # another replica created it first
            self._observe(self._lease)
            self._last_error = None
            return True
        self._observe(lease)
        self._last_error = None
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        valid = asyncio.get_running_loop().time() < self._observed_at + self._observed_duration
        if holder and holder != s.identity and valid:
            if self._state == "initializing":
                self._state = "standby"
                self._log.info("standing by", leader=holder)
            return False
        try:
            self._lease = await self.client.update(LEASES, self._renewed(lease, now), s.namespace)
        except Conflict:
            return False  # someone else wrote it in between; look again next time
        self._observe(self._lease)
        return True

    def _record(
        self, now: datetime.datetime, *, acquire: datetime.datetime | str, transitions: int
    ) -> dict[str, Any]:
        s = self.settings
        return {
            "holderIdentity": s.identity,
            "leaseDurationSeconds": max(round(s.lease_duration), 1),
            "acquireTime": acquire if isinstance(acquire, str) else _micro_time(acquire),
            "renewTime": _micro_time(now),
            "leaseTransitions": transitions,
        }

    def _renewed(self, lease: dict[str, Any], now: datetime.datetime) -> dict[str, Any]:
        """The Lease with our record: renewal keeps acquireTime, a takeover counts a transition."""
        spec = lease.get("spec") or {}
        transitions = int(spec.get("leaseTransitions") or 0)
        if spec.get("holderIdentity") == self.settings.identity and spec.get("acquireTime"):
            record = self._record(now, acquire=spec["acquireTime"], transitions=transitions)
        else:
            record = self._record(now, acquire=now, transitions=transitions + 1)
        return {**lease, "spec": {**spec, **record}}

    def _observe(self, lease: dict[str, Any]) -> None:
        """Remember when the Lease record last changed, on our own clock."""
        spec = lease.get("spec") or {}
        record = (
            spec.get("holderIdentity") or "",
            spec.get("renewTime"),
            spec.get("acquireTime"),
            spec.get("leaseDurationSeconds"),
            spec.get("leaseTransitions"),
        )
        if record != self._observed:
            self._observed = record
            self._observed_at = asyncio.get_running_loop().time()
            self._observed_duration = float(
                spec.get("leaseDurationSeconds") or self.settings.lease_duration
            )
        holder = str(record[0])
        if holder != self._holder:
            self._holder = holder
            if holder and holder != self.settings.identity:
                self._log.info("new leader observed", leader=holder)

    async def _release(self) -> None:
        """Give the Lease up so a standby can take over at once."""
        assert self.client is not None
        s = self.settings
        now = _micro_time(datetime.datetime.now(datetime.UTC))
        try:
            for _ in range(2):
                lease = self._lease
                spec = (lease or {}).get("spec") or {}
                if lease is None or spec.get("holderIdentity") != s.identity:
                    return
                released = {
                    **lease,
                    "spec": {
                        **spec,
                        "holderIdentity": "",
                        "leaseDurationSeconds": 1,
                        "acquireTime": now,
                        "renewTime": now,
                    },
                }
                try:
                    async with asyncio.timeout(s.renew_deadline):
                        self._lease = await self.client.update(LEASES, released, s.namespace)
                    self._log.info("released the lease")
                    return
                except Conflict:
                    self._lease = await self.client.get(LEASES, s.lease_name, s.namespace)
        except (KubeError, TimeoutError) as err:
            self._log.warning("could not release the lease", error=str(err))

    # -- transitions -----------------------------------------------------------------
    def _become_leader(self) -> None:
        self._state = "leader"
        self._holder = self.settings.identity
        self._m_status.set(1)
        self._leading.set()
        self._log.info("became leader")

    def _stop_leading(self, why: str) -> None:
        self._m_status.set(0)
        self._leading.clear()
        self._stopped_leading.set()
        self._log.info("stopped leading", reason=why)
