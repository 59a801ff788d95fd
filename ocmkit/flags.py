"""OCM-style command-line flags, parsed as Go's pflag does; shared by both programs.

OCM's operators start the agent and the hub processes with argument lists
written for the Go binaries; ours must take those lists unchanged, so flags
follow pflag's conventions and Go's value syntax rather than argparse's
(docs/operations.md#flags). Anything unknown or malformed is a
:class:`UsageError`.
"""

from __future__ import annotations

import dataclasses
import math
import re
import struct
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ocmkit import durations
from ocmkit.govalues import go_quote

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


class UsageError(Exception):
    """A command line that cannot run; shown as one ``<program>: <message>`` line (exit code 2)."""


# -- value types ------------------------------------------------------------------------


def parse_go_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``: 1/t/T/TRUE/true/True and their false forms."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f"strconv.ParseBool: parsing {go_quote(text)}: invalid syntax")


_GO_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)")


def parse_go_int(text: str, bits: int = 64) -> int:
    """Go's ``strconv.ParseInt(text, 0, bits)``: base prefixes, a leading ``0`` is octal."""
    if not _GO_INT.fullmatch(text) or "__" in text or text.endswith("_"):
        raise ValueError(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXoObB":
        digits = "0o" + digits[1:]  # Go reads "010" as octal 8; Python refuses it
    try:
        value = sign * int(digits, 0)
    except ValueError:
        raise ValueError(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax") from None
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise ValueError(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return value


#: Go's float syntax (``strconv.ParseFloat``): decimal, or hex with a ``p`` exponent;
#: underscores are checked apart (:func:`_underscores_ok`), specials are matched alone.
_GO_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9_]+\.?[0-9_]*|\.[0-9_]+)(?:[eE][+-]?[0-9_]+)?"
    r"|0[xX](?:[0-9a-fA-F_]+\.?[0-9a-fA-F_]*|\.[0-9a-fA-F_]+)[pP][+-]?[0-9_]+)"
)
_GO_FLOAT_SPECIAL = re.compile(r"[+-]?inf(?:inity)?|nan", re.IGNORECASE)


def _underscores_ok(text: str) -> bool:
    """Go's rule: ``_`` only between digits, or between a base prefix and a digit."""
    body = text[1:] if text[:1] in ("+", "-") else text
    start, last = 0, "^"  # last seen: ^ start, 0 digit or prefix, _ underscore, ! other
    hexadecimal = False
    if len(body) >= 2 and body[0] == "0" and body[1] in "bBoOxX":
        start, last, hexadecimal = 2, "0", body[1] in "xX"
    for char in body[start:]:
        if "0" <= char <= "9" or (hexadecimal and char.lower() in "abcdef"):
            last = "0"
        elif char == "_":
            if last != "0":
                return False
            last = "_"
        elif last == "_":
            return False
        else:
            last = "!"
    return last != "_"


def parse_go_float(text: str, bits: int = 64) -> float:
    """A float as Go's ``strconv.ParseFloat(text, bits)`` reads one (decimal or hex notation).

    A finite number beyond the range of ``bits`` (32: float32) is Go's "value out of range".
    """
    invalid = ValueError(f"strconv.ParseFloat: parsing {go_quote(text)}: invalid syntax")
    if _GO_FLOAT_SPECIAL.fullmatch(text):
        return float(text)
    if not _GO_FLOAT.fullmatch(text) or ("_" in text and not _underscores_ok(text)):
        raise invalid
    digits = text.replace("_", "")
    try:
        value = float.fromhex(digits) if "x" in digits.lower() else float(digits)
    except OverflowError:  # float.fromhex: a hex number too large for a double
        value = math.inf
    if bits == 32 and not math.isinf(value):
        try:
            struct.pack("<f", value)  # rounds to nearest as Go does, then checks the range
        except OverflowError:
            value = math.inf
    if math.isinf(value):
        raise ValueError(f"strconv.ParseFloat: parsing {go_quote(text)}: value out of range")
    return value


def parse_goflag_duration(text: str) -> int:
    """A duration of a Go standard-library ``flag`` (klog's ``--log-flush-frequency``).

    Go's ``flag`` package hides the parse error behind its own words, so a bad
    value reads ``parse error`` there, not ``time: invalid duration``.
    """
    try:
        return durations.parse_duration(text)
    except ValueError:
        raise ValueError("parse error") from None


