"""The ``hubcontroller`` command line: OCM's ``work manager`` and ``work webhook-server`` flags.

The cluster-manager operator (and anyone with a Go hub's deployment) starts
the hub processes with argument lists written for OCM's ``/work manager`` and
``/work webhook-server``; ours take those lists unchanged. The flag machinery
is :mod:`ocmkit.flags`, the command shell and the groups shared with the agent
:mod:`ocmkit.command`; this module declares the hub's flags and commands.

Flags of OCM that do not apply here are accepted and reported as ignored;
anything unknown or malformed is a :class:`~ocmkit.flags.UsageError`, which
the entry point prints as one ``hubcontroller: <message>`` line (exit code 2).
"""

from __future__ import annotations

from collections.abc import Sequence
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
    KNOWN_HUB_GATES,
    MANAGER_LEASE_NAME,
    WORK_DRIVER_KUBE,
    HubManagerSettings,
    WebhookFlags,
)
from ocmkit import command, durations
from ocmkit.command import Parsed, grouped
from ocmkit.flags import (
    BOOL,
    DURATION,
    FLOAT32,
    INT,
    STRING,
    Flag,
    FlagNotice,
    FlagType,
    ParsedFlags,
    ShowText,
    UsageError,
)
from schemas.wire import GATE_CLOUD_EVENTS_DRIVERS

PROG = "hubcontroller"
MANAGER_COMMAND = "manager"
WEBHOOK_COMMAND = "webhook-server"


# -- flag groups (help sections) -----------------------------------------------------------

MANAGER = "Work manager flags"
GRPC = "gRPC server flags"
WEBHOOK = "Webhook server flags"
IGNORED = "Accepted for compatibility with OCM (no effect)"
GRPC_COMMAND = "grpc-server"
GRPC_SERVER_SUBCOMMAND = "grpc"

_CLOUDEVENTS = "it only applies to CloudEvents work drivers, which are not supported"


def manager_flags() -> tuple[Flag, ...]:
    """The flags of ``hubcontroller manager``: OCM's work-manager flags, same names and types."""
    return (
        *grouped(
            MANAGER,
            Flag(
                "work-driver",
                STRING,
                WORK_DRIVER_KUBE,
                "Transport of ManifestWorks. Only kube (a Kubernetes API server) is supported; "
                "OCM's grpc and mqtt drivers are refused.",
            ),
            Flag(
                "work-driver-config",
                STRING,
                "",
                "Kubeconfig through which ManifestWorks are read and deleted, when they live "
                "elsewhere than the hub of --kubeconfig (empty: that hub).",
            ),
        ),
        command.feature_gates_flag(MANAGER, KNOWN_HUB_GATES, ALPHA_HUB_GATES, BETA_HUB_GATES),
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
        *grouped(
            WEBHOOK,
            Flag(
                "port",
                INT,
                DEFAULT_WEBHOOK_PORT,
                "HTTPS port of the admission webhook (0 or negative: 9443).",
            ),
            Flag(
                "metrics-port",
                INT,
                DEFAULT_WEBHOOK_METRICS_PORT,
                "Port of the /metrics endpoint (0 or negative: disabled).",
            ),
            Flag(
                "health-probe-port",
                INT,
                DEFAULT_WEBHOOK_HEALTH_PROBE_PORT,
                "Port of the /healthz and /readyz endpoints (0 or negative: disabled).",
            ),
            Flag(
                "certdir",
                STRING,
                "",
                "Directory holding the serving certificate tls.crt and key tls.key "
                "(empty: <TMPDIR>/k8s-webhook-server/serving-certs).",
            ),
            Flag(
                "tls-min-version",
                STRING,
                "",
                "Minimum TLS version of the webhook: VersionTLS10, VersionTLS11, VersionTLS12 or "
                "VersionTLS13 (empty: VersionTLS12).",
            ),
            Flag(
                "tls-cipher-suites",
                STRING,
                "",
                "Comma-separated cipher suites, Go names such as "
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (empty: the defaults).",
            ),
            Flag(
                "manifestLimit",
                INT,
                DEFAULT_MANIFEST_LIMIT,
                "Maximum total size in bytes of a work's manifests.",
                dest="manifest_limit",
            ),
        ),
        command.feature_gates_flag(WEBHOOK, KNOWN_HUB_GATES, ALPHA_HUB_GATES, BETA_HUB_GATES),
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
        *grouped(
            GRPC,
            Flag(
                "server-config",
                STRING,
                "",
                "The server configuration file (OCM's keys: tls_cert_file, tls_key_file, "
                "client_ca_file, server_bind_port, ...); missing: the defaults.",
            ),
            Flag(
                "broker-heartbeat-disabled",
                BOOL,
                False,
                "Send no heartbeats on the Subscribe streams.",
                dest="heartbeat_disabled",
            ),
            Flag(
                "broker-heartbeat-interval",
                DURATION,
                10 * durations.SECOND,
                "Interval of the heartbeats on the Subscribe streams (at least 10s).",
                dest="heartbeat_interval",
            ),
            Flag(
                "bind-address",
                STRING,
                "",
                "Address the gRPC port binds (ours; empty: every interface, as OCM).",
            ),
        ),
        *grouped(
            command.CLIENTS,
            Flag("kubeconfig", STRING, "", "Kubeconfig of the hub (empty: in-cluster)."),
            Flag("kube-api-qps", FLOAT32, 50.0, "QPS of the hub client."),
            Flag("kube-api-burst", INT, 100, "Burst of the hub client."),
        ),
        *command.serving_flags("server grpc", command.SERVING),
        Flag(
            "namespace",
            STRING,
            "",
            "Component namespace: names the <namespace>_build_info series (empty: the pod's, "
            f"else {command.LIBRARY_GO_NAMESPACE}).",
            group=command.SERVING,
        ),
        command.terminate_on_files_flag("hub kubeconfig"),
        *command.logging_flags(IGNORED),
        *grouped(
            IGNORED,
            *(
                Flag(name, kind, default, "Leader election.", ignored=NO_LEADER)
                for name, kind, default in _GRPC_ELECTION_FLAGS
            ),
            command.operator_config_flag(IGNORED),
        ),
    )


