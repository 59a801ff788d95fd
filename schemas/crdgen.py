"""CustomResourceDefinitions generated from the models.

The OpenAPI schema of each CRD is derived from a model's fields: their
types, the :mod:`schemas.markers` annotations, ``annotated_types`` limits and
docstrings. Output is deterministic (keys sorted, as controller-gen writes
them) so the committed files can be checked for staleness byte by byte.
"""

from __future__ import annotations

import inspect
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from annotated_types import Ge, Le, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from schemas.base import WireModel
from schemas.markers import (
    AtomicList,
    AtomicMap,
    CRDRequired,
    Default,
    EmbeddedResource,
    Format,
    IntOrString,
    ListMap,
    Nullable,
    Pattern,
    PreserveUnknownFields,
    unwrap,
)
from schemas.meta import KubeObject
from schemas.registry import KINDS

__all__ = ["crd_file_name", "crd_for", "dump_yaml", "render_all", "write_crds"]

Schema = dict[str, Any]

_API_VERSION_DOC = (
    "The versioned schema of this object, as group/version. Servers may convert\n"
    "recognised schemas to the latest internal value and reject unknown ones."
)
_KIND_DOC = (
    "The REST resource type of this object, in CamelCase, inferred from the\n"
    "endpoint the client sends requests to. Cannot be updated."
)


def crd_for(model: type[KubeObject]) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of ``model``."""
    info = model.api_resource
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": info.list_kind,
        "plural": info.plural,
        "singular": info.singular,
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    version: dict[str, Any] = {
        "name": info.version,
        "schema": {"openAPIV3Schema": _object_schema(model, top=True)},
        "served": True,
        "storage": True,
    }
    if "status" in model.model_fields:
        version["subresources"] = {"status": {}}
    if info.printer_columns:
        version["additionalPrinterColumns"] = [
            {"jsonPath": c.json_path, "name": c.name, "type": c.type} for c in info.printer_columns
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.crd_name},
        "spec": {
            "group": info.group,
            "names": names,
            "preserveUnknownFields": False,
            "scope": info.scope,
            "versions": [version],
        },
    }


def crd_file_name(model: type[KubeObject]) -> str:
    """``<group>_<plural>.yaml``."""
    return f"{model.api_resource.group}_{model.api_resource.plural}.yaml"


def render_all() -> dict[str, str]:
    """Every CRD as YAML text, by file name."""
    return {crd_file_name(m): dump_yaml(crd_for(m)) for m in KINDS}


def write_crds(out: Path) -> list[Path]:
    """Write every CRD into ``out`` (created if needed); return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_all().items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# ---------------------------------------------------------------------------
# Schema derivation
# ---------------------------------------------------------------------------


def _doc(cls: type) -> str | None:
    raw = cls.__dict__.get("__doc__")
    return _plain_text(inspect.cleandoc(raw)) if isinstance(raw, str) and raw.strip() else None


def _plain_text(doc: str) -> str:
    """A docstring as CRD text: reST double-backtick literals lose their markup."""
    return doc.replace("``", "")


def _json_name(name: str, info: FieldInfo) -> str:
    alias = info.serialization_alias or info.alias
    return alias if isinstance(alias, str) else name


def _object_schema(model: type[BaseModel], *, top: bool = False) -> Schema:
    props: dict[str, Schema] = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        json_name = _json_name(name, info)
        if top and json_name in ("apiVersion", "kind", "metadata"):
            props[json_name] = _top_level(json_name)
            continue
        node, markers = _field_schema(info.annotation, list(info.metadata))
        if info.description:
            node["description"] = _plain_text(info.description)
        props[json_name] = node
        if info.is_required() or any(isinstance(m, CRDRequired) for m in markers):
            required.append(json_name)
    out: Schema = {"type": "object", "properties": props}
    doc = _doc(model)
    if doc:
        out["description"] = doc
    if required:
        out["required"] = sorted(required)
    rules = model.crd_validations if issubclass(model, WireModel) else ()
    if rules:
        out["x-kubernetes-validations"] = [{"message": r.message, "rule": r.rule} for r in rules]
    return out


def _top_level(json_name: str) -> Schema:
    if json_name == "apiVersion":
        return {"description": _API_VERSION_DOC, "type": "string"}
    if json_name == "kind":
        return {"description": _KIND_DOC, "type": "string"}
    return {"type": "object"}


def _field_schema(tp: Any, markers: list[Any]) -> tuple[Schema, list[Any]]:
    core, markers = unwrap(tp, markers)
    node = _type_schema(core, markers)
    _apply_markers(node, markers)
    return node, markers


def _type_schema(core: Any, markers: list[Any]) -> Schema:
    int_or_string = next((m for m in markers if isinstance(m, IntOrString)), None)
    if int_or_string is not None:
        node: Schema = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        node["x-kubernetes-int-or-string"] = True
        if int_or_string.pattern is not None:
            node["pattern"] = int_or_string.pattern
        return node
    origin = get_origin(core)
    if isinstance(core, type) and issubclass(core, BaseModel):
        return _object_schema(core)
    if isinstance(core, type) and issubclass(core, Enum):
        return {"type": "string", "enum": [m.value for m in core]}
    if core is datetime:
        return {"type": "string", "format": "date-time"}
    if core is str or origin is Literal:
        return {"type": "string"}
    if core is bool:
        return {"type": "boolean"}
    if core is int:
        return {"type": "integer"}
    if origin is list:
        (item,) = get_args(core)
        items, _ = _field_schema(item, [])
        return {"type": "array", "items": items}
    if origin is dict:
        _, value = get_args(core)
        if value is Any:
            return {"type": "object"}
        additional, _ = _field_schema(value, [])
        return {"type": "object", "additionalProperties": additional}
    raise TypeError(f"no CRD schema for type {core!r}")


def _apply_markers(node: Schema, markers: list[Any]) -> None:
    is_array = node.get("type") == "array"
    for m in markers:
        if isinstance(m, Pattern):
            node["pattern"] = m.regex
        elif isinstance(m, Format):
            node["format"] = m.name
        elif isinstance(m, MinLen):
            node["minItems" if is_array else "minLength"] = m.min_length
        elif isinstance(m, MaxLen):
            node["maxItems" if is_array else "maxLength"] = m.max_length
        elif isinstance(m, Ge):
            node["minimum"] = m.ge
        elif isinstance(m, Le):
            node["maximum"] = m.le
        elif isinstance(m, Default):
            node["default"] = _plain(m.value)
        elif isinstance(m, Nullable):
            node["nullable"] = True
        elif isinstance(m, AtomicList):
            node["x-kubernetes-list-type"] = "atomic"
        elif isinstance(m, ListMap):
            node["x-kubernetes-list-type"] = "map"
            node["x-kubernetes-list-map-keys"] = list(m.keys)
        elif isinstance(m, AtomicMap):
            node["x-kubernetes-map-type"] = "atomic"
        elif isinstance(m, EmbeddedResource):
            node["x-kubernetes-embedded-resource"] = True
        elif isinstance(m, PreserveUnknownFields):
            node["x-kubernetes-preserve-unknown-fields"] = True


def _plain(value: Any) -> Any:
    """A default value as plain YAML data (enum members as their strings)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------------------
# YAML output
# ---------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings, so descriptions stay readable."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """``data`` as YAML with sorted keys, block style and no line wrapping."""
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )
