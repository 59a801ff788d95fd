"""cel-go's type checker over our parse trees: static types and overload errors.

OCM's agent compiles a rule with cel-go's ``Env.Compile``, which type-checks it:
``1 + 'a'``, ``size(object.x) == 'b'`` or ``object.?spec + 1`` are compile errors
(``found no matching overload for '_+_' applied to '(int, string)'``) before any
object is read. celpy does not check types; this module does, as cel-go does:

* the declarations of every function in OCM's environment come from cel-go
  itself (``celdecls.json``, printed by the CEL oracle's ``-declarations``);
* overloads are resolved with type parameters, ``dyn`` and one substitution
  mapping per expression; a call whose overloads all match with different
  result types is ``dyn``;
* the macros are typed as cel-go expands them (``map`` is a fold appending
  ``[f]`` to ``[]``, ``optMap`` a ``?:`` over ``hasValue()``), which decides
  the errors they give and where;
* errors are placed where cel-go places them: an operator's symbol, a call's
  ``(``, a selection's ``.``, an index's ``[``, a literal's first character.

Undeclared names are :mod:`celcheck`'s to report; here they are typed as
errors, which match anything, as in cel-go.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from lark import Token, Tree

from workagent.conditions.celtree import OPERATORS, location, simple_name, unary_run, unwrap


@dataclass(frozen=True, slots=True)
class CelType:
    """A CEL type: ``name`` with its ``params`` (``list(int)``); ``param`` marks a type
    variable, ``object`` an object type (``kubernetes.Quantity``)."""

    name: str
    params: tuple[CelType, ...] = ()
    param: bool = False
    object: bool = False

    def __str__(self) -> str:  # cel-go's FormatCELType
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(str(p) for p in self.params)})"


DYN: Final = CelType("dyn")
ERROR: Final = CelType("!error!")
BOOL: Final = CelType("bool")
INT: Final = CelType("int")
NULL: Final = CelType("null")
STRING: Final = CelType("string")


def list_of(element: CelType) -> CelType:
    """``list(element)``."""
    return CelType("list", (element,))


def optional_of(value: CelType) -> CelType:
    """``optional_type(value)``."""
    return CelType("optional_type", (value,))


def _type_of(value: CelType) -> CelType:
    return CelType("type", (value,))


# The kinds cel-go tests by the type's own assignability (same type), and those it
# lets be null besides null itself (opaque and object types, the two well-known ones).
_PRIMITIVES: Final = frozenset(
    {"bool", "bytes", "double", "int", "string", "uint", "duration", "timestamp", "any"}
)
_AGGREGATES: Final = frozenset({"list", "map"})


def _is_dyn(t: CelType) -> bool:
    return not t.param and t.name in ("dyn", "any")


def _is_opaque(t: CelType) -> bool:
    return not (t.param or t.object) and t.name not in (
        _PRIMITIVES | _AGGREGATES | {"dyn", "!error!", "null", "type"}
    )


def _nullable(t: CelType) -> bool:
    return t.object or _is_opaque(t) or t.name in ("any", "duration", "timestamp", "null")


Mapping = dict[str, CelType]


def _assignable(m: Mapping, t1: CelType, t2: CelType) -> bool:
    """Whether a ``t1`` may be passed where ``t2`` is wanted, binding type variables in
    ``m`` (cel-go's internalIsAssignable)."""
    if t2.param:
        valid, bound = _substitution(m, t1, t2)
        if valid or bound:
            return valid
    if t1.param:
        return _substitution(m, t2, t1)[0]
    if _is_dyn(t1) or _is_dyn(t2) or ERROR in (t1, t2):
        return True
    if t1 == NULL:
        return _nullable(t2)
    if t2 == NULL:
        return _nullable(t1)
    if t1.name == "type":
        return t2.name == "type" and not t2.param
    if t1.name in _AGGREGATES or _is_opaque(t1):
        return (
            t1.name == t2.name
            and t1.object == t2.object
            and len(t1.params) == len(t2.params)
            and all(_assignable(m, a, b) for a, b in zip(t1.params, t2.params, strict=True))
        )
    return t1 == t2


def _substitution(m: Mapping, t1: CelType, variable: CelType) -> tuple[bool, bool]:
    """Whether ``variable`` may stand for ``t1`` (binding it if free), and whether it
    was bound already (cel-go's isValidTypeSubstitution)."""
    if t1 == variable:
        return True, True
    bound = m.get(variable.name)
    if bound is not None:
        if t1 == bound:
            return True, True
        if _assignable(m, t1, bound):
            general = _most_general(t1, bound)
            if _not_within(m, variable, general):
                m[variable.name] = general
            return True, True
        return False, True
    if _not_within(m, variable, t1):
        m[variable.name] = t1
        return True, False
    return False, False


def _not_within(m: Mapping, t: CelType, within: CelType) -> bool:
    """The occurs check: ``t`` is not ``within``, nor in it, nor in what it is bound to."""
    if t == within:
        return False
    if within.param:
        bound = m.get(within.name)
        return bound is None or _not_within(m, t, bound)
    return all(_not_within(m, t, p) for p in within.params)


def _less_specific(t1: CelType, t2: CelType) -> bool:
    """Whether ``t1`` is ``t2`` or matches it through ``dyn`` or a type variable."""
    if _is_dyn(t1) or t1.param:
        return True
    if _is_dyn(t2) or t2.param:
        return False
    if t1.name != t2.name or t1.object != t2.object:
        return False
    if t1.name == "type":
        return True
    if t1.name in _AGGREGATES or _is_opaque(t1):
        return len(t1.params) == len(t2.params) and all(
            _less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True)
        )
    return t1 == t2


