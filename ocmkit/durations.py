"""Go ``time.Duration`` syntax: parse ``1m30s``, format ``1h0m0s``, exactly as Go does.

OCM's flags are Go durations, and operators, Helm values and the klusterlet
operator pass them as Go prints them (``60s``, ``1h0m0s``, ``876000h``), so
they are parsed and printed with Go's rules (nanoseconds in Go's int64 range,
fractions computed in float64 as Go does) rather than an approximation.
"""

from __future__ import annotations

NANOSECOND = 1
MICROSECOND = 1_000 * NANOSECOND
MILLISECOND = 1_000 * MICROSECOND
SECOND = 1_000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

MAX_DURATION = (1 << 63) - 1  # Go's math.MaxInt64 nanoseconds, about 292 years
MIN_DURATION = -(1 << 63)

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # U+00B5 micro sign
    "\u03bcs": MICROSECOND,  # U+03BC Greek small letter mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}

# Go does all accumulation in uint64 and calls anything past 1<<63 an overflow.
_LIMIT = 1 << 63


class DurationError(ValueError):
    """A string that Go's ``time.ParseDuration`` would reject; the message is Go's."""


def _quote(text: str) -> str:
    """Quote like Go's ``time.quote``: ``"..."``, non-ASCII and control bytes as ``\\xNN``."""
    out = ['"']
    for char in text:
        if char >= "\x80" or char < " ":
            out.extend(f"\\x{byte:02x}" for byte in _raw_bytes(char))
        else:
            if char in '"\\':
                out.append("\\")
            out.append(char)
    out.append('"')
    return "".join(out)


def _raw_bytes(char: str) -> bytes:
    """The bytes behind one character; argv keeps undecodable bytes as lone surrogates."""
    try:
        return char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return char.encode("utf-8", "surrogatepass")


def _is_digit(char: str) -> bool:
    # str.isdigit() accepts other scripts' digits; Go only accepts ASCII ones.
    return "0" <= char <= "9"


def _leading_int(text: str, pos: int) -> tuple[int, int] | None:
    """Digits at ``pos`` as an integer and the position after them; None on overflow."""
    value = 0
    while pos < len(text) and _is_digit(text[pos]):
        if value > _LIMIT // 10:
            return None
        value = value * 10 + ord(text[pos]) - ord("0")
        if value > _LIMIT:
            return None
        pos += 1
    return value, pos


def _leading_fraction(text: str, pos: int) -> tuple[int, float, int]:
    """Fraction digits at ``pos``: (digits as integer, float scale, position after).

    Like Go, precision stops accumulating once the integer would overflow;
    the remaining digits are consumed and ignored, never an error.
    """
    value = 0
    scale = 1.0
    overflow = False
    while pos < len(text) and _is_digit(text[pos]):
        if not overflow:
            if value > (_LIMIT - 1) // 10:
                overflow = True
            else:
                candidate = value * 10 + ord(text[pos]) - ord("0")
                if candidate > _LIMIT:
                    overflow = True
                else:
                    value = candidate
                    scale *= 10
        pos += 1
    return value, scale, pos


def parse_duration(text: str) -> int:
    """Nanoseconds of a Go duration string; DurationError with Go's message otherwise."""
    invalid = DurationError(f"time: invalid duration {_quote(text)}")
    rest = text
    negative = False
    if rest and rest[0] in "+-":
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    pos = 0
    while pos < len(rest):
        if not (rest[pos] == "." or _is_digit(rest[pos])):
            raise invalid
        start = pos
        leading = _leading_int(rest, pos)
        if leading is None:
            raise invalid
        whole, pos = leading
        has_whole = pos != start
        fraction, scale, has_fraction = 0, 1.0, False
        if pos < len(rest) and rest[pos] == ".":
            pos += 1
            fraction_start = pos
            fraction, scale, pos = _leading_fraction(rest, pos)
            has_fraction = pos != fraction_start
        if not has_whole and not has_fraction:
            raise invalid  # ".s", "-.s": a dot alone is not a number
        unit_start = pos
        while pos < len(rest) and not (rest[pos] == "." or _is_digit(rest[pos])):
            pos += 1
        if pos == unit_start:
            raise DurationError(f"time: missing unit in duration {_quote(text)}")
        unit_name = rest[unit_start:pos]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise DurationError(
                f"time: unknown unit {_quote(unit_name)} in duration {_quote(text)}"
            )
        if whole > _LIMIT // unit:
            raise invalid
        value = whole * unit
        if fraction > 0:
            # Go computes the fraction in float64 and truncates; doing the same
            # keeps results identical to the nanosecond (e.g. "0.3333333333333333333h").
            value += int(float(fraction) * (float(unit) / scale))
            if value > _LIMIT:
                raise invalid
        total += value
        if total > _LIMIT:
            raise invalid
    if negative:
        return -total
    if total > MAX_DURATION:
        raise invalid
    return total


def _format_fraction(value: int, precision: int) -> tuple[str, int]:
    """The fraction ``value / 10**precision`` as ``.ddd`` without trailing zeros, and the rest.

    Returns ("", quotient) when the fraction is zero (no decimal point at all).
    """
    quotient, remainder = divmod(value, 10**precision)
    if remainder == 0:
        return "", quotient
    digits = f"{remainder:0{precision}d}".rstrip("0")
    return "." + digits, quotient


def format_duration(nanoseconds: int) -> str:
    """Go's ``Duration.String()`` of a nanosecond count in Go's int64 range."""
    if not MIN_DURATION <= nanoseconds <= MAX_DURATION:
        raise ValueError(f"{nanoseconds} ns is outside Go's duration range")
    sign = "-" if nanoseconds < 0 else ""
    magnitude = abs(nanoseconds)
    if magnitude < SECOND:
        # Below one second Go switches to the largest unit that keeps an integer part.
        if magnitude == 0:
            return "0s"
        if magnitude < MICROSECOND:
            return f"{sign}{magnitude}ns"
        if magnitude < MILLISECOND:
            fraction, whole = _format_fraction(magnitude, 3)
            return f"{sign}{whole}{fraction}\u00b5s"
        fraction, whole = _format_fraction(magnitude, 6)
        return f"{sign}{whole}{fraction}ms"
    fraction, seconds = _format_fraction(magnitude, 9)
    minutes, seconds = divmod(seconds, 60)
    text = f"{seconds}{fraction}s"
    if minutes:
        # Hours are the largest unit: days and years vary in length.
        hours, minutes = divmod(minutes, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return sign + text


def parse_duration_seconds(text: str) -> float:
    """A Go duration string as float seconds (DurationError if invalid)."""
    return parse_duration(text) / SECOND


def format_duration_seconds(seconds: float) -> str:
    """Float seconds in Go's duration notation, rounded to the nanosecond."""
    return format_duration(round(seconds * SECOND))
