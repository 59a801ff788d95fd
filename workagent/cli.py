"""The ``workagent`` command line: OCM's work-agent flags, parsed as Go's pflag does.

The klusterlet operator (and anyone with a Go agent's deployment) starts the
agent with an argument list written for OCM's ``/work agent``; ours must take
that list unchanged. So flags follow pflag rather than argparse conventions:

- ``--flag=value`` and ``--flag value``; booleans are ``--flag`` or
  ``--flag=false`` (a boolean never takes the next argument);
- ``_`` in a flag name is read as ``-`` (``--spoke_cluster_name``);
- no abbreviations of long names; ``-v 2``, ``-v=2``, ``-v2`` and ``--v=2``;
- repeatable lists (``--terminate-on-files``) and maps (``--feature-gates``)
  accumulate; any other flag given twice keeps the last value;
- Go syntax for values: durations (``1h0m0s``), ``strconv.ParseBool`` and
  ``ParseInt`` (``0x10``, ``010`` is octal, as in Go), feature-gate maps.

Flags of OCM's agent that do not apply here are accepted and reported as
ignored; anything unknown or malformed is a :class:`UsageError`, which the
entry point prints as one line (exit code 2).

The flag machinery (:class:`Flag`, :class:`FlagSet`) is generic so that the
hub controller's command line can reuse it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from ocmkit import durations
from workagent.settings import (
    ALPHA_AGENT_GATES,
    BETA_AGENT_GATES,
    DEFAULT_COMPONENT_NAMESPACE,
    DEFAULT_HUB_KUBECONFIG,
    DEFAULT_LISTEN,
    KNOWN_AGENT_GATES,
    LEASE_NAME,
    LOG_LEVELS,
    AgentSettings,
    default_leader_election,
)

PROG = "workagent"
DISTRIBUTION = "ocm-work"
SERVICE_ACCOUNT_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
# klog verbosity at and above which our log level becomes debug (klog's V(4) is debug detail).
DEBUG_VERBOSITY = 4
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class UsageError(Exception):
    """A command line that cannot run; shown as one ``workagent: <message>`` line."""


# -- value types ------------------------------------------------------------------------


def parse_go_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``: 1/t/T/TRUE/true/True and their false forms."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


_GO_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)")


def parse_go_int(text: str, bits: int = 64) -> int:
    """Go's ``strconv.ParseInt(text, 0, bits)``: base prefixes, a leading ``0`` is octal."""
    if not _GO_INT.fullmatch(text) or "__" in text or text.endswith("_"):
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXoObB":
        digits = "0o" + digits[1:]  # Go reads "010" as octal 8; Python refuses it
    try:
        value = sign * int(digits, 0)
    except ValueError:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def parse_go_float(text: str) -> float:
    """A float as Go's ``strconv.ParseFloat`` reads one (decimal or hex notation)."""
    body = text.lstrip("+-")
    try:
        if "_" in text or text != text.strip() or not text:
            raise ValueError(text)  # Python is laxer than Go about both
        if body[:2] in ("0x", "0X"):
            value = float.fromhex(body) * (-1.0 if text.startswith("-") else 1.0)
        else:
            value = float(text)
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
    return value


