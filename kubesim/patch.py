"""PATCH bodies applied the way kube-apiserver applies them.

Three patch types are handled here: JSON merge patch (RFC 7386), JSON patch
(RFC 6902) and Kubernetes strategic merge patch. Server-side apply lives in
another module. Every function works on deep copies and never mutates its
arguments.

Error answers follow the apiserver: a body that does not decode is a 400
``BadRequest``; a JSON patch operation that cannot be applied is a 422
``Invalid`` whose message is the generic "the server rejected our request..."
text, with the library's own explanation carried in ``details.causes``
(that is what ``NewGenericServerResponse`` builds).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any, Final

from kubesim.errors import ApiError, bad_request, unsupported_media_type, unsupported_patch_type
from kubesim.jsonvalues import json_equal, prune_nulls, unmarshal_kind
from kubesim.listtypes import ListSpec, ListTypeResolver, Path

__all__ = [
    "APPLY_PATCH_YAML",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "apply_patch",
    "json_patch",
    "merge_patch",
    "strategic_merge_patch",
]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML: Final = "application/apply-patch+yaml"
_APPLY_PATCH_CBOR: Final = "application/apply-patch+cbor"

# The apiserver refuses JSON patches longer than this (maxJSONPatchOperations).
_MAX_JSON_PATCH_OPS: Final = 10000

_REJECTED: Final = "the server rejected our request due to an error in our request"


def _unprocessable(detail: str) -> ApiError:
    """422 as ``NewGenericServerResponse`` builds it: generic text, detail in causes."""
    # v1.35 keeps the detail to itself: the answer is the generic text alone (the
    # detail stays on the error, for kubesim's log and tests).
    error = ApiError(422, "Invalid", _REJECTED, {})
    error.detail = detail
    return error


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def go_value(value: Any) -> str:
    """Render a decoded JSON value as Go's ``%v`` does, for error messages."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return str(value)


# --------------------------------------------------------------------------
# JSON merge patch (RFC 7386)
# --------------------------------------------------------------------------


def merge_patch(original: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch and return the result.

    An object patch is merged member by member: ``null`` deletes the member,
    objects merge recursively, anything else replaces. A non-object patch
    replaces the whole document. As in the apiserver's library, ``null``
    members of objects nested in a replacing value are dropped.
    """
    return _merge(copy.deepcopy(original), patch)


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 on an owned ``target``; values taken from ``patch`` are copied."""
    if not isinstance(patch, dict):
        return prune_nulls(copy.deepcopy(patch))
    result: dict[str, Any] = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


# --------------------------------------------------------------------------
# JSON patch (RFC 6902)
# --------------------------------------------------------------------------

_GO_INT = re.compile(r"[+-]?[0-9]+")


class _OpError(Exception):
    """An operation that does not apply; becomes a 422."""


def _atoi(token: str) -> int | None:
    """``strconv.Atoi``: None when ``token`` is not a decimal integer."""
    return int(token) if _GO_INT.fullmatch(token) else None


def _atoi_error(token: str) -> str:
    return f'strconv.Atoi: parsing "{token}": invalid syntax'


def _split_pointer(pointer: str) -> list[str] | None:
    """Decode a JSON pointer into unescaped tokens (~1 is '/', ~0 is '~').

    The whole document ("") is not addressable, as in the apiserver's JSON
    patch library; None is answered for it and for malformed pointers.
    """
    if not pointer.startswith("/"):
        return None
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _find_parent(doc: Any, pointer: str) -> tuple[dict[str, Any] | list[Any], str] | None:
    """The container holding the last token of ``pointer``, and that token."""
    tokens = _split_pointer(pointer)
    if tokens is None:
        return None
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list):
            index = _atoi(token)
            if index is None or not 0 <= index < len(node):
                return None
            node = node[index]
        else:
            return None
    if not isinstance(node, dict | list):
        return None
    return node, tokens[-1]


