"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1e3``), for comparing, not for arithmetic.

The API server stores quantities in canonical form (``0.5`` comes back as
``500m``), so a manifest that spells one differently would look changed on
every comparison. Only the numeric value matters.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)


def parse_quantity(text: str) -> Decimal | None:
    """The value of a quantity string, None when ``text`` is not one."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    try:
        number = Decimal(match["number"])
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        return None
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * (Decimal(10) ** int(suffix[1:]))


def same_quantity(a: str, b: str) -> bool:
    """Whether two strings are quantities of equal value."""
    qa, qb = parse_quantity(a), parse_quantity(b)
    return qa is not None and qb is not None and qa == qb
