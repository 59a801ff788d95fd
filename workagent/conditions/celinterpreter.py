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
* cel-go's evaluation order and cost: ``&&`` and ``||`` stop at a deciding
  left operand (celpy evaluates both), and every step is charged to a
  :class:`~workagent.conditions.celcost.CostTracker` in cel-go's units.

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
from workagent.conditions.celcheck import cel_escapes
from workagent.conditions.celcost import (
    LIST_COST,
    MAP_COST,
    SELECT_COST,
    CostTracker,
    call_cost,
    is_attribute,
    sized_calls,
)
from workagent.conditions.celformat import format_value
from workagent.conditions.celfunctions import QUALIFIED_FUNCTIONS
from workagent.conditions.celoptional import NONE, CelOptional
from workagent.conditions.celtime import ZONED_GETTERS, TimeZoneError, field_in_zone
from workagent.conditions.celtree import (
    OPERATORS,
    WRAPPERS,
    field_name,
    signed_number,
    simple_name,
    unary_run,
    unwrap,
)
from workagent.conditions.celvalues import CelFunctionError, as_type, cel_type_name

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
    # cel-go's floats have digits after the point: ``1.all(x, p)`` is a call on ``1``.
    (
        'FLOAT_LIT      : /-?/ DIGIT+ "." DIGIT* EXPONENT?',
        'FLOAT_LIT      : /-?/ DIGIT+ "." DIGIT+ EXPONENT?',
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
        lexer_callbacks={"IDENT": _keyword},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
    )


def _keyword(token: Token) -> Token:
    """celpy's ``true``/``false``/``null`` literal tokens, where they are in the source."""
    literal: Token = CELParser.ambiguous_literals(token)
    return literal if literal is token else Token.new_borrow_pos(literal.type, str(literal), token)


class _Element(NamedTuple):
    """An ``?e`` element or key of a literal, before the literal decides on it."""

    value: Any


def _error(message: str, tree: Tree[Any]) -> CELEvalError:
    """A run-time error whose text the engine reports as it is."""
    return CELEvalError(message, CelFunctionError, (message,), tree=tree)


class Plan(NamedTuple):
    """What evaluating a program needs beyond its tree, computed once per program."""

    #: Per node id: the node a visit goes to (one-child wrappers skipped: a leaf
    #: sits ~8 of them deep) and the name of the method that evaluates it.
    visits: dict[int, tuple[Tree[Any], str]]
    #: The call sites cel-go sizes (:func:`~workagent.conditions.celcost.sized_calls`).
    sized: frozenset[int]
    #: Literals' values by node id, filled as they are first evaluated.
    literals: dict[int, Any]


def plan(tree: Tree[Any]) -> Plan:
    """The :class:`Plan` of a program's tree."""
    visits = {id(node): _visit_of(node) for node in tree.iter_subtrees()}
    return Plan(visits, sized_calls(tree), {})


def _visit_of(node: Tree[Any]) -> tuple[Tree[Any], str]:
    while (
        node.data in _PASS_THROUGH
        and len(node.children) == 1
        and isinstance(node.children[0], Tree)
    ):
        node = node.children[0]
    return node, str(node.data)


