"""The ``hubcontroller`` command line: OCM's ``work manager`` and ``work webhook-server`` flags.

The cluster-manager operator (and anyone with a Go hub's deployment) starts
the hub processes with argument lists written for OCM's ``/work manager`` and
``/work webhook-server``; ours take those lists unchanged. The flag machinery
(pflag rules: ``--flag=value`` and ``--flag value``, ``_`` read as ``-``,
repeatable maps and lists, Go durations, booleans and integers) is
:mod:`ocmkit.flags`, the groups shared with the agent :mod:`ocmkit.command`;
this module only declares the hub's flags
and turns them into :class:`~hubcontroller.settings.HubManagerSettings` and
:class:`~hubcontroller.settings.WebhookFlags`.

Flags of OCM that do not apply here are accepted and reported as ignored;
anything unknown or malformed is a :class:`~ocmkit.flags.UsageError`, which
the entry point prints as one ``hubcontroller: <message>`` line (exit code 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hubcontroller.grpcserver.config import GrpcServerSettings
from hubcontroller.settings import (
    ALPHA_HUB_GATES,
    BETA_HUB_GATES,
    DEFAULT_HUB_NAMESPACE,
    DEFAULT_MANIFEST_LIMIT,
    DEFAULT_WEBHOOK_HEALTH_PROBE_PORT,
    DEFAULT_WEBHOOK_METRICS_PORT,
    DEFAULT_WEBHOOK_PORT,
    GATE_CLOUD_EVENTS_DRIVERS,
    KNOWN_HUB_GATES,
    MANAGER_LEASE_NAME,
    WORK_DRIVER_KUBE,
    HubManagerSettings,
    WebhookFlags,
    default_manager_leader_election,
)
from ocmkit import command, durations
from ocmkit.flags import (
    BOOL,
    DURATION,
    FLOAT32,
    INT,
    STRING,
    Flag,
    FlagNotice,
    FlagSet,
    ShowText,
    UsageError,
)

PROG = "hubcontroller"
MANAGER_COMMAND = "manager"
WEBHOOK_COMMAND = "webhook-server"

__all__ = [
    "GRPC_COMMAND",
    "MANAGER_COMMAND",
    "PROG",
    "WEBHOOK_COMMAND",
    "GrpcServerCommand",
    "ManagerCommand",
    "ShowText",
    "UsageError",
    "WebhookCommand",
    "enabled_hub_gates",
    "hub_component_namespace",
    "manager_command",
    "manager_flag_set",
    "manager_flags",
    "parse_command_line",
    "webhook_command",
    "webhook_flag_set",
    "webhook_flags",
]

# -- flag groups (help sections) -----------------------------------------------------------

MANAGER = "Work manager flags"
GRPC = "gRPC server flags"
WEBHOOK = "Webhook server flags"
IGNORED = "Accepted for compatibility with OCM (no effect)"
MANAGER_GROUPS = (
    MANAGER,
    command.CLIENTS,
    command.ELECTION,
    command.SERVING,
    command.LOGGING,
    IGNORED,
)
WEBHOOK_GROUPS = (WEBHOOK, command.CLIENTS, command.LOGGING, IGNORED)
GRPC_GROUPS = (GRPC, command.CLIENTS, command.SERVING, command.LOGGING, IGNORED)
GRPC_COMMAND = "grpc-server"
GRPC_SERVER_SUBCOMMAND = "grpc"

_CLOUDEVENTS = "it only applies to CloudEvents work drivers, which are not supported"


def manager_flags() -> tuple[Flag, ...]:
    """The flags of ``hubcontroller manager``: OCM's work-manager flags, same names and types."""
    return (
        Flag(
            "work-driver",
            STRING,
            WORK_DRIVER_KUBE,
            "Transport of ManifestWorks. Only kube (a Kubernetes API server) is supported; "
            "OCM's grpc and mqtt drivers are refused.",
            group=MANAGER,
        ),
        Flag(
            "work-driver-config",
            STRING,
            "",
            "Kubeconfig through which ManifestWorks are read and deleted, when they live "
            "elsewhere than the hub of --kubeconfig (empty: that hub).",
            group=MANAGER,
        ),
        command.feature_gates_flag(KNOWN_HUB_GATES, MANAGER),
        command.kubeconfig_flag("hub cluster"),
        *command.client_rate_flags("", "the hub's"),
        *command.leader_election_flags(MANAGER_LEASE_NAME, "manager", DEFAULT_HUB_NAMESPACE),
        *command.serving_flags("manager", command.SERVING),
        command.terminate_on_files_flag("kubeconfig"),
        *command.logging_flags(IGNORED),
        Flag(
            "cloudevents-client-id",
            STRING,
            "",
            "CloudEvents client ID (non-kube work drivers only).",
            group=IGNORED,
            ignored=_CLOUDEVENTS,
        ),
        command.operator_config_flag(IGNORED),
    )


