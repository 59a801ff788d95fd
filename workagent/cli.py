"""The ``workagent`` command line: OCM's work-agent flags, parsed as Go's pflag does.

The klusterlet operator (and anyone with a Go agent's deployment) starts the
agent with an argument list written for OCM's ``/work agent``; ours must take
that list unchanged. The flag machinery (pflag's rules, Go value syntax) is
:mod:`ocmkit.flags`, the groups shared with the hub (leader election, serving,
logging) are :mod:`ocmkit.command`; this module declares the agent's flags
and turns them into :class:`~workagent.settings.AgentSettings`.

Flags of OCM's agent that do not apply here are accepted and reported as
ignored; anything unknown or malformed is a :class:`UsageError`, which the
entry point prints as one line (exit code 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ocmkit import command, durations
from ocmkit.command import Parsed, grouped
from ocmkit.flags import (
    BOOL,
    DURATION,
    INT,
    INT32,
    STRING,
    STRING_SLICE,
    Flag,
    FlagNotice,
    FlagSet,
    ParsedFlags,
    ShowText,
    UsageError,
)
from workagent.settings import (
    ALPHA_AGENT_GATES,
    BETA_AGENT_GATES,
    DEFAULT_COMPONENT_NAMESPACE,
    DEFAULT_HUB_KUBECONFIG,
    KNOWN_AGENT_GATES,
    LEASE_NAME,
    AgentSettings,
)

PROG = "workagent"

# -- the agent's flags --------------------------------------------------------------------

WORK = "Work agent flags"
IGNORED = "Accepted for compatibility with OCM's agent (no effect)"


def agent_flags() -> tuple[Flag, ...]:
    """The flags of ``workagent agent``: OCM's work-agent flags, same names and types."""
    second = durations.SECOND
    return (
        *grouped(
            WORK,
            Flag(
                "spoke-cluster-name",
                STRING,
                "",
                "Name of the managed cluster: the hub namespace whose ManifestWorks this agent "
                "applies. Required.",
                dest="cluster_name",
                aliases=("cluster-name",),
            ),
            Flag(
                "agent-id",
                STRING,
                "",
                "ID of this agent, written to spec.agentID of its AppliedManifestWorks "
                "(empty: the hub hash).",
            ),
            Flag(
                "workload-source-config",
                STRING,
                DEFAULT_HUB_KUBECONFIG,
                "With --workload-source-driver=kube, the kubeconfig of the hub cluster (its "
                "server URL defines the hub hash); with grpc or mqtt, the driver's config file "
                "(url or brokerHost defines the hub hash).",
                dest="hub_kubeconfig",
                aliases=("hub-kubeconfig",),
            ),
            Flag(
                "workload-source-driver",
                STRING,
                "kube",
                "Where ManifestWorks come from: kube (the hub API server), grpc (OCM's hub gRPC "
                "server) or mqtt (a broker), the last two as CloudEvents.",
            ),
            Flag(
                "status-sync-interval",
                DURATION,
                10 * second,
                "How often the status and feedback of applied resources are polled (each work "
                "every x0.8 to x1 of it).",
            ),
            Flag(
                "appliedmanifestwork-eviction-grace-period",
                DURATION,
                3600 * second,
                "How long an AppliedManifestWork whose ManifestWork is gone is kept before its "
                "resources are deleted; 876000h or more disables eviction.",
                dest="eviction_grace_period",
            ),
            Flag(
                "max-json-raw-length",
                INT32,
                1024,
                "Maximum length of a JsonRaw status feedback value.",
            ),
            Flag(
                "max-feedback-watch",
                INT32,
                50,
                "Maximum number of resources watched for Watch-mode status feedback; beyond it "
                "they are polled.",
            ),
            Flag(
                "workload-agent-workers",
                INT,
                10,
                "Concurrent workers of the apply, status and cleanup controllers (>= 1).",
                dest="workers",
            ),
        ),
        command.feature_gates_flag(WORK, KNOWN_AGENT_GATES, ALPHA_AGENT_GATES, BETA_AGENT_GATES),
        command.kubeconfig_flag("managed cluster"),
        Flag(
            "spoke-kubeconfig",
            STRING,
            "",
            "Kubeconfig of the managed cluster; takes precedence over --kubeconfig.",
            group=command.CLIENTS,
        ),
        *command.client_rate_flags(
            "",
            "the managed cluster's",
            " Per client, as client-go: the agent's three (applying manifests, "
            "AppliedManifestWorks, status reads) each have this QPS and --kube-api-burst.",
        ),
        *command.client_rate_flags("hub-", "the hub's"),
        *command.leader_election_flags(LEASE_NAME, "agent", DEFAULT_COMPONENT_NAMESPACE),
        *command.serving_flags("agent", command.SERVING),
        *grouped(
            command.SERVING,
            Flag(
                "health-port",
                INT32,
                0,
                "Port of the metrics and probe endpoints on all interfaces when --listen is not "
                "given (0: 8443).",
            ),
            Flag(
                "metrics-work-labels",
                BOOL,
                False,
                "Add a work label (the ManifestWork's name) to the per-work gauges of /metrics; "
                "one series per work and condition, so for small fleets only.",
            ),
        ),
        command.terminate_on_files_flag("hub kubeconfig"),
        *command.logging_flags(IGNORED),
        Flag(
            "cloudevents-client-id",
            STRING,
            "",
            "CloudEvents client ID: the source of the agent's events (grpc and mqtt; required "
            "there, e.g. <cluster>-work-agent).",
            group=WORK,
        ),
        *grouped(
            IGNORED,
            Flag(
                "cloudevents-client-codecs",
                STRING_SLICE,
                (),
                "CloudEvents codecs (accepted for OCM compatibility).",
                ignored="the agent always uses the manifestbundle codec, as OCM's does",
            ),
            Flag(
                "hub-kubeconfig-dir",
                STRING,
                "/spoke/hub-kubeconfig",
                "Mount directory of the hub kubeconfig secret (used by OCM's registration agent).",
                ignored="the hub kubeconfig is read from --workload-source-config",
            ),
        ),
        command.operator_config_flag(IGNORED),
    )