def _add(container: dict[str, Any] | list[Any], key: str, value: Any) -> None:
    """Insert ``value``; raises ``_OpError`` carrying the library's reason."""
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    index = _atoi(key)
    if index is None:
        raise _OpError(f"value was not a proper array index: '{key}': {_atoi_error(key)}")
    size = len(container) + 1
    # Negative indices count from the end, a non-standard extension the
    # apiserver's library keeps enabled.
    if index >= size or index < -size:
        raise _OpError(f"Unable to access invalid index: {index}: invalid index referenced")
    container.insert(index + size if index < 0 else index, value)


def _remove(container: dict[str, Any] | list[Any], key: str) -> Any:
    """Remove and return the member at ``key``; raises ``_OpError``."""
    if isinstance(container, dict):
        if key not in container:
            raise _OpError(f"Unable to remove nonexistent key: {key}: missing value")
        return container.pop(key)
    index = _atoi(key)
    if index is None:
        raise _OpError(_atoi_error(key))
    if index >= len(container) or index < -len(container):
        raise _OpError(f"Unable to access invalid index: {index}: invalid index referenced")
    return container.pop(index)


def _get(container: dict[str, Any] | list[Any], key: str) -> tuple[bool, Any]:
    """``(found, value)`` for the member at ``key``; raises ``_OpError`` on bad indices."""
    if isinstance(container, dict):
        return (key in container, container.get(key))
    index = _atoi(key)
    if index is None:
        raise _OpError(_atoi_error(key))
    if not 0 <= index < len(container):
        raise _OpError(f"Unable to access invalid index: {index}: invalid index referenced")
    return (True, container[index])


def _op_field(op: dict[str, Any], name: str) -> str | None:
    value = op.get(name)
    return value if isinstance(value, str) else None


def _apply_op(doc: Any, op: dict[str, Any]) -> None:
    """Apply one operation in place; raises ``_OpError`` when it does not apply."""
    kind = op.get("op")
    kind = kind if isinstance(kind, str) else "unknown"
    if kind not in {"add", "remove", "replace", "move", "copy", "test"}:
        raise _OpError(f"Unexpected kind: {kind}")
    path = _op_field(op, "path")
    if path is None:
        # The library words a missing path differently per operation.
        why = (
            "missing value"
            if kind in {"add", "remove", "copy"}
            else "operation missing path field: missing value"
        )
        raise _OpError(f"{kind} operation failed to decode path: {why}")
    value = op.get("value")
    if kind not in _MISSING_PATH:
        _move_or_copy(doc, kind, op, path)
        return
    found = _find_parent(doc, path)
    if found is None:
        missing = _MISSING_PATH[kind].format(path)
        raise _OpError(f"{kind} operation does not apply: {missing}: missing value")
    container, key = found
    if kind == "replace":
        try:
            present, _ = _get(container, key)
        except _OpError:
            present = False
        if not present:
            raise _OpError(
                f"replace operation does not apply: doc is missing key: {path}: missing value"
            )
        if isinstance(container, dict):
            container[key] = value
        else:
            container[int(key)] = value
        return
    try:
        if kind == "add":
            _add(container, key, value)
        elif kind == "remove":
            _remove(container, key)
        else:
            present, current = _get(container, key)
    except _OpError as exc:
        raise _OpError(f"error in {kind} for path: '{path}': {exc}") from None
    if kind == "test":
        # A missing member and an explicit null both pass a test for null.
        if not (present and current is not None) and value is None:
            return
        if not present or not json_equal(current, value):
            raise _OpError(f"testing value {path} failed: test failed")


# How each operation that works at its path words a path whose parent is missing.
_MISSING_PATH: Final = {
    "add": 'doc is missing path: "{}"',
    "remove": 'doc is missing path: "{}"',
    "replace": "doc is missing path: {}",
    "test": "is missing path: {}",
}


