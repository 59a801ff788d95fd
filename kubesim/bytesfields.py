"""Base64 ``[]byte`` fields of built-in kinds, refused as kube-apiserver refuses them.

Go types such as ``Secret.data`` are ``map[string][]byte``: on the wire each
value is a base64 string, and a string that is not base64 fails the decoding
of the whole request body before any validation runs. How the failure is
answered depends on where the apiserver decodes (facts of kube-apiserver
1.30, from its request handlers; not in the recordings):

- create and update decode the body: 400 BadRequest
  ``Secret in version "v1" cannot be handled as a Secret: illegal base64 data
  at input byte 4``;
- JSON and merge patches decode the patched JSON: 422 Invalid, no kind or
  name, one ``patch`` cause whose value is that JSON;
- strategic merge patches convert the patched map: 422 likewise, the value
  printed as Go prints the patch map, the cause ``error decoding from json:``;
- server-side apply converts the merged object: a plain Go error, so 500
  with no reason.

The offset N is the one Go's ``encoding/base64`` StdEncoding reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

from kubesim.api import META_ORDER
from kubesim.errors import ApiError, go_json
from kubesim.jsonvalues import go_quote

_ADMISSION: Final = "admissionregistration.k8s.io"
_APIEXT: Final = "apiextensions.k8s.io"

# Where each kind holds []byte values: "*" steps into every map value or list item.
BYTES_FIELDS: Final[dict[tuple[str, str], tuple[tuple[str, ...], ...]]] = {
    ("", "Secret"): (("data", "*"),),
    ("", "ConfigMap"): (("binaryData", "*"),),
    (_ADMISSION, "ValidatingWebhookConfiguration"): (
        ("webhooks", "*", "clientConfig", "caBundle"),
    ),
    (_ADMISSION, "MutatingWebhookConfiguration"): (("webhooks", "*", "clientConfig", "caBundle"),),
    (_APIEXT, "CustomResourceDefinition"): (
        ("spec", "conversion", "webhook", "clientConfig", "caBundle"),
    ),
}

_ALPHABET: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES: Final = frozenset(b"\r\n")
_PAD: Final = ord("=")
# Canonical padded base64: the common case, accepted without the byte-wise walk.
_VALID: Final = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
# Go maps (sorted when encoded) among the fields of objects shown in patch errors.
_GO_MAPS: Final = frozenset({"labels", "annotations", "data", "binaryData", "stringData"})


def _corrupt_offset(src: bytes) -> int | None:
    """The offset Go's StdEncoding.Decode reports for ``src``, None when it decodes.

    Go decodes quantum by quantum: CR and LF are skipped anywhere, a byte
    outside the alphabet fails at its own offset, padding must end the input.
    """
    si, n = 0, len(src)
    while si < n:
        j = 0
        while j < 4:
            if si == n:
                # A partial quantum: padded encodings fail at its start.
                return None if j == 0 else si - j
            c = src[si]
            si += 1
            if c in _ALPHABET:
                j += 1
                continue
            if c in _NEWLINES:
                continue
            if c != _PAD or j < 2:
                return si - 1
            if j == 2:
                # "==" is needed; the second one may follow newlines.
                while si < n and src[si] in _NEWLINES:
                    si += 1
                if si == n:
                    return n
                if src[si] != _PAD:
                    return si - 1
                si += 1
            while si < n and src[si] in _NEWLINES:
                si += 1
            return si if si < n else None
    return None


def base64_error(value: str) -> str | None:
    """Go's decoding error for a base64 string, e.g. ``illegal base64 data at input byte 4``."""
    if _VALID.fullmatch(value):
        return None
    offset = _corrupt_offset(value.encode("utf-8", errors="surrogatepass"))
    return None if offset is None else f"illegal base64 data at input byte {offset}"


