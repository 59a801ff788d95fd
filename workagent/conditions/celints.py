"""A faster construction of celpy's integers from plain ``int`` values.

Every integer operation in celpy returns ``IntType(result)``, and its
``__new__`` wraps a fresh range-checking closure with ``functools.wraps``
for each call: about half the time of an arithmetic-heavy comprehension.
:func:`install` gives ``IntType`` and ``UintType`` a fast path for plain
``int`` sources with the same result and the same ``ValueError("overflow")``
outside the range; every other source takes celpy's own path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from celpy import celtypes

_INT64: Final = (-(1 << 63), 1 << 63)
_UINT64: Final = (0, 1 << 64)


def _fast_new(original: Callable[..., Any], bounds: tuple[int, int]) -> Callable[..., Any]:
    low, high = bounds

    def new(cls: type, source: Any, *args: Any, **kwargs: Any) -> Any:
        if type(source) is int:
            if low <= source < high:
                return int.__new__(cls, source)
            raise ValueError("overflow")
        return original(cls, source, *args, **kwargs)

    new.fast_path = True  # type: ignore[attr-defined]
    return new


def install() -> None:
    """Give celpy's IntType and UintType the fast path (once per process)."""
    for cls, bounds in ((celtypes.IntType, _INT64), (celtypes.UintType, _UINT64)):
        if not getattr(cls.__new__, "fast_path", False):
            cls.__new__ = staticmethod(_fast_new(cls.__new__, bounds))  # type: ignore[method-assign]
