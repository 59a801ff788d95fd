"""The HTTP face of kubesim: routing, auth, faults, stats, watch streaming."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, cast

import yaml
from aiohttp import web

from kubesim import (
    bytesfields,
    discovery,
    errors,
    jsonerrors,
    listopts,
    openapi,
    openapi_models,
    openapi_protobuf,
    openapi_v2proto,
    tables,
)
from kubesim.admission import (
    CREATE,
    DELETE,
    UPDATE,
    Admission,
    AdmissionRefused,
    AdmissionRequest,
)
from kubesim.api import APPLY_PATCH, Api, Caller, now
from kubesim.errors import ApiError, UntypedError
from kubesim.faults import FaultRule, Faults, Journal, Stats
from kubesim.jsonerrors import go_message
from kubesim.listopts import ListOptions
from kubesim.managedfields import update_managed_fields
from kubesim.openapi_fields import apply_path, strict_path
from kubesim.patch import apply_patch, go_value
from kubesim.rbac import Attributes, RbacAuthorizer, describe_denial, subject_access_review
from kubesim.resources import CREATE_ONLY, ResourceType
from kubesim.selectors import parse_field_selector, parse_label_selector

log = logging.getLogger("kubesim.server")

MAX_BODY = 3 * 1024 * 1024
JSON = "application/json"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_RBAC_GROUP = "rbac.authorization.k8s.io"
_AUTHN_GROUP = "authentication.k8s.io"
# What the bootstrap ClusterRole system:basic-user, bound to system:authenticated,
# lets every user do: ask the server about their own identity and permissions.
_SELF_REVIEWS = frozenset(
    {
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectrulesreviews"),
        (_AUTHN_GROUP, "selfsubjectreviews"),
    }
)
_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")
_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}
# How often a write is admitted again when its object changed while webhooks were
# asked (kube-apiserver's GuaranteedUpdate retries such conflicts, admission included).
_ADMISSION_ATTEMPTS = 10


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
    journal: Journal = field(default_factory=Journal)
    bookmark_interval: float = 60.0
    default_watch_timeout: float = 1800.0
    refuse: Callable[[float], Coroutine[Any, Any, None]] | None = None
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
    """A Status answer for ``err`` (Go's plain text for a path nothing serves)."""
    if isinstance(err, errors.PageNotFound):
        return web.Response(
            text="404 page not found\n",
            status=404,
            content_type="text/plain",
            charset="utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
        )
    return json_response(err.status(), err.code, err.headers)


def _manager_from_agent(agent: str) -> str:
    """The field manager the apiserver derives from a User-Agent: its program name."""
    name = agent.split("/", 1)[0].strip()
    return name[:128] or "unknown"


def _bool(value: str | None) -> bool:
    return listopts.go_bool(value)


class Server:
    """Builds the aiohttp application serving the Kubernetes API over ``api``."""

    def __init__(self, api: Api, state: ServerState) -> None:
        self.api = api
        self.state = state
        self.authorizer = RbacAuthorizer(self._lister, superusers=())
        api.on_change.append(self._on_change)
        self._loading: asyncio.Task[bool] | None = None
        self.openapi = openapi.Documents(api.registry)
        self.admission = Admission(api.store, api.registry)
        api.prune_unknown = self._prune_unknown
        if api.registry.get(_AUTHN_GROUP, "v1", "selfsubjectreviews") is None:
            # `kubectl auth whoami`; answered by _review like the other self reviews.
            api.registry.add(
                ResourceType(
                    _AUTHN_GROUP,
                    "v1",
                    "selfsubjectreviews",
                    "SelfSubjectReview",
                    False,
                    verbs=CREATE_ONLY,
                )
            )

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
        app.on_response_prepare.append(_deprecation_warning)
        app.on_startup.append(self._load_models)
        app.on_cleanup.append(self._close_admission)
        return app

    async def _close_admission(self, app: web.Application) -> None:
        await self.admission.close()

    async def _load_models(self, app: web.Application) -> None:
        """Start loading the schemas' models in a thread, so the first kubectl is quick."""
        if not openapi_models.loaded():
            self._loading = asyncio.get_running_loop().create_task(
                asyncio.to_thread(openapi_models.available)
            )

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.state.faults.refusing() and not request.path.startswith("/kubesim/"):
            # Drop the connection, as a server that is down would.
            if request.transport is not None:
                request.transport.close()
            raise ConnectionResetError("kubesim is refusing connections")
        verb, resource = self._classify(request)
        agent = request.headers.get("User-Agent", "")
        arrived = time.monotonic()
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
                self.state.journal.record(
                    arrived,
                    verb,
                    resource,
                    self._user_name(request),
                    agent,
                    code,
                    dry_run=_is_dry_run(request),
                )

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
            return await self._openapi(request, path)
        user = self._authenticate(request)
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            if path == "/":
                return json_response({"paths": ["/api", "/api/v1", "/apis", "/version"]})
            raise errors.not_found_path()
        if request.method == "GET":
            if parts in (["api"], ["apis"]):
                version = discovery.aggregated_version(request.headers.get("Accept", ""))
                if version is not None:
                    listing = discovery.aggregated(
                        self.api.registry, core=parts == ["api"], version=version
                    )
                    return web.Response(
                        body=json.dumps(listing, separators=(",", ":")).encode(),
                        headers={"Content-Type": discovery.AGGREGATED_TYPES[version]},
                    )
            doc = self._discovery(parts)
            if doc is not None:
                return json_response(doc)
        target = self._target(parts)
        if target is None:
            # A served group version answers a Status; anything else is no API at all.
            served = self.api.registry.group_versions()
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
            if len(parts) < 3 or version not in served.get(group, []):
                raise errors.PageNotFound()
            raise errors.not_found_path()
        deprecated = DEPRECATED.get((target.rt.group, target.rt.version, target.rt.plural))
        if deprecated:
            request[_DEPRECATION] = deprecated
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

    def _user_name(self, request: web.Request) -> str:
        """Who sent a request, for the journal ("" if unauthenticated); never raises."""
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            user = self.state.tokens.get(header[7:].strip())
        else:
            user = None if header else self.state.anonymous
        return user.name if user is not None else ""

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
                raise errors.PageNotFound()
            return doc
        if len(parts) == 3 and parts[0] == "apis":
            doc = discovery.resource_list(reg, parts[1], parts[2])
            if doc is None:
                raise errors.PageNotFound()
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

    async def _openapi(self, request: web.Request, path: str) -> web.Response:
        if not openapi_models.loaded():
            # The first load imports the client's models (seconds): keep serving meanwhile.
            await asyncio.to_thread(openapi_models.available)
        if path == "/openapi/v2":
            accept = request.headers.get("Accept", "")
            if openapi.accepts_json(accept):
                return web.Response(body=self.openapi.v2_document(), content_type=JSON)
            # kubectl asks for protobuf only (its client-side validation needs it).
            if openapi_v2proto.MEDIA_TYPE in accept or "application/*" in accept:
                return web.Response(
                    body=self.openapi.v2_protobuf(),
                    headers={"Content-Type": openapi_v2proto.CONTENT_TYPE},
                )
            raise ApiError(406, "NotAcceptable", "only application/json is available")
        if path == "/openapi/v3":
            return json_response(self.openapi.v3_index())
        body = self.openapi.v3_document(path)
        if body is None:
            raise errors.not_found_path()
        return web.Response(
            body=body, content_type=JSON, headers={"Cache-Control": "public, immutable"}
        )

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
        if method == "GET":
            return await self._read(request, t)
        if method == "DELETE":
            return await self._delete(request, user, t)
        if method not in _OPTIONS_KIND or (method == "POST") == bool(t.name):
            raise errors.method_not_allowed(method)
        agent = request.headers.get("User-Agent", "")
        dry_run = _dry_run(q.getall("dryRun", []), _OPTIONS_KIND.get(method, "CreateOptions"))
        if method == "PATCH" and request.content_type == APPLY_PATCH:
            caller = Caller(manager=q.get("fieldManager", ""), dry_run=dry_run)
        else:
            caller = Caller(
                manager=q.get("fieldManager") or _manager_from_agent(agent), dry_run=dry_run
            )
        validation = _field_validation(q.get("fieldValidation", ""), method)
        if not openapi_models.loaded():
            await asyncio.to_thread(openapi_models.available)
        warnings: list[str] = []
        try:
            resp = await self._write(request, user, t, caller, validation, warnings)
        except AdmissionRefused as refused:
            resp, warnings = error_response(refused.error), refused.warnings
        return _with_warnings(resp, warnings)

    async def _read(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        rt = t.rt
        table = tables.wants_table(request.headers.get("Accept", ""))
        include = q.get("includeObject") or "Metadata"
        if t.name:
            if t.subresource == "scale":
                return json_response(_scale(rt, self.api.get(rt, t.namespace, t.name)))
            obj = self.api.get(rt, t.namespace, t.name)
            if table:
                meta = {"resourceVersion": obj["metadata"]["resourceVersion"]}
                return json_response(tables.to_table(rt, [obj], meta, include=include))
            return web.Response(body=self.api.encoded(rt, obj), content_type=JSON)
        opts = _list_options(q)
        watch = _bool(q.get("watch"))
        listopts.validate(opts, watch=watch)
        if watch:
            # A resourceVersion that is not a number fails before the stream starts.
            listopts.resource_version(opts, watch=True)
            return await self._watch(request, t, opts, table=table, include=include)
        await self.api.reached(listopts.resource_version(opts, watch=False))
        listed = self.api.list(rt, t.namespace, opts)
        if table:
            return json_response(
                tables.to_table(rt, listed["items"], listed["metadata"], include=include)
            )
        return json_response(listed)

    def _object_response(self, t: Target, obj: dict[str, Any], code: int) -> web.Response:
        """The answer to a write: the stored object's JSON, encoded once when it was stored."""
        meta = obj.get("metadata") or {}
        okey = (meta.get("namespace", "") if t.rt.namespaced else "", meta.get("name", ""))
        if self.api.store.get(t.rt.key, okey) is obj:
            return web.Response(body=self.api.encoded(t.rt, obj), status=code, content_type=JSON)
        return json_response(obj, code)

    def _perform(
        self,
        request: web.Request,
        t: Target,
        caller: Caller,
        validation: str,
        warnings: list[str],
        body: Any,
    ) -> tuple[dict[str, Any], int]:
        """A decoded write against the api: (answered object, HTTP code).

        Synchronous on purpose: admission runs it as a dry run and then for
        real, and nothing else may run between the last check and the write.
        """
        rt = t.rt
        duplicates = request.get(_DUPLICATES) or []
        if request.method == "POST":
            _check_custom_kind(rt, body, request.get(_RAW_BODY, b""))
            self._check_decodable(t, body)
            warnings += self._decoded_fields(t, body, validation, duplicates)
            return self.api.create(rt, t.namespace, body, caller), 201
        if request.method == "PUT":
            if t.subresource == "scale":
                body = _from_scale(self.api.get(rt, t.namespace, t.name), body)
                obj, _ = self.api.update(rt, t.namespace, t.name, body, caller)
                return _scale(rt, obj), 200
            _check_custom_kind(rt, body, request.get(_RAW_BODY, b""))
            self._check_decodable(t, body)
            warnings += self._decoded_fields(t, body, validation, duplicates)
            obj, created = self.api.update(
                rt, t.namespace, t.name, body, caller, subresource=t.subresource or None
            )
            return obj, 201 if created else 200
        media = request.content_type
        if t.subresource == "scale":
            current = _scale(rt, self.api.get(rt, t.namespace, t.name))
            scaled = apply_patch(media, current, body, rt.list_types, builtin=True)
            obj, _ = self.api.update(
                rt,
                t.namespace,
                t.name,
                _from_scale(self.api.get(rt, t.namespace, t.name), scaled),
                caller,
            )
            return _scale(rt, obj), 200
        if media == APPLY_PATCH:
            self._check_applied(t, body)
            self._check_applied_bytes(t, body)
        else:
            self._check_patched_bytes(t, media, body)
            warnings += self._patched_fields(t, media, body, validation)
        obj, created = self.api.patch(
            rt,
            t.namespace,
            t.name,
            request.headers.get("Content-Type", ""),
            body,
            caller,
            subresource=t.subresource or None,
            force=_bool(request.query.get("force")),
        )
        return obj, 201 if created else 200

    # -- admission webhooks ----------------------------------------------------------
    def _stored(self, t: Target, name: str) -> dict[str, Any] | None:
        return self.api.store.get(t.rt.key, (t.namespace if t.rt.namespaced else "", name))

    @staticmethod
    def _admission_namespace(t: Target, name: str) -> str:
        """The request namespace admission sees: a Namespace's own name for namespaces."""
        if (t.rt.group, t.rt.plural) == ("", "namespaces"):
            return name
        return t.namespace if t.rt.namespaced else ""

    def _changed(self, t: Target, name: str, old: dict[str, Any] | None) -> bool:
        """Whether the stored object is no longer ``old`` (created, replaced or gone)."""
        current = self._stored(t, name) if name else None
        if old is None or current is None:
            return (old is None) != (current is None)
        return bool(current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"])

    def _admission_request(
        self,
        user: User,
        t: Target,
        operation: str,
        name: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        *,
        dry_run: bool,
        options: dict[str, Any],
    ) -> AdmissionRequest:
        """The attributes webhooks review; ``old`` is the stored object (a Scale for /scale)."""
        if old is not None:
            old = self.api.get(t.rt, t.namespace, old["metadata"]["name"])
            if t.subresource == "scale":
                old = _scale(t.rt, old)
        return AdmissionRequest(
            operation=operation,
            rt=t.rt,
            subresource=t.subresource,
            namespace=self._admission_namespace(t, name),
            name=name,
            obj=obj,
            old=old,
            username=user.name,
            groups=user.groups,
            dry_run=dry_run,
            options=options,
        )

    async def _write(
        self,
        request: web.Request,
        user: User,
        t: Target,
        caller: Caller,
        validation: str,
        warnings: list[str],
    ) -> web.Response:
        """POST, PUT and PATCH; unknown fields are checked as ``validation`` says.

        Without a matching validating webhook (none without configurations)
        the write is performed at once. With one, a dry run
        computes the object as it would be stored, the webhooks review it, and
        only then is it written, unless the stored object changed meanwhile:
        admission then starts over, as kube-apiserver's GuaranteedUpdate
        retries a conflicting write, admission included.
        """
        body = await _read_body(request, t.rt, patch=request.method == "PATCH")
        apply = request.method == "PATCH" and request.content_type == APPLY_PATCH
        name = t.name
        if request.method == "POST" and isinstance(body, dict):
            meta = body.get("metadata")
            name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        for _ in range(_ADMISSION_ATTEMPTS):
            old = self._stored(t, t.name) if t.name else None
            operation = CREATE if request.method == "POST" or (apply and old is None) else UPDATE
            hooks = self.admission.matching(
                operation, t.rt, t.subresource, self._admission_namespace(t, name)
            )
            if not hooks:
                obj, code = self._perform(request, t, caller, validation, warnings, body)
                return self._object_response(t, obj, code)
            trial: list[str] = []
            dry = Caller(manager=caller.manager, dry_run=True)
            planned, code = self._perform(request, t, dry, validation, trial, body)
            attrs = self._admission_request(
                user,
                t,
                operation,
                name,
                planned,
                old,
                dry_run=caller.dry_run,
                options=_write_options(request, operation),
            )
            verdict = await self.admission.review(attrs, hooks)
            reviewed = trial + [w for w in verdict.warnings if w not in trial]
            if verdict.error is not None:
                raise AdmissionRefused(verdict.error, reviewed)
            if self._changed(t, t.name, old):
                continue
            if caller.dry_run:
                warnings += reviewed
                return json_response(planned, code)
            if request.method == "POST" and not name and isinstance(body, dict):
                # Store the object under the name generated for the reviewed one.
                meta = dict(body.get("metadata") or {})
                meta["name"] = planned["metadata"]["name"]
                body = {**body, "metadata": meta}
            obj, code = self._perform(request, t, caller, validation, warnings, body)
            warnings += [w for w in verdict.warnings if w not in warnings]
            return self._object_response(t, obj, code)
        raise errors.conflict(t.rt.plural, t.name, t.rt.group)

    # -- []byte fields that are not base64 ------------------------------------------
    def _check_decodable(self, t: Target, body: Any) -> None:
        """A create or update body must decode: bad base64 is the decoder's 400."""
        if (t.rt.group, t.rt.kind) not in bytesfields.BYTES_FIELDS:
            return
        found = bytesfields.first_error(t.rt.group, t.rt.kind, body)
        if found is not None:
            raise errors.bad_request(self._decode_prefix(t, body) + found)

    @staticmethod
    def _decode_prefix(t: Target, body: Any) -> str:
        """The decoder's ``Kind in version "v" cannot be handled as a Kind: `` prefix."""
        doc = body if isinstance(body, dict) else {}
        api_version = str(doc.get("apiVersion") or t.rt.api_version)
        kind = str(doc.get("kind") or t.rt.kind)
        version = api_version.rsplit("/", 1)[-1]
        return f'{kind} in version "{version}" cannot be handled as a {t.rt.kind}: '

    def _check_patched_bytes(self, t: Target, media: str, body: Any) -> None:
        """A JSON, merge or strategic merge patch whose result does not decode: 422."""
        if (t.rt.group, t.rt.kind) not in bytesfields.BYTES_FIELDS:
            return
        current = self.api.get(t.rt, t.namespace, t.name)
        patched = apply_patch(
            media, copy.deepcopy(current), body, t.rt.list_types, builtin=t.rt.builtin
        )
        found = bytesfields.first_error(t.rt.group, t.rt.kind, patched)
        if found is None:
            return
        if media == "application/strategic-merge-patch+json":
            # The patched map is converted to the Go type; the error shows the patch map.
            raise bytesfields.patch_invalid(go_value(body), f"error decoding from json: {found}")
        raise bytesfields.patch_invalid(
            bytesfields.patched_json(media, current, body, patched), found
        )

    def _check_applied_bytes(self, t: Target, body: Any) -> None:
        """Server-side apply converts the merged object to its Go type: a plain 500."""
        if (t.rt.group, t.rt.kind) not in bytesfields.BYTES_FIELDS:
            return
        found = bytesfields.first_error(t.rt.group, t.rt.kind, body)
        if found is None:
            return
        gvk = f"{t.rt.group}/{t.rt.version}, Kind={t.rt.kind}"
        raise UntypedError(
            500,
            "",
            f"failed to convert new object ({t.namespace}/{t.name}; {gvk}) to proper version: "
            f"unable to convert unstructured object to {gvk}: error decoding from json: {found}",
        )

    # -- field validation ------------------------------------------------------------
    def _prune_unknown(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Remove undeclared fields of a built-in object in place (needs loaded models)."""
        if not openapi_models.loaded():
            return
        checker = self.openapi.checker(rt)
        if checker is None:
            return
        for path in reversed(checker.unknown(obj)):
            parent: Any = obj
            for step in path[:-1]:
                if step.index >= 0 and isinstance(parent, list) and step.index < len(parent):
                    parent = parent[step.index]
                elif isinstance(parent, dict):
                    parent = parent.get(step.key if step.key is not None else step.name)
                else:
                    parent = None
                    break
            last = path[-1] if path else None
            if last is not None and isinstance(parent, dict):
                parent.pop(last.key if last.key is not None else last.name, None)

    def _unknown(self, rt: ResourceType, obj: Any) -> list[str]:
        """Undeclared fields of ``obj`` as strict decoding names them."""
        checker = self.openapi.checker(rt)
        if checker is None or not isinstance(obj, dict):
            return []
        found = [strict_path(p) for p in checker.unknown(obj)]
        # Pruning a custom resource reports its fields sorted, decoding in document order.
        return found if rt.builtin else sorted(found)

    @staticmethod
    def _outcome(
        unknown: list[str], validation: str, prefix: str, duplicates: list[str] | None = None
    ) -> list[str]:
        """Warnings to send, or a 400 under Strict; nothing under Ignore."""
        if not (unknown or duplicates) or validation == "Ignore":
            return []
        messages = [f'duplicate field "{path}"' for path in duplicates or []]
        messages += [f'unknown field "{path}"' for path in unknown]
        if validation == "Strict":
            raise errors.bad_request(prefix + "strict decoding error: " + ", ".join(messages))
        return messages

    def _decoded_fields(
        self, t: Target, body: Any, validation: str, duplicates: list[str] | None = None
    ) -> list[str]:
        """Check a create or update body as the apiserver's strict decoder would:
        duplicate fields (``duplicates``, found when the JSON was read), then unknown ones."""
        if validation == "Ignore" or not isinstance(body, dict):
            return []
        api_version = str(body.get("apiVersion") or t.rt.api_version)
        kind = str(body.get("kind") or t.rt.kind)
        version = api_version.rsplit("/", 1)[-1]
        prefix = f'{kind} in version "{version}" cannot be handled as a {t.rt.kind}: '
        return self._outcome(self._unknown(t.rt, body), validation, prefix, duplicates)

    def _patched_fields(self, t: Target, media: str, body: Any, validation: str) -> list[str]:
        """Check the result of a JSON, merge or strategic merge patch (new fields only)."""
        if validation == "Ignore":
            return []
        current = self.api.get(t.rt, t.namespace, t.name)
        patched = apply_patch(
            media, copy.deepcopy(current), body, t.rt.list_types, builtin=t.rt.builtin
        )
        before = set(self._unknown(t.rt, current))
        unknown = [p for p in self._unknown(t.rt, patched) if p not in before]
        return self._outcome(unknown, validation, "")

    def _check_applied(self, t: Target, body: Any) -> None:
        """Server-side apply converts the applied object to its schema's type first.

        An undeclared field fails that conversion whatever ``fieldValidation``
        says; kube-apiserver 1.30 reports it as a plain error, hence a 500.
        """
        checker = self.openapi.checker(t.rt)
        if checker is None or not isinstance(body, dict):
            return
        unknown = checker.unknown(body)
        if not unknown:
            return
        rt = t.rt

        def keys(path: tuple[str, ...]) -> tuple[str, ...]:
            spec = rt.list_types(path)
            return spec.keys if spec.is_map else ()

        problems = [f"{apply_path(p, keys)}: field not declared in schema" for p in unknown]
        detail = problems[0] if len(problems) == 1 else "\n  ".join(["errors:", *problems])
        gvk = f"{rt.group}/{rt.version}, Kind={rt.kind}"
        raise UntypedError(
            500,
            "",
            f"failed to create typed patch object ({t.namespace}/{t.name}; {gvk}): {detail}",
        )

    async def _delete(self, request: web.Request, user: User, t: Target) -> web.Response:
        q = request.query
        rt = t.rt
        agent = request.headers.get("User-Agent", "")
        caller = Caller(
            manager=q.get("fieldManager") or _manager_from_agent(agent),
            dry_run=_dry_run(q.getall("dryRun", []), "DeleteOptions"),
        )
        raw = await _raw(request)
        options = _delete_options(raw)
        if isinstance(options.get("dryRun"), list):
            _dry_run([str(v) for v in options["dryRun"]], "DeleteOptions")
        propagation = q.get("propagationPolicy") or options.get("propagationPolicy")
        if _bool(q.get("orphanDependents")) or options.get("orphanDependents") is True:
            propagation = propagation or "Orphan"
        if options.get("dryRun") and "All" in options["dryRun"]:
            caller = Caller(manager=caller.manager, dry_run=True)
            request[_DRY_RUN_BODY] = True  # for the journal
        if self.admission.configured():
            deletion = _Deletion(
                user, caller, propagation, options.get("preconditions"), _admitted_options(q, raw)
            )
            try:
                return await self._admitted_delete(request, t, deletion)
            except AdmissionRefused as refused:
                return _with_warnings(error_response(refused.error), refused.warnings)
        if not t.name:
            listed = self.api.delete_collection(
                rt, t.namespace, _list_options(q), caller, propagation=propagation
            )
            return json_response(listed)
        body, _ = self.api.delete(
            rt,
            t.namespace,
            t.name,
            caller,
            propagation=propagation,
            preconditions=options.get("preconditions"),
        )
        # 200 whether the object is gone or waits for finalizers, as the apiserver answers.
        return json_response(body)

    async def _admitted_delete(
        self, request: web.Request, t: Target, deletion: _Deletion
    ) -> web.Response:
        """DELETE of one object or a collection while validating webhooks are configured."""
        rt = t.rt
        warnings: list[str] = []
        if t.name:
            body, _ = await self._delete_one(t, t.name, t.name, deletion, warnings)
            return _with_warnings(json_response(body), warnings)
        # A collection is deleted item by item, each admitted on its own; the
        # apiserver's requests name none of them. A refusal spares that item, the
        # others are deleted, and the first refusal is the answer.
        opts = _list_options(request.query)
        listed = self.api.list(
            rt, t.namespace, ListOptions(opts.label_selector, opts.field_selector)
        )
        deleted = []
        refusal: AdmissionRefused | None = None
        for obj in listed["items"]:
            try:
                body, done = await self._delete_one(
                    t, obj["metadata"]["name"], "", deletion, warnings
                )
            except AdmissionRefused as exc:
                refusal = refusal or exc
                continue
            except ApiError as exc:
                if exc.code == 404:
                    continue
                refusal = refusal or AdmissionRefused(exc, [])
                continue
            deleted.append(obj if done else body)
        if refusal is not None:
            raise AdmissionRefused(
                refusal.error, warnings + [w for w in refusal.warnings if w not in warnings]
            )
        listed["items"] = deleted
        return _with_warnings(json_response(listed), warnings)

    async def _delete_one(
        self, t: Target, name: str, shown_name: str, deletion: _Deletion, warnings: list[str]
    ) -> tuple[dict[str, Any], bool]:
        """Admit and delete one object; ``shown_name`` is the name webhooks are told."""
        rt = t.rt
        for _ in range(_ADMISSION_ATTEMPTS):
            hooks = self.admission.matching(DELETE, rt, "", self._admission_namespace(t, name))
            if not hooks:
                return self._delete_now(t, name, deletion, deletion.caller)
            old = self._stored(t, name)
            # The dry run raises what the delete would (404, failed preconditions)
            # before any webhook is asked, as in kube-apiserver.
            self._delete_now(t, name, deletion, Caller(deletion.caller.manager, dry_run=True))
            attrs = self._admission_request(
                deletion.user,
                t,
                DELETE,
                shown_name,
                None,
                old,
                dry_run=deletion.caller.dry_run,
                options=deletion.options,
            )
            verdict = await self.admission.review(attrs, hooks)
            if verdict.error is not None:
                raise AdmissionRefused(verdict.error, verdict.warnings)
            if self._changed(t, name, old):
                continue
            warnings += [w for w in verdict.warnings if w not in warnings]
            return self._delete_now(t, name, deletion, deletion.caller)
        raise errors.conflict(rt.plural, name, rt.group)

    def _delete_now(
        self, t: Target, name: str, deletion: _Deletion, caller: Caller
    ) -> tuple[dict[str, Any], bool]:
        namespace = t.namespace if t.rt.namespaced else ""
        return self.api.delete(
            t.rt,
            namespace,
            name,
            caller,
            propagation=deletion.propagation,
            preconditions=deletion.preconditions,
        )

    def _authorize(self, user: User, verb: str, t: Target) -> None:
        if verb == "create" and (t.rt.group, t.rt.plural) in _SELF_REVIEWS:
            return
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

    def _token_review(self, body: dict[str, Any]) -> dict[str, Any]:
        """authentication.k8s.io/v1 TokenReview against the tokens this server knows."""
        token = (body.get("spec") or {}).get("token")
        if not isinstance(token, str) or not token:
            raise errors.bad_request("spec.token: Required value")
        known = self.state.tokens.get(token)
        status: dict[str, Any] = {"user": {}}
        if known is None:
            status["error"] = "invalid bearer token"
        else:
            status = {
                "authenticated": True,
                "user": {"username": known.name, "groups": list(known.groups)},
            }
        return {
            "kind": "TokenReview",
            "apiVersion": f"{_AUTHN_GROUP}/v1",
            "metadata": {"creationTimestamp": None},
            "spec": {"token": token},
            "status": status,
        }

    async def _review(self, request: web.Request, user: User, t: Target) -> web.Response:
        body = await _read_body(request, t.rt)
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {t.rt.kind})"
            )
        # Reviews are never stored, yet the create handler tracks the fields the
        # request set like for any object (before validation, which may show them),
        # so the answer carries managedFields.
        manager = request.query.get("fieldManager") or _manager_from_agent(
            request.headers.get("User-Agent", "")
        )
        sent: dict[str, Any] = {"apiVersion": t.rt.api_version, "kind": t.rt.kind}
        for part in ("metadata", "spec"):
            if isinstance(body.get(part), dict):
                sent[part] = body[part]
        fields = update_managed_fields(
            None,
            sent,
            [],
            manager=manager,
            api_version=t.rt.api_version,
            subresource=None,
            now=now(),
            list_type=t.rt.list_types,
        )
        if fields and isinstance(body.get("metadata", {}), dict):
            body.setdefault("metadata", {})["managedFields"] = fields
        if t.rt.kind == "SelfSubjectReview":
            answer: dict[str, Any] = {
                "kind": "SelfSubjectReview",
                "apiVersion": f"{_AUTHN_GROUP}/v1",
                "metadata": {},
                "status": {"userInfo": {"username": user.name, "groups": list(user.groups)}},
            }
        elif t.rt.kind == "TokenReview":
            answer = self._token_review(body)
        elif t.rt.kind == "SelfSubjectRulesReview":
            ns = ((body.get("spec") or {}).get("namespace")) or ""
            rules = self.authorizer.rules_for(user.name, user.groups, ns)
            answer = {
                "kind": "SelfSubjectRulesReview",
                "apiVersion": "authorization.k8s.io/v1",
                "metadata": {},
                "spec": body.get("spec") or {},
                "status": {
                    "resourceRules": [r for r in rules if "nonResourceURLs" not in r],
                    "nonResourceRules": [r for r in rules if "nonResourceURLs" in r],
                    "incomplete": False,
                },
            }
        else:
            answer = subject_access_review(
                body,
                self.authorizer,
                requesting_user=user.name,
                requesting_groups=user.groups,
                url_namespace=t.namespace or None,
            )
        if fields:
            answer.setdefault("metadata", {})["managedFields"] = fields
        return json_response(answer, 201)

    async def _watch(
        self,
        request: web.Request,
        t: Target,
        opts: ListOptions,
        *,
        table: bool,
        include: str = "Metadata",
    ) -> web.StreamResponse:
        q = request.query
        try:
            timeout = float(q["timeoutSeconds"]) if "timeoutSeconds" in q else None
        except ValueError as exc:
            raise errors.bad_request(f"invalid timeoutSeconds {q['timeoutSeconds']!r}") from exc
        if timeout is None:
            timeout = self.state.default_watch_timeout
        if t.name:
            opts = dataclasses.replace(
                opts,
                field_selector=",".join(
                    s for s in (opts.field_selector, f"metadata.name={t.name}") if s
                ),
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
                await resp.write(self._event_bytes(t.rt, ev, table, include))
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            await cast(AsyncGenerator[dict[str, Any], None], events).aclose()
        with contextlib.suppress(ConnectionResetError):
            await resp.write_eof()
        return resp

    def _event_bytes(
        self, rt: ResourceType, ev: dict[str, Any], table: bool, include: str
    ) -> bytes:
        if table and ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
            obj = ev["object"]
            meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            ev = {"type": ev["type"], "object": tables.to_table(rt, [obj], meta, include=include)}
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
        if path == "/kubesim/requests":
            if method == "GET":
                entries = self.state.journal.select(user=request.query.get("user"))
                return json_response({"requests": [e.to_json() for e in entries]})
            if method == "DELETE":
                self.state.journal.reset()
                return json_response({"reset": True})
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


def _dry_run(values: list[str], options_kind: str) -> bool:
    """Whether ``dryRun`` asks for a dry run; a 422 for anything but ``All``."""
    if any(v != "All" for v in values):
        shown = errors.go_json(values, sort=False)
        cause = {
            "reason": "FieldValueNotSupported",
            "message": f'Unsupported value: {shown}: supported values: "All"',
            "field": "dryRun",
        }
        raise errors.invalid(options_kind, "", [cause], "meta.k8s.io")
    return bool(values)


def _field_validation(value: str, method: str) -> str:
    """The fieldValidation directive of a write (Warn when unset, as in the apiserver)."""
    if value not in _FIELD_VALIDATION:
        raise errors.invalid(
            _OPTIONS_KIND[method],
            "",
            [errors.field_not_supported("fieldValidation", value, list(_FIELD_VALIDATION))],
            "meta.k8s.io",
        )
    return value or "Warn"


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
        send_initial_events=listopts.go_optional_bool(q.get("sendInitialEvents")),
    )


async def _raw(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise errors.entity_too_large()
    raw = await request.read()
    if len(raw) > MAX_BODY:
        raise errors.entity_too_large()
    return raw


#: What the apiserver decodes an object write from (an absent Content-Type is JSON).
_OBJECT_TYPES = ("application/json", "application/yaml", openapi_protobuf.MEDIA_TYPE)
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    APPLY_PATCH,
)


async def _read_body(request: web.Request, rt: ResourceType, *, patch: bool = False) -> Any:
    ctype = request.content_type if "Content-Type" in request.headers else "application/json"
    if patch and ctype not in _PATCH_TYPES:
        raise errors.unsupported_patch_type()
    if not patch and ctype not in _OBJECT_TYPES:
        raise errors.unsupported_media_type(ctype)
    raw = await _raw(request)
    if ctype == openapi_protobuf.MEDIA_TYPE and not patch:
        try:
            return openapi_protobuf.decode(raw)
        except openapi_protobuf.ProtobufError as exc:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types "
                f"include: application/json, application/yaml ({exc})",
            ) from exc
    if not patch:
        request[_RAW_BODY] = raw
    text = raw.decode("utf-8", errors="replace")
    try:
        if ctype in ("application/yaml", APPLY_PATCH):
            return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        if patch:
            return json.loads(text)
        decoded, duplicates = jsonerrors.loads_with_duplicates(text)
        if duplicates:
            request[_DUPLICATES] = duplicates
        return decoded
    except (ValueError, yaml.YAMLError) as exc:
        excerpt = text[:100]
        reason = go_message(exc) if isinstance(exc, json.JSONDecodeError) else str(exc)
        if patch:
            raise errors.bad_request(f"error decoding patch: {reason} ({excerpt})") from exc
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
            f"version/kind; json parse error: {reason} ({excerpt})"
        ) from exc


async def _admin_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise errors.bad_request(f"invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise errors.bad_request("the body must be a JSON object")
    return body


#: Request key set when a DELETE asked for a dry run in its DeleteOptions body.
_DRY_RUN_BODY = web.RequestKey("kubesim.dry_run", bool)


def _is_dry_run(request: web.Request) -> bool:
    """Whether the request was a dry run (``dryRun=All`` in the query or DeleteOptions)."""
    return "All" in request.query.getall("dryRun", []) or request.get(_DRY_RUN_BODY, False)


def _delete_options(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise errors.bad_request(f"invalid DeleteOptions: {exc}") from exc
    return body if isinstance(body, dict) else {}


@dataclass(frozen=True)
class _Deletion:
    """What a DELETE request asks, for deleting its objects one by one."""

    user: User
    caller: Caller
    propagation: str | None
    preconditions: dict[str, Any] | None
    options: dict[str, Any]


#: Resources the apiserver marks deprecated: every request to them gets this warning.
DEPRECATED: dict[tuple[str, str, str], str] = {
    ("", "v1", "endpoints"): "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 "
    "EndpointSlice",
}
_DEPRECATION = web.RequestKey("kubesim.deprecation", str)
_DUPLICATES = web.RequestKey("kubesim.duplicates", list[str])
#: Request key holding the raw body of an object write (error messages quote it).
_RAW_BODY = web.RequestKey("kubesim.raw_body", bytes)


def _summarize(data: bytes, limit: int = 30) -> str:
    """The apiserver's short form of a body in decode errors: JSON text, else hex."""
    if not data:
        return "<empty>"
    cut = data[:limit]
    shown = cut.decode("utf-8", errors="replace") if data[:1] == b"{" else cut.hex()
    return shown + " ..." if len(data) > limit else shown


def _check_custom_kind(rt: ResourceType, body: Any, raw: bytes) -> None:
    """A custom resource decodes as unstructured JSON: it needs its kind and apiVersion.

    A built-in type is decoded into its Go type, which the URL names, so neither
    is needed there. A YAML body is quoted as the JSON it was converted to.
    """
    if rt.builtin or not isinstance(body, dict):
        return
    if not body.get("kind"):
        data = raw if raw[:1] == b"{" else json.dumps(body, separators=(",", ":")).encode()
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {rt.kind}): Object 'Kind' "
            f"is missing in '{data.decode('utf-8', errors='replace')}' ({_summarize(data)})"
        )
    if not body.get("apiVersion"):
        raise errors.bad_request(
            "the API version in the data () does not match the expected API version "
            f"({rt.api_version})"
        )
    kind = body["kind"]
    # Another apiVersion is the API-version check's (kubesim.api), which comes first.
    if kind != rt.kind and body["apiVersion"] == rt.api_version:
        name = str((body.get("metadata") or {}).get("name") or "")
        raise errors.invalid(
            str(kind), name, [errors.field_invalid("kind", kind, f"must be {rt.kind}")], rt.group
        )


async def _deprecation_warning(request: web.Request, response: web.StreamResponse) -> None:
    """First among the warnings, as the apiserver's deprecation filter adds it first."""
    text = request.get(_DEPRECATION)
    if text:
        others = response.headers.getall("Warning", [])
        response.headers.popall("Warning", None)
        for value in [f"299 - {json.dumps(text)}", *others]:
            response.headers.add("Warning", value)


def _with_warnings(resp: web.Response, warnings: list[str]) -> web.Response:
    """``resp`` with one ``Warning`` header per text, as the apiserver's recorder adds them."""
    for text in warnings:
        resp.headers.add("Warning", f"299 - {json.dumps(text)}")
    return resp


def _write_options(request: web.Request, operation: str) -> dict[str, Any]:
    """The options of a write as admission sees them.

    Patches and updates are admitted with UpdateOptions, or CreateOptions when
    they create the object (kube-apiserver converts PatchOptions, dropping force).
    """
    q = request.query
    opts: dict[str, Any] = {
        "kind": "CreateOptions" if operation == CREATE else "UpdateOptions",
        "apiVersion": "meta.k8s.io/v1",
    }
    if q.getall("dryRun", []):
        opts["dryRun"] = q.getall("dryRun")
    for key in ("fieldManager", "fieldValidation"):
        if q.get(key):
            opts[key] = q[key]
    return opts


_DELETE_OPTION_FIELDS = (
    "gracePeriodSeconds",
    "preconditions",
    "orphanDependents",
    "propagationPolicy",
    "dryRun",
)


def _admitted_options(q: Any, raw: bytes) -> dict[str, Any]:
    """DeleteOptions as admission sees them: from the body when there is one, else the query."""
    opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
    body = _delete_options(raw)
    if raw.strip():
        opts.update((k, body[k]) for k in _DELETE_OPTION_FIELDS if k in body)
        return opts
    if q.get("gracePeriodSeconds"):
        with contextlib.suppress(ValueError):
            opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
    if q.get("orphanDependents"):
        opts["orphanDependents"] = _bool(q["orphanDependents"])
    if q.get("propagationPolicy"):
        opts["propagationPolicy"] = q["propagationPolicy"]
    if q.getall("dryRun", []):
        opts["dryRun"] = q.getall("dryRun")
    return opts


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
    out: dict[str, Any] = copy.deepcopy(obj)
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
