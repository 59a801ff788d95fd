"""What OCM's webhook refuses when it decodes an object into its Go types.

The API server checks objects against the CRD before it calls the webhook,
so the JSON types are right by then. Two things still fail in Go's decoder
and OCM answers them with a 400: an integer outside an ``int32`` field's
range (the CRD's ``format: int32`` is not range-checked, and an
int-or-string holds an ``int32`` too) and a ``metav1.Duration`` that
``time.ParseDuration`` does not read. The fields are found from the API
models' markers (``Format("int32")``, ``IntOrString``, ``GoDuration``).

Go's decoder keeps the first type error (in document order) and goes on,
but stops at once at an error of a type's own decoding (a Duration's, an
int-or-string's), which therefore wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from ocmkit.durations import DurationError, parse_duration
from schemas.markers import Format, GoDuration, IntOrString, unwrap

_INT32 = (-(1 << 31), (1 << 31) - 1)


class _Stop(Exception):
    """An error of a type's own decoding: Go's decoder returns it at once."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class DecodeProblem:
    """Go's decoding error (its message), and whether it stopped the decoder at once."""

    message: str
    immediate: bool


def decode_problem(obj: Any, model: type[BaseModel]) -> DecodeProblem | None:
    """Go's decoding error for ``obj`` read as ``model``, if any."""
    saved: list[str] = []
    try:
        _object(obj, model, (), saved)
    except _Stop as stop:
        return DecodeProblem(stop.message, immediate=True)
    return DecodeProblem(saved[0], immediate=False) if saved else None


def _object(obj: Any, model: type[BaseModel], path: tuple[str, ...], saved: list[str]) -> None:
    if not isinstance(obj, Mapping):
        return
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    for key, value in obj.items():
        info = fields.get(key)
        if info is not None:
            tp, markers = unwrap(info.annotation, list(info.metadata))
            _value(value, tp, markers, model.__name__, (*path, key), saved)


def _value(
    value: Any, tp: Any, markers: list[Any], struct: str, path: tuple[str, ...], saved: list[str]
) -> None:
    if value is None:
        return  # null leaves a Go field at its zero value
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        _object(value, tp, path, saved)
    elif get_origin(tp) is list and isinstance(value, list):
        item, item_markers = unwrap(get_args(tp)[0], [])
        for element in value:  # Go's field path names no index
            _value(element, item, item_markers, struct, path, saved)
    elif any(isinstance(m, GoDuration) for m in markers) and isinstance(value, str):
        try:
            parse_duration(value)
        except DurationError as err:
            raise _Stop(str(err)) from None
    elif isinstance(value, int) and not isinstance(value, bool) and not _fits_int32(value):
        message = (
            f"json: cannot unmarshal number {value} into Go struct field "
            f"{struct}.{'.'.join(path)} of type int32"
        )
        if any(isinstance(m, IntOrString) for m in markers):
            raise _Stop(message)  # from IntOrString's own UnmarshalJSON
        if Format("int32") in markers:
            saved.append(message)


def _fits_int32(value: int) -> bool:
    low, high = _INT32
    return low <= value <= high
