"""The executor permission check's contract (spec/agent.md section 16).

A work with ``spec.executor`` is applied only if that executor (a service
account on the spoke) may write each manifest itself. The apply loop calls
:meth:`ExecutorValidator.validate` before every apply of every manifest and
turns the outcome into the manifest's ``Applied`` condition:

- it returns: apply the manifest;
- :class:`NotAllowedError`: ``Applied=False`` with ``Failed to apply manifest: <str(err)>``,
  the object is not touched, the sync is *not* an error, and the work is re-queued
  after ``err.requeue_after`` seconds;
- :class:`InvalidExecutorError`, a ``KubeError`` or any other exception: an
  ordinary per-manifest error (the sync fails and is retried with backoff).
"""

from __future__ import annotations

from typing import Any, Protocol

from ocmkit.kube import Resource
from ocmkit.runtime import Controller, Informer
from schemas.work_v1 import ManifestWorkExecutor

NOT_ALLOWED_REQUEUE_SECONDS = 60.0


class NotAllowedError(Exception):
    """The executor may not act on this manifest; the work is requeued, not failed.

    ``detail`` is the bare reason (``not allowed to apply the resource ...``);
    ``str(err)`` appends the retry delay as OCM words it
    (``..., will try again in 1m0s``): that string is the wire message that
    follows ``Failed to apply manifest: `` in the manifest condition.
    """

    def __init__(self, detail: str, *, requeue_after: float = NOT_ALLOWED_REQUEUE_SECONDS) -> None:
        super().__init__(detail)
        self.detail = detail
        self.requeue_after = requeue_after

    def __str__(self) -> str:
        if self.requeue_after > 0:
            return f"{self.detail}, will try again in {go_duration(self.requeue_after)}"
        return self.detail


class InvalidExecutorError(Exception):
    """``spec.executor`` names no usable subject: an ordinary error, retried with backoff."""


class ExecutorValidator(Protocol):
    """Decides whether a work's executor may apply (and, if owned, delete) a manifest."""

    async def validate(
        self,
        executor: ManifestWorkExecutor | None,
        resource: Resource,
        obj: dict[str, Any],
        *,
        owned_by_work: bool,
        work_namespace: str,
        work_name: str,
    ) -> None:
        """Return if allowed; raise :class:`NotAllowedError` with the message otherwise."""
        ...


class ManagedExecutorValidator(ExecutorValidator, Protocol):
    """An :class:`ExecutorValidator` with background parts the Manager must run.

    The composition root registers :meth:`controllers` with
    ``Manager.add_controller`` (which also adds the informers they depend on);
    :meth:`informers` lists those informers for roots that register them
    separately. Both are empty for validators without a cache.
    """

    def informers(self) -> list[Informer]:
        """Informers to start (spoke RBAC objects, for cache invalidation)."""
        ...

    def controllers(self) -> list[Controller]:
        """Controllers to run (cache refresh and cleanup)."""
        ...


def go_duration(seconds: float) -> str:
    """Format a duration as Go's ``time.Duration.String`` does: ``1m0s``, ``1.5s``, ``250ms``.

    The retry delay in NotAllowed messages travels to the hub, so it must be
    spelled exactly as the Go agent spells it.
    """
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        # Below one second Go picks the largest unit that keeps a leading digit.
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return f"{sign}{_fraction(nanos, size)}{unit}"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return f"{out}{_fraction(rest, 1_000_000_000)}s"


def _fraction(value: int, unit: int) -> str:
    """``value / unit`` without trailing zeros (``1500, 1000`` -> ``1.5``)."""
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")
