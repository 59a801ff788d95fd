"""Kubernetes resource quantities (``500m``, ``1Gi``, ``1e3``): their numeric value.

Two users: the appliers compare a manifest's quantities by value (the API
server stores them in canonical form, ``0.5`` comes back as ``500m``, so a
manifest that spells one differently would look changed on every
comparison), and the CEL ``quantity()`` library. A module of its own, outside
both packages, so that the CEL worker processes do not import the appliers.
"""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import Final, NamedTuple

#: Kubernetes' errors (k8s.io/apimachinery resource.ParseQuantity), word for word.
FORMAT_ERROR: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC_ERROR: Final = "unable to parse numeric part of quantity"
SUFFIX_ERROR: Final = "unable to parse quantity's suffix"

_BINARY_EXPONENTS: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_EXPONENTS: Final = {
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
_DIGITS: Final = frozenset("0123456789")
_SUFFIX_LETTERS: Final = frozenset("eEinumkKMGTP")
_NANO: Final = Decimal("1e-9")
_MAX_BINARY: Final = Decimal(2**63 - 1)


class QuantityError(ValueError):
    """Not a quantity; the message is Kubernetes'."""


def quantity_value(text: str) -> Decimal:
    """The value Kubernetes parses ``text`` to, rounded up to a nano as it does (a
    binary-suffixed one capped at 2^63-1); raises :class:`QuantityError`."""
    if not text:
        raise QuantityError(FORMAT_ERROR)
    negative, number, num, denom, suffix = _split(text)
    digits = (num + denom).strip("0") != ""
    base, exponent = _suffix(suffix)
    try:
        amount = Decimal(number if _DIGITS & set(number) else "0")  # ``+``, ``.``: zero
    except decimal.InvalidOperation:
        raise QuantityError(NUMERIC_ERROR) from None
    # Exact whatever the exponent: scaleb only moves it (1e2147483647 costs nothing).
    exact = decimal.Context(prec=len(text) + 40, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    with decimal.localcontext(exact):
        amount = abs(amount).scaleb(exponent) if base == 10 else abs(amount) * (1 << exponent)
        if amount and _exponent(amount) < -9:  # not a whole number of nanos: round up
            small = amount.adjusted() < -9
            amount = _NANO if small else amount.quantize(_NANO, rounding=decimal.ROUND_CEILING)
        if base == 2 and amount > _MAX_BINARY:
            amount = _MAX_BINARY
        return -amount if negative and digits else amount


def _exponent(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return exponent if isinstance(exponent, int) else 0


def parse_quantity(text: str) -> Decimal | None:
    """The value of a quantity string, None when ``text`` is not one."""
    try:
        return quantity_value(text)
    except QuantityError:
        return None


class _Parts(NamedTuple):
    """Kubernetes' reading of a quantity string."""

    negative: bool
    number: str  # as written, sign included
    num: str  # the integer digits, leading zeros stripped ("0" for none)
    denom: str  # the fraction's digits
    suffix: str


def _split(text: str) -> _Parts:
    pos, end = 0, len(text)
    negative = text[0] == "-"
    if text[0] in "+-":
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num, denom = text[start:pos] or "0", ""
    if pos < end and text[pos] == ".":
        pos += 1
        fraction = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[fraction:pos]
    number = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_ERROR)
    return _Parts(negative, number, num, denom, text[suffix_start:])


def _suffix(suffix: str) -> tuple[int, int]:
    """(base, exponent) of a suffix: decimal SI, binary SI or ``e<int64>``."""
    if suffix in _DECIMAL_EXPONENTS:
        return 10, _DECIMAL_EXPONENTS[suffix]
    if suffix in _BINARY_EXPONENTS:
        return 2, _BINARY_EXPONENTS[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = suffix[1:]
        body = exponent[1:] if exponent[0] in "+-" else exponent
        if 0 < len(body) <= 20 and set(body) <= _DIGITS and -(2**63) <= int(exponent) < 2**63:
            wrapped = (int(exponent) + 2**31) % 2**32 - 2**31  # Go's int32(parsed)
            return 10, wrapped
    raise QuantityError(SUFFIX_ERROR)


def same_quantity(a: str, b: str) -> bool:
    """Whether two strings (surrounding white space ignored) are quantities of equal value."""
    qa, qb = parse_quantity(a.strip()), parse_quantity(b.strip())
    return qa is not None and qb is not None and qa == qb


# -- Kubernetes' int64 representation ----------------------------------------------------
#
# Kubernetes keeps a quantity as an int64 times a power of ten when it can, otherwise as
# an arbitrary-precision decimal, and its CEL library calls a quantity an integer only in
# the first form with a scale of zero or more: ``1000m`` and ``1.0`` are not integers,
# nor is ``9223372036854775807`` (19 digits: parsed as a decimal).

#: (value, scale): the quantity is value x 10^scale. None: an arbitrary-precision decimal.
Amount = tuple[int, int] | None
_INT64: Final = range(-(2**63), 2**63)


def int64_amount(text: str) -> Amount:
    """How Kubernetes stores the quantity ``text`` (which must parse)."""
    if text == "0":
        return 0, 0
    negative, _, num, denom, suffix = _split(text)
    base, exponent = _suffix(suffix)
    mantissa = 1
    if base == 10:
        scale, precision = exponent, 18 - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        scale, mantissa = 0, 1 << exponent
        precision = 15 - len(num) - exponent * 3 // 10 - 1
    else:
        return None
    scale -= len(denom)
    result = int(num + denom) * mantissa
    if precision < 0 or scale < -9 or result not in _INT64:
        return None
    return -result if negative else result, scale


def add_amounts(a: Amount, b: Amount) -> Amount:
    """Kubernetes' int64 sum of two quantities; None when it goes to a decimal."""
    if a is None or b is None:
        return None
    if b[0] == 0:
        return a
    if a[0] == 0:
        return b
    (left, left_scale), (right, right_scale) = a, b
    scale = min(left_scale, right_scale)
    total = left * 10 ** (left_scale - scale) + right * 10 ** (right_scale - scale)
    scaled = max(abs(left) * 10 ** (left_scale - scale), abs(right) * 10 ** (right_scale - scale))
    return (total, scale) if total in _INT64 and scaled in _INT64 else None


def amount_as_int64(amount: Amount) -> int | None:
    """Kubernetes' ``AsInt64``: the integer, or None (a decimal, a negative scale, too big)."""
    if amount is None or amount[1] < 0:
        return None
    value = amount[0] * 10 ** amount[1]
    return value if value in _INT64 else None
