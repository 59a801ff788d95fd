"""The HTTP face of kubesim: routing, auth, faults, stats, watch streaming."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import yaml
from aiohttp import web

from kubesim import discovery, errors, openapi, tables
from kubesim.api import APPLY_PATCH, Api, Caller, ListOptions
from kubesim.errors import ApiError
from kubesim.faults import FaultRule, Faults, Stats
from kubesim.rbac import Attributes, RbacAuthorizer, describe_denial, subject_access_review
from kubesim.resources import ResourceType
from kubesim.selectors import parse_field_selector, parse_label_selector

log = logging.getLogger("kubesim.server")

MAX_BODY = 3 * 1024 * 1024
JSON = "application/json"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_TRUE = ("true", "True", "1")
_RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class User:
    """An authenticated identity."""

    name: str
    groups: tuple[str, ...] = ()


@dataclass
class Target:
    """What a resource URL names."""

    rt: ResourceType
    namespace: str
    name: str
    subresource: str


@dataclass
class ServerState:
    """Mutable server-wide settings shared by handlers and the admin API."""

    tokens: dict[str, User] = field(default_factory=dict)
    enforce_rbac: bool = False
    faults: Faults = field(default_factory=Faults)
    stats: Stats = field(default_factory=Stats)
    bookmark_interval: float = 60.0
    default_watch_timeout: float = 1800.0
    refuse: Callable[[float], Awaitable[None]] | None = None
    # Who a request without credentials is. client-go (and so kubectl) never sends a
    # bearer token over plain HTTP, so the HTTP mode acts like kube-apiserver's old
    # insecure port and treats such requests as the admin; TLS mode requires a token.
    anonymous: User | None = None
    server_address: str = "127.0.0.1:6443"


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON answer with the apiserver's content type."""
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type=JSON,
        headers=headers,
    )


def error_response(err: ApiError) -> web.Response:
    """A Status answer for ``err``."""
    return json_response(err.status(), err.code, err.headers)


def _manager_from_agent(agent: str) -> str:
    """The field manager the apiserver derives from a User-Agent: its program name."""
    name = agent.split("/", 1)[0].strip()
    return name[:128] or "unknown"


def _bool(value: str | None) -> bool:
    return value in _TRUE