def parse_klog_level(text: str) -> int:
    """klog's ``-v``: a base-10 int32."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
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
            enabled = parse_go_bool(value)
        except ValueError as err:
            raise ValueError(f"invalid value of {name}={value}, err: {err}") from None
        if name not in allowed:
            raise ValueError(
                f"unrecognized feature gate: {name} (known: {', '.join(sorted(allowed))})"
            )
        gates[name] = enabled
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


def _parse_duration(text: str) -> int:
    return durations.parse_duration(text)


def _parse_int32(text: str) -> int:
    return parse_go_int(text, 32)


def _parse_csv(text: str) -> tuple[str, ...]:
    # pflag's string slices split on commas; an empty value is an empty list.
    return tuple(text.split(",")) if text else ()


@dataclass(frozen=True)
class FlagType:
    """How one kind of flag value is read, combined when repeated, and shown in help.

    ``accumulate`` is None when a repeated flag keeps its last value.
    """

    name: str
    parse: Callable[[str], object]
    takes_value: bool = True
    accumulate: Callable[[object, object], object] | None = None
    show: Callable[[object], str] = _show_plain


STRING = FlagType("string", str, show=_show_string)
BOOL = FlagType("bool", parse_go_bool, takes_value=False)
INT = FlagType("int", parse_go_int)
INT32 = FlagType("int32", _parse_int32)
FLOAT32 = FlagType("float32", parse_go_float)
DURATION = FlagType("duration", _parse_duration, show=_show_duration)
STRING_ARRAY = FlagType("stringArray", str, accumulate=_append_one, show=_show_list)
STRING_SLICE = FlagType("strings", _parse_csv, accumulate=_append_all, show=_show_list)
KLOG_LEVEL = FlagType("Level", parse_klog_level)


def feature_gates_type(known: Iterable[str]) -> FlagType:
    """The ``--feature-gates`` map type for this set of gates (repeats merge)."""
    names = frozenset(known)

    def parse(text: str) -> object:
        return parse_feature_gates(text, names)

    return FlagType("mapStringBool", parse, accumulate=_merge_maps, show=_show_gates)


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

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every way to write this flag, ``--name`` first."""
        short = (f"-{self.shorthand}",) if self.shorthand else ()
        return (f"--{self.name}", *(f"--{a}" for a in self.aliases), *short)


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

    def number(self, key: str) -> float:
        """A float value."""
        value = self.values[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"flag {key} is not a number")
        return float(value)

    def seconds(self, key: str) -> float:
        """A duration value as float seconds."""
        return self.integer(key) / durations.SECOND

    def strings(self, key: str) -> tuple[str, ...]:
        """A list value."""
        value = self.values[key]
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"flag {key} is not a list of strings")
        return value

    def gates(self, key: str) -> dict[str, bool]:
        """A feature-gate map value."""
        value = self.values[key]
        if not isinstance(value, dict):
            raise TypeError(f"flag {key} is not a map")
        return {str(k): bool(v) for k, v in value.items()}


class FlagSet:
    """A set of flags parsed with pflag's rules, plus ``-h``/``--help``."""

    def __init__(
        self, usage: str, description: str, flags: Sequence[Flag], groups: Sequence[str]
    ) -> None:
        self.usage = usage
        self.description = description
        self.flags = tuple(flags)
        self.groups = tuple(groups)
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
            if flag.group not in self.groups:
                raise ValueError(f"flag --{flag.name} has unknown group {flag.group!r}")

    def lookup(self, token: str) -> Flag | None:
        """The flag a ``--name``/``-x`` token (value included or not) refers to, if any."""
        if token.startswith("--"):
            name = normalize_flag_name(token[2:].partition("=")[0])
            return self._long.get(name)
        if token.startswith("-") and len(token) > 1:
            return self._short.get(token[1])
        return None

    def takes_separate_value(self, token: str) -> bool:
        """Whether this flag token consumes the next argument as its value."""
        flag = self.lookup(token)
        if flag is None or not flag.type.takes_value:
            return False
        if token.startswith("--"):
            return "=" not in token
        return len(token) == 2  # "-v" alone; "-v2" and "-v=2" carry the value

    def defaults(self) -> dict[str, object]:
        """Every key with its default value."""
        values: dict[str, object] = {}
        for flag in self.flags:
            values.setdefault(flag.key, flag.default)
        return values

    def parse(self, args: Sequence[str]) -> ParsedFlags:
        """Parse ``args``; UsageError on the first problem, unless help was asked for."""
        parsed = ParsedFlags(self.defaults())
        try:
            self._parse_into(parsed, list(args))
        except UsageError:
            # `--help` shows the help even on a command line that would not parse.
            if _asks_for_help(args):
                return ParsedFlags(self.defaults(), help_requested=True)
            raise
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
            char, rest = rest[0], rest[1:]
            if char == "h":
                parsed.help_requested = True
                continue
            flag = self._short.get(char)
            if flag is None:
                raise UsageError(f"unknown shorthand flag: '{char}' in {token}")
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
                raise UsageError(f"flag needs an argument: '{char}' in {token}")
            self._set(parsed, flag, spelled, value)
        return index

    @staticmethod
    def _set(parsed: ParsedFlags, flag: Flag, spelled: str, text: str) -> None:
        try:
            value = flag.type.parse(text)
        except ValueError as err:
            raise UsageError(f'invalid argument "{text}" for "{spelled}" flag: {err}') from None
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
            if not members:
                continue
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


