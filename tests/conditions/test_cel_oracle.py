"""Our CEL engine against cel-go itself: the same expressions through both, equal results.

The oracle (tests/conditions/celoracle, built by ``make cel-oracle``) is cel-go
with the libraries and versions OCM's agent compiles condition rules with. The
corpus is every ``expression`` case of the parametrized tests in this folder
plus the ``format`` cases below. For each expression both must agree on the
kind of outcome (value, run-time error, compile error) and on the value, the
run-time error text or the compile errors' text (a syntax error by kind only:
ANTLR words and recovers its own way). What differs on purpose is listed in
:data:`KNOWN_DIFFERENCES` with the reason.
"""

from __future__ import annotations

import ast
import datetime
import importlib
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from celpy.adapter import json_to_cel

from ocmkit.durations import format_duration
from tests.conditions.test_celengine import OBJ
from workagent.conditions import celcheck
from workagent.conditions.celcost import CostTracker
from workagent.conditions.celengine import CelEngine, CompileFailure, run_program
from workagent.conditions.celoptional import CelOptional
from workagent.conditions.celtime import format_timestamp
from workagent.conditions.celvalues import cel_type_name, type_value_name

pytestmark = pytest.mark.realkube

_HERE = Path(__file__).parent
_MODULE = _HERE / "celoracle"
_REPO = _HERE.parent.parent


def _oracle_path() -> Path:
    """Where ``make cel-oracle`` puts the binary (named after the pinned cel-go version)."""
    for line in (_MODULE / "go.mod").read_text().splitlines():
        words = line.split()
        if words[:1] == ["github.com/google/cel-go"]:
            return _REPO / ".tools" / "celoracle" / words[1] / "celoracle"
    raise AssertionError("github.com/google/cel-go is not required by celoracle/go.mod")


def _test_expressions() -> list[str]:
    """The ``expression`` parameter of every parametrized test in tests/conditions."""
    found: list[str] = []
    for path in sorted(_HERE.glob("test_*.py")):
        # The module's own names (``_URL``) are in scope for its parameter lists.
        scope = vars(importlib.import_module(f"tests.conditions.{path.stem}"))
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize"):
                continue
            names, cases = (
                eval(compile(ast.Expression(arg), path, "eval"), scope) for arg in node.args[:2]
            )
            names = [names] if isinstance(names, str) else list(names)
            if "expression" in names:
                at = names.index("expression")
                found += [case if len(names) == 1 else case[at] for case in cases]
    return found


_VALUES = [
    "1",
    "-7",
    "0",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615u",
    "5u",
    "1.0",
    "-0.0",
    "2.5",
    "0.1",
    "1e300",
    "1e-7",
    "123456789.125",
    "1e21",
    "-1.5e-10",
    "0.0/0.0",
    "1.0/0.0",
    "-1.0/0.0",
    "'a'",
    "''",
    "'héllo \"q\"'",
    "b'ab'",
    "b'\\xff'",
    "true",
    "false",
    "null",
    "[]",
    "[1, 'a', 2.5, [b'x'], {'k': null}]",
    "{'b': 1, 'a': 'x'}",
    "{2: 'two', 1: 'one'}",
    "duration('1h30m')",
    "duration('-1.5s')",
    "duration('0.000001s')",
    "timestamp('2023-02-03T23:31:20Z')",
    "timestamp('2023-02-03T23:31:20.123400Z')",
    "int",
    "type(1.0)",
    "type([])",
    "type(null)",
    "object.status.ratio",
    "object.metadata",
    "quantity('1Gi')",
    "ip('1.2.3.4')",
    "url('https://a/b')",
    "[ip('::1')]",
]
_CLAUSES = ["%s", "%d", "%f", "%e", "%x", "%X", "%o", "%b", "%.2f", "%.0e", "%.3s", "%.10f"]
_BAD_TEMPLATES = [
    "%",
    "%.",
    "%.2",
    "%.x",
    "%.101f",
    "%.100f",
    "%.99999999999999999999f",
    "%q",
    "%é",
    "%%",
    "a%%b%s",
    "%s %s",
    "%5d",
]