class Server:
    """Builds the aiohttp application serving the Kubernetes API over ``api``."""

    def __init__(self, api: Api, state: ServerState) -> None:
        self.api = api
        self.state = state
        self.authorizer = RbacAuthorizer(self._lister, superusers=())
        api.on_change.append(self._on_change)

    def _lister(self, group: str, plural: str) -> list[dict[str, Any]]:
        return self.api.store.items((group, plural))

    def _on_change(self, ev: Any) -> None:
        if ev.key[0] == _RBAC_GROUP:
            self.authorizer.invalidate()

    # -- app -----------------------------------------------------------------------
    def app(self) -> web.Application:
        """The aiohttp application."""
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._middleware])
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.state.faults.refusing() and not request.path.startswith("/kubesim/"):
            # Drop the connection, as a server that is down would.
            if request.transport is not None:
                request.transport.close()
            raise ConnectionResetError("kubesim is refusing connections")
        verb, resource = self._classify(request)
        agent = request.headers.get("User-Agent", "")
        code = 500
        try:
            if not request.path.startswith("/kubesim/"):
                latency, err = self.state.faults.check(verb, resource, agent)
                if latency:
                    await asyncio.sleep(latency)
                if err is not None:
                    code = err.code
                    return error_response(err)
            resp = await handler(request)
            code = resp.status
            return resp
        except ApiError as err:
            code = err.code
            return error_response(err)
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            if resource:
                self.state.stats.record(verb, resource, _manager_from_agent(agent), code)

    def _classify(self, request: web.Request) -> tuple[str, str]:
        """(verb, resource) of a request for stats and faults; resource "" if none."""
        parts = [p for p in request.path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            return request.method.lower(), ""
        start = 2 if parts[0] == "api" else 3
        rest = parts[start:]
        if (
            len(rest) >= 2
            and rest[0] == "namespaces"
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            rest = rest[2:] if len(rest) > 2 else ["namespaces", rest[1]]
        if not rest:
            return "get", ""
        resource = rest[0]
        named = len(rest) >= 2
        if len(rest) >= 3:
            resource = f"{rest[0]}/{rest[2]}"
        method = request.method
        if method == "GET":
            if _bool(request.query.get("watch")):
                return "watch", resource
            return ("get" if named else "list"), resource
        verb = {
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if named else "deletecollection",
        }.get(method, method.lower())
        return verb, resource

    # -- dispatch ---------------------------------------------------------------------
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if path.startswith("/kubesim"):
            return await self._admin(request, path)
        if path in ("/healthz", "/livez", "/readyz") or path.startswith(
            ("/healthz/", "/livez/", "/readyz/")
        ):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            return json_response(discovery.VERSION_INFO)
        if path.startswith("/openapi/"):
            doc = openapi.document(self.api.registry, path, request.query)
            if doc is None:
                raise errors.not_found_path()
            return json_response(doc)
        user = self._authenticate(request)
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            if path == "/":
                return json_response({"paths": ["/api", "/api/v1", "/apis", "/version"]})
            raise errors.not_found_path()
        if request.method == "GET":
            doc = self._discovery(parts)
            if doc is not None:
                return json_response(doc)
        target = self._target(parts)
        if target is None:
            raise errors.not_found_path()
        return await self._resource(request, user, target)

    def _authenticate(self, request: web.Request) -> User:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            user = self.state.tokens.get(header[7:].strip())
            if user is not None:
                return user
        elif not header and self.state.anonymous is not None:
            return self.state.anonymous
        raise errors.unauthorized()

    def _discovery(self, parts: list[str]) -> dict[str, Any] | None:
        reg = self.api.registry
        if parts == ["api"]:
            return discovery.api_versions(self.state.server_address)
        if parts == ["api", "v1"]:
            return discovery.resource_list(reg, "", "v1")
        if parts == ["apis"]:
            return discovery.api_group_list(reg)
        if len(parts) == 2 and parts[0] == "apis":
            doc = discovery.api_group(reg, parts[1])
            if doc is None:
                raise errors.not_found_path()
            return doc
        if len(parts) == 3 and parts[0] == "apis":
            doc = discovery.resource_list(reg, parts[1], parts[2])
            if doc is None:
                raise errors.not_found_path()
            return doc
        return None

    def _target(self, parts: list[str]) -> Target | None:
        if parts[0] == "api":
            if len(parts) < 3 or parts[1] != "v1":
                return None
            group, version, rest = "", "v1", parts[2:]
        else:
            if len(parts) < 4:
                return None
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace = ""
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            return None
        rt = self.api.registry.get(group, version, rest[0])
        if rt is None:
            return None
        if namespace and not rt.namespaced:
            return None
        name = rest[1] if len(rest) >= 2 else ""
        sub = rest[2] if len(rest) == 3 else ""
        if sub and not (
            (sub == "status" and rt.status)
            or (sub == "scale" and rt.scale)
            or sub in rt.extra_subresources
        ):
            return None
        return Target(rt, namespace, name, sub)

    # -- resource requests --------------------------------------------------------------
    async def _resource(self, request: web.Request, user: User, t: Target) -> web.StreamResponse:
        q = request.query
        method = request.method
        rt = t.rt
        verb, _ = self._classify(request)
        if self.state.enforce_rbac:
            self._authorize(user, verb, t)
        if rt.only_create:
            if method != "POST":
                raise errors.method_not_allowed(method)
            return await self._review(request, user, t)
        agent = request.headers.get("User-Agent", "")
        dry_run = "All" in q.getall("dryRun", [])
        if method == "PATCH" and request.content_type == APPLY_PATCH:
            caller = Caller(manager=q.get("fieldManager", ""), dry_run=dry_run)
        else:
            caller = Caller(
                manager=q.get("fieldManager") or _manager_from_agent(agent), dry_run=dry_run
            )
        accept = request.headers.get("Accept", "")
        if method == "GET":
            if t.name:
                if t.subresource == "scale":
                    return json_response(_scale(rt, self.api.get(rt, t.namespace, t.name)))
                obj = self.api.get(rt, t.namespace, t.name)
                if tables.wants_table(accept):
                    return json_response(
                        tables.to_table(
                            rt, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]}
                        )
                    )
                return web.Response(body=self.api.encoded(rt, obj), content_type=JSON)
            opts = _list_options(q)
            if _bool(q.get("watch")):
                return await self._watch(request, t, opts, table=tables.wants_table(accept))
            listed = self.api.list(rt, t.namespace, opts)
            if tables.wants_table(accept):
                return json_response(tables.to_table(rt, listed["items"], listed["metadata"]))
            return json_response(listed)
        if method == "POST":
            if t.name:
                raise errors.method_not_allowed(method)
            body = await _read_body(request, rt)
            created = self.api.create(rt, t.namespace, body, caller)
            return json_response(created, 201)
        if method == "PUT":
            if not t.name:
                raise errors.method_not_allowed(method)
            body = await _read_body(request, rt)
            if t.subresource == "scale":
                body = _from_scale(self.api.get(rt, t.namespace, t.name), body)
                obj, _ = self.api.update(rt, t.namespace, t.name, body, caller)
                return json_response(_scale(rt, obj))
            obj, created = self.api.update(
                rt, t.namespace, t.name, body, caller, subresource=t.subresource or None
            )
            return json_response(obj, 201 if created else 200)
        if method == "PATCH":
            if not t.name:
                raise errors.method_not_allowed(method)
            body = await _read_body(request, rt, patch=True)
            if t.subresource == "scale":
                current = _scale(rt, self.api.get(rt, t.namespace, t.name))
                from kubesim.patch import apply_patch

                scaled = apply_patch(
                    request.content_type, current, body, rt.list_types, builtin=True
                )
                obj, _ = self.api.update(
                    rt,
                    t.namespace,
                    t.name,
                    _from_scale(self.api.get(rt, t.namespace, t.name), scaled),
                    caller,
                )
                return json_response(_scale(rt, obj))
            obj, created = self.api.patch(
                rt,
                t.namespace,
                t.name,
                request.headers.get("Content-Type", ""),
                body,
                caller,
                subresource=t.subresource or None,
                force=_bool(q.get("force")),
            )
            return json_response(obj, 201 if created else 200)
        if method == "DELETE":
            options = await _delete_options(request)
            propagation = q.get("propagationPolicy") or options.get("propagationPolicy")
            if _bool(q.get("orphanDependents")) or options.get("orphanDependents") is True:
                propagation = propagation or "Orphan"
            if options.get("dryRun") and "All" in options["dryRun"]:
                caller = Caller(manager=caller.manager, dry_run=True)
            if not t.name:
                listed = self.api.delete_collection(
                    rt, t.namespace, _list_options(q), caller, propagation=propagation
                )
                return json_response(listed)
            body, finished = self.api.delete(
                rt,
                t.namespace,
                t.name,
                caller,
                propagation=propagation,
                preconditions=options.get("preconditions"),
            )
            return json_response(body, 200 if finished else 200)
        raise errors.method_not_allowed(method)

    def _authorize(self, user: User, verb: str, t: Target) -> None:
        attrs = Attributes(
            user=user.name,
            groups=user.groups,
            verb=verb,
            api_group=t.rt.group,
            resource=t.rt.plural,
            subresource=t.subresource,
            namespace=t.namespace,
            name=t.name,
        )
        decision = self.authorizer.authorize(attrs)
        if not decision.allowed:
            resource = f"{t.rt.plural}/{t.subresource}" if t.subresource else t.rt.plural
            raise errors.forbidden(resource, t.name, describe_denial(attrs), t.rt.group)

    async def _review(self, request: web.Request, user: User, t: Target) -> web.Response:
        body = await _read_body(request, t.rt)
        if t.rt.kind == "SelfSubjectRulesReview":
            ns = ((body.get("spec") or {}).get("namespace")) or ""
            rules = self.authorizer.rules_for(user.name, user.groups, ns)
            return json_response(
                {
                    "kind": "SelfSubjectRulesReview",
                    "apiVersion": "authorization.k8s.io/v1",
                    "metadata": {"creationTimestamp": None},
                    "spec": body.get("spec") or {},
                    "status": {
                        "resourceRules": [r for r in rules if "nonResourceURLs" not in r],
                        "nonResourceRules": [r for r in rules if "nonResourceURLs" in r],
                        "incomplete": False,
                    },
                },
                201,
            )
        answer = subject_access_review(
            body,
            self.authorizer,
            requesting_user=user.name,
            requesting_groups=user.groups,
            url_namespace=t.namespace or None,
        )
        return json_response(answer, 201)

    async def _watch(
        self, request: web.Request, t: Target, opts: ListOptions, *, table: bool
    ) -> web.StreamResponse:
        q = request.query
        try:
            timeout = float(q["timeoutSeconds"]) if "timeoutSeconds" in q else None
        except ValueError as exc:
            raise errors.bad_request(f"invalid timeoutSeconds {q['timeoutSeconds']!r}") from exc
        if timeout is None:
            timeout = self.state.default_watch_timeout
        if t.name:
            opts = ListOptions(
                label_selector=opts.label_selector,
                field_selector=",".join(
                    s for s in (opts.field_selector, f"metadata.name={t.name}") if s
                ),
                resource_version=opts.resource_version,
            )
        # Bad selectors are a 400 before the stream starts, as in the apiserver.
        parse_label_selector(opts.label_selector)
        parse_field_selector(opts.field_selector)
        events = self.api.watch(
            t.rt,
            t.namespace,
            opts,
            bookmarks=_bool(q.get("allowWatchBookmarks")),
            timeout=timeout,
            bookmark_interval=self.state.bookmark_interval,
        )
        resp = web.StreamResponse(
            status=200,
            headers={"Content-Type": JSON, "Cache-Control": "no-cache, private"},
        )
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            async for ev in events:
                await resp.write(self._event_bytes(t.rt, ev, table))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            await events.aclose()
        try:
            await resp.write_eof()
        except ConnectionResetError:
            pass
        return resp

    def _event_bytes(self, rt: ResourceType, ev: dict[str, Any], table: bool) -> bytes:
        if table and ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
            obj = ev["object"]
            ev = {
                "type": ev["type"],
                "object": tables.to_table(
                    rt, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                ),
            }
        return json.dumps(ev, separators=(",", ":")).encode() + b"\n"

    # -- admin API ------------------------------------------------------------------------
    async def _admin(self, request: web.Request, path: str) -> web.StreamResponse:
        method = request.method
        if path == "/kubesim/stats":
            if method == "GET":
                return json_response(self.state.stats.to_json())
            if method == "DELETE":
                self.state.stats.reset()
                return json_response({"reset": True})
        if path == "/kubesim/faults":
            faults = self.state.faults
            if method == "GET":
                return json_response(
                    {
                        "rules": [r.to_json() for r in faults.rules],
                        "refusing": faults.refusing(),
                    }
                )
            if method == "DELETE":
                faults.clear()
                return json_response({"cleared": True})
            if method == "POST":
                body = await _admin_body(request)
                return json_response(await self._apply_fault(body), 201)
        if path == "/kubesim/watches" and method == "GET":
            return json_response({"open": self.api.store.watch_count()})
        raise errors.not_found_path()

    async def _apply_fault(self, body: dict[str, Any]) -> dict[str, Any]:
        action = body.pop("action", "fail")
        if action == "close-watches":
            return {"closed": self.api.store.close_watches()}
        if action == "expire-watches":
            self.api.store.compact()
            return {"expired": self.api.store.close_watches(expire=True)}
        if action == "refuse-connections":
            try:
                seconds = float(body.get("seconds", 0))
            except (TypeError, ValueError) as exc:
                raise errors.bad_request("seconds must be a number") from exc
            if seconds <= 0:
                raise errors.bad_request("refuse-connections needs seconds > 0")
            self.api.store.close_watches()
            if self.state.refuse is not None:
                asyncio.get_running_loop().create_task(self.state.refuse(seconds))
            else:
                import time

                self.state.faults.refuse_until = time.monotonic() + seconds
            return {"refusingFor": seconds}
        if action == "fail":
            rule = FaultRule.from_json(body)
            self.state.faults.rules.append(rule)
            return rule.to_json()
        raise errors.bad_request(
            f"unknown action {action!r}: use fail, close-watches, expire-watches or "
            "refuse-connections"
        )


