"""The apiserver's REST semantics over the store, independent of HTTP.

Create, update, patch (merge, JSON, strategic, server-side apply), delete with
finalizers and propagation, list with selectors and pagination, watch with
history; server-set metadata (uid, resourceVersion, generation,
managedFields); status subresources; CRD registration.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import json
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesim import aggregation, errors, listopts
from kubesim.crdschema import CRDSchema, validate_crd_schema
from kubesim.defaults import PVC_PROTECTION, ClusterIPAllocator, apply_defaults, update_strategy
from kubesim.errors import ApiError
from kubesim.jsonvalues import unmarshal_kind
from kubesim.listopts import ListOptions, bookmark, sends_initial_events, too_large
from kubesim.managedfields import (
    ApplyConflict,
    conflict_causes,
    conflict_message,
    server_side_apply,
    update_managed_fields,
)
from kubesim.objectmeta import OBJECT_META_FIELDS
from kubesim.patch import apply_patch
from kubesim.resources import Registry, ResourceType, crd_types
from kubesim.selectors import (
    FieldSelector,
    field_support,
    parse_field_selector,
    parse_label_selector,
)
from kubesim.store import Event, Expired, Store
from kubesim.validation import validate_create, validate_update

# ``Api.list`` shadows the builtin inside the class body.
ManagedFields = list[dict[str, Any]]

APPLY_PATCH = "application/apply-patch+yaml"
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NS_KEY = ("", "namespaces")
CLUSTER_ROLES_KEY = ("rbac.authorization.k8s.io", "clusterroles")
PVC_KEY = ("", "persistentvolumeclaims")
POD_KEY = ("", "pods")
_AGGREGATION_PASSES = 10
CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
# Server-owned metadata a client write never changes.
_SERVER_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)


def now() -> str:
    """The current time as Kubernetes formats it (RFC 3339, seconds, Z)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Caller:
    """Who is writing: the default field manager and whether it is a dry run."""

    manager: str = "kubesim"
    dry_run: bool = False


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but metadata and status: what a generation counts changes of."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _without_volatile(obj: dict[str, Any]) -> dict[str, Any]:
    """The object minus what a no-op write would still change (managedFields times)."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    # A new manager sharing fields is a real change; only the entries' times are not.
    meta["managedFields"] = [
        {k: v for k, v in entry.items() if k != "time"}
        for entry in meta.get("managedFields") or []
        if isinstance(entry, dict)
    ]
    meta.pop("resourceVersion", None)
    out["metadata"] = meta
    return out


class Api:
    """The emulated apiserver state and operations."""

    def __init__(
        self,
        store: Store | None = None,
        registry: Registry | None = None,
        *,
        namespace_finalize_delay: float = 0.5,
    ) -> None:
        self.store = store or Store()
        # A real namespace controller takes a moment after the contents are gone;
        # clients (and the recorded apiserver) see the Terminating phase meanwhile.
        self.namespace_finalize_delay = namespace_finalize_delay
        self._ns_emptied: dict[str, float] = {}
        self._aggregating = False
        self.registry = registry or Registry()
        # A /16 like a small cluster's service range; the recorded apiserver used 10.0.0.0/24.
        self._ips = ClusterIPAllocator("10.0.0.0/16")
        self._schemas: dict[tuple[str, str, str], CRDSchema] = {}
        self._gc_wake = asyncio.Event()
        self._gc_pending: set[tuple[tuple[str, str], tuple[str, str]]] = set()
        self._gc_task: asyncio.Task[None] | None = None
        self.on_change: list[Callable[[Event], None]] = []
        # Drops the fields a built-in kind's schema does not declare (the apiserver's
        # typed decoding loses them); set by the HTTP server, which owns the schemas.
        self.prune_unknown: Callable[[ResourceType, dict[str, Any]], None] | None = None
        self.store.listeners.append(self._changed)
        self.reload_crds()

    def reload_crds(self) -> None:
        """Serve the resources of every stored CRD (after a state restore)."""
        for obj in self.store.items(CRD_KEY):
            self._serve_crd(obj)

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        """Create the system namespaces, start the background controllers (garbage
        collector, namespace and CRD cleanup)."""
        self._system_namespaces()
        if self._gc_task is None:
            self._gc_task = asyncio.get_running_loop().create_task(self._gc_loop())

    def _system_namespaces(self) -> None:
        """What kube-apiserver makes at start: ``default``, ``kube-system``,
        ``kube-public`` and ``kube-node-lease`` (kept when already there)."""
        rt = self.registry.get("", "v1", "namespaces")
        if rt is None:
            return
        for name in SYSTEM_NAMESPACES:
            if self.store.get(NS_KEY, ("", name)) is None:
                self.create(rt, "", {"metadata": {"name": name}}, _APISERVER)

    async def stop(self) -> None:
        """Stop the background controllers."""
        if self._gc_task is not None:
            self._gc_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._gc_task
            self._gc_task = None

    # -- reads -------------------------------------------------------------------
    def _versioned(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("apiVersion") == rt.api_version:
            return obj
        out = dict(obj)
        out["apiVersion"] = rt.api_version
        return out

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """GET one object or raise NotFound."""
        obj = self.store.get(rt.key, (namespace if rt.namespaced else "", name))
        if obj is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return self._versioned(rt, obj)

    def encoded(self, rt: ResourceType, obj: dict[str, Any]) -> bytes:
        """Wire form of a read object (cached for stored objects)."""
        return (
            self.store.encoded(obj)
            if obj.get("apiVersion") == rt.api_version
            else json.dumps(obj).encode()
        )

    def list(self, rt: ResourceType, namespace: str, opts: ListOptions) -> dict[str, Any]:
        """LIST with selectors and limit/continue pagination."""
        label_sel = parse_label_selector(opts.label_selector)
        field_sel = self.field_selector(rt, opts.field_selector)
        list_rv = self.store.rv
        start = ""
        if opts.continue_token:
            try:
                token = json.loads(base64.b64decode(opts.continue_token))
                list_rv = int(token["rv"])
                start = str(token["start"])
            except (ValueError, KeyError, TypeError) as exc:
                raise errors.bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion "
                    "(version meta.k8s.io/v1)"
                ) from exc
            if self.store.is_expired(list_rv):
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use "
                    "the continue token in this response to retrieve the remainder of the results."
                )
        elif opts.resource_version and opts.resource_version_match == "Exact":
            try:
                wanted = int(opts.resource_version)
            except ValueError as exc:
                raise errors.bad_request(
                    f'invalid resource version "{opts.resource_version}"'
                ) from exc
            if wanted != self.store.rv and self.store.is_expired(wanted):
                raise errors.expired()
        items: list[dict[str, Any]] = []
        more = False
        last = ""
        for obj in self.store.items(rt.key, namespace if rt.namespaced else ""):
            meta = obj["metadata"]
            pos = f"{meta.get('namespace', '')}/{meta['name']}"
            if start and pos <= start:
                continue
            if not label_sel.matches(meta.get("labels")) or not field_sel.matches(obj):
                continue
            if opts.limit and len(items) >= opts.limit:
                more = True
                break
            if rt.builtin:
                # Typed lists of built-in kinds carry no kind/apiVersion per item.
                item = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
                items.append(item)
            else:
                items.append(self._versioned(rt, obj))
            last = pos
        list_meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if more:
            list_meta["continue"] = base64.b64encode(
                json.dumps({"v": "meta.k8s.io/v1", "rv": list_rv, "start": last}).encode()
            ).decode()
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": list_meta,
            "items": items,
        }

    def field_selector(self, rt: ResourceType, selector: str) -> FieldSelector:
        """Parse a field selector for ``rt``, rejecting fields the kind does not offer."""
        support = field_support(
            rt.group, rt.kind, namespaced=rt.namespaced, custom_resource=not rt.builtin
        )
        parsed = parse_field_selector(selector, support.getter)
        parsed.check(support.fields, generic=not support.custom)
        return parsed

    # -- namespace checks ----------------------------------------------------------
    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(NS_KEY, ("", namespace))
        if ns is None:
            raise errors.not_found("namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                rt.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                rt.group,
                causes=[
                    {
                        "reason": "NamespaceTerminating",
                        "message": f"namespace {namespace} is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            )

    def _check_crd_not_terminating(self, rt: ResourceType) -> None:
        """The apiextensions handler refuses creates while the resource's CRD is deleted."""
        if not rt.crd_name:
            return
        crd = self.store.get(CRD_KEY, ("", rt.crd_name))
        if crd is not None and crd["metadata"].get("deletionTimestamp"):
            raise errors.ApiError(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
                {**({"group": rt.group} if rt.group else {}), "kind": rt.plural},
            )

    def _check_kind(self, rt: ResourceType, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind}): couldn't get "
                "version/kind; json parse error: expected an object"
            )
        api_version = body.get("apiVersion")
        kind = body.get("kind")
        if api_version and api_version != rt.api_version:
            group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
            if group != rt.group or not self.registry.get(
                group, api_version.rsplit("/", 1)[-1], rt.plural
            ):
                raise errors.bad_request(
                    f"the API version in the data ({api_version}) does not match the expected "
                    f"API version ({rt.api_version})"
                )
        _check_meta_types(rt, body)
        if kind and kind != rt.kind:
            if rt.builtin and self.registry.by_kind(rt.group, rt.version, kind) is None:
                # A kind the scheme does not have (``configmap``): the decoder stops.
                raise errors.bad_request(
                    f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                    f'no kind "{kind}" is registered for version "{rt.api_version}" in scheme '
                    '"pkg/runtime/scheme.go:111"'
                )
            if rt.builtin:
                # The decoder reads the body as its own kind, then finds no conversion.
                raise errors.bad_request(
                    f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                    f"converting ({rt.version}.{kind}) to ({_internal_package(rt.group)}."
                    f"{rt.kind}): unknown conversion"
                )
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind}): "
                f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}'
            )
        return body

    # -- shaping a new object -----------------------------------------------------
    def _prepare(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Defaulting, CRD pruning/defaulting/validation and built-in validation."""
        meta = _meta(obj)
        name = meta.get("name", "")
        if rt.builtin:
            if self.prune_unknown is not None:
                self.prune_unknown(rt, obj)
            if rt.kind == "Secret":
                _fold_string_data(obj)
            _drop_empty(obj)
            apply_defaults(rt.group, rt.kind, obj)
            if old is not None:
                update_strategy(rt.group, rt.kind, old, obj)
            if rt.kind == "Service":
                self._assign_cluster_ip(obj, old)
            if old is None:
                validate_create(rt.group, rt.kind, obj, rt.namespaced)
            else:
                validate_update(rt.group, rt.kind, old, obj)
            if rt.kind == "CustomResourceDefinition":
                _validate_crd_schemas(obj)
            return obj
        schema = self._schema(rt)
        if old is None:
            validate_create(rt.group, rt.kind, obj, rt.namespaced)
        else:
            validate_update(rt.group, rt.kind, old, obj)
        if schema is not None:
            obj = schema.process(obj, old, kind=rt.kind, name=name, group=rt.group)
        return obj

    def _assign_cluster_ip(self, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        spec = obj.setdefault("spec", {})
        if spec.get("type") == "ExternalName":
            return
        if old is not None and (old.get("spec") or {}).get("clusterIP"):
            spec.setdefault("clusterIP", old["spec"]["clusterIP"])
            spec.setdefault("clusterIPs", old["spec"].get("clusterIPs", [old["spec"]["clusterIP"]]))
            return
        wanted = spec.get("clusterIP")
        if isinstance(wanted, str) and wanted and wanted != "None":
            # A chosen address is reserved too, so that no other Service gets it.
            try:
                self._ips.allocate(wanted)
            except ValueError as exc:
                raise errors.invalid(
                    "Service",
                    (obj.get("metadata") or {}).get("name", ""),
                    [errors.field_invalid("spec.clusterIPs", [wanted], str(exc))],
                ) from exc
            spec.setdefault("clusterIPs", [wanted])
            return
        if not wanted:
            try:
                ip = self._ips.allocate()
            except ValueError as exc:
                raise errors.internal_error(f"failed to allocate a serviceIP: {exc}") from exc
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]

    def _schema(self, rt: ResourceType) -> CRDSchema | None:
        if rt.schema is None:
            return None
        key = (rt.group, rt.version, rt.plural)
        cached = self._schemas.get(key)
        if cached is None:
            cached = CRDSchema(rt.schema)
            self._schemas[key] = cached
        return cached

    # -- create ---------------------------------------------------------------------
    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        caller: Caller,
        *,
        managed: ManagedFields | None = None,
    ) -> dict[str, Any]:
        """POST a new object; ``managed`` replaces the Update-operation managedFields (SSA)."""
        self._check_crd_not_terminating(rt)
        obj = copy.deepcopy(self._check_kind(rt, body))
        submitted = copy.deepcopy(obj)
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        meta = _meta(obj)
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5)
            )
        name = meta.get("name", "")
        if name:
            self._check_namespace(rt, namespace, name)
        for field in (*_SERVER_META, "resourceVersion"):
            meta.pop(field, None)
        supplied_managed = meta.pop("managedFields", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rt.generation:
            meta["generation"] = 1
        if rt.status:
            if rt.builtin:
                obj["status"] = {}
            else:
                obj.pop("status", None)
        obj = self._prepare(rt, obj, None)
        try:
            return self._store_new(
                rt, namespace, name, obj, caller, managed, supplied_managed, submitted
            )
        except BaseException:
            self._release_ip(rt, obj)
            raise

    def _encode_for_etcd(self, rt: ResourceType, obj: dict[str, Any]) -> bytes:
        """Set the next resourceVersion and encode ``obj`` as stored; refuse it over etcd's limit.

        The check happens where etcd would refuse the write: after admission
        and validation, never for dry runs, and the refused write uses up no
        resourceVersion. The size is that of kubesim's JSON encoding, which is
        also what GETs and the write's answer send, so it costs no extra
        encoding. Custom resources are stored as JSON, so for them the size is
        close to etcd's; built-in kinds are stored as protobuf, which keeps
        []byte values unencoded: their base64 excess is not counted.
        """
        obj["metadata"]["resourceVersion"] = str(self.store.rv + 1)
        encoded = json.dumps(obj, separators=(",", ":")).encode()
        limit = errors.ETCD_MAX_REQUEST_BYTES
        if len(encoded) > limit and len(encoded) - _base64_excess(rt, obj) > limit:
            raise errors.etcd_too_large()
        return encoded

    def _release_ip(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt.kind == "Service" and rt.builtin:
            ip = (obj.get("spec") or {}).get("clusterIP")
            if isinstance(ip, str) and ip and ip != "None":
                self._ips.release(ip)

    def _store_new(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        obj: dict[str, Any],
        caller: Caller,
        managed: ManagedFields | None,
        supplied_managed: Any,
        submitted: dict[str, Any],
    ) -> dict[str, Any]:
        meta = _meta(obj)
        if self.store.get(rt.key, (namespace if rt.namespaced else "", name)) is not None:
            raise errors.already_exists(rt.plural, name, rt.group)
        if rt.kind == "CustomResourceDefinition":
            self._validate_new_crd(obj)
        if managed is not None:
            fields = managed
        elif supplied_managed and not _resets_managed_fields(supplied_managed):
            fields = supplied_managed
        else:
            fields = update_managed_fields(
                None,
                _without_strategy_fields(rt, submitted, obj),
                [],
                manager=caller.manager,
                api_version=rt.api_version,
                subresource=None,
                now=now(),
                list_type=rt.list_types,
            )
        if fields:
            meta["managedFields"] = fields
        obj = _ordered_meta(obj)
        if caller.dry_run:
            self._release_ip(rt, obj)
            return obj
        encoded = self._encode_for_etcd(rt, obj)
        rv = self.store.next_rv()
        self.store.put(rt.key, obj, rv, "ADDED", encoded=encoded)
        if rt.kind == "CustomResourceDefinition":
            self._establish_crd(obj)
        self._after_write(rt)
        return obj

    # -- update / patch -----------------------------------------------------------------
    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        caller: Caller,
        *,
        subresource: str | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """PUT; returns (object, created)."""
        body = self._check_kind(rt, body)
        old = self.store.get(rt.key, (namespace if rt.namespaced else "", name))
        body_meta = body.get("metadata") or {}
        if body_meta.get("name") and body_meta["name"] != name:
            raise errors.bad_request(
                "the name of the object "
                f"({body_meta['name']}) does not match the name on the URL ({name})"
            )
        if old is None:
            raise errors.not_found(rt.plural, name, rt.group)
        _check_uid(rt, name, old, body_meta.get("uid"))
        wanted_rv = str(body_meta.get("resourceVersion") or "")
        if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, name, rt.group)
        return self._replace(rt, old, copy.deepcopy(body), caller, subresource=subresource), False

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        caller: Caller,
        *,
        subresource: str | None = None,
        force: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """PATCH of any type; returns (object, created)."""
        okey = (namespace if rt.namespaced else "", name)
        old = self.store.get(rt.key, okey)
        media = content_type.split(";", maxsplit=1)[0].strip()
        if media == APPLY_PATCH:
            return self._apply(rt, namespace, name, old, body, caller, subresource, force)
        if old is None:
            raise errors.not_found(rt.plural, name, rt.group)
        patched = apply_patch(media, copy.deepcopy(old), body, rt.list_types, builtin=rt.builtin)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        pmeta = _meta(patched)
        _check_uid(rt, name, old, pmeta.get("uid"))
        wanted_rv = str(pmeta.get("resourceVersion") or "")
        if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, name, rt.group)
        return self._replace(rt, old, patched, caller, subresource=subresource), False

    def _apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        old: dict[str, Any] | None,
        body: Any,
        caller: Caller,
        subresource: str | None,
        force: bool,
    ) -> tuple[dict[str, Any], bool]:
        if not caller.manager:
            raise ApiError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                "required for apply patch",
                {
                    "group": "meta.k8s.io",
                    "kind": "PatchOptions",
                    "causes": [
                        {
                            "reason": "FieldValueRequired",
                            "message": "Required value: is required for apply patch",
                            "field": "fieldManager",
                        }
                    ],
                },
            )
        applied = self._check_kind(rt, body)
        if not applied.get("apiVersion") or not applied.get("kind"):
            raise errors.bad_request(
                "invalid object type: "
                + f"{applied.get('apiVersion', '')}, Kind={applied.get('kind', '')}"
            )
        ameta = applied.get("metadata") or {}
        if ameta.get("name") and ameta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({ameta['name']}) does not match the name on the URL "
                f"({name})"
            )
        live = None if old is None else old
        managed = [] if old is None else list(old["metadata"].get("managedFields") or [])
        try:
            merged, new_managed = server_side_apply(
                _for_apply(live),
                _for_apply(applied) or {},
                managed,
                manager=caller.manager,
                force=force,
                api_version=rt.api_version,
                subresource=subresource,
                now=now(),
                list_type=rt.list_types,
            )
        except ApplyConflict as exc:
            raise ApiError(
                409,
                "Conflict",
                conflict_message(exc.conflicts),
                {"causes": conflict_causes(exc.conflicts)},
            ) from exc
        if old is None:
            if subresource:
                raise errors.not_found(rt.plural, name, rt.group)
            merged.setdefault("metadata", {})["name"] = name
            return self.create(rt, namespace, merged, caller, managed=new_managed), True
        merged_meta = _meta(merged)
        for field in (*_SERVER_META, "resourceVersion", "namespace", "name"):
            if field in old["metadata"]:
                merged_meta[field] = old["metadata"][field]
        return (
            self._replace(rt, old, merged, caller, subresource=subresource, managed=new_managed),
            False,
        )

    def _replace(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        new: dict[str, Any],
        caller: Caller,
        *,
        subresource: str | None,
        managed: ManagedFields | None = None,
    ) -> dict[str, Any]:
        """Common end of PUT and PATCH: merge server fields, validate, store."""
        name = old["metadata"]["name"]
        old_meta = old["metadata"]
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        elif subresource in ("finalize",):
            spec = new.get("spec")
            new = copy.deepcopy(old)
            new["spec"] = spec
        elif rt.status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        new["apiVersion"] = rt.api_version
        new["kind"] = rt.kind
        meta = _meta(new)
        for field in _SERVER_META:
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if rt.namespaced:
            meta["namespace"] = old_meta.get("namespace", "")
        if meta.get("name") != name:
            meta["name"] = meta.get("name") or name
        if old_meta.get("deletionTimestamp"):
            # Finalizers may only be removed, never added, once deletion started.
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise errors.invalid(
                    rt.kind,
                    name,
                    [
                        errors.field_forbidden(
                            "metadata.finalizers",
                            "no new finalizers can be added if the object is being deleted, "
                            f"found new finalizers {sorted(added)!r}".replace("'", '"'),
                        )
                    ],
                    rt.group,
                )
        supplied_managed = meta.pop("managedFields", None)
        new = self._prepare(rt, new, old)
        meta = _meta(new)
        if rt.generation and _spec_part(new) != _spec_part(old):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if managed is None:
            if _resets_managed_fields(supplied_managed):
                fields = []
            elif supplied_managed is not None and supplied_managed != old_meta.get("managedFields"):
                fields = supplied_managed
            elif not old_meta.get("managedFields"):
                # The apiserver tracks no fields in updates of an object that has
                # none tracked (its skipNonAppliedManager): it stays without them.
                fields = []
            else:
                fields = update_managed_fields(
                    old,
                    new,
                    list(old_meta.get("managedFields") or []),
                    manager=caller.manager or "unknown",
                    api_version=rt.api_version,
                    subresource=subresource if subresource == "status" else None,
                    now=now(),
                    list_type=rt.list_types,
                )
        else:
            fields = managed
        if fields:
            meta["managedFields"] = fields
        else:
            meta.pop("managedFields", None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        new = _ordered_meta(new)
        if _without_volatile(new) == _without_volatile(old):
            return self._versioned(rt, old)
        if caller.dry_run:
            return new
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            # The apiserver deletes the stored object instead of writing this one:
            # watchers see the last stored state (finalizers and all) as DELETED,
            # while the writer gets the object it asked for.
            self._remove(rt, old)
            return new
        encoded = self._encode_for_etcd(rt, new)
        rv = self.store.next_rv()
        self.store.put(rt.key, new, rv, "MODIFIED", encoded=encoded)
        if rt.kind == "CustomResourceDefinition" and subresource is None:
            self._serve_crd(new)
        self._after_write(rt)
        return new

    # -- delete -------------------------------------------------------------------
    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        caller: Caller,
        *,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """DELETE; returns (body, finished): a Status when gone, else the object."""
        okey = (namespace if rt.namespaced else "", name)
        old = self.store.get(rt.key, okey)
        if old is None:
            raise errors.not_found(rt.plural, name, rt.group)
        meta = old["metadata"]
        pre = preconditions or {}
        # The delete strategy checks preconditions first, naming the kind.
        for key, label, likely in _DELETE_PRECONDITIONS:
            if pre.get(key) and pre[key] != meta[key]:
                why = (
                    f"the {label} in the precondition ({pre[key]}) does not match the {label} "
                    f"in record ({meta[key]}). The object might have been {likely}"
                )
                raise errors.conflict(rt.kind, name, rt.group, why=why)
        if propagation not in (None, "", "Background", "Foreground", "Orphan"):
            raise errors.invalid(
                "DeleteOptions",
                "",
                [
                    errors.field_not_supported(
                        "propagationPolicy", propagation, ["Foreground", "Background", "Orphan"]
                    )
                ],
            )
        finalizers = list(meta.get("finalizers") or [])
        if propagation == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        elif propagation == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        if rt.kind == "Namespace" and not meta.get("deletionTimestamp"):
            finalizers = finalizers or []
        if rt.kind == "CustomResourceDefinition" and CRD_CLEANUP not in finalizers:
            finalizers.append(CRD_CLEANUP)
        needs_wait = bool(finalizers) or rt.kind == "Namespace"
        if not needs_wait:
            if caller.dry_run:
                return self._status_success(rt, old), True
            self._remove(rt, old)
            return self._status_success(rt, old), True
        if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or []):
            return self._versioned(rt, old), False
        new = copy.deepcopy(old)
        nmeta = new["metadata"]
        own_logic = rt.kind in ("Namespace", "CustomResourceDefinition")
        if not (own_logic or nmeta.get("deletionTimestamp")) and int(nmeta.get("generation") or 0):
            # Marking an object deleting changes what its controllers do: a new generation
            # (the generic store's; these two kinds delete with their own logic).
            nmeta["generation"] = int(nmeta["generation"]) + 1
        nmeta.setdefault("deletionTimestamp", now())
        if rt.kind not in ("Namespace", "CustomResourceDefinition"):
            # Generic graceful deletion records a zero grace period; these two kinds
            # have their own delete logic that does not.
            nmeta.setdefault("deletionGracePeriodSeconds", 0)
        if finalizers:
            nmeta["finalizers"] = finalizers
        if rt.kind == "Namespace":
            new.setdefault("status", {})["phase"] = "Terminating"
        if rt.kind == "CustomResourceDefinition":
            _set_condition(
                new,
                "Terminating",
                "True",
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; CustomResource deletion will "
                "begin soon",
            )
        if caller.dry_run:
            return new, False
        rv = self.store.next_rv()
        nmeta["resourceVersion"] = str(rv)
        new = _ordered_meta(new)
        self.store.put(rt.key, new, rv, "MODIFIED")
        self._after_write(rt)
        return new, False

    def _status_success(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        details: dict[str, Any] = {"name": obj["metadata"]["name"]}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = obj["metadata"]["uid"]
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def _remove(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self._release_ip(rt, obj)
        rv = self.store.next_rv()
        final = copy.deepcopy(obj)
        final["metadata"]["resourceVersion"] = str(rv)
        self.store.remove(rt.key, (meta.get("namespace", ""), meta["name"]), final, rv)
        if rt.kind == "CustomResourceDefinition":
            for gone in self.registry.remove_crd(meta["name"]):
                self._schemas.pop((gone.group, gone.version, gone.plural), None)
        self._after_write(rt)

    # -- what kube-controller-manager does at once --------------------------------------
    def _after_write(self, rt: ResourceType) -> None:
        """Controllers reacting to a stored change (their writes come after it)."""
        if rt.key == CLUSTER_ROLES_KEY and not self._aggregating:
            self._aggregating = True
            try:
                self._aggregate_cluster_roles(rt)
            finally:
                self._aggregating = False
        if rt.key in (PVC_KEY, POD_KEY):
            self._release_unused_claims()

    def _release_unused_claims(self) -> None:
        """The pvc-protection controller: a deleted claim no running pod uses loses its
        protection finalizer (and so goes)."""
        pvcs = self.registry.get("", "v1", "persistentvolumeclaims")
        if pvcs is None:
            return
        for claim in self.store.items(PVC_KEY, ""):
            meta = claim["metadata"]
            if not meta.get("deletionTimestamp") or PVC_PROTECTION not in (
                meta.get("finalizers") or []
            ):
                continue
            if self._claim_in_use(meta.get("namespace", ""), meta["name"]):
                continue
            new = copy.deepcopy(claim)
            new["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != PVC_PROTECTION]
            self._replace(pvcs, claim, new, _SYSTEM, subresource=None)

    def _claim_in_use(self, namespace: str, name: str) -> bool:
        for pod in self.store.items(POD_KEY, namespace):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for volume in (pod.get("spec") or {}).get("volumes") or []:
                claim = (volume or {}).get("persistentVolumeClaim") or {}
                if claim.get("claimName") == name:
                    return True
        return False

    def _aggregate_cluster_roles(self, rt: ResourceType) -> None:
        """The clusterrole-aggregation controller: aggregated roles get their rules.

        Passes repeat until nothing changes, so aggregations of aggregated roles
        settle too (a bounded number of passes, as a cycle could flap).
        """
        caller = Caller(manager=aggregation.FIELD_MANAGER)
        for _ in range(_AGGREGATION_PASSES):
            changed = False
            roles = self.store.items(rt.key, "")
            for role in roles:
                rules = aggregation.aggregated_rules(role, roles)
                if rules is None or not aggregation.needs_update(role, rules):
                    continue
                name = role["metadata"]["name"]
                current = self.store.get(rt.key, ("", name))
                body = aggregation.apply_body(name, rules)
                self._apply(rt, "", name, current, body, caller, None, True)
                changed = True
            if not changed:
                return

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str,
        opts: ListOptions,
        caller: Caller,
        *,
        propagation: str | None = None,
    ) -> dict[str, Any]:
        """DELETE on a collection: delete every matching object; returns the list deleted."""
        listed = self.list(rt, namespace, ListOptions(opts.label_selector, opts.field_selector))
        deleted = []
        for obj in listed["items"]:
            meta = obj["metadata"]
            try:
                body, done = self.delete(
                    rt, meta.get("namespace", ""), meta["name"], caller, propagation=propagation
                )
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(obj if done else body)
        listed["items"] = deleted
        return listed

    # -- watch ------------------------------------------------------------------------
    async def reached(self, rv: int | None) -> None:
        """Wait (up to three seconds, as the apiserver) until the store has reached ``rv``.

        Raises the apiserver's 504 ``Too large resource version`` when it has not.
        """
        if rv is not None and not await self.store.wait_for_rv(rv, listopts.BLOCK_SECONDS):
            raise too_large(rv, self.store.rv)

    async def watch(
        self,
        rt: ResourceType,
        namespace: str,
        opts: ListOptions,
        *,
        bookmarks: bool = False,
        timeout: float | None = None,
        bookmark_interval: float = 60.0,
    ) -> AsyncIterator[dict[str, Any]]:
        """Watch events as wire dicts ``{"type", "object"}``; ends on timeout or close.

        As kube-apiserver v1.35: with initial events (``sendInitialEvents``, or
        by default from resourceVersion ``""``/``"0"``) the current objects come
        first as ADDED events, then, with bookmarks allowed, a BOOKMARK annotated
        ``k8s.io/initial-events-end``; otherwise the changes after the given
        resourceVersion are replayed. Later bookmarks come every
        ``bookmark_interval`` and two seconds before the timeout, and only once
        the resourceVersion has moved past the watch's start. The options must
        have passed :func:`kubesim.listopts.validate` and
        :func:`kubesim.listopts.resource_version`.
        """
        label_sel = parse_label_selector(opts.label_selector)
        field_sel = self.field_selector(rt, opts.field_selector)
        ns = namespace if rt.namespaced else ""

        def visible(obj: dict[str, Any] | None) -> bool:
            return (
                obj is not None
                and label_sel.matches(obj["metadata"].get("labels"))
                and field_sel.matches(obj)
            )

        requested = listopts.resource_version(opts, watch=True)
        sub = self.store.subscribe(rt.key, ns)
        try:
            backlog: list[dict[str, Any]] = []
            # Events up to last_rv are in the backlog; the subscription may repeat them.
            if sends_initial_events(opts):
                if requested is not None:
                    try:
                        await self.reached(requested)
                    except ApiError as err:
                        yield _error_event(err)
                        return
                for obj in self.store.items(rt.key, ns):
                    if visible(obj):
                        backlog.append({"type": "ADDED", "object": self._versioned(rt, obj)})
                start = last_rv = self.store.rv
                if bookmarks:
                    backlog.append(
                        bookmark(rt.kind, rt.api_version, start, initial_events_end=True)
                    )
            elif requested is None:
                start = last_rv = self.store.rv  # from now on, without the current objects
            else:
                start = last_rv = requested
                try:
                    events = self.store.since(rt.key, ns, start)
                except Expired:
                    yield _error_event(
                        errors.expired(f"too old resource version: {start} ({self.store.rv})")
                    )
                    return
                for ev in events:
                    wire = self._wire_event(rt, ev, visible)
                    if wire is not None:
                        backlog.append(wire)
                    last_rv = ev.rv
            for item in backlog:
                yield item
            loop = asyncio.get_running_loop()
            deadline = None if timeout is None else loop.time() + timeout
            next_bookmark = loop.time() + bookmark_interval
            # The apiserver's last bookmark comes two seconds before the timeout.
            pre_timeout = None if deadline is None else deadline - 2.0
            if pre_timeout is not None and pre_timeout <= loop.time():
                pre_timeout = None
            while True:
                wake = min(t for t in (next_bookmark, pre_timeout, deadline) if t is not None)
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel
                # that arrives as an event is queued, and the watch would outlive its client.
                try:
                    async with asyncio.timeout(max(wake - loop.time(), 0)):
                        queued = await _next(sub.queue)
                except TimeoutError:
                    now_at = loop.time()
                    if deadline is not None and now_at >= deadline:
                        return
                    if pre_timeout is not None and now_at >= pre_timeout:
                        pre_timeout = None
                    else:
                        next_bookmark = now_at + bookmark_interval
                    # Bookmarks report progress past the start only.
                    if bookmarks and self.store.rv > start:
                        yield bookmark(
                            rt.kind, rt.api_version, self.store.rv, initial_events_end=False
                        )
                    continue
                if queued is None:
                    if sub.expire:
                        yield _error_event(
                            errors.expired(f"too old resource version: {last_rv} ({self.store.rv})")
                        )
                    return
                if queued.rv <= last_rv:
                    continue
                last_rv = queued.rv
                wire = self._wire_event(rt, queued, visible)
                if wire is not None:
                    yield wire
        finally:
            self.store.unsubscribe(sub)

    def _wire_event(
        self,
        rt: ResourceType,
        ev: Event,
        visible: Callable[[dict[str, Any] | None], bool],
    ) -> dict[str, Any] | None:
        now_in = visible(ev.obj)
        if ev.type == "DELETED":
            return (
                {"type": "DELETED", "object": self._versioned(rt, ev.obj)}
                if (now_in or visible(ev.old))
                else None
            )
        was_in = ev.type == "MODIFIED" and visible(ev.old)
        if now_in and (was_in or ev.type == "ADDED"):
            return {"type": ev.type, "object": self._versioned(rt, ev.obj)}
        if now_in:
            return {"type": "ADDED", "object": self._versioned(rt, ev.obj)}
        if was_in:
            return {"type": "DELETED", "object": self._versioned(rt, ev.obj)}
        return None

    # -- CRDs ---------------------------------------------------------------------------
    def _validate_new_crd(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        for rt in self.registry:
            if (
                rt.group == spec.get("group")
                and rt.plural == names.get("plural")
                and rt.crd_name != crd["metadata"]["name"]
            ):
                raise errors.invalid(
                    "CustomResourceDefinition",
                    crd["metadata"]["name"],
                    [
                        errors.field_invalid(
                            "spec.names.plural",
                            names.get("plural"),
                            "name conflicts with an existing resource",
                        )
                    ],
                    "apiextensions.k8s.io",
                )

    def _serve_crd(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        if crd["metadata"].get("deletionTimestamp"):
            return
        for gone in self.registry.remove_crd(name):
            self._schemas.pop((gone.group, gone.version, gone.plural), None)
        for rt in crd_types(crd):
            self.registry.add(rt)

    def _establish_crd(self, crd: dict[str, Any]) -> None:
        """What the apiextensions controllers do at once: accept names, establish, serve."""
        self._serve_crd(crd)
        new = copy.deepcopy(crd)
        names = (new.get("spec") or {}).get("names") or {}
        status = new.setdefault("status", {})
        accepted = {
            k: names[k]
            for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
            if k in names
        }
        accepted.setdefault("listKind", f"{names.get('kind', '')}List")
        status["acceptedNames"] = accepted
        status["conditions"] = []
        _set_condition(new, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
        _set_condition(
            new,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        )
        versions = [
            v.get("name") for v in (new.get("spec") or {}).get("versions") or [] if v.get("storage")
        ]
        status["storedVersions"] = versions
        rt = self.registry.get(*CRD_KEY[:1], "v1", CRD_KEY[1])
        assert rt is not None
        managed = update_managed_fields(
            crd,
            new,
            list(crd["metadata"].get("managedFields") or []),
            manager="kube-apiserver",
            api_version=rt.api_version,
            subresource="status",
            now=now(),
            list_type=rt.list_types,
        )
        new["metadata"]["managedFields"] = managed
        rv = self.store.next_rv()
        new["metadata"]["resourceVersion"] = str(rv)
        self.store.put(CRD_KEY, new, rv, "MODIFIED")

    # -- garbage collection, namespace and CRD cleanup ------------------------------------
    def _changed(self, ev: Event) -> None:
        """Note the objects whose garbage-collection state this event may change."""
        meta = ev.obj["metadata"]
        ref = (ev.key, (meta.get("namespace", ""), meta["name"]))
        if ev.type == "DELETED":
            for dep in self.store.dependents.get(meta["uid"], ()):
                self._gc_pending.add(dep)
            for owner in meta.get("ownerReferences") or []:
                found = self.store.by_uid.get(owner.get("uid", ""))
                if found is not None:
                    self._gc_pending.add(found)
            if meta.get("namespace"):
                self._gc_pending.add((NS_KEY, ("", meta["namespace"])))
            for rt in self.registry.by_key(ev.key)[:1]:
                if rt.crd_name:
                    self._gc_pending.add((CRD_KEY, ("", rt.crd_name)))
        elif meta.get("deletionTimestamp") or meta.get("ownerReferences"):
            self._gc_pending.add(ref)
        if self._gc_pending:
            self._gc_wake.set()
        for cb in self.on_change:
            cb(ev)

    async def _gc_loop(self) -> None:
        while True:
            await self._gc_wake.wait()
            self._gc_wake.clear()
            try:
                while self.gc_pass():
                    await _yield_to_loop()
            except Exception:  # pragma: no cover - keep the controller alive
                logging.getLogger("kubesim.gc").exception("garbage collection pass failed")

    def gc_pass(self) -> bool:
        """Process the pending garbage-collection work; True if anything was pending."""
        if not self._gc_pending:
            return False
        pending, self._gc_pending = self._gc_pending, set()
        for key, okey in sorted(pending):
            obj = self.store.get(key, okey)
            rts = self.registry.by_key(key)
            if obj is None or not rts:
                continue
            try:
                self._collect(rts[0], obj)
            except ApiError as exc:
                if exc.code not in (404, 409):
                    logging.getLogger("kubesim.gc").warning(
                        "garbage collection of %s/%s failed: %s", okey[0], okey[1], exc.message
                    )
        return True

    def _collect(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        owners = meta.get("ownerReferences") or []
        if owners and not meta.get("deletionTimestamp"):
            alive = [o for o in owners if o.get("uid") in self.store.by_uid]
            if not alive:
                self.delete(rt, ns, name, _SYSTEM, propagation="Background")
                return
        if not meta.get("deletionTimestamp"):
            return
        if rt.kind == "Namespace":
            self._finish_namespace(rt, obj)
            return
        finalizers = list(meta.get("finalizers") or [])
        if rt.kind == "CustomResourceDefinition" and CRD_CLEANUP in finalizers:
            self._finish_crd(rt, obj)
            return
        dependents = [
            (dk, dobj)
            for dk, dokey in sorted(self.store.dependents.get(meta["uid"], ()))
            if (dobj := self.store.get(dk, dokey)) is not None
        ]
        if ORPHAN in finalizers:
            for dk, dobj in dependents:
                drt = self.registry.by_key(dk)[0]
                refs = [
                    o for o in dobj["metadata"]["ownerReferences"] if o.get("uid") != meta["uid"]
                ]
                self.patch(
                    drt,
                    dobj["metadata"].get("namespace", ""),
                    dobj["metadata"]["name"],
                    "application/merge-patch+json",
                    {"metadata": {"ownerReferences": refs or None}},
                    _SYSTEM,
                )
            self._drop_finalizer(rt, obj, ORPHAN)
        elif FOREGROUND in finalizers:
            blocking = [
                (dk, dobj)
                for dk, dobj in dependents
                if any(
                    o.get("uid") == meta["uid"] and o.get("blockOwnerDeletion")
                    for o in dobj["metadata"]["ownerReferences"]
                )
            ]
            for dk, dobj in dependents:
                if not dobj["metadata"].get("deletionTimestamp"):
                    drt = self.registry.by_key(dk)[0]
                    self.delete(
                        drt,
                        dobj["metadata"].get("namespace", ""),
                        dobj["metadata"]["name"],
                        _SYSTEM,
                        propagation="Foreground",
                    )
            if not blocking:
                self._drop_finalizer(rt, obj, FOREGROUND)

    def _drop_finalizer(self, rt: ResourceType, obj: dict[str, Any], finalizer: str) -> None:
        meta = obj["metadata"]
        remaining = [f for f in meta.get("finalizers") or [] if f != finalizer]
        new = copy.deepcopy(obj)
        if remaining:
            new["metadata"]["finalizers"] = remaining
        else:
            new["metadata"].pop("finalizers", None)
        self._replace(rt, obj, new, _SYSTEM, subresource=None)

    def _finish_namespace(self, rt: ResourceType, ns_obj: dict[str, Any]) -> None:
        ns = ns_obj["metadata"]["name"]
        remaining = 0
        for served in list(self.registry):
            if not served.namespaced or served.only_create:
                continue
            for obj in self.store.items(served.key, ns):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    self.delete(served, ns, obj["metadata"]["name"], _SYSTEM)
        if remaining:
            self._ns_emptied.pop(ns, None)
            return
        loop = asyncio.get_running_loop()
        emptied = self._ns_emptied.setdefault(ns, loop.time())
        wait = emptied + self.namespace_finalize_delay - loop.time()
        if wait > 0:
            loop.call_later(wait, self._requeue, (NS_KEY, ("", ns)))
            return
        self._ns_emptied.pop(ns, None)
        current = self.store.get(NS_KEY, ("", ns))
        if current is None:
            return
        if current["metadata"].get("finalizers"):
            # Only metadata finalizers hold it now: clear spec.finalizers like the controller.
            if (current.get("spec") or {}).get("finalizers"):
                new = copy.deepcopy(current)
                new["spec"]["finalizers"] = []
                self._replace(rt, current, new, _SYSTEM, subresource="finalize")
            return
        self._remove(rt, current)

    def _requeue(self, item: tuple[tuple[str, str], tuple[str, str]]) -> None:
        self._gc_pending.add(item)
        self._gc_wake.set()

    def _finish_crd(self, rt: ResourceType, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        served = self.registry.by_key(key)
        items = self.store.items(key)
        for obj in items:
            if served and not obj["metadata"].get("deletionTimestamp"):
                self.delete(
                    served[0],
                    obj["metadata"].get("namespace", ""),
                    obj["metadata"]["name"],
                    _SYSTEM,
                )
        if self.store.count(key) == 0:
            self._drop_finalizer(rt, crd, CRD_CLEANUP)


_SYSTEM = Caller(manager="kube-controller-manager")
_APISERVER = Caller(manager="kube-apiserver")
#: The namespaces every cluster has from the start.
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


# Fields the apiserver's registry strategies set after field management has run,
# so that no manager owns them on create (a real apiserver records them nowhere).
_STRATEGY_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Namespace": (("spec", "finalizers"),),
    # Set by admission plugins, after field management.
    "PersistentVolumeClaim": (("metadata", "finalizers"),),
    "Node": (("spec", "taints"),),
    # Zero values the empty Go object has too: no write changes them, nobody owns them.
    "Event": (
        ("source",),
        ("reportingComponent",),
        ("reportingInstance",),
        ("deprecatedSource",),
    ),
    "StatefulSet": (("spec", "serviceName"),),
    "Job": (
        ("spec", "selector"),
        ("metadata", "labels", "controller-uid"),
        ("metadata", "labels", "job-name"),
        ("metadata", "labels", "batch.kubernetes.io/controller-uid"),
        ("metadata", "labels", "batch.kubernetes.io/job-name"),
        ("spec", "template", "metadata", "labels", "controller-uid"),
        ("spec", "template", "metadata", "labels", "job-name"),
        ("spec", "template", "metadata", "labels", "batch.kubernetes.io/controller-uid"),
        ("spec", "template", "metadata", "labels", "batch.kubernetes.io/job-name"),
    ),
    "Service": (
        ("spec", "clusterIP"),
        ("spec", "clusterIPs"),
        ("spec", "ipFamilies"),
        ("spec", "ipFamilyPolicy"),
    ),
}


def _lookup(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


_MISSING = object()


def _without_strategy_fields(
    rt: ResourceType, submitted: dict[str, Any], obj: dict[str, Any]
) -> dict[str, Any]:
    """``obj`` minus the strategy-set fields the client did not send itself."""
    paths = _STRATEGY_FIELDS.get(rt.kind, ()) if rt.builtin else ()
    drop = [
        p for p in paths if _lookup(submitted, p) is _MISSING and _lookup(obj, p) is not _MISSING
    ]
    if not drop:
        return obj
    view = copy.deepcopy(obj)
    for path in drop:
        parent = _lookup(view, path[:-1])
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
            if not parent and len(path) > 1:
                grand = _lookup(view, path[:-2])
                if isinstance(grand, dict):
                    grand.pop(path[-2], None)
    return view


_META_TYPES: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "generateName": str,
    "namespace": str,
    "uid": str,
    "resourceVersion": str,
    "labels": dict,
    "annotations": dict,
    "finalizers": list,
    "ownerReferences": list,
    "managedFields": list,
    "generation": int,
}
_GO_TYPES = {str: "string", dict: "map", list: "slice", int: "int64"}


# DeleteOptions preconditions in the order checked: field, its name in the message, and
# what probably happened to the object.
_DELETE_PRECONDITIONS = (
    ("uid", "UID", "deleted and then recreated"),
    ("resourceVersion", "ResourceVersion", "modified"),
)


def _internal_package(group: str) -> str:
    """The Go package of a built-in group's internal types (core for the core group)."""
    if group in ("", "events.k8s.io"):
        return "core"
    return group.split(".", 1)[0]


def _check_uid(rt: ResourceType, name: str, old: dict[str, Any], uid: Any) -> None:
    """A uid in an update or patch is a precondition on the object's identity."""
    if uid and uid != old["metadata"]["uid"]:
        raise errors.conflict(
            rt.plural,
            name,
            rt.group,
            why=f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{old['metadata']['uid']}",
        )


def _as_any(value: object) -> Any:
    """Forget a narrowed type (isinstance against a runtime tuple narrows to object)."""
    return value


def _check_meta_types(rt: ResourceType, body: dict[str, Any]) -> None:
    """Reject bodies whose metadata cannot decode, as the apiserver's decoder does (400)."""

    def fail(field: str, value: Any, go_type: str) -> ApiError:
        # A null member has always been answered as "object" here (Go would take null as "").
        kind = "object" if value is None else unmarshal_kind(value)
        return errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: json: '
            f"cannot unmarshal {kind} into Go struct field {field} of type {go_type}"
        )

    for key in ("apiVersion", "kind"):
        if key in body and not isinstance(body[key], str):
            raise fail(f"{rt.kind}.{key}", body[key], "string")
    meta = body.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise fail(f"{rt.kind}.metadata", meta, "v1.ObjectMeta")
    for key, expected in _META_TYPES.items():
        value: Any = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, expected) or isinstance(value, bool):
            go = _GO_TYPES.get(expected if isinstance(expected, type) else str, "string")
            raise fail(f"{rt.kind}.metadata.{key}", value, go)
        value = _as_any(value)
        if key in ("labels", "annotations") and not all(isinstance(v, str) for v in value.values()):
            raise fail(f"{rt.kind}.metadata.{key}", next(iter(value.values())), "string")
        if key == "finalizers" and not all(isinstance(v, str) for v in value):
            raise fail(f"{rt.kind}.metadata.finalizers", value, "string")
        if key == "ownerReferences" and not all(isinstance(v, dict) for v in value):
            raise fail(f"{rt.kind}.metadata.ownerReferences", value, "v1.OwnerReference")