def _move_or_copy(doc: Any, kind: str, op: dict[str, Any], path: str) -> None:
    source = _op_field(op, "from")
    if source is None:
        raise _OpError(
            f"{kind} operation failed to decode from: operation, missing from field: missing value"
        )
    found = _find_parent(doc, source)
    if found is None:
        raise _OpError(
            f"{kind} operation does not apply: doc is missing from path: {source}: missing value"
        )
    container, key = found
    if kind == "move":
        try:
            value = _remove(container, key)
        except _OpError as exc:
            raise _OpError(f"error in move for path: '{key}': {exc}") from None
    else:
        try:
            present, value = _get(container, key)
        except _OpError as exc:
            raise _OpError(f"error in copy for from: '{source}': {exc}") from None
        if not present:
            raise _OpError(
                f"error in copy for from: '{source}': unable to get nonexistent key: {key}: "
                "missing value"
            )
        value = copy.deepcopy(value)
    target = _find_parent(doc, path)
    if target is None:
        raise _OpError(
            f"{kind} operation does not apply: doc is missing destination path: {path}: "
            "missing value"
        )
    try:
        _add(*target, value)
    except _OpError as exc:
        prefix = (
            f"error in move for path: '{path}'"
            if kind == "move"
            else "error while adding value during copy"
        )
        raise _OpError(f"{prefix}: {exc}") from None