def _most_general(t1: CelType, t2: CelType) -> CelType:
    return t1 if _less_specific(t1, t2) else t2


def substitute(m: Mapping, t: CelType, free_to_dyn: bool = False) -> CelType:
    """``t`` with its bound type variables replaced (free ones by ``dyn`` if asked)."""
    if t.param:
        bound = m.get(t.name)
        if bound is not None:
            return substitute(m, bound, free_to_dyn)
        return DYN if free_to_dyn else t
    if t.params:
        return replace(t, params=tuple(substitute(m, p, free_to_dyn) for p in t.params))
    return t


# -- declarations ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Overload:
    """One signature of a function; a method's receiver is its first argument.
    ``disabled``: a cross-type numeric comparison, which cel-go's checker leaves out
    only until it enters the first comprehension of the expression: the scopes it
    makes there, and the one it returns to, do not inherit the list of disabled
    overloads (``[1].map(x, 1.5 <= 1)`` and ``[].all(x, true) && 1.5 <= 1`` compile,
    ``1.5 <= 1`` does not)."""

    id: str
    member: bool
    type_params: tuple[str, ...]
    args: tuple[CelType, ...]
    result: CelType
    disabled: bool


def _decoded(tree: Any) -> CelType:
    if isinstance(tree, str):
        return CelType(tree)
    if isinstance(tree, dict):
        if "param" in tree:
            return CelType(tree["param"], param=True)
        return CelType(tree["object"], object=True)
    return CelType(tree[0], tuple(_decoded(p) for p in tree[1:]))


def _load_declarations() -> dict[str, tuple[Overload, ...]]:
    raw = json.loads((Path(__file__).parent / "celdecls.json").read_text())
    return {
        name: tuple(
            Overload(
                o["id"],
                bool(o.get("member")),
                tuple(o.get("params", ())),
                tuple(_decoded(a) for a in o["args"]),
                _decoded(o["result"]),
                bool(o.get("disabled")),
            )
            for o in overloads
        )
        for name, overloads in raw.items()
    }


#: Every function of OCM's condition-rule environment, its overloads in cel-go's order.
DECLARATIONS: Final = _load_declarations()

#: What a type's name stands for as a value (``type(x) == int``).
TYPE_IDENTIFIERS: Final = {
    **{name: _type_of(CelType(name)) for name in ("bool", "bytes", "double", "int", "string")},
    "uint": _type_of(CelType("uint")),
    "list": _type_of(list_of(DYN)),
    "map": _type_of(CelType("map", (DYN, DYN))),
    "null_type": _type_of(NULL),
    "type": _type_of(CelType("type")),
    "optional_type": _type_of(optional_of(DYN)),
}
_QUALIFIED_TYPES: Final = {name: _type_of(CelType(name)) for name in ("net.IP", "net.CIDR")}
_LITERALS: Final = {
    "INT_LIT": INT,
    "UINT_LIT": CelType("uint"),
    "FLOAT_LIT": CelType("double"),
    "STRING_LIT": STRING,
    "MLSTRING_LIT": STRING,
    "BYTES_LIT": CelType("bytes"),
    "BOOL_LIT": BOOL,
    "NULL_LIT": NULL,
}
_SYMBOLS: Final = {"conditionalor": "||", "conditionaland": "&&", "expr": "?"}
#: The macros that fold a list or map; ``map`` also with three arguments.
FOLDS: Final = frozenset({"all", "exists", "exists_one", "filter", "map"})


# -- the checker ----------------------------------------------------------------------