def webhook_flags() -> tuple[Flag, ...]:
    """The flags of ``hubcontroller webhook-server``: OCM's webhook flags, same names."""
    return (
        Flag(
            "port", INT, DEFAULT_WEBHOOK_PORT, "HTTPS port of the admission webhook.", group=WEBHOOK
        ),
        Flag(
            "metrics-port",
            INT,
            DEFAULT_WEBHOOK_METRICS_PORT,
            "Port of the /metrics endpoint (0 or negative: disabled).",
            group=WEBHOOK,
        ),
        Flag(
            "health-probe-port",
            INT,
            DEFAULT_WEBHOOK_HEALTH_PROBE_PORT,
            "Port of the /healthz and /readyz endpoints (0: disabled).",
            group=WEBHOOK,
        ),
        Flag(
            "certdir",
            STRING,
            "",
            "Directory holding the serving certificate tls.crt and key tls.key "
            "(empty: <TMPDIR>/k8s-webhook-server/serving-certs).",
            group=WEBHOOK,
        ),
        Flag(
            "tls-min-version",
            STRING,
            "",
            "Minimum TLS version of the webhook: VersionTLS10, VersionTLS11, VersionTLS12 or "
            "VersionTLS13 (empty: VersionTLS12).",
            group=WEBHOOK,
        ),
        Flag(
            "tls-cipher-suites",
            STRING,
            "",
            "Comma-separated cipher suites, Go names such as "
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (empty: the defaults).",
            group=WEBHOOK,
        ),
        Flag(
            "manifestLimit",
            INT,
            DEFAULT_MANIFEST_LIMIT,
            "Maximum total size in bytes of a work's manifests.",
            dest="manifest_limit",
            group=WEBHOOK,
        ),
        command.feature_gates_flag(KNOWN_HUB_GATES, WEBHOOK),
        command.kubeconfig_flag("hub cluster"),
        *command.logging_flags(IGNORED),
    )


MANAGER_DESCRIPTION = """
Start the hub work manager: the ManifestWorkReplicaSet controller (gate ManifestWorkReplicaSet)
and the garbage collection of completed ManifestWorks after ttlSecondsAfterFinished (gate
CleanUpCompletedManifestWork). The flags are those of OCM's `work manager`; durations use Go
syntax (10s, 1m30s, 1h0m0s, 500ms).
"""

WEBHOOK_DESCRIPTION = """
Start the validating admission webhook for ManifestWorks (and ManifestWorkReplicaSets with gate
ManifestWorkReplicaSet). The flags are those of OCM's `work webhook-server`.
"""


def grpc_server_flags() -> tuple[Flag, ...]:
    """The flags of ``hubcontroller grpc-server``: OCM's ``server grpc`` ones, plus ours."""
    return (
        Flag(
            "server-config",
            STRING,
            "",
            "The server configuration file (OCM's keys: tls_cert_file, tls_key_file, "
            "client_ca_file, server_bind_port, ...); missing: the defaults.",
            group=GRPC,
        ),
        Flag(
            "broker-heartbeat-disabled",
            BOOL,
            False,
            "Send no heartbeats on the Subscribe streams.",
            group=GRPC,
        ),
        Flag(
            "broker-heartbeat-interval",
            DURATION,
            10 * durations.SECOND,
            "Interval of the heartbeats on the Subscribe streams (at least 10s).",
            group=GRPC,
        ),
        Flag(
            "bind-address",
            STRING,
            "",
            "Address the gRPC port binds (ours; empty: every interface, as OCM).",
            group=GRPC,
        ),
        Flag(
            "kubeconfig",
            STRING,
            "",
            "Kubeconfig of the hub (empty: in-cluster).",
            group=command.CLIENTS,
        ),
        Flag("kube-api-qps", FLOAT32, 50.0, "QPS of the hub client.", group=command.CLIENTS),
        Flag("kube-api-burst", INT, 100, "Burst of the hub client.", group=command.CLIENTS),
        Flag(
            "listen",
            STRING,
            "0.0.0.0:8080",
            "host:port of /metrics, /healthz and /readyz (plain HTTP).",
            group=command.SERVING,
        ),
        *command.logging_flags(IGNORED),
        Flag(
            "namespace",
            STRING,
            "",
            "Component namespace.",
            group=IGNORED,
            ignored="the gRPC server keeps no state in its namespace",
        ),
        Flag(
            "disable-leader-election",
            BOOL,
            False,
            "Leader election.",
            group=IGNORED,
            ignored="every replica serves: the gRPC server does not elect a leader",
        ),
    )


