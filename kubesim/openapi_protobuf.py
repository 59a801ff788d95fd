"""Kubernetes protobuf request bodies, decoded for the few kinds kubectl sends that way.

``kubectl create rolebinding`` and ``kubectl create clusterrolebinding`` use a
typed client that encodes the request body as
``application/vnd.kubernetes.protobuf`` (while accepting JSON answers). The
wire format is the magic ``k8s\\0`` followed by a ``runtime.Unknown`` message
holding the TypeMeta and the object's own message. This module decodes those
objects into the JSON form the rest of kubesim works with, for the RBAC kinds
(field numbers from the ``generated.proto`` files of k8s.io/api and
k8s.io/apimachinery); anything else is reported as unsupported.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


@dataclass(frozen=True)
class Field:
    """One message field: JSON name, type (scalar name, ``map``, ``time`` or a message)."""

    name: str
    type: str | Message
    repeated: bool = False


Message = dict[int, Field]


class ProtobufError(ValueError):
    """The body is not a protobuf object kubesim can decode."""


_LABEL_REQUIREMENT: Message = {
    1: Field("key", "string"),
    2: Field("operator", "string"),
    3: Field("values", "string", True),
}
_LABEL_SELECTOR: Message = {
    1: Field("matchLabels", "map"),
    2: Field("matchExpressions", _LABEL_REQUIREMENT, True),
}
_OWNER_REFERENCE: Message = {
    1: Field("kind", "string"),
    3: Field("name", "string"),
    4: Field("uid", "string"),
    5: Field("apiVersion", "string"),
    6: Field("controller", "bool"),
    7: Field("blockOwnerDeletion", "bool"),
}
_OBJECT_META: Message = {
    1: Field("name", "string"),
    2: Field("generateName", "string"),
    3: Field("namespace", "string"),
    4: Field("selfLink", "string"),
    5: Field("uid", "string"),
    6: Field("resourceVersion", "string"),
    7: Field("generation", "int"),
    8: Field("creationTimestamp", "time"),
    9: Field("deletionTimestamp", "time"),
    10: Field("deletionGracePeriodSeconds", "int"),
    11: Field("labels", "map"),
    12: Field("annotations", "map"),
    13: Field("ownerReferences", _OWNER_REFERENCE, True),
    14: Field("finalizers", "string", True),
}
_SUBJECT: Message = {
    1: Field("kind", "string"),
    2: Field("apiGroup", "string"),
    3: Field("name", "string"),
    4: Field("namespace", "string"),
}
_ROLE_REF: Message = {
    1: Field("apiGroup", "string"),
    2: Field("kind", "string"),
    3: Field("name", "string"),
}
_POLICY_RULE: Message = {
    1: Field("verbs", "string", True),
    2: Field("apiGroups", "string", True),
    3: Field("resources", "string", True),
    4: Field("resourceNames", "string", True),
    5: Field("nonResourceURLs", "string", True),
}
_BINDING: Message = {
    1: Field("metadata", _OBJECT_META),
    2: Field("subjects", _SUBJECT, True),
    3: Field("roleRef", _ROLE_REF),
}
_ROLE: Message = {
    1: Field("metadata", _OBJECT_META),
    2: Field("rules", _POLICY_RULE, True),
    3: Field("aggregationRule", {1: Field("clusterRoleSelectors", _LABEL_SELECTOR, True)}),
}
_RBAC = "rbac.authorization.k8s.io/v1"
KINDS: dict[tuple[str, str], Message] = {
    (_RBAC, "RoleBinding"): _BINDING,
    (_RBAC, "ClusterRoleBinding"): _BINDING,
    (_RBAC, "Role"): _ROLE,
    (_RBAC, "ClusterRole"): _ROLE,
}
_TYPE_META: Message = {1: Field("apiVersion", "string"), 2: Field("kind", "string")}
_UNKNOWN: Message = {
    1: Field("typeMeta", _TYPE_META),
    2: Field("raw", "bytes"),
    3: Field("contentEncoding", "string"),
    4: Field("contentType", "string"),
}
_TIME: Message = {1: Field("seconds", "int"), 2: Field("nanos", "int")}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varints and fixed, bytes for length-delimited."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            out.append((number, data[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            out.append((number, int.from_bytes(data[pos : pos + width], "little")))
            pos += width
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _value(ftype: str | Message, raw: int | bytes) -> Any:
    if isinstance(ftype, dict):
        return _message(ftype, _bytes(raw))
    if ftype == "string":
        return _bytes(raw).decode("utf-8", errors="replace")
    if ftype == "bytes":
        return _bytes(raw)
    if ftype == "bool":
        return bool(raw)
    if ftype == "int":
        return _signed(raw) if isinstance(raw, int) else 0
    if ftype == "time":
        seconds = _message(_TIME, _bytes(raw)).get("seconds", 0)
        if not seconds:
            return None
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    raise ProtobufError(f"unknown field type {ftype}")


def _bytes(raw: int | bytes) -> bytes:
    if not isinstance(raw, bytes):
        raise ProtobufError("expected a length-delimited field")
    return raw


def _message(spec: Message, data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, raw in _fields(data):
        field = spec.get(number)
        if field is None:
            continue  # a field kubesim does not model: skip, as older decoders do
        if field.type == "map":
            entry = _message({1: Field("key", "string"), 2: Field("value", "string")}, _bytes(raw))
            out.setdefault(field.name, {})[entry.get("key", "")] = entry.get("value", "")
        elif field.repeated:
            out.setdefault(field.name, []).append(_value(field.type, raw))
        else:
            out[field.name] = _value(field.type, raw)
    # Go's omitempty: generated messages always carry empty strings and zeros.
    return {k: v for k, v in out.items() if v not in ("", 0, None) or isinstance(v, bool)}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object of one of :data:`KINDS`."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf prefix")
    envelope = _message(_UNKNOWN, body[len(MAGIC) :])
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    spec = KINDS.get((api_version, kind))
    if spec is None:
        raise ProtobufError(f"no protobuf decoding for {api_version}, Kind={kind}")
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    obj.update(_message(spec, envelope.get("raw", b"")))
    return obj
