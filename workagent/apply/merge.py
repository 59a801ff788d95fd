"""The merge rules of the Update strategy (spec/agent.md 5.1), as pure functions.

Two families:

* **Metadata** (library-go ``EnsureObjectMeta``, :func:`merge_object_meta`):
  the manifest's namespace, name, labels, annotations and owner references
  are merged in; the rest (finalizers, managedFields, other owners) is kept.

* **Content** (everything but ``metadata`` and ``status``): only what the
  manifest sets is compared, as library-go's resourcemerge does, so fields
  the API server defaulted or that other controllers own never make the
  object look changed, and immutable defaulted fields (a Job's generated
  selector and template labels) are carried into updates instead of being
  dropped. :func:`covers` is that comparison; :func:`overlay` builds the
  object to write: the live object with the manifest laid over it.

Conventions of :func:`covers` and :func:`overlay`, chosen so the two always
agree (an object that :func:`covers` the manifest overlays to itself):

* a ``null`` in the manifest sets nothing (it unsets what the last manifest set);
* a key the live object lacks equals an empty value (``false``, ``0``,
  ``""``, ``{}``, ``[]``): Go's ``omitempty`` drops those on the server;
  except that :func:`overlay` writes an empty value the manifest newly sets
  (unknown history: never), as absent is not false for pointer fields and
  custom resources;
* maps are compared key by key (keys only the live object has are kept);
* a list is set whole: same length, element by element; an element that
  matches the live one keeps the live element (with its defaults), one that
  differs replaces it, so the server defaults it afresh;
* quantities (``resources.limits``, ``hard``...) compare by value.

Keys the manifest stops setting are not noticed by a pure comparison. When
the manifest applied last time is known (``last``), keys it set and the new
one does not are removed, and list elements that changed since are replaced
whole, so removals propagate like an apiserver PUT of the manifest would.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from workagent.apply.owners import merge_owner_refs, without_removal_markers
from workagent.quantity import same_quantity

#: A label or annotation key ending with this deletes the key without it.
REMOVAL_KEY_SUFFIX = "-"

# Maps whose values are quantities, and fields that are quantities themselves.
_QUANTITY_MAPS: Final = frozenset(
    {"limits", "requests", "hard", "capacity", "allocatable", "overhead", "used"}
)
_QUANTITY_FIELDS: Final = frozenset({"sizeLimit"})


class _Missing:
    """The type of :data:`MISSING`."""

    def __repr__(self) -> str:
        return "MISSING"


#: No previous manifest is known (distinct from a previous ``null``).
MISSING: Final = _Missing()


class Prune(dict[str, Any]):
    """In ``last``, under a key the manifest no longer sets: only the keys listed
    below it are removed (a value that is itself a :class:`Prune` goes deeper);
    the rest of the live value stays (see :mod:`workagent.apply.recall`)."""


def _pruned(live: Any, marks: Prune) -> Any:
    if not isinstance(live, dict):
        return live
    kept = dict(live)
    for key, mark in marks.items():
        if isinstance(mark, Prune) and key in kept:
            kept[key] = _pruned(kept[key], mark)
        else:
            kept.pop(key, None)
    return kept


# -- metadata ----------------------------------------------------------------------------


def merge_string_map(
    existing: Mapping[str, Any] | None, required: Mapping[str, Any] | None
) -> tuple[dict[str, Any], bool]:
    """library-go ``MergeMap``: add or overwrite keys, ``key-`` deletes ``key``.

    Returns (merged map, modified). Like Go's ``strings.TrimRight`` every
    trailing dash is stripped to find the key to delete.
    """
    merged = dict(existing or {})
    modified = False
    for key, value in (required or {}).items():
        if key.endswith(REMOVAL_KEY_SUFFIX):
            actual = key.rstrip(REMOVAL_KEY_SUFFIX)
            if actual in merged:
                del merged[actual]
                modified = True
        elif key not in merged or merged[key] != value:
            merged[key] = value
            modified = True
    return merged, modified


def merge_object_meta(
    existing: Mapping[str, Any], required: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """Merge the manifest's metadata into a copy of the live metadata; returns (meta, modified)."""
    meta = copy.deepcopy(dict(existing))
    modified = False
    for field in ("namespace", "name"):
        value = required.get(field)
        if value and meta.get(field) != value:
            meta[field] = value
            modified = True
    for field in ("labels", "annotations"):
        merged, changed = merge_string_map(meta.get(field), required.get(field))
        modified = modified or changed
        _set_nonempty(meta, field, merged)
    refs, changed = merge_owner_refs(
        meta.get("ownerReferences"), required.get("ownerReferences") or []
    )
    _set_nonempty(meta, "ownerReferences", refs)
    return meta, modified or changed


def _set_nonempty(meta: dict[str, Any], field: str, value: Any) -> None:
    """``meta[field] = value``, or no ``field`` at all when ``value`` is empty."""
    if value:
        meta[field] = value
    else:
        meta.pop(field, None)