def _help_value(text: str) -> bool:
    try:
        return parse_go_bool(text)
    except ValueError as err:
        raise UsageError(f'invalid argument "{text}" for "--help" flag: {err}') from None


def _asks_for_help(args: Sequence[str]) -> bool:
    for token in args:
        if token == "--":
            return False
        if token in ("-h", "--help", "--help=true"):
            return True
    return False


# -- the agent's flags --------------------------------------------------------------------

WORK = "Work agent flags"
CLIENTS = "Cluster connection flags"
ELECTION = "Leader election flags"
SERVING = "Serving and lifecycle flags"
LOGGING = "Logging flags"
IGNORED = "Accepted for compatibility with OCM's agent (no effect)"
AGENT_GROUPS = (WORK, CLIENTS, ELECTION, SERVING, LOGGING, IGNORED)


def leader_election_flags(lease: str, component: str, default_namespace: str) -> tuple[Flag, ...]:
    """The library-go leader-election flags, shared by the agent and the hub manager."""
    second = durations.SECOND
    return (
        Flag(
            "disable-leader-election",
            BOOL,
            False,
            f"Run without the {lease} Lease (one replica only).",
            group=ELECTION,
        ),
        Flag(
            "leader-election-lease-duration",
            DURATION,
            137 * second,
            "How long a standby waits after the last renewal before taking the Lease over.",
            group=ELECTION,
        ),
        Flag(
            "leader-election-renew-deadline",
            DURATION,
            107 * second,
            "How long the leader keeps retrying a renewal before it stops leading.",
            group=ELECTION,
        ),
        Flag(
            "leader-election-retry-period",
            DURATION,
            26 * second,
            "Time between attempts to acquire or renew the Lease.",
            group=ELECTION,
        ),
        Flag(
            "namespace",
            STRING,
            "",
            f"Namespace of the {component} and its Lease (empty: the pod's namespace, else "
            f"{default_namespace}).",
            group=ELECTION,
        ),
    )


def serving_tls_flags(component: str, group: str) -> tuple[Flag, ...]:
    """The TLS flags of the metrics and probe endpoint, shared by the agent and the hub manager.

    ``--tls-min-version`` and ``--tls-cipher-suites`` are library-go's; the
    others are ours (OCM reads a certificate from ``--config``).
    """
    return (
        Flag(
            "insecure-serving",
            BOOL,
            False,
            f"Serve the metrics and probe endpoints over plain HTTP (not in OCM's {component}; "
            "for local runs and tests).",
            group=group,
        ),
        Flag(
            "tls-cert-file",
            STRING,
            "",
            "PEM certificate (with any intermediates) of the metrics and probe endpoint "
            f"(not in OCM's {component}; empty: a self-signed certificate made at start-up).",
            group=group,
        ),
        Flag(
            "tls-private-key-file",
            STRING,
            "",
            f"PEM private key matching --tls-cert-file (not in OCM's {component}).",
            group=group,
        ),
        Flag(
            "tls-min-version",
            STRING,
            "",
            "Minimum TLS version of the metrics and probe endpoint: VersionTLS12 or "
            "VersionTLS13 (empty: VersionTLS12).",
            group=group,
        ),
        Flag(
            "tls-cipher-suites",
            STRING,
            "",
            "Comma-separated TLS 1.2 cipher suites of the metrics and probe endpoint, Go names "
            "such as TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 (empty: OpenSSL's defaults).",
            group=group,
        ),
    )


