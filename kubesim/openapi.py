"""OpenAPI v2 and v3 documents, and the schemas strict field validation uses.

kubectl reads ``/openapi/v3`` to decide how to validate (it sends
``fieldValidation=Strict`` when a PATCH operation of the kind lists that
parameter) and to ``explain`` resources. Built-in kinds get schemas derived
from the Python client's models (:mod:`kubesim.openapi_models`), custom
resources their CRD's ``openAPIV3Schema`` with the standard ``apiVersion``,
``kind`` and ObjectMeta ``metadata`` added, as the apiserver publishes them.

Patch operations deliberately list no request body media types: kubectl then
computes strategic merge patches from its compiled-in types (with the right
merge keys) instead of from these schemas, which lack patch strategies.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from kubesim import openapi_models as models
from kubesim import openapi_v2proto
from kubesim.openapi_fields import FieldChecker
from kubesim.resources import Registry, ResourceType

_INFO = {"title": "Kubernetes", "version": "v1.30.0"}
_V3_PREFIX = models.REF_PREFIX
_V2_PREFIX = "#/definitions/"
_QUERY = {
    "fieldValidation": (
        "fieldValidation instructs the server on how to handle objects in the request "
        "containing unknown or duplicate fields. Valid values are: Ignore, Warn (the "
        "default) and Strict."
    ),
    "fieldManager": "fieldManager is a name associated with the actor or entity making changes.",
    "dryRun": "When present, indicates that modifications should not be persisted.",
}


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _gvk(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _custom_name(rt: ResourceType) -> str:
    """Definition name of a custom resource: reversed group, as the apiserver names it."""
    reverse = ".".join(reversed(rt.group.split("."))) if rt.group else "core"
    return f"{reverse}.{rt.version}.{rt.kind}"


def _standard_fields() -> dict[str, Any]:
    """apiVersion, kind and metadata as every built-in kind declares them."""
    fields: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }
    if models.available():
        meta = models.definitions(["V1ConfigMap"]).get(models.definition_name("V1ConfigMap"))
        if meta is not None:
            for name in fields:
                fields[name] = copy.deepcopy(meta["properties"][name])
    return fields


def _custom_schema(rt: ResourceType) -> dict[str, Any]:
    """The published schema of a custom resource version."""
    if rt.schema is not None:
        out: dict[str, Any] = copy.deepcopy(dict(rt.schema))
    else:
        out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    out["type"] = "object"
    props = out.setdefault("properties", {})
    props.update(_standard_fields())
    out["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return out


@dataclass
class _Entry:
    """The schemas of one resource type: its root schema, by name, and the definitions."""

    name: str
    root: dict[str, Any]
    definitions: dict[str, dict[str, Any]]


def _entry(rt: ResourceType) -> _Entry | None:
    if rt.builtin:
        model = models.model_for(rt.group, rt.version, rt.kind) if models.available() else None
        if model is None:
            return None
        defs = models.definitions([model])
        name = models.definition_name(model)
        root = dict(defs[name])
        root["x-kubernetes-group-version-kind"] = [_gvk(rt)]
        defs[name] = root
        return _Entry(name, root, defs)
    defs = models.definitions([models.OBJECT_META]) if models.available() else {}
    name = _custom_name(rt)
    root = _custom_schema(rt)
    return _Entry(name, root, {**defs, name: root})


def _parameters() -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "in": "query",
            "description": text,
            "schema": {"type": "string", "uniqueItems": True},
        }
        for name, text in _QUERY.items()
    ]


def _paths(rt: ResourceType, ref: str) -> dict[str, Any]:
    """The collection and item paths of ``rt`` with the operations kubectl inspects."""
    base = "/" + _gv_path(rt.group, rt.version)
    coll = (
        f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    )
    response = {
        "200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}
    }

    def op(verb: str, write: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "operationId": f"{verb}{rt.kind}",
            "x-kubernetes-group-version-kind": _gvk(rt),
            "responses": response,
        }
        if write:
            out["parameters"] = _parameters()
        return out

    if rt.only_create:
        # Reviews (SubjectAccessReview...) are only ever created.
        return {coll: {"post": op("create", True)}}
    return {
        coll: {"get": op("list", False), "post": op("create", True)},
        f"{coll}/{{name}}": {
            "get": op("read", False),
            "put": op("replace", True),
            "patch": op("patch", True),
            "delete": op("delete", False),
        },
    }


def _served(registry: Registry, group: str, version: str) -> list[ResourceType]:
    return [rt for rt in registry if rt.group == group and rt.version == version]


def _build_v3(types: list[ResourceType]) -> bytes:
    """The v3 document of one group version's types."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    roots: dict[str, Any] = {}
    for rt in types:
        entry = _entry(rt)
        if entry is None:
            name = f"io.k8s.kubesim.{rt.group or 'core'}.{rt.version}.{rt.kind}"
            roots[name] = {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-group-version-kind": [_gvk(rt)],
            }
        else:
            name = entry.name
            schemas.update(entry.definitions)
            roots[name] = entry.root
        paths.update(_paths(rt, _V3_PREFIX + name))
    # Roots last: another kind's definitions may hold the same model without its GVK.
    schemas.update(roots)
    doc = {
        "openapi": "3.0.0",
        "info": _INFO,
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


class Documents:
    """The OpenAPI documents and field checkers of one registry.

    Both are cached per group version (or type) until the served types change:
    a CRD change replaces its ResourceType objects, so identity tells staleness.
    """

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        # (group, version) -> (the types it was built from, body, hash)
        self._docs: dict[tuple[str, str], tuple[list[ResourceType], bytes, str]] = {}
        # (group, version, plural) -> (the type, its checker)
        self._checkers: dict[tuple[str, str, str], tuple[ResourceType, FieldChecker | None]] = {}

    def _v3(self, group: str, version: str) -> tuple[bytes, str] | None:
        types = _served(self.registry, group, version)
        if not types:
            return None
        cached = self._docs.get((group, version))
        if (
            cached is not None
            and len(cached[0]) == len(types)
            and all(a is b for a, b in zip(cached[0], types, strict=True))
        ):
            return cached[1], cached[2]
        body = _build_v3(types)
        digest = hashlib.sha512(body).hexdigest()[:128].upper()
        self._docs[(group, version)] = (types, body, digest)
        return body, digest

    def v3_index(self) -> dict[str, Any]:
        """``/openapi/v3``: one entry per served group version, with its document's hash."""
        index: dict[str, Any] = {}
        for group, versions in self.registry.group_versions().items():
            for version in versions:
                built = self._v3(group, version)
                if built is not None:
                    gv = _gv_path(group, version)
                    index[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={built[1]}"}
        return {"paths": index}

    def v3_document(self, path: str) -> bytes | None:
        """The JSON body of ``/openapi/v3/api/v1`` or ``/openapi/v3/apis/{group}/{version}``."""
        parts = path.strip("/").split("/")[2:]
        if len(parts) == 2 and parts[0] == "api":
            built = self._v3("", parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            built = self._v3(parts[1], parts[2])
        else:
            return None
        return None if built is None else built[0]

    def v2_document(self) -> bytes:
        """``/openapi/v2`` as JSON: every served group version's definitions and paths."""
        paths: dict[str, Any] = {}
        definitions: dict[str, Any] = {}
        for group, versions in self.registry.group_versions().items():
            for version in versions:
                built = self._v3(group, version)
                if built is None:
                    continue
                doc = json.loads(built[0].decode().replace(_V3_PREFIX, _V2_PREFIX))
                definitions.update(doc["components"]["schemas"])
                paths.update(doc["paths"])
        doc = {"swagger": "2.0", "info": _INFO, "paths": paths, "definitions": definitions}
        return json.dumps(doc, separators=(",", ":")).encode()

    def v2_protobuf(self) -> bytes:
        """``/openapi/v2`` as protobuf, for kubectl's client-side validation.

        Only the kinds kubectl validates on the client (those with no PATCH
        operation listing ``fieldValidation``: the access reviews) keep their
        ``x-kubernetes-group-version-kind``. kubectl also computes strategic
        merge patches from any v2 definition it finds for a kind, and kubesim's
        definitions carry no patch strategies: without the extension it uses its
        compiled-in types for those, as it does against kubesim's JSON-only v2.
        """
        doc = json.loads(self.v2_document())
        validated = {(rt.group, rt.version, rt.kind) for rt in self.registry if rt.only_create}
        for definition in doc["definitions"].values():
            gvks = definition.get("x-kubernetes-group-version-kind") or []
            if not any(
                (g.get("group"), g.get("version"), g.get("kind")) in validated for g in gvks
            ):
                definition.pop("x-kubernetes-group-version-kind", None)
        return openapi_v2proto.encode_document(doc)

    def checker(self, rt: ResourceType) -> FieldChecker | None:
        """A field checker for objects of ``rt``, or None when no schema is known."""
        key = (rt.group, rt.version, rt.plural)
        cached = self._checkers.get(key)
        if cached is not None and cached[0] is rt:
            return cached[1]
        entry = _entry(rt)
        found = None
        if entry is not None:
            meta = entry.definitions.get(models.definition_name(models.OBJECT_META))
            found = FieldChecker(entry.root, entry.definitions, meta)
        self._checkers[key] = (rt, found)
        return found


def accepts_json(accept: str) -> bool:
    """Whether an Accept header allows a JSON answer (empty: anything goes)."""
    if not accept.strip():
        return True
    kinds = [part.split(";")[0].strip() for part in accept.split(",")]
    return any(k in ("application/json", "*/*", "application/*") for k in kinds)