def _format_cases() -> list[str]:
    cases = [f"'{c}'.format([{v}])" for c in _CLAUSES for v in _VALUES]
    cases += [f"'{t}'.format([1])" for t in _BAD_TEMPLATES]
    cases += [f"'{t}'.format([])" for t in _BAD_TEMPLATES]
    # Dynamic arguments: cel-go cannot check these at compile time.
    cases += [f"'{c}'.format([dyn({v})])" for c in _CLAUSES for v in _VALUES[::3]]
    cases += [
        "'%s and %d, %.3f%%: %x'.format([object.metadata.name, 2, 0.5, 'hi'])",
        "'%s %d'.format([true, true])",
        "'%d %s'.format([object.kind, [1, [2, ip('::1')]]])",
        "'%s'.format([{'a': [quantity('1')]}])",
        "'%s'.format([[object.metadata, object.status.conditions]])",
        "'é %s ü %d'.format(['ö', 'x'])",
        '"""%s\\n%d""".format(["x", "y"])',
        "'%s'.format([1, 2, object.kind])",
        "'%s %s'.format([object.kind])",
        "'%b %o %x %X'.format([-5, -8, -255, 255u])",
        "'%e %f'.format([123456789012345678, 18446744073709551615u])",
        "'%.0f %.1f %.2f'.format([0.5, 0.25, 1.005])",
    ]
    cases += [f"'{t}'.format(dyn([1]))" for t in _BAD_TEMPLATES]
    cases += [f"'{t}'.format(dyn([]))" for t in _BAD_TEMPLATES]
    return cases


#: Expressions whose outcome differs from cel-go's, and why.
KNOWN_DIFFERENCES: dict[str, str] = {}


def _same_compile_error(ours: str, theirs: str) -> bool:
    """Compile errors agree to the letter, but for syntax errors: ANTLR lists the tokens
    it expected and goes on to report what follows the first; ours stops at the first."""
    if "Syntax error:" in theirs:
        return "Syntax error:" in ours
    return ours == theirs


