"""JSON decoding that keeps the raw text of chosen arrays' items.

OCM limits the size of a work's manifests by the byte length of each
manifest's JSON *as the API server sent it* (a ``RawExtension`` keeps the raw
bytes). :func:`parse_keeping_raw` decodes an AdmissionReview body once and,
for the array at each requested path, also returns every item's exact text.
Only the objects along those paths are walked in Python; every other value is
decoded by the stdlib's C scanner.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, NoReturn

Path = tuple[str, ...]
# A trie of keys; a leaf is the complete path whose array items are kept raw.
_Trie = dict[str, "_Trie | Path"]

_WS = re.compile(r"[ \t\n\r]*")
# The stdlib's (C) string scanner: text, index after the opening quote, strict -> (str, end).
# Public in json.decoder but missing from typeshed.
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _reject_constant(name: str) -> NoReturn:
    # Python accepts NaN and Infinity; JSON (and Go) do not.
    raise ValueError(f"invalid JSON value {name}")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _replace_per_byte(error: UnicodeError) -> tuple[str, int]:
    # Go's decoder puts one U+FFFD for each byte that starts no valid sequence.
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd" * (error.end - error.start), error.end


#: The name of the error handler that decodes invalid UTF-8 as Go's JSON decoder does.
GO_REPLACE: Final = "go-json-replace"
codecs.register_error(GO_REPLACE, _replace_per_byte)

# A \u escape of a UTF-16 surrogate; a pair decodes to one code point, a lone one stays.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogates_replaced(value: Any, text: str) -> Any:
    """``value`` (decoded from ``text``) with each lone UTF-16 surrogate in its strings and
    keys replaced by U+FFFD, as Go's decoder reads them (such a string cannot be encoded
    as UTF-8 again)."""
    if not _SURROGATE_ESCAPE.search(text):
        return value  # the common case: nothing to walk
    return _replace_surrogates(value)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def _build_trie(paths: Iterable[Path]) -> _Trie:
    root: _Trie = {}
    for path in paths:
        if not path:
            raise ValueError("a kept path needs at least one key")
        node = root
        for key in path[:-1]:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise ValueError(f"path {path} passes through another kept path")
            node = child
        node[path[-1]] = path
    return root


def parse_keeping_raw(text: str, paths: Sequence[Path]) -> tuple[Any, dict[Path, list[str]]]:
    """Decode ``text``; for each path that leads to an array, also the items' raw texts.

    A path is a sequence of object keys from the root. Paths that are absent,
    or lead to something else than an array, are missing from the result. With
    duplicate keys the last one wins, as in :func:`json.loads` and Go.
    Raises :class:`json.JSONDecodeError` (a ValueError) for invalid JSON.
    """
    parser = _Parser(text)
    i = parser.ws(0)
    value, i, found = parser.value(i, _build_trie(paths))
    i = parser.ws(i)
    if i != len(text):
        raise json.JSONDecodeError("Extra data", text, i)
    return value, found


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def ws(self, i: int) -> int:
        match = _WS.match(self.text, i)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    def scan(self, i: int) -> tuple[Any, int]:
        try:
            return _DECODER.raw_decode(self.text, i)
        except json.JSONDecodeError:
            raise
        except ValueError as err:
            raise json.JSONDecodeError(str(err), self.text, i) from None

    def value(self, i: int, node: _Trie | Path) -> tuple[Any, int, dict[Path, list[str]]]:
        char = self.text[i : i + 1]
        if isinstance(node, dict) and char == "{":
            return self.object(i, node)
        if isinstance(node, tuple) and char == "[":
            return self.array(i, node)
        value, end = self.scan(i)
        return value, end, {}

    def object(self, i: int, node: _Trie) -> tuple[dict[str, Any], int, dict[Path, list[str]]]:
        text = self.text
        obj: dict[str, Any] = {}
        found_by_key: dict[str, dict[Path, list[str]]] = {}
        i = self.ws(i + 1)
        if text[i : i + 1] == "}":
            return obj, i + 1, {}
        while True:
            if text[i : i + 1] != '"':
                raise json.JSONDecodeError(
                    "Expecting property name enclosed in double quotes", text, i
                )
            key, i = scanstring(text, i + 1, True)
            i = self.ws(i)
            if text[i : i + 1] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", text, i)
            i = self.ws(i + 1)
            child = node.get(key)
            if child is None:
                value, i = self.scan(i)
            else:
                value, i, found = self.value(i, child)
                # A repeated key replaces what an earlier occurrence found.
                found_by_key[key] = found
            obj[key] = value
            i = self.ws(i)
            char = text[i : i + 1]
            if char == ",":
                i = self.ws(i + 1)
                continue
            if char == "}":
                merged: dict[Path, list[str]] = {}
                for found in found_by_key.values():
                    merged.update(found)
                return obj, i + 1, merged
            raise json.JSONDecodeError("Expecting ',' delimiter", text, i)

    def array(self, i: int, path: Path) -> tuple[list[Any], int, dict[Path, list[str]]]:
        text = self.text
        items: list[Any] = []
        raws: list[str] = []
        i = self.ws(i + 1)
        if text[i : i + 1] == "]":
            return items, i + 1, {path: raws}
        while True:
            start = i
            value, i = self.scan(i)
            items.append(value)
            raws.append(text[start:i])
            i = self.ws(i)
            char = text[i : i + 1]
            if char == ",":
                i = self.ws(i + 1)
                continue
            if char == "]":
                return items, i + 1, {path: raws}
            raise json.JSONDecodeError("Expecting ',' delimiter", text, i)
