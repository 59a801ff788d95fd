"""Annotations that carry CRD schema facts on model fields.

Each marker is used inside ``typing.Annotated``. :mod:`schemas.crdgen` reads
them to write the OpenAPI schema; the ones that correspond to a check the API
server makes (pattern, list-map keys, int-or-string, embedded resources, the
``byte`` format) also enforce it when a model is validated, so a model accepts
what the CRD accepts.

Length and range limits use :mod:`annotated_types` (``MinLen``, ``MaxLen``,
``Ge``, ``Le``), which pydantic enforces natively.
"""

from __future__ import annotations

import base64
import binascii
import re
import types
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "AtomicList",
    "AtomicMap",
    "CELRule",
    "CRDRequired",
    "Default",
    "EmbeddedResource",
    "Format",
    "GoDuration",
    "IntOrString",
    "ListMap",
    "Nullable",
    "Pattern",
    "PreserveUnknownFields",
    "unwrap",
]


@dataclass(frozen=True)
class Default:
    """The CRD ``default`` (applied by the API server when the field is absent)."""

    value: Any


@dataclass(frozen=True)
class CRDRequired:
    """Listed under ``required`` in the CRD although the model has a default.

    Used where the CRD both requires a field and defaults it: the API server
    defaults before it validates, so an absent value is never an error.
    """


@dataclass(frozen=True)
class GoDuration:
    """A ``metav1.Duration``: a string Go's ``time.ParseDuration`` reads.

    The CRD says ``string`` only, as OCM's does; the hub's webhook refuses
    what OCM's Go decoder cannot read (``hubcontroller.webhook.godecode``).
    """


@dataclass(frozen=True)
class Nullable:
    """``nullable: true``: an explicit ``null`` is kept instead of dropped."""


@dataclass(frozen=True)
class AtomicList:
    """``x-kubernetes-list-type: atomic``."""


@dataclass(frozen=True)
class AtomicMap:
    """``x-kubernetes-map-type: atomic``."""


@dataclass(frozen=True)
class PreserveUnknownFields:
    """``x-kubernetes-preserve-unknown-fields: true`` (the value is kept as is)."""


@dataclass(frozen=True)
class CELRule:
    """One ``x-kubernetes-validations`` entry of an object schema.

    Models list these in a ``crd_validations`` class variable and implement
    the same check in Python, so both sides reject the same objects.
    """

    rule: str
    message: str


@dataclass(frozen=True)
class Pattern:
    """``pattern``: the string must contain a match (OpenAPI search semantics)."""

    regex: str
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", re.compile(self.regex))

    def matches(self, value: str) -> bool:
        """Whether ``value`` satisfies the pattern."""
        return self._compiled.search(value) is not None

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def check(value: str) -> str:
            if not self.matches(value):
                raise PydanticCustomError(
                    "pattern_mismatch", "must match the pattern {pattern}", {"pattern": self.regex}
                )
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))


_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


@dataclass(frozen=True)
class Format:
    """OpenAPI ``format``.

    ``byte`` (base64) is checked as the API server checks it; ``int32`` and
    ``int64`` are not range-checked, as the API server does not check them.
    """

    name: Literal["int32", "int64", "byte"]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        inner = handler(source)
        if self.name != "byte":
            return inner

        def check(value: str) -> str:
            try:
                ok = _BASE64.match(value) is not None and len(value) % 4 == 0
                if ok:
                    base64.b64decode(value, validate=True)
            except binascii.Error:
                ok = False
            if not ok:
                raise PydanticCustomError("format_byte", "must be base64-encoded data")
            return value

        return core_schema.no_info_after_validator_function(check, inner)


@dataclass(frozen=True)
class IntOrString:
    """``x-kubernetes-int-or-string``: an integer, or a string matching ``pattern``.

    As in OpenAPI, ``pattern`` only constrains the string form. Use it on an
    ``int | str`` annotation; the value keeps the type it arrived with.
    """

    pattern: str | None = None

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        rx = Pattern(self.pattern) if self.pattern is not None else None

        def check(value: Any) -> int | str:
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise PydanticCustomError("int_or_string_type", "must be an integer or a string")
            if isinstance(value, str) and rx is not None and not rx.matches(value):
                raise PydanticCustomError(
                    "pattern_mismatch", "must match the pattern {pattern}", {"pattern": rx.regex}
                )
            return value

        return core_schema.no_info_plain_validator_function(check)


@dataclass(frozen=True)
class ListMap:
    """``x-kubernetes-list-type: map`` keyed by ``keys`` (JSON names).

    Two items with the same key values make the list invalid, as on the API
    server (after defaulting, so a defaulted key counts).
    """

    keys: tuple[str, ...]

    def __init__(self, *keys: str) -> None:
        object.__setattr__(self, "keys", keys)

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        keys = self.keys

        def check(items: list[Any]) -> list[Any]:
            seen: dict[tuple[Any, ...], int] = {}
            for i, item in enumerate(items):
                ident = tuple(_wire_value(item, k) for k in keys)
                if ident in seen:
                    shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, ident, strict=True))
                    raise PydanticCustomError(
                        "list_map_duplicate",
                        "duplicate entry ({key}); already at index {first}",
                        {"key": shown, "first": seen[ident], "index": i},
                    )
                seen[ident] = i
            return items

        return core_schema.no_info_after_validator_function(check, handler(source))


def _wire_value(item: Any, json_name: str) -> Any:
    """The value of the field serialised as ``json_name`` on a model or dict item."""
    if isinstance(item, BaseModel):
        for name, info in type(item).model_fields.items():
            if (info.serialization_alias or info.alias or name) == json_name:
                value = getattr(item, name)
                return getattr(value, "value", value)  # enum members compare by value
        return (item.model_extra or {}).get(json_name)
    if isinstance(item, dict):
        return item.get(json_name)
    return None


_KIND = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class EmbeddedResource:
    """``x-kubernetes-embedded-resource``: a whole Kubernetes object kept raw.

    Checked as the API server checks embedded resources: ``apiVersion`` and
    ``kind`` must be non-empty strings (kind a DNS-1035 label in any case, at
    most 63 characters; at most one ``/`` in apiVersion), and ``metadata``, if
    given, must be an object. Everything else is preserved unvalidated.
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(_check_embedded, handler(source))


def _check_embedded(obj: dict[str, Any]) -> dict[str, Any]:
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if value is None or value == "":
            raise PydanticCustomError("embedded_required", "{key} is required", {"key": key})
        if not isinstance(value, str):
            raise PydanticCustomError("embedded_type", "{key} must be a string", {"key": key})
    api_version, kind = obj["apiVersion"], obj["kind"]
    if api_version.count("/") > 1:
        raise PydanticCustomError(
            "embedded_api_version", "apiVersion must be group/version or version"
        )
    if len(kind) > 63 or not _KIND.match(kind.lower()):
        raise PydanticCustomError(
            "embedded_kind",
            "kind must be at most 63 letters, digits and '-', starting with a letter",
        )
    if "metadata" in obj and not isinstance(obj["metadata"], dict):
        raise PydanticCustomError("embedded_metadata", "metadata must be an object")
    return obj


def unwrap(tp: Any, markers: list[Any]) -> tuple[Any, list[Any]]:
    """Strip ``Annotated`` and ``| None`` layers of a field type, collecting their markers."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            base, *extra = get_args(tp)
            markers = [*markers, *extra]
            tp = base
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) == len(get_args(tp)) or len(members) != 1:
                return tp, markers  # a real union (int | str)
            tp = members[0]
        else:
            return tp, markers