GRPC_DESCRIPTION = """
Serve ManifestWorks to work agents over OCM's CloudEvents gRPC service (agents started with
--workload-source-driver=grpc), backed by the hub API server: spec events out, status events
in. The flags are those of OCM's `server grpc`.
"""


def grpc_server_flag_set() -> FlagSet:
    """The parser of ``hubcontroller grpc-server``."""
    return FlagSet(
        f"{PROG} {GRPC_COMMAND} [flags]", GRPC_DESCRIPTION, grpc_server_flags(), GRPC_GROUPS
    )


@dataclass(frozen=True)
class GrpcServerCommand:
    """``hubcontroller grpc-server``: its settings and notices about ignored flags."""

    settings: GrpcServerSettings
    notices: tuple[FlagNotice, ...] = ()


def grpc_server_command(args: Sequence[str]) -> GrpcServerCommand | ShowText:
    """Parse ``hubcontroller grpc-server`` arguments into validated settings (or help)."""
    flag_set = grpc_server_flag_set()
    flags = command.parse_flags(flag_set, args, f"{PROG} {GRPC_COMMAND}")
    if isinstance(flags, ShowText):
        return flags
    settings = GrpcServerSettings(
        server_config=flags.string("server-config"),
        heartbeat_disabled=flags.boolean("broker-heartbeat-disabled"),
        heartbeat_interval=flags.seconds("broker-heartbeat-interval"),
        bind_address=flags.string("bind-address"),
        listen=flags.string("listen"),
        **command.client_fields(flags),
        **command.logging_fields(flags),
    )
    return GrpcServerCommand(
        command.validated(settings, settings.validate), command.notices_for(flags, flag_set.flags)
    )


def manager_flag_set() -> FlagSet:
    """The parser of ``hubcontroller manager``."""
    return FlagSet(
        f"{PROG} {MANAGER_COMMAND} [flags]", MANAGER_DESCRIPTION, manager_flags(), MANAGER_GROUPS
    )


def webhook_flag_set() -> FlagSet:
    """The parser of ``hubcontroller webhook-server``."""
    return FlagSet(
        f"{PROG} {WEBHOOK_COMMAND} [flags]", WEBHOOK_DESCRIPTION, webhook_flags(), WEBHOOK_GROUPS
    )


# -- from flags to settings ---------------------------------------------------------------


@dataclass(frozen=True)
class ManagerCommand:
    """``hubcontroller manager``: the settings to run with, and notices about ignored flags."""

    settings: HubManagerSettings
    notices: tuple[FlagNotice, ...] = ()


@dataclass(frozen=True)
class WebhookCommand:
    """``hubcontroller webhook-server``: its flags, and notices about ignored ones.

    The webhook's settings object is built from ``flags`` by the entry point,
    once the webhook package is loaded (it checks ports and TLS names itself).
    """

    flags: WebhookFlags
    notices: tuple[FlagNotice, ...] = ()


def hub_component_namespace(flag_value: str, namespace_file: Path) -> str:
    """``--namespace``, else the pod's namespace (service account file), else OCM's hub one."""
    return command.component_namespace(flag_value, namespace_file, DEFAULT_HUB_NAMESPACE)


def enabled_hub_gates(explicit: Mapping[str, bool]) -> frozenset[str]:
    """The hub gates switched on by a merged ``--feature-gates`` map."""
    return command.enabled_gates(explicit, KNOWN_HUB_GATES, ALPHA_HUB_GATES, BETA_HUB_GATES)


