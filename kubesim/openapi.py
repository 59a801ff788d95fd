"""Minimal OpenAPI v2 and v3 documents, enough for an unmodified kubectl."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kubesim.resources import Registry, ResourceType

_INFO = {"title": "Kubernetes", "version": "v1.30.0"}


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _gvk_ext(rt: ResourceType) -> list[dict[str, str]]:
    return [{"group": rt.group, "version": rt.version, "kind": rt.kind}]


def _definition_name(rt: ResourceType) -> str:
    group = rt.group or "core"
    return f"io.k8s.kubesim.{group}.{rt.version}.{rt.kind}"


def _schema(rt: ResourceType) -> dict[str, Any]:
    if rt.schema is not None:
        out = json.loads(json.dumps(rt.schema))
    else:
        out = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    out["x-kubernetes-group-version-kind"] = _gvk_ext(rt)
    return out


def _paths(types: list[ResourceType], ref_prefix: str) -> dict[str, Any]:
    """Path items carrying the fieldValidation parameter kubectl looks for."""
    paths: dict[str, Any] = {}
    params = [
        {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": True},
        {"name": "fieldManager", "in": "query", "type": "string", "uniqueItems": True},
        {"name": "dryRun", "in": "query", "type": "string", "uniqueItems": True},
    ]
    for rt in types:
        base = "/" + _gv_path(rt.group, rt.version)
        coll = (
            f"{base}/namespaces/{{namespace}}/{rt.plural}"
            if rt.namespaced
            else f"{base}/{rt.plural}"
        )
        ref = {"$ref": f"{ref_prefix}{_definition_name(rt)}"}
        op = {
            "x-kubernetes-group-version-kind": _gvk_ext(rt)[0],
            "parameters": params,
            "responses": {"200": {"description": "OK", "schema": ref}},
        }
        paths[coll] = {"post": dict(op, operationId=f"create{rt.kind}")}
        paths[f"{coll}/{{name}}"] = {
            "put": dict(op, operationId=f"replace{rt.kind}"),
            "patch": dict(op, operationId=f"patch{rt.kind}"),
        }
    return paths


def document(registry: Registry, path: str, query: Mapping[str, str]) -> dict[str, Any] | None:
    """The document served at ``path`` (``/openapi/v2``, ``/openapi/v3[/...]``)."""
    types = [rt for rt in registry if not rt.only_create]
    if path == "/openapi/v2":
        return {
            "swagger": "2.0",
            "info": _INFO,
            "paths": _paths(types, "#/definitions/"),
            "definitions": {_definition_name(rt): _schema(rt) for rt in types},
        }
    if path == "/openapi/v3":
        index: dict[str, Any] = {}
        for group, versions in registry.group_versions().items():
            for version in versions:
                gv = _gv_path(group, version)
                digest = (
                    hashlib.sha256(
                        json.dumps(_v3(registry, group, version), sort_keys=True).encode()
                    )
                    .hexdigest()[:32]
                    .upper()
                )
                index[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
        return {"paths": index}
    prefix = "/openapi/v3/"
    if path.startswith(prefix):
        parts = path[len(prefix) :].split("/")
        if parts[0] == "api" and len(parts) == 2:
            return _v3(registry, "", parts[1])
        if parts[0] == "apis" and len(parts) == 3:
            return _v3(registry, parts[1], parts[2])
    return None


def _v3(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = [
        rt for rt in registry if rt.group == group and rt.version == version and not rt.only_create
    ]
    if not types:
        return None
    return {
        "openapi": "3.0.0",
        "info": _INFO,
        "paths": _paths(types, "#/components/schemas/"),
        "components": {"schemas": {_definition_name(rt): _schema(rt) for rt in types}},
    }
