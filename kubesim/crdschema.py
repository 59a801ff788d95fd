"""What kube-apiserver does to a custom object with a structural OpenAPI v3 schema.

On create, update and patch of a custom object the apiserver, in this order:

1. **prunes** fields the schema does not know (``properties`` /
   ``additionalProperties`` / ``x-kubernetes-preserve-unknown-fields``), keeps
   ``apiVersion``, ``kind`` and ``metadata`` of the object and of every
   ``x-kubernetes-embedded-resource``, and drops unknown fields inside those
   ``metadata`` (they round-trip through ``ObjectMeta``);
2. **defaults** absent fields (and non-nullable nulls) from ``default``;
3. **validates** the result against the OpenAPI schema, the list-type
   invariants and the ``x-kubernetes-validations`` CEL rules, reporting every
   error as a ``StatusCause`` worded as the apiserver words it.

:class:`CRDSchema` does this for one version's ``openAPIV3Schema``;
:func:`validate_crd_schema` checks, on the CRD create path, that a schema is
structural enough to accept. What is served (which version, the ``status``
subresource, ``metadata`` validation) is the caller's concern.

Fidelity limits (see also :func:`unsupported_rules`):

* Wording follows kube-apiserver v1.24 (the recorded reference server):
  ``Too long: may not be longer than N``, CEL failures as
  ``Invalid value: "object": <message>``. Features newer than 1.24 that are
  implemented anyway (``messageExpression``, ``reason``, ``fieldPath``, CEL
  skipped after blocking schema errors) use the newer servers' wording.
* CEL runs on cel-python, not cel-go: rules it cannot parse or evaluate
  (missing Kubernetes library functions, heterogeneous numeric comparisons,
  optional syntax ...) are treated as *passing* and recorded in
  :func:`unsupported_rules`. There is no CEL cost budget; rules over
  :data:`MAX_RULE_CHARS` characters or :data:`MAX_RULE_NESTING` brackets deep
  are not evaluated (recorded as unsupported). Evaluation is synchronous and
  CPU-bound.
* Validation ratcheting (1.28+) is not emulated; nor is the ``ObjectMeta``
  validation of embedded resources' ``metadata`` (only ``apiVersion`` and
  ``kind`` are checked) or the check that ``default`` values validate.
* ``format: int32`` / ``int64`` are not range-checked, as in the apiserver
  (kube-openapi's type validator accepts any integer for them). Checked string
  formats: ``date-time``, ``date``, ``byte``, ``uuid``/``uuid3``/``uuid4``/
  ``uuid5``, ``ipv4``, ``ipv6``, ``cidr``, ``hostname``; others pass.
* ``pattern`` is evaluated with Python's ``re`` (ASCII classes), not RE2;
  a pattern Python cannot compile is not enforced.
* ``additionalProperties: true`` keeps map values as they are; junctor
  (``anyOf``/``oneOf``) failures report the alternative with the fewest
  errors, approximating kube-openapi's "best" alternative.
"""

from __future__ import annotations

import base64
import copy
import datetime
import ipaddress
import json
import math
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from kubesim.errors import field_required, invalid
from kubesim.jsonvalues import json_equal, schema_type
from kubesim.objectmeta import OBJECT_META_FIELDS

Cause = dict[str, Any]

#: Longest CEL rule (characters) this emulator evaluates.
MAX_RULE_CHARS: Final = 4096
#: Deepest bracket nesting of a CEL rule this emulator evaluates.
MAX_RULE_NESTING: Final = 32

_TYPES: Final = ("array", "boolean", "integer", "number", "object", "string")

# ObjectMeta's JSON fields (v1.24 still had ``clusterName``; v1.35 prunes it).
_OBJECT_META_FIELDS: Final = frozenset(OBJECT_META_FIELDS)
# Pointer fields keep a zero value through the ObjectMeta round trip.
_META_POINTER_FIELDS: Final = frozenset({"deletionTimestamp", "deletionGracePeriodSeconds"})

_BLOCKING_REASONS: Final = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
_BLOCKED_CEL_MESSAGE: Final = (
    'Invalid value: "null": some validation rules were not checked because the object was '
    "invalid; correct the existing errors to complete validation"
)


# --------------------------------------------------------------------------
# Field paths
# --------------------------------------------------------------------------

# A path segment: ("f", name) for a property, ("k", key) for a map key,
# ("i", index) for a list position.
_Seg = tuple[str, str | int]
_Path = tuple[_Seg, ...]


def _child(path: _Path, name: str) -> _Path:
    return (*path, ("f", name))


def _key(path: _Path, key: str) -> _Path:
    return (*path, ("k", key))


def _index(path: _Path, i: int) -> _Path:
    return (*path, ("i", i))


def _field_str(path: _Path) -> str:
    """``field.Path.String()``: ``a.b[0][key]``; ``<nil>`` for the root."""
    if not path:
        return "<nil>"
    out = ""
    for kind, value in path:
        if kind == "f":
            out += f".{value}" if out else str(value)
        else:
            out += f"[{value}]"
    return out


def _schema_name(path: _Path) -> str:
    """The name kube-openapi gives a value: map keys are dotted like properties."""
    out = ""
    for kind, value in path:
        if kind == "i":
            out += f"[{value}]"
        else:
            out += f".{value}" if out else str(value)
    return out


def _schema_field(path: _Path) -> str:
    """The cause field of a kube-openapi error (its name under a nil root path)."""
    return _schema_name(path) or "<nil>"


# --------------------------------------------------------------------------
# Go value formatting (messages must read like Go's fmt output)
# --------------------------------------------------------------------------


