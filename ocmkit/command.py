"""The program shell both OCM programs share: common flag groups, settings from flags, dispatch.

Each command is a :class:`CommandSpec`: its flags, and the settings dataclass
whose fields :func:`settings_from` fills from the flags of the same names.
Imported by ``--help`` and every refused command line, so it stays light
(docs/architecture.md): the runtime is imported only where a program starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TextIO, TypeVar, cast

from ocmkit import durations
from ocmkit.flags import (
    BOOL,
    DURATION,
    FLOAT32,
    GOFLAG_DURATION,
    INT,
    KLOG_LEVEL,
    MODULE_SPEC,
    STRING,
    STRING_ARRAY,
    Flag,
    FlagNotice,
    FlagSet,
    ParsedFlags,
    ShowText,
    UsageError,
    feature_gates_type,
    parse_go_bool,
)

if TYPE_CHECKING:
    from ocmkit.runtime import LeaderElectionSettings

DISTRIBUTION = "ocm-work"
#: library-go's component namespace when neither ``--namespace`` nor the pod says one
#: (it names the build_info series; each program's Lease has a default of its own).
LIBRARY_GO_NAMESPACE = "openshift-config-managed"
SERVICE_ACCOUNT_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
# klog verbosity at and above which our log level becomes debug (klog's V(4) is debug detail).
DEBUG_VERBOSITY = 4
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("json", "console")
DEFAULT_LISTEN = "0.0.0.0:8443"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

# Help sections both programs use.
CLIENTS = "Cluster connection flags"
ELECTION = "Leader election flags"
SERVING = "Serving and lifecycle flags"
LOGGING = "Logging flags"

_Settings = TypeVar("_Settings")


# -- flag groups ---------------------------------------------------------------------------


def grouped(group: str, *flags: Flag) -> tuple[Flag, ...]:
    """``flags``, each under the help section ``group``."""
    return tuple(dataclasses.replace(flag, group=group) for flag in flags)


def leader_election_flags(lease: str, component: str, default_namespace: str) -> tuple[Flag, ...]:
    """The library-go leader-election flags, shared by the agent and the hub manager."""
    second = durations.SECOND
    return grouped(
        ELECTION,
        Flag(
            "disable-leader-election",
            BOOL,
            False,
            f"Run without the {lease} Lease (one replica only).",
        ),
        Flag(
            "leader-election-lease-duration",
            DURATION,
            137 * second,
            "How long a standby waits after the last renewal before taking the Lease over.",
        ),
        Flag(
            "leader-election-renew-deadline",
            DURATION,
            107 * second,
            "How long the leader keeps retrying a renewal before it stops leading.",
        ),
        Flag(
            "leader-election-retry-period",
            DURATION,
            26 * second,
            "Time between attempts to acquire or renew the Lease.",
        ),
        Flag(
            "namespace",
            STRING,
            "",
            f"Namespace of the {component} and its Lease (empty: the pod's namespace, else "
            f"{default_namespace}).",
        ),
    )


def serving_flags(component: str, group: str) -> tuple[Flag, ...]:
    """``--listen`` and the TLS flags of the metrics and probe endpoint (agent, hub manager).

    ``--tls-min-version`` and ``--tls-cipher-suites`` are library-go's; the
    others are ours (OCM reads a certificate from ``--config``).
    """
    return grouped(
        group,
        Flag(
            "listen",
            STRING,
            DEFAULT_LISTEN,
            "host:port of the /metrics, /livez, /readyz and /healthz endpoints (HTTPS unless "
            "--insecure-serving).",
        ),
        Flag(
            "insecure-serving",
            BOOL,
            False,
            f"Serve the metrics and probe endpoints over plain HTTP (not in OCM's {component}; "
            "for local runs and tests).",
        ),
        Flag(
            "tls-cert-file",
            STRING,
            "",
            "PEM certificate (with any intermediates) of the metrics and probe endpoint "
            f"(not in OCM's {component}; empty: a self-signed certificate made at start-up).",
        ),
        Flag(
            "tls-private-key-file",
            STRING,
            "",
            f"PEM private key matching --tls-cert-file (not in OCM's {component}).",
        ),
        Flag(
            "tls-min-version",
            STRING,
            "",
            "Minimum TLS version of the metrics and probe endpoint: VersionTLS12 or "
            "VersionTLS13 (empty: VersionTLS12).",
        ),
        Flag(
            "tls-cipher-suites",
            STRING,
            "",
            "Comma-separated TLS 1.2 cipher suites of the metrics and probe endpoint, Go names "
            "such as TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 (empty: OpenSSL's defaults).",
        ),
    )


def logging_flags(ignored_group: str) -> tuple[Flag, ...]:
    """klog's flags, as every OCM command accepts them, plus our level and format."""
    levels = ", ".join(LOG_LEVELS)
    return (
        *grouped(
            LOGGING,
            Flag(
                "v",
                KLOG_LEVEL,
                0,
                f"klog verbosity: {DEBUG_VERBOSITY} or more logs at debug level, less at info.",
                shorthand="v",
            ),
            Flag("log-level", STRING, "", f"Log level ({levels}); overrides -v (empty: from -v)."),
            Flag("log-format", STRING, "json", "Log line format: json or console."),
        ),
        *grouped(
            ignored_group,
            Flag(
                "vmodule",
                MODULE_SPEC,
                "",
                "klog per-file verbosity (pattern=N,...).",
                ignored="per-file verbosity is not supported; use -v or --log-level",
            ),
            Flag(
                "log-flush-frequency",
                GOFLAG_DURATION,
                5 * durations.SECOND,
                "klog flush interval; every log line is written at once here.",
            ),
        ),
    )