def _values(obj: Any, path: tuple[str, ...]) -> Iterator[Any]:
    """The values at ``path`` in document order ("*": every map value or list item)."""
    if not path:
        yield obj
        return
    step, rest = path[0], path[1:]
    if step == "*":
        children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else ()
        for child in children:
            yield from _values(child, rest)
    elif isinstance(obj, dict) and step in obj:
        yield from _values(obj[step], rest)


def first_error(group: str, kind: str, obj: Any) -> str | None:
    """The first undecodable []byte value of ``obj`` as Go's decoder words it, or None."""
    paths = BYTES_FIELDS.get((group, kind))
    if paths is None:
        return None
    for path in paths:
        for value in _values(obj, path):
            if isinstance(value, str):
                found = base64_error(value)
                if found is not None:
                    return found
    return None


# -- how the apiserver shows a patched object in the error --------------------------


def _encoded_order(value: dict[str, Any], parent: str) -> list[str]:
    """Keys in the order Go encoded the object: struct fields in order, map keys sorted."""
    if parent in _GO_MAPS:
        return sorted(value)
    if parent == "metadata":
        return [k for k in META_ORDER if k in value] + [k for k in value if k not in META_ORDER]
    return list(value)


def _raw(value: Any, *, parent: str = "") -> str:
    """An untouched subtree as the apiserver encoded it: struct order, Go maps sorted."""
    if isinstance(value, dict):
        keys = _encoded_order(value, parent)
        inner = ",".join(f"{go_json(k, sort=False)}:{_raw(value[k], parent=k)}" for k in keys)
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ",".join(_raw(v) for v in value) + "]"
    return go_json(value, sort=False)


def _merged(value: Any, patch: Any, original: Any) -> str:
    """A merge-patched value as evanphx/json-patch re-encodes it.

    Objects both sides have are merged and re-encoded with sorted keys, as is
    everything the patch brings; what the patch leaves alone keeps its bytes.
    """
    if isinstance(value, dict) and isinstance(patch, dict) and isinstance(original, dict):
        parts = []
        for key in sorted(value):
            if key in patch:
                shown = _merged(value[key], patch[key], original.get(key))
            else:
                shown = _raw(value[key], parent=key)
            parts.append(f"{go_json(key, sort=False)}:{shown}")
        return "{" + ",".join(parts) + "}"
    return go_json(value, sort=True)


def _pointer_parts(pointer: Any) -> tuple[str, ...]:
    if not isinstance(pointer, str):
        return ()
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:])


def _json_patched(value: Any, touched: set[tuple[str, ...]], path: tuple[str, ...] = ()) -> str:
    """A JSON-patched value: containers the operations walk through are re-encoded sorted."""
    if isinstance(value, dict):
        keys = sorted(value) if path in touched else _encoded_order(value, path[-1])
        inner = ",".join(
            f"{go_json(k, sort=False)}:{_json_patched(value[k], touched, (*path, k))}" for k in keys
        )
        return "{" + inner + "}"
    if isinstance(value, list):
        return (
            "["
            + ",".join(_json_patched(v, touched, (*path, str(i))) for i, v in enumerate(value))
            + "]"
        )
    return go_json(value, sort=False)


def patched_json(media: str, original: Any, patch: Any, patched: Any) -> str:
    """The patched object's JSON as the apiserver's JSON or merge patch produced it."""
    if media == "application/merge-patch+json":
        return _merged(patched, patch, original)
    touched: set[tuple[str, ...]] = {()}
    for op in patch if isinstance(patch, list) else ():
        if isinstance(op, dict):
            for pointer in (op.get("path"), op.get("from")):
                parts = _pointer_parts(pointer)
                touched.update(parts[:i] for i in range(1, len(parts)))
    return _json_patched(patched, touched)


def patch_invalid(shown: str, detail: str) -> ApiError:
    """422 for a patch whose result cannot decode: kind and name are empty, the field ``patch``."""
    message = f"Invalid value: {go_quote(shown)}: {detail}"
    return ApiError(
        422,
        "Invalid",
        f' "" is invalid: patch: {message}',
        {"causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}]},
    )