# Map and slice fields of built-in kinds declared `omitempty` in the Go types: the
# apiserver never shows them empty. (Struct fields such as `resources: {}` stay.)
_OMIT_EMPTY = frozenset(
    {
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "data",
        "binaryData",
        "stringData",
        "matchLabels",
        "matchExpressions",
        "nodeSelector",
        "env",
        "envFrom",
        "volumeMounts",
        "volumes",
        "ports",
        "args",
        "command",
        "imagePullSecrets",
        "tolerations",
        "initContainers",
        "secrets",
        "conditions",
    }
)


def _resets_managed_fields(supplied: Any) -> bool:
    """``managedFields: [{}]``: the documented way to strip an object's managedFields.

    On an update the object is then left without any; on a create the fields
    are tracked afresh, as if none had been sent.
    """
    return isinstance(supplied, list) and len(supplied) == 1 and supplied[0] == {}


def _base64_excess(rt: ResourceType, obj: dict[str, Any]) -> int:
    """How much longer the base64 []byte values of a Secret or ConfigMap are than their bytes."""
    if not rt.builtin or rt.group or rt.kind not in ("Secret", "ConfigMap"):
        return 0
    excess = 0
    values = obj.get("data" if rt.kind == "Secret" else "binaryData")
    for value in values.values() if isinstance(values, dict) else ():
        if isinstance(value, str):
            padding = len(value[-2:]) - len(value[-2:].rstrip("="))
            excess += len(value) - (len(value) // 4 * 3 - padding)
    return excess


def _fold_string_data(secret: dict[str, Any]) -> None:
    """Move ``stringData`` into base64 ``data`` (overriding keys), as the apiserver does."""
    string_data = secret.pop("stringData", None)
    if not isinstance(string_data, dict):
        return
    data = secret.get("data")
    if not isinstance(data, dict):
        data = {}
        secret["data"] = data
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()


def _drop_empty(value: Any) -> None:
    """Remove empty omitempty maps and lists, recursively, in place."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if k in _OMIT_EMPTY and v in ({}, [], None)]:
            del value[key]
        for child in value.values():
            _drop_empty(child)
    elif isinstance(value, list):
        for child in value:
            _drop_empty(child)


def _validate_crd_schemas(crd: dict[str, Any]) -> None:
    """Every served version's schema must be structural (422 otherwise)."""
    causes: list[dict[str, Any]] = []
    for i, version in enumerate((crd.get("spec") or {}).get("versions") or []):
        schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
        if schema is not None:
            causes += validate_crd_schema(schema, f"spec.versions[{i}].schema.openAPIV3Schema")
    if causes:
        raise errors.invalid(
            "CustomResourceDefinition",
            (crd.get("metadata") or {}).get("name", ""),
            causes,
            "apiextensions.k8s.io",
        )


def _for_apply(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object as field management sees it (server-owned metadata left out)."""
    if obj is None:
        return None
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    for field in (*_SERVER_META, "resourceVersion", "managedFields"):
        meta.pop(field, None)
    out["metadata"] = meta
    return out


def _set_condition(obj: dict[str, Any], ctype: str, status: str, reason: str, message: str) -> None:
    conds = obj.setdefault("status", {}).setdefault("conditions", []) or []
    obj["status"]["conditions"] = conds
    for cond in conds:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now()
            cond.update(status=status, reason=reason, message=message)
            return
    conds.append(
        {
            "type": ctype,
            "status": status,
            "lastTransitionTime": now(),
            "reason": reason,
            "message": message,
        }
    )


# Without selfLink, which kube-apiserver no longer sets.
META_ORDER = tuple(field for field in OBJECT_META_FIELDS if field != "selfLink")


def _ordered_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """Objects laid out as the apiserver lays them out (kind, apiVersion, metadata, ...)."""
    meta = obj.get("metadata") or {}
    ordered_meta = {k: meta[k] for k in META_ORDER if k in meta}
    ordered_meta.update({k: v for k, v in meta.items() if k not in ordered_meta})
    out: dict[str, Any] = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion")}
    out["metadata"] = ordered_meta
    out.update({k: v for k, v in obj.items() if k not in out})
    return out


async def _yield_to_loop() -> None:
    """Let other tasks run between garbage-collection passes."""
    await asyncio.sleep(0)


async def _next(queue: asyncio.Queue[Event | None]) -> Event | None:
    return await queue.get()


def _error_event(err: ApiError) -> dict[str, Any]:
    return {"type": "ERROR", "object": err.status()}