def kubeconfig_flag(cluster: str) -> Flag:
    """``--kubeconfig`` of ``cluster`` ("hub cluster", "managed cluster")."""
    help_text = f"Kubeconfig of the {cluster} (empty: in-cluster configuration)."
    return Flag("kubeconfig", STRING, "", help_text, group=CLIENTS)


def client_rate_flags(prefix: str, server: str, note: str = "") -> tuple[Flag, ...]:
    """``--<prefix>kube-api-qps`` and ``-burst``: client-go's limits for ``server``'s API
    (``note`` is added to the QPS flag's help, e.g. how many clients have them)."""
    return grouped(
        CLIENTS,
        Flag(
            f"{prefix}kube-api-qps",
            FLOAT32,
            50.0,
            f"Requests per second to {server} API server (<= 0: unlimited).{note}",
        ),
        Flag(f"{prefix}kube-api-burst", INT, 100, f"Request burst to {server} API server."),
    )


def feature_gates_flag(
    group: str, known: frozenset[str], alpha: frozenset[str], beta: frozenset[str]
) -> Flag:
    """``--feature-gates`` (component-base's ``Gate=bool`` map) over the ``known`` gates."""
    help_text = (
        "Comma-separated Gate=bool pairs, repeatable. Gates (alpha, default false): "
        + ", ".join(sorted(known))
        + "; AllAlpha/AllBeta set every gate of that maturity not named."
    )
    gates = feature_gates_type(known, alpha, beta)
    return Flag("feature-gates", gates, {}, help_text, group=group)


def _watched_files(paths: object) -> object:
    # library-go panics on these two (with these words) once the flags are parsed and
    # the program starts; here they are the usage error of a setting, at the same point.
    for path in cast("tuple[str, ...]", paths):
        if not path:
            raise ValueError("--terminate-on-files: observed file name must not be empty")
        if os.path.isdir(path):
            raise ValueError(f"--terminate-on-files: {path} is a directory")
    return paths


#: The files of ``--terminate-on-files``: a missing one may appear later, an empty
#: name or a directory never changes as a file does.
WATCHED_FILES = dataclasses.replace(STRING_ARRAY, setting=_watched_files)