_CSV_BARE_QUOTE = 'bare " in non-quoted-field'
_CSV_QUOTE = 'extraneous or missing " in quoted-field'


def _csv_error(start: int, line: int, column: int, what: str) -> ValueError:
    where = f"parse error on line {line}, column {column}: {what}"
    return ValueError(where if start == line else f"record on line {start}; {where}")


def parse_go_csv_record(text: str) -> tuple[str, ...]:
    """A string-slice value as pflag reads it: the first record of Go's ``encoding/csv``.

    Quoted fields may hold commas, doubled quotes and line breaks; empty lines
    before the record are skipped and lines after it ignored. A stray quote is
    Go's ``csv.ParseError``, its column a 1-based byte offset.
    """
    if not text:
        return ()
    pieces = text.encode("utf-8", "surrogateescape").split(b"\n")
    lines = iter([piece + b"\n" for piece in pieces[:-1]] + [pieces[-1]] * bool(pieces[-1]))
    number = 0

    def read_line() -> bytes | None:  # None at the end; Go counts that read as a line too
        nonlocal number
        number += 1
        line = next(lines, None)
        if line is None or not line.endswith(b"\r\n"):
            # A last line without a line break drops one trailing CR.
            return line if line is None or line.endswith(b"\n") else line.removesuffix(b"\r")
        return line[:-2] + b"\n"

    line = read_line()
    while line in (b"", b"\n"):
        line = read_line()
    if line is None:
        raise ValueError("EOF")
    start = at_line = number
    fields: list[bytes] = []
    column = 1
    while True:
        if not line.startswith(b'"'):
            comma = line.find(b",")
            field = line[:comma] if comma >= 0 else line.removesuffix(b"\n")
            if (quote := field.find(b'"')) >= 0:
                raise _csv_error(start, number, column + quote, _CSV_BARE_QUOTE)
            fields.append(field)
            if comma < 0:
                break
            line, column = line[comma + 1 :], column + comma + 1
            continue
        line, column, field = line[1:], column + 1, b""
        while (quote := line.find(b'"')) >= 0 or line:
            if quote < 0:  # the field goes on in the next line
                field, column = field + line, column + len(line)
                line = read_line() or b""
                if line:
                    at_line, column = at_line + 1, 1
                continue
            field, line, column = field + line[:quote], line[quote + 1 :], column + quote + 1
            if line.startswith(b'"'):
                field, line, column = field + b'"', line[1:], column + 1
            elif line.startswith(b",") or line in (b"", b"\n"):
                break
            else:
                raise _csv_error(start, number, column - 1, _CSV_QUOTE)
        else:
            raise _csv_error(start, at_line, column, _CSV_QUOTE)
        fields.append(field)
        if not line.startswith(b","):
            break
        line, column = line[1:], column + 1
    return tuple(field.decode("utf-8", "surrogateescape") for field in fields)


_VMODULE_SYNTAX = "syntax error: expect comma-separated list of filename=N"


def parse_vmodule(text: str) -> str:
    """klog's ``--vmodule``: comma-separated ``pattern=N`` (empty items are skipped)."""
    for item in text.split(","):
        if not item:
            continue
        pattern, sep, level = item.partition("=")
        if not sep or not pattern or not level or "=" in level:
            raise ValueError(_VMODULE_SYNTAX)
        try:
            number = parse_klog_level(level)
        except ValueError:
            raise ValueError(_VMODULE_SYNTAX) from None
        if number < 0:
            raise ValueError("negative value for vmodule level")
    return text


