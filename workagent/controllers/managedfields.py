"""Whether a manifest's status rules may read its object's ``metadata.managedFields``.

The coalesced LISTs of :mod:`workagent.polledreads` drop ``managedFields``
(three quarters of a small ConfigMap) unless some reader needs them. OCM's
agent GETs whole objects for its status syncs, so a feedback JSONPath or a
CEL expression over ``managedFields`` works there and must work here: a
manifest whose rules might read them asks for whole objects.

The answer errs on the side of "yes": anything not plainly a named field
below the object, or below ``metadata`` other than ``managedFields`` (a
JSONPath with wildcards, recursive descent or filters; ``metadata`` or the
object used as a whole, e.g. with ``RawFeedbackJsonString``; a computed map
key in CEL) counts as reading them. Well-known feedback and conditions read
fixed fields of ``status`` only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from schemas.work_v1 import (
    ConditionRule,
    ConditionRuleType,
    FeedbackRule,
    FeedbackRuleType,
    ManifestConfigOption,
)
from workagent.feedback.jsonpath import JSONPathParseError, compile_path

MANAGED_FIELDS = "managedFields"
#: A named field after an identifier: ``.name`` or ``['name']`` / ``["name"]``.
_FIELD = r"""\s*(?:\.\s*(?P<dot>[A-Za-z_]\w*)|\[\s*(?P<q>['"])(?P<key>[^'"\\]*)(?P=q)\s*\])"""
_OBJECT = re.compile(r"\bobject\b")
_OBJECT_FIELD = re.compile(r"\bobject" + _FIELD)
_METADATA = re.compile(r"\bmetadata\b")
_METADATA_FIELD = re.compile(r"\bmetadata" + _FIELD)


def path_reads_managed_fields(path: str) -> bool:
    """Whether a feedback JSONPath may select ``metadata.managedFields`` or a part of it."""
    if MANAGED_FIELDS in path:
        return True
    try:
        fields = compile_path(path).fields
    except JSONPathParseError:
        return False  # never evaluated: the rule reports the parse error
    if fields is None:
        return True  # wildcards, recursive descent, filters, slices: anything
    # An empty name (``.``) selects the object itself, as ``@`` does.
    names = [f for f in fields if f]
    # The object itself, or its metadata as a whole (raw JSON feedback).
    return names == ["metadata", MANAGED_FIELDS][: len(names)]


def cel_reads_managed_fields(expression: str) -> bool:
    """Whether a CEL expression over ``object`` may read ``metadata.managedFields``.

    Every use of ``object`` and ``metadata`` must select a named field (and
    that of ``metadata`` must not be ``managedFields``); anything else, say
    ``object[k]``, ``size(object.metadata)`` or ``dyn(object)``, may.
    """
    if MANAGED_FIELDS in expression:
        return True
    if len(_OBJECT.findall(expression)) != len(_OBJECT_FIELD.findall(expression)):
        return True
    return len(_METADATA.findall(expression)) != len(_METADATA_FIELD.findall(expression))


def _feedback_reads(rules: Iterable[FeedbackRule]) -> bool:
    return any(
        path_reads_managed_fields(path.path)
        for rule in rules
        if rule.type == FeedbackRuleType.JSON_PATHS
        for path in rule.json_paths or ()
    )


def _conditions_read(rules: Iterable[ConditionRule]) -> bool:
    return any(
        cel_reads_managed_fields(source)
        for rule in rules
        if rule.type == ConditionRuleType.CEL
        for source in [*(rule.cel_expressions or ()), rule.message_expression]
        if source
    )


def reads_managed_fields(option: ManifestConfigOption | None) -> bool:
    """Whether the feedback or condition rules of ``option`` may read ``managedFields``."""
    if option is None:
        return False
    return _feedback_reads(option.feedback_rules or ()) or _conditions_read(
        option.condition_rules or ()
    )