class Interpreter(Evaluator):
    """celpy's tree-walking evaluator with the extensions of this module."""

    #: The evaluation's cost, shared with the evaluators of macro bodies.
    tracker: CostTracker
    plan: Plan
    #: The macros' variables in scope (celpy would nest an activation per element).
    scope: dict[str, Any]

    def sub_evaluator(self, ast: Tree[Any]) -> Interpreter:
        """Macros evaluate their bodies with this class too, charging the same tracker."""
        sub = Interpreter(ast, activation=self.activation)
        sub.tracker, sub.plan, sub.scope = self.tracker, self.plan, dict(self.scope)
        return sub

    def _visit_tree(self, tree: Tree[Any]) -> Any:
        """lark's dispatch by the node's name, through the plan (celpy builds a few nodes
        of its own as it goes: those are dispatched as lark does)."""
        target, method = self.plan.visits.get(id(tree)) or _visit_of(tree)
        return getattr(self, method)(target)

    def _charge_call(self, name: str, args: Sequence[Any], result: Any, site: Tree[Any]) -> None:
        self.tracker.charge(call_cost(name, args, result, id(site) in self.plan.sized))

    def _selected(self, operand_tree: Any, result: Any) -> Any:
        """``result`` of a selection or index, charged as cel-go charges it: 1 unless it
        fails, finds nothing (``x.?f``) or names a type (``net.IP``), and 1 for the
        relative attribute cel-go makes of an operand that is not an attribute."""
        units = (0 if _uncharged(result) else SELECT_COST) + (
            0 if is_attribute(operand_tree) else SELECT_COST
        )
        if units:
            self.tracker.charge(units)
        return result

    # -- operators --------------------------------------------------------------------

    def expr(self, tree: Tree[Any]) -> Any:
        """``c ? a : b``: a branch that is an attribute costs its selections only."""
        if len(tree.children) != 3:
            return super().expr(tree)
        condition = self.visit(tree.children[0])
        taken = tree.children[1] if condition else tree.children[2]
        before = self.tracker.cost
        value = self.visit(taken)
        if is_attribute(taken, conditional=False):  # its variable is free
            self.tracker.cost = max(before, self.tracker.cost - SELECT_COST)
        false = celtypes.BoolType(False)
        branches = (value, false) if taken is tree.children[1] else (false, value)
        return self._apply(tree, "_?_:_", "_?_:_", [condition, *branches])

    def conditionalor(self, tree: Tree[Any]) -> Any:
        """``a || b``, not evaluating ``b`` when ``a`` is true."""
        return self._logical(tree, decides=True)

    def conditionaland(self, tree: Tree[Any]) -> Any:
        """``a && b``, not evaluating ``b`` when ``a`` is false."""
        return self._logical(tree, decides=False)

    def _logical(self, tree: Tree[Any], *, decides: bool) -> Any:
        """cel-go's ``&&``/``||``: a deciding operand wins, else the first operand that is
        no bool fails the whole (with its own error, or ``no such overload``)."""
        if len(tree.children) != 2:
            return self.visit(tree.children[0])
        left = self.visit(tree.children[0])
        if isinstance(left, celtypes.BoolType | bool) and bool(left) == decides:
            return celtypes.BoolType(decides)
        right = self.visit(tree.children[1])
        if isinstance(right, celtypes.BoolType | bool) and bool(right) == decides:
            return celtypes.BoolType(decides)
        for operand in (left, right):
            if isinstance(operand, CELEvalError):
                return operand
            if not isinstance(operand, celtypes.BoolType | bool):
                return _error("no such overload", tree)
        return celtypes.BoolType(not decides)

    def relation(self, tree: Tree[Any]) -> Any:
        """``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``, ``in``."""
        return self._operator(tree)

    def addition(self, tree: Tree[Any]) -> Any:
        """``+`` and ``-``."""
        return self._operator(tree)

    def multiplication(self, tree: Tree[Any]) -> Any:
        """``*``, ``/`` and ``%``."""
        return self._operator(tree)

    def unary(self, tree: Tree[Any]) -> Any:
        """``!`` and ``-``."""
        return self._operator(tree)

    def _operator(self, tree: Tree[Any]) -> Any:
        if len(tree.children) != 2:
            return self.visit(tree.children[0])
        if tree.data == "unary":
            return self._unary(tree)
        operator, operand = tree.children
        name = _OPERATORS[operator.data]
        args = [*self.visit_children(operator), self.visit(operand)]
        result = self._apply(tree, operator.data, name, args)
        self._charge_call(name, args, result, tree)
        return result

    def _unary(self, tree: Tree[Any]) -> Any:
        """A run of ``!`` or ``-`` as cel-go reads it (:func:`unary_run`): an even one is
        its operand, an odd one a single call."""
        count, operand = unary_run(tree)
        value = self.visit(operand)
        if signed_number(operand):  # its sign is one of the run: cel-go reads it unsigned
            unsigned = value if isinstance(value, CELEvalError) else -value
            if count % 2 == 0:
                return unsigned
            self._charge_call("-_", [unsigned], value, tree)
            return value
        if count % 2 == 0:
            return value
        label = tree.children[0].data
        result = self._apply(tree, label, _OPERATORS[label], [value])
        self._charge_call(_OPERATORS[label], [value], result, tree)
        return result

    def _apply(self, tree: Tree[Any], label: str, name: str, args: list[Any]) -> Any:
        """Call an operator's function, its failures as celpy words them."""
        try:
            return self.activation.resolve_function(name)(*args)
        except (TypeError, ZeroDivisionError, ValueError, OverflowError) as exc:
            if isinstance(exc, TypeError):
                types = ", ".join(str(type(arg)) for arg in args)
                text = f"found no matching overload for {label!r} applied to '({types})'"
            elif isinstance(exc, ZeroDivisionError):
                text = "modulus or divide by zero"
            else:
                text = "return error for overflow"
            failure = CELEvalError(text, exc.__class__, exc.args, tree=tree)
            failure.__cause__ = exc
            return failure

    # -- variables, literals and calls ------------------------------------------------

    def primary(self, tree: Tree[Any]) -> Any:
        """Charges a variable, a list or map literal, a function call."""
        child = tree.children[0]
        if child.data == "ident":
            name = str(child.children[0])
            value = self.scope[name] if name in self.scope else super().primary(tree)
            if callable(value) and not isinstance(value, type):
                value = as_type(value) or value  # ``int`` is the type, not the conversion
            if not _uncharged(value):
                self.tracker.charge(SELECT_COST)
            return value
        if child.data == "literal":
            literals = self.plan.literals
            if id(child) in literals:
                return literals[id(child)]
            value = super().primary(tree)
            if not isinstance(value, CELEvalError):  # an error is raised: a new one each time
                literals[id(child)] = value
            return value
        if child.data == "list_lit":
            self.tracker.charge(LIST_COST)
        elif child.data == "map_lit":
            self.tracker.charge(MAP_COST)
        elif child.data == "ident_arg" and str(child.children[0]) != "has":
            name = Token("IDENT", str(child.children[0]))
            args = self.visit_children(child.children[1]) if len(child.children) == 2 else []
            result = args[0] if name == "dyn" else self.function_eval(name, args)
            self._charge_call(str(name), args, result, child)
            return result
        return super().primary(tree)

    def literal(self, tree: Tree[Any]) -> Any:
        """A literal, with cel-go's ``\\?`` and ``\\``` escapes in strings and bytes."""
        token = tree.children[0]
        if isinstance(token, Token) and token.type in _TEXT_LITERALS:
            escaped = cel_escapes(token)
            if escaped is not token:
                tree = Tree("literal", [escaped], tree.meta)
        return super().literal(tree)

    # -- selection and indexing -------------------------------------------------------

    def member_dot(self, tree: Tree[Any]) -> Any:
        """``x.f``: a map's entry; optional when ``x`` is."""
        return self._selected(tree.children[0], self._member_dot(tree))

    def _member_dot(self, tree: Tree[Any]) -> Any:
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
        # The test, and the relative attribute of an operand that is not an attribute
        # (not of an optional, whose test cel-go makes another way).
        relative = not is_attribute(operand_tree) and not isinstance(operand, CelOptional)
        self.tracker.charge(2 * SELECT_COST if relative else SELECT_COST)
        if isinstance(operand, CelOptional):
            operand = operand.value() if operand.present else None
        if isinstance(operand, CELEvalError):
            return operand
        if isinstance(operand, list):
            return _error(_LIST_FIELD, exprlist)
        return celtypes.BoolType(isinstance(operand, dict) and name in operand)

    def member_optdot(self, tree: Tree[Any]) -> Any:
        """``x.?f``."""
        operand = self.visit(tree.children[0])
        return self._selected(tree.children[0], _select(operand, field_name(tree.children[1])))

    def member_index(self, tree: Tree[Any]) -> Any:
        """``x[k]``; optional when ``x`` is."""
        operand, key = self.visit_children(tree)
        if isinstance(operand, CelOptional):
            return self._selected(tree.children[0], self._optional_index(operand, key, tree))
        return self._selected(tree.children[0], self._index(operand, key, tree))

    def member_optindex(self, tree: Tree[Any]) -> Any:
        """``x[?k]``."""
        operand, key = self.visit_children(tree)
        return self._selected(tree.children[0], self._optional_index(operand, key, tree))

    def _index(self, operand: Any, key: Any, tree: Tree[Any]) -> Any:
        invalid = _invalid_qualifier(operand, key, tree)
        if invalid is not None:
            return invalid
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
        invalid = _invalid_qualifier(operand, key, tree)
        if invalid is not None:
            return invalid
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
        """``f(x...)``, a wrong argument type named as cel-go names it; an argument
        that failed is the call's error, as in cel-go."""
        if isinstance(exprlist, CELEvalError):
            return exprlist
        args: Any = list(exprlist or ())
        failed = next((arg for arg in args if isinstance(arg, CELEvalError)), None)
        if failed is not None:
            return failed
        return _named(super().function_eval(name_token, args), str(name_token), args)

    def method_eval(self, object: Any, method_ident: Token, exprlist: Any = None) -> Any:
        """``x.f(y...)``, a wrong argument type named as cel-go names it."""
        for failed in (object, exprlist):  # the receiver's error first, as in cel-go
            if isinstance(failed, CELEvalError):
                return failed
        args: Any = list(exprlist or ())
        name = str(method_ident)
        zoned = name in ZONED_GETTERS and isinstance(object, celtypes.TimestampType)
        if zoned and len(args) == 1 and isinstance(args[0], str):  # cel-go's zones, not celpy's
            return _in_zone(object, name, str(args[0]))
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
            result = self.function_eval(Token("IDENT", qualified), values)
            self._charge_call(qualified, values, result, tree)
            return result
        if name in ("optMap", "optFlatMap") and len(args) == 2:
            before = self.tracker.cost
            operand = self.visit(operand_tree)
            return self._opt_map(operand, self.tracker.cost - before, name, args, tree)
        if (name in _COMPREHENSIONS and len(args) == 2) or (name == "map" and len(args) == 3):
            return self._comprehension(name, self.visit(operand_tree), args, tree)
        operand = self.visit(operand_tree)
        if name in ("or", "orValue") and len(args) == 1:
            # cel-go's own operators, free, with an argument evaluated only when needed.
            if isinstance(operand, CelOptional) and operand.present:
                return operand if name == "or" else operand.value()
            return self.method_eval(operand, Token("IDENT", name), self.visit(tree.children[2]))
        # The rest are method calls (``min`` too, which celpy takes for a macro of its own).
        exprlist: Any = self.visit(tree.children[2]) if len(tree.children) > 2 else None
        result = self.method_eval(operand, Token("IDENT", name), exprlist)
        # A failed argument list is one error value (all cel-go's sized calls take arguments).
        arguments = exprlist if isinstance(exprlist, list) else [exprlist]
        self._charge_call(name, [operand, *arguments], result, tree)
        return result

    def _body(self, variable: Any, body: Any) -> Callable[[Any], Any]:
        """A macro's body as a function of its variable; errors are returned, not raised."""
        evaluator, name = self.sub_evaluator(body), str(simple_name(variable))

        def run(value: Any) -> Any:
            evaluator.scope[name] = value
            try:
                return evaluator.visit(body)
            except CELEvalError as exc:
                return exc

        return run

    def _opt_map(
        self, operand: Any, operand_cost: int, name: str, args: Sequence[Any], tree: Tree[Any]
    ) -> Any:
        """``o.optMap(v, e)``, cel-go's ``o.hasValue() ? optional.of(cel.bind(v, o.value(),
        e)) : optional.none()`` (``optFlatMap`` without the ``optional.of``), and its cost."""
        if isinstance(operand, CELEvalError):
            return operand
        self.tracker.charge(1)  # hasValue()
        if not isinstance(operand, CelOptional):
            # The macro stands for a hasValue() test: that is the call cel-go names.
            return _error(f"no such overload: hasValue({cel_type_name(operand)})", tree)
        if not operand.present:
            self.tracker.charge(1)  # optional.none()
            return NONE
        flat = name == "optFlatMap"
        # cel.bind's empty list and, for optMap, optional.of(); o again and value() when
        # the body uses the variable (cel-go binds it lazily).
        variable, body = args
        used = any(
            node.data == "ident" and node.children[0] == simple_name(variable)
            for node in body.iter_subtrees()
        )
        self.tracker.charge(LIST_COST + (0 if flat else 1) + (operand_cost + 1 if used else 0))
        result = self._body(variable, body)(operand.value())
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
        charge = self.tracker.charge
        if name in ("all", "exists"):
            return _quantified(name == "exists", bodies[0], operand, tree, charge)
        if name == "exists_one":
            counted = _counted(bodies[0], operand, tree, charge)
            charge(_ONE_TEST)
            return counted if isinstance(counted, CELEvalError) else celtypes.BoolType(counted == 1)
        return _folded(name, bodies, operand, tree, charge)