def parse_klog_level(text: str) -> int:
    """klog's ``-v``: a base-10 int32."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return value


def parse_feature_gates(text: str, known: Iterable[str]) -> dict[str, bool]:
    """One ``--feature-gates`` value, ``A=true,B=false``, as component-base reads it.

    Unknown names (other than ``AllAlpha``/``AllBeta``) and values that are
    not Go booleans are errors that name the gate.
    """
    allowed = {*known, "AllAlpha", "AllBeta"}
    gates: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        value = raw.strip()
        try:
            gates[name] = parse_go_bool(value)
        except ValueError as err:
            raise ValueError(f"invalid value of {name}={value}, err: {err}") from None
    # Names are checked once every value has parsed, as component-base checks them.
    for name in gates:
        if name not in allowed:
            raise ValueError(
                f"unrecognized feature gate: {name} (known: {', '.join(sorted(allowed))})"
            )
    return gates


def _show_string(value: object) -> str:
    return f'"{value}"'


def _show_plain(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # pflag prints float32 50 as "50"
    return str(value)


def _show_list(value: object) -> str:
    assert isinstance(value, tuple)
    return "[" + ",".join(str(v) for v in value) + "]"


def _show_duration(value: object) -> str:
    assert isinstance(value, int)
    return durations.format_duration(value)


def _show_gates(value: object) -> str:
    assert isinstance(value, dict)
    return ",".join(f"{k}={_show_plain(v)}" for k, v in sorted(value.items())) or "every gate off"


def _append_one(old: object, new: object) -> object:
    assert isinstance(old, tuple)
    return (*old, new)


def _append_all(old: object, new: object) -> object:
    assert isinstance(old, tuple) and isinstance(new, tuple)
    return old + new


def _merge_maps(old: object, new: object) -> object:
    assert isinstance(old, dict) and isinstance(new, dict)
    return {**old, **new}


def _same(value: object) -> object:
    return value


def _seconds(value: object) -> object:
    # Settings hold durations as float seconds.
    assert isinstance(value, int)
    return value / durations.SECOND


def _parse_int32(text: str) -> int:
    return parse_go_int(text, 32)


def _parse_float32(text: str) -> float:
    return parse_go_float(text, 32)


@dataclass(frozen=True)
class FlagType:
    """How one kind of flag value is read, combined when repeated, and shown in help.

    ``accumulate`` is None when a repeated flag keeps its last value;
    ``setting`` turns the value into what a settings field holds.
    """

    name: str
    parse: Callable[[str], object]
    takes_value: bool = True
    accumulate: Callable[[object, object], object] | None = None
    show: Callable[[object], str] = _show_plain
    setting: Callable[[object], object] = _same


STRING = FlagType("string", str, show=_show_string)
BOOL = FlagType("bool", parse_go_bool, takes_value=False)
INT = FlagType("int", parse_go_int)
INT32 = FlagType("int32", _parse_int32)
FLOAT32 = FlagType("float32", _parse_float32)
DURATION = FlagType("duration", durations.parse_duration, show=_show_duration, setting=_seconds)
#: A duration flag of Go's standard ``flag`` package (klog's), with its terser error.
GOFLAG_DURATION = dataclasses.replace(DURATION, parse=parse_goflag_duration)
STRING_ARRAY = FlagType("stringArray", str, accumulate=_append_one, show=_show_list)
STRING_SLICE = FlagType("strings", parse_go_csv_record, accumulate=_append_all, show=_show_list)
KLOG_LEVEL = FlagType("Level", parse_klog_level)
MODULE_SPEC = FlagType("moduleSpec", parse_vmodule, show=_show_string)


def feature_gates_type(
    known: frozenset[str], alpha: frozenset[str], beta: frozenset[str]
) -> FlagType:
    """The ``--feature-gates`` map type for these gates (repeats merge).

    Its setting is the set of gates the merged map switches on: gates named
    explicitly win; AllAlpha/AllBeta then set the gates of their maturity that
    were not named (component-base does the same, except that it lets map
    order decide within one flag value).
    """

    def parse(text: str) -> object:
        return parse_feature_gates(text, known)

    def setting(value: object) -> object:
        assert isinstance(value, dict)
        enabled = {gate for gate, on in value.items() if on and gate in known}
        for special, members in (("AllAlpha", alpha), ("AllBeta", beta)):
            if value.get(special):
                enabled |= {gate for gate in members if gate not in value}
        return frozenset(enabled)

    return FlagType(
        "mapStringBool", parse, accumulate=_merge_maps, show=_show_gates, setting=setting
    )


# -- flags and flag sets ------------------------------------------------------------------


def normalize_flag_name(name: str) -> str:
    """pflag's WordSepNormalizeFunc, which OCM installs: ``_`` in a flag name reads as ``-``."""
    return name.replace("_", "-")