def agent_flags() -> tuple[Flag, ...]:
    """The flags of ``workagent agent``: OCM's work-agent flags, same names and types."""
    second = durations.SECOND
    return (
        Flag(
            "spoke-cluster-name",
            STRING,
            "",
            "Name of the managed cluster: the hub namespace whose ManifestWorks this agent "
            "applies. Required.",
            dest="cluster_name",
            aliases=("cluster-name",),
            group=WORK,
        ),
        Flag(
            "agent-id",
            STRING,
            "",
            "ID of this agent, written to spec.agentID of its AppliedManifestWorks "
            "(empty: the hub hash).",
            group=WORK,
        ),
        Flag(
            "workload-source-config",
            STRING,
            DEFAULT_HUB_KUBECONFIG,
            "With --workload-source-driver=kube, the kubeconfig of the hub cluster (its server "
            "URL defines the hub hash); with grpc or mqtt, the driver's config file (url or "
            "brokerHost defines the hub hash).",
            dest="hub_kubeconfig",
            aliases=("hub-kubeconfig",),
            group=WORK,
        ),
        Flag(
            "workload-source-driver",
            STRING,
            "kube",
            "Where ManifestWorks come from: kube (the hub API server), grpc (OCM's hub gRPC "
            "server) or mqtt (a broker), the last two as CloudEvents.",
            group=WORK,
        ),
        Flag(
            "status-sync-interval",
            DURATION,
            30 * second,
            "How often the status and feedback of applied resources are polled (jittered "
            "up to x1.9).",
            group=WORK,
        ),
        Flag(
            "appliedmanifestwork-eviction-grace-period",
            DURATION,
            3600 * second,
            "How long an AppliedManifestWork whose ManifestWork is gone is kept before its "
            "resources are deleted; 876000h or more disables eviction.",
            group=WORK,
        ),
        Flag(
            "max-json-raw-length",
            INT32,
            1024,
            "Maximum length of a JsonRaw status feedback value.",
            group=WORK,
        ),
        Flag(
            "max-feedback-watch",
            INT32,
            50,
            "Maximum number of resources watched for Watch-mode status feedback; beyond it "
            "they are polled.",
            group=WORK,
        ),
        Flag(
            "workload-agent-workers",
            INT,
            10,
            "Concurrent workers of the apply, status and cleanup controllers (>= 1).",
            dest="workers",
            group=WORK,
        ),
        Flag(
            "feature-gates",
            feature_gates_type(KNOWN_AGENT_GATES),
            {},
            "Comma-separated Gate=bool pairs, repeatable. Gates (alpha, default false): "
            + ", ".join(sorted(KNOWN_AGENT_GATES))
            + "; AllAlpha/AllBeta set every gate of that maturity not named.",
            group=WORK,
        ),
        Flag(
            "kubeconfig",
            STRING,
            "",
            "Kubeconfig of the managed cluster (empty: in-cluster configuration).",
            group=CLIENTS,
        ),
        Flag(
            "spoke-kubeconfig",
            STRING,
            "",
            "Kubeconfig of the managed cluster; takes precedence over --kubeconfig.",
            group=CLIENTS,
        ),
        Flag(
            "kube-api-qps",
            FLOAT32,
            50.0,
            "Requests per second to the managed cluster's API server, per client (<= 0: "
            "unlimited). The agent has three: applying manifests, AppliedManifestWorks, "
            "status reads; each has this QPS and --kube-api-burst.",
            group=CLIENTS,
        ),
        Flag(
            "kube-api-burst",
            INT,
            100,
            "Request burst to the managed cluster's API server, per client.",
            group=CLIENTS,
        ),
        Flag(
            "hub-kube-api-qps",
            FLOAT32,
            50.0,
            "Requests per second to the hub's API server (<= 0: unlimited).",
            group=CLIENTS,
        ),
        Flag(
            "hub-kube-api-burst", INT, 100, "Request burst to the hub's API server.", group=CLIENTS
        ),
        *leader_election_flags(LEASE_NAME, "agent", DEFAULT_COMPONENT_NAMESPACE),
        Flag(
            "listen",
            STRING,
            DEFAULT_LISTEN,
            "host:port of the /metrics, /livez, /readyz and /healthz endpoints (HTTPS unless "
            "--insecure-serving).",
            group=SERVING,
        ),
        *serving_tls_flags("agent", SERVING),
        Flag(
            "health-port",
            INT32,
            0,
            "Port of the metrics and probe endpoints on all interfaces when --listen is not "
            "given (0: 8443).",
            group=SERVING,
        ),
        Flag(
            "metrics-work-labels",
            BOOL,
            False,
            "Add a work label (the ManifestWork's name) to the per-work gauges of /metrics; "
            "one series per work and condition, so for small fleets only.",
            group=SERVING,
        ),
        Flag(
            "terminate-on-files",
            STRING_ARRAY,
            (),
            "Exit when this file changes (e.g. a rotated hub kubeconfig); repeatable.",
            group=SERVING,
        ),
        Flag(
            "v",
            KLOG_LEVEL,
            0,
            f"klog verbosity: {DEBUG_VERBOSITY} or more logs at debug level, less at info.",
            shorthand="v",
            group=LOGGING,
        ),
        Flag(
            "log-level",
            STRING,
            "",
            f"Log level ({', '.join(LOG_LEVELS)}); overrides -v (empty: from -v).",
            group=LOGGING,
        ),
        Flag("log-format", STRING, "json", "Log line format: json or console.", group=LOGGING),
        Flag(
            "vmodule",
            STRING,
            "",
            "klog per-file verbosity (pattern=N,...).",
            group=IGNORED,
            ignored="per-file verbosity is not supported; use -v or --log-level",
        ),
        Flag(
            "log-flush-frequency",
            DURATION,
            5 * second,
            "klog flush interval; every log line is written at once here.",
            group=IGNORED,
        ),
        Flag(
            "cloudevents-client-id",
            STRING,
            "",
            "CloudEvents client ID: the source of the agent's events (grpc and mqtt; required "
            "there, e.g. <cluster>-work-agent).",
            group=WORK,
        ),
        Flag(
            "cloudevents-client-codecs",
            STRING_SLICE,
            (),
            "CloudEvents codecs (accepted for OCM compatibility).",
            group=IGNORED,
            ignored="the agent always uses the manifestbundle codec, as OCM's does",
        ),
        Flag(
            "hub-kubeconfig-dir",
            STRING,
            "/spoke/hub-kubeconfig",
            "Mount directory of the hub kubeconfig secret (used by OCM's registration agent).",
            group=IGNORED,
            ignored="the hub kubeconfig is read from --workload-source-config",
        ),
        Flag(
            "config",
            STRING,
            "",
            "library-go GenericOperatorConfig file.",
            group=IGNORED,
            ignored="configuration comes from flags only",
        ),
    )


