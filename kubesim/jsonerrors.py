"""JSON decoding with the error wording of Go's encoding/json.

Clients and people compare apiserver messages such as ``invalid character 'n'
looking for beginning of object key string``; Python's json module words the
same failures differently, so its errors are translated.
"""

from __future__ import annotations

import json
from typing import Any, Final


class GoJSONError(ValueError):
    """A JSON syntax error worded as Go words it."""


def _char(c: str) -> str:
    """A character as Go's encoding/json quotes it in syntax errors."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    return "'" + json.dumps(c)[1:-1] + "'"


def _container(doc: str, pos: int) -> str:
    """'{' or '[' of the innermost container open at ``pos`` (strings skipped)."""
    stack: list[str] = []
    in_string = False
    escaped = False
    for c in doc[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            stack.append(c)
        elif c in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""


# The start of Python's message, and where Go says the bad character stands.
_WHERE: Final = (
    ("Expecting property name", "looking for beginning of object key string"),
    ("Expecting value", "looking for beginning of value"),
    ("Expecting ':'", "after object key"),
    ("Extra data", "after top-level value"),
    ("Invalid control character", "in string literal"),
)


def go_message(exc: json.JSONDecodeError) -> str:
    """Go's encoding/json message for a Python decode error."""
    doc, pos, msg = exc.doc, exc.pos, exc.msg
    if msg.startswith("Unterminated string") or pos >= len(doc):
        return "unexpected end of JSON input"
    c = _char(doc[pos])
    for prefix, where in _WHERE:
        if msg.startswith(prefix):
            return f"invalid character {c} {where}"
    if msg.startswith("Expecting ','"):
        where = "object key:value pair" if _container(doc, pos) == "{" else "array element"
        return f"invalid character {c} after {where}"
    if msg.startswith("Invalid \\escape"):
        return f"invalid character {_char(doc[pos + 1 : pos + 2] or ' ')} in string escape code"
    return msg


def loads(text: str) -> Any:
    """``json.loads`` raising :class:`GoJSONError` with Go's wording."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise GoJSONError(go_message(exc)) from exc


class _Pairs(list[tuple[str, Any]]):
    """An object's members as decoded, duplicates kept (to find them afterwards)."""


def loads_with_duplicates(text: str) -> tuple[Any, list[str]]:
    """Decode ``text``; also the paths of duplicate object members, as the apiserver's
    strict decoder names them (``data.k``, ``spec.containers[0].name``), in document
    order. A duplicate's last value wins, as in Go."""
    raw = json.loads(text, object_pairs_hook=_Pairs)
    duplicates: list[str] = []

    def build(value: Any, path: str) -> Any:
        if isinstance(value, _Pairs):
            out: dict[str, Any] = {}
            for key, item in value:
                here = f"{path}.{key}" if path else key
                if key in out and here not in duplicates:
                    duplicates.append(here)
                out[key] = build(item, here)
            return out
        if isinstance(value, list):
            return [build(item, f"{path}[{i}]") for i, item in enumerate(value)]
        return value

    return build(raw, ""), duplicates