def json_patch(original: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch and return the patched document.

    ``ops`` is the decoded request body. A body that is not a list of objects
    is a 400 (the apiserver fails to decode it); an operation that does not
    apply -- unknown ``op``, missing path, failed ``test`` -- is a 422 whose
    cause carries the reason, as kube-apiserver answers. Operations apply in
    order and all-or-nothing: ``original`` is never modified.
    """
    if ops is None:
        return copy.deepcopy(original)
    if not isinstance(ops, list):
        raise bad_request(
            f"json: cannot unmarshal {unmarshal_kind(ops)} into Go value of type jsonpatch.Patch"
        )
    for op in ops:
        if not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {unmarshal_kind(op)} into Go value of type "
                "jsonpatch.Operation"
            )
    if len(ops) > _MAX_JSON_PATCH_OPS:
        raise ApiError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{_MAX_JSON_PATCH_OPS}, got {len(ops)}",
        )
    doc = copy.deepcopy(original)
    for op in ops:
        try:
            # Copied so the result never aliases values of the caller's ops.
            _apply_op(doc, copy.deepcopy(op))
        except _OpError as exc:
            raise _unprocessable(str(exc)) from None
    return doc


# --------------------------------------------------------------------------
# Strategic merge patch
# --------------------------------------------------------------------------

_DIRECTIVE: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList/"
_SET_ELEMENT_ORDER: Final = "$setElementOrder/"


class _Deleted:
    """Marker answered by a map carrying ``$patch: delete``."""


_DELETED: Final = _Deleted()


def _merge_strategy(spec: ListSpec) -> str | None:
    """The merge key of a merging list ("" for a primitive set), None for replace."""
    if spec.kind == "set":
        return ""
    if spec.kind == "map" and spec.merge_key:
        return spec.merge_key
    return None


def _no_merge_key(item: dict[str, Any], key: str) -> ApiError:
    return bad_request(f"map: {go_value(item)} does not contain declared merge key: {key}")


def _ident(item: Any, key: str) -> Any:
    """What identifies a list item: its merge key value, or itself for primitives."""
    if key:
        return item.get(key) if isinstance(item, dict) else None
    return item


def _index(order: list[Any], item: Any, key: str) -> int:
    wanted = _ident(item, key)
    for i, other in enumerate(order):
        if json_equal(_ident(other, key), wanted):
            return i
    return -1


def _partition(items: list[Any], by: list[Any], key: str) -> tuple[list[Any], list[Any]]:
    """Split ``items`` into those present in ``by`` and the rest (server-only)."""
    present: list[Any] = []
    others: list[Any] = []
    for item in items:
        (present if _index(by, item, key) >= 0 else others).append(item)
    return present, others


def _normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    key: str,
) -> list[Any]:
    """Order a merged list as the apiserver does.

    Patch items follow ``patch_order`` and server-only items keep their live
    order. The two runs are then interleaved: a server-only item goes before a
    patch item only when both are in the live list and it came first there.
    Patch items new to the live list therefore land ahead of the server-only
    items that follow them -- which is why ``kubectl patch`` adding a container
    puts it first.
    """

    def rank(order: list[Any]) -> Callable[[Any], int]:
        def position(item: Any) -> int:
            i = _index(order, item, key)
            return i if i >= 0 else len(order)

        return position

    left = sorted(server_only, key=rank(server_order))
    right = sorted(patch_items, key=rank(patch_order))
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
        elif i >= len(left):
            out.append(right[j])
            j += 1
        else:
            li = _index(server_order, left[i], key)
            ri = _index(server_order, right[j], key)
            if 0 <= li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _check_elements(*lists: list[Any]) -> bool:
    """True when the items are maps; rejects lists of lists and mixed lists."""
    kinds = set()
    for items in lists:
        for item in items:
            if isinstance(item, list):
                raise _unprocessable("lists of lists are not supported")
            kinds.add(isinstance(item, dict))
    if len(kinds) > 1:
        raise bad_request(
            "list element types are not identical: " + " ".join(go_value(items) for items in lists)
        )
    return kinds == {True}


class _StrategicMerger:
    """One strategic merge patch application; ``original`` values are owned copies."""

    def __init__(self, list_type: ListTypeResolver) -> None:
        self._list_type = list_type

    def merge_map(
        self, original: dict[str, Any], patch: dict[str, Any], path: Path
    ) -> dict[str, Any] | _Deleted:
        """Merge ``patch`` into ``original`` (modified in place and returned)."""
        if _DIRECTIVE in patch:
            directive = patch[_DIRECTIVE]
            if directive == "replace":
                rest = {k: v for k, v in patch.items() if k != _DIRECTIVE}
                return self.merge_map({}, rest, path)
            if directive == "delete":
                return _DELETED
            raise bad_request(
                f"unknown patch type: {go_value(directive)} in map: {go_value(patch)}"
            )

        retain = self._retain_keys(patch)
        ordered = self._apply_element_orders(original, patch, path)
        deletions: list[tuple[str, list[Any]]] = []
        for key, value in patch.items():
            if key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
                field = key[len(_DELETE_FROM_PRIMITIVE_LIST) :]
                if not field or not isinstance(value, list):
                    raise bad_request("invalid patch format of primitive list")
                deletions.append((field, value))
                continue
            # Directives never reach the stored object; unknown ones are
            # dropped like unknown fields are when the apiserver decodes.
            if key.startswith("$") or key in ordered:
                continue
            if value is None:
                original.pop(key, None)
                continue
            current = original.get(key)
            if isinstance(value, dict):
                merged = self.merge_map(
                    current if isinstance(current, dict) else {}, value, (*path, key)
                )
                if isinstance(merged, _Deleted):
                    original.pop(key, None)
                else:
                    original[key] = merged
            elif isinstance(value, list):
                original[key] = self.merge_list(
                    current if isinstance(current, list) else [], value, (*path, key)
                )
            else:
                original[key] = value
        # Removals from primitive lists run after additions to the same list.
        for field, values in deletions:
            current = original.get(field)
            if isinstance(current, list):
                original[field] = [
                    item for item in current if not any(json_equal(item, v) for v in values)
                ]
        if retain is not None:
            for key in [k for k in original if k not in retain]:
                del original[key]
        return original

    @staticmethod
    def _retain_keys(patch: dict[str, Any]) -> list[Any] | None:
        """Validate a ``$retainKeys`` list: every field set by the patch must be listed."""
        if _RETAIN_KEYS not in patch:
            return None
        retain = patch[_RETAIN_KEYS]
        if not isinstance(retain, list):
            raise bad_request("invalid patch format of retainKeys")
        for key, value in patch.items():
            if value is not None and not key.startswith("$") and key not in retain:
                raise _unprocessable("patch content doesn't match retainKeys list")
        return retain

    def _apply_element_orders(
        self, original: dict[str, Any], patch: dict[str, Any], path: Path
    ) -> set[str]:
        """Merge each list named by a ``$setElementOrder/<field>`` and order it.

        Returns the fields done here so the main loop skips them.
        """
        done: set[str] = set()
        for key, order in patch.items():
            if not key.startswith(_SET_ELEMENT_ORDER):
                continue
            field = key[len(_SET_ELEMENT_ORDER) :]
            if not field or not isinstance(order, list):
                raise bad_request("invalid patch format of setElementOrder list")
            sub = (*path, field)
            merge_key = _merge_strategy(self._list_type(sub))
            live = original.get(field)
            patch_list = patch.get(field)
            # Only merging lists are ordered; for the rest (and a null or
            # mistyped value) the ordinary rules apply.
            if merge_key is None or (field in patch and not isinstance(patch_list, list)):
                continue
            if field in original and not isinstance(live, list):
                continue
            if live is None and patch_list is None:
                continue
            has_patch = isinstance(patch_list, list)
            live_items: list[Any] = live if isinstance(live, list) else []
            patch_items: list[Any] = patch_list if isinstance(patch_list, list) else []
            is_map = _check_elements(live_items, patch_items, order)
            if is_map:
                for item in order:
                    if not isinstance(item, dict) or merge_key not in item:
                        raise _no_merge_key(item if isinstance(item, dict) else {}, merge_key)
            self._validate_order(patch_items, order, merge_key if is_map else "")
            merged = self.merge_list(live_items, patch_items, sub) if has_patch else live_items
            item_key = merge_key if is_map else ""
            in_order, server_only = _partition(merged, order, item_key)
            original[field] = _normalize_order(in_order, server_only, order, live_items, item_key)
            done.add(field)
        return done

    @staticmethod
    def _validate_order(patch_items: list[Any], order: list[Any], key: str) -> None:
        """Items in the patch list must appear in ``order`` in the same relative order."""
        kept = [item for item in patch_items if not (isinstance(item, dict) and _DIRECTIVE in item)]
        if not kept or not order:
            return
        i = 0
        for wanted in order:
            if i < len(kept) and json_equal(_ident(kept[i], key), _ident(wanted, key)):
                i += 1
        if i < len(kept):
            raise bad_request(
                f"The order in patch list:\n{go_value(patch_items)}\n doesn't match "
                f"$setElementOrder list:\n{go_value(order)}\n"
            )

    def merge_list(self, original: list[Any], patch: list[Any], path: Path) -> list[Any]:
        """Merge a patch list into a live list according to the list's type."""
        merge_key = _merge_strategy(self._list_type(path))
        if merge_key is None:
            # Atomic: the patch list replaces the live one.
            return [
                self._fresh(item, path)
                for item in patch
                if not (isinstance(item, dict) and _DIRECTIVE in item)
            ]
        if not original and not patch:
            return []
        if not _check_elements(original, patch):
            merged = list(original)
            for item in patch:
                if not any(json_equal(item, seen) for seen in merged):
                    merged.append(item)
            in_patch, server_only = _partition(merged, patch, "")
            return _normalize_order(in_patch, server_only, patch, original, "")
        if not merge_key:
            raise bad_request(f"cannot merge lists without merge key for {'.'.join(path)}")
        return self._merge_keyed(original, patch, merge_key, path)

    def _merge_keyed(
        self, original: list[Any], patch: list[Any], key: str, path: Path
    ) -> list[Any]:
        live = list(original)
        plain: list[dict[str, Any]] = []
        replace = False
        for item in patch:
            if _DIRECTIVE not in item:
                plain.append(item)
                continue
            directive = item[_DIRECTIVE]
            if directive == "delete":
                if key not in item:
                    raise _no_merge_key(item, key)
                live = [o for o in live if not json_equal(o.get(key), item[key]) or key not in o]
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                raise bad_request("merging lists cannot yet be specified in the patch")
            else:
                raise bad_request(
                    f"unknown patch type: {go_value(directive)} in map: {go_value(item)}"
                )
        if replace:
            # ``{"$patch": "replace"}``: the other items are the whole list.
            return [self._fresh(item, path) for item in plain]
        merged = list(live)
        for item in plain:
            if key not in item:
                raise _no_merge_key(item, key)
            index = _index(merged, item, key)
            if index >= 0:
                result = self.merge_map(merged[index], item, path)
            else:
                result = self.merge_map({}, item, path)
            if isinstance(result, _Deleted):  # pragma: no cover - items with $patch are split off
                continue
            if index >= 0:
                merged[index] = result
            else:
                merged.append(result)
        in_patch, server_only = _partition(merged, list(plain), key)
        return _normalize_order(in_patch, server_only, list(plain), live, key)

    def _fresh(self, value: Any, path: Path) -> Any:
        """A patch value with nothing to merge into: apply it to an empty value."""
        if isinstance(value, dict):
            merged = self.merge_map({}, value, path)
            return {} if isinstance(merged, _Deleted) else merged
        if isinstance(value, list):
            return [self._fresh(v, path) for v in value]
        return value


def strategic_merge_patch(
    original: dict[str, Any], patch: dict[str, Any], list_type: ListTypeResolver
) -> dict[str, Any]:
    """Apply a Kubernetes strategic merge patch to a built-in object.

    ``list_type`` tells how each list merges: by ``merge_key`` (containers by
    name, ports by containerPort...), as a set of primitives (finalizers), or
    atomically (the patch list replaces the live one). Supported directives:
    ``null`` deletion, ``$patch: replace|delete`` in maps and as list items,
    ``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and
    ``$setElementOrder/<field>``. No ``$``-prefixed key survives in the result.
    Malformed directives raise a 400 ``ApiError``.
    """
    merger = _StrategicMerger(list_type)
    result = merger.merge_map(copy.deepcopy(original), copy.deepcopy(patch), ())
    return {} if isinstance(result, _Deleted) else result


# --------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------

_BUILTIN_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH_YAML)
_CUSTOM_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH_YAML)


