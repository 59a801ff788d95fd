"""Validation failures as ``path: message`` lines.

Pydantic reports errors with a location tuple and its own wording; the webhook
and the agent need Kubernetes-style field paths (``spec.workload.manifests[2]``)
and short rule descriptions they can put in admission responses and
conditions. :func:`problems_from_pydantic` does that translation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

__all__ = ["FieldProblem", "SchemaValidationError", "format_path", "problems_from_pydantic"]

_PLAIN_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


@dataclass(frozen=True, order=True)
class FieldProblem:
    """One invalid field: where (``spec.x[0].y``) and which rule it breaks."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SchemaValidationError(ValueError):
    """An object failed validation; :attr:`problems` lists every failure."""

    def __init__(self, kind: str, problems: Sequence[FieldProblem]) -> None:
        self.kind = kind
        self.problems: tuple[FieldProblem, ...] = tuple(problems)
        super().__init__(self._text())

    def lines(self) -> list[str]:
        """Each problem as ``path: message``."""
        return [str(p) for p in self.problems]

    def _text(self) -> str:
        head = f"{self.kind} is invalid"
        if len(self.problems) == 1:
            return f"{head}: {self.problems[0]}"
        return head + ":\n" + "\n".join(f"  {p}" for p in self.problems)


def format_path(loc: Iterable[str | int]) -> str:
    """``("spec", "manifests", 2, "kind")`` as ``spec.manifests[2].kind``.

    Map keys that are not plain identifiers (label keys such as
    ``app.kubernetes.io/name``) are bracketed so the path stays unambiguous.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out or "(root)"


def problems_from_pydantic(
    err: ValidationError, prefix: Sequence[str | int] = ()
) -> list[FieldProblem]:
    """Translate every error of ``err`` into a :class:`FieldProblem`."""
    return [_problem(e, tuple(prefix)) for e in err.errors(include_url=False)]


def _problem(e: ErrorDetails, prefix: tuple[str | int, ...]) -> FieldProblem:
    loc = prefix + tuple(e["loc"])
    ctx: dict[str, Any] = dict(e.get("ctx") or {})
    kind = e["type"]
    if kind == "missing" and loc:
        return FieldProblem(format_path(loc[:-1]), f"{loc[-1]} is required")
    if kind == "list_map_duplicate":
        loc = (*loc, int(ctx["index"]))
    return FieldProblem(format_path(loc), _message(kind, ctx, e["msg"]))


_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "an array",
}


# Length errors: the message, the context key of the limit and what is counted.
_COUNTED = {
    "string_too_short": ("must be at least {} long", "min_length", "character"),
    "string_too_long": ("must be at most {} long", "max_length", "character"),
    "too_short": ("must have at least {}", "min_length", "item"),
    "too_long": ("must have at most {}", "max_length", "item"),
}
# Numeric bounds: the message and the context key of the bound.
_BOUNDS = {
    "greater_than_equal": ("must be greater than or equal to", "ge"),
    "less_than_equal": ("must be less than or equal to", "le"),
}


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _message(kind: str, ctx: dict[str, Any], fallback: str) -> str:
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}"
    if kind in ("enum", "literal_error"):
        return f"must be {ctx.get('expected', '')}".rstrip()
    if kind in _COUNTED:
        template, key, unit = _COUNTED[kind]
        return template.format(_plural(ctx.get(key), unit))
    if kind in _BOUNDS:
        text, key = _BOUNDS[kind]
        return f"{text} {ctx.get(key)}"
    # Our own checks (PydanticCustomError) already speak in this style; the
    # rest of pydantic's messages get the same "must ..." voice.
    for head, repl in (("Input should be ", "must be "), ("Value error, ", "")):
        if fallback.startswith(head):
            return repl + fallback[len(head) :]
    return fallback