def terminate_on_files_flag(example: str) -> Flag:
    """``--terminate-on-files`` (library-go): exit when a file such as ``example`` changes."""
    help_text = f"Exit when this file changes (e.g. a rotated {example}); repeatable."
    return Flag("terminate-on-files", WATCHED_FILES, (), help_text, group=SERVING)


def operator_config_flag(ignored_group: str) -> Flag:
    """library-go's ``--config``, accepted and ignored."""
    return Flag(
        "config",
        STRING,
        "",
        "library-go GenericOperatorConfig file.",
        group=ignored_group,
        ignored="configuration comes from flags only",
    )


# -- from flags to settings ----------------------------------------------------------------


def log_level_from(flags: ParsedFlags) -> str:
    """``--log-level`` if given, else klog's ``-v`` mapped onto our levels."""
    level = flags.string("log-level").strip().lower()
    if level:
        if level not in LOG_LEVELS:
            raise UsageError(f"--log-level {level!r} is not one of {', '.join(LOG_LEVELS)}")
        return level
    return "debug" if flags.integer("v") >= DEBUG_VERBOSITY else "info"


def component_namespace_from(flags: ParsedFlags, namespace_file: Path) -> str:
    """``--namespace``, else the pod's namespace (``namespace_file``), else ""."""
    namespace = flags.string("namespace") if "namespace" in flags.types else ""
    if not namespace:
        with contextlib.suppress(OSError):
            namespace = namespace_file.read_text().strip()
    return namespace


def leader_election_from(
    flags: ParsedFlags,
    defaults: LeaderElectionSettings,
    namespace_file: Path,
) -> LeaderElectionSettings:
    """The program's Lease settings (``defaults``) with the leader-election flags applied.

    ``defaults`` carries the identity (``<hostname>_<uuid>``, as library-go's)
    and the namespace used when neither ``--namespace`` nor the pod's service
    account (``namespace_file``) says one.
    """
    # A zero duration is library-go's default (LeaderElectionDefaulting), not a setting.
    return dataclasses.replace(
        defaults,
        namespace=component_namespace_from(flags, namespace_file) or defaults.namespace,
        disabled=flags.boolean("disable-leader-election"),
        lease_duration=flags.seconds("leader-election-lease-duration") or defaults.lease_duration,
        renew_deadline=flags.seconds("leader-election-renew-deadline") or defaults.renew_deadline,
        retry_period=flags.seconds("leader-election-retry-period") or defaults.retry_period,
    )


def settings_from(
    cls: Callable[..., _Settings],
    flags: ParsedFlags,
    namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE_FILE,
    **computed: object,
) -> _Settings:
    """The settings dataclass ``cls`` from the flags: each field from the flag of its name.

    A field ``a_b`` takes the flag keyed ``a-b`` (or ``a_b``, a flag's
    ``dest``) as its type's ``setting`` holds it; ``log_level`` comes from
    ``--log-level`` and ``-v``, ``leader_election`` from the leader-election
    flags over the field's default; ``computed`` sets the fields no flag
    fills alone. Fields without a flag keep their defaults.
    """
    values: dict[str, object] = {}
    for spec in dataclasses.fields(cast("Any", cls)):
        keys = [key for key in (spec.name, spec.name.replace("_", "-")) if key in flags.types]
        if spec.name == "log_level":
            values[spec.name] = log_level_from(flags)
        elif spec.name == "leader_election":
            lease = cast("Callable[[], LeaderElectionSettings]", spec.default_factory)()
            values[spec.name] = leader_election_from(flags, lease, namespace_file)
        elif spec.name == "component_namespace":
            # Names the build_info series; library-go's fallback differs from the Lease's.
            values[spec.name] = component_namespace_from(flags, namespace_file) or spec.default
        elif keys:
            values[spec.name] = flags.setting(keys[0])
    return cls(**(values | computed))


