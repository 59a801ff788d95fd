"""Status feedback values and the ``StatusFeedbackSynced`` condition of one manifest
(spec/agent.md section 11; OCM ``statusfeedback/reader.go``).

Pure and synchronous: given the feedback rules of the manifest's config and the
live object, compute the wire-form ``statusFeedback.values`` and the condition.
Nothing raises out of :func:`read_feedback`; every failure is a message in the
condition, and the values that could be read are still reported, as OCM does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ocmkit.govalues import (
    GoJSONError,
    JSONTooLong,
    go_marshal,
    go_type_name,
    is_go_int64,
)
from schemas.wire import (
    REASON_NO_STATUS_FEEDBACK_SYNCED,
    REASON_STATUS_FEEDBACK_SYNC_FAILED,
    REASON_STATUS_FEEDBACK_SYNCED,
)
from schemas.work_v1 import FeedbackRule, FeedbackRuleType
from workagent.conditions.reasons import MAX_MESSAGE_CHARS
from workagent.feedback.jsonpath import (
    MAX_PATH_LENGTH,
    JSONPathEvalError,
    JSONPathParseError,
    WorkBudget,
    compile_path,
)
from workagent.feedback.wellknown import (
    WELL_KNOWN_STATUS_PATHS,
    GroupVersionKind,
    group_version_kind,
)

__all__ = ["FeedbackResult", "is_cheap", "read_feedback"]

#: Marks a message cut to metav1.Condition's limit (MAX_MESSAGE_CHARS): a longer one
#: would make the hub reject the whole status patch (OCM does not cut it).
_TRUNCATED: Final = " ... (truncated)"
#: How much of an over-long path is quoted back in its error message.
_PATH_QUOTE: Final = 128

FeedbackValue = dict[str, Any]
Condition = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """What the feedback rules of one manifest produced.

    ``values`` are wire-form FeedbackValues (``{"name", "fieldValue": {"type",
    "integer"|"string"|"boolean"|"jsonRaw"}}``) in rule order, then path order.
    ``condition`` is ``(status, reason, message)`` of ``StatusFeedbackSynced``.
    """

    values: list[FeedbackValue]
    condition: Condition


class _FeedbackError(Exception):
    """One rule or path failed; ``str()`` is the message OCM would report."""


#: ``jsonRaw``'s maxLength in the ManifestWork CRD: the hub refuses longer values.
HUB_JSON_RAW_LIMIT: Final = 1024


def read_feedback(
    rules: Sequence[FeedbackRule] | None,
    obj: Mapping[str, Any],
    *,
    raw_json: bool,
    max_json_raw_length: int,
) -> FeedbackResult:
    """Read the status feedback values of ``obj`` (the live object) for ``rules``.

    ``raw_json`` is the ``RawFeedbackJsonString`` feature gate: objects, arrays,
    non-integer numbers and multiple matches become ``JsonRaw`` values instead
    of errors. ``max_json_raw_length`` (``--max-json-raw-length``) bounds a
    JsonRaw value in UTF-8 bytes, capped at the hub CRD's own limit
    (:data:`HUB_JSON_RAW_LIMIT`). All paths share one JSONPath work budget, so
    however many paths a rule lists, reading them costs at most about a second
    of CPU.
    """
    if not rules:
        return FeedbackResult([], ("True", REASON_NO_STATUS_FEEDBACK_SYNCED, ""))
    # A longer value would make the hub refuse the whole status patch on every sync
    # (OCM's agent wedges so); beyond the cap it is this value's error instead.
    max_json_raw_length = min(max_json_raw_length, HUB_JSON_RAW_LIMIT)

    reader = _Reader(obj, raw_json, max_json_raw_length)
    gvk = group_version_kind(obj)
    for rule in rules:
        try:
            reader.read_rule(rule, gvk)
        except Exception as exc:  # a bug or an unforeseen input must not stop the status sync
            reader.errors.append(
                f"failed to read status feedback: internal error: {type(exc).__name__}: {exc}"
            )

    errors = reader.errors
    values = _first_of_each_name(reader.values, errors)
    if errors:
        message = _truncate(f"Sync status feedback failed with error {_aggregate(errors)}")
        return FeedbackResult(values, ("False", REASON_STATUS_FEEDBACK_SYNC_FAILED, message))
    return FeedbackResult(values, ("True", REASON_STATUS_FEEDBACK_SYNCED, ""))


@dataclass
class _Reader:
    """The values and errors of one object's rules, read with one shared work budget."""

    obj: Mapping[str, Any]
    raw_json: bool
    max_json_raw_length: int
    budget: WorkBudget = field(default_factory=WorkBudget)
    values: list[FeedbackValue] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def read_rule(self, rule: FeedbackRule, gvk: GroupVersionKind) -> None:
        if rule.type == FeedbackRuleType.WELL_KNOWN_STATUS:
            paths = WELL_KNOWN_STATUS_PATHS.get(gvk)
            if paths is None:
                self.errors.append(
                    f"cannot find the wellknown statuses for resource with gvk {gvk}"
                )
                return
            for name, path in paths:
                self.read_path(name, path)
        elif rule.type == FeedbackRuleType.JSON_PATHS:
            for json_path in rule.json_paths or ():
                if json_path.version and json_path.version != gvk.version:
                    self.errors.append(
                        f"version set in the path {json_path.name} is not matched "
                        "for the related resource"
                    )
                    continue
                self.read_path(json_path.name, json_path.path)
        # Any other type reads nothing, as in OCM (the CRD enum prevents it).

    def read_path(self, name: str, path: str) -> None:
        try:
            value = self._value_by_path(name, path)
        except _FeedbackError as exc:
            self.errors.append(str(exc))
            return
        except Exception as exc:  # a bug or an unforeseen input must not hide the other values
            self.errors.append(
                f"failed to find value for {name} with error: internal error: "
                f"{type(exc).__name__}: {exc}"
            )
            return
        if value is not None:
            self.values.append(value)

    def _value_by_path(self, name: str, path: str) -> FeedbackValue | None:
        """OCM's ``getValueByJsonPath``: the typed value, None for no value, or an error."""
        raw_json, max_json_raw_length = self.raw_json, self.max_json_raw_length
        try:
            template = compile_path(path)
        except JSONPathParseError as exc:
            quoted = path if len(path) <= MAX_PATH_LENGTH else path[:_PATH_QUOTE] + "..."
            raise _FeedbackError(
                f"failed to parse json path {quoted} of {name} with error: {exc}"
            ) from None
        try:
            results = template.find_results(self.obj, self.budget)
        except JSONPathEvalError as exc:
            raise _FeedbackError(f"failed to find value for {name} with error: {exc}") from None

        if not results or not results[0]:
            return None
        first = results[0]
        # Several matches (or result sets) make a JSON list of the first set's values, only
        # with the gate; otherwise the first value wins.
        single = len(results) == 1 and len(first) == 1
        value: Any = first[0] if single or not raw_json else list(first)
        if value is None:
            return None

        if isinstance(value, bool):
            return {"name": name, "fieldValue": {"type": "Boolean", "boolean": value}}
        if is_go_int64(value):
            return {"name": name, "fieldValue": {"type": "Integer", "integer": int(value)}}
        if isinstance(value, str):
            return {"name": name, "fieldValue": {"type": "String", "string": str(value)}}

        # Objects, arrays, floats (and Go-only types such as a path's int literal).
        if not raw_json:
            raise _FeedbackError(
                f"the type {go_type_name(value)} of the value for {name} is not found"
            )
        too_long = _FeedbackError(
            f"the length of returned json raw string for name {name} is larger than "
            f"the maximum length {max_json_raw_length}"
        )
        try:
            raw = go_marshal(value, limit=max(max_json_raw_length, 0))
        except JSONTooLong:
            raise too_long from None
        except GoJSONError as exc:
            raise _FeedbackError(
                f"failed to parse the resource to json string for name {name}: {exc}"
            ) from None
        # go_marshal bounded the characters; Go compares the byte length of the encoding.
        if not raw.isascii() and len(raw.encode("utf-8")) > max_json_raw_length:
            raise too_long
        return {"name": name, "fieldValue": {"type": "JsonRaw", "jsonRaw": raw}}


