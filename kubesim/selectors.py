"""Label and field selectors, parsed and matched the way kube-apiserver does.

Label selectors come in two shapes: the query-string syntax of ``?labelSelector=``
(``parse_label_selector``) and the structured ``metav1.LabelSelector`` found in
workload specs (``label_selector_from_api``). Both produce a ``LabelSelector``.

Field selectors (``?fieldSelector=``) only support equality terms over a small,
per-kind set of fields; ``field_support`` tells which fields a kind offers and
how to read them from an object.

Error messages follow the apiserver's wording, because clients (and tests that
compare against a real cluster) show them verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import bad_request
from kubesim.jsonvalues import dig, go_quote

__all__ = [
    "FieldSelector",
    "FieldSupport",
    "FieldTerm",
    "LabelSelector",
    "Requirement",
    "field_support",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "label_selector_from_api",
    "max_len_error",
    "parse_field_selector",
    "parse_label_selector",
    "regex_error",
]

KindFields = Callable[[Mapping[str, Any]], Mapping[str, str]]

# --------------------------------------------------------------------------
# Name and value rules shared with validation (apimachinery util/validation)
# --------------------------------------------------------------------------

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(_QNAME_FMT)
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_QNAME_FMT})?"
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Word a regex failure like apimachinery's ``RegexError``.

    The doubled space before ``or`` is what the apiserver really prints.
    """
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int, unit: str = "characters") -> str:
    """The apiserver's wording for an over-long string (label keys and values: bytes)."""
    return f"must be no more than {length} {unit}"


