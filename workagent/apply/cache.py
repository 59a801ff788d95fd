"""What the Update strategy remembers between applies (spec/agent.md 5.1.1 step 2).

For each applied object: a digest of the manifest last applied to it, the
resourceVersion it was in sync at, the manifest itself (so keys the manifest
stops setting can be removed, see :mod:`workagent.apply.merge`) and, when the
API server rejected that manifest as invalid, the error. The same manifest
against the same resourceVersion then needs no comparison, and no request:
validation is deterministic, so an immutable-field change is reported again
without being sent again until either side changes.

It lives in memory only; the digest never leaves the process. Entries are
evicted least recently used first so the cache stays bounded. The manifest is
kept as compact JSON text, read back only when the manifest changed: a third
of the memory of the decoded form, for thousands of entries.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from ocmkit.kube import KubeError
from workagent.apply.merge import Prune

#: (work name, API group, kind, namespace, name)
CacheKey = tuple[str, str, str, str, str]

MAX_ENTRIES: Final = 10_000


def digest(obj: Any) -> str:
    """A deterministic digest of a JSON value (key order does not matter)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One object's state as of the last apply."""

    required_hash: str
    resource_version: str
    #: The manifest last brought into effect, as compact JSON (``null``: unknown).
    last_required_json: bytes
    #: Set when the API server refused ``required_hash`` at ``resource_version`` as invalid.
    error: KubeError | None = None

    @property
    def last_required(self) -> dict[str, Any] | None:
        """The manifest last brought into effect (None: unknown)."""
        found: dict[str, Any] | None = json.loads(self.last_required_json, object_hook=_untag)
        return found


#: How a :class:`~workagent.apply.merge.Prune` of a recalled manifest is kept in JSON
#: (no Kubernetes field is named so).
_PRUNE_TAG: Final = "\u0000prune"


def _tagged(value: Any) -> Any:
    if isinstance(value, dict):
        plain = {k: _tagged(v) for k, v in value.items()}
        return {_PRUNE_TAG: plain} if isinstance(value, Prune) else plain
    if isinstance(value, list):
        return [_tagged(v) for v in value]
    return value


def _untag(obj: dict[str, Any]) -> dict[str, Any]:
    if len(obj) == 1 and _PRUNE_TAG in obj:
        return Prune(obj[_PRUNE_TAG])
    return obj


class ApplyCache:
    """A bounded LRU map from :data:`CacheKey` to :class:`CacheEntry`."""

    def __init__(self) -> None:
        self._entries: OrderedDict[CacheKey, CacheEntry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> CacheEntry | None:
        """The entry for ``key``, marked recently used."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(
        self,
        key: CacheKey,
        required_hash: str,
        resource_version: str,
        last_required: dict[str, Any] | None,
        error: KubeError | None = None,
    ) -> None:
        """Store an entry, evicting the least recently used beyond the bound."""
        text = json.dumps(_tagged(last_required), separators=(",", ":")).encode()
        self._entries[key] = CacheEntry(required_hash, resource_version, text, error)
        self._entries.move_to_end(key)
        while len(self._entries) > MAX_ENTRIES:
            self._entries.popitem(last=False)