@dataclass(frozen=True)
class Flag:
    """One command-line flag.

    ``dest`` is the key of its value (several flags may share one: aliases of
    different spelling, or ``--hub-kubeconfig`` feeding the same setting as
    ``--workload-source-config``). ``ignored`` is the reason a flag accepted
    for OCM compatibility has no effect; giving it produces a warning.
    """

    name: str
    type: FlagType
    default: object
    help: str
    dest: str = ""
    aliases: tuple[str, ...] = ()
    shorthand: str = ""
    group: str = ""
    ignored: str = ""

    @property
    def key(self) -> str:
        """Where the parsed value is stored."""
        return self.dest or self.name


@dataclass(frozen=True)
class FlagNotice:
    """A flag that was accepted but has no effect, and why (logged as a warning)."""

    flag: str
    message: str


@dataclass
class ParsedFlags:
    """Flag values by key (defaults filled in) and which keys the command line set."""

    values: dict[str, object]
    given: dict[str, str] = field(default_factory=dict)  # key -> flag as spelled (last one)
    positionals: list[str] = field(default_factory=list)
    help_requested: bool = False
    types: dict[str, FlagType] = field(default_factory=dict)  # key -> its flag's type

    def was_given(self, key: str) -> bool:
        """Whether the command line set this key (not just its default)."""
        return key in self.given

    def string(self, key: str) -> str:
        """A string value."""
        value = self.values[key]
        if not isinstance(value, str):
            raise TypeError(f"flag {key} is not a string")
        return value

    def boolean(self, key: str) -> bool:
        """A bool value."""
        value = self.values[key]
        if not isinstance(value, bool):
            raise TypeError(f"flag {key} is not a bool")
        return value

    def integer(self, key: str) -> int:
        """An int value (durations are int nanoseconds)."""
        value = self.values[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"flag {key} is not an int")
        return value

    def seconds(self, key: str) -> float:
        """A duration value as float seconds."""
        return self.integer(key) / durations.SECOND

    def setting(self, key: str) -> object:
        """The value of ``key`` as a settings field holds it (its type's ``setting``)."""
        return self.types[key].setting(self.values[key])


