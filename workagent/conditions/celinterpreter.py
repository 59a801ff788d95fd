"""celpy's parser and interpreter, extended with the syntax cel-go has and celpy lacks.

* Optional syntax (:mod:`workagent.conditions.celoptional`): ``x.?f`` and
  ``x[?k]`` (an optional: empty where the field, key or index is missing),
  ``[?o, ...]`` and ``{?k: o}`` (the element or entry only when ``o`` has a
  value); a field or index taken from an optional is optional too, so
  ``object.?status.ready`` is empty rather than an error when ``status`` or
  ``ready`` is missing.
* Trailing commas in list and map literals (``[1, 2,]``).
* Namespaced calls, ``optional.of(x)``, ``strings.quote(s)``: celpy would
  evaluate ``optional`` as a variable.
* The macros ``o.optMap(v, e)``, ``o.optFlatMap(v, e)`` and the three-argument
  ``l.map(v, filter, e)``; ``has(x.f)`` fails when ``x`` does (celpy says false).

The grammar is celpy's own, edited on load (:func:`parser`): an edit
that no longer applies fails loudly at start-up rather than parsing
differently.
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

import celpy
from celpy import celtypes
from celpy.celparser import CELParser
from celpy.evaluation import CELEvalError, Evaluator, NameContainer
from lark import Lark, Token, Tree

from ocmkit.durations import format_duration
from ocmkit.govalues import go_format_value
from workagent.conditions.celcheck import field_name, simple_name, unwrap
from workagent.conditions.celfunctions import (
    QUALIFIED_FUNCTIONS,
    CelFunctionError,
    cel_type_name,
    format_value,
)
from workagent.conditions.celoptional import NONE, CelOptional

# (celpy's rule, ours): each must match celpy's grammar exactly once.
_GRAMMAR_EDITS: Final = (
    (
        "member         : member_dot | member_dot_arg | member_index | member_object | primary\n",
        "member         : member_dot | member_dot_arg | member_index | member_object"
        " | member_optdot | member_optindex | primary\n"
        'member_optdot  : member "." "?" (IDENT | ESC_IDENT)\n'
        'member_optindex : member "[" "?" expr "]"\n',
    ),
    # A field name in backquotes (``labels.`app.kubernetes.io/name```), as cel-go has it.
    (
        'member_dot     : member "." IDENT\n',
        'member_dot     : member "." (IDENT | ESC_IDENT)\n'
        "ESC_IDENT      : /`[A-Za-z0-9_.\\/ -]+`/\n",
    ),
    # A list literal's elements are an ``exprlist`` too, with ``?e`` and a trailing comma.
    (
        'list_lit       : "[" [exprlist] "]"\n',
        'list_lit       : "[" [listinits] "]" | "[" "," "]"\n'
        'listinits      : (expr | opt_expr) ("," (expr | opt_expr))* [","] -> exprlist\n'
        'opt_expr       : "?" expr\n',
    ),
    (
        'map_lit        : "{" [mapinits] "}"\n',
        'map_lit        : "{" [mapinits] "}" | "{" "," "}"\n',
    ),
    (
        'mapinits       : expr ":" expr ("," expr ":" expr)*\n',
        'mapinits       : (expr | opt_expr) ":" expr ("," (expr | opt_expr) ":" expr)* [","]\n',
    ),
)


@functools.cache
def parser() -> Lark:
    """celpy's LALR parser for the edited grammar (celpy's options, its literal callback)."""
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    for old, new in _GRAMMAR_EDITS:
        if grammar.count(old) != 1:
            raise RuntimeError(f"cel-python's grammar has changed: cannot edit {old.strip()!r}")
        grammar = grammar.replace(old, new)
    return Lark(
        grammar,
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
    )


class _Element(NamedTuple):
    """An ``?e`` element or key of a literal, before the literal decides on it."""

    value: Any


def _error(message: str, tree: Tree[Any]) -> CELEvalError:
    """A run-time error whose text the engine reports as it is."""
    return CELEvalError(message, CelFunctionError, (message,), tree=tree)


class Interpreter(Evaluator):
    """celpy's tree-walking evaluator with the extensions of this module."""

    def sub_evaluator(self, ast: Tree[Any]) -> Interpreter:
        """Macros evaluate their bodies with this class too."""
        return Interpreter(ast, activation=self.activation)

    # -- selection and indexing -------------------------------------------------------

    def member_dot(self, tree: Tree[Any]) -> Any:
        """``x.f``: a map's entry; optional when ``x`` is."""
        operand_tree, name = tree.children[0], field_name(tree.children[1])
        operand = self.visit(operand_tree)
        if isinstance(operand, CelOptional | CELEvalError):
            return _select(operand, name)
        if isinstance(operand, NameContainer):  # a dict too
            return super().member_dot(tree)  # a qualified name: ``net.IP``
        if isinstance(operand, dict):
            found = dict.get(operand, name, _MISSING)
            return _error(f"no such key: {name}", tree) if found is _MISSING else found
        if isinstance(operand, list):
            return _error(_LIST_FIELD, tree)
        return _error(f"no such key: {name}", tree)

    def macro_has_eval(self, exprlist: Tree[Any]) -> Any:
        """``has(x.f)``: whether the map ``x`` holds ``f`` (celpy's says false for any error)."""
        selection = unwrap(exprlist.children[0])  # celcheck: a selection
        operand_tree, name = selection.children[0], field_name(selection.children[1])
        operand = self.visit(operand_tree)
        if isinstance(operand, CelOptional):
            operand = operand.value() if operand.present else None
        if isinstance(operand, CELEvalError):
            return operand
        if isinstance(operand, list):
            return _error(_LIST_FIELD, exprlist)
        return celtypes.BoolType(isinstance(operand, dict) and name in operand)

    def member_optdot(self, tree: Tree[Any]) -> Any:
        """``x.?f``."""
        return _select(self.visit(tree.children[0]), field_name(tree.children[1]))

    def member_index(self, tree: Tree[Any]) -> Any:
        """``x[k]``; optional when ``x`` is."""
        operand, key = self.visit_children(tree)
        if isinstance(operand, CelOptional):
            return self._optional_index(operand, key, tree)
        return self._index(operand, key, tree)

    def member_optindex(self, tree: Tree[Any]) -> Any:
        """``x[?k]``."""
        operand, key = self.visit_children(tree)
        return self._optional_index(operand, key, tree)

    def _index(self, operand: Any, key: Any, tree: Tree[Any]) -> Any:
        try:
            return self.activation.resolve_function("_[_]")(operand, key)
        except (TypeError, KeyError, IndexError, ValueError) as exc:
            text = str(exc.args[0]) if exc.args else "no such overload"
            return CELEvalError(text, type(exc), exc.args, tree=tree)

    def _optional_index(self, operand: Any, key: Any, tree: Tree[Any]) -> Any:
        if isinstance(operand, CelOptional):
            if not operand.present:
                return NONE
            operand = operand.value()
        try:
            found = self.activation.resolve_function("_[_]")(operand, key)
        except (KeyError, IndexError):
            return NONE
        except (TypeError, ValueError) as exc:
            text = str(exc.args[0]) if exc.args else "no such overload"
            return CELEvalError(text, type(exc), exc.args, tree=tree)
        return found if isinstance(found, CELEvalError) else CelOptional(found)

    # -- literals ---------------------------------------------------------------------

    def opt_expr(self, tree: Tree[Any]) -> Any:
        """``?e`` in a literal: marked for the list or map that holds it."""
        value = self.visit(tree.children[0])
        return value if isinstance(value, CELEvalError) else _Element(value)

    def exprlist(self, tree: Tree[Any]) -> Any:
        """A call's arguments or a list literal's elements: ``?o`` only when ``o`` has a value."""
        values = super().exprlist(tree)
        if isinstance(values, CELEvalError):
            return values
        elements = []
        for value in values:
            if not isinstance(value, _Element):
                elements.append(value)
            elif not isinstance(value.value, CelOptional):
                return _error(
                    "cannot initialize optional list element from non-optional value "
                    + _text(value.value),
                    tree,
                )
            elif value.value.present:
                elements.append(value.value.value())
        return celtypes.ListType(elements)

    def mapinits(self, tree: Tree[Any]) -> Any:
        """A map literal's entries: ``?k: o`` only when ``o`` has a value."""
        values: list[Any] = self.visit_children(tree)
        result = celtypes.MapType()
        for key, value in zip(values[0::2], values[1::2], strict=True):
            for part in (key, value):
                if isinstance(part, CELEvalError):
                    return part
            if not isinstance(key, _Element):
                result[key] = value  # a repeated key: the last entry wins, as in cel-go
            elif not isinstance(value, CelOptional):
                return _error(
                    f"cannot initialize optional entry '{_text(key.value)}' "
                    f"from non-optional value {_text(value)}",
                    tree,
                )
            elif value.present:
                result[key.value] = value.value()
        return result

    # -- calls and macros -------------------------------------------------------------

    def function_eval(self, name_token: Token, exprlist: Any = None) -> Any:
        """``f(x...)``, a wrong argument type named as cel-go names it."""
        if isinstance(exprlist, CELEvalError):
            return exprlist
        args: Any = list(exprlist or ())
        return _named(super().function_eval(name_token, args), str(name_token), args)

    def method_eval(self, object: Any, method_ident: Token, exprlist: Any = None) -> Any:
        """``x.f(y...)``, a wrong argument type named as cel-go names it."""
        if isinstance(exprlist, CELEvalError):
            return exprlist
        args: Any = list(exprlist or ())
        try:
            result = super().method_eval(object, method_ident, args)
        except AssertionError:  # celpy's duration getters assert they got no time zone
            result = CELEvalError("no such overload", TypeError, ())
        except OverflowError:  # a time zone takes a timestamp past Python's year 9999
            result = CELEvalError(_OVERFLOW, CelFunctionError, (_OVERFLOW,))
        return _named(result, str(method_ident), [object, *args])

    def member_dot_arg(self, tree: Tree[Any]) -> Any:
        """Namespaced calls and the macros celpy lacks; the rest as celpy does them."""
        operand_tree, name = tree.children[0], str(tree.children[1])
        args: Sequence[Any] = tree.children[2].children if len(tree.children) > 2 else ()
        qualified = f"{simple_name(operand_tree)}.{name}"
        if qualified in QUALIFIED_FUNCTIONS:
            values = [self.visit(arg) for arg in args]
            return self.function_eval(Token("IDENT", qualified), values)
        if name in ("optMap", "optFlatMap") and len(args) == 2:
            return self._opt_map(self.visit(operand_tree), name == "optFlatMap", args, tree)
        if (name in _COMPREHENSIONS and len(args) == 2) or (name == "map" and len(args) == 3):
            return self._comprehension(name, self.visit(operand_tree), args, tree)
        if name == "min":  # a function here; celpy takes it for a macro of its own
            values = [self.visit(arg) for arg in args]
            return self.method_eval(self.visit(operand_tree), Token("IDENT", name), values)
        return super().member_dot_arg(tree)

    def _body(self, variable: Any, body: Any) -> Callable[[Any], Any]:
        """A macro's body as a function of its variable; errors are returned, not raised."""
        evaluator, name = self.sub_evaluator(body), simple_name(variable)

        def run(value: Any) -> Any:
            try:
                return evaluator.evaluate({str(name): value})
            except CELEvalError as exc:
                return exc

        return run

    def _opt_map(self, operand: Any, flat: bool, args: Sequence[Any], tree: Tree[Any]) -> Any:
        if isinstance(operand, CELEvalError):
            return operand
        if not isinstance(operand, CelOptional):
            # The macro stands for a hasValue() test: that is the call cel-go names.
            return _error(f"no such overload: hasValue({cel_type_name(operand)})", tree)
        if not operand.present:
            return NONE
        result = self._body(*args)(operand.value())
        # optFlatMap's body gives the optional itself (cel-go does not check it either).
        return result if isinstance(result, CELEvalError) or flat else CelOptional(result)

    def _comprehension(self, name: str, operand: Any, args: Sequence[Any], tree: Tree[Any]) -> Any:
        """``all``, ``exists``, ``exists_one``, ``filter`` and ``map`` (two or three
        arguments) over a list's elements or a map's keys, as cel-go expands them."""
        if isinstance(operand, CELEvalError):
            return operand
        if not isinstance(operand, list | dict):
            text = f"got '{_go_type(operand)}', expected iterable type"
            return _error(text, tree)
        bodies = [self._body(args[0], body) for body in args[1:]]
        if name in ("all", "exists"):
            return _quantified(name == "exists", bodies[0], operand, tree)
        if name == "exists_one":
            chosen = _chosen(bodies[0], operand, tree)
            return (
                chosen if isinstance(chosen, CELEvalError) else celtypes.BoolType(len(chosen) == 1)
            )
        kept = (
            _chosen(bodies[0], operand, tree) if name == "filter" or len(bodies) == 2 else operand
        )
        if isinstance(kept, CELEvalError) or name == "filter":
            return kept
        result = []
        for item in kept:
            mapped = bodies[-1](item)
            if isinstance(mapped, CELEvalError):
                return mapped
            result.append(mapped)
        return celtypes.ListType(result)


