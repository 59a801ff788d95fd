"""A :class:`Store` that keeps each object as compressed JSON text.

An informer's cache holds every object for the life of the program. A
decoded ManifestWork of five ConfigMaps with its status is about 10 KiB of
Python dicts and strings; as zlib-compressed JSON it is about 1 KiB. The
price is a decode on every read (tens of microseconds for such an object),
so it suits caches read per reconcile rather than scanned in tight loops.
Every read returns a fresh object that the caller may change.
"""

from __future__ import annotations

import json
import zlib
from typing import cast

from ocmkit.runtime.store import Object, Store

#: zlib level: the fastest; most of the gain is in the first level.
_LEVEL = 1


class TextStore(Store):
    """A keyed cache of objects kept as compressed JSON text; reads decode a copy."""

    @staticmethod
    def _pack(obj: Object) -> bytes:
        return zlib.compress(json.dumps(obj, separators=(",", ":")).encode(), _LEVEL)

    @staticmethod
    def _unpack(kept: bytes) -> Object:
        return cast(Object, json.loads(zlib.decompress(kept)))
