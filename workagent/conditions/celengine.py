"""CEL evaluation of condition-rule programs with cel-python, inside a worker process.

This is the only module (with :mod:`workagent.conditions.celfunctions`) that
imports celpy, and it runs in the worker processes of
:mod:`workagent.conditions.pool`, never in the agent's event-loop process:
celpy has no cost limit, its regexes and big comprehensions run without
yielding, and creating its ``Environment`` changes the interpreter's
recursion limit.

celpy facts this relies on (cel-python 0.5, see notes/dependencies.md):

* one ``Environment`` per process, with the default interpreted runner (the
  lark parser is a class-level singleton built for one runner type);
* compiling (lark parse + our checks) costs ~1 ms for a typical rule, far
  more than evaluating it again, so programs are compiled once and kept in a
  bounded LRU keyed by (environment, expression);
* celpy does not type-check, so :mod:`workagent.conditions.celcheck` supplies
  cel-go's compile errors before a program is accepted;
* celpy's runtime errors embed the whole activation (the object) in their
  text; :func:`runtime_error_text` rewords them as cel-go does instead.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParser
from celpy.evaluation import CELEvalError
from lark.exceptions import UnexpectedInput

from workagent.conditions import celcheck, celints
from workagent.conditions.celcost import Budget, CostLimitExceeded, CostTracker
from workagent.conditions.celfunctions import FUNCTIONS, TYPE_NAMES
from workagent.conditions.celinterpreter import Runner, parser
from workagent.conditions.celoptional import CelOptional, NoneDereferenceError
from workagent.conditions.celvalues import (
    CelBudgetError,
    CelFunctionError,
    CelIndexError,
    CelKeyError,
    Quantity,
)
from workagent.conditions.kubevalues import CIDR, IP, URL, KubeValueError, Semver
from workagent.conditions.protocol import (
    CelProgram,
    ExpressionsOutcome,
    MessageOutcome,
    TimeLimits,
    encode_expressions,
    encode_message,
    expects_message_line,
    internal_error,
)
from workagent.conditions.reasons import (
    BUDGET_EXCEEDED_MESSAGE,
    FALSE,
    PER_CALL_LIMIT,
    REASON_EVALUATED,
    REASON_EXPRESSION_ERROR,
    TRUE,
    cap_message,
)

#: Compiled programs kept per worker.
DEFAULT_CACHE_SIZE: Final = 1024

_RECURSION_MESSAGE: Final = "expression recursion limit exceeded"
_OWN_ERRORS: Final = (
    CelFunctionError,
    CelKeyError,
    CelIndexError,
    KubeValueError,
    NoneDereferenceError,
)
# What evaluation raises besides CELEvalError and celpy's own failures.
_RAISED: Final = (*_OWN_ERRORS, RecursionError, MemoryError)


class CompileFailure(NamedTuple):
    """Why an expression has no program: the cel-go style error text.

    ``internal`` marks a failure the user cannot fix (OCM's "program
    construction" error: condition ``Unknown``, ``ConditionRuleInternalError``).
    """

    text: str
    internal: bool = False


class CelEngine:
    """Compiles and evaluates condition-rule expressions; one per worker process."""

    def __init__(
        self, *, cache_size: int = DEFAULT_CACHE_SIZE, cost_limit: int = PER_CALL_LIMIT
    ) -> None:
        # Ours parses the edited grammar. celpy's first Environment builds a
        # process-wide parser of its own unless one is there: then ours, whose
        # trees are celpy's for all that celpy's grammar accepts (kubesim may
        # share the process in tests). Creating the Environment also sets the
        # recursion limit to 2500.
        # The type names a library declares (``net.IP``) are celpy annotations.
        self._parser = parser()
        celints.install()
        if CELParser.CEL_PARSER is None:
            CELParser.CEL_PARSER = self._parser
        self._env = celpy.Environment(annotations=dict(TYPE_NAMES), runner_class=Runner)
        self._cached = functools.lru_cache(maxsize=cache_size)(self._compile)
        self._cost_limit = cost_limit

    def compile(self, source: str, variables: frozenset[str]) -> Any:
        """A celpy program for ``source``, or a :class:`CompileFailure` (both cached)."""
        return self._cached(source, variables)

    def _compile(self, source: str, variables: frozenset[str]) -> Any:
        too_long = celcheck.length_error(source)
        if too_long is not None:
            return CompileFailure(too_long)
        try:
            tree = self._parser.parse(source)
        except UnexpectedInput as exc:
            return CompileFailure(celcheck.syntax_error(source, exc))
        except RecursionError:
            return CompileFailure(celcheck.display_error(source, None, _RECURSION_MESSAGE))
        except Exception as exc:  # lark's other parse errors
            return CompileFailure(
                celcheck.display_error(source, None, f"Syntax error: {_one_line(exc)}")
            )
        errors = celcheck.check(tree, source, variables)
        if errors:
            return CompileFailure("\n".join(errors))
        unbuildable = celcheck.program_error(tree)
        if unbuildable is not None:
            return CompileFailure(unbuildable, internal=True)
        try:
            return self._env.program(tree, functions=FUNCTIONS)
        except Exception as exc:  # celpy internals: not the user's fault
            return CompileFailure(f"cannot build the CEL program: {_one_line(exc)}", internal=True)

    def evaluate_expressions(
        self,
        expressions: Sequence[str],
        activation: Mapping[str, Any],
        budget: Budget | None = None,
        deadline: float | None = None,
    ) -> ExpressionsOutcome:
        """AND of ``expressions`` (spec 13.2): stop at the first false or error. Each
        run's cost is taken from ``budget`` (by default a budget of their own); a run
        still going at ``deadline`` (``time.monotonic()``) fails as over budget."""
        budget = Budget() if budget is None else budget
        for source in expressions:
            program = self.compile(source, celcheck.RULE_VARIABLES)
            if isinstance(program, CompileFailure):
                if program.internal:
                    return internal_error(cap_message(program.text))
                return ExpressionsOutcome(FALSE, REASON_EXPRESSION_ERROR, cap_message(program.text))
            tracker = CostTracker(self._cost_limit, deadline)
            value, error = run_program(program, activation, tracker)
            error = budget.take(tracker.cost, error)
            if error is not None:
                return ExpressionsOutcome(FALSE, REASON_EXPRESSION_ERROR, error)
            value = _native(value)
            if not isinstance(value, celtypes.BoolType | bool):
                return ExpressionsOutcome(
                    FALSE,
                    REASON_EXPRESSION_ERROR,
                    f"expected bool result, got {go_type_name(value)}",
                )
            if not value:
                return ExpressionsOutcome(FALSE, REASON_EVALUATED)
        return ExpressionsOutcome(TRUE, REASON_EVALUATED)

    def evaluate_message(
        self, source: str, activation: Mapping[str, Any], deadline: float | None = None
    ) -> MessageOutcome:
        """A message expression (spec 13.3 step 1), stopped at ``deadline`` if given."""
        program = self.compile(source, celcheck.MESSAGE_VARIABLES)
        if isinstance(program, CompileFailure):
            # OCM keeps only the first line of the issue text, without the snippet.
            text = program.text if program.internal else celcheck.first_line(program.text)
            return MessageOutcome(error=cap_message(text))
        # OCM's agent tracks no cost for message expressions: no limit either.
        value, error = run_program(program, activation, CostTracker(math.inf, deadline))
        if error is not None:
            return MessageOutcome(error=error)
        value = _native(value)
        # celpy's ``+`` on strings returns a plain str, not a StringType.
        if isinstance(value, str):
            return MessageOutcome(message=cap_message(str(value)) or None)
        return MessageOutcome(
            error=f"expected message expression to have a string result, got {go_type_name(value)}"
        )

    def run(
        self, obj: Any, programs: Sequence[CelProgram], limits: TimeLimits | None = None
    ) -> Iterator[bytes]:
        """The protocol lines answering one request, each yielded as soon as it is known.

        With ``limits``, a program still running after ``limits.program`` seconds, or
        once the request has run ``limits.request`` seconds, fails as over budget and
        the next one starts: a slow rule costs only its own outcome.
        """
        request_end = None if limits is None else time.monotonic() + limits.request
        cel_object: Any
        try:
            cel_object = _object_for_cel(obj)
        except RecursionError:
            cel_object = _Failed("the object is nested too deeply for CEL evaluation")
        except Exception as exc:
            cel_object = _Failed(f"the object cannot be converted for CEL: {_one_line(exc)}")
        budget = Budget()  # shared by the object's rules, as OCM's agent shares it
        for index, program in enumerate(programs):
            if isinstance(cel_object, _Failed):
                yield encode_expressions(index, internal_error(cel_object.message))
                continue
            deadline = None
            if limits is not None and request_end is not None:
                deadline = min(time.monotonic() + limits.program, request_end)
            activation = {"object": cel_object}
            outcome = self.evaluate_expressions(program.expressions, activation, budget, deadline)
            yield encode_expressions(index, outcome)
            if expects_message_line(program, outcome):
                activation = {
                    "object": cel_object,
                    "result": celtypes.BoolType(outcome.status == TRUE),
                }
                message = self.evaluate_message(program.message_expression, activation, deadline)
                yield encode_message(index, message)


class _Failed(NamedTuple):
    message: str


def run_program(
    program: Any, activation: Mapping[str, Any], tracker: CostTracker | None = None
) -> tuple[Any, str | None]:
    """Evaluate, charging ``tracker`` (by default one with the per-call limit); the value,
    or None and the cel-go style error text."""
    try:
        value = program.evaluate(dict(activation), CostTracker() if tracker is None else tracker)
    except CostLimitExceeded as exc:
        return None, str(exc)
    except CELEvalError as exc:
        return None, runtime_error_text(exc)
    except _RAISED as exc:
        # Worded as if celpy had caught it, the way it wraps what a function raises.
        return None, runtime_error_text(CELEvalError(str(exc), type(exc), exc.args))
    except Exception as exc:  # celpy internals (unsupported features ...)
        return None, cap_message(f"evaluation failed: {_one_line(exc)}")
    return value, None


def runtime_error_text(exc: CELEvalError) -> str:
    """A celpy runtime error in cel-go's words (never celpy's dump of the activation)."""
    args = exc.args
    text = str(args[0]) if args else "evaluation error"
    kind = args[1] if len(args) > 1 else None
    detail = args[2] if len(args) > 2 else None
    detail_text = str(detail[0]) if isinstance(detail, tuple) and detail else ""
    if isinstance(kind, type):
        # MemoryError is the worker's address-space limit: as much a cost overrun as a slow loop.
        if issubclass(kind, CelBudgetError) or issubclass(kind, MemoryError):
            return BUDGET_EXCEEDED_MESSAGE
        if issubclass(kind, _OWN_ERRORS) and detail_text:
            return cap_message(detail_text)
        if issubclass(kind, RecursionError):
            return _RECURSION_MESSAGE
    if text.startswith("no such member in mapping: "):
        return cap_message("no such key: " + text.split(": ", 1)[1].strip("'"))
    if text.startswith("undeclared reference to "):
        return cap_message(text.split(" (in activation", 1)[0] + " (in container '')")
    if kind is TypeError or text.startswith("found no matching overload"):
        return "no such overload"
    if kind is ZeroDivisionError:
        return "division by zero"
    if text in ("return error for overflow", "overflow"):
        return "integer overflow" if detail_text in ("", "overflow") else cap_message(detail_text)
    return cap_message(text.split(" (in activation", 1)[0])


# Order matters: BoolType, IntType and UintType are all Python ints, and
# celpy sometimes returns plain Python values (``'a' + 'b'`` is a str).
_GO_TYPE_NAMES: Final[tuple[tuple[type | tuple[type, ...], str], ...]] = (
    ((celtypes.BoolType, bool), "bool"),
    (celtypes.UintType, "uint64"),
    (celtypes.TimestampType, "time.Time"),
    (celtypes.DurationType, "time.Duration"),
    (int, "int64"),
    (float, "float64"),
    (str, "string"),
    (bytes, "[]uint8"),
    (type(None), "structpb.NullValue"),
    (list, "[]interface {}"),
    (dict, "map[string]interface {}"),
    (Quantity, "*resource.Quantity"),
    (URL, "*url.URL"),
    (IP, "netip.Addr"),
    (CIDR, "netip.Prefix"),
    (Semver, "semver.Version"),
)


def _native(value: Any) -> Any:
    """What OCM reads of a result: cel-go's ``Value()`` of an optional is its content's."""
    while isinstance(value, CelOptional) and value.present:
        value = value.value()
    return value


def go_type_name(value: Any) -> str:
    """The Go type cel-go's ``out.Value()`` would have for a result (``reflect.TypeOf``)."""
    if isinstance(value, CelOptional):
        return "<nil>"  # an empty one: its Value() is nil
    for kind, name in _GO_TYPE_NAMES:
        if isinstance(value, kind):
            return name
    if isinstance(value, type) or callable(value):
        return "*types.Type"
    return type(value).__name__


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _object_for_cel(obj: Any) -> Any:
    """``obj`` as CEL values. A JSON number past int64 is a double, as Go's JSON decoding
    of an unstructured object makes it (CEL has no bigger integer)."""
    try:
        return json_to_cel(obj)
    except ValueError:  # celpy's "overflow": rare, so the walk below only then
        return json_to_cel(_big_ints_as_floats(obj))


def _big_ints_as_floats(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _big_ints_as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_big_ints_as_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return value if _INT64_MIN <= value <= _INT64_MAX else float(value)
    return value


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:1000]