class FlagSet:
    """A set of flags parsed with pflag's rules, plus ``-h``/``--help``.

    Help lists the flags by group, the groups in the order they first appear.
    """

    def __init__(self, usage: str, description: str, flags: Sequence[Flag]) -> None:
        self.usage = usage
        self.description = description
        self.flags = tuple(flags)
        self.groups = tuple(dict.fromkeys(flag.group for flag in self.flags))
        self._long: dict[str, Flag] = {}
        self._short: dict[str, Flag] = {}
        for flag in self.flags:
            for name in (flag.name, *flag.aliases):
                if name in self._long or name == "help":
                    raise ValueError(f"flag --{name} defined twice")
                self._long[name] = flag
            if flag.shorthand:
                if flag.shorthand in self._short or flag.shorthand == "h":
                    raise ValueError(f"flag -{flag.shorthand} defined twice")
                self._short[flag.shorthand] = flag

    def takes_separate_value(self, token: str) -> bool:
        """Whether this flag token (``--name``, ``-x``) consumes the next argument as its value."""
        if token.startswith("--"):
            flag = self._long.get(normalize_flag_name(token[2:].partition("=")[0]))
            return flag is not None and flag.type.takes_value and "=" not in token
        flag = self._short.get(token[1:2])
        # "-v" alone; "-v2" and "-v=2" carry the value.
        return flag is not None and flag.type.takes_value and len(token) == 2

    def defaults(self) -> ParsedFlags:
        """Every key with its default value."""
        parsed = ParsedFlags({})
        for flag in self.flags:
            parsed.values.setdefault(flag.key, flag.default)
            parsed.types.setdefault(flag.key, flag.type)
        return parsed

    def parse(self, args: Sequence[str]) -> ParsedFlags:
        """Parse ``args``; UsageError on the first problem.

        As with cobra, the flags are parsed before help is considered, so
        ``--bogus --help`` is an unknown flag, not the help.
        """
        parsed = self.defaults()
        self._parse_into(parsed, list(args))
        return parsed

    def _parse_into(self, parsed: ParsedFlags, args: list[str]) -> None:
        index = 0
        while index < len(args):
            token = args[index]
            index += 1
            if token == "--":
                parsed.positionals.extend(args[index:])
                return
            if token.startswith("--"):
                raw_name, has_value, value = token[2:].partition("=")
                if not raw_name or raw_name.startswith("-"):
                    raise UsageError(f"bad flag syntax: {token}")
                name = normalize_flag_name(raw_name)
                if name == "help":
                    parsed.help_requested = _help_value(value) if has_value else True
                    continue
                flag = self._long.get(name)
                if flag is None:
                    raise UsageError(f"unknown flag: --{raw_name}")
                spelled = f"--{name}"
                if not has_value:
                    if not flag.type.takes_value:
                        value = "true"
                    elif index < len(args):
                        value, index = args[index], index + 1
                    else:
                        raise UsageError(f"flag needs an argument: {spelled}")
                self._set(parsed, flag, spelled, value)
            elif token.startswith("-") and len(token) > 1:
                index = self._parse_shorthands(parsed, token, args, index)
            else:
                parsed.positionals.append(token)

    def _parse_shorthands(
        self, parsed: ParsedFlags, token: str, args: list[str], index: int
    ) -> int:
        rest = token[1:]
        while rest:
            # pflag names what is left of the token (``-hx`` fails "in -x").
            remaining = f"-{rest}"
            char, rest = rest[0], rest[1:]
            if char == "h":
                if rest.startswith("="):
                    parsed.help_requested, rest = _help_value(rest[1:]), ""
                else:
                    parsed.help_requested = True
                continue
            flag = self._short.get(char)
            if flag is None:
                raise UsageError(f"unknown shorthand flag: '{char}' in {remaining}")
            spelled = f"-{char}"
            if rest.startswith("="):
                value, rest = rest[1:], ""
            elif not flag.type.takes_value:
                value = "true"
            elif rest:
                value, rest = rest, ""
            elif index < len(args):
                value, index = args[index], index + 1
            else:
                raise UsageError(f"flag needs an argument: '{char}' in {remaining}")
            self._set(parsed, flag, spelled, value)
        return index

    @staticmethod
    def _set(parsed: ParsedFlags, flag: Flag, spelled: str, text: str) -> None:
        try:
            value = flag.type.parse(text)
        except ValueError as err:
            raise UsageError(
                f'invalid argument {go_quote(text)} for "{_error_name(flag, spelled)}" flag: {err}'
            ) from None
        if flag.type.accumulate is not None:
            # The first occurrence replaces the default, later ones add to it (pflag).
            old = parsed.values[flag.key] if parsed.was_given(flag.key) else flag.default
            value = flag.type.accumulate(old, value)
        parsed.values[flag.key] = value
        parsed.given[flag.key] = spelled

    def help(self, width: int = 100) -> str:
        """The ``--help`` text: every flag with its type, meaning and default."""
        lines = [f"Usage:\n  {self.usage}", "", self.description.strip(), ""]
        for group in self.groups:
            members = [f for f in self.flags if f.group == group]
            lines.append(f"{group}:")
            for flag in members:
                names = f"--{flag.name}"
                if flag.shorthand:
                    names = f"-{flag.shorthand}, {names}"
                head = f"  {names} {flag.type.name}" if flag.type.takes_value else f"  {names}"
                if flag.aliases:
                    head += "  (also " + ", ".join(f"--{a}" for a in flag.aliases) + ")"
                lines.append(head)
                # NUL holds "(default X)" together while wrapping; it becomes a space again.
                default = f"(default {flag.type.show(flag.default)})".replace(" ", "\0")
                wrapped = textwrap.wrap(
                    f"{flag.help} {default}",
                    width,
                    initial_indent=" " * 6,
                    subsequent_indent=" " * 6,
                    # Paths and flag names must stay whole to be copied from help.
                    break_on_hyphens=False,
                    break_long_words=False,
                )
                lines.extend(line.replace("\0", " ") for line in wrapped)
            lines.append("")
        lines.append("  -h, --help\n      Show this help and exit.")
        return "\n".join(lines) + "\n"


def _error_name(flag: Flag, spelled: str) -> str:
    # pflag names a flag with a shorthand by both ("-v, --v"), otherwise by the
    # name as given (an alias is a flag of its own there).
    if flag.shorthand:
        return f"-{flag.shorthand}, --{flag.name}"
    return spelled


def _help_value(text: str) -> bool:
    try:
        return parse_go_bool(text)
    except ValueError as err:
        raise UsageError(
            f'invalid argument {go_quote(text)} for "-h, --help" flag: {err}'
        ) from None


@dataclass(frozen=True)
class ShowText:
    """Print this text (help, version) and exit successfully."""

    text: str