AGENT_DESCRIPTION = """
Start the work agent: watch the ManifestWorks of one managed cluster's namespace on the hub,
apply their manifests to the managed cluster, and report status back. The flags are those of
OCM's `work agent`; durations use Go syntax (10s, 1m30s, 1h0m0s, 500ms).
"""


def agent_flag_set() -> FlagSet:
    """The parser of ``workagent agent``."""
    return FlagSet(f"{PROG} agent [flags]", AGENT_DESCRIPTION, agent_flags(), AGENT_GROUPS)


# -- from flags to settings ---------------------------------------------------------------


@dataclass(frozen=True)
class AgentCommand:
    """``workagent agent``: the settings to run with, and notices about ignored flags."""

    settings: AgentSettings
    notices: tuple[FlagNotice, ...] = ()


@dataclass(frozen=True)
class ShowText:
    """Print this text (help, version) and exit successfully."""

    text: str


def component_namespace(flag_value: str, namespace_file: Path) -> str:
    """``--namespace``, else the pod's namespace (service account file), else OCM's default."""
    if flag_value:
        return flag_value
    try:
        detected = namespace_file.read_text().strip()
    except OSError:
        detected = ""
    return detected or DEFAULT_COMPONENT_NAMESPACE


def enabled_gates(explicit: Mapping[str, bool]) -> frozenset[str]:
    """The agent gates switched on by a merged ``--feature-gates`` map.

    Gates named explicitly win; AllAlpha/AllBeta then set the gates of their
    maturity that were not named (component-base does the same, except that
    it lets map order decide within one flag value).
    """
    enabled = {gate for gate, on in explicit.items() if on and gate in KNOWN_AGENT_GATES}
    for special, members in (("AllAlpha", ALPHA_AGENT_GATES), ("AllBeta", BETA_AGENT_GATES)):
        if explicit.get(special):
            enabled |= {gate for gate in members if gate not in explicit}
    return frozenset(enabled)


