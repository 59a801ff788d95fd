"""Go duration syntax: parsing and formatting must agree with Go's time package.

The vectors are Go's own (src/time/time_test.go: parseDurationTests,
parseDurationErrorTests, durationTests), so a difference from Go shows here.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ocmkit.durations import (
    HOUR,
    MAX_DURATION,
    MICROSECOND,
    MILLISECOND,
    MIN_DURATION,
    MINUTE,
    NANOSECOND,
    SECOND,
    DurationError,
    format_duration,
    format_duration_seconds,
    parse_duration,
    parse_duration_seconds,
)

PARSE_OK = [
    # simple
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    # sign
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    # decimal
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600 * MILLISECOND),
    ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND),
    ("1.0s", 1 * SECOND),
    ("1.00s", 1 * SECOND),
    ("1.004s", 1 * SECOND + 4 * MILLISECOND),
    ("1.0040s", 1 * SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + 1 * MILLISECOND),
    # units
    ("10ns", 10 * NANOSECOND),
    ("11us", 11 * MICROSECOND),
    ("12\u00b5s", 12 * MICROSECOND),  # U+00B5
    ("12\u03bcs", 12 * MICROSECOND),  # U+03BC
    ("13ms", 13 * MILLISECOND),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    # composite
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND),
    # large
    ("52763797000ns", 52763797000 * NANOSECOND),
    # more than nine digits after the decimal point
    ("0.3333333333333333333h", 20 * MINUTE),
    # 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
    ("9007199254740993ns", (1 << 53) + 1),
    # largest duration that can be represented by int64 in nanoseconds
    ("9223372036854775807ns", MAX_DURATION),
    ("9223372036854775.807us", MAX_DURATION),
    ("9223372036s854ms775us807ns", MAX_DURATION),
    ("-9223372036854775808ns", MIN_DURATION),
    ("-9223372036854775.808us", MIN_DURATION),
    ("-9223372036s854ms775us808ns", MIN_DURATION),
    # largest negative value
    ("-9223372036854775808ns", MIN_DURATION),
    # largest negative round trip value
    ("-2562047h47m16.854775808s", MIN_DURATION),
    # huge string; issue 15011
    ("0.100000000000000000000h", 6 * MINUTE),
    # this value tests the first overflow check in leadingFraction
    ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372539827),
    # the values OCM's flags and the klusterlet operator use
    ("10s", 10 * SECOND),
    ("60s", 60 * SECOND),
    ("1h0m0s", HOUR),
    ("60m", HOUR),
    ("876000h", 876000 * HOUR),
    ("500ms", 500 * MILLISECOND),
    ("1m30s", 90 * SECOND),
    ("137s", 137 * SECOND),
]

PARSE_ERRORS = [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("1.5x3s", 'time: unknown unit "x" in duration "1.5x3s"'),
    ("10", 'time: missing unit in duration "10"'),
    ("1h 30m", 'time: unknown unit "h " in duration "1h 30m"'),
    ("\x85\x85", 'time: invalid duration "\\xc2\\x85\\xc2\\x85"'),
    ("\udc85\udc85", 'time: invalid duration "\\x85\\x85"'),  # undecodable argv bytes
    ("\xffff", 'time: invalid duration "\\xc3\\xbfff"'),
    ('"1h"', 'time: invalid duration "\\"1h\\""'),
    # overflow
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
]

FORMAT = [
    ("0s", 0),
    ("1ns", 1 * NANOSECOND),
    ("1.1\u00b5s", 1100 * NANOSECOND),
    ("2.2ms", 2200 * MICROSECOND),
    ("3.3s", 3300 * MILLISECOND),
    ("4m5s", 4 * MINUTE + 5 * SECOND),
    ("4m5.001s", 4 * MINUTE + 5001 * MILLISECOND),
    ("5h6m7.001s", 5 * HOUR + 6 * MINUTE + 7001 * MILLISECOND),
    ("8m0.000000001s", 8 * MINUTE + 1 * NANOSECOND),
    ("2562047h47m16.854775807s", MAX_DURATION),
    ("-2562047h47m16.854775808s", MIN_DURATION),
    # the defaults pflag prints in --help
    ("10s", 10 * SECOND),
    ("30s", 30 * SECOND),
    ("1h0m0s", HOUR),
    ("2m17s", 137 * SECOND),
    ("1m47s", 107 * SECOND),
    ("26s", 26 * SECOND),
    ("876000h0m0s", 876000 * HOUR),
    ("500ms", 500 * MILLISECOND),
    ("1m30s", 90 * SECOND),
    ("-1.5s", -1500 * MILLISECOND),
    ("999ns", 999),
    ("1µs", 1000),
    ("999.999µs", 999999),
    ("1ms", MILLISECOND),
    ("999.999999ms", SECOND - 1),
    ("1s", SECOND),
    ("1m0s", MINUTE),
    ("1h0m0.000000001s", HOUR + 1),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_OK)
def test_parse_matches_go(text: str, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(("text", "message"), PARSE_ERRORS)
def test_parse_errors_match_go(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(("text", "nanoseconds"), FORMAT)
def test_format_matches_go(text: str, nanoseconds: int) -> None:
    assert format_duration(nanoseconds) == text


def test_format_refuses_values_outside_int64() -> None:
    with pytest.raises(ValueError, match="outside"):
        format_duration(MAX_DURATION + 1)
    with pytest.raises(ValueError, match="outside"):
        format_duration(MIN_DURATION - 1)


def test_seconds_helpers() -> None:
    assert parse_duration_seconds("876000h") == 876000 * 3600.0
    assert parse_duration_seconds("500ms") == 0.5
    assert parse_duration_seconds("1m30s") == 90.0
    assert format_duration_seconds(30.0) == "30s"
    assert format_duration_seconds(3600.0) == "1h0m0s"
    assert format_duration_seconds(0.5) == "500ms"
    assert format_duration_seconds(0.1) == "100ms"  # rounded to the nanosecond, not truncated


int64s = st.integers(min_value=MIN_DURATION, max_value=MAX_DURATION)
# Go prints hours, minutes, seconds with a fraction, or one sub-second unit.
GO_FORMAT = re.compile(
    r"-?(0s|[1-9][0-9]*ns|[1-9][0-9]*(\.[0-9]*[1-9])?(µs|ms)"
    r"|([1-9][0-9]*h)?([1-9][0-9]*m|(?<=h)0m)?[0-9]+(\.[0-9]*[1-9])?s)"
)


@given(int64s)
@example(MIN_DURATION)
@example(MAX_DURATION)
@example(0)
@example(-1)
def test_format_then_parse_round_trips(nanoseconds: int) -> None:
    text = format_duration(nanoseconds)
    assert parse_duration(text) == nanoseconds
    assert GO_FORMAT.fullmatch(text), text


@given(int64s)
def test_format_is_canonical(nanoseconds: int) -> None:
    text = format_duration(nanoseconds)
    assert format_duration(parse_duration(text)) == text


UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}


@given(
    st.lists(
        # At most 400,000 of a unit: six hour components stay within int64 (overflow has
        # its own test).
        st.tuples(st.integers(min_value=0, max_value=400_000), st.sampled_from(sorted(UNITS))),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["", "+", "-"]),
)
def test_parse_sums_integer_components(parts: list[tuple[int, str]], sign: str) -> None:
    text = sign + "".join(f"{value}{unit}" for value, unit in parts)
    total = sum(value * UNITS[unit] for value, unit in parts)
    assert parse_duration(text) == (-total if sign == "-" else total)


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=10**9 - 1))
def test_parse_exact_nanosecond_fractions(whole: int, fraction: int) -> None:
    # Nine fraction digits of a second are whole nanoseconds: Go's float step is exact.
    assert parse_duration(f"{whole}.{fraction:09d}s") == whole * SECOND + fraction


@given(st.text(max_size=12))
def test_parse_either_succeeds_or_raises_duration_error(text: str) -> None:
    try:
        value = parse_duration(text)
    except DurationError as err:
        assert str(err).startswith("time: ")
    else:
        assert MIN_DURATION <= value <= MAX_DURATION
