"""``/openapi/v2`` in protobuf: the gnostic ``openapi.v2.Document`` message kubectl asks for.

kubectl validates kinds whose PATCH operation does not list ``fieldValidation``
(the access reviews, for one) on the client side, with the OpenAPI v2
document, and it accepts that document only as protobuf
(``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``). This module
encodes kubesim's v2 JSON document into that message: the fields kubectl's
validation reads (definitions with their types, properties, items, required
fields, descriptions, ``$ref`` and the ``x-kubernetes-*`` extensions, and the
paths with their operations). Field numbers are those of gnostic's
``OpenAPIv2.proto``; vendor extension values travel as YAML, as gnostic
writes them.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import yaml

#: What clients ask for (Accept)...
MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
#: ...and the Content-Type the apiserver answers with (a "." for the "@", which
#: Go's media type parser would refuse).
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

_VARINT, _FIXED64, _BYTES = 0, 1, 2


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # negative int64 values use ten bytes, as in Go
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class _Message:
    """A protobuf message being written, field by field."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def _key(self, number: int, wire: int) -> None:
        self.buf += _varint(number << 3 | wire)

    def string(self, number: int, value: Any) -> None:
        if isinstance(value, str) and value:
            self.bytes_(number, value.encode())

    def strings(self, number: int, values: Any) -> None:
        for value in values or []:
            if isinstance(value, str):
                self.bytes_(number, value.encode())

    def bytes_(self, number: int, value: bytes) -> None:
        self._key(number, _BYTES)
        self.buf += _varint(len(value)) + value

    def message(self, number: int, value: _Message | None) -> None:
        if value is not None:
            self.bytes_(number, bytes(value.buf))

    def boolean(self, number: int, value: Any) -> None:
        if value is True:
            self._key(number, _VARINT)
            self.buf += b"\x01"

    def integer(self, number: int, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value:
            self._key(number, _VARINT)
            self.buf += _varint(value)

    def double(self, number: int, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            self._key(number, _FIXED64)
            self.buf += struct.pack("<d", float(value))


def _wrap(number: int, inner: _Message) -> _Message:
    """A message whose one field ``number`` holds ``inner`` (gnostic's oneof wrappers)."""
    outer = _Message()
    outer.message(number, inner)
    return outer


def _named(name: str, value: _Message) -> _Message:
    """A gnostic ``Named*`` entry: the name (field 1) and the value (field 2)."""
    entry = _Message()
    entry.string(1, name)
    entry.message(2, value)
    return entry


def _any(value: Any) -> _Message:
    """gnostic's ``Any``: the value as YAML."""
    msg = _Message()
    msg.string(2, yaml.safe_dump(value, default_flow_style=False, sort_keys=False))
    return msg


def _extensions(msg: _Message, number: int, node: Mapping[str, Any]) -> None:
    for key, value in node.items():
        if key.startswith("x-"):
            msg.message(number, _named(key, _any(value)))


def _schema(node: Mapping[str, Any]) -> _Message:
    msg = _Message()
    msg.string(1, node.get("$ref"))
    msg.string(2, node.get("format"))
    msg.string(3, node.get("title"))
    msg.string(4, node.get("description"))
    if "default" in node:
        msg.message(5, _any(node["default"]))
    msg.double(6, node.get("multipleOf"))
    msg.double(7, node.get("maximum"))
    msg.boolean(8, node.get("exclusiveMaximum"))
    msg.double(9, node.get("minimum"))
    msg.boolean(10, node.get("exclusiveMinimum"))
    msg.integer(11, node.get("maxLength"))
    msg.integer(12, node.get("minLength"))
    msg.string(13, node.get("pattern"))
    msg.integer(14, node.get("maxItems"))
    msg.integer(15, node.get("minItems"))
    msg.boolean(16, node.get("uniqueItems"))
    msg.integer(17, node.get("maxProperties"))
    msg.integer(18, node.get("minProperties"))
    msg.strings(19, node.get("required"))
    for value in node.get("enum") or []:
        msg.message(20, _any(value))
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        msg.message(21, _wrap(1, _schema(extra)))
    elif isinstance(extra, bool):
        item = _Message()
        item._key(2, _VARINT)
        item.buf += b"\x01" if extra else b"\x00"
        msg.message(21, item)
    kind = node.get("type")
    if kind:
        types = _Message()
        types.strings(1, kind if isinstance(kind, list) else [kind])
        msg.message(22, types)
    items = node.get("items")
    if isinstance(items, Mapping):
        msg.message(23, _wrap(1, _schema(items)))
    for part in node.get("allOf") or []:
        if isinstance(part, Mapping):
            msg.message(24, _schema(part))
    props = node.get("properties")
    if isinstance(props, Mapping):
        msg.message(25, _named_schemas(props))
    _extensions(msg, 31, node)
    return msg


def _named_schemas(schemas: Mapping[str, Any]) -> _Message:
    """A ``Properties`` or ``Definitions`` message: NamedSchema entries, field 1."""
    msg = _Message()
    for name, schema in schemas.items():
        if isinstance(schema, Mapping):
            msg.message(1, _named(name, _schema(schema)))
    return msg


def _parameter(node: Mapping[str, Any]) -> _Message:
    """A query parameter (the only kind kubesim's operations list)."""
    query = _Message()
    query.boolean(1, node.get("required"))
    query.string(2, node.get("in"))
    query.string(3, node.get("description"))
    query.string(4, node.get("name"))
    nested = node.get("schema")
    schema: Mapping[str, Any] = nested if isinstance(nested, Mapping) else node
    query.string(6, schema.get("type"))
    query.boolean(20, schema.get("uniqueItems"))
    # Parameters item > Parameter (field 2: non-body) > NonBodyParameter (field 3: query).
    return _wrap(1, _wrap(2, _wrap(3, query)))


def _response(node: Mapping[str, Any]) -> _Message:
    response = _Message()
    response.string(1, node.get("description"))
    schema = node.get("schema")
    if not isinstance(schema, Mapping):
        # kubesim's documents are written as v3: the schema sits under content.
        content = node.get("content") or {}
        schema = (content.get("application/json") or {}).get("schema")
    if isinstance(schema, Mapping):
        response.message(2, _wrap(1, _schema(schema)))
    return _wrap(1, response)


def _operation(node: Mapping[str, Any]) -> _Message:
    msg = _Message()
    msg.strings(1, node.get("tags"))
    msg.string(3, node.get("description"))
    msg.string(5, node.get("operationId"))
    msg.strings(6, node.get("produces"))
    msg.strings(7, node.get("consumes"))
    for param in node.get("parameters") or []:
        if isinstance(param, Mapping):
            msg.message(8, _parameter(param))
    responses = _Message()
    for code, response in (node.get("responses") or {}).items():
        if isinstance(response, Mapping):
            responses.message(1, _named(str(code), _response(response)))
    msg.message(9, responses)
    _extensions(msg, 13, node)
    return msg


_OPERATIONS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def encode_document(doc: Mapping[str, Any]) -> bytes:
    """The protobuf bytes of a Swagger 2.0 document given as JSON data."""
    msg = _Message()
    msg.string(1, doc.get("swagger"))
    info = doc.get("info") or {}
    info_msg = _Message()
    info_msg.string(1, info.get("title"))
    info_msg.string(2, info.get("version"))
    msg.message(2, info_msg)
    paths = _Message()
    for path, item in (doc.get("paths") or {}).items():
        path_item = _Message()
        for verb, number in _OPERATIONS.items():
            operation = item.get(verb)
            if isinstance(operation, Mapping):
                path_item.message(number, _operation(operation))
        paths.message(2, _named(path, path_item))
    msg.message(8, paths)
    msg.message(9, _named_schemas(doc.get("definitions") or {}))
    return bytes(msg.buf)