def _go_quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _go_float(f: float) -> str:
    """``fmt`` ``%v`` of a float64 (shortest digits, ``%e`` past 1e+06)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exp = Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exp, int)
    ds = "".join(str(d) for d in digits)
    point = len(ds) + exp  # position of the decimal point
    x = point - 1
    neg = "-" if sign else ""
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{ds}"
    if point >= len(ds):
        return f"{neg}{ds}{'0' * (point - len(ds))}"
    return f"{neg}{ds[:point]}.{ds[point:]}"


def _go_v(value: Any) -> str:
    """How ``field.Error`` prints a bad value (``%q`` strings, ``%#v`` compounds, null quoted)."""
    return '"null"' if value is None else _go_sharp_v(value)


def _go_sharp_v(value: Any) -> str:
    """``%#v`` of an unstructured JSON value."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return _go_quote(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_sharp_v(v) for v in value) + "}"
    if isinstance(value, dict):
        inner = ", ".join(f"{_go_quote(k)}:{_go_sharp_v(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    return _go_quote(str(value))


def _bound(limit: float, data: int | float) -> str:
    """A numeric limit as kube-openapi prints it (integers for integer data)."""
    if isinstance(data, int):
        return str(math.trunc(limit))
    return _go_float(float(limit))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --------------------------------------------------------------------------
# Causes
# --------------------------------------------------------------------------


def _cause(reason: str, fld: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": fld}


def _invalid_cause(fld: str, value: Any, detail: str) -> Cause:
    return _cause("FieldValueInvalid", fld, f"Invalid value: {_go_v(value)}: {detail}")


def _type_cause(path: _Path, actual: str, expected: str) -> Cause:
    name = _schema_name(path)
    return _cause(
        "FieldValueTypeInvalid",
        _schema_field(path),
        f"Invalid value: {_go_quote(actual)}: {name} in body must be of type {expected}: "
        f"{_go_quote(actual)}",
    )


# --------------------------------------------------------------------------
# String formats (go-openapi strfmt semantics)
# --------------------------------------------------------------------------

_TIME_RE: Final = re.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
)
_DATE_RE: Final = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_BASE64_RE: Final = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
)
_UUID_RES: Final = {
    "uuid": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid4": re.compile(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    ),
    "uuid5": re.compile(
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    ),
}
_HOSTNAME_LABEL_RE: Final = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$")


def _is_date(s: str) -> bool:
    m = _DATE_RE.match(s)
    if not m:
        return False
    try:
        datetime.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _is_date_time(s: str) -> bool:
    parts = s.lower().split("t")
    if len(s) < 4 or len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME_RE.match(parts[1])
    if m is None:
        return False
    return m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _is_ip(s: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(s).version == version
    except ValueError:
        return False


def _is_cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


def _is_hostname(s: str) -> bool:
    if not s or len(s) > 255:
        return False
    return all(_HOSTNAME_LABEL_RE.match(p) for p in s.rstrip(".").split("."))


def _matcher(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: rx.match(s) is not None


_FORMATS: Final[dict[str, Callable[[str], bool]]] = {
    "date-time": _is_date_time,
    "datetime": _is_date_time,
    "date": _is_date,
    "byte": lambda s: bool(_BASE64_RE.match(s)) and _b64ok(s),
    "ipv4": lambda s: _is_ip(s, 4),
    "ipv6": lambda s: _is_ip(s, 6),
    "cidr": _is_cidr,
    "hostname": _is_hostname,
    **{name: _matcher(rx) for name, rx in _UUID_RES.items()},
}


def _b64ok(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------
# CEL (cel-python)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class UnsupportedRule:
    """A CEL rule this emulator could not evaluate and treated as passing."""

    rule: str
    detail: str


_lock = threading.Lock()
_unsupported: list[UnsupportedRule] = []
_env: Any = None
# Compiled programs by expression text: a celpy Runner, or the reason why not.
_programs: dict[str, Any] = {}
_PROGRAM_CACHE_MAX: Final = 4096


def unsupported_rules() -> list[UnsupportedRule]:
    """CEL rules seen so far that cel-python could not handle (treated as passing).

    This is a fidelity limit of the emulator: the real apiserver would have
    evaluated them. Each rule appears once per distinct reason.
    """
    with _lock:
        return list(_unsupported)


def reset_unsupported_rules() -> None:
    """Forget the recorded unsupported rules (for tests)."""
    with _lock:
        _unsupported.clear()


def _record_unsupported(rule: str, detail: str) -> None:
    entry = UnsupportedRule(rule, detail[:300])
    with _lock:
        if entry not in _unsupported:
            _unsupported.append(entry)


def _cel_env() -> Any:
    # One Environment (and so one runner type, the interpreted default) per
    # process: celpy's parser is a class-level singleton. Creating it raises
    # the recursion limit to 2500 globally, once.
    global _env
    with _lock:
        if _env is None:
            _env = celpy.Environment()
        return _env


def _s(value: Any) -> str:
    return str(value)


def _ascii_case(text: str, upper: bool) -> str:
    if upper:
        return "".join(c.upper() if c.isascii() else c for c in text)
    return "".join(c.lower() if c.isascii() else c for c in text)


def _cel_split(text: Any, sep: Any, n: Any = -1) -> Any:
    t, p, limit = _s(text), _s(sep), int(n)
    if limit == 0:
        return celtypes.ListType([])
    if p == "":
        parts = list(t)
        if limit > 0 and len(parts) > limit:
            parts = [*parts[: limit - 1], "".join(parts[limit - 1 :])]
    else:
        parts = t.split(p, limit - 1) if limit > 0 else t.split(p)
    return celtypes.ListType([celtypes.StringType(x) for x in parts])


def _cel_index_of(target: Any, item: Any, start: Any = 0) -> Any:
    if isinstance(target, str):
        return celtypes.IntType(_s(target).find(_s(item), int(start)))
    for i, v in enumerate(target):
        if v == item:
            return celtypes.IntType(i)
    return celtypes.IntType(-1)


def _cel_last_index_of(target: Any, item: Any) -> Any:
    if isinstance(target, str):
        return celtypes.IntType(_s(target).rfind(_s(item)))
    for i in range(len(target) - 1, -1, -1):
        if target[i] == item:
            return celtypes.IntType(i)
    return celtypes.IntType(-1)


def _cel_substring(text: Any, start: Any, end: Any = None) -> Any:
    t = _s(text)
    a = int(start)
    b = len(t) if end is None else int(end)
    if not 0 <= a <= b <= len(t):
        raise IndexError(f"index out of range: {a}")
    return celtypes.StringType(t[a:b])


def _cel_find(text: Any, regex: Any) -> Any:
    m = re.search(_s(regex), _s(text))
    return celtypes.StringType(m.group(0) if m else "")


def _cel_find_all(text: Any, regex: Any, n: Any = -1) -> Any:
    found = [m.group(0) for m in re.finditer(_s(regex), _s(text))]
    if int(n) >= 0:
        found = found[: int(n)]
    return celtypes.ListType([celtypes.StringType(x) for x in found])


def _cel_is_sorted(items: Any) -> Any:
    return celtypes.BoolType(all(items[i] <= items[i + 1] for i in range(len(items) - 1)))


# A subset of the Kubernetes CEL libraries cel-python lacks (strings, lists, regex).
_CEL_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "lowerAscii": lambda t: celtypes.StringType(_ascii_case(_s(t), upper=False)),
    "upperAscii": lambda t: celtypes.StringType(_ascii_case(_s(t), upper=True)),
    "trim": lambda t: celtypes.StringType(_s(t).strip()),
    "replace": lambda t, old, new, n=-1: celtypes.StringType(
        _s(t).replace(_s(old), _s(new), int(n))
    ),
    "split": _cel_split,
    "join": lambda items, sep="": celtypes.StringType(_s(sep).join(_s(x) for x in items)),
    "indexOf": _cel_index_of,
    "lastIndexOf": _cel_last_index_of,
    "substring": _cel_substring,
    "charAt": lambda t, i: celtypes.StringType(_s(t)[int(i)] if int(i) < len(_s(t)) else ""),
    "find": _cel_find,
    "findAll": _cel_find_all,
    "isSorted": _cel_is_sorted,
    "sum": lambda items: sum(items[1:], start=items[0]) if len(items) else celtypes.IntType(0),
    "min": min,
    "max": max,
}


def _nesting(expr: str) -> int:
    depth = best = 0
    for ch in expr:
        if ch in "([{":
            depth += 1
            best = max(best, depth)
        elif ch in ")]}":
            depth -= 1
    return best


def _compile(expr: str) -> Any:
    """A cached celpy program for ``expr``, or a string saying why there is none."""
    with _lock:
        cached = _programs.get(expr)
    if cached is not None:
        return cached
    result: Any
    if len(expr) > MAX_RULE_CHARS:
        result = f"longer than {MAX_RULE_CHARS} characters"
    elif _nesting(expr) > MAX_RULE_NESTING:
        result = f"nested deeper than {MAX_RULE_NESTING} brackets"
    else:
        env = _cel_env()
        try:
            result = env.program(env.compile(expr), functions=_CEL_FUNCTIONS)
        except CELParseError as exc:
            result = f"cel-python cannot parse it: {str(exc).splitlines()[0]}"
        except Exception as exc:  # celpy internals: never fail the request
            result = f"cel-python cannot compile it: {type(exc).__name__}: {exc}"
    with _lock:
        if len(_programs) >= _PROGRAM_CACHE_MAX:
            _programs.clear()
        _programs[expr] = result
    return result


class _Unsupported(Exception):
    """cel-python could not evaluate an expression that cel-go can."""


class _EvalFailure(Exception):
    """A genuine CEL runtime error (no such key, division by zero ...)."""


def _evaluate(program: Any, activation: dict[str, Any]) -> Any:
    try:
        result = program.evaluate(activation)
    except CELEvalError as exc:
        result = exc
    except RecursionError as exc:
        raise _Unsupported("recursion too deep for cel-python") from exc
    except Exception as exc:  # celpy internals
        raise _Unsupported(f"cel-python failed: {type(exc).__name__}: {exc}") from exc
    if isinstance(result, CELEvalError):
        raise _classify(result)
    return result


def _classify(err: Exception) -> Exception:
    args = err.args
    text = str(args[0]) if args else str(err)
    text = text.split(" (in activation", 1)[0]
    kind = args[1] if len(args) > 1 else None
    if text.startswith("no such member in mapping: "):
        return _EvalFailure("no such key: " + text.split(": ", 1)[1].strip("'"))
    if kind is ZeroDivisionError:
        return _EvalFailure("division by zero")
    if kind is IndexError:
        return _EvalFailure("index out of bounds")
    # Unknown functions ("undeclared reference"), overloads cel-go has and
    # celpy lacks (int < double ...): not the object's fault.
    return _Unsupported(text[:300])


@dataclass(eq=False)
class _Rule:
    rule: str
    message: str
    message_expression: str
    reason: str
    field_path: str
    uses_old_self: bool


_OLD_SELF_RE: Final = re.compile(r"\boldSelf\b")


def _parse_rules(raw: Any) -> list[_Rule]:
    rules: list[_Rule] = []
    if not isinstance(raw, list):
        return rules
    for entry in raw:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("rule"), str):
            continue
        text = entry["rule"]
        rules.append(
            _Rule(
                rule=text,
                message=str(entry.get("message") or ""),
                message_expression=str(entry.get("messageExpression") or ""),
                reason=str(entry.get("reason") or ""),
                field_path=str(entry.get("fieldPath") or ""),
                uses_old_self=bool(_OLD_SELF_RE.search(text)),
            )
        )
        # Compile now so unparseable rules are recorded once, up front.
        program = _compile(text)
        if isinstance(program, str):
            _record_unsupported(text, program)
    return rules


# --------------------------------------------------------------------------
# Schema nodes
# --------------------------------------------------------------------------


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _num_or_none(value: Any) -> int | float | None:
    return value if _is_number(value) else None


@dataclass(eq=False)
class _Node:
    """One schema node, parsed once."""

    type: str = ""
    nullable: bool = False
    preserve: bool = False
    embedded: bool = False
    int_or_string: bool = False
    properties: dict[str, _Node] = field(default_factory=dict)
    # None: absent; True: any value kept as is; a node: the values' schema.
    additional: _Node | bool | None = None
    items: _Node | None = None
    has_default: bool = False
    default: Any = None
    enum: list[Any] | None = None
    required: list[str] = field(default_factory=list)
    format: str = ""
    max_length: int | None = None
    min_length: int | None = None
    pattern: str | None = None
    regex: re.Pattern[str] | None = None
    maximum: int | float | None = None
    minimum: int | float | None = None
    exclusive_maximum: bool = False
    exclusive_minimum: bool = False
    multiple_of: int | float | None = None
    max_items: int | None = None
    min_items: int | None = None
    max_properties: int | None = None
    min_properties: int | None = None
    list_type: str = ""
    list_map_keys: list[str] = field(default_factory=list)
    all_of: list[_Node] = field(default_factory=list)
    any_of: list[_Node] = field(default_factory=list)
    one_of: list[_Node] = field(default_factory=list)
    not_: _Node | None = None
    rules: list[_Rule] = field(default_factory=list)


_regex_cache: dict[str, re.Pattern[str] | None] = {}


def _compile_pattern(pattern: str) -> re.Pattern[str] | None:
    if pattern not in _regex_cache:
        try:
            # RE2's \d, \w, \s are ASCII-only.
            _regex_cache[pattern] = re.compile(pattern, re.ASCII)
        except re.error:
            _regex_cache[pattern] = None
    return _regex_cache[pattern]


def _parse(raw: Any) -> _Node:
    if not isinstance(raw, Mapping):
        return _Node()
    node = _Node(
        type=_str_or_empty(raw.get("type")),
        nullable=raw.get("nullable") is True,
        preserve=raw.get("x-kubernetes-preserve-unknown-fields") is True,
        embedded=raw.get("x-kubernetes-embedded-resource") is True,
        int_or_string=raw.get("x-kubernetes-int-or-string") is True,
        format=_str_or_empty(raw.get("format")),
        max_length=_int_or_none(raw.get("maxLength")),
        min_length=_int_or_none(raw.get("minLength")),
        maximum=_num_or_none(raw.get("maximum")),
        minimum=_num_or_none(raw.get("minimum")),
        exclusive_maximum=raw.get("exclusiveMaximum") is True,
        exclusive_minimum=raw.get("exclusiveMinimum") is True,
        multiple_of=_num_or_none(raw.get("multipleOf")),
        max_items=_int_or_none(raw.get("maxItems")),
        min_items=_int_or_none(raw.get("minItems")),
        max_properties=_int_or_none(raw.get("maxProperties")),
        min_properties=_int_or_none(raw.get("minProperties")),
        list_type=str(raw.get("x-kubernetes-list-type") or ""),
        rules=_parse_rules(raw.get("x-kubernetes-validations")),
    )
    props = raw.get("properties")
    if isinstance(props, Mapping):
        node.properties = {str(k): _parse(v) for k, v in props.items()}
    additional = raw.get("additionalProperties")
    if isinstance(additional, Mapping):
        node.additional = _parse(additional)
    elif isinstance(additional, bool):
        node.additional = additional
    if isinstance(raw.get("items"), Mapping):
        node.items = _parse(raw["items"])
    if isinstance(raw.get("enum"), list):
        node.enum = list(raw["enum"])
    if isinstance(raw.get("required"), list):
        node.required = [str(r) for r in raw["required"]]
    if isinstance(raw.get("pattern"), str):
        node.pattern = raw["pattern"]
        node.regex = _compile_pattern(raw["pattern"])
    keys = raw.get("x-kubernetes-list-map-keys")
    if isinstance(keys, list):
        node.list_map_keys = [str(k) for k in keys]
    for name, attr in (("allOf", "all_of"), ("anyOf", "any_of"), ("oneOf", "one_of")):
        if isinstance(raw.get(name), list):
            setattr(node, attr, [_parse(s) for s in raw[name]])
    if isinstance(raw.get("not"), Mapping):
        node.not_ = _parse(raw["not"])
    if "default" in raw:
        node.has_default = True
        # Defaults are pruned like any value (the apiserver requires them pruned).
        node.default = _prune_value(copy.deepcopy(raw["default"]), node)
    return node


# --------------------------------------------------------------------------
# Pruning
# --------------------------------------------------------------------------


def _coerce_meta(meta: dict[str, Any]) -> None:
    """Round-trip ``metadata`` through ObjectMeta: unknown and empty fields go."""
    for k in list(meta):
        v = meta[k]
        if k not in _OBJECT_META_FIELDS or v is None:
            del meta[k]
        elif k not in _META_POINTER_FIELDS and v in ("", 0, {}, []) and not isinstance(v, bool):
            del meta[k]  # omitempty


def _prune_value(value: Any, node: _Node | None, *, root: bool = False) -> Any:
    """Prune ``value`` in place against ``node`` (None: no schema) and return it."""
    if node is not None and node.preserve and not root:
        _skip_prune(value, node)
        return value
    if isinstance(value, dict):
        if node is None:
            value.clear()
            return value
        for k in list(value):
            v = value[k]
            if _keep_meta(k, v, node.embedded or root):
                continue
            if node.preserve:  # preserving root: only known fields are pruned
                sub = node.properties.get(k)
                if sub is not None:
                    _prune_property(value, k, sub)
                continue
            prop = node.properties.get(k)
            if prop is not None:
                _prune_property(value, k, prop)
            elif isinstance(node.additional, _Node):
                _prune_value(v, node.additional)
            elif node.additional is not True:
                del value[k]
    elif isinstance(value, list):
        items = node.items if node is not None else None
        for item in value:
            _prune_value(item, items)
    return value


def _prune_property(obj: dict[str, Any], key: str, prop: _Node) -> None:
    # A null the schema does not allow, and has no default for, is dropped
    # before defaulting (a default replaces it instead).
    if obj[key] is None and not prop.nullable and not prop.has_default:
        del obj[key]
    else:
        _prune_value(obj[key], prop)


def _keep_meta(key: str, value: Any, embedded: bool) -> bool:
    """apiVersion/kind/metadata of a resource survive pruning (metadata coerced)."""
    if not embedded:
        return False
    if key in ("apiVersion", "kind"):
        return isinstance(value, str)
    if key == "metadata" and isinstance(value, dict):
        _coerce_meta(value)
        return True
    return False


def _skip_prune(value: Any, node: _Node | None) -> None:
    """Below preserve-unknown-fields: unknown fields stay, known ones are pruned."""
    if node is None:
        return
    if isinstance(value, dict):
        for k in list(value):
            v = value[k]
            if _keep_meta(k, v, node.embedded):
                continue
            prop = node.properties.get(k)
            if prop is not None:
                _prune_property(value, k, prop)
            elif isinstance(node.additional, _Node):
                _prune_value(v, node.additional)
    elif isinstance(value, list):
        for item in value:
            _skip_prune(item, node.items)


# --------------------------------------------------------------------------
# Defaulting
# --------------------------------------------------------------------------


def _null_to_default(value: Any, node: _Node) -> bool:
    return value is None and not node.nullable and node.has_default


def _default_value(value: Any, node: _Node | None) -> None:
    if node is None:
        return
    if isinstance(value, dict):
        for k, prop in node.properties.items():
            if prop.has_default and (k not in value or _null_to_default(value[k], prop)):
                value[k] = copy.deepcopy(prop.default)
        for k in list(value):
            sub = node.properties.get(k)
            if sub is not None:
                _default_value(value[k], sub)
            elif isinstance(node.additional, _Node):
                if _null_to_default(value[k], node.additional):
                    value[k] = copy.deepcopy(node.additional.default)
                _default_value(value[k], node.additional)
    elif isinstance(value, list) and node.items is not None:
        for i, item in enumerate(value):
            if _null_to_default(item, node.items):
                value[i] = copy.deepcopy(node.items.default)
            _default_value(value[i], node.items)


# --------------------------------------------------------------------------
# OpenAPI validation (kube-openapi semantics and wording)
# --------------------------------------------------------------------------


def _type_matches(expected: str, value: Any) -> bool:
    if expected == "object":
        return isinstance(value, dict)
    if expected == "array":
        return isinstance(value, list)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return _is_number(value)
    if expected == "number":
        return _is_number(value)
    return True


def _check(node: _Node, value: Any, path: _Path, out: list[Cause]) -> None:
    """Append the schema errors of ``value`` at ``path`` to ``out``."""
    if value is None:
        if node.type and not node.nullable:
            out.append(_type_cause(path, "null", node.type))
        _check_enum(node, value, path, out)
        return
    if node.type and not _type_matches(node.type, value):
        out.append(_type_cause(path, schema_type(value), node.type))
    _check_junctors(node, value, path, out)
    if isinstance(value, str):
        _check_string(node, value, path, out)
    elif _is_number(value):
        _check_number(node, value, path, out)
    elif isinstance(value, list):
        _check_array(node, value, path, out)
    _check_enum(node, value, path, out)
    if isinstance(value, dict):
        _check_object(node, value, path, out)


def _check_enum(node: _Node, value: Any, path: _Path, out: list[Cause]) -> None:
    if node.enum is None or any(json_equal(value, e) for e in node.enum):
        return
    allowed = [e if isinstance(e, str) else json.dumps(e, separators=(",", ":")) for e in node.enum]
    quoted = ", ".join(_go_quote(a) for a in allowed)
    out.append(
        _cause(
            "FieldValueNotSupported",
            _schema_field(path),
            f"Unsupported value: {_go_v(value)}: supported values: {quoted}",
        )
    )


def _check_string(node: _Node, value: str, path: _Path, out: list[Cause]) -> None:
    unconstrained = node.max_length is None and node.min_length is None and node.regex is None
    if unconstrained and node.format not in _FORMATS:
        return  # nothing to check: skip building the names
    name, fld = _schema_name(path), _schema_field(path)
    if node.max_length is not None and len(value) > node.max_length:
        out.append(
            _cause("FieldValueTooLong", fld, f"Too long: may not be longer than {node.max_length}")
        )
    if node.min_length is not None and len(value) < node.min_length:
        detail = f"{name} in body should be at least {node.min_length} chars long"
        out.append(_invalid_cause(fld, value, detail))
    if node.regex is not None and not node.regex.search(value):
        out.append(_invalid_cause(fld, value, f"{name} in body should match '{node.pattern}'"))
    check = _FORMATS.get(node.format)
    if check is not None and not check(value):
        msg = f"{name} in body must be of type {node.format}: {_go_quote(value)}"
        out.append(
            _cause("FieldValueTypeInvalid", fld, f"Invalid value: {_go_quote(value)}: {msg}")
        )


def _check_number(node: _Node, value: int | float, path: _Path, out: list[Cause]) -> None:
    if node.multiple_of is None and node.maximum is None and node.minimum is None:
        return
    name, fld = _schema_name(path), _schema_field(path)
    if node.multiple_of is not None and node.multiple_of > 0:
        ratio = value / node.multiple_of
        if not (math.isfinite(ratio) and float(ratio).is_integer()):
            detail = f"{name} in body should be a multiple of {_go_float(float(node.multiple_of))}"
            out.append(_invalid_cause(fld, value, detail))
    # With integer data kube-openapi compares against the truncated limit.
    if node.maximum is not None:
        limit = math.trunc(node.maximum) if isinstance(value, int) else node.maximum
        excl = node.exclusive_maximum
        if value > limit or (excl and value == limit):
            word = "less than" if excl else "less than or equal to"
            detail = f"{name} in body should be {word} {_bound(node.maximum, value)}"
            out.append(_invalid_cause(fld, value, detail))
    if node.minimum is not None:
        limit = math.trunc(node.minimum) if isinstance(value, int) else node.minimum
        excl = node.exclusive_minimum
        if value < limit or (excl and value == limit):
            word = "greater than" if excl else "greater than or equal to"
            detail = f"{name} in body should be {word} {_bound(node.minimum, value)}"
            out.append(_invalid_cause(fld, value, detail))


def _check_array(node: _Node, value: list[Any], path: _Path, out: list[Cause]) -> None:
    name, fld = _schema_name(path), _schema_field(path)
    if node.min_items is not None and len(value) < node.min_items:
        detail = f"{name} in body should have at least {node.min_items} items"
        out.append(_invalid_cause(fld, len(value), detail))
    if node.max_items is not None and len(value) > node.max_items:
        msg = f"Too many: {len(value)}: must have at most {node.max_items} items"
        out.append(_cause("FieldValueTooMany", fld, msg))
    if node.items is not None:
        for i, item in enumerate(value):
            _check(node.items, item, _index(path, i), out)


def _check_object(node: _Node, value: dict[str, Any], path: _Path, out: list[Cause]) -> None:
    if node.max_properties is not None and len(value) > node.max_properties:
        msg = f"Too many: {len(value)}: must have at most {node.max_properties} items"
        out.append(_cause("FieldValueTooMany", _schema_field(path), msg))
    if node.min_properties is not None and len(value) < node.min_properties:
        name = _schema_name(path)
        detail = f"{name} in body should have at least {node.min_properties} properties"
        out.append(_invalid_cause(_schema_field(path), len(value), detail))
    for req in node.required:
        if req not in value:
            out.append(field_required(_schema_field(_child(path, req))))
    for k, v in value.items():
        prop = node.properties.get(k)
        if prop is not None:
            _check(prop, v, _child(path, k), out)
        elif isinstance(node.additional, _Node):
            _check(node.additional, v, _key(path, k), out)


def _junctor_cause(path: _Path, text: str) -> Cause:
    # Composite kube-openapi errors lose their path: they land on the root.
    return _invalid_cause("<nil>", "", f"{_go_quote(_schema_name(path))} {text}")


def _check_junctors(node: _Node, value: Any, path: _Path, out: list[Cause]) -> None:
    if node.any_of:
        results = [_sub_check(s, value, path) for s in node.any_of]
        if not any(not r for r in results):
            out.append(_junctor_cause(path, "must validate at least one schema (anyOf)"))
            out.extend(_fewest(results))
    if node.one_of:
        results = [_sub_check(s, value, path) for s in node.one_of]
        valid = sum(1 for r in results if not r)
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            text = f"must validate one and only one schema (oneOf). {extra}"
            out.append(_junctor_cause(path, text))
            if valid == 0:
                out.extend(_fewest(results))
    if node.all_of:
        results = [_sub_check(s, value, path) for s in node.all_of]
        for r in results:
            out.extend(r)
        valid = sum(1 for r in results if not r)
        if valid != len(results):
            extra = ". None validated" if valid == 0 else ""
            out.append(_junctor_cause(path, f"must validate all the schemas (allOf){extra}"))
    if node.not_ is not None and not _sub_check(node.not_, value, path):
        out.append(_junctor_cause(path, "must not validate the schema (not)"))


def _fewest(results: list[list[Cause]]) -> list[Cause]:
    # kube-openapi reports the alternative that got furthest; fewest errors is close.
    best = results[0]
    for r in results[1:]:
        if len(r) < len(best):
            best = r
    return best


def _sub_check(node: _Node, value: Any, path: _Path) -> list[Cause]:
    found: list[Cause] = []
    _check(node, value, path, found)
    return found


# --------------------------------------------------------------------------
# Embedded resources and list types
# --------------------------------------------------------------------------

_DNS1035_RE: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _check_embedded(x: dict[str, Any], path: _Path, out: list[Cause]) -> None:
    for k in ("apiVersion", "kind"):
        if k not in x:
            out.append(field_required(_field_str(_child(path, k)), "must not be empty"))
    for k in ("apiVersion", "kind"):
        if k not in x:
            continue
        v, fld = x[k], _field_str(_child(path, k))
        if not isinstance(v, str):
            out.append(_invalid_cause(fld, v, "must be a string"))
        elif not v:
            out.append(_invalid_cause(fld, v, "must not be empty"))
        elif k == "apiVersion" and v.count("/") > 1:
            out.append(_invalid_cause(fld, v, f"unexpected GroupVersion string: {v}"))
        elif k == "kind":
            errs = []
            if len(v) > 63:
                errs.append("must be no more than 63 characters")
            if not _DNS1035_RE.match(v.lower()):
                errs.append(_DNS1035_MSG)
            if errs:
                detail = "may have mixed case, but should otherwise match: " + ",".join(errs)
                out.append(_invalid_cause(fld, v, detail))


def _walk_structure(
    node: _Node | None, value: Any, path: _Path, out: list[Cause], *, root: bool = False
) -> None:
    """Embedded-resource and list-type (set/map uniqueness) checks."""
    if node is None:
        return
    if isinstance(value, dict):
        if node.embedded and not root:
            _check_embedded(value, path, out)
        for k, v in value.items():
            prop = node.properties.get(k)
            if prop is not None:
                _walk_structure(prop, v, _child(path, k), out)
            elif isinstance(node.additional, _Node):
                _walk_structure(node.additional, v, _key(path, k), out)
    elif isinstance(value, list):
        if node.list_type == "set":
            out.extend(_duplicates(value, path, _go_v))
        elif node.list_type == "map":
            out.extend(_map_duplicates(value, node.list_map_keys, path))
        for i, item in enumerate(value):
            _walk_structure(node.items, item, _index(path, i), out)


def _identity(value: Any) -> str:
    # Canonical text of a JSON value; as in Go, 1 (int64) and 1.0 (float64) differ.
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _duplicates(items: list[Any], path: _Path, shown: Callable[[Any], str]) -> list[Cause]:
    """A Duplicate cause at the second appearance of every repeated item (the apiserver
    reports those), the item rendered by ``shown``."""
    seen: dict[str, int] = {}
    out: list[Cause] = []
    for i, item in enumerate(items):
        key = _identity(item)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(
                _cause(
                    "FieldValueDuplicate",
                    _field_str(_index(path, i)),
                    f"Duplicate value: {shown(item)}",
                )
            )
    return out


def _map_duplicates(value: list[Any], key_fields: list[str], path: _Path) -> list[Cause]:
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            detail = "must be an object for an array of list-type map"
            return [_invalid_cause(_field_str(_index(path, i)), item, detail)]
    key_maps = [
        {k: item[k] for k in key_fields if k in item} if isinstance(item, dict) else {}
        for item in value
    ]
    return _duplicates(key_maps, path, _go_sharp_v)


# --------------------------------------------------------------------------
# CEL validation
# --------------------------------------------------------------------------


def _root_self(obj: dict[str, Any]) -> dict[str, Any]:
    """At the root, CEL sees apiVersion, kind and only metadata.name/generateName."""
    view = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        view["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    return view


def _list_item_key(item: Any, keys: list[str]) -> str | None:
    if not isinstance(item, dict):
        return None
    return _identity({k: item.get(k) for k in keys})


# Stands for "no old value" (create, or nothing to correlate with on update).
_NO_OLD: Final = object()


def _or_no_old(old: Any) -> Any:
    # A null old value is no old value: transition rules skip it.
    return _NO_OLD if old is None else old


def _walk_cel(
    node: _Node | None, value: Any, old: Any, path: _Path, out: list[Cause], *, root: bool = False
) -> None:
    if node is None or value is None:
        return  # rules only see non-null values
    if node.rules:
        self_value = _root_self(value) if root and isinstance(value, dict) else value
        old_value = _root_self(old) if root and isinstance(old, dict) else old
        for rule in node.rules:
            _run_rule(rule, node, self_value, old_value, path=path, out=out)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for k, v in value.items():
            sub = node.properties.get(k)
            if sub is None and isinstance(node.additional, _Node):
                sub, sub_path = node.additional, _key(path, k)
            else:
                sub_path = _child(path, k)
            if sub is not None:
                _walk_cel(sub, v, _or_no_old(old_map.get(k)), sub_path, out)
    elif isinstance(value, list) and node.items is not None:
        # Only list-type map items correlate with an old item (by their keys).
        olds: dict[str, Any] = {}
        if isinstance(old, list) and node.list_type == "map" and node.list_map_keys:
            for item in old:
                key = _list_item_key(item, node.list_map_keys)
                if key is not None:
                    olds[key] = item
        for i, item in enumerate(value):
            key = _list_item_key(item, node.list_map_keys) if olds else None
            old_item = olds.get(key) if key is not None else None
            _walk_cel(node.items, item, _or_no_old(old_item), _index(path, i), out)


def _run_rule(
    rule: _Rule, node: _Node, value: Any, old: Any, *, path: _Path, out: list[Cause]
) -> None:
    if rule.uses_old_self and old is _NO_OLD:
        return  # transition rules need a correlated old value
    program = _compile(rule.rule)
    if isinstance(program, str):
        _record_unsupported(rule.rule, program)
        return
    try:
        activation = {"self": json_to_cel(value)}
        if rule.uses_old_self:
            activation["oldSelf"] = json_to_cel(old)
    except Exception as exc:  # values celpy cannot represent (huge integers ...)
        _record_unsupported(rule.rule, f"cel-python cannot convert the value: {exc}")
        return
    fld = _field_str(path)
    try:
        result = _evaluate(program, activation)
    except _Unsupported as exc:
        _record_unsupported(rule.rule, str(exc))
        return
    except _EvalFailure as exc:
        out.append(_invalid_cause(fld, node.type, f"{exc} evaluating rule: {_rule_text(rule)}"))
        return
    if not isinstance(result, celtypes.BoolType):
        _record_unsupported(rule.rule, f"evaluated to {type(result).__name__}, not bool")
        return
    if bool(result):
        return
    detail = _message(rule, activation) or (
        rule.message.strip() or f"failed rule: {_rule_text(rule)}"
    )
    if rule.field_path:
        fld = _field_str((*path, ("f", rule.field_path.lstrip("."))))
    if rule.reason == "FieldValueForbidden":
        out.append(_cause("FieldValueForbidden", fld, f"Forbidden: {detail}"))
    elif rule.reason == "FieldValueRequired":
        out.append(field_required(fld, detail))
    elif rule.reason == "FieldValueDuplicate":
        out.append(_cause("FieldValueDuplicate", fld, f"Duplicate value: {_go_v(node.type)}"))
    else:
        out.append(_invalid_cause(fld, node.type, detail))


def _rule_text(rule: _Rule) -> str:
    return rule.message.strip() if rule.message else rule.rule.strip()


def _message(rule: _Rule, activation: dict[str, Any]) -> str:
    """The evaluated messageExpression, or "" when absent or unusable."""
    if not rule.message_expression:
        return ""
    program = _compile(rule.message_expression)
    if isinstance(program, str):
        _record_unsupported(rule.message_expression, program)
        return ""
    try:
        result = _evaluate(program, activation)
    except _Unsupported as exc:
        _record_unsupported(rule.message_expression, str(exc))
        return ""
    except _EvalFailure:
        return ""
    text = str(result).strip() if isinstance(result, str) else ""
    if not text or "\n" in text or len(text) > 5000:
        return ""
    return text


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


class CRDSchema:
    """Pruning, defaulting and validation for one CRD version's ``openAPIV3Schema``.

    Every method works on a deep copy: inputs are never mutated.
    """

    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self._root = _parse(schema or {"type": "object"})

    def prune(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """``obj`` without the fields the schema does not know."""
        out = copy.deepcopy(dict(obj))
        _prune_value(out, self._root, root=True)
        return out

    def default(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """``obj`` with schema defaults applied where fields are absent (or null)."""
        out = copy.deepcopy(dict(obj))
        _default_value(out, self._root)
        return out

    def causes(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[Cause]:
        """Every validation error of ``obj`` as ``StatusCause`` dicts (``old`` on update).

        Order: OpenAPI schema errors, embedded-resource and list-type errors,
        then CEL rule failures, which are only evaluated when no blocking
        error (type, required, enum, too long, too many) was found.
        """
        value = dict(obj)
        found: list[Cause] = []
        _check(self._root, value, (), found)
        _walk_structure(self._root, value, (), found, root=True)
        if any(c["reason"] in _BLOCKING_REASONS for c in found):
            if _has_rules(self._root):
                found.append(_cause("FieldValueInvalid", "<nil>", _BLOCKED_CEL_MESSAGE))
            return found
        old_value = dict(old) if old is not None else _NO_OLD
        _walk_cel(self._root, value, old_value, (), found, root=True)
        return found

    def validate(
        self,
        obj: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
        *,
        kind: str,
        name: str,
        group: str = "",
    ) -> None:
        """Raise a 422 ``Invalid`` :class:`~kubesim.errors.ApiError` listing every error."""
        found = self.causes(obj, old)
        if found:
            raise invalid(kind, name, found, group)

    def process(
        self,
        obj: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
        *,
        kind: str,
        name: str,
        group: str = "",
    ) -> dict[str, Any]:
        """Prune, default and validate ``obj``; return the object to store."""
        out = self.default(self.prune(obj))
        self.validate(out, old, kind=kind, name=name, group=group)
        return out


def _has_rules(node: _Node) -> bool:
    if node.rules:
        return True
    children = [*node.properties.values(), node.items]
    if isinstance(node.additional, _Node):
        children.append(node.additional)
    return any(c is not None and _has_rules(c) for c in children)


def validate_crd_schema(
    schema: Any, path: str = "spec.versions[0].schema.openAPIV3Schema"
) -> list[Cause]:
    """Causes that make ``schema`` unacceptable as a structural schema (empty: fine).

    Checks that ``type`` is set on every node (except below
    ``x-kubernetes-preserve-unknown-fields`` / ``x-kubernetes-int-or-string``),
    that the root is an object, that ``properties`` and
    ``additionalProperties`` are not combined, that arrays have ``items``, and
    the list-type and embedded-resource extensions. CEL rules cel-python cannot
    parse are recorded in :func:`unsupported_rules`, not rejected.
    """
    out: list[Cause] = []
    if not isinstance(schema, Mapping):
        out.append(field_required(path, ""))
        return out
    _structural(schema, path, out, where="root")
    return out


_MISSING_TYPE: Final = {
    "root": "must not be empty at the root",
    "property": "must not be empty for specified object fields",
    "items": "must not be empty for specified array items",
}


def _structural(s: Mapping[str, Any], path: str, out: list[Cause], where: str) -> None:
    t = s.get("type", "")
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    props = s.get("properties")
    if not isinstance(t, str):
        out.append(_invalid_cause(f"{path}.type", t, "must be a string"))
        t = ""
    if t and t not in _TYPES:
        out.append(
            _cause(
                "FieldValueNotSupported",
                f"{path}.type",
                f"Unsupported value: {_go_quote(t)}: supported values: "
                + ", ".join(_go_quote(x) for x in _TYPES),
            )
        )
    if preserve is False:
        out.append(
            _invalid_cause(
                f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"
            )
        )
    if where == "root":
        if not t:
            out.append(field_required(f"{path}.type", _MISSING_TYPE["root"]))
        elif t != "object":
            out.append(_invalid_cause(f"{path}.type", t, "must be object at the root"))
        meta = props.get("metadata") if isinstance(props, Mapping) else None
        if isinstance(meta, Mapping) and _meta_overspecified(meta):
            out.append(
                _cause(
                    "FieldValueForbidden",
                    f"{path}.properties[metadata]",
                    "Forbidden: must not specify anything other than name and generateName, "
                    "but metadata is implicitly specified",
                )
            )
    elif not t and not int_or_string and preserve is not True:
        out.append(field_required(f"{path}.type", _MISSING_TYPE[where]))
    if int_or_string and t:
        out.append(
            _invalid_cause(f"{path}.type", t, "must be empty if x-kubernetes-int-or-string is true")
        )
    if embedded:
        if t != "object":
            detail = "must be object if x-kubernetes-embedded-resource is true"
            out.append(_invalid_cause(f"{path}.type", t, detail))
        if not props and preserve is not True:
            out.append(
                field_required(
                    f"{path}.properties",
                    "must not be empty if x-kubernetes-embedded-resource is true without "
                    "x-kubernetes-preserve-unknown-fields",
                )
            )
    additional = s.get("additionalProperties")
    if props is not None and additional is not None:
        out.append(
            _cause(
                "FieldValueForbidden",
                f"{path}.additionalProperties",
                "Forbidden: additionalProperties and properties are mutual exclusive",
            )
        )
    if additional is False:
        out.append(
            _cause(
                "FieldValueForbidden",
                f"{path}.additionalProperties",
                "Forbidden: must not be false",
            )
        )
    if t == "array" and not isinstance(s.get("items"), Mapping):
        out.append(field_required(f"{path}.items", "must be specified"))
    _list_type_checks(s, path, out)
    _parse_rules(s.get("x-kubernetes-validations"))  # records what celpy cannot parse
    if isinstance(props, Mapping):
        for k, v in props.items():
            if isinstance(v, Mapping):
                _structural(v, f"{path}.properties[{k}]", out, where="property")
    if isinstance(s.get("items"), Mapping):
        _structural(s["items"], f"{path}.items", out, where="items")
    if isinstance(additional, Mapping):
        _structural(additional, f"{path}.additionalProperties", out, where="property")


def _meta_overspecified(meta: Mapping[str, Any]) -> bool:
    allowed = {"type", "description", "properties"}
    if set(meta) - allowed:
        return True
    props = meta.get("properties")
    return isinstance(props, Mapping) and bool(set(props) - {"name", "generateName"})


def _list_type_checks(s: Mapping[str, Any], path: str, out: list[Cause]) -> None:
    list_type = s.get("x-kubernetes-list-type")
    if list_type is None:
        return
    fld = f"{path}.x-kubernetes-list-type"
    if list_type not in ("atomic", "set", "map"):
        allowed = ", ".join(_go_quote(x) for x in ("atomic", "set", "map"))
        out.append(
            _cause(
                "FieldValueNotSupported",
                fld,
                f"Unsupported value: {_go_v(list_type)}: supported values: {allowed}",
            )
        )
        return
    if s.get("type") != "array":
        out.append(_invalid_cause(fld, list_type, "must only be used if type is array"))
    if list_type != "map":
        return
    keys = s.get("x-kubernetes-list-map-keys")
    keys_fld = f"{path}.x-kubernetes-list-map-keys"
    if not isinstance(keys, list) or not keys:
        detail = "must not be empty if x-kubernetes-list-type is map"
        out.append(field_required(keys_fld, detail))
        return
    items = s.get("items")
    item_props = items.get("properties") if isinstance(items, Mapping) else None
    if isinstance(items, Mapping) and items.get("type") != "object":
        detail = "must be object if parent array's x-kubernetes-list-type is map"
        out.append(_invalid_cause(f"{path}.items.type", items.get("type", ""), detail))
    for k in keys:
        if not isinstance(item_props, Mapping) or k not in item_props:
            detail = "entries must all be names of item properties"
            out.append(_invalid_cause(keys_fld, keys, detail))
            break