class Runner(celpy.InterpretedRunner):
    """celpy's interpreted runner, evaluating with :class:`Interpreter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plan = plan(self.ast)

    def evaluate(self, context: Any, tracker: CostTracker | None = None) -> Any:
        """Evaluate the program with ``context`` bound, charging ``tracker`` (by default
        one with the per-call limit)."""
        interpreter = Interpreter(ast=self.ast, activation=self.new_activation())
        interpreter.tracker = CostTracker() if tracker is None else tracker
        interpreter.plan, interpreter.scope = self.plan, {}
        return interpreter.evaluate(context)


_MISSING: Final = object()
_TEXT_LITERALS: Final = frozenset({"STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"})
# Nodes that only hold one other (``primary`` is not one: its method reads its child).
_PASS_THROUGH: Final = WRAPPERS - {"primary"}
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


# The keys cel-go can index with; its Go names for the others' types: a list or map
# literal is cel-go's own, any other is named as the object's are.
_QUALIFIERS: Final = frozenset({"int", "uint", "double", "string", "bool"})
_QUALIFIER_GO_TYPES: Final = {
    "type": "*types.Type",
    "list": "[]interface {}",
    "map": "map[string]interface {}",
}
_LITERAL_GO_TYPES: Final = {"list_lit": "*types.baseList", "map_lit": "*types.baseMap"}


def _invalid_qualifier(operand: Any, key: Any, tree: Tree[Any]) -> Any:
    """The error of indexing with ``key``: the operand's or the key's own, or cel-go's
    ``invalid qualifier type`` for a key that is no int, uint, double, string or bool."""
    for value in (operand, key):
        if isinstance(value, CELEvalError):
            return value
    kind = cel_type_name(key)
    if kind in _QUALIFIERS:
        return None
    name = _LITERAL_GO_TYPES.get(unwrap(tree.children[1]).data) or _QUALIFIER_GO_TYPES.get(kind)
    return _error(f"invalid qualifier type: {name or _go_type(key)}", tree)


# The cost of cel-go's expansions of the macros, besides the bodies: an ``all`` loop's
# test ``@not_strictly_false(r)``, an ``exists`` loop's ``@not_strictly_false(!r)``,
# ``exists_one``'s step ``r + 1`` and result ``r == 1``, and ``r + [e]`` (but ``e``).
_LOOP_TESTS: Final = {False: 2, True: 3}
_COUNTED: Final = 2
_ONE_TEST: Final = 2
_APPENDED: Final = SELECT_COST + LIST_COST + 1


def _quantified(
    exists: bool,
    test: Callable[[Any], Any],
    items: Any,
    tree: Tree[Any],
    charge: Callable[[int], None],
) -> Any:
    """``all``/``exists``: a false (true) result decides and absorbs errors, as in cel-go's
    expansion ``r && p(x)`` (``r || p(x)``), which stops at the deciding value."""
    pending: Any = None
    decided = False
    for item in items:
        charge(_LOOP_TESTS[exists])  # tested before every element, the next one after a decision
        if decided:
            break
        charge(SELECT_COST)  # r in the step
        result = test(item)
        if isinstance(result, celtypes.BoolType | bool):
            decided = bool(result) == exists
        elif pending is None:
            pending = (
                result if isinstance(result, CELEvalError) else _error("no such overload", tree)
            )
    charge(SELECT_COST)  # the result r
    if decided:
        return celtypes.BoolType(exists)
    return pending if pending is not None else celtypes.BoolType(not exists)


def _counted(
    test: Callable[[Any], Any], items: Any, tree: Tree[Any], charge: Callable[[int], None]
) -> Any:
    """``exists_one``'s count, as cel-go's fold ``p(x) ? r + 1 : r`` makes it: every item
    is tested, and the last test that fails (or is no bool) is the result's error."""
    count, failed = 0, None
    for item in items:
        result = test(item)
        if not isinstance(result, celtypes.BoolType | bool):
            failed = result if isinstance(result, CELEvalError) else _error(_NO_OVERLOAD, tree)
        elif result:
            charge(_COUNTED)
            count += 1
    return failed if failed is not None else count


