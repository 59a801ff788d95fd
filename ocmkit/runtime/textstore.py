"""A :class:`Store` that keeps each object as compressed JSON text.

An informer's cache holds every object for the life of the program. A
decoded ManifestWork of five ConfigMaps with its status is about 10 KiB of
Python dicts and strings even with its strings shared (:func:`compact`); as
zlib-compressed JSON it is about 1 KiB. The price is a decode on every read
(tens of microseconds for such an object), so it suits caches read per
reconcile rather than scanned in tight loops. Every read returns a fresh
object that the caller may change.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import cast

from ocmkit.runtime.store import IndexFunc, Object, Store, _Keys, _Objects

#: zlib level: the fastest; most of the gain is in the first level.
_LEVEL = 1


def _pack(obj: Object) -> bytes:
    return zlib.compress(json.dumps(obj, separators=(",", ":")).encode(), _LEVEL)


def _unpack(text: bytes) -> Object:
    return cast(Object, json.loads(zlib.decompress(text)))


class TextStore(Store):
    """A keyed cache of objects kept as compressed JSON text; reads decode a copy."""

    def __init__(self) -> None:
        super().__init__()
        self._texts: dict[str, bytes] = {}

    def get(self, key: str) -> Object | None:
        """A fresh copy of the cached object with this key, or None."""
        text = self._texts.get(key)
        return None if text is None else _unpack(text)

    def list(self) -> _Objects:
        """Fresh copies of every cached object."""
        return [_unpack(text) for text in self._texts.values()]

    def list_keys(self) -> _Keys:
        """Every cached key."""
        return list(self._texts)

    def by_index(self, name: str, value: str) -> _Objects:
        """Fresh copies of the objects whose index function ``name`` returned ``value``."""
        return [_unpack(self._texts[k]) for k in self.index_keys(name, value)]

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, key: object) -> bool:
        return key in self._texts

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._texts))

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Register an index; existing objects are indexed at once."""
        if name in self._indexers:
            raise ValueError(f"index {name!r} already exists")
        self._indexers[name] = fn
        self._indices[name] = {}
        for key, text in self._texts.items():
            self._index(name, fn, key, _unpack(text))

    def put(self, key: str, obj: Object) -> Object | None:
        """Store ``obj`` under ``key``; returns (a copy of) the object it replaced."""
        old = self.get(key)
        if old is not None:
            self._unindex(key, old)
        self._texts[key] = _pack(obj)
        for name, fn in self._indexers.items():
            self._index(name, fn, key, obj)
        return old

    def delete(self, key: str) -> Object | None:
        """Remove ``key``; returns (a copy of) the object that was cached."""
        text = self._texts.pop(key, None)
        if text is None:
            return None
        old = _unpack(text)
        self._unindex(key, old)
        return old
