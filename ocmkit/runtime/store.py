"""The informer's cache: objects by key, plus secondary indexes.

Keys are ``namespace/name``, or ``name`` for cluster-scoped objects, as
client-go's ``MetaNamespaceKeyFunc``. Objects are the decoded JSON dicts the
API server sent; readers must treat them as immutable (copy before changing),
because every reader and handler shares them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import structlog

log = structlog.get_logger(__name__)

Object = dict[str, Any]
IndexFunc = Callable[[Object], list[str]]
#: What an informer does to each object it receives, before caching it.
Transform = Callable[[Object], Object]
# Aliases, because the Store.list method shadows the builtin inside the class.
_Objects = list[Object]
_Keys = list[str]


def object_key(obj: Object) -> str:
    """``namespace/name``, or ``name`` when the object has no namespace."""
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def strip_managed_fields(obj: Object) -> Object:
    """``obj`` without ``metadata.managedFields`` (a transform, as client-go's
    ``TransformStripManagedFields``).

    The field-ownership records are often the largest part of a small object
    (a ConfigMap of one key: three quarters of it), and a cache whose readers
    never look at them need not keep them. Changes ``obj`` in place: a transform
    gets objects fresh from the decoder, which nobody else holds.
    """
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


class Store:
    """A keyed cache of objects with named indexes (``by_index``).

    Objects are kept as they are given and read back shared (callers must not
    change them); a subclass may keep another form through :meth:`_pack` and
    :meth:`_unpack` (:class:`~ocmkit.runtime.textstore.TextStore`).
    """

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = {}
        # index name -> indexed value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {}

    @staticmethod
    def _pack(obj: Object) -> Any:
        """The form an object is kept in."""
        return obj

    @staticmethod
    def _unpack(kept: Any) -> Object:
        """The object back from the form it is kept in."""
        return cast(Object, kept)

    # -- reading ------------------------------------------------------------------------
    def get(self, key: str) -> Object | None:
        """The cached object with this key, or None."""
        kept = self._items.get(key)
        return None if kept is None else self._unpack(kept)

    def list(self) -> _Objects:
        """Every cached object (a new list)."""
        return [self._unpack(kept) for kept in self._items.values()]

    def list_keys(self) -> _Keys:
        """Every cached key."""
        return list(self._items)

    def by_index(self, name: str, value: str) -> _Objects:
        """Objects whose index function ``name`` returned ``value``."""
        return [self._unpack(self._items[k]) for k in self.index_keys(name, value)]

    def index_keys(self, name: str, value: str) -> _Keys:
        """Keys whose index function ``name`` returned ``value``."""
        if name not in self._indexers:
            raise KeyError(f"no index named {name!r}")
        return sorted(self._indices[name].get(value, ()))

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # -- indexes ------------------------------------------------------------------------
    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Register an index; existing objects are indexed at once."""
        if name in self._indexers:
            raise ValueError(f"index {name!r} already exists")
        self._indexers[name] = fn
        self._indices[name] = {}
        for key, kept in self._items.items():
            self._index(name, fn, key, self._unpack(kept))

    # -- writing (the informer's job) ---------------------------------------------------
    def put(self, key: str, obj: Object) -> Object | None:
        """Store ``obj`` under ``key``; returns the object it replaced."""
        old = self.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = self._pack(obj)
        for name, fn in self._indexers.items():
            self._index(name, fn, key, obj)
        return old

    def delete(self, key: str) -> Object | None:
        """Remove ``key``; returns the object that was cached."""
        kept = self._items.pop(key, None)
        if kept is None:
            return None
        old = self._unpack(kept)
        self._unindex(key, old)
        return old

    def _index(self, name: str, fn: IndexFunc, key: str, obj: Object) -> None:
        index = self._indices[name]
        for value in _values(name, fn, key, obj):
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Object) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            for value in _values(name, fn, key, obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]


def _values(name: str, fn: IndexFunc, key: str, obj: Object) -> _Keys:
    """Run an index function; a failing one leaves the object out of that index.

    An index function sees whatever the API server sent; one malformed object
    must not take the whole informer down.
    """
    try:
        return list(fn(obj))
    except Exception:
        log.exception("index function failed, object not indexed", index=name, object_key=key)
        return []
