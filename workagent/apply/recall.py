"""What the manifest applied last set, recalled from the object when memory lost it.

The Update strategy removes the keys a manifest stops setting by comparing it
with the manifest applied before (``last`` in :mod:`workagent.apply.merge`),
which is kept in memory only. After a restart (or an eviction from
:mod:`workagent.apply.cache`) a manifest that changed meanwhile would
otherwise leave the keys it dropped on the object.

The object keeps a trace of what the agent wrote: its Update entry in
``metadata.managedFields``. That entry also owns what the API server
defaulted when the agent created the object, so the fields a create of the
manifest gets by default (a dry-run create tells) are not taken for dropped
ones, unless the live value is no longer that default (a default is what the
server puts back when a PUT leaves the field out, as OCM's PUT would).

The result stands in for ``last``: the manifest itself plus each recalled
key the manifest no longer sets; under a list item, that item then differs
from the manifest's and is replaced whole, as when ``last`` is known. Below a
defaulted map the manifest no longer sets (a strategy, ``resources``), others
may have set keys: there a :class:`~workagent.apply.merge.Prune` lists only
the agent's own keys to remove.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from workagent.apply.merge import Prune, semantic_equal

#: Stands for a value the previous manifest set (any non-empty value would do).
_DROPPED: Final = True


class DefaultsNeeded(Exception):
    """The recall needs the object a create of the manifest would make (a dry run)."""


class _Unknown:
    """The type of :data:`UNKNOWN`."""


#: The ``defaults`` of :func:`recalled_last` before a dry run was made.
UNKNOWN: Final = _Unknown()

Defaults = Mapping[str, Any] | _Unknown


def owned_fields(obj: Mapping[str, Any], manager: str) -> dict[str, Any]:
    """The ``FieldsV1`` set ``manager``'s Update entries own on ``obj`` (main resource,
    the object's apiVersion), merged; empty when there is none."""
    meta = obj.get("metadata") or {}
    owned: dict[str, Any] = {}
    for entry in meta.get("managedFields") or []:
        if not isinstance(entry, Mapping):
            continue
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Update"
            and not entry.get("subresource")
            and entry.get("apiVersion") == obj.get("apiVersion")
            and isinstance(entry.get("fieldsV1"), Mapping)
        ):
            _merge_sets(owned, entry["fieldsV1"])
    return owned


def _merge_sets(into: dict[str, Any], more: Mapping[str, Any]) -> None:
    for key, sub in more.items():
        if isinstance(sub, Mapping):
            _merge_sets(into.setdefault(key, {}), sub)


def recalled_last(
    owned: Mapping[str, Any],
    required: Mapping[str, Any],
    live: Mapping[str, Any],
    defaults: Defaults,
) -> dict[str, Any] | None:
    """A stand-in for the manifest applied last (None: nothing to recall).

    ``owned`` is :func:`owned_fields` of ``live``; ``defaults`` the object a
    create of ``required`` makes. Metadata and status are not content
    (labels and annotations are only ever merged). Raises
    :class:`DefaultsNeeded` when ``defaults`` is :data:`UNKNOWN` and a key
    needs it.
    """
    content = {k: v for k, v in owned.items() if k not in ("f:metadata", "f:status")}
    last, changed = _recall_map(content, required, live, defaults)
    return last if changed else None


def _recall_map(
    owned: Mapping[str, Any], required: Mapping[str, Any], live: Any, defaults: Defaults
) -> tuple[dict[str, Any], bool]:
    last = dict(required)
    changed = False
    if not isinstance(live, Mapping):
        return last, False
    for key, sub in owned.items():
        name = key[2:]
        if not key.startswith("f:") or name not in live:
            continue
        default = defaults if isinstance(defaults, _Unknown) else defaults.get(name)
        value = required.get(name)
        if value is not None:
            nested, deeper = _recall_value(sub, value, live[name], default)
            if deeper:
                last[name] = nested
                changed = True
        else:
            mark = _unset_mark(sub, name, live[name], defaults)
            if mark is not None:
                last[name] = mark
                changed = True
    return last, changed


def _recall_value(owned: Any, value: Any, live: Any, default: Any) -> tuple[Any, bool]:
    if not isinstance(owned, Mapping):
        return value, False
    if isinstance(value, Mapping):
        return _recall_map(owned, value, live, _as_map(default))
    if isinstance(value, list) and isinstance(live, list):
        return _recall_list(owned, value, live, default)
    return value, False


def _recall_list(
    owned: Mapping[str, Any], required: list[Any], live: list[Any], defaults: Any
) -> tuple[list[Any], bool]:
    """Keyed items (``k:{...}``) the manifest still lists: recalled within each.

    An item is found through the dry run's object, whose list is the manifest's
    in the same order with defaults filled in: its key may hold a defaulted
    field (a container port's ``protocol``) the manifest leaves out.
    """
    last = list(required)
    changed = False
    for key, sub in owned.items():
        if not key.startswith("k:"):
            continue  # sets (v:) and positions (i:) hold no maps to recall within
        try:
            wanted = json.loads(key[2:])
        except ValueError:
            continue
        found = _find(live, wanted) if isinstance(wanted, dict) else None
        if found is None:
            continue
        if isinstance(defaults, _Unknown):
            index = _find(required, wanted)
            if index is None:
                raise DefaultsNeeded(key)  # perhaps listed with a key field left to its default
            item: Defaults = defaults
        else:
            at = _find(defaults, wanted)
            in_order = at is not None and isinstance(defaults, list)
            index = at if in_order and len(defaults) == len(required) else _find(required, wanted)
            item = _as_map(defaults[at]) if at is not None else {}
        if index is None or not isinstance(required[index], Mapping):
            continue
        nested, deeper = _recall_map(sub, required[index], live[found], item)
        if deeper:
            last[index] = nested
            changed = True
    return last, changed


def _find(items: Any, wanted: Mapping[str, Any]) -> int | None:
    if not isinstance(items, list):
        return None
    for index, item in enumerate(items):
        if isinstance(item, Mapping) and all(
            semantic_equal(item.get(k), v) for k, v in wanted.items()
        ):
            return index
    return None


def _unset_mark(owned: Any, name: str, live: Any, defaults: Defaults) -> Any:
    """What ``last`` holds for an owned key the manifest no longer sets: :data:`_DROPPED`
    (remove it), a :class:`Prune` (remove some keys below it) or None (keep it)."""
    if isinstance(defaults, _Unknown):
        raise DefaultsNeeded(name)
    if name not in defaults:
        return _DROPPED
    default = defaults[name]
    if isinstance(default, Mapping) and isinstance(live, Mapping):
        # A defaulted map (a strategy, resources, a custom resource's object): others
        # may have set keys below it; only what the agent owns there is considered.
        marks = Prune()
        for key, sub in (owned if isinstance(owned, Mapping) else {}).items():
            if key.startswith("f:") and key[2:] in live:
                mark = _unset_mark(sub, key[2:], live[key[2:]], default)
                if mark is not None:
                    marks[key[2:]] = mark
        return marks or None
    # A default: removing it lets the server set it again, which only matters
    # when the live value is no longer the default.
    return None if semantic_equal(default, live) else _DROPPED


def _as_map(defaults: Any) -> Defaults:
    if isinstance(defaults, _Unknown | Mapping):
        return defaults
    return {}