def _tagged(value: Any) -> Any:
    """Our value as the oracle's [type, payload] tree, in comparable form."""
    kind = cel_type_name(value)
    if isinstance(value, type):
        return [kind, type_value_name(value)]
    if isinstance(value, CelOptional):
        return [kind, _tagged(value.value()) if value.present else None]
    if kind == "list":
        return [kind, [_tagged(v) for v in value]]
    if kind == "map":
        return [kind, sorted(([_tagged(k), _tagged(v)] for k, v in value.items()), key=json.dumps)]
    if kind == "double":
        return [kind, _double(float(value))]
    if kind == "bytes":
        return [kind, bytes(value).decode("utf-8", errors="replace")]
    if kind == "google.protobuf.Duration":
        return [kind, format_duration(value // datetime.timedelta(microseconds=1) * 1000)]
    if kind == "google.protobuf.Timestamp":  # RFC 3339 in UTC, to the microsecond we keep
        return [kind, format_timestamp(value.astimezone(datetime.UTC))]
    if kind in ("bool", "int", "uint", "string", "null_type"):
        return [kind, None if value is None else type(value).__mro__[-2](value)]
    return [kind, str(value)]


def _double(f: float) -> Any:
    return repr(f) if math.isnan(f) or math.isinf(f) else f


def _comparable(tree: Any) -> Any:
    """The oracle's tree with doubles as floats and map entries sorted like ours."""
    kind, payload = tree
    if kind == "list":
        return [kind, [_comparable(v) for v in payload]]
    if kind == "map":
        pairs = [[_comparable(k), _comparable(v)] for k, v in payload]
        return [kind, sorted(pairs, key=json.dumps)]
    if kind == "double":
        return [kind, _double(float(payload.replace("Inf", "inf")))]
    if kind == "optional_type" and payload is not None:
        return [kind, _comparable(payload)]
    return [kind, payload]


def _ours(engine: CelEngine, expression: str, *, cost: bool = False) -> dict[str, Any]:
    """Our answer in the oracle's form; with the run's "cost" when ``cost``."""
    program = engine.compile(expression, celcheck.RULE_VARIABLES)
    if isinstance(program, CompileFailure):
        return {"program" if program.internal else "compile": program.text}
    tracker = CostTracker()
    value, error = run_program(program, {"object": json_to_cel(OBJ)}, tracker)
    answer = {"error": error} if error is not None else {"value": _tagged(value)}
    return answer | {"cost": tracker.cost} if cost else answer


def ask_oracle(
    expressions: list[str], obj: dict[str, Any], *, cost: bool = False
) -> list[dict[str, Any]]:
    """cel-go's answers to ``expressions`` (``object`` bound to ``obj``), in their order;
    with each run's "cost" only when ``cost``."""
    oracle = _oracle_path()
    if not oracle.exists():
        pytest.fail(f"{oracle} is not built: run `make cel-oracle` (needs Go and the module proxy)")
    lines = "".join(json.dumps({"expr": e, "object": obj}) + "\n" for e in expressions)
    done = subprocess.run(
        [str(oracle)], input=lines, capture_output=True, text=True, timeout=120, check=True
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(expressions), done.stderr
    for answer in answers if not cost else ():
        answer.pop("cost", None)
    return answers


@pytest.fixture(scope="module")
def oracle_answers() -> dict[str, dict[str, Any]]:
    expressions = list(dict.fromkeys(_test_expressions() + _format_cases()))
    return dict(zip(expressions, ask_oracle(expressions, OBJ, cost=True), strict=True))


def test_corpus_is_broad(oracle_answers: dict[str, dict[str, Any]]) -> None:
    assert len(_test_expressions()) > 150
    # An exception for an expression no test uses any more is a stale entry.
    assert set(KNOWN_DIFFERENCES) <= set(oracle_answers)
    kinds = {key for answer in oracle_answers.values() for key in answer if key != "cost"}
    assert kinds == {"value", "error", "compile", "program"}


def test_engine_matches_cel_go(oracle_answers: dict[str, dict[str, Any]]) -> None:
    engine = CelEngine()
    mismatches: list[str] = []
    agreed_known: list[str] = []
    for expression, answer in oracle_answers.items():
        ours = _ours(engine, expression)
        theirs = dict(answer)
        theirs.pop("cost", None)
        if "value" in theirs:
            theirs["value"] = _comparable(theirs["value"])
        same = ours == theirs or (
            "compile" in ours
            and "compile" in theirs
            and _same_compile_error(ours["compile"], theirs["compile"])
        )
        if expression in KNOWN_DIFFERENCES:
            if same:
                agreed_known.append(expression)
            continue
        if not same:
            mismatches.append(f"{expression}\n  ours:   {ours}\n  cel-go: {theirs}")
    assert not mismatches, f"{len(mismatches)} differences:\n" + "\n".join(mismatches)
    # A documented difference that no longer exists is a stale entry.
    assert not agreed_known, f"no longer different, remove from KNOWN_DIFFERENCES: {agreed_known}"


#: Expressions whose cost differs from cel-go's, and why.
KNOWN_COST_DIFFERENCES: dict[str, str] = {}


def test_cost_matches_cel_go(oracle_answers: dict[str, dict[str, Any]]) -> None:
    """Where both evaluate an expression to a value, ours costs what cel-go's does."""
    engine = CelEngine()
    mismatches: list[str] = []
    agreed_known: list[str] = []
    for expression, answer in oracle_answers.items():
        ours = _ours(engine, expression, cost=True)
        if "value" not in ours or "value" not in answer:
            continue  # a failed run's cost is not taken from the budget
        same = ours["cost"] == answer["cost"]
        if expression in KNOWN_COST_DIFFERENCES:
            if same:
                agreed_known.append(expression)
        elif not same:
            mismatches.append(f"{expression}: ours {ours['cost']}, cel-go {answer['cost']}")
    assert not mismatches, f"{len(mismatches)} differences:\n" + "\n".join(mismatches)
    assert not agreed_known, f"no longer different, remove: {agreed_known}"
