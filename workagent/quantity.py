"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1e3``): their numeric value.

Two users: the appliers compare a manifest's quantities by value (the API
server stores them in canonical form, ``0.5`` comes back as ``500m``, so a
manifest that spells one differently would look changed on every
comparison), and the CEL ``quantity()`` library. A module of its own, outside
both packages, so that the CEL worker processes do not import the appliers.
"""

from __future__ import annotations

import re
from decimal import Decimal

_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENTS = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


def parse_quantity(text: str) -> Decimal | None:
    """The value of a quantity string, None when ``text`` is not one."""
    match = _QUANTITY.match(text)
    if match is None:
        return None
    number = Decimal(match["number"])  # the pattern admits only numbers
    suffix = match["suffix"] or ""
    if suffix in _BINARY_EXPONENTS:
        return number * (1 << _BINARY_EXPONENTS[suffix])
    if suffix in _DECIMAL_EXPONENTS:
        return number.scaleb(_DECIMAL_EXPONENTS[suffix])
    return number.scaleb(int(suffix[1:]))


def same_quantity(a: str, b: str) -> bool:
    """Whether two strings (surrounding white space ignored) are quantities of equal value."""
    qa, qb = parse_quantity(a.strip()), parse_quantity(b.strip())
    return qa is not None and qb is not None and qa == qb
