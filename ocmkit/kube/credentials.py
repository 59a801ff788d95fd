"""Sources of the ``Authorization`` header: static, token files, exec plugins.

Tokens rotate under a long-running agent (projected service account tokens
are refreshed by the kubelet, exec plugins hand out short-lived tokens), so
the client asks its credentials for a header on every request and tells them
when the server answered 401. The header value is never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
from pathlib import Path
from typing import Any, Protocol

from kubernetes_asyncio.config.exec_provider import ExecProvider

from ocmkit.kube.errors import KubeConfigError

# client-go re-reads token files once a minute; a 401 forces an earlier re-read.
TOKEN_FILE_REFRESH = 60.0
# Refresh exec tokens this long before they expire, so no request carries a dead one.
EXEC_EXPIRY_SKEW = datetime.timedelta(seconds=30)


class Credentials(Protocol):
    """Something that produces the ``Authorization`` header for a request."""

    async def authorization(self) -> str | None:
        """The header value (``Bearer ...``), or None to send none."""
        ...

    def invalidate(self) -> None:
        """The server refused the last header: obtain a fresh one next time."""
        ...


class StaticCredentials:
    """A fixed header (a token or basic auth from the kubeconfig), or none at all."""

    def __init__(self, header: str | None) -> None:
        self._header = header

    async def authorization(self) -> str | None:
        """The fixed header."""
        return self._header

    def invalidate(self) -> None:
        """Nothing to refresh."""


class TokenFileCredentials:
    """A bearer token read from a file, re-read every minute and after a 401."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._read_at = 0.0
        self._header = self._read()

    def _read(self) -> str:
        try:
            token = self.path.read_text().strip()
        except OSError as exc:
            raise KubeConfigError(f"cannot read token file {self.path}: {exc}") from exc
        if not token:
            raise KubeConfigError(f"token file {self.path} is empty")
        self._read_at = time.monotonic()
        return f"Bearer {token}"

    def current(self) -> str:
        """The header, the file re-read if the cached copy is older than the refresh period.

        Synchronous, for callers on other threads (gRPC's metadata plugins).
        """
        if time.monotonic() - self._read_at >= TOKEN_FILE_REFRESH:
            # Keep using the last good token while the file is being rotated.
            with contextlib.suppress(KubeConfigError):
                self._header = self._read()
        return self._header

    async def authorization(self) -> str | None:
        """The token, re-read if the cached copy is older than the refresh period."""
        return self.current()

    def invalidate(self) -> None:
        """Re-read the file before the next request."""
        self._read_at = float("-inf")


class ExecCredentials:
    """A bearer token from a client-go credential plugin (``users[].user.exec``).

    The token is cached until its ``expirationTimestamp`` (or, without one,
    until the server refuses it), then the plugin runs again; concurrent
    requests share one run.
    """

    def __init__(
        self,
        exec_config: Any,
        *,
        header: str | None = None,
        expiry: datetime.datetime | None = None,
    ) -> None:
        self._provider = ExecProvider(exec_config)
        self._header = header
        self._expiry = expiry
        self._lock = asyncio.Lock()

    def _fresh(self) -> bool:
        if self._header is None:
            return False
        if self._expiry is None:
            return True
        now = datetime.datetime.now(datetime.UTC)
        return now < self._expiry - EXEC_EXPIRY_SKEW

    async def authorization(self) -> str | None:
        """The cached token, or a new one from the plugin."""
        if self._fresh():
            return self._header
        async with self._lock:
            if not self._fresh():
                await self._run()
        return self._header

    async def _run(self) -> None:
        try:
            status = await self._provider.run()
        except Exception as exc:
            raise KubeConfigError(f"exec credential plugin failed: {exc}") from exc
        token = status.get("token") if isinstance(status, dict) else None
        if not token:
            raise KubeConfigError("exec credential plugin returned no token")
        self._header = f"Bearer {token}"
        self._expiry = parse_expiry(status.get("expirationTimestamp"))

    def invalidate(self) -> None:
        """Run the plugin again before the next request."""
        self._header = None


def parse_expiry(value: Any) -> datetime.datetime | None:
    """An RFC 3339 timestamp as an aware datetime; None when absent or unparsable."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