def manager_command(
    args: Sequence[str], *, namespace_file: Path = command.SERVICE_ACCOUNT_NAMESPACE_FILE
) -> ManagerCommand | ShowText:
    """Parse ``hubcontroller manager`` arguments into validated settings (or help)."""
    flag_set = manager_flag_set()
    flags = command.parse_flags(flag_set, args, f"{PROG} {MANAGER_COMMAND}")
    if isinstance(flags, ShowText):
        return flags
    settings = HubManagerSettings(
        work_driver=flags.string("work-driver"),
        work_driver_config=flags.string("work-driver-config"),
        feature_gates=enabled_hub_gates(flags.gates("feature-gates")),
        **command.client_fields(flags),
        leader_election=command.leader_election_from(
            flags, default_manager_leader_election(), namespace_file
        ),
        **command.serving_fields(flags),
        **command.logging_fields(flags),
        terminate_on_files=flags.strings("terminate-on-files"),
    )
    command.validated(settings, settings.validate)
    notices = [*command.notices_for(flags, flag_set.flags), *command.plain_http_notices(flags)]
    if settings.gate(GATE_CLOUD_EVENTS_DRIVERS):
        notices.append(
            FlagNotice(
                "--feature-gates",
                f"feature gate {GATE_CLOUD_EVENTS_DRIVERS} has no effect: "
                f"only the {WORK_DRIVER_KUBE} work driver is supported",
            )
        )
    return ManagerCommand(settings, tuple(notices))


def webhook_command(args: Sequence[str]) -> WebhookCommand | ShowText:
    """Parse ``hubcontroller webhook-server`` arguments into its flags (or help)."""
    flag_set = webhook_flag_set()
    flags = command.parse_flags(flag_set, args, f"{PROG} {WEBHOOK_COMMAND}")
    if isinstance(flags, ShowText):
        return flags
    given = WebhookFlags(
        port=flags.integer("port"),
        metrics_port=flags.integer("metrics-port"),
        health_probe_port=flags.integer("health-probe-port"),
        certdir=flags.string("certdir"),
        tls_min_version=flags.string("tls-min-version"),
        tls_cipher_suites=flags.string("tls-cipher-suites"),
        manifest_limit=flags.integer("manifest_limit"),
        feature_gates=enabled_hub_gates(flags.gates("feature-gates")),
        kubeconfig=flags.string("kubeconfig"),
        **command.logging_fields(flags),
    )
    command.validated(given, given.validate)
    return WebhookCommand(given, command.notices_for(flags, flag_set.flags))


# -- the top-level command ----------------------------------------------------------------

_ROOT_COMMANDS = (
    (f"{MANAGER_COMMAND} [flags]", "run the hub work manager"),
    (f"{WEBHOOK_COMMAND} [flags]", "run the validating admission webhook"),
    (f"{GRPC_COMMAND} [flags]", "serve ManifestWorks to agents over CloudEvents gRPC"),
    ("--version", "print the version"),
    ("--help", "show this help"),
)
ROOT_HELP = (
    "Usage:\n"
    + "".join(f"  {PROG} {usage:<24}{what}\n" for usage, what in _ROOT_COMMANDS)
    + f'\nRun "{PROG} <command> --help" for a command\'s flags.\n'
)


def parse_command_line(
    argv: Sequence[str], *, namespace_file: Path = command.SERVICE_ACCOUNT_NAMESPACE_FILE
) -> ManagerCommand | WebhookCommand | GrpcServerCommand | ShowText:
    """Parse ``hubcontroller``'s arguments (without the program name)."""
    found = command.find_command(
        argv,
        prog=PROG,
        flag_sets=(manager_flag_set(), webhook_flag_set(), grpc_server_flag_set()),
        root_help=ROOT_HELP,
        help_hint=f"{PROG} --help",
    )
    if isinstance(found, ShowText):
        return found
    name, index, rest = found.command, found.index, found.rest
    if name == MANAGER_COMMAND:
        return manager_command(rest, namespace_file=namespace_file)
    if name == WEBHOOK_COMMAND:
        return webhook_command(rest)
    if name == GRPC_COMMAND:
        return grpc_server_command(rest)
    if name == "server" and GRPC_SERVER_SUBCOMMAND in rest[index : index + 1]:
        # OCM's own binary: `server grpc [flags]`.
        return grpc_server_command(rest[:index] + rest[index + 1 :])
    raise UsageError(
        f'unknown command "{name}"; the commands are "{MANAGER_COMMAND}", '
        f'"{WEBHOOK_COMMAND}" and "{GRPC_COMMAND}"'
    )