def parse_flags(flag_set: FlagSet, args: Sequence[str], command: str) -> ParsedFlags | ShowText:
    """``command``'s flags (or its help when asked for); stray arguments are refused."""
    flags = flag_set.parse(args)
    if flags.help_requested:
        return ShowText(flag_set.help())
    if flags.positionals:
        # OCM's commands ignore them; here a stray word is more likely a mistake
        # (`--disable-leader-election false` sets the flag and leaves "false").
        raise UsageError(f'unexpected argument "{flags.positionals[0]}" for "{command}"')
    return flags


def notices_for(flags: ParsedFlags, flag_table: Iterable[Flag]) -> tuple[FlagNotice, ...]:
    """Warnings for given flags that change nothing: the compatibility flags, and the
    TLS settings that ``--insecure-serving`` leaves without effect."""
    why = {flag.key: f"is ignored: {flag.ignored}" for flag in flag_table if flag.ignored}
    if flags.values.get("insecure-serving"):
        for key in ("tls-min-version", "tls-cipher-suites"):
            why[key] = "has no effect: --insecure-serving serves plain HTTP"
    return tuple(
        FlagNotice(flags.given[key], f"{flags.given[key]} {reason}")
        for key, reason in why.items()
        if flags.was_given(key)
    )


class _Validating(Protocol):
    def validate(self) -> None: ...


_Checked = TypeVar("_Checked", bound=_Validating)
_Command = TypeVar("_Command")


@dataclass(frozen=True)
class Parsed(Generic[_Settings]):
    """A program's command as parsed: the settings to run with, and notices about ignored flags."""

    settings: _Settings
    notices: tuple[FlagNotice, ...] = ()


def _no_fields(flags: ParsedFlags) -> dict[str, object]:
    return {}


def _no_notices(flags: ParsedFlags, settings: object) -> tuple[FlagNotice, ...]:
    return ()


@dataclass(frozen=True)
class CommandSpec(Generic[_Checked, _Command]):
    """A command of a program: its flags and help, and the settings they make.

    ``settings`` is the settings dataclass (filled by :func:`settings_from`,
    ``computed`` giving the fields no single flag holds; then ``validate()``d),
    ``result`` what :meth:`parse` returns for it; ``notices`` are the
    command's own warnings, after those of :func:`notices_for`.
    """

    command: str
    description: str
    flags: Callable[[], tuple[Flag, ...]]
    settings: Callable[..., _Checked]
    result: Callable[[_Checked, tuple[FlagNotice, ...]], _Command]
    computed: Callable[[ParsedFlags], dict[str, object]] = _no_fields
    notices: Callable[[ParsedFlags, _Checked], Iterable[FlagNotice]] = _no_notices

    def flag_set(self) -> FlagSet:
        """The command's parser."""
        return FlagSet(f"{self.command} [flags]", self.description, self.flags())

    def parse(
        self, args: Sequence[str], namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE_FILE
    ) -> _Command | ShowText:
        """Parse the command's arguments into validated settings (or its help).

        ``namespace_file`` is where the pod's namespace is read (``--namespace``'s default).
        """
        flag_set = self.flag_set()
        flags = parse_flags(flag_set, args, self.command)
        if isinstance(flags, ShowText):
            return flags
        try:
            settings = settings_from(self.settings, flags, namespace_file, **self.computed(flags))
            settings.validate()
        except ValueError as err:
            raise UsageError(str(err)) from None
        notices = notices_for(flags, flag_set.flags)
        return self.result(settings, (*notices, *self.notices(flags, settings)))


# -- the top-level command -----------------------------------------------------------------