def for_create(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` to create: removal keys and removal-marker owner references dropped."""
    body = copy.deepcopy(dict(obj))
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return body
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if isinstance(values, dict):
            kept = {k: v for k, v in values.items() if not k.endswith(REMOVAL_KEY_SUFFIX)}
            _set_nonempty(meta, field, kept)
    if "ownerReferences" in meta:
        _set_nonempty(meta, "ownerReferences", without_removal_markers(meta["ownerReferences"]))
    return body


# -- content -----------------------------------------------------------------------------


def is_empty(value: Any) -> bool:
    """Whether ``value`` is what Go's ``omitempty`` leaves out (None, false, 0, "", {}, [])."""
    if value is None or value is False:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value == 0
    if isinstance(value, str | list | dict):
        return len(value) == 0
    return False


def _same_scalar(existing: Any, required: Any, quantity: bool) -> bool:
    if isinstance(existing, bool) or isinstance(required, bool):
        # Python's True == 1 must not make a boolean equal a number.
        return type(existing) is type(required) and existing == required
    if existing == required:
        return True
    if not quantity or not isinstance(existing, str):
        return False
    if isinstance(required, int | float):
        # YAML reads ``cpu: 1`` as a number; the server stores the string "1".
        required = str(required)
    return isinstance(required, str) and same_quantity(existing, required)


def covers(existing: Any, required: Any, key: str = "", *, in_quantities: bool = False) -> bool:
    """Whether the live value already has everything the manifest's value sets.

    ``key`` is the field name ``required`` sits under; it selects quantity
    comparison (``in_quantities`` is set for the children of quantity maps).
    """
    if required is None:
        return True
    if isinstance(required, dict):
        if existing is None:
            existing = {}
        elif not isinstance(existing, dict):
            return False
        return all(
            covers(existing.get(k), v, k, in_quantities=key in _QUANTITY_MAPS)
            for k, v in required.items()
        )
    if isinstance(required, list):
        if existing is None:
            return not required
        if not isinstance(existing, list) or len(existing) != len(required):
            return False
        return all(
            covers(e, r, key, in_quantities=in_quantities)
            for e, r in zip(existing, required, strict=True)
        )
    if existing is None:
        return is_empty(required)
    return _same_scalar(existing, required, in_quantities or key in _QUANTITY_FIELDS)


def _named(items: list[Any]) -> dict[str, Any] | None:
    """Elements by their ``name`` when every element has a distinct one, else None."""
    by_name: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict):
            return None
        name = item.get("name")
        if not isinstance(name, str) or name in by_name:
            return None
        by_name[name] = item
    return by_name


def _pair(others: Any, required: list[Any]) -> list[Any]:
    """For each element of ``required``, its counterpart in ``others`` (or MISSING).

    Lists of uniquely named maps (containers, env, volumes, ports) pair by
    name, so a reordering or an insertion does not mismatch every element
    after it; other lists pair by index.
    """
    if not isinstance(others, list):
        return [MISSING] * len(required)
    wanted, have = _named(required), _named(others)
    if wanted is not None and have is not None:
        return [have.get(name, MISSING) for name in wanted]
    return [others[i] if i < len(others) else MISSING for i in range(len(required))]


def _unchanged(last: Any, required: Any) -> bool:
    """Whether the manifest's value is what was applied last time (or that is unknown)."""
    return last is MISSING or semantic_equal(last, required)


def _newly_set(last: Any, key: str, value: Any) -> bool:
    """Whether the manifest sets ``key`` to ``value`` where the last one did not.

    Such a value is written even when empty: ``automountServiceAccountToken:
    false`` or a custom resource's ``0`` differ from absent. Once applied, an
    empty value the server dropped (``omitempty``) counts as absent again, so
    it is not written over and over.
    """
    return isinstance(last, dict) and (key not in last or last[key] != value)


def _unset(result: dict[str, Any], key: str, previous: Any) -> None:
    if isinstance(previous, Prune):
        if key in result:
            result[key] = _pruned(result[key], previous)
    else:
        result.pop(key, None)


def overlay(
    existing: Any,
    required: Any,
    last: Any = MISSING,
    key: str = "",
    *,
    in_quantities: bool = False,
) -> Any:
    """The value to write: the live value with the manifest's value laid over it.

    Shares sub-objects with its inputs: deep-copy the result before mutating
    it. ``last`` is the manifest's value at the previous apply (MISSING when
    unknown); ``key`` and ``in_quantities`` as for :func:`covers`. See the
    module docstring for the rules.
    """
    if isinstance(required, dict) and isinstance(existing, dict):
        result = dict(existing)
        if isinstance(last, dict):
            for k in last:
                if k not in required:
                    # The manifest stopped setting it: unset, as a PUT would.
                    _unset(result, k, last[k])
        for k, value in required.items():
            if value is None:
                if isinstance(last, dict) and last.get(k) is not None:
                    _unset(result, k, last[k])  # set last time, explicitly unset now
                continue
            if k not in existing:
                if not is_empty(value) or _newly_set(last, k, value):
                    result[k] = value
                continue
            previous = last.get(k, MISSING) if isinstance(last, dict) else MISSING
            if previous is MISSING and isinstance(last, dict) and isinstance(value, dict):
                previous = {}  # the last manifest set nothing under k: all of it is new
            result[k] = overlay(
                existing[k], value, previous, k, in_quantities=key in _QUANTITY_MAPS
            )
        return result
    if covers(existing, required, key, in_quantities=in_quantities) and (
        not isinstance(required, list) or _unchanged(last, required)
    ):
        return existing
    if isinstance(required, list) and isinstance(existing, list):
        return [
            live
            if live is not MISSING
            and _unchanged(prev, want)
            and covers(live, want, key, in_quantities=in_quantities)
            else want
            for want, live, prev in zip(
                required, _pair(existing, required), _pair(last, required), strict=True
            )
        ]
    return required


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            norm = _normalized(v)
            if not is_empty(norm) or (isinstance(norm, int | float) and not isinstance(norm, bool)):
                out[k] = norm
        return out
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def semantic_equal(a: Any, b: Any) -> bool:
    """Deep equality where a missing map key equals null, false, "", {} or [] (not 0)."""
    return bool(_normalized(a) == _normalized(b))