def log_level_from(flags: ParsedFlags) -> str:
    """``--log-level`` if given, else klog's ``-v`` mapped onto our levels."""
    level = flags.string("log-level").strip().lower()
    if level:
        if level not in LOG_LEVELS:
            raise UsageError(f"--log-level {level!r} is not one of {', '.join(LOG_LEVELS)}")
        return level
    return "debug" if flags.integer("v") >= DEBUG_VERBOSITY else "info"


def listen_address(flags: ParsedFlags) -> str:
    """``--listen``, else ``0.0.0.0:<--health-port>``, else the default ``0.0.0.0:8443``.

    library-go lets ``--listen`` override the bind address that OCM derives
    from ``--health-port``; the same order holds here.
    """
    port = flags.integer("health-port")
    if port != 0 and not 1 <= port <= 65535:
        raise UsageError(f"invalid --health-port value {port}: must be 0 or between 1 and 65535")
    if flags.was_given("listen"):
        return flags.string("listen")  # AgentSettings.validate checks it
    return f"0.0.0.0:{port}" if port else DEFAULT_LISTEN


_VMODULE_ITEM = re.compile(r"[^=,]+=[0-9]+")


def notices_for(flags: ParsedFlags, flag_table: Sequence[Flag]) -> tuple[FlagNotice, ...]:
    """Warnings for the compatibility flags that were given (they change nothing)."""
    notices = []
    for flag in flag_table:
        if flag.ignored and flags.was_given(flag.key):
            spelled = flags.given[flag.key]
            notices.append(FlagNotice(spelled, f"{spelled} is ignored: {flag.ignored}"))
    if flags.given.get("hub_kubeconfig") == "--hub-kubeconfig":
        # OCM's work agent ignores this flag; here it names the hub kubeconfig.
        notices.append(
            FlagNotice(
                "--hub-kubeconfig",
                "--hub-kubeconfig is read as --workload-source-config "
                "(OCM's work agent ignores it)",
            )
        )
    return tuple(notices)


def plain_http_notices(flags: ParsedFlags) -> tuple[FlagNotice, ...]:
    """Warnings for TLS settings that ``--insecure-serving`` leaves without effect."""
    if not flags.boolean("insecure-serving"):
        return ()
    notices = []
    for key in ("tls-min-version", "tls-cipher-suites"):
        if flags.was_given(key):
            spelled = flags.given[key]
            notices.append(
                FlagNotice(
                    spelled, f"{spelled} has no effect: --insecure-serving serves plain HTTP"
                )
            )
    return tuple(notices)


def driver_notices(flags: ParsedFlags) -> tuple[FlagNotice, ...]:
    """A CloudEvents client id given to the kube driver changes nothing: say so."""
    if flags.string("workload-source-driver") != "kube":
        return ()
    if not flags.was_given("cloudevents-client-id"):
        return ()
    spelled = flags.given["cloudevents-client-id"]
    return (
        FlagNotice(spelled, f"{spelled} is ignored: it only applies to the grpc and mqtt drivers"),
    )