class Runner(celpy.InterpretedRunner):
    """celpy's interpreted runner, evaluating with :class:`Interpreter`."""

    def evaluate(self, context: Any) -> Any:
        """Evaluate the program with ``context`` bound."""
        return Interpreter(ast=self.ast, activation=self.new_activation()).evaluate(context)


_MISSING: Final = object()
_COMPREHENSIONS: Final = frozenset({"all", "exists", "exists_one", "filter", "map"})
# Go's names of the runtime types, for a comprehension over something else.
_GO_TYPES: Final = {
    "int": "types.Int",
    "uint": "types.Uint",
    "double": "types.Double",
    "string": "types.String",
    "bytes": "types.Bytes",
    "bool": "types.Bool",
    "null_type": "types.Null",
    "google.protobuf.Duration": "types.Duration",
    "google.protobuf.Timestamp": "types.Timestamp",
    "kubernetes.Quantity": "cel.Quantity",
    "net.IP": "cel.IP",
    "net.CIDR": "cel.CIDR",
    "kubernetes.URL": "cel.URL",
    "kubernetes.Semver": "cel.Semver",
    "optional_type": "*types.Optional",
}


def _go_type(value: Any) -> str:
    name = cel_type_name(value)
    return _GO_TYPES.get(name, name)


def _quantified(exists: bool, test: Callable[[Any], Any], items: Any, tree: Tree[Any]) -> Any:
    """``all``/``exists``: a false (true) result decides and absorbs errors, as in cel-go's
    expansion ``r && p(x)`` (``r || p(x)``), which stops at the deciding value."""
    pending: Any = None
    for item in items:
        result = test(item)
        if isinstance(result, celtypes.BoolType | bool):
            if bool(result) == exists:
                return celtypes.BoolType(exists)
        elif pending is None:
            pending = (
                result if isinstance(result, CELEvalError) else _error("no such overload", tree)
            )
    return pending if pending is not None else celtypes.BoolType(not exists)