def version() -> str:
    """The installed version of this distribution."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def _is_go_binary_path(token: str) -> bool:
    # The operators' templates start the containers with args "/work", "agent", ...:
    # in OCM's image "/work" is the binary itself. Skipping it lets an image that
    # runs our program as its entrypoint take the same args unchanged.
    return not token.startswith("-") and os.path.basename(token) == "work"


@dataclass(frozen=True)
class Invocation:
    """A command line split at its command: ``args[index]`` is ``command``."""

    command: str
    index: int
    args: list[str]

    @property
    def rest(self) -> list[str]:
        """Every argument but the command (flags may stand before it)."""
        return self.args[: self.index] + self.args[self.index + 1 :]


def find_command(
    argv: Sequence[str],
    *,
    prog: str,
    flag_sets: Sequence[FlagSet],
    root_help: str,
    help_hint: str,
) -> Invocation | ShowText:
    """Find the command in ``argv`` (after OCM's ``/work``), or answer --version/--help.

    Flags may come before the command, as with cobra's persistent flags
    (``--v=2 agent``); ``flag_sets`` tell which of them take the next
    argument as their value.
    """
    args = list(argv)
    if args and _is_go_binary_path(args[0]):
        args = args[1:]
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        token = args[index]
        name, has_value, value = token.partition("=")
        if name == "--version" and (not has_value or _root_bool(name, value)):
            return ShowText(f"{prog} version {version()}\n")
        if token in ("-h", "--help", "--help=true"):
            return ShowText(root_help)
        index += 2 if any(s.takes_separate_value(token) for s in flag_sets) else 1
    if index >= len(args) or args[index] == "--":
        if flag_sets:
            # As cobra, the flags are read first: a bad one is the error to show.
            flag_sets[0].parse([a for a in args[:index] if not a.startswith("--version=")])
        raise UsageError(f'no command given; run "{help_hint}"')
    if args[index] == "help":
        # `help <command>` is that command's help, as with cobra.
        topic = args[index + 1 : index + 2]
        if topic and not topic[0].startswith("-"):
            return Invocation(topic[0], index, [*args[:index], *topic, "--help"])
        return ShowText(root_help)
    return Invocation(args[index], index, args)


def _root_bool(name: str, text: str) -> bool:
    try:
        return parse_go_bool(text)
    except ValueError as err:
        raise UsageError(f'invalid argument "{text}" for "{name}" flag: {err}') from None


# -- running a program ---------------------------------------------------------------------


def execute_program(
    prog: str,
    parse: Callable[[], object],
    run: Callable[[Any], int],
    stdout: TextIO | None,
    stderr: TextIO | None,
) -> int:
    """Parse a command line and run it: help/version print (0), usage errors one line (2).

    ``run`` gets what ``parse`` returned, unless that was a :class:`ShowText`.
    """
    try:
        command = parse()
    except UsageError as error:
        # One line only: a crash-looping pod's last log line must say what is wrong.
        print(f"{prog}: {one_line(error)}", file=stderr or sys.stderr)
        return EXIT_USAGE
    if isinstance(command, ShowText):
        (stdout or sys.stdout).write(command.text)
        return EXIT_OK
    return run(command)


#: A line break in a message, with the blanks around it.
_LINE_BREAK = re.compile(r"[ \t]*[\r\n]+[ \t]*")


def one_line(error: BaseException) -> str:
    """An error's message on one line: each line break, with the blanks around it, is
    one space; other spaces stay, as a quoted value holds them (``"1  2"``)."""
    return _LINE_BREAK.sub(" ", str(error).strip("\r\n"))


def start_logging(log_format: str, log_level: str, notices: Iterable[FlagNotice]) -> None:
    """Configure logging, then log a warning for each ignored flag."""
    # Imported here, not at the top: the runtime loads the Kubernetes client,
    # which help, --version and usage errors have no use for.
    import structlog  # noqa: PLC0415

    from ocmkit.runtime import configure_logging  # noqa: PLC0415

    configure_logging(log_format, log_level)
    log = structlog.get_logger("ocmkit.command")
    for notice in notices:
        log.warning(notice.message, flag=notice.flag)


def import_optional(name: str) -> ModuleType | None:
    """Module ``name``, or None if this build does not have it.

    A module that exists but fails to import something it needs raises, so
    that the missing dependency is what the operator sees.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:
            raise
        return None
