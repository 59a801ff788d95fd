"""A Kubernetes error carried in a gRPC status message, as OCM's server and agent pass it.

When the hub write behind a status event fails, OCM's server answers
``FAILED_PRECONDITION`` with the Go error JSON-encoded as the message: for an
API error that is ``{"ErrStatus":{...metav1.Status...}}``. OCM's agent decodes
such a message back into the Kubernetes error (a 409 Conflict stays a
Conflict); any other message becomes a retryable publish error.
"""

from __future__ import annotations

import json
from typing import Any

from ocmkit.kube import KubeError
from ocmkit.kube.errors import error_from_status

#: metav1.Status fields in Go's order (``kind``/``apiVersion`` are empty on these).
_STATUS_FIELDS = ("metadata", "status", "message", "reason", "details", "code")


def status_error_text(err: KubeError) -> str:
    """``json.Marshal`` of the Go ``*StatusError`` for ``err``."""
    source: dict[str, Any] = dict(err.status) if isinstance(err.status, dict) else {}
    source.setdefault("status", "Failure")
    source.setdefault("message", err.message)
    source.setdefault("reason", err.reason)
    if err.code:
        source.setdefault("code", err.code)
    status: dict[str, Any] = {"metadata": {}}
    for key in _STATUS_FIELDS[1:]:
        if source.get(key) not in (None, "", 0):
            status[key] = source[key]
    return json.dumps({"ErrStatus": status}, separators=(",", ":"), ensure_ascii=False)


def kube_error_from_text(text: str) -> KubeError | None:
    """The Kubernetes error a status message carries, or None if it carries none."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    status = parsed.get("ErrStatus") if isinstance(parsed, dict) else None
    if not isinstance(status, dict):
        return None
    code = status.get("code")
    return error_from_status(code if isinstance(code, int) else 0, status)