def _chosen(test: Callable[[Any], Any], items: Any, tree: Tree[Any]) -> Any:
    """The items ``test`` is true for; its first error, or no such overload for a non-bool."""
    chosen = []
    for item in items:
        result = test(item)
        if isinstance(result, CELEvalError):
            return result
        if not isinstance(result, celtypes.BoolType | bool):
            return _error("no such overload", tree)
        if result:
            chosen.append(item)
    return chosen


_LIST_FIELD: Final = "unsupported index type 'string' in list"
_OVERFLOW: Final = "timestamp overflow"
# cel-go's words for a call whose arguments no overload takes: the function and the
# argument types (``no such overload: getHost(string)``), except for these.
_NAME_ONLY: Final = frozenset({"size", "matches"})
_UNNAMED: Final = frozenset({"contains", "startsWith", "endsWith", "or", "orValue"})
_TIME_TYPES: Final = frozenset({"google.protobuf.Duration", "google.protobuf.Timestamp"})


def _named(result: Any, name: str, args: list[Any]) -> Any:
    """celpy's ``no such overload`` of a call, with the name and types cel-go gives."""
    if (
        not isinstance(result, CELEvalError)
        or result.args[:1] != ("no such overload",)
        or result.args[1:2] not in ((TypeError,), (AttributeError,))
        or name in _UNNAMED
    ):
        return result
    if name in _NAME_ONLY:
        if args and cel_type_name(args[0]) in _TIME_TYPES:
            return result  # cel-go's durations and timestamps answer it plainly
        text = f"no such overload: {name}"
    else:
        text = f"no such overload: {name}({', '.join(cel_type_name(arg) for arg in args)})"
    return CELEvalError(text, CelFunctionError, (text,))