def is_dns1123_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as a DNS-1123 subdomain (empty list: valid)."""
    errs: list[str] = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Problems with ``value`` as a qualified name (label key, finalizer, ...)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63, "bytes"))
    if not _QNAME_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Problems with ``value`` as a label value (empty list: valid)."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append(max_len_error(63, "bytes"))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_strings(values: Sequence[str] | None) -> str:
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def _aggregate(messages: list[str]) -> str:
    # Aggregated Go errors print bare when alone, bracketed otherwise.
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# --------------------------------------------------------------------------
# Label selectors
# --------------------------------------------------------------------------

IN = "in"
NOT_IN = "notin"
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
EXISTS = "exists"
DOES_NOT_EXIST = "!"
GREATER_THAN = "gt"
LESS_THAN = "lt"

_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"


@dataclass(frozen=True)
class Requirement:
    """One term of a label selector: ``key <operator> values``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this term."""
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            # An absent label satisfies a negative term.
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator in (IN, NOT_IN):
            # Values print sorted, as the apiserver normalizes them on output.
            return f"{self.key} {self.operator} ({','.join(sorted(self.values))})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{self.values[0] if self.values else ''}"


def _new_requirement(key: str, operator: str, values: Sequence[str] | None) -> Requirement:
    """Build a requirement, checking it as ``labels.NewRequirement`` does."""
    errs: list[str] = []
    key_problem = _key_problem(key)
    if key_problem:
        errs.append(f"key: {key_problem}")
    vals = list(values) if values is not None else None
    count = len(vals or [])
    shown = _go_strings(vals)
    if operator in (IN, NOT_IN):
        if count == 0:
            errs.append(
                f"values: Invalid value: {shown}: for 'in', 'notin' operators, "
                "values set can't be empty"
            )
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if count != 1:
            errs.append(
                f"values: Invalid value: {shown}: "
                "exact-match compatibility requires one single value"
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if count != 0:
            errs.append(
                f"values: Invalid value: {shown}: values set must be empty for exists and "
                "does not exist"
            )
    elif operator in (GREATER_THAN, LESS_THAN):
        if count != 1:
            errs.append(
                f"values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one value "
                "is required"
            )
        for i, v in enumerate(vals or []):
            if not re.fullmatch(r"[+-]?[0-9]+", v):
                errs.append(
                    f"values[{i}]: Invalid value: {go_quote(v)}: for 'Gt', 'Lt' operators, "
                    "the value must be an integer"
                )
    for i, v in enumerate(vals or []):
        problems = is_valid_label_value(v)
        if problems:
            errs.append(f"values[{i}][{key}]: Invalid value: {go_quote(v)}: {'; '.join(problems)}")
    if errs:
        raise ValueError(_aggregate(errs))
    return Requirement(key, operator, tuple(vals or ()))


def _key_problem(key: str) -> str | None:
    problems = is_qualified_name(key)
    return f"Invalid value: {go_quote(key)}: {'; '.join(problems)}" if problems else None


class LabelSelector:
    """A conjunction of label requirements.

    ``LabelSelector()`` (no requirements) matches everything;
    ``LabelSelector.nothing()`` matches nothing, which is what a missing
    (``None``) ``metav1.LabelSelector`` means for workload controllers.
    """

    __slots__ = ("_nothing", "_requirements")

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False) -> None:
        self._requirements = tuple(sorted(requirements, key=lambda r: r.key))
        self._nothing = nothing

    @classmethod
    def everything(cls) -> LabelSelector:
        """A selector that matches every object."""
        return cls()

    @classmethod
    def nothing(cls) -> LabelSelector:
        """A selector that matches no object."""
        return cls(nothing=True)

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The terms, sorted by key as the apiserver sorts them."""
        return self._requirements

    @property
    def empty(self) -> bool:
        """True for the match-everything selector."""
        return not self._nothing and not self._requirements

    @property
    def matches_nothing(self) -> bool:
        """True for the match-nothing selector."""
        return self._nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object carrying ``labels`` is selected."""
        if self._nothing:
            return False
        have = labels or {}
        return all(r.matches(have) for r in self._requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        if self._nothing:
            return "LabelSelector.nothing()"
        return f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self._nothing == other._nothing and self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash((self._nothing, self._requirements))


# Lexer tokens of the selector syntax.
_IDENT = "identifier"
_EOS = "end of string"
_KEYWORDS = {"in": IN, "notin": NOT_IN}
_SYMBOLS = {
    "!": "!",
    "!=": "!=",
    "(": "(",
    ")": ")",
    ",": ",",
    "=": "=",
    "==": "==",
    ">": ">",
    "<": "<",
}
_SPECIAL_CHARS = frozenset("=!(),<>")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(text: str) -> list[tuple[str, str]]:
    """Split a selector into ``(token, literal)`` pairs, ending with end-of-string."""
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            tokens.append((_EOS, ""))
            return tokens
        ch = text[i]
        if ch in _SPECIAL_CHARS:
            # Longest run of symbol characters that still forms a token.
            j, best = i, ""
            while j < n and text[j] in _SPECIAL_CHARS:
                candidate = text[i : j + 1]
                if candidate in _SYMBOLS:
                    best = candidate
                elif best:
                    break
                j += 1
            tokens.append((_SYMBOLS[best], best))
            i += len(best)
        else:
            j = i
            while j < n and text[j] not in _WHITESPACE and text[j] not in _SPECIAL_CHARS:
                j += 1
            word = text[i:j]
            tokens.append((_KEYWORDS.get(word, _IDENT), word))
            i = j


class _Parser:
    """Recursive-descent parser over the token list (apimachinery's grammar)."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def _peek(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.tokens[self.pos]
        # ``in``/``notin`` are only operators where an operator is expected.
        if values and tok in (IN, NOT_IN):
            tok = _IDENT
        return tok, lit

    def _next(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self._peek(values)
        if self.pos < len(self.tokens) - 1:
            self.pos += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self._peek()
            if tok in (_IDENT, "!"):
                try:
                    reqs.append(self._requirement())
                except ValueError as exc:
                    raise ValueError(f"unable to parse requirement: {exc}") from None
                t, lit2 = self._next()
                if t == _EOS:
                    return reqs
                if t == ",":
                    t2, l2 = self._peek()
                    if t2 not in (_IDENT, "!"):
                        raise ValueError(f"found '{l2}', expected: identifier after ','")
                    continue
                raise ValueError(f"found '{lit2}', expected: ',' or 'end of string'")
            if tok == _EOS:
                return reqs
            raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        key, operator = self._key_and_operator()
        if operator in (EXISTS, DOES_NOT_EXIST):
            return _new_requirement(key, operator, [])
        operator = self._operator()
        values = self._value_set() if operator in (IN, NOT_IN) else self._exact_value()
        return _new_requirement(key, operator, sorted(set(values)))

    def _key_and_operator(self) -> tuple[str, str]:
        operator = ""
        tok, lit = self._next()
        if tok == "!":
            operator = DOES_NOT_EXIST
            tok, lit = self._next()
        if tok != _IDENT:
            raise ValueError(f"found '{lit}', expected: identifier")
        problem = _key_problem(lit)
        if problem:
            # The apiserver parses without a field path, hence the odd "<nil>".
            raise ValueError(f"<nil>: {problem}")
        after, _ = self._peek()
        if after in (_EOS, ",") and operator != DOES_NOT_EXIST:
            operator = EXISTS
        return lit, operator

    def _operator(self) -> str:
        tok, lit = self._next(values=False)
        mapping = {
            IN: IN,
            NOT_IN: NOT_IN,
            "=": EQUALS,
            "==": DOUBLE_EQUALS,
            "!=": NOT_EQUALS,
            ">": GREATER_THAN,
            "<": LESS_THAN,
        }
        if tok not in mapping:
            raise ValueError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return mapping[tok]

    def _value_set(self) -> list[str]:
        tok, lit = self._next()
        if tok != "(":
            raise ValueError(f"found '{lit}' expected: '('")
        tok, lit = self._peek()
        if tok in (_IDENT, ","):
            values = self._identifier_list()
            tok2, _ = self._next()
            if tok2 != ")":
                raise ValueError(f"found '{lit}', expected: ')'")
            return values
        if tok == ")":
            self._next()
            return [""]
        raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")

    def _identifier_list(self) -> list[str]:
        values: list[str] = []
        while True:
            tok, lit = self._next()
            if tok == _IDENT:
                values.append(lit)
                tok2, lit2 = self._peek()
                if tok2 == ",":
                    continue
                if tok2 == ")":
                    return values
                raise ValueError(f"found '{lit2}', expected: ',' or ')'")
            if tok == ",":
                # Empty members, as in "(,a)" or "(a,,b)", stand for "".
                if not values:
                    values.append("")
                tok2, _ = self._peek()
                if tok2 == ")":
                    values.append("")
                    return values
                if tok2 == ",":
                    self._next()
                    values.append("")
                continue
            raise ValueError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> list[str]:
        tok, _ = self._peek()
        if tok in (_EOS, ","):
            return [""]
        tok, lit = self._next()
        if tok == _IDENT:
            return [lit]
        raise ValueError(f"found '{lit}', expected: identifier")


def parse_label_selector(s: str) -> LabelSelector:
    """Parse the ``?labelSelector=`` syntax.

    Raises a 400 ``ApiError`` worded like the apiserver on bad syntax or on
    invalid keys and values. The empty string selects everything.
    """
    try:
        return LabelSelector(_Parser(s).parse())
    except ValueError as exc:
        raise bad_request(str(exc)) from None


_API_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_api(sel: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` object into a ``LabelSelector``.

    ``None`` selects nothing and ``{}`` selects everything, as for workload
    controllers. Raises a 400 ``ApiError`` for an invalid selector.
    """
    if sel is None:
        return LabelSelector.nothing()
    match_labels = sel.get("matchLabels") or {}
    expressions = sel.get("matchExpressions") or []
    if not match_labels and not expressions:
        return LabelSelector.everything()
    reqs: list[Requirement] = []
    try:
        for key, value in match_labels.items():
            reqs.append(_new_requirement(str(key), EQUALS, [str(value)]))
        for expr in expressions:
            op_name = expr.get("operator", "")
            if op_name not in _API_OPERATORS:
                raise ValueError(f"{go_quote(str(op_name))} is not a valid pod selector operator")
            values = expr.get("values")
            reqs.append(
                _new_requirement(
                    str(expr.get("key", "")),
                    _API_OPERATORS[op_name],
                    [str(v) for v in values] if values else None,
                )
            )
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return LabelSelector(reqs)


# --------------------------------------------------------------------------
# Field selectors
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldTerm:
    """One ``field=value`` (or, negated, ``field!=value``) term."""

    field: str
    negated: bool
    value: str


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    start, i = 0, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == sep:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _unescape_value(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                seq = value[i : i + 2]
                raise ValueError(f"invalid field selector: invalid escape sequence: {seq}")
            out.append(value[i + 1])
            i += 2
            continue
        if ch in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {ch}")
        out.append(ch)
        i += 1
    return "".join(out)


def _split_term(term: str) -> tuple[str, str, str] | None:
    # The first operator occurrence wins; "!=" and "==" before "=" at a position.
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _meta_fields(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {
        "metadata.name": str(meta.get("name") or ""),
        "metadata.namespace": str(meta.get("namespace") or ""),
    }


@dataclass(frozen=True)
class FieldSelector:
    """A conjunction of ``field=value`` / ``field!=value`` terms.

    ``kind_fields`` reads the kind-specific selectable fields of an object;
    ``metadata.name`` and ``metadata.namespace`` are always available. Without
    ``kind_fields``, other fields are read by their dotted path (a lenient
    fallback; ``field_support`` gives the exact per-kind sets). A field an
    object lacks reads as the empty string, so ``spec.nodeName=`` selects
    unscheduled pods.
    """

    terms: tuple[FieldTerm, ...] = ()
    kind_fields: KindFields | None = field(default=None, compare=False)

    @property
    def empty(self) -> bool:
        """True when the selector has no terms (matches everything)."""
        return not self.terms

    @property
    def fields(self) -> set[str]:
        """The field names this selector refers to."""
        return {t.field for t in self.terms}

    def exact_value(self, name: str) -> str | None:
        """The value required by a ``name=value`` term, if there is one."""
        for t in self.terms:
            if t.field == name and not t.negated:
                return t.value
        return None

    def check(self, supported: set[str] | frozenset[str], *, generic: bool = False) -> None:
        """Reject fields outside ``supported`` with the apiserver's 400.

        ``generic`` selects the wording of kinds without their own field-label
        conversion (``"x" is not a known field selector: only ...``); otherwise
        the message is ``field label not supported: x``.
        """
        for t in self.terms:
            if t.field in supported:
                continue
            if generic:
                raise bad_request(
                    f'{go_quote(t.field)} is not a known field selector: only "metadata.name", '
                    '"metadata.namespace"'
                )
            raise bad_request(f"field label not supported: {t.field}")

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` satisfies every term."""
        if not self.terms:
            return True
        values = _meta_fields(obj)
        if self.kind_fields is not None:
            values.update(self.kind_fields(obj))
        else:
            # Without a kind's field set, read other fields by their dotted path.
            for t in self.terms:
                if t.field not in values:
                    found = dig(obj, *t.field.split("."))
                    values[t.field] = "" if isinstance(found, Mapping | list) else _s(found)
        for t in self.terms:
            equal = values.get(t.field, "") == t.value
            if equal == t.negated:
                return False
        return True

    def __str__(self) -> str:
        def esc(v: str) -> str:
            return v.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")

        return ",".join(f"{t.field}{'!=' if t.negated else '='}{esc(t.value)}" for t in self.terms)


def parse_field_selector(s: str, kind_fields: KindFields | None = None) -> FieldSelector:
    """Parse the ``?fieldSelector=`` syntax (``=``, ``==``, ``!=``, comma for AND).

    Which fields are allowed is checked separately with ``FieldSelector.check``.
    Raises a 400 ``ApiError`` on bad syntax.
    """
    terms: list[FieldTerm] = []
    for part in sorted(_split_unescaped(s, ",")):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise bad_request(f"invalid selector: '{s}'; can't understand '{part}'")
        lhs, op, rhs = split
        try:
            value = _unescape_value(rhs)
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        terms.append(FieldTerm(lhs, op == "!=", value))
    return FieldSelector(tuple(terms), kind_fields)


# --------------------------------------------------------------------------
# Selectable fields per kind
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSupport:
    """What a kind offers to field selectors.

    ``custom`` is true when the kind registers its own field-label conversion,
    which changes the error wording (see ``FieldSelector.check``).
    """

    fields: frozenset[str]
    getter: KindFields | None
    custom: bool


def _s(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _pod_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return {
        "spec.nodeName": _s(dig(obj, "spec", "nodeName")),
        "spec.restartPolicy": _s(dig(obj, "spec", "restartPolicy")),
        "spec.schedulerName": _s(dig(obj, "spec", "schedulerName")),
        "spec.serviceAccountName": _s(dig(obj, "spec", "serviceAccountName")),
        "status.phase": _s(dig(obj, "status", "phase")),
        "status.podIP": _s(dig(obj, "status", "podIP")),
        "status.nominatedNodeName": _s(dig(obj, "status", "nominatedNodeName")),
    }


def _event_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    inv = obj.get("involvedObject") or {}
    source = _s(dig(obj, "source", "component")) or _s(obj.get("reportingComponent"))
    out = {f"involvedObject.{k}": _s(inv.get(k)) for k in _INVOLVED_KEYS}
    out.update(
        {
            "reason": _s(obj.get("reason")),
            "reportingComponent": _s(obj.get("reportingComponent")),
            "source": source,
            "type": _s(obj.get("type")),
        }
    )
    return out


_INVOLVED_KEYS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


def _secret_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return {"type": _s(obj.get("type"))}


def _namespace_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return {"status.phase": _s(dig(obj, "status", "phase"))}


def _node_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return {"spec.unschedulable": _s(bool(dig(obj, "spec", "unschedulable")))}


def _rc_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return {"status.replicas": _s(dig(obj, "status", "replicas") or 0)}


def _job_fields(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return {"status.successful": _s(dig(obj, "status", "succeeded") or 0)}


_META = ("metadata.name", "metadata.namespace")

_CUSTOM_FIELDS: dict[tuple[str, str], tuple[tuple[str, ...], KindFields]] = {
    ("", "Pod"): (
        (
            *_META,
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
        _pod_fields,
    ),
    ("", "Event"): (
        (
            *_META,
            *(f"involvedObject.{k}" for k in _INVOLVED_KEYS),
            "reason",
            "reportingComponent",
            "source",
            "type",
        ),
        _event_fields,
    ),
    ("", "Secret"): ((*_META, "type"), _secret_fields),
    ("", "Namespace"): (("metadata.name", "status.phase"), _namespace_fields),
    ("", "Node"): (("metadata.name", "spec.unschedulable"), _node_fields),
    ("", "ReplicationController"): ((*_META, "status.replicas"), _rc_fields),
    ("batch", "Job"): ((*_META, "status.successful"), _job_fields),
}


def field_support(
    group: str, kind: str, *, namespaced: bool = True, custom_resource: bool = False
) -> FieldSupport:
    """The selectable fields of ``group``/``kind`` and how to read them.

    Custom resources offer ``metadata.name`` (and ``metadata.namespace`` when
    namespaced) with the ``field label not supported`` wording; built-in kinds
    without their own conversion accept both metadata fields with the generic
    wording.
    """
    if custom_resource:
        names = {"metadata.name"} | ({"metadata.namespace"} if namespaced else set())
        return FieldSupport(frozenset(names), None, True)
    known = _CUSTOM_FIELDS.get((group, kind))
    if known is not None:
        return FieldSupport(frozenset(known[0]), known[1], True)
    return FieldSupport(frozenset(_META), None, False)