NO_LEADER = "every replica serves: the gRPC server does not elect a leader (nor does OCM's)"
#: library-go's leader-election flags, which OCM's ``server grpc`` also accepts and ignores.
_GRPC_ELECTION_FLAGS: tuple[tuple[str, FlagType, object], ...] = (
    ("disable-leader-election", BOOL, False),
    ("leader-election-lease-duration", DURATION, 137 * durations.SECOND),
    ("leader-election-renew-deadline", DURATION, 107 * durations.SECOND),
    ("leader-election-retry-period", DURATION, 26 * durations.SECOND),
)


GRPC_DESCRIPTION = """
Serve ManifestWorks to work agents over OCM's CloudEvents gRPC service (agents started with
--workload-source-driver=grpc), backed by the hub API server: spec events out, status events
in. The flags are those of OCM's `server grpc`.
"""


# -- from flags to settings ---------------------------------------------------------------


class ManagerCommand(Parsed[HubManagerSettings]):
    """``hubcontroller manager``: the settings to run with, and notices about ignored flags."""


class GrpcServerCommand(Parsed[GrpcServerSettings]):
    """``hubcontroller grpc-server``: its settings and notices about ignored flags."""


class WebhookCommand(Parsed[WebhookFlags]):
    """``hubcontroller webhook-server``: its flags (``settings``), and notices about ignored ones.

    The webhook's settings object is built from the flags by the entry point,
    once the webhook package is loaded (it checks ports and TLS names itself).
    """


def _manager_notices(flags: ParsedFlags, settings: HubManagerSettings) -> list[FlagNotice]:
    if not settings.gate(GATE_CLOUD_EVENTS_DRIVERS):
        return []
    message = (
        f"feature gate {GATE_CLOUD_EVENTS_DRIVERS} has no effect: "
        f"only the {WORK_DRIVER_KUBE} work driver is supported"
    )
    return [FlagNotice("--feature-gates", message)]


MANAGER_SPEC = command.CommandSpec(
    f"{PROG} {MANAGER_COMMAND}",
    MANAGER_DESCRIPTION,
    manager_flags,
    HubManagerSettings,
    ManagerCommand,
    notices=_manager_notices,
)
WEBHOOK_SPEC = command.CommandSpec(
    f"{PROG} {WEBHOOK_COMMAND}",
    WEBHOOK_DESCRIPTION,
    webhook_flags,
    WebhookFlags,
    WebhookCommand,
)
GRPC_SPEC = command.CommandSpec(
    f"{PROG} {GRPC_COMMAND}",
    GRPC_DESCRIPTION,
    grpc_server_flags,
    GrpcServerSettings,
    GrpcServerCommand,
)


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
        flag_sets=[spec.flag_set() for spec in (MANAGER_SPEC, WEBHOOK_SPEC, GRPC_SPEC)],
        root_help=ROOT_HELP,
        help_hint=f"{PROG} --help",
    )
    if isinstance(found, ShowText):
        return found
    name, index, rest = found.command, found.index, found.rest
    if name == MANAGER_COMMAND:
        return MANAGER_SPEC.parse(rest, namespace_file)
    if name == WEBHOOK_COMMAND:
        return WEBHOOK_SPEC.parse(rest)
    if name == GRPC_COMMAND:
        return GRPC_SPEC.parse(rest, namespace_file)
    if name == "server" and GRPC_SERVER_SUBCOMMAND in rest[index : index + 1]:
        # OCM's own binary: `server grpc [flags]`.
        return GRPC_SPEC.parse(rest[:index] + rest[index + 1 :], namespace_file)
    raise UsageError(
        f'unknown command "{name}"; the commands are "{MANAGER_COMMAND}", '
        f'"{WEBHOOK_COMMAND}" and "{GRPC_COMMAND}"'
    )