def _select(operand: Any, name: str) -> Any:
    """``x.?name``: empty when ``x`` is, or is not a map holding ``name``."""
    if isinstance(operand, CELEvalError):
        return operand
    if isinstance(operand, CelOptional):
        if not operand.present:
            return NONE
        operand = operand.value()
    if isinstance(operand, dict):
        found = dict.get(operand, name, _MISSING)
        return NONE if found is _MISSING else CelOptional(found)
    if isinstance(operand, list):
        return CELEvalError(_LIST_FIELD, CelFunctionError, (_LIST_FIELD,))
    return NONE


def _text(value: Any) -> str:
    """A value as cel-go's ``%v`` prints it in error messages (null is its enum's 0)."""
    if value is None:
        return "0"
    if isinstance(value, bytes):
        return "[" + " ".join(map(str, value)) + "]"
    if isinstance(value, float):
        return go_format_value(float(value))
    if isinstance(value, celtypes.DurationType):
        return format_duration(value // datetime.timedelta(microseconds=1) * 1000)
    if isinstance(value, celtypes.TimestampType):  # Go's time.String() in UTC
        moment = value.astimezone(datetime.UTC)
        fraction = f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else ""
        return moment.strftime("%Y-%m-%d %H:%M:%S") + fraction + " +0000 UTC"
    try:
        return format_value(value)
    except CelFunctionError:
        return str(value)