def _folded(
    name: str,
    bodies: Sequence[Callable[[Any], Any]],
    items: Any,
    tree: Tree[Any],
    charge: Callable[[int], None],
) -> Any:
    """``filter`` and ``map`` (two or three arguments), as cel-go's folds over every item:
    ``p(x) ? r + [x] : r``, ``r + [f(x)]``, ``p(x) ? r + [f(x)] : r``. An error in ``r``
    stays, but a failed test replaces it: the last failed test is the error."""
    charge(LIST_COST)  # the result's initial []
    test = bodies[0] if name == "filter" or len(bodies) == 2 else None
    result: list[Any] | CELEvalError = []
    for item in items:
        if test is not None:
            chosen = test(item)
            if not isinstance(chosen, celtypes.BoolType | bool):
                result = chosen if isinstance(chosen, CELEvalError) else _error(_NO_OVERLOAD, tree)
                continue
            if not chosen:
                continue
        value = item if name == "filter" else bodies[-1](item)
        charge(_APPENDED + 1 if name == "filter" else _APPENDED)  # filter's [x] reads x
        if isinstance(result, list):
            if isinstance(value, CELEvalError):
                result = value
            else:
                result.append(value)
    charge(SELECT_COST)  # the result's variable
    return result if isinstance(result, CELEvalError) else celtypes.ListType(result)


_NO_OVERLOAD: Final = "no such overload"
_LIST_FIELD: Final = "unsupported index type 'string' in list"
_OVERFLOW: Final = "timestamp overflow"
# The functions the operators call: cel-go's, but celpy's name for ``in``.
_OPERATORS: Final = {**OPERATORS, "relation_in": "_in_"}
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


def _in_zone(timestamp: Any, getter: str, zone: str) -> Any:
    try:
        return celtypes.IntType(field_in_zone(timestamp, getter, zone))
    except TimeZoneError as exc:
        return CELEvalError(str(exc), CelFunctionError, (str(exc),))
    except OverflowError:  # a time zone takes a timestamp past Python's year 9999
        return CELEvalError(_OVERFLOW, CelFunctionError, (_OVERFLOW,))


def _uncharged(value: Any) -> bool:
    """Whether cel-go charges nothing for resolving a variable or selection to ``value``:
    an error, an empty optional, a type or a package name."""
    if isinstance(value, CelOptional):
        return not value.present
    return isinstance(value, CELEvalError | NameContainer) or cel_type_name(value) == "type"


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
