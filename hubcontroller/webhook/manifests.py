"""The manifest rules shared by ManifestWork and ManifestWorkReplicaSet (hub.md §5.1).

Checked in OCM's order, the first failure wins: at least one manifest; the
total size within ``--manifestLimit``; then, manifest by manifest, that it
decodes as an object with a kind, has ``metadata.name``, has no
``metadata.generateName``, and is not a duplicate of an earlier one. Messages
are OCM's, verbatim (the decoder errors in Go's words).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ocmkit.govalues import go_marshal, json_type, protobuf_size

EMPTY_MANIFESTS: Final = "Workload manifests should not be empty"
NAME_REQUIRED: Final = "name must be set in manifest"
GENERATE_NAME_FORBIDDEN: Final = "generateName must not be set in manifest"


@dataclass(frozen=True)
class Manifest:
    """One manifest: its decoded value and its JSON text exactly as received."""

    value: Any
    raw: str

    @property
    def size(self) -> int:
        """What the manifest counts towards the limit (``RawExtension.Size()``).

        The protobuf size of the raw bytes: one tag byte, the length as a
        varint, the bytes; e.g. 300 bytes count 303. A JSON ``null`` leaves the
        RawExtension empty, which counts 0.
        """
        if self.raw == "null":
            return 0
        return protobuf_size(len(self.raw.encode("utf-8", "surrogatepass")))


def manifests_of(values: Sequence[Any], raws: Sequence[str] | None) -> tuple[Manifest, ...]:
    """Pair decoded manifests with their raw texts (re-encoded as Go would when not kept)."""
    if raws is None or len(raws) != len(values):
        raws = [go_marshal(value, sort_keys=False) for value in values]
    return tuple(Manifest(value, raw) for value, raw in zip(values, raws, strict=True))


def manifests_problem(manifests: Sequence[Manifest], limit: int) -> str | None:
    """The first rule of §5.1 ``manifests`` break (size limit ``limit`` bytes), in OCM's words."""
    if not manifests:
        return EMPTY_MANIFESTS
    total = sum(m.size for m in manifests)
    if total > limit:
        return f"the size of manifests is {total} bytes which exceeds the {limit} limit"
    seen: set[str] = set()
    for index, manifest in enumerate(manifests):
        problem = _manifest_problem(manifest)
        if problem is not None:
            return problem
        identity = _identity(manifest.value)
        if isinstance(identity, str):
            return f"failed to extract metadata from manifest at index {index}: {identity}"
        api_version, kind, namespace, name = identity
        # Literal strings: the same object under two apiVersions is not caught (as in OCM).
        key = f"{api_version}/{kind}/{namespace}/{name}"
        if key in seen:
            return (
                f"duplicate manifest for resource {namespace}/{name} "
                f"with resource type {api_version}.{kind}"
            )
        seen.add(key)
    return None


def _manifest_problem(manifest: Manifest) -> str | None:
    """Decoding as ``unstructured.Unstructured`` and the name rules."""
    value = manifest.value
    if manifest.raw == "null":
        # An empty RawExtension: the decoder gets no bytes at all.
        return "unexpected end of JSON input"
    if not isinstance(value, Mapping):
        return (
            f"json: cannot unmarshal {json_type(value)} "
            "into Go value of type map[string]interface {}"
        )
    kind = value.get("kind")
    if not isinstance(kind, str) or not kind:
        return f"Object 'Kind' is missing in '{manifest.raw}'"
    metadata = value.get("metadata")
    if not _nested_string(metadata, "name"):
        return NAME_REQUIRED
    if _nested_string(metadata, "generateName"):
        return GENERATE_NAME_FORBIDDEN
    return None


def _nested_string(metadata: Any, key: str) -> str:
    # unstructured's getters read a wrongly typed field as empty.
    if isinstance(metadata, Mapping):
        value = metadata.get(key)
        if isinstance(value, str):
            return value
    return ""


def _identity(value: Mapping[str, Any]) -> tuple[str, str, str, str] | str:
    """(apiVersion, kind, namespace, name) as Go's decoder reads them into a
    ``PartialObjectMetadata``, or its first type error.

    Go matches keys to fields ignoring case (:func:`_go_field_key`), takes them in
    document order (the last one wins; a second ``metadata`` object adds to the
    first), leaves a field as it is for null, and keeps going after a type error.
    """
    found = {"apiversion": "", "kind": "", "namespace": "", "name": ""}
    errors: list[str] = []

    def read(obj: Mapping[str, Any], fields: Mapping[str, str]) -> None:
        for key, item in obj.items():
            field = _go_field_key(key)
            if field not in fields or item is None:
                continue
            if field == "metadata":
                if isinstance(item, Mapping):
                    read(item, _OBJECT_META)
                else:
                    errors.append(_field_error(item, fields[field], "v1.ObjectMeta"))
            elif isinstance(item, str):
                found[field] = item
            else:
                errors.append(_field_error(item, fields[field]))

    read(value, _PARTIAL_OBJECT_METADATA)
    if errors:
        return errors[0]
    return found["apiversion"], found["kind"], found["namespace"], found["name"]


# Folded key -> the Go struct and field path that type errors name (Go >= 1.24).
_PARTIAL_OBJECT_METADATA: Final = {
    "apiversion": "PartialObjectMetadata.TypeMeta.apiVersion",
    "kind": "PartialObjectMetadata.TypeMeta.kind",
    "metadata": "PartialObjectMetadata.metadata",
}
_OBJECT_META: Final = {
    "name": "ObjectMeta.metadata.name",
    "namespace": "ObjectMeta.metadata.namespace",
}
# The non-ASCII letters whose fold set (Go's foldRune: the smallest rune of it) is an ASCII one.
_GO_FOLDS: Final = str.maketrans({"\u017f": "s", "\u212a": "k"})


def _go_field_key(key: str) -> str:
    """``key`` folded as Go's decoder matches JSON keys to ASCII field names: ASCII case
    ignored, and the two non-ASCII letters that fold to ASCII ones (LONG S, KELVIN SIGN)
    read as those."""
    return "".join(c.lower() if c.isascii() else c for c in key.translate(_GO_FOLDS))


def _field_error(value: Any, field: str, go_type: str = "string") -> str:
    return (
        f"json: cannot unmarshal {json_type(value)} into Go struct field {field} of type {go_type}"
    )