def _list_options(q: Any) -> ListOptions:
    try:
        limit = int(q.get("limit", 0) or 0)
    except ValueError as exc:
        raise errors.bad_request(f"invalid limit {q.get('limit')!r}") from exc
    return ListOptions(
        label_selector=q.get("labelSelector", ""),
        field_selector=q.get("fieldSelector", ""),
        limit=max(limit, 0),
        continue_token=q.get("continue", ""),
        resource_version=q.get("resourceVersion", ""),
        resource_version_match=q.get("resourceVersionMatch", ""),
    )


async def _raw(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise errors.entity_too_large()
    raw = await request.read()
    if len(raw) > MAX_BODY:
        raise errors.entity_too_large()
    return raw


async def _read_body(request: web.Request, rt: ResourceType, *, patch: bool = False) -> Any:
    raw = await _raw(request)
    ctype = request.content_type
    text = raw.decode("utf-8", errors="replace")
    try:
        if ctype in ("application/yaml", APPLY_PATCH):
            return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        return json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:
        excerpt = text[:100]
        if patch:
            raise errors.bad_request(f"error decoding patch: {exc} ({excerpt})") from exc
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
            f"version/kind; json parse error: {exc} ({excerpt})"
        ) from exc


async def _admin_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise errors.bad_request(f"invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise errors.bad_request("the body must be a JSON object")
    return body


async def _delete_options(request: web.Request) -> dict[str, Any]:
    raw = await _raw(request)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise errors.bad_request(f"invalid DeleteOptions: {exc}") from exc
    return body if isinstance(body, dict) else {}


def _scale(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    meta = obj["metadata"]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
        },
    }


def _from_scale(obj: dict[str, Any], scale: Any) -> dict[str, Any]:
    if not isinstance(scale, dict):
        raise errors.bad_request("the body must be a Scale object")
    out = json.loads(json.dumps(obj))
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        raise errors.invalid(
            "Scale",
            obj["metadata"]["name"],
            [errors.field_invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
            "autoscaling",
        )
    out.setdefault("spec", {})["replicas"] = replicas
    wanted = (scale.get("metadata") or {}).get("resourceVersion")
    out["metadata"]["resourceVersion"] = wanted or obj["metadata"]["resourceVersion"]
    return out
