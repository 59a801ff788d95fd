"""An async Kubernetes API client for one cluster: dynamic resources, typed errors, QPS limits.

Requests go over aiohttp with the settings kubernetes_asyncio loaded from the
kubeconfig (or the service account), not through kubernetes_asyncio's own
REST layer: that way every request has a timeout, errors are typed from the
``Status`` body and the ``Retry-After`` header, query parameters are built
fresh per request, and a watch is one plain streaming request whose
reconnection policy belongs to the informer.

The client retries what client-go retries: a request the server answered
with 429 or a 5xx and a ``Retry-After`` header in whole seconds is sent again
after that wait, and a GET whose connection was reset a second later, up to
:data:`MAX_RETRIES` times; then its error (with the wait) goes to the caller.
A throttled write therefore does not surface as a failed manifest, as with
OCM's agent. Restarting a paged list whose continue token expired is the only
other retry here: the rest, and backoff, are the controllers' job, where the
reason for the retry is known.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib.metadata
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal, Self, TypedDict, Unpack
from urllib.parse import quote, urlsplit

import aiohttp
import yarl

from ocmkit.kube import metrics
from ocmkit.kube.config import ClusterConfig, load_in_cluster, load_kubeconfig
from ocmkit.kube.errors import (
    Gone,
    KubeConfigError,
    KubeError,
    ServerError,
    Unauthorized,
    Unreachable,
    error_from_status,
    generic_message,
    parse_retry_after,
)
from ocmkit.kube.ratelimit import TokenBucket
from ocmkit.kube.resource import Resource
from ocmkit.kube.watch import WatchEvent, WatchStream, describe

log = logging.getLogger("ocmkit.kube")

DEFAULT_TIMEOUT = 30.0
#: How long opening a connection may take, TCP connect and TLS handshake together: as
#: client-go's TLS handshake timeout, a port that accepts and never answers is reported
#: after 10 s rather than after the whole request timeout.
CONNECT_TIMEOUT = 10.0
# A watch is declared dead when nothing arrived this long after the server should
# have ended it (``timeoutSeconds``): the watchdog for silently stuck streams.
WATCH_READ_MARGIN = 30.0
# Longest excerpt of a non-Status error body kept in an error message.
_TEXT_EXCERPT = 300

PatchType = Literal["merge", "json", "strategic", "apply"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    # A JSON document is valid YAML, so apply bodies are sent as JSON.
    "apply": "application/apply-patch+yaml",
}
_JSON = "application/json"
_TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError, OSError)
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

Params = list[tuple[str, str]]


class ClientOptions(TypedDict, total=False):
    """The keyword arguments of :class:`KubeClient` besides its configuration."""

    qps: float
    burst: int
    user_agent: str | None
    timeout: float
    name: str
    rate_limiter: TokenBucket | None
    dry_run: bool


def default_user_agent() -> str:
    """``workagent/<version>``: the apiserver names field managers after the program part."""
    try:
        version = importlib.metadata.version("ocm-work")
    except importlib.metadata.PackageNotFoundError:
        version = "0.0.0"
    return f"workagent/{version}"


class KubeClient:
    """An API client for one cluster.

    Create it with :meth:`from_kubeconfig` or :meth:`in_cluster`; ``name``
    (``hub``, ``spoke``) labels its metrics. Every request, watch starts
    included, first takes a token from the client's QPS/burst bucket.

    With ``dry_run=True`` every write is sent with ``dryRun=All``, whatever the
    caller asks for, so such a client cannot change a cluster.

    Object bodies are plain dicts as the API server sends them. For a
    cluster-scoped resource the ``namespace`` argument is ignored; for a
    namespaced one, object verbs need it (or ``metadata.namespace`` in the body
    for create and update), while list and watch without one span all
    namespaces.
    """

    def __init__(
        self,
        config: ClusterConfig,
        *,
        qps: float = 50,
        burst: int = 100,
        user_agent: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        name: str = "kube",
        rate_limiter: TokenBucket | None = None,
        dry_run: bool = False,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.config = config
        self.name = name
        #: Every write (POST, PUT, PATCH, DELETE) is sent with ``dryRun=All``: the
        #: server answers as if it wrote, and stores nothing.
        self.dry_run = dry_run
        self.user_agent = user_agent or default_user_agent()
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self.rate_limiter = rate_limiter if rate_limiter is not None else TokenBucket(qps, burst)
        self._host = config.host.rstrip("/")
        #: client-go's ``host`` label: the server's ``host:port`` as the URL gives it.
        self._rest_host = urlsplit(self._host).netloc
        self._pool = _ConnectionPool()
        #: False for a client made by :meth:`derive`: the client it came from owns the pool.
        self._owns_pool = True

    # -- construction ------------------------------------------------------------------
    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | None = None,
        *,
        context: str | None = None,
        **options: Unpack[ClientOptions],
    ) -> Self:
        """A client from a kubeconfig (default ``$KUBECONFIG`` or ``~/.kube/config``).

        Raises KubeConfigError when the file is missing or unusable.
        """
        return cls(await load_kubeconfig(path, context=context), **options)

    @classmethod
    async def in_cluster(cls, **options: Unpack[ClientOptions]) -> Self:
        """A client from the pod's service account. Raises KubeConfigError outside a pod."""
        return cls(load_in_cluster(), **options)

    @classmethod
    async def connect(cls, kubeconfig: str, **options: Unpack[ClientOptions]) -> Self:
        """A client from the ``kubeconfig`` file, or in-cluster when it is empty."""
        if kubeconfig:
            return await cls.from_kubeconfig(kubeconfig, **options)
        return await cls.in_cluster(**options)

    def derive(self, name: str) -> KubeClient:
        """A client for another part of the program, as client-go builds several from one config.

        It shares this client's cluster, credentials, User-Agent, timeout and
        connection pool, and has a token bucket of its own with this client's
        QPS and burst (so each derived client adds that budget, as each
        client-go client does). ``name`` labels its metrics. Closing it is a
        no-op: the pool closes with this client (and a derived client then
        refuses new requests too).
        """
        limiter = self.rate_limiter
        child = KubeClient(
            self.config,
            user_agent=self.user_agent,
            timeout=self.timeout,
            name=name,
            rate_limiter=TokenBucket(limiter.qps, limiter.burst),
            dry_run=self.dry_run,
        )
        child._pool = self._pool
        child._owns_pool = False
        return child

    async def close(self) -> None:
        """Close the connection pool; open watches end with Unreachable.

        On a client made by :meth:`derive` this does nothing.
        """
        if self._owns_pool:
            await self._pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- verbs -------------------------------------------------------------------------
    async def get(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """GET one object (or a subresource of it, e.g. ``status`` or ``scale``)."""
        path = self._path(res, self._ns(res, namespace), name, subresource)
        return self._fill(res, await self._call("get", "GET", path))

    async def get_raw(self, path: str) -> dict[str, Any]:
        """GET a non-resource path such as ``/api/v1``, ``/apis`` or ``/version``."""
        body = await self._call("get", "GET", path)
        if not isinstance(body, dict):
            raise ServerError(500, "InternalError", f"GET {path}: expected a JSON object")
        return body

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """List objects, following ``continue`` tokens until the last page.

        Returns ``{"apiVersion", "kind", "metadata": {"resourceVersion"}, "items"}``
        with the first page's resourceVersion (the one to watch from) and every
        item's apiVersion and kind filled in. If a continue token expires (410),
        the list restarts from the first page once; a second expiry raises Gone.
        """
        path = self._path(res, namespace if res.namespaced else None)
        for attempt in range(2):
            items: list[dict[str, Any]] = []
            first_rv: str | None = None
            token: str | None = None
            try:
                while True:
                    params: Params = []
                    if label_selector:
                        params.append(("labelSelector", label_selector))
                    if field_selector:
                        params.append(("fieldSelector", field_selector))
                    if page_size > 0:
                        params.append(("limit", str(page_size)))
                    if token:
                        params.append(("continue", token))
                    elif resource_version:
                        # The apiserver rejects resourceVersion together with continue.
                        params.append(("resourceVersion", resource_version))
                    page = await self._call("list", "GET", path, params=params)
                    meta = page.get("metadata") or {}
                    if first_rv is None:
                        first_rv = str(meta.get("resourceVersion") or "")
                    items.extend(page.get("items") or [])
                    token = meta.get("continue") or None
                    if not token:
                        break
            except Gone:
                if token is None or attempt == 1:
                    raise
                log.debug("list %s: continue token expired, restarting the list", res)
                continue
            for item in items:
                self._fill(res, item)
            return {
                "apiVersion": res.api_version,
                "kind": f"{res.kind}List",
                "metadata": {"resourceVersion": first_rv or ""},
                "items": items,
            }
        raise AssertionError("unreachable")  # pragma: no cover

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        """Open one watch request; use as ``async with client.watch(...) as events``.

        Entering sends the request (after a rate-limiter token) and raises the
        typed error if it is refused. The iterator ends when the server closes
        the stream (at the latest after ``timeout_seconds``); an ERROR event is
        raised as its KubeError (410 -> Gone); silence longer than
        ``timeout_seconds + 30`` raises Unreachable. It never reconnects.
        """
        params: Params = [("watch", "true")]
        if resource_version:
            # Empty means "from now, with the current objects as ADDED": leave it out.
            params.append(("resourceVersion", resource_version))
        params.append(("allowWatchBookmarks", "true"))
        if timeout_seconds > 0:
            params.append(("timeoutSeconds", str(timeout_seconds)))
        if label_selector:
            params.append(("labelSelector", label_selector))
        if field_selector:
            params.append(("fieldSelector", field_selector))
        path = self._path(res, namespace if res.namespaced else None)
        read_timeout = (timeout_seconds if timeout_seconds > 0 else 1800) + WATCH_READ_MARGIN
        return self._watch(res, path, params, read_timeout)

    async def create(
        self,
        res: Resource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """POST a new object (``generateName`` works); with ``subresource``, POST to
        that subresource of the object named in the body (e.g. ``token``)."""
        ns = self._ns(res, namespace or _body_namespace(body))
        name = _body_name(body) if subresource else None
        path = self._path(res, ns, name, subresource)
        params = _write_params(field_manager, dry_run)
        body = _typed(res, body, subresource)
        return self._fill(res, await self._call("create", "POST", path, params=params, body=body))

    async def update(
        self,
        res: Resource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PUT the object named in ``body`` (its resourceVersion guards against lost updates)."""
        ns = self._ns(res, namespace or _body_namespace(body))
        path = self._path(res, ns, _body_name(body), subresource)
        params = _write_params(field_manager, dry_run)
        body = _typed(res, body, subresource)
        return self._fill(res, await self._call("update", "PUT", path, params=params, body=body))

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PATCH an object: JSON merge, JSON patch, strategic merge or server-side apply.

        Server-side apply (``patch_type="apply"``) needs ``field_manager``;
        ``force=True`` takes over fields other managers own.
        """
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}")
        path = self._path(res, self._ns(res, namespace), name, subresource)
        params = _write_params(field_manager, dry_run)
        if force is not None:
            params.append(("force", "true" if force else "false"))
        answer = await self._call(
            "patch", "PATCH", path, params=params, body=body, content_type=content_type
        )
        return self._fill(res, answer)

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        preconditions: dict[str, Any] | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any] | None:
        """DELETE an object.

        Returns the object when the server answers with it (it still has
        finalizers, or the resource returns deleted objects), None when it
        answers with a success Status.
        """
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions is not None:
            options["preconditions"] = preconditions
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        path = self._path(res, self._ns(res, namespace), name)
        answer = await self._call("delete", "DELETE", path, body=options)
        if not isinstance(answer, dict) or answer.get("kind") == "Status":
            return None
        return self._fill(res, answer)

    # -- transport ---------------------------------------------------------------------
    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._pool.closed:
            raise RuntimeError(f"kube client {self.name!r} is closed")
        if self._pool.session is None:
            # No connection limit: with HTTP/1.1 every open watch holds a connection,
            # and a pool limit would make requests queue behind long-running watches.
            connector = aiohttp.TCPConnector(ssl=self.config.ssl_context or True, limit=0)
            self._pool.session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": self.user_agent, "Accept": _JSON},
                # Only the kubeconfig and the proxy variables decide routing, not ~/.netrc.
                trust_env=False,
            )
        return self._pool.session

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers: dict[str, str] = {}
        try:
            auth = await self.config.credentials.authorization()
        except KubeConfigError as exc:
            raise Unauthorized(0, "Unauthorized", str(exc)) from exc
        if auth:
            headers["Authorization"] = auth
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    @contextlib.asynccontextmanager
    async def _measured(
        self, verb: str, method: str, what: str, request_bytes: int = 0
    ) -> AsyncIterator[_Outcome]:
        """One request: a token of the client's bucket first (before the request's clock
        starts), then its duration and status code (``outcome.code``) in the metrics,
        ours and client-go's; transport failures raise Unreachable."""
        waited = await self.rate_limiter.acquire()
        metrics.RATE_LIMITER_WAIT.labels(self.name).observe(waited)
        host = self._rest_host
        if verb != "watch":  # client-go measures a watch by its result only
            metrics.REST_RATE_LIMITER_DURATION.labels(method, host).observe(waited)
            metrics.REST_REQUEST_SIZE.labels(method, host).observe(request_bytes)
        start = time.perf_counter()
        outcome = _Outcome()
        try:
            yield outcome
        except _TRANSPORT_ERRORS as exc:
            problem = describe(exc)
            if isinstance(exc, TimeoutError):
                problem = f"timed out ({problem})"
            raise Unreachable(f"{what}: {problem}") from exc
        finally:
            elapsed = time.perf_counter() - start
            metrics.REQUESTS.labels(self.name, verb, outcome.code).inc()
            metrics.REQUEST_DURATION.labels(self.name, verb).observe(elapsed)
            metrics.REST_REQUESTS.labels(outcome.code, method, host).inc()
            if verb != "watch":
                metrics.REST_REQUEST_DURATION.labels(method, host).observe(elapsed)
                if outcome.response_bytes is not None:
                    metrics.REST_RESPONSE_SIZE.labels(method, host).observe(outcome.response_bytes)
            log.debug("%s %s -> %s in %.3fs", self.name, what, outcome.code, elapsed)

    async def _send(
        self,
        method: str,
        path: str,
        params: Params | None,
        data: bytes | None,
        content_type: str | None,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Send one request; the caller reads and releases the response."""
        session = self._ensure_session()
        return await session.request(
            method,
            yarl.URL(self._host + path, encoded=True),
            params=params or None,
            data=data,
            headers=await self._headers(content_type),
            timeout=timeout,
            allow_redirects=False,
            proxy=self.config.proxy or None,
            server_hostname=self.config.tls_server_name or None,
        )

    async def _call(
        self,
        verb: str,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: Any = None,
        content_type: str = _JSON,
    ) -> Any:
        """One request with the client's timeout; returns the decoded JSON answer."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        if self.dry_run and method in _WRITE_METHODS:
            params = [*(params or []), ("dryRun", "All")]
            params = list(dict.fromkeys(params))  # once, if the caller asked too
        timeout = aiohttp.ClientTimeout(total=self.timeout, sock_connect=self.connect_timeout)
        for attempt in range(MAX_RETRIES + 1):
            try:
                measured = self._measured(verb, method, f"{method} {path}", len(data or b""))
                async with measured as outcome:
                    response = await self._send(
                        method,
                        path,
                        params,
                        data,
                        content_type if data is not None else None,
                        timeout,
                    )
                    async with response:
                        raw = await response.read()
                        status = response.status
                        retry_after = response.headers.get("Retry-After")
                    outcome.code = str(status)
                    outcome.response_bytes = len(raw)
            except Unreachable as err:
                # client-go sends a GET again, a second later, when the connection was
                # reset or closed under it (an API server restarting, a proxy).
                if method != "GET" or attempt == MAX_RETRIES or not _reset(err.__cause__):
                    raise
                metrics.REST_RETRIES.labels("<error>", method, self._rest_host).inc()
                log.info("%s GET %s: %s; retrying in 1s", self.name, path, err.message)
                await asyncio.sleep(1)
                continue
            wait = _asked_to_wait(status, retry_after)
            if wait is None or attempt == MAX_RETRIES:
                break
            metrics.REST_RETRIES.labels(str(status), method, self._rest_host).inc()
            log.info(
                "%s %s %s -> %s: retrying in %ss as the server asks (retry %d of %d)",
                self.name,
                method,
                path,
                status,
                wait,
                attempt + 1,
                MAX_RETRIES,
            )
            await asyncio.sleep(wait)
        if not 200 <= status < 300:
            raise self._error(status, raw, retry_after)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ServerError(
                status, "InternalError", f"{method} {path}: the answer is not JSON"
            ) from exc

    @contextlib.asynccontextmanager
    async def _watch(
        self, res: Resource, path: str, params: Params, read_timeout: float
    ) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=self.timeout,
            sock_connect=self.connect_timeout,
            sock_read=read_timeout,
        )
        async with self._measured("watch", "GET", f"watch {path}") as outcome:
            # The stream may stay quiet for long, but its headers come at once.
            async with asyncio.timeout(self.timeout):
                response = await self._send("GET", path, params, None, None, timeout)
            outcome.code = str(response.status)
        stream: WatchStream | None = None
        try:
            if not 200 <= response.status < 300:
                try:
                    async with asyncio.timeout(self.timeout):
                        raw = await response.read()
                except _TRANSPORT_ERRORS:
                    raw = b""
                raise self._error(response.status, raw, response.headers.get("Retry-After"))
            stream = WatchStream(response, res, path)
            yield stream
        finally:
            if stream is not None and stream.drained:
                # Ended cleanly: the connection can serve the next request.
                response.release()
            else:
                # close(), not release(): an unfinished stream cannot go back to the pool.
                response.close()

    def _error(self, status: int, raw: bytes, retry_after_header: str | None) -> KubeError:
        if status == 401:
            self.config.credentials.invalidate()
        decoded: dict[str, Any] | None = None
        text = ""
        try:
            candidate = json.loads(raw) if raw else None
        except ValueError:
            candidate = None
        if isinstance(candidate, dict) and candidate.get("kind") == "Status":
            decoded = candidate
        else:
            # As client-go: the body is no message (a proxy's page, "404 page not found").
            body = raw[:_TEXT_EXCERPT].decode("utf-8", "replace").strip()
            text = generic_message(status, body or "unknown")
        return error_from_status(
            status, decoded, retry_after=parse_retry_after(retry_after_header), text=text
        )

    # -- paths -------------------------------------------------------------------------
    def _path(
        self,
        res: Resource,
        namespace: str | None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        parts = [res.base_path]
        if res.namespaced and namespace:
            parts.append(f"/namespaces/{_segment(namespace)}")
        parts.append(f"/{res.plural}")
        if name is not None:
            if not name:
                raise ValueError(f"{res}: an object name is required")
            parts.append(f"/{_segment(name)}")
            if subresource:
                parts.append(f"/{_segment(subresource)}")
        return "".join(parts)

    @staticmethod
    def _ns(res: Resource, namespace: str | None) -> str | None:
        if not res.namespaced:
            return None
        if not namespace:
            raise ValueError(f"{res} is namespaced: a namespace is required")
        return namespace

    @staticmethod
    def _fill(res: Resource, obj: Any) -> dict[str, Any]:
        # Items of a list (and some answers) omit apiVersion and kind; callers
        # such as informers and appliers rely on them being present.
        if not isinstance(obj, dict):
            raise ServerError(500, "InternalError", f"{res}: expected an object in the answer")
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
        return obj


@dataclass
class _Outcome:
    code: str = "<error>"  # the HTTP status, once there is one
    response_bytes: int | None = None  # the body's length, once read


class _ConnectionPool:
    """The HTTP session of a client and of the clients derived from it."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.closed = False

    async def close(self) -> None:
        self.closed = True
        if self.session is not None:
            await self.session.close()
            self.session = None


#: How many times a request is sent again when the server asks to wait (client-go's default).
MAX_RETRIES = 10


def _asked_to_wait(status: int, retry_after: str | None) -> int | None:
    """The seconds to wait before sending again, when a 429 or a 5xx carries a
    ``Retry-After`` in whole seconds (client-go reads only that form); else None."""
    if status != 429 and status < 500:
        return None
    value = (retry_after or "").strip()
    return int(value) if value.isascii() and value.isdigit() else None


def _reset(exc: BaseException | None) -> bool:
    """Whether a transport failure is a connection reset or closed by the server."""
    if isinstance(exc, aiohttp.ServerDisconnectedError | ConnectionResetError):
        return True
    return isinstance(exc, aiohttp.ClientOSError) and exc.errno == errno.ECONNRESET


def _typed(res: Resource, body: dict[str, Any], subresource: str | None) -> dict[str, Any]:
    """The body of a write with the resource's apiVersion and kind where it lacks them.

    A typed client always sends both; the apiserver refuses a custom resource
    without them (it decodes it as unstructured JSON). A subresource other than
    ``status`` has a kind of its own (TokenRequest, Scale): left as given.
    """
    if subresource not in (None, "status") or ("apiVersion" in body and "kind" in body):
        return body
    return {"apiVersion": res.api_version, "kind": res.kind, **body}


def _segment(value: str) -> str:
    # Names are DNS-like, but RBAC names contain ':' and hostile input must not
    # change the path: encode everything that is not a plain segment character.
    return quote(value, safe=":@")


def _body_name(body: dict[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("the body has no metadata.name")
    return name


def _body_namespace(body: dict[str, Any]) -> str | None:
    ns = (body.get("metadata") or {}).get("namespace")
    return ns if isinstance(ns, str) and ns else None


def _write_params(field_manager: str | None, dry_run: bool) -> Params:
    params: Params = []
    if field_manager:
        params.append(("fieldManager", field_manager))
    if dry_run:
        params.append(("dryRun", "All"))
    return params