def _unsupported(content_type: str, builtin: bool) -> ApiError:
    """415 for a patch type the kind does not take (strategic merge for a custom
    resource): the types it takes. A Content-Type that is no patch type at all is
    refused before, as ``415: Unsupported Media Type``."""
    if content_type not in _BUILTIN_PATCH_TYPES:
        return unsupported_patch_type()
    error = unsupported_media_type(content_type)
    accepted = _BUILTIN_PATCH_TYPES if builtin else _CUSTOM_PATCH_TYPES
    error.message = (
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )
    error.args = (error.message,)
    return error


def apply_patch(
    content_type: str,
    original: dict[str, Any],
    body: Any,
    list_type: ListTypeResolver,
    *,
    builtin: bool,
) -> dict[str, Any]:
    """Apply a PATCH request body of ``content_type`` to ``original``.

    Handles JSON merge patch, JSON patch and (for built-in kinds only)
    strategic merge patch; media-type parameters such as ``charset`` are
    ignored. Server-side apply is not handled here: its content types raise
    ``ValueError`` so the caller can route them. Custom resources refuse
    strategic merge patch with 415, as the apiserver does, and unknown types
    get the same 415.
    """
    media = content_type.split(";", 1)[0].strip()
    if media in {APPLY_PATCH_YAML, _APPLY_PATCH_CBOR}:
        raise ValueError(f"{media} is server-side apply; it is not handled by kubesim.patch")
    if media == MERGE_PATCH:
        if not isinstance(body, dict):
            raise bad_request("Invalid JSON Patch")
        result = merge_patch(original, body)
    elif media == JSON_PATCH:
        result = json_patch(original, body)
    elif media == STRATEGIC_MERGE_PATCH and builtin:
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise bad_request(
                f"json: cannot unmarshal {unmarshal_kind(body)} into Go value of type "
                "map[string]interface {}"
            )
        result = strategic_merge_patch(original, body, list_type)
    else:
        raise _unsupported(content_type, builtin)
    if not isinstance(result, dict):  # pragma: no cover - root is never replaceable above
        raise bad_request("the patched object is not a JSON object")
    return result
