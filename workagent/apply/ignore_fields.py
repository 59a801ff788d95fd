"""``serverSideApply.ignoreFields``: removing fields from a manifest (spec/agent.md 5.4 step 3.1).

Three ways to name a field, each with OCM's error handling:

* ``jsonPaths``: the path is split on ``.``; the part before the last
  segment is evaluated as a Kubernetes JSONPath (missing keys allowed) by
  the client-go port the status feedback uses
  (:mod:`workagent.feedback.jsonpath`, as OCM uses client-go's for both) and
  the last segment's key is deleted from every map it selects. Errors are
  only logged. Keys containing ``.`` cannot be addressed this way.
* ``jsonPointers``: a JSON-Patch ``remove`` at the pointer, with
  evanphx/json-patch semantics: a missing path is ignored, any other
  failure (a bad array index) is an :class:`IgnoreFieldsError`.
* ``jqPathExpressions``: jq ``del(<expr>)`` (:mod:`workagent.apply.jq`) with a
  1 s limit; every failure is an :class:`IgnoreFieldsError`.

Only ``OnSpokePresent`` entries remove anything: ``OnSpokeChange`` fields
stay in the hashed manifest, so a hub-side change to them is applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import structlog

from schemas.work_v1 import IgnoreField, IgnoreFieldsCondition
from workagent.apply.base import IgnoreFieldsError
from workagent.apply.jq import JqError, JqParseError, JqTimeout, delete_paths
from workagent.feedback.jsonpath import JSONPathError, compile_path

log = structlog.get_logger(__name__)

JQ_TIMEOUT_SECONDS: Final = 1.0


def select_by_jsonpath(obj: Any, path: str) -> list[Any]:
    """Every value (not a copy) the JSONPath ``path`` selects; raises JSONPathError."""
    return [value for found in compile_path(path).find_results(obj) for value in found]


def remove_by_jsonpath(obj: dict[str, Any], path: str) -> None:
    """Delete the field a ``jsonPaths`` entry names, in place; errors are logged only."""
    last_key = path.rsplit(".", maxsplit=1)[-1]
    # Go's strings.TrimSuffix: unchanged when the suffix is absent.
    suffix = "." + last_key
    parent = path[: -len(suffix)] if path.endswith(suffix) else path
    try:
        found = select_by_jsonpath(obj, parent)
    except JSONPathError as exc:
        log.warning("ignoreFields jsonPath not usable", path=path, error=str(exc))
        return
    for value in found:
        if isinstance(value, dict):
            value.pop(last_key, None)


class _PointerMissing(Exception):
    """The pointer names nothing: not an error for ignoreFields."""


def _decode(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _list_index(items: list[Any], token: str) -> int:
    try:
        index = int(token)
    except ValueError:
        raise ValueError(f'strconv.Atoi: parsing "{token}": invalid syntax') from None
    if index >= len(items) or index < -len(items):
        raise ValueError(f"Unable to access invalid index: {index}")
    return index + len(items) if index < 0 else index


def _remove_pointer(doc: Any, pointer: str) -> None:
    """JSON-Patch ``remove`` in place, evanphx/json-patch style (missing: _PointerMissing)."""
    split = pointer.split("/")
    if len(split) < 2:
        raise _PointerMissing(pointer)
    container = doc
    for part in split[1:-1]:
        key = _decode(part)
        if isinstance(container, dict):
            nxt = container.get(key)
        elif isinstance(container, list):
            try:
                nxt = container[_list_index(container, key)]
            except ValueError:
                raise _PointerMissing(pointer) from None
        else:
            raise _PointerMissing(pointer)
        if not isinstance(nxt, dict | list):
            raise _PointerMissing(pointer)
        container = nxt
    key = _decode(split[-1])
    if isinstance(container, dict):
        if key not in container:
            raise _PointerMissing(pointer)
        del container[key]
    else:  # a list: the manifest and every step above are dicts or lists
        del container[_list_index(container, key)]


def remove_by_pointer(obj: dict[str, Any], pointer: str) -> None:
    """Delete the field a ``jsonPointers`` entry names, in place.

    A pointer to nothing is ignored; raises IgnoreFieldsError otherwise.
    """
    try:
        _remove_pointer(obj, pointer)
    except _PointerMissing:
        log.debug("ignoreFields JSON pointer not found, skipped", pointer=pointer)
    except ValueError as exc:
        raise IgnoreFieldsError(
            f"JSON Pointer error in '{pointer}': failed to apply JSON Pointer patch: "
            f"error in remove for path: '{pointer}': {exc}"
        ) from exc


def remove_by_jq(obj: dict[str, Any], expression: str) -> dict[str, Any]:
    """The object after jq ``del(<expression>)``; raises IgnoreFieldsError on any failure."""

    def fail(detail: str) -> IgnoreFieldsError:
        return IgnoreFieldsError(f"JQ expression error in '{expression}': {detail}")

    try:
        result = delete_paths(obj, expression, timeout=JQ_TIMEOUT_SECONDS)
    except JqParseError as exc:
        raise fail(f"failed to parse jq expression: {exc}") from exc
    except JqTimeout as exc:
        raise fail("jq expression execution timed out after 1s") from exc
    except JqError as exc:
        raise fail(f"jq expression returned error: {exc}") from exc
    if not isinstance(result, dict):
        raise fail("jq expression result is not a valid object")
    return result


def trim(manifest: dict[str, Any], ignore_fields: Iterable[IgnoreField]) -> dict[str, Any]:
    """``manifest`` without the fields of every ``OnSpokePresent`` entry (mutated and returned)."""
    for entry in ignore_fields:
        if entry.condition == IgnoreFieldsCondition.ON_SPOKE_CHANGE:
            continue
        for path in entry.json_paths or []:
            remove_by_jsonpath(manifest, path)
        for pointer in entry.json_pointers or []:
            remove_by_pointer(manifest, pointer)
        for expression in entry.jq_path_expressions or []:
            manifest = remove_by_jq(manifest, expression)
    return manifest