@dataclass
class Typing:
    """What checking one expression found: its errors (offset, message), the type of
    each node (by ``id``) and, for each call, the overloads it may run."""

    errors: list[tuple[int, str]] = field(default_factory=list)
    types: dict[int, CelType] = field(default_factory=dict)
    overloads: dict[int, tuple[str, ...]] = field(default_factory=dict)


def check_types(tree: Tree[Any], source: str, variables: Iterable[str]) -> Typing:
    """Type-check a parsed expression whose names :mod:`celcheck` found declared
    (``source`` only places the errors)."""
    checker = _Checker(source, {name: _VARIABLE_TYPES[name] for name in variables})
    checker.type(tree, {})
    return checker.found


_VARIABLE_TYPES: Final = {"object": DYN, "result": BOOL}
#: The variables of a condition rule (``object``; a message expression adds ``result``).
RULE_TYPES: Final = ("object",)


class _Checker:
    def __init__(self, source: str, variables: dict[str, CelType]) -> None:
        self.source = source
        self.variables = variables
        self.mapping: Mapping = {}
        self.free = 0
        #: Whether a comprehension was entered (see :attr:`Overload.disabled`).
        self.scoped = False
        self.found = Typing()

    # -- helpers ----------------------------------------------------------------------

    def fresh(self) -> CelType:
        self.free += 1
        return CelType(f"_var{self.free - 1}", param=True)

    def error(self, offset: int, message: str) -> CelType:
        self.found.errors.append((offset, message))
        return ERROR

    def assignable(self, t1: CelType, t2: CelType) -> bool:
        """:func:`_assignable`, keeping the bindings only when it holds."""
        trial = dict(self.mapping)
        if _assignable(trial, t1, t2):
            self.mapping = trial
            return True
        return False

    def mismatch(self, offset: int, expected: CelType, actual: CelType) -> None:
        self.error(offset, f"expected type '{expected}' but found '{actual}'")

    # -- expressions ------------------------------------------------------------------

    def type(self, node: Any, scope: dict[str, CelType]) -> CelType:
        """The type of ``node``, errors reported on the way."""
        inner = unwrap(node)
        result = self._type(inner, scope)
        self.found.types[id(inner)] = result
        return result

    def _type(self, node: Tree[Any], scope: dict[str, CelType]) -> CelType:
        data, children = node.data, node.children
        if data == "expr" and len(children) == 3:
            args = [self.type(child, scope) for child in children]
            return self.resolve(node, "_?_:_", None, args)
        if data in ("conditionalor", "conditionaland") and len(children) == 2:
            return self.logical(children, [self.type(child, scope) for child in children])
        if data == "unary" and len(children) == 2:
            count, operand = unary_run(node)
            kind = self.type(operand, scope)
            return (
                kind
                if count % 2 == 0
                else self.resolve(node, OPERATORS[children[0].data], None, [kind])
            )
        if data in ("relation", "addition", "multiplication") and len(children) == 2:
            operator, right = children
            args = [self.type(operand, scope) for operand in (operator.children[0], right)]
            return self.resolve(node, OPERATORS[operator.data], None, args)
        if data == "literal":
            token = children[0]
            return _LITERALS.get(token.type, DYN) if isinstance(token, Token) else DYN
        if data == "ident":
            return self.identifier(str(children[0]), scope)
        if data == "paren_expr":
            return self.type(children[0], scope)
        if data == "list_lit":
            return self.list_literal(children[0].children if children else [], scope)
        if data == "map_lit":
            return self.map_literal(children[0].children if children else [], scope)
        if data == "ident_arg":
            return self.global_call(node, scope)
        if data in ("member_dot", "member_optdot"):
            qualified = f"{simple_name(children[0])}.{children[1]}"
            if data == "member_dot" and qualified in _QUALIFIED_TYPES:
                return _QUALIFIED_TYPES[qualified]
            return self.select(node, children[0], scope, optional=data == "member_optdot")
        if data in ("member_index", "member_optindex"):
            args = [self.type(child, scope) for child in children]
            name = "_[_]" if data == "member_index" else "_[?_]"
            return self.resolve(node, name, None, args)
        if data == "member_dot_arg":
            return self.member_call(node, scope)
        return ERROR  # ``.f``, ``.f()``: celcheck's errors

    def body(self, node: Any, scope: dict[str, CelType]) -> CelType:
        """:meth:`type` of a comprehension's body, its range and accumulator checked."""
        self.scoped = True
        return self.type(node, scope)

    def identifier(self, name: str, scope: dict[str, CelType]) -> CelType:
        if name in scope:
            return scope[name]
        if name in self.variables:
            return self.variables[name]
        return TYPE_IDENTIFIERS.get(name, ERROR)

    def logical(self, operands: list[Any], types: list[CelType]) -> CelType:
        """``&&`` and ``||``: each operand must be a bool (cel-go's own check of them)."""
        result = BOOL
        for operand, kind in zip(operands, types, strict=True):
            if not self.assignable(kind, BOOL):
                self.mismatch(location(operand, self.source), BOOL, kind)
                result = ERROR
        return result

    def resolve(
        self, node: Any, name: str, target: CelType | None, args: list[CelType], at: int = -1
    ) -> CelType:
        """The result type of calling ``name``, or an error when no overload matches."""
        overloads = DECLARATIONS.get(name)
        if overloads is None:
            return ERROR  # undeclared: celcheck's error
        given = [target, *args] if target is not None else args
        result: CelType | None = None
        matched: list[str] = []
        for overload in overloads:
            if overload.member != (target is not None) or (overload.disabled and not self.scoped):
                continue
            wanted, returned = overload.args, overload.result
            if overload.type_params:
                fresh = {p: self.fresh() for p in overload.type_params}
                wanted = tuple(substitute(fresh, t) for t in wanted)
                returned = substitute(fresh, returned)
            trial = dict(self.mapping)
            if len(wanted) != len(given) or not all(
                _assignable(trial, a, w) for a, w in zip(given, wanted, strict=True)
            ):
                continue
            self.mapping = trial
            matched.append(overload.id)
            returned = substitute(self.mapping, returned)
            if result is None:
                result = returned
            elif not _is_dyn(result) and returned != result:
                result = DYN
        if node is not None:
            self.found.overloads[id(node)] = tuple(matched)
        if result is None:
            shown = [str(substitute(self.mapping, t, free_to_dyn=True)) for t in given]
            signature = f"({', '.join(shown)})"
            if target is not None:
                signature = f"{shown[0]}.({', '.join(shown[1:])})"
            offset = at if at >= 0 else location(node, self.source)
            return self.error(
                offset, f"found no matching overload for '{name}' applied to '{signature}'"
            )
        return result

    def select(
        self, node: Tree[Any], operand: Any, scope: dict[str, CelType], *, optional: bool
    ) -> CelType:
        """``x.f`` and ``x.?f``: a map's value type; ``dyn`` for ``dyn``."""
        operand_type = substitute(self.mapping, self.type(operand, scope))
        target, was_optional = _unwrap_optional(operand_type)
        if target.name == "map" and not target.param:
            result = target.params[1]
        elif target.object:
            # No object type of these libraries declares fields.
            result = self.error(
                location(node, self.source), f"unexpected failed resolution of '{target.name}'"
            )
        elif target.param:
            self.assignable(DYN, target)
            result = DYN
        else:
            if not _is_dyn(target) and target != ERROR:
                self.error(
                    location(node, self.source), f"type '{target}' does not support field selection"
                )
            result = DYN
        result = optional_of(result) if was_optional or optional else result
        return substitute(self.mapping, result)

    def list_literal(self, items: list[Any], scope: dict[str, CelType]) -> CelType:
        element: CelType | None = None
        for item in items:
            kind = self.element(item, scope)
            element = self.join(element, kind)
        return list_of(element if element is not None else self.fresh())

    def map_literal(self, items: list[Any], scope: dict[str, CelType]) -> CelType:
        keys: CelType | None = None
        values: CelType | None = None
        for key, value in zip(items[::2], items[1::2], strict=True):
            optional = isinstance(key, Tree) and key.data == "opt_expr"
            keys = self.join(keys, self.type(key.children[0] if optional else key, scope))
            values = self.join(values, self.element(value, scope, optional=optional))
        if keys is None or values is None:
            return CelType("map", (self.fresh(), self.fresh()))
        return CelType("map", (keys, values))

    def element(self, item: Any, scope: dict[str, CelType], *, optional: bool = False) -> CelType:
        """A literal's element or map value; ``?e`` must be an optional (its content counts)."""
        if isinstance(item, Tree) and item.data == "opt_expr":
            item, optional = item.children[0], True
        kind = self.type(item, scope)
        if optional:
            kind, was_optional = _unwrap_optional(kind)
            if not was_optional and not _is_dyn(kind):
                self.mismatch(location(item, self.source), optional_of(kind), kind)
        return kind

    def join(self, previous: CelType | None, current: CelType) -> CelType:
        """A literal's element type so far with one more: the more general, else ``dyn``."""
        if previous is None:
            return current
        if self.assignable(previous, current):
            return _most_general(previous, current)
        return DYN

    # -- calls and macros -------------------------------------------------------------

    def global_call(self, node: Tree[Any], scope: dict[str, CelType]) -> CelType:
        name = str(node.children[0])
        args = node.children[1].children if len(node.children) > 1 else []
        if name == "has":
            selection = unwrap(args[0]) if len(args) == 1 else None
            if selection is None or selection.data != "member_dot":
                return ERROR  # celcheck's error
            self.select(selection, selection.children[0], scope, optional=False)
            return BOOL
        types = [self.type(arg, scope) for arg in args]
        return self.resolve(node, name, None, types)

    def member_call(self, node: Tree[Any], scope: dict[str, CelType]) -> CelType:
        target, name = node.children[0], str(node.children[1])
        args = node.children[2].children if len(node.children) > 2 else []
        qualified = f"{simple_name(target)}.{name}"
        if qualified in DECLARATIONS:
            return self.resolve(node, qualified, None, [self.type(arg, scope) for arg in args])
        macro = (name in FOLDS and len(args) == 2) or (name == "map" and len(args) == 3)
        if macro or (name in ("optMap", "optFlatMap") and len(args) == 2):
            variable = simple_name(args[0])
            if variable is None:
                return ERROR  # celcheck's error
            if macro:
                return self.fold(node, name, target, variable, args[1:], scope)
            return self.optional_map(node, name, target, variable, args[1], scope)
        types = [self.type(arg, scope) for arg in args]  # before the receiver, as cel-go
        return self.resolve(node, name, self.type(target, scope), types)

    def fold(
        self,
        node: Tree[Any],
        name: str,
        target: Any,
        variable: str,
        bodies: list[Any],
        scope: dict[str, CelType],
    ) -> CelType:
        """``all``, ``exists``, ``exists_one``, ``filter``, ``map`` as cel-go's comprehensions."""
        at = location(node, self.source)
        range_type = substitute(self.mapping, self.type(target, scope))
        accumulator = {"all": BOOL, "exists": BOOL, "exists_one": INT}.get(name)
        if accumulator is None:
            accumulator = list_of(self.fresh())
        if range_type.name in _AGGREGATES and not range_type.param:
            element = range_type.params[0]
        elif _is_dyn(range_type) or range_type == ERROR or range_type.param:
            self.assignable(DYN, range_type)
            element = DYN
        else:
            element = self.error(
                location(target, self.source),
                f"expression of type '{range_type}' cannot be range of a comprehension "
                "(must be list, map, or dynamic)",
            )
        inner = {**scope, variable: element}
        first = self.body(bodies[0], inner)
        if name in ("all", "exists"):
            self.logical([bodies[0]], [first])  # the fold's ``accumulator && e``
            return BOOL
        if name == "exists_one":
            counted = self.resolve(None, "_+_", None, [INT, INT], at)
            self.resolve(None, "_?_:_", None, [first, counted, INT], at)
            return self.resolve(None, "_==_", None, [INT, INT], at)  # accumulator == 1
        if name == "map" and len(bodies) == 1:
            self.resolve(None, "_+_", None, [accumulator, list_of(first)], at)
        else:
            appended = element if name == "filter" else self.body(bodies[1], inner)
            grown = self.resolve(None, "_+_", None, [accumulator, list_of(appended)], at)
            self.resolve(None, "_?_:_", None, [first, grown, accumulator], at)
        return substitute(self.mapping, accumulator)

    def optional_map(
        self,
        node: Tree[Any],
        name: str,
        target: Any,
        variable: str,
        body: Any,
        scope: dict[str, CelType],
    ) -> CelType:
        """``o.optMap(v, e)``: cel-go's ``o.hasValue() ? optional.of(<v = o.value()> e) :
        optional.none()`` (without ``optional.of`` for ``optFlatMap``). ``o`` is checked
        twice, as cel-go checks its two copies (an error in it is reported twice)."""
        at = location(node, self.source)
        has_value = self.resolve(None, "hasValue", self.type(target, scope), [], at)
        self.fresh()  # the expansion's empty range list
        value = self.resolve(None, "value", self.type(target, scope), [], at)
        mapped = self.body(body, {**scope, variable: value})
        if name == "optMap":
            mapped = self.resolve(None, "optional.of", None, [mapped], at)
        none = self.resolve(None, "optional.none", None, [], at)
        return self.resolve(None, "_?_:_", None, [has_value, mapped, none], at)


def _unwrap_optional(t: CelType) -> tuple[CelType, bool]:
    if t.name == "optional_type" and not t.param and t.params:
        return t.params[0], True
    return t, False