def _first_of_each_name(values: list[FeedbackValue], errors: list[str]) -> list[FeedbackValue]:
    """``values`` without repeated names, an error for each name read twice.

    ``statusFeedback.values`` is a list map keyed by name: the hub refuses a
    status listing a name twice (OCM sends it and gets every status patch of
    the work refused). Two rules may read the same name, e.g. WellKnownStatus
    and JSONPaths, or two JSONPaths rules.
    """
    seen: set[str] = set()
    unique: list[FeedbackValue] = []
    for value in values:
        name = value["name"]
        if name in seen:
            errors.append(
                f"the value name {name} is read by more than one feedback rule; "
                "only the first value is reported"
            )
            continue
        seen.add(name)
        unique.append(value)
    return unique


def _aggregate(messages: list[str]) -> str:
    """apimachinery's ``utilerrors.NewAggregate(errs).Error()``: nested aggregates are
    flattened and duplicate messages dropped; one message is shown as is,
    several as ``[m1, m2]``."""
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def _truncate(message: str) -> str:
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - len(_TRUNCATED)] + _TRUNCATED


def is_cheap(rules: Sequence[FeedbackRule] | None) -> bool:
    """Whether reading ``rules`` costs next to nothing: no rules, well-known
    statuses, and JSONPaths that are plain field chains (or do not even parse).

    Other paths (recursive descent, wildcards, filters, ranges) may take up to
    the JSONPath work budget, about a second of CPU: callers on an event loop
    run :func:`read_feedback` in a thread for those.
    """
    for rule in rules or ():
        if rule.type != FeedbackRuleType.JSON_PATHS:
            continue
        for json_path in rule.json_paths or ():
            try:
                template = compile_path(json_path.path)
            except JSONPathParseError:
                continue
            if template.fields is None:
                return False
    return True
