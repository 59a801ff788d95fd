"""Watch events and the decoder of one streaming watch response."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from ocmkit.kube.errors import ServerError, Unreachable, error_from_status
from ocmkit.kube.resource import Resource

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


@dataclass(frozen=True)
class WatchEvent:
    """One event of a watch: ADDED, MODIFIED, DELETED or BOOKMARK, and the object."""

    type: str
    object: dict[str, Any]


class WatchStream:
    """Async iterator over the events of one open watch response.

    Ends when the server closes the stream cleanly. An ``ERROR`` event is
    raised as the matching KubeError (410 -> Gone) and ends the stream; a
    broken or timed-out connection is raised as Unreachable.

    Lines are split here rather than with ``StreamReader.readline``, whose
    line-length limit is far below the size of a large object.
    """

    def __init__(self, response: aiohttp.ClientResponse, resource: Resource, what: str) -> None:
        self._response = response
        self._resource = resource
        self._what = what
        self._buffer = bytearray()
        self._eof = False
        self._finished = False

    @property
    def drained(self) -> bool:
        """True once the server ended the stream cleanly and every event was read."""
        return self._eof and self._finished and not self._buffer

    def __aiter__(self) -> WatchStream:
        return self

    async def __anext__(self) -> WatchEvent:
        while not self._finished:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                # bytearray deletes from the front in O(1) amortised time.
                del self._buffer[: newline + 1]
                if line.strip():
                    return self._decode(line)
                continue
            if self._eof:
                self._finished = True
                rest = bytes(self._buffer).strip()
                self._buffer.clear()
                if rest:
                    return self._decode(rest)
                break
            try:
                chunk = await self._response.content.readany()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                self._finished = True
                raise Unreachable(f"watch {self._what}: stream broken: {describe(exc)}") from exc
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
        raise StopAsyncIteration

    def _decode(self, line: bytes) -> WatchEvent:
        try:
            event = json.loads(line)
            kind = event["type"]
            obj = event["object"]
        except (ValueError, KeyError, TypeError) as exc:
            self._finished = True
            raise ServerError(
                500, "InternalError", f"watch {self._what}: undecodable event ({exc})"
            ) from exc
        if not isinstance(kind, str) or not isinstance(obj, dict):
            self._finished = True
            raise ServerError(500, "InternalError", f"watch {self._what}: malformed event")
        if kind == ERROR:
            self._finished = True
            raise error_from_status(0, obj)
        if kind != BOOKMARK:
            obj.setdefault("apiVersion", self._resource.api_version)
            obj.setdefault("kind", self._resource.kind)
        return WatchEvent(kind, obj)


#: What an OpenSSL failure reason says about the server a kubeconfig names.
_TLS_HINTS = {
    "WRONG_VERSION_NUMBER": "the server does not answer in TLS there: a plain-HTTP port?",
}


def describe(exc: BaseException) -> str:
    """A short description of a transport error (aiohttp's timeouts have empty messages)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        # aiohttp's own text prints the SSLContext object; say host, port and cause.
        cause: BaseException = exc.os_error
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            cause = exc.certificate_error
        text = f"cannot connect to {exc.host}:{exc.port}: {cause}"
        hint = _TLS_HINTS.get(str(getattr(cause, "reason", "")))
        return f"{type(exc).__name__}: {text} ({hint})" if hint else f"{type(exc).__name__}: {text}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
