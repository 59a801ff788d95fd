"""The executor permission check's errors (spec/agent.md section 16).

A work with ``spec.executor`` is applied only if that executor (a service
account on the spoke) may write each manifest itself. The apply loop calls
the validator's ``validate`` before every apply of every manifest and turns
the outcome into the manifest's ``Applied`` condition:

- it returns: apply the manifest;
- :class:`NotAllowedError`: ``Applied=False`` with ``Failed to apply manifest: <str(err)>``,
  the object is not touched, the sync is *not* an error, and the work is re-queued
  after ``err.requeue_after`` seconds;
- :class:`InvalidExecutorError`, a ``KubeError`` or any other exception: an
  ordinary per-manifest error (the sync fails and is retried with backoff).
"""

from __future__ import annotations

from ocmkit.durations import format_duration_seconds

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
            delay = format_duration_seconds(self.requeue_after)
            return f"{self.detail}, will try again in {delay}"
        return self.detail


class InvalidExecutorError(Exception):
    """``spec.executor`` names no usable subject: an ordinary error, retried with backoff."""