AGENT_DESCRIPTION = """
Start the work agent: watch the ManifestWorks of one managed cluster's namespace on the hub,
apply their manifests to the managed cluster, and report status back. The flags are those of
OCM's `work agent`; durations use Go syntax (10s, 1m30s, 1h0m0s, 500ms).
"""


# -- from flags to settings ---------------------------------------------------------------


class AgentCommand(Parsed[AgentSettings]):
    """``workagent agent``: the settings to run with, and notices about ignored flags."""


def listen_address(flags: ParsedFlags) -> str:
    """``--listen``, else ``0.0.0.0:<--health-port>``, else the default ``0.0.0.0:8443``.

    library-go lets ``--listen`` override the bind address that OCM derives
    from ``--health-port``; the same order holds here.
    """
    port = flags.integer("health-port")
    if port != 0 and not 1 <= port <= 65535:
        raise UsageError(f"invalid --health-port value {port}: must be 0 or between 1 and 65535")
    if flags.was_given("listen") and flags.string("listen"):  # empty: as not given
        return flags.string("listen")  # AgentSettings.validate checks it
    return f"0.0.0.0:{port}" if port else command.DEFAULT_LISTEN


def _agent_fields(flags: ParsedFlags) -> dict[str, object]:
    # A client id means nothing to the kube driver (see _agent_notices).
    kube = flags.string("workload-source-driver") == "kube"
    client_id = "" if kube else flags.string("cloudevents-client-id")
    return {"listen": listen_address(flags), "cloudevents_client_id": client_id}


def _agent_notices(flags: ParsedFlags, settings: AgentSettings) -> list[FlagNotice]:
    notices = []
    if flags.given.get("hub_kubeconfig") == "--hub-kubeconfig":
        # OCM's work agent ignores this flag; here it names the hub kubeconfig.
        message = (
            "--hub-kubeconfig is read as --workload-source-config (OCM's work agent ignores it)"
        )
        notices.append(FlagNotice("--hub-kubeconfig", message))
    if settings.workload_source_driver == "kube" and flags.was_given("cloudevents-client-id"):
        spelled = flags.given["cloudevents-client-id"]
        message = f"{spelled} is ignored: it only applies to the grpc and mqtt drivers"
        notices.append(FlagNotice(spelled, message))
    return notices


AGENT = command.CommandSpec(
    f"{PROG} agent",
    AGENT_DESCRIPTION,
    agent_flags,
    AgentSettings,
    AgentCommand,
    computed=_agent_fields,
    notices=_agent_notices,
)


def agent_flag_set() -> FlagSet:
    """The parser of ``workagent agent``."""
    return AGENT.flag_set()


# -- workagent diff ------------------------------------------------------------------------

DIFF_INPUT = "Input flags"
DIFF_CLUSTERS = "Cluster flags"

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
    return FlagSet(f"{PROG} diff [flags]", DIFF_DESCRIPTION, flags)


def diff_command(args: Sequence[str]) -> DiffCommand | ShowText:
    """Parse ``workagent diff`` arguments."""
    flags = command.parse_flags(diff_flag_set(), args, f"{PROG} diff")
    if isinstance(flags, ShowText):
        return flags
    diff = DiffCommand(
        filename=flags.string("filename"),
        work=flags.string("work"),
        hub_kubeconfig=flags.string("hub-kubeconfig"),
        cluster_name=flags.string("cluster_name"),
        kubeconfig=flags.string("kubeconfig"),
    )
    if bool(diff.filename) == bool(diff.work):
        raise UsageError("diff needs exactly one of -f FILE and --work NAME")
    if diff.work and not (diff.hub_kubeconfig and diff.cluster_name):
        raise UsageError("--work needs --hub-kubeconfig and --spoke-cluster-name")
    return diff


# -- the top-level command ----------------------------------------------------------------

ROOT_HELP = f"""Usage:
  {PROG} agent [flags]    run the work agent on a managed cluster
  {PROG} diff [flags]     show what the agent would change for a ManifestWork
  {PROG} --version        print the version
  {PROG} --help           show this help

Run "{PROG} agent --help" or "{PROG} diff --help" for their flags.
"""


def parse_command_line(
    argv: Sequence[str], *, namespace_file: Path = command.SERVICE_ACCOUNT_NAMESPACE_FILE
) -> AgentCommand | DiffCommand | ShowText:
    """Parse ``workagent``'s arguments (without the program name)."""
    found = command.find_command(
        argv,
        prog=PROG,
        flag_sets=(agent_flag_set(),),
        root_help=ROOT_HELP,
        help_hint=f"{PROG} agent --help",
    )
    if isinstance(found, ShowText):
        return found
    if found.command == "diff":
        if found.index:
            raise UsageError(f'the flags of "{PROG} diff" come after the command')
        return diff_command(found.rest)
    if found.command != "agent":
        raise UsageError(f'unknown command "{found.command}"; the commands are "agent" and "diff"')
    return AGENT.parse(found.rest, namespace_file)
