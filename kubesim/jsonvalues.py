"""Decoded JSON values as the apiserver's Go code sees them: equality, type names,
lookup, null pruning and Go's quoting of strings.

One home for what several kubesim modules need; kubesim keeps these apart from
``ocmkit`` on purpose (it is the cluster the programs are tested against, so it
shares none of their code).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but, unlike Python's ``==``, ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def schema_type(value: Any) -> str:
    """The OpenAPI type of a value (``integer`` and ``number`` apart), as schema errors name it."""
    if value is None:
        return "null"
    return next((name for kind, name in _SCHEMA_TYPES if isinstance(value, kind)), "object")


# Checked in order: a bool is also an int.
_SCHEMA_TYPES: Final = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
)


def unmarshal_kind(value: Any) -> str:
    """The JSON type name Go's encoding/json uses in "cannot unmarshal X into ..." errors."""
    kind = schema_type(value)
    return _UNMARSHAL_KINDS.get(kind, kind)


_UNMARSHAL_KINDS: Final = {"boolean": "bool", "integer": "number"}


def dig(obj: Any, *path: str) -> Any:
    """The value at ``path`` of nested objects; None where a step is missing or no object."""
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def prune_nulls(value: Any) -> Any:
    """``value`` without null object members at any depth (a merge patch never stores them)."""
    if isinstance(value, dict):
        return {k: prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """``strconv.Quote``: Go's ``%q`` of a string."""
    out = ['"']
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)
