"""OpenAPI v3 schemas of the built-in kinds, derived from the kubernetes_asyncio models.

kubesim carries no copy of kube-apiserver's generated OpenAPI document, but the
Python client's model classes are generated from it and keep what kubectl and
strict field validation need: each field's JSON name, its type (scalar, list,
map or another model), its description and whether it is required.

Definitions are named ``io.k8s.<package>.<version>.<Type>`` after the model
class (``V1DeploymentSpec`` -> ``io.k8s.v1.DeploymentSpec``); kubectl only
shows the last segment (``<DeploymentSpec>`` in ``kubectl explain``).

Importing the models takes a couple of seconds, so nothing here runs at import
time: :func:`available` loads them on first use (the server calls it off the
event loop).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from collections.abc import Iterable
from types import ModuleType
from typing import Any

_MODELS = "kubernetes_asyncio.client.models"
REF_PREFIX = "#/components/schemas/"
OBJECT_META = "V1ObjectMeta"

# Scalars of the generated client: type name -> schema.
_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    # IntOrString, Quantity-like raw values and RawExtension: anything goes.
    "object": {"x-kubernetes-preserve-unknown-fields": True},
}
_CLASS_NAME = re.compile(
    r"(?P<pkg>(?:[A-Z][a-z0-9]*)*?)(?P<ver>V\d+(?:(?:alpha|beta)\d+)?)(?P<type>[A-Z]\w*)"
)
_WORD = re.compile(r"[A-Z][a-z0-9]*")


@functools.cache
def _load() -> ModuleType | None:
    try:
        return importlib.import_module(_MODELS)
    except ImportError:  # pragma: no cover - kubernetes_asyncio is a dependency
        return None


def loaded() -> bool:
    """Whether the models have been loaded already (so using them is quick)."""
    return _load.cache_info().currsize > 0


def available() -> bool:
    """Load the models (slow the first time); False if the client is not installed."""
    return _load() is not None


def _model(name: str) -> type | None:
    module = _load()
    cls = getattr(module, name, None) if module is not None else None
    return cls if isinstance(cls, type) and hasattr(cls, "openapi_types") else None


def model_for(group: str, version: str, kind: str) -> str | None:
    """The model class name of a built-in kind (``apps``, ``v1``, ``Deployment``)."""
    ver = version[:1].upper() + version[1:]
    # Kinds whose name clashes across groups carry the group: CoreV1Event, EventsV1Event.
    package = (group.partition(".")[0] or "core").capitalize()
    for name in (f"{ver}{kind}", f"{package}{ver}{kind}"):
        if _model(name) is not None:
            return name
    return None


def definition_name(model: str) -> str:
    """The OpenAPI definition name of a model class."""
    m = _CLASS_NAME.fullmatch(model)
    if m is None:
        return f"io.k8s.{model}"
    package = ".".join(w.lower() for w in _WORD.findall(m.group("pkg")))
    if not package.startswith("io.k8s"):
        package = "io.k8s" + (f".{package}" if package else "")
    return f"{package}.{m.group('ver').lower()}.{m.group('type')}"


def ref(model: str) -> str:
    """A ``$ref`` string to the definition of ``model``."""
    return REF_PREFIX + definition_name(model)


def _type_schema(tname: str) -> dict[str, Any]:
    if tname.startswith("list[") and tname.endswith("]"):
        return {"type": "array", "items": _type_schema(tname[5:-1])}
    if tname.startswith("dict(") and tname.endswith(")"):
        value = tname[5:-1].partition(",")[2].strip()
        return {"type": "object", "additionalProperties": _type_schema(value)}
    scalar = _SCALARS.get(tname)
    if scalar is not None:
        return dict(scalar)
    if _model(tname) is not None:
        return {"$ref": ref(tname)}
    return dict(_SCALARS["object"])


def _description(cls: type, attr: str) -> str:
    """The field's description from the generated property's docstring."""
    doc = inspect.getdoc(getattr(cls, attr, None)) or ""
    paragraphs = [p.replace("  # noqa: E501", "").strip() for p in doc.split("\n\n")]
    # "Gets the x of Y." first, ":return: ..." last; the description is in between.
    body = [p for p in paragraphs[1:] if p and not p.startswith(":")]
    return "\n\n".join(body)


@functools.cache
def _config() -> Any:
    return importlib.import_module("kubernetes_asyncio.client.configuration").Configuration()


def _required(cls: type, attr: str) -> bool:
    """Whether the model refuses None for ``attr`` (how the generator marks required)."""
    probe: Any = object.__new__(cls)
    probe.local_vars_configuration = _config()
    try:
        setattr(probe, attr, None)
    except ValueError as exc:
        return "must not be `None`" in str(exc)
    return False


@functools.cache
def _class_schema(model: str) -> dict[str, Any]:
    cls = _model(model)
    assert cls is not None, model
    props: dict[str, Any] = {}
    required: list[str] = []
    types: dict[str, str] = cls.openapi_types  # type: ignore[attr-defined]
    names: dict[str, str] = cls.attribute_map  # type: ignore[attr-defined]
    for attr, tname in types.items():
        schema = _type_schema(tname)
        desc = _description(cls, attr)
        if desc:
            if "$ref" in schema:
                # OpenAPI 3.0 ignores siblings of $ref: wrap it as the apiserver does.
                schema = {"description": desc, "allOf": [schema]}
            else:
                schema["description"] = desc
        props[names[attr]] = schema
        if _required(cls, attr):
            required.append(names[attr])
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _refs(schema: Any) -> Iterable[str]:
    """Model names referenced anywhere in ``schema``."""
    if isinstance(schema, dict):
        target = schema.get("$ref")
        if isinstance(target, str) and target.startswith(REF_PREFIX):
            yield target[len(REF_PREFIX) :]
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


@functools.cache
def _by_definition() -> dict[str, str]:
    """Definition name -> model name, for every model of the client."""
    module = _load()
    if module is None:
        return {}
    return {definition_name(n): n for n in dir(module) if _model(n) is not None}


def definitions(models: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The definitions of ``models`` and of every model they reference, by definition name."""
    out: dict[str, dict[str, Any]] = {}
    pending = [definition_name(m) for m in models]
    lookup = _by_definition()
    while pending:
        name = pending.pop()
        if name in out or name not in lookup:
            continue
        schema = _class_schema(lookup[name])
        out[name] = schema
        pending.extend(r for r in _refs(schema) if r not in out)
    return out