def agent_command(
    args: Sequence[str], *, namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE_FILE
) -> AgentCommand | ShowText:
    """Parse ``workagent agent`` arguments into validated settings (or help)."""
    flag_set = agent_flag_set()
    flags = flag_set.parse(args)
    if flags.help_requested:
        return ShowText(flag_set.help())
    if flags.positionals:
        raise UsageError(f'unexpected argument "{flags.positionals[0]}" for "{PROG} agent"')

    driver = flags.string("workload-source-driver")
    vmodule = flags.string("vmodule")
    if vmodule and not all(_VMODULE_ITEM.fullmatch(item) for item in vmodule.split(",")):
        raise UsageError(
            f'invalid argument "{vmodule}" for "--vmodule" flag: '
            "expect comma-separated list of filename=N"
        )

    election = dataclasses.replace(
        default_leader_election(),  # its identity: <hostname>_<uuid>, as library-go's
        namespace=component_namespace(flags.string("namespace"), namespace_file),
        disabled=flags.boolean("disable-leader-election"),
        lease_duration=flags.seconds("leader-election-lease-duration"),
        renew_deadline=flags.seconds("leader-election-renew-deadline"),
        retry_period=flags.seconds("leader-election-retry-period"),
    )
    settings = AgentSettings(
        cluster_name=flags.string("cluster_name"),
        hub_kubeconfig=flags.string("hub_kubeconfig"),
        workload_source_driver=driver,
        cloudevents_client_id=flags.string("cloudevents-client-id") if driver != "kube" else "",
        agent_id=flags.string("agent-id"),
        spoke_kubeconfig=flags.string("spoke-kubeconfig"),
        kubeconfig=flags.string("kubeconfig"),
        status_sync_interval=flags.seconds("status-sync-interval"),
        eviction_grace_period=flags.seconds("appliedmanifestwork-eviction-grace-period"),
        max_json_raw_length=flags.integer("max-json-raw-length"),
        max_feedback_watch=flags.integer("max-feedback-watch"),
        workers=flags.integer("workers"),
        feature_gates=enabled_gates(flags.gates("feature-gates")),
        kube_api_qps=flags.number("kube-api-qps"),
        kube_api_burst=flags.integer("kube-api-burst"),
        hub_kube_api_qps=flags.number("hub-kube-api-qps"),
        hub_kube_api_burst=flags.integer("hub-kube-api-burst"),
        leader_election=election,
        listen=listen_address(flags),
        insecure_serving=flags.boolean("insecure-serving"),
        tls_cert_file=flags.string("tls-cert-file"),
        tls_private_key_file=flags.string("tls-private-key-file"),
        tls_min_version=flags.string("tls-min-version"),
        tls_cipher_suites=flags.string("tls-cipher-suites"),
        metrics_work_labels=flags.boolean("metrics-work-labels"),
        log_format=flags.string("log-format"),
        log_level=log_level_from(flags),
        terminate_on_files=flags.strings("terminate-on-files"),
    )
    try:
        settings.validate()
    except ValueError as err:
        raise UsageError(str(err)) from None
    return AgentCommand(
        settings,
        notices_for(flags, flag_set.flags) + plain_http_notices(flags) + driver_notices(flags),
    )


# -- workagent diff ------------------------------------------------------------------------

DIFF_INPUT = "Input flags"
DIFF_CLUSTERS = "Cluster flags"
DIFF_GROUPS = (DIFF_INPUT, DIFF_CLUSTERS)

DIFF_DESCRIPTION = """
Show what the agent would change on the managed cluster for one ManifestWork, without
changing anything: for each manifest, under its update strategy, a unified diff of the live
object against the server-side dry run (dryRun=All) of the agent's own apply, "would create"
for a missing object, and what CreateOnly and ReadOnly leave alone. Exit code 0: no changes;
1: changes; 2: an error (as kubectl diff).
"""


@dataclass(frozen=True)
class DiffCommand:
    """``workagent diff``: where the ManifestWork comes from and the managed cluster."""

    filename: str  # -f (``-`` for stdin); empty with --work
    work: str  # --work (read from the hub); empty with -f
    hub_kubeconfig: str  # --hub-kubeconfig (also gives the hub hash with -f)
    cluster_name: str  # --spoke-cluster-name: the hub namespace of --work
    kubeconfig: str  # --kubeconfig of the managed cluster (empty: $KUBECONFIG, ~/.kube/config)


def diff_flag_set() -> FlagSet:
    """The parser of ``workagent diff``."""
    flags = (
        Flag(
            "filename",
            STRING,
            "",
            "File with the ManifestWork (YAML or JSON; - reads standard input).",
            shorthand="f",
            group=DIFF_INPUT,
        ),
        Flag(
            "work",
            STRING,
            "",
            "Name of a ManifestWork to read from the hub (with --hub-kubeconfig and "
            "--spoke-cluster-name).",
            group=DIFF_INPUT,
        ),
        Flag(
            "spoke-cluster-name",
            STRING,
            "",
            "The managed cluster's namespace on the hub, where --work is.",
            dest="cluster_name",
            aliases=("cluster-name",),
            group=DIFF_INPUT,
        ),
        Flag(
            "hub-kubeconfig",
            STRING,
            "",
            "Kubeconfig of the hub: where --work is read, and whose server URL names the "
            "agent's AppliedManifestWork (its owner references).",
            aliases=("workload-source-config",),
            group=DIFF_CLUSTERS,
        ),
        Flag(
            "kubeconfig",
            STRING,
            "",
            "Kubeconfig of the managed cluster (empty: $KUBECONFIG or ~/.kube/config).",
            group=DIFF_CLUSTERS,
        ),
    )
    return FlagSet(f"{PROG} diff [flags]", DIFF_DESCRIPTION, flags, DIFF_GROUPS)


def diff_command(args: Sequence[str]) -> DiffCommand | ShowText:
    """Parse ``workagent diff`` arguments."""
    flag_set = diff_flag_set()
    flags = flag_set.parse(args)
    if flags.help_requested:
        return ShowText(flag_set.help())
    if flags.positionals:
        raise UsageError(f'unexpected argument "{flags.positionals[0]}" for "{PROG} diff"')
    command = DiffCommand(
        filename=flags.string("filename"),
        work=flags.string("work"),
        hub_kubeconfig=flags.string("hub-kubeconfig"),
        cluster_name=flags.string("cluster_name"),
        kubeconfig=flags.string("kubeconfig"),
    )
    if bool(command.filename) == bool(command.work):
        raise UsageError("diff needs exactly one of -f FILE and --work NAME")
    if command.work and not (command.hub_kubeconfig and command.cluster_name):
        raise UsageError("--work needs --hub-kubeconfig and --spoke-cluster-name")
    return command


# -- the top-level command ----------------------------------------------------------------

ROOT_HELP = f"""Usage:
  {PROG} agent [flags]    run the work agent on a managed cluster
  {PROG} diff [flags]     show what the agent would change for a ManifestWork
  {PROG} --version        print the version
  {PROG} --help           show this help

Run "{PROG} agent --help" or "{PROG} diff --help" for their flags.
"""


def version() -> str:
    """The installed version of this distribution."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def _is_go_binary_path(token: str) -> bool:
    # The operator's template starts the container with args "/work", "agent", ...:
    # in OCM's image "/work" is the binary itself. Skipping it lets an image that
    # runs `workagent` as its entrypoint take the same args unchanged.
    return not token.startswith("-") and os.path.basename(token) == "work"


def parse_command_line(
    argv: Sequence[str], *, namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE_FILE
) -> AgentCommand | DiffCommand | ShowText:
    """Parse ``workagent``'s arguments (without the program name)."""
    args = list(argv)
    if args and _is_go_binary_path(args[0]):
        args = args[1:]
    agent = agent_flag_set()
    # Flags may come before the command, as with cobra's persistent flags (`--v=2 agent`).
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        token = args[index]
        if token in ("--version", "--version=true"):
            return ShowText(f"{PROG} version {version()}\n")
        if token in ("-h", "--help", "--help=true"):
            return ShowText(ROOT_HELP)
        index += 2 if agent.takes_separate_value(token) else 1
    if index >= len(args) or args[index] == "--":
        raise UsageError(f'no command given; run "{PROG} agent --help"')
    command = args[index]
    if command == "help":
        return ShowText(ROOT_HELP)
    if command == "diff":
        if index:
            raise UsageError(f'the flags of "{PROG} diff" come after the command')
        return diff_command(args[1:])
    if command != "agent":
        raise UsageError(f'unknown command "{command}"; the commands are "agent" and "diff"')
    return agent_command(args[:index] + args[index + 1 :], namespace_file=namespace_file)
