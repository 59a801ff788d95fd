"""The ``workagent`` command line: OCM's work-agent flags, parsed as pflag parses them."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import workagent.__main__ as entry
from ocmkit.command import one_line
from ocmkit.flags import (
    Flag,
    ShowText,
    UsageError,
    normalize_flag_name,
    parse_go_bool,
    parse_go_csv_record,
    parse_go_float,
    parse_go_int,
)
from ocmkit.runtime import LeaderElectionSettings, parse_bind_address
from tests.support.processes import run_console_script
from workagent.cli import (
    AgentCommand,
    agent_flag_set,
    agent_flags,
    parse_command_line,
)
from workagent.settings import (
    EVICTION_DISABLED_AT,
    FEATURE_EXECUTOR_VALIDATING_CACHES,
    FEATURE_RAW_FEEDBACK_JSON_STRING,
    AgentSettings,
)

REPO = Path(__file__).resolve().parents[2]
NO_FILE = Path("/nonexistent/serviceaccount/namespace")


def parse(*args: str, namespace_file: Path = NO_FILE) -> AgentCommand:
    """Parse ``workagent <args>`` and expect the agent command."""
    command = parse_command_line(list(args), namespace_file=namespace_file)
    assert isinstance(command, AgentCommand), command
    return command


def settings_of(*args: str) -> AgentSettings:
    """Settings of ``workagent agent --spoke-cluster-name=cluster1 <args>``."""
    return parse("agent", "--spoke-cluster-name=cluster1", *args).settings


def usage_error(*args: str) -> str:
    """The one-line message of a command line that must be refused."""
    with pytest.raises(UsageError) as caught:
        parse_command_line(list(args), namespace_file=NO_FILE)
    return str(caught.value)


def comparable(settings: AgentSettings) -> AgentSettings:
    """The settings with the random leader-election identity blanked out."""
    election = dataclasses.replace(settings.leader_election, identity="")
    return dataclasses.replace(settings, leader_election=election)


def expected(**fields: object) -> AgentSettings:
    """Default settings for cluster1, with ``fields`` changed (identity blanked)."""
    election = LeaderElectionSettings(identity="")
    base = AgentSettings(cluster_name="cluster1", leader_election=election)
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


# -- what the klusterlet operator passes --------------------------------------------------

# open-cluster-management-io/ocm, manifests/klusterlet/management/klusterlet-work-deployment.yaml
# at commit 98443736e951aebff646b52451b6e4628d62fc39: the args of container
# "klusterlet-manifestwork-agent", rendered for install mode Default, ClusterName=cluster1,
# AgentID=2f1e6a0c-6f8f-4a4c-9d8e-2f6f1b0e4c11, Replica=1 (so the template adds
# --status-sync-interval=60s), WorkFeatureGates from ConvertToFeatureGateFlags (one
# --feature-gates=<Gate>=true per enabled gate), WorkKubeAPIQPS=100, WorkKubeAPIBurst=200,
# WorkHubKubeAPIQPS=75, WorkHubKubeAPIBurst=150 and AppliedManifestWorkEvictionGracePeriod
# = (10*time.Minute).String().
#: What the template passes first in every install mode.
OPERATOR_ARGS_HEAD = [
    "/work",
    "agent",
    "--spoke-cluster-name=cluster1",
    "--workload-source-driver=kube",
    "--workload-source-config=/spoke/hub-kubeconfig/kubeconfig",
    "--agent-id=2f1e6a0c-6f8f-4a4c-9d8e-2f6f1b0e4c11",
]
OPERATOR_ARGS = [
    *OPERATOR_ARGS_HEAD,
    "--feature-gates=RawFeedbackJsonString=true",
    "--feature-gates=ExecutorValidatingCaches=true",
    "--terminate-on-files=/spoke/hub-kubeconfig/kubeconfig",
    "--status-sync-interval=60s",
    "--kube-api-qps=100",
    "--kube-api-burst=200",
    "--hub-kube-api-qps=75",
    "--hub-kube-api-burst=150",
    "--appliedmanifestwork-eviction-grace-period=10m0s",
]

# The same template at commit 019c809b28ade6508d2e72a5596faa16e2db7ccd, rendered for install
# mode Hosted (adds --spoke-kubeconfig and a second --terminate-on-files) with
# WorkStatusSyncInterval=(90*time.Second).String(), TLSMinVersion=VersionTLS13,
# TLSCipherSuites set and HealthCheckPort=9443 (which adds --health-port).
OPERATOR_ARGS_HOSTED = [
    *OPERATOR_ARGS_HEAD,
    "--spoke-kubeconfig=/spoke/config/kubeconfig",
    "--terminate-on-files=/spoke/config/kubeconfig",
    "--terminate-on-files=/spoke/hub-kubeconfig/kubeconfig",
    "--status-sync-interval=1m30s",
    "--appliedmanifestwork-eviction-grace-period=876000h0m0s",
    "--tls-min-version=VersionTLS13",
    "--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
    "--health-port=9443",
]


def test_operator_default_mode_args_start_the_agent_unchanged() -> None:
    command = parse(*OPERATOR_ARGS)
    assert comparable(command.settings) == expected(
        agent_id="2f1e6a0c-6f8f-4a4c-9d8e-2f6f1b0e4c11",
        hub_kubeconfig="/spoke/hub-kubeconfig/kubeconfig",
        feature_gates=frozenset(
            {FEATURE_RAW_FEEDBACK_JSON_STRING, FEATURE_EXECUTOR_VALIDATING_CACHES}
        ),
        terminate_on_files=("/spoke/hub-kubeconfig/kubeconfig",),
        status_sync_interval=60.0,
        kube_api_qps=100.0,
        kube_api_burst=200,
        hub_kube_api_qps=75.0,
        hub_kube_api_burst=150,
        eviction_grace_period=600.0,
    )
    assert command.notices == ()  # every flag the operator passes means something here


def test_operator_hosted_mode_args_start_the_agent_unchanged() -> None:
    command = parse(*OPERATOR_ARGS_HOSTED)
    settings = command.settings
    assert comparable(settings) == expected(
        agent_id="2f1e6a0c-6f8f-4a4c-9d8e-2f6f1b0e4c11",
        spoke_kubeconfig="/spoke/config/kubeconfig",
        terminate_on_files=("/spoke/config/kubeconfig", "/spoke/hub-kubeconfig/kubeconfig"),
        status_sync_interval=90.0,
        eviction_grace_period=876000 * 3600.0,
        listen="0.0.0.0:9443",
        tls_min_version="VersionTLS13",
        tls_cipher_suites="TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
    )
    assert settings.eviction_grace_period >= EVICTION_DISABLED_AT
    assert settings.spoke_config_path == "/spoke/config/kubeconfig"
    assert command.notices == ()  # the TLS flags configure the HTTPS endpoint


# The arguments of the issue: a hand-written deployment of the Go agent, with
# leader election off and klog verbosity in both spellings klog accepts.
@pytest.mark.parametrize("verbosity", ["--v=2", "-v=2", "-v", "--v"])
def test_hand_written_go_agent_args(verbosity: str) -> None:
    args = [
        "/work",
        "agent",
        "--spoke-cluster-name=cluster1",
        "--workload-source-config=/spoke/hub-kubeconfig/kubeconfig",
        "--agent-id=agent-1",
        "--terminate-on-files=/spoke/hub-kubeconfig/kubeconfig",
        "--status-sync-interval=60s",
        "--kube-api-qps=20",
        "--hub-kube-api-qps=30",
        "--appliedmanifestwork-eviction-grace-period=1h0m0s",
        "--feature-gates=RawFeedbackJsonString=true,ExecutorValidatingCaches=false",
        "--disable-leader-election",
        verbosity,
    ]
    if verbosity in ("-v", "--v"):
        args.append("2")  # the separate-value form
    settings = parse(*args).settings
    assert comparable(settings) == expected(
        agent_id="agent-1",
        terminate_on_files=("/spoke/hub-kubeconfig/kubeconfig",),
        status_sync_interval=60.0,
        kube_api_qps=20.0,
        hub_kube_api_qps=30.0,
        eviction_grace_period=3600.0,
        feature_gates=frozenset({FEATURE_RAW_FEEDBACK_JSON_STRING}),
        leader_election=LeaderElectionSettings(disabled=True, identity=""),
        log_level="info",
    )


# -- defaults and each flag -----------------------------------------------------------------


def test_defaults() -> None:
    settings = settings_of()
    assert comparable(settings) == expected()
    assert settings.hub_kubeconfig == "/spoke/hub-kubeconfig/kubeconfig"
    assert settings.status_sync_interval == 10.0  # OCM's default (spec §1.1)
    assert settings.eviction_grace_period == 3600.0
    assert settings.workers == 10
    assert settings.max_json_raw_length == 1024
    assert settings.max_feedback_watch == 50
    assert settings.listen == "0.0.0.0:8443"
    assert settings.log_format == "json"
    assert settings.log_level == "info"
    assert settings.spoke_config_path is None
    election = settings.leader_election
    assert (election.lease_name, election.namespace) == (
        "work-agent-lock",
        "open-cluster-management-agent",
    )
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        137.0,
        107.0,
        26.0,
    )
    assert not election.disabled
    assert election.identity  # <hostname>_<uuid>
    assert settings.eviction_grace_period < EVICTION_DISABLED_AT


# (flag, value as typed, settings field, expected value)
VALUE_FLAGS = [
    ("--spoke-cluster-name", "other", "cluster_name", "other"),
    ("--cluster-name", "other", "cluster_name", "other"),
    ("--agent-id", "a1", "agent_id", "a1"),
    ("--workload-source-config", "/hub.kubeconfig", "hub_kubeconfig", "/hub.kubeconfig"),
    ("--hub-kubeconfig", "/hub.kubeconfig", "hub_kubeconfig", "/hub.kubeconfig"),
    ("--kubeconfig", "/spoke.kubeconfig", "kubeconfig", "/spoke.kubeconfig"),
    ("--spoke-kubeconfig", "/spoke.kubeconfig", "spoke_kubeconfig", "/spoke.kubeconfig"),
    ("--status-sync-interval", "1m30s", "status_sync_interval", 90.0),
    ("--status-sync-interval", "500ms", "status_sync_interval", 0.5),
    ("--appliedmanifestwork-eviction-grace-period", "876000h", "eviction_grace_period", 3.1536e9),
    ("--appliedmanifestwork-eviction-grace-period", "0s", "eviction_grace_period", 0.0),
    ("--max-json-raw-length", "2048", "max_json_raw_length", 2048),
    ("--max-feedback-watch", "0", "max_feedback_watch", 0),
    ("--workload-agent-workers", "1", "workers", 1),
    ("--kube-api-qps", "12.5", "kube_api_qps", 12.5),
    ("--kube-api-burst", "7", "kube_api_burst", 7),
    ("--hub-kube-api-qps", "-1", "hub_kube_api_qps", -1.0),
    ("--hub-kube-api-burst", "0x10", "hub_kube_api_burst", 16),
    ("--listen", "127.0.0.1:9000", "listen", "127.0.0.1:9000"),
    ("--listen", ":9000", "listen", ":9000"),
    ("--health-port", "8080", "listen", "0.0.0.0:8080"),
    ("--tls-min-version", "VersionTLS13", "tls_min_version", "VersionTLS13"),
    ("--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "tls_cipher_suites",
     "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("--log-format", "console", "log_format", "console"),
    ("--log-level", "WARNING", "log_level", "warning"),
    ("--terminate-on-files", "/a,b", "terminate_on_files", ("/a,b",)),
    ("--feature-gates", "AllAlpha=true", "feature_gates", frozenset(
        {FEATURE_EXECUTOR_VALIDATING_CACHES, FEATURE_RAW_FEEDBACK_JSON_STRING}
    )),
]  # fmt: skip


@pytest.mark.parametrize(("flag", "text", "field", "value"), VALUE_FLAGS)
@pytest.mark.parametrize("form", ["equals", "separate"])
def test_value_flags_in_both_forms(
    flag: str, text: str, field: str, value: object, form: str
) -> None:
    args = [f"{flag}={text}"] if form == "equals" else [flag, text]
    settings = parse("agent", "--spoke-cluster-name=cluster1", *args).settings
    assert getattr(settings, field) == value


@pytest.mark.parametrize(
    ("args", "namespace"),
    [
        (["--namespace=agents"], "agents"),
        (["--namespace", "agents"], "agents"),
    ],
)
def test_namespace_flag(args: list[str], namespace: str) -> None:
    settings = settings_of(*args)
    assert settings.namespace == settings.leader_election.namespace == namespace


def test_namespace_detected_from_the_service_account(tmp_path: Path) -> None:
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("klusterlet-agent\n")
    command = parse("agent", "--spoke-cluster-name=c1", namespace_file=namespace_file)
    assert command.settings.namespace == "klusterlet-agent"
    assert command.settings.component_namespace == "klusterlet-agent"
    explicit = parse(
        "agent", "--spoke-cluster-name=c1", "--namespace=mine", namespace_file=namespace_file
    )
    assert explicit.settings.namespace == explicit.settings.component_namespace == "mine"
    # Out of a cluster, library-go's build_info namespace differs from the Lease's default.
    outside = parse("agent", "--spoke-cluster-name=c1").settings
    assert outside.namespace == "open-cluster-management-agent"
    assert outside.component_namespace == "openshift-config-managed"


def test_leader_election_flags() -> None:
    election = settings_of(
        "--leader-election-lease-duration=60s",
        "--leader-election-renew-deadline",
        "40s",
        "--leader-election-retry-period=10s",
    ).leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        60.0,
        40.0,
        10.0,
    )


def test_zero_leader_election_durations_are_library_gos_defaults() -> None:
    # OCM v1.2.1 runs with these (library-go's LeaderElectionDefaulting); only a
    # negative or an inconsistent non-zero timing is refused.
    election = settings_of(
        "--leader-election-lease-duration=0",
        "--leader-election-renew-deadline=0s",
        "--leader-election-retry-period=0",
    ).leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        137.0,
        107.0,
        26.0,
    )
    lease = settings_of(
        "--leader-election-lease-duration=0", "--leader-election-renew-deadline=60s"
    )
    assert lease.leader_election.lease_duration == 137.0
    assert "retry period must be > 0" in usage_error(
        "agent", "--spoke-cluster-name=c1", "--leader-election-retry-period=-1s"
    )


@pytest.mark.parametrize(
    ("args", "disabled"),
    [
        (["--disable-leader-election"], True),
        (["--disable-leader-election=true"], True),
        (["--disable-leader-election=1"], True),
        (["--disable-leader-election=T"], True),
        (["--disable-leader-election=false"], False),
        (["--disable-leader-election=False"], False),
        (["--disable-leader-election", "--disable-leader-election=0"], False),
        ([], False),
    ],
)
def test_bool_flag_forms(args: list[str], disabled: bool) -> None:
    assert settings_of(*args).leader_election.disabled is disabled


def test_a_bool_flag_never_takes_the_next_argument() -> None:
    # pflag: "--disable-leader-election false" is the flag, then a stray argument.
    message = usage_error("agent", "--spoke-cluster-name=c1", "--disable-leader-election", "false")
    assert message == 'unexpected argument "false" for "workagent agent"'


def test_underscores_in_flag_names_read_as_dashes() -> None:
    settings = settings_of(
        "--status_sync_interval=45s",
        "--workload_agent_workers",
        "3",
        "--disable_leader_election",
        "--feature_gates=RawFeedbackJsonString=true",
    )
    assert settings.status_sync_interval == 45.0
    assert settings.workers == 3
    assert settings.leader_election.disabled
    assert settings.gate(FEATURE_RAW_FEEDBACK_JSON_STRING)
    # Only names are normalised, never values.
    assert settings_of("--agent_id=my_agent").agent_id == "my_agent"
    assert parse("agent", "--spoke_cluster_name=c1").settings.cluster_name == "c1"
    assert normalize_flag_name("max_json_raw_length") == "max-json-raw-length"


def test_a_value_may_start_with_a_dash() -> None:
    # pflag takes the next argument as the value whatever it looks like.
    assert settings_of("--agent-id", "-x").agent_id == "-x"
    assert settings_of("--agent-id", "--").agent_id == "--"


def test_repeated_flags_keep_the_last_value() -> None:
    settings = parse(
        "agent", "--cluster-name=first", "--spoke-cluster-name=second", "--kube-api-qps=1",
        "--kube-api-qps=2",
    ).settings  # fmt: skip
    assert settings.cluster_name == "second"
    assert settings.kube_api_qps == 2.0
    assert settings_of("--spoke-cluster-name=c2", "--cluster-name=c3").cluster_name == "c3"


def test_terminate_on_files_accumulates_without_splitting() -> None:
    settings = settings_of("--terminate-on-files=/a", "--terminate-on-files", "/b,c")
    assert settings.terminate_on_files == ("/a", "/b,c")


@pytest.mark.parametrize(
    ("args", "level"),
    [
        ([], "info"),
        (["-v=3"], "info"),
        (["-v=4"], "debug"),
        (["-v", "4"], "debug"),
        (["-v4"], "debug"),
        (["--v=10"], "debug"),
        (["--v", "0"], "info"),
        (["-v=-1"], "info"),
        (["--log-level=error"], "error"),
        (["-v=6", "--log-level=info"], "info"),
        (["--log-level=debug", "-v=0"], "debug"),
    ],
)
def test_verbosity_maps_to_log_levels(args: list[str], level: str) -> None:
    assert settings_of(*args).log_level == level


def test_hub_kubeconfig_is_the_hub_kubeconfig_with_a_notice() -> None:
    command = parse("agent", "--spoke-cluster-name=c1", "--hub-kubeconfig=/h")
    assert command.settings.hub_kubeconfig == "/h"
    assert [n.flag for n in command.notices] == ["--hub-kubeconfig"]
    later = parse(
        "agent", "--spoke-cluster-name=c1", "--hub-kubeconfig=/h", "--workload-source-config=/w"
    )
    assert later.settings.hub_kubeconfig == "/w"
    assert later.notices == ()


def test_listen_wins_over_health_port() -> None:
    assert settings_of("--health-port=9443", "--listen=127.0.0.1:1234").listen == "127.0.0.1:1234"
    assert settings_of("--health-port=0").listen == "0.0.0.0:8443"


def test_an_empty_listen_is_the_default_address() -> None:
    # The spec and library-go: --listen "" serves on 0.0.0.0:8443 (OCM v1.2.1 runs).
    assert settings_of("--listen=").listen == "0.0.0.0:8443"
    assert settings_of("--health-port=9443", "--listen=").listen == "0.0.0.0:9443"
    assert parse_bind_address("") == ("0.0.0.0", 8443)


# -- feature gates --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "enabled"),
    [
        ([], set()),
        (["--feature-gates=RawFeedbackJsonString=true"], {FEATURE_RAW_FEEDBACK_JSON_STRING}),
        (["--feature-gates= RawFeedbackJsonString = t ,"], {FEATURE_RAW_FEEDBACK_JSON_STRING}),
        (["--feature-gates=RawFeedbackJsonString=true,RawFeedbackJsonString=false"], set()),
        (
            ["--feature-gates=RawFeedbackJsonString=true", "--feature-gates=ExecutorValidatingCaches=1"],
            {FEATURE_RAW_FEEDBACK_JSON_STRING, FEATURE_EXECUTOR_VALIDATING_CACHES},
        ),
        (
            ["--feature-gates=RawFeedbackJsonString=true", "--feature-gates=RawFeedbackJsonString=false"],
            set(),
        ),
        (["--feature-gates=AllAlpha=true,RawFeedbackJsonString=false"], {FEATURE_EXECUTOR_VALIDATING_CACHES}),
        (["--feature-gates=RawFeedbackJsonString=false", "--feature-gates=AllAlpha=true"], {FEATURE_EXECUTOR_VALIDATING_CACHES}),
        (["--feature-gates=AllBeta=true"], set()),
        (["--feature-gates="], set()),
    ],
)  # fmt: skip
def test_feature_gates(args: list[str], enabled: set[str]) -> None:
    assert settings_of(*args).feature_gates == enabled


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Bogus=true", "unrecognized feature gate: Bogus"),
        ("RawFeedbackJsonString=yes", "invalid value of RawFeedbackJsonString=yes"),
        ("RawFeedbackJsonString", "missing bool value for RawFeedbackJsonString"),
        ("ManifestWorkReplicaSet=true", "unrecognized feature gate: ManifestWorkReplicaSet"),
    ],
)
def test_bad_feature_gates_name_the_gate(value: str, message: str) -> None:
    error = usage_error("agent", "--spoke-cluster-name=c1", f"--feature-gates={value}")
    assert error.startswith(f'invalid argument "{value}" for "--feature-gates" flag: {message}')


# -- refused command lines ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "--bogus"], "unknown flag: --bogus"),
        (["agent", "--bogus=1"], "unknown flag: --bogus"),
        (["agent", "--spoke-cluster"], "unknown flag: --spoke-cluster"),  # no abbreviations
        (["agent", "-x"], "unknown shorthand flag: 'x' in -x"),
        (["agent", "-spoke-cluster-name=c1"], "unknown shorthand flag: 's' in -spoke-cluster-name=c1"),
        (["agent", "---x"], "bad flag syntax: ---x"),
        (["agent", "--spoke-cluster-name=c1", "--namespace"], "flag needs an argument: --namespace"),
        (["agent", "--spoke-cluster-name=c1", "-v"], "flag needs an argument: 'v' in -v"),
        (["agent"], "--spoke-cluster-name is required"),
        (["agent", "--spoke-cluster-name=Cluster_1"], "--spoke-cluster-name 'Cluster_1' is not a valid namespace name"),
        (["agent", "--spoke-cluster-name=c1", "--workload-agent-workers=0"], "workload-agent-workers must be >= 1, got 0"),
        (["agent", "--spoke-cluster-name=c1", "--workload-agent-workers", "-3"], "workload-agent-workers must be >= 1, got -3"),
        (["agent", "--spoke-cluster-name=c1", "--workload-agent-workers=ten"], 'invalid argument "ten" for "--workload-agent-workers" flag: strconv.ParseInt: parsing "ten": invalid syntax'),
        (["agent", "--spoke-cluster-name=c1", "--status-sync-interval=10"], 'invalid argument "10" for "--status-sync-interval" flag: time: missing unit in duration "10"'),
        (["agent", "--spoke-cluster-name=c1", "--status-sync-interval=1d"], 'invalid argument "1d" for "--status-sync-interval" flag: time: unknown unit "d" in duration "1d"'),
        (["agent", "--spoke-cluster-name=c1", "--status-sync-interval=0s"], "--status-sync-interval must be > 0"),
        (["agent", "--spoke-cluster-name=c1", "--appliedmanifestwork-eviction-grace-period=-1s"], "--appliedmanifestwork-eviction-grace-period must not be negative"),
        (["agent", "--spoke-cluster-name=c1", "--max-json-raw-length=4294967296"], "value out of range"),
        (["agent", "--spoke-cluster-name=c1", "--kube-api-qps=fast"], 'invalid argument "fast" for "--kube-api-qps" flag: strconv.ParseFloat'),
        (["agent", "--spoke-cluster-name=c1", "--kube-api-qps=NaN"], "--kube-api-qps must be a finite number"),
        (["agent", "--spoke-cluster-name=c1", "--hub-kube-api-burst=-1"], "--hub-kube-api-burst must be >= 0"),
        (["agent", "--spoke-cluster-name=c1", "--disable-leader-election=yes"], 'invalid argument "yes" for "--disable-leader-election" flag: strconv.ParseBool: parsing "yes": invalid syntax'),
        (["agent", "--spoke-cluster-name=c1", "--workload-source-driver=grpc"], "--cloudevents-client-id is required with --workload-source-driver=grpc"),
        (["agent", "--spoke-cluster-name=c1", "--workload-source-driver=mqtt"], "--cloudevents-client-id is required with --workload-source-driver=mqtt"),
        (["agent", "--spoke-cluster-name=c1", "--workload-source-driver=kafka", "--cloudevents-client-id=c1-work-agent"], "--workload-source-driver=kafka is not supported (supported: kube, grpc, mqtt)"),
        (["agent", "--spoke-cluster-name=c1", "--workload-source-driver=pubsub", "--cloudevents-client-id=c1-work-agent"], "--workload-source-driver=pubsub is not supported"),
        (["agent", "--spoke-cluster-name=c1", "--workload-source-config="], "--workload-source-config (the hub kubeconfig) must not be empty"),
        (["agent", "--spoke-cluster-name=c1", "--log-format=text"], "--log-format 'text' is not one of json, console"),
        (["agent", "--spoke-cluster-name=c1", "--log-level=loud"], "--log-level 'loud' is not one of"),
        (["agent", "--spoke-cluster-name=c1", "--listen=8443"], "--listen: bind address '8443' must be host:port"),
        (["agent", "--spoke-cluster-name=c1", "--health-port=70000"], "invalid --health-port value 70000"),
        (["agent", "--spoke-cluster-name=c1", "--tls-min-version=TLS1.3"], "--tls-min-version: unknown tls version 'TLS1.3' (one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13)"),
        (["agent", "--spoke-cluster-name=c1", "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,ECDHE-RSA-AES128-GCM-SHA256"], "--tls-cipher-suites: Cipher suite ECDHE-RSA-AES128-GCM-SHA256 not supported or doesn't exist"),
        (["agent", "--spoke-cluster-name=c1", "--tls-cert-file=/etc/tls/tls.crt"], "--tls-cert-file and --tls-private-key-file must be given together"),
        (["agent", "--spoke-cluster-name=c1", "--tls-private-key-file=/etc/tls/tls.key"], "--tls-cert-file and --tls-private-key-file must be given together"),
        (["agent", "--spoke-cluster-name=c1", "--insecure-serving", "--tls-cert-file=/a", "--tls-private-key-file=/b"], "--insecure-serving serves plain HTTP: it cannot be combined with"),
        (["agent", "--spoke-cluster-name=c1", "--insecure-serving=maybe"], 'invalid argument "maybe" for "--insecure-serving" flag'),
        (["agent", "--spoke-cluster-name=c1", "--vmodule=foo"], 'invalid argument "foo" for "--vmodule" flag'),
        (["agent", "--spoke-cluster-name=c1", "--log-flush-frequency=often"], 'invalid argument "often" for "--log-flush-frequency" flag'),
        (["agent", "--spoke-cluster-name=c1", "--leader-election-lease-duration=10s"], "lease duration (10.0s) must be greater than the renew deadline (107.0s)"),
        (["agent", "--spoke-cluster-name=c1", "extra"], 'unexpected argument "extra" for "workagent agent"'),
        (["agent", "--spoke-cluster-name=c1", "--", "--namespace=x"], 'unexpected argument "--namespace=x"'),
        ([], "no command given"),
        (["/work"], "no command given"),
        (["--v=2"], "no command given"),
        (["hub"], 'unknown command "hub"'),
        (["--bogus", "agent"], "unknown flag: --bogus"),
    ],
)  # fmt: skip
def test_refused_command_lines(args: list[str], message: str) -> None:
    error = usage_error(*args)
    assert message in error
    assert "\n" not in error


# The text after "Error: " of OCM v1.2.1's `work` for the same command lines
# (run side by side; docs/operations.md#flags).
_OCM_V = (
    'invalid argument "abc" for "-v, --v" flag: strconv.ParseInt: parsing "abc": invalid syntax'
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "-v=abc"], _OCM_V),
        (["agent", "--v", "abc"], _OCM_V),
        (["--v=abc", "agent"], _OCM_V),
        (["agent", "--help=maybe"], 'invalid argument "maybe" for "-h, --help" flag: strconv.ParseBool: parsing "maybe": invalid syntax'),
        (["agent", "-hx"], "unknown shorthand flag: 'x' in -x"),
        (["agent", '--kube-api-qps=a"b'], r'invalid argument "a\"b" for "--kube-api-qps" flag: strconv.ParseFloat: parsing "a\"b": invalid syntax'),
        (["agent", "--status-sync-interval=a\\b"], r'invalid argument "a\\b" for "--status-sync-interval" flag: time: invalid duration "a\\b"'),
        (["agent", "--kube-api-burst=a\tb"], r'invalid argument "a\tb" for "--kube-api-burst" flag: strconv.ParseInt: parsing "a\tb": invalid syntax'),
        (["agent", "--kube-api-qps=0x10"], 'invalid argument "0x10" for "--kube-api-qps" flag: strconv.ParseFloat: parsing "0x10": invalid syntax'),
        (["agent", "--feature-gates=Unknown=true,RawFeedbackJsonString=maybe"], 'invalid argument "Unknown=true,RawFeedbackJsonString=maybe" for "--feature-gates" flag: invalid value of RawFeedbackJsonString=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax'),
        (["agent", "-help"], "unknown shorthand flag: 'e' in -elp"),
        (["agent", "-v"], "flag needs an argument: 'v' in -v"),
        # The flags are parsed before help is considered, as with cobra.
        (["agent", "--bogus", "--help"], "unknown flag: --bogus"),
        (["agent", "--help", "--bogus"], "unknown flag: --bogus"),
        (["agent", "-h", "--status-sync-interval=abc"], 'invalid argument "abc" for "--status-sync-interval" flag: time: invalid duration "abc"'),
        (["agent", "--status-sync-interval=5"], 'invalid argument "5" for "--status-sync-interval" flag: time: missing unit in duration "5"'),
        (["agent", "--vmodule=abc"], 'invalid argument "abc" for "--vmodule" flag: syntax error: expect comma-separated list of filename=N'),
        (["agent", "--vmodule=a=1=2"], 'invalid argument "a=1=2" for "--vmodule" flag: syntax error: expect comma-separated list of filename=N'),
        (["agent", "--vmodule=a=99999999999"], 'invalid argument "a=99999999999" for "--vmodule" flag: syntax error: expect comma-separated list of filename=N'),
        (["agent", "--vmodule=a=-1"], 'invalid argument "a=-1" for "--vmodule" flag: negative value for vmodule level'),
        (["agent", "--log-flush-frequency=5"], 'invalid argument "5" for "--log-flush-frequency" flag: parse error'),
        (["agent", "--log-flush-frequency=often"], 'invalid argument "often" for "--log-flush-frequency" flag: parse error'),
        (["agent", "--kube-api-qps=1e39"], 'invalid argument "1e39" for "--kube-api-qps" flag: strconv.ParseFloat: parsing "1e39": value out of range'),
        (["agent", "--hub-kube-api-qps=-1e39"], 'invalid argument "-1e39" for "--hub-kube-api-qps" flag: strconv.ParseFloat: parsing "-1e39": value out of range'),
        (["agent", "--kube-api-qps=3.4028236e38"], 'invalid argument "3.4028236e38" for "--kube-api-qps" flag: strconv.ParseFloat: parsing "3.4028236e38": value out of range'),
        (["agent", "--feature-gates=RawFeedbackJsonString"], 'invalid argument "RawFeedbackJsonString" for "--feature-gates" flag: missing bool value for RawFeedbackJsonString'),
        (["--bogus"], "unknown flag: --bogus"),
        (["-x"], "unknown shorthand flag: 'x' in -x"),
        (["--kubeconfig"], "flag needs an argument: --kubeconfig"),
        (["--version=maybe"], 'invalid argument "maybe" for "--version" flag: strconv.ParseBool: parsing "maybe": invalid syntax'),
    ],
)  # fmt: skip
def test_refusals_in_ocm_words(args: list[str], message: str) -> None:
    assert usage_error(*args) == message


def test_klog_flags_accept_what_klog_accepts() -> None:
    # Empty vmodule items are skipped by klog; float32 rounds 3.40282356e38 to its maximum.
    command = parse(
        "agent",
        "--spoke-cluster-name=c1",
        "--vmodule=a=1,,b*=2",
        "--vmodule=",
        "--log-flush-frequency=1m",
        "--kube-api-qps=3.40282356e38",
    )
    assert command.settings.kube_api_qps == 3.40282356e38


def test_disabled_leader_election_skips_its_timing_checks() -> None:
    settings = settings_of("--disable-leader-election", "--leader-election-lease-duration=1s")
    assert settings.leader_election.disabled


def test_ignored_flags_warn_and_change_nothing() -> None:
    command = parse(
        "agent",
        "--spoke-cluster-name=cluster1",
        "--cloudevents-client-id=cluster1-work-agent",
        "--cloudevents-client-codecs=manifest,manifestbundle",
        "--hub-kubeconfig-dir=/spoke/hub-kubeconfig",
        "--config=/tmp/config.yaml",
        "--vmodule=controller*=4",
        "--log-flush-frequency=5s",
        "--workload-source-driver=kube",
    )
    assert comparable(command.settings) == expected()
    assert [n.flag for n in command.notices] == [
        "--vmodule",
        "--cloudevents-client-codecs",
        "--hub-kubeconfig-dir",
        "--config",
        "--cloudevents-client-id",
    ]
    for notice in command.notices:
        assert notice.message.startswith(f"{notice.flag} is ignored: ")


def test_serving_is_https_unless_insecure_serving() -> None:
    assert settings_of().insecure_serving is False
    assert settings_of("--insecure-serving").insecure_serving is True
    assert settings_of("--insecure-serving=false").insecure_serving is False


def test_tls_flags_under_insecure_serving_warn_that_they_change_nothing() -> None:
    command = parse(
        "agent",
        "--spoke-cluster-name=cluster1",
        "--insecure-serving",
        "--tls-min-version=VersionTLS13",
        "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    )
    assert [n.flag for n in command.notices] == ["--tls-min-version", "--tls-cipher-suites"]
    assert all("--insecure-serving serves plain HTTP" in n.message for n in command.notices)


# -- help and version -----------------------------------------------------------------------


def spellings(flag: Flag) -> tuple[str, ...]:
    """Every way to write ``flag``, ``--name`` first."""
    short = (f"-{flag.shorthand}",) if flag.shorthand else ()
    return (f"--{flag.name}", *(f"--{alias}" for alias in flag.aliases), *short)


def test_help_lists_every_flag_with_its_default() -> None:
    command = parse_command_line(["agent", "--help"])
    assert isinstance(command, ShowText)
    text = command.text
    for flag in agent_flags():
        for spelling in spellings(flag):
            assert re.search(rf"(^|[ (]){re.escape(spelling)}\b", text, re.M), spelling
    # Every flag's entry ends with its default, in Go's notation.
    entries = re.split(r"\n  (?=-)", text.split("flags:", 1)[1])
    flag_entries = [e for e in entries if not e.startswith("-h, --help")]
    assert len([e for e in flag_entries if "(default " in e]) == len(agent_flags())
    for default in (
        "(default 10s)",
        "(default 1h0m0s)",
        "(default 2m17s)",
        "(default 1m47s)",
        "(default 26s)",
        '(default "/spoke/hub-kubeconfig/kubeconfig")',
        '(default "0.0.0.0:8443")',
        "(default 50)",
        "(default 100)",
        "(default 1024)",
        "(default 10)",
        "(default false)",
        "(default [])",
        '(default "kube")',
        '(default "json")',
    ):
        assert default in text


@pytest.mark.parametrize(
    "args",
    [
        ["agent", "--help"],
        ["agent", "-h"],
        ["/work", "agent", "--spoke-cluster-name=c1", "--help"],
        ["agent", "--help=true"],
        ["agent", "-h=true"],
        ["help", "agent"],  # cobra's help command
        ["/work", "help", "agent"],
    ],
)
def test_agent_help_forms(args: list[str]) -> None:
    command = parse_command_line(args)
    assert isinstance(command, ShowText)
    assert command.text.startswith("Usage:\n  workagent agent [flags]")


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"], ["/work", "--help"]])
def test_root_help(args: list[str]) -> None:
    command = parse_command_line(args)
    assert isinstance(command, ShowText)
    assert "workagent agent [flags]" in command.text


def test_version() -> None:
    command = parse_command_line(["--version"])
    assert isinstance(command, ShowText)
    assert re.fullmatch(r"workagent version \S+\n", command.text)


def test_flags_may_precede_the_command() -> None:
    # cobra treats klog's flags as global: `work --v=4 agent ...` is valid for the Go binary.
    settings = parse("-v", "4", "agent", "--spoke-cluster-name=c1").settings
    assert settings.log_level == "debug"
    settings = parse("--namespace", "agent", "agent", "--spoke-cluster-name=c1").settings
    assert settings.namespace == "agent"


# -- Go value syntax ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("10", 10), ("-3", -3), ("+7", 7), ("0", 0), ("010", 8), ("0x1F", 31), ("0o17", 15),
     ("0b101", 5), ("1_000", 1000), ("0_10", 8)],
)  # fmt: skip
def test_go_ints(text: str, value: int) -> None:
    assert parse_go_int(text) == value


@pytest.mark.parametrize("text", ["", "ten", "1.5", "08", "1__0", "_1", "1_", " 1", "0x", "1e3"])
def test_bad_go_ints(text: str) -> None:
    with pytest.raises(ValueError, match=r"strconv\.ParseInt"):
        parse_go_int(text)


def test_go_int_ranges() -> None:
    assert parse_go_int("2147483647", 32) == 2**31 - 1
    with pytest.raises(ValueError, match="out of range"):
        parse_go_int("2147483648", 32)
    assert parse_go_int("-9223372036854775808") == -(2**63)
    with pytest.raises(ValueError, match="out of range"):
        parse_go_int("9223372036854775808")


# Values and refusals as Go 1.26's strconv.ParseFloat(s, 32) gives them (pflag's float32).
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("50", 50.0),
        ("1e2", 100.0),
        ("-0.5", -0.5),
        ("0x1p4", 16.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("1.e5", 100000.0),
        ("1_000", 1000.0),
        ("1_0.5", 10.5),
        ("0x1_0p0", 16.0),
        ("0x_1p0", 1.0),
        ("0x1.8p1", 3.0),
        ("0x.8p1", 1.0),
        ("0x1.p0", 1.0),
        ("0x1p1_0", 1024.0),
        ("0X1P-2", 0.25),
        ("00.1", 0.1),
        ("1e-400", 0.0),
        ("-Inf", -math.inf),
        ("+Infinity", math.inf),
    ],
)
def test_go_floats(text: str, value: float) -> None:
    assert parse_go_float(text, 32) == pytest.approx(value, rel=1e-7)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "fast",
        " 5",
        "5 ",
        "inf ",
        "0x10",
        "0x1.8",
        "0x1p",
        "0xp1",
        "0x.p0",
        "+-1",
        "+nan",
        "infin",
        "1e",
        "1e+",
        ".",
        "1_e5",
        "1__0",
        "_1",
        "1_",
        "0b101",
        "0o7",
        "\u0663",
    ],
)
def test_bad_go_floats(text: str) -> None:
    with pytest.raises(ValueError, match=r"strconv\.ParseFloat: parsing .*: invalid syntax"):
        parse_go_float(text, 32)


def test_go_float_special_values() -> None:
    assert math.isnan(parse_go_float("NaN")) and math.isnan(parse_go_float("nan", 32))
    for text in ("1e5_0", "3.5e38"):
        with pytest.raises(ValueError, match="value out of range"):
            parse_go_float(text, 32)


def test_go_float_ranges() -> None:
    # strconv.ParseFloat(s, 32): out of float32's range after rounding; "inf" is a value.
    assert parse_go_float("1e39") == 1e39
    assert parse_go_float("3.40282356e38", 32) == 3.40282356e38
    assert parse_go_float("Inf", 32) == math.inf
    assert parse_go_float("-infinity", 32) == -math.inf
    for text, bits in (
        ("1e39", 32),
        ("-1e39", 32),
        ("0x1p200", 32),
        ("1e400", 64),
        ("0x1p2000", 64),
    ):
        with pytest.raises(ValueError, match=f'parsing "{text}": value out of range'):
            parse_go_float(text, bits)


def test_go_bools() -> None:
    for text in ("1", "t", "T", "TRUE", "true", "True"):
        assert parse_go_bool(text) is True
    for text in ("0", "f", "F", "FALSE", "false", "False"):
        assert parse_go_bool(text) is False
    for text in ("yes", "on", "tRUE", ""):
        with pytest.raises(ValueError, match=r"strconv\.ParseBool"):
            parse_go_bool(text)


# -- the entry point ------------------------------------------------------------------------


@pytest.fixture
def fake_agent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[AgentSettings]]:
    """A stand-in ``workagent.agent`` module whose ``run`` records its settings."""
    calls: list[AgentSettings] = []

    def run(settings: AgentSettings) -> int:
        calls.append(settings)
        return 0

    module = types.ModuleType("workagent.agent")
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "workagent.agent", module)
    monkeypatch.setattr("ocmkit.runtime.configure_logging", lambda *a, **k: None)
    yield calls


def test_execute_runs_the_agent_with_the_settings(fake_agent: list[AgentSettings]) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert entry.execute(OPERATOR_ARGS, stdout=out, stderr=err) == 0
    assert [s.cluster_name for s in fake_agent] == ["cluster1"]
    assert fake_agent[0].status_sync_interval == 60.0
    assert out.getvalue() == err.getvalue() == ""


def test_execute_passes_the_agent_exit_code(
    fake_agent: list[AgentSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = sys.modules["workagent.agent"]
    monkeypatch.setattr(module, "run", lambda settings: 1)
    assert entry.execute(["agent", "--spoke-cluster-name=c1"], stderr=io.StringIO()) == 1


def test_execute_without_an_agent_in_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes the import fail as if the module did not exist.
    monkeypatch.setitem(sys.modules, "workagent.agent", None)
    monkeypatch.setattr("ocmkit.runtime.configure_logging", lambda *a, **k: None)
    err = io.StringIO()
    assert entry.execute(["agent", "--spoke-cluster-name=c1"], stderr=err) == 1
    assert err.getvalue() == "workagent: the agent is not available in this build\n"


def test_execute_usage_error_is_one_line_and_exit_2() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert entry.execute(["agent", "--bogus"], stdout=out, stderr=err) == 2
    assert err.getvalue() == "workagent: unknown flag: --bogus\n"
    assert out.getvalue() == ""


def test_a_refused_value_keeps_its_spaces_in_the_one_line_message() -> None:
    err = io.StringIO()
    assert entry.execute(["agent", "--kube-api-burst=1  2 "], stderr=err) == 2
    assert err.getvalue() == (
        'workagent: invalid argument "1  2 " for "--kube-api-burst" flag: '
        'strconv.ParseInt: parsing "1  2 ": invalid syntax\n'
    )
    # Line breaks of a message (not of a value: %q escapes those) become one space.
    assert one_line(ValueError("first  line\n   second\r\n")) == "first  line second"


def test_execute_help_goes_to_stdout() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert entry.execute(["agent", "--help"], stdout=out, stderr=err) == 0
    assert "--status-sync-interval duration" in out.getvalue()
    assert err.getvalue() == ""


def test_console_script_refuses_an_unknown_flag() -> None:
    done = run_console_script("workagent", "agent", "--bogus")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "workagent: unknown flag: --bogus\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "--status-sync-interval=abc"], 'invalid argument "abc" for "--status-sync-interval" flag: time: invalid duration "abc"'),
        (["agent", "--bogus", "--help"], "unknown flag: --bogus"),
        (["--v=x", "agent"], 'invalid argument "x" for "-v, --v" flag: strconv.ParseInt: parsing "x": invalid syntax'),
    ],
)  # fmt: skip
def test_console_script_refusals_are_one_line_in_ocm_words(args: list[str], message: str) -> None:
    done = run_console_script("workagent", *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"workagent: {message}\n")


_UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.mark.parametrize(
    ("hub", "spoke", "error"),
    [
        ("missing", "good", "hub kubeconfig not found: {missing}"),
        ("dir", "good", "cannot read hub kubeconfig {dir}: Is a directory"),
        ("broken", "good", "hub kubeconfig {broken} is not valid YAML: line 2, column 1: "),
        ("good", "missing", "spoke: kubeconfig not found: {missing}"),
        ("good", "dir", "spoke: cannot read kubeconfig {dir}: Is a directory"),
    ],
)
def test_console_script_unusable_kubeconfig_is_one_log_line_and_exit_2(
    tmp_path: Path, hub: str, spoke: str, error: str
) -> None:
    # OCM's agent ends such a start with klog.Fatal (exit 255) and the file's error.
    paths = {name: tmp_path / name for name in ("missing", "dir", "broken", "good")}
    paths["dir"].mkdir()
    paths["broken"].write_text("clusters: [\n")
    paths["good"].write_text(_UNREACHABLE_KUBECONFIG)
    done = run_console_script(
        "workagent",
        "agent",
        "--spoke-cluster-name=c1",
        f"--workload-source-config={paths[hub]}",
        f"--kubeconfig={paths[spoke]}",
        "--disable-leader-election",
        "--insecure-serving",
        "--listen=127.0.0.1:0",
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = json.loads(done.stderr.splitlines()[-1])
    assert last["event"] == "invalid kubeconfig"
    assert last["error"].startswith(error.format(**paths)), last


def test_console_script_help_command() -> None:
    helped = run_console_script("workagent", "help", "agent", check=True)
    assert helped.stdout.startswith("Usage:\n  workagent agent [flags]")


def test_console_script_version_and_help() -> None:
    version = run_console_script("workagent", "--version", check=True)
    assert version.stdout.startswith("workagent version ")
    helped = run_console_script("workagent", "agent", "--help", check=True)
    assert "--appliedmanifestwork-eviction-grace-period duration" in helped.stdout


# -- documentation --------------------------------------------------------------------------


def test_operations_doc_covers_every_flag() -> None:
    doc = (REPO / "docs" / "operations.md").read_text()
    for flag in agent_flag_set().flags:
        for spelling in spellings(flag):
            assert f"`{spelling}" in doc, f"{spelling} is missing from docs/operations.md"


# -- workagent diff -------------------------------------------------------------------------


def test_diff_command_line() -> None:
    from ocmkit.flags import ShowText
    from workagent.cli import DiffCommand, parse_command_line

    command = parse_command_line(["diff", "-f", "work.yaml", "--kubeconfig=spoke.kubeconfig"])
    assert command == DiffCommand("work.yaml", "", "", "", "spoke.kubeconfig")
    command = parse_command_line(
        ["diff", "--work", "w", "--cluster-name", "c1", "--workload-source-config", "hub.kc"]
    )
    assert command == DiffCommand("", "w", "hub.kc", "c1", "")
    shown = parse_command_line(["diff", "--help"])
    assert isinstance(shown, ShowText) and "--filename" in shown.text and "-f" in shown.text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["diff"], "exactly one of -f FILE and --work NAME"),
        (["diff", "-f", "a", "--work", "w"], "exactly one of -f FILE and --work NAME"),
        (["diff", "--work", "w"], "--work needs --hub-kubeconfig and --spoke-cluster-name"),
        (["diff", "-f", "a", "extra"], 'unexpected argument "extra"'),
        (["diff", "--bogus"], "unknown flag: --bogus"),
        (["--v=2", "diff", "-f", "a"], 'the flags of "workagent diff" come after the command'),
    ],
)
def test_diff_usage_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    err = io.StringIO()
    assert entry.execute(args, stdout=io.StringIO(), stderr=err) == 2
    assert err.getvalue().count("\n") == 1 and message in err.getvalue()


def test_klusterlet_grpc_command_line_selects_the_grpc_source() -> None:
    """The argument list OCM's Klusterlet passes in gRPC mode parses as it means."""
    command = parse(
        "/work",
        "agent",
        "--spoke-cluster-name=cluster1",
        "--workload-source-driver=grpc",
        "--workload-source-config=/spoke/hub-kubeconfig/config.yaml",
        "--cloudevents-client-id=cluster1-work-agent",
        "--cloudevents-client-codecs=manifestbundle",
    )
    settings = command.settings
    assert settings.workload_source_driver == "grpc"
    assert settings.hub_kubeconfig == "/spoke/hub-kubeconfig/config.yaml"
    assert settings.cloudevents_client_id == "cluster1-work-agent"
    assert [n.flag for n in command.notices] == ["--cloudevents-client-codecs"]


# String slices are read as pflag reads them: the first record of Go's encoding/csv
# (values and messages as Go 1.26's csv.Reader gives them; the messages also as
# OCM v1.2.1's agent prints them).
@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("", ()),
        ("a", ("a",)),
        ("manifest,manifestbundle", ("manifest", "manifestbundle")),
        (",", ("", "")),
        ('"a,b",c', ("a,b", "c")),
        ('"a""b"', ('a"b',)),
        ('"",', ("", "")),
        (" a , b", (" a ", " b")),
        ("a\nb", ("a",)),
        ("\n\na,b\nc", ("a", "b")),
        ('"a\r\nb"', ("a\nb",)),
        ("a\r", ("a",)),
        ("a\rb", ("a\rb",)),
        ("é,\udcff", ("é", "\udcff")),
    ],
)
def test_string_slices_are_a_go_csv_record(text: str, fields: tuple[str, ...]) -> None:
    assert parse_go_csv_record(text) == fields


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('a"b', 'parse error on line 1, column 2: bare " in non-quoted-field'),
        (' "a"', 'parse error on line 1, column 2: bare " in non-quoted-field'),
        ('a,b"', 'parse error on line 1, column 4: bare " in non-quoted-field'),
        ('é"', 'parse error on line 1, column 3: bare " in non-quoted-field'),
        ('"a', 'parse error on line 1, column 3: extraneous or missing " in quoted-field'),
        ('"a"b', 'parse error on line 1, column 3: extraneous or missing " in quoted-field'),
        ('a,"b', 'parse error on line 1, column 5: extraneous or missing " in quoted-field'),
        (
            '"a\nb',
            'record on line 1; parse error on line 2, column 2: extraneous or missing " in '
            "quoted-field",
        ),
        ('\n\n"a" b', 'parse error on line 3, column 3: extraneous or missing " in quoted-field'),
        ("\n", "EOF"),
        ("\r", "EOF"),
    ],
)
def test_string_slice_quote_errors_are_go_csv_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_go_csv_record(text)
    assert str(caught.value) == message


def test_a_malformed_string_slice_refuses_the_command_line() -> None:
    assert usage_error("agent", "--spoke-cluster-name=c1", '--cloudevents-client-codecs=a"b') == (
        'invalid argument "a\\"b" for "--cloudevents-client-codecs" flag: '
        'parse error on line 1, column 2: bare " in non-quoted-field'
    )
    command = parse("agent", "--spoke-cluster-name=c1", '--cloudevents-client-codecs="a,b",c')
    assert [n.flag for n in command.notices] == ["--cloudevents-client-codecs"]


def test_terminate_on_files_refuses_an_empty_name_or_a_directory(tmp_path: Path) -> None:
    # OCM's agent panics at start on both (library-go's file observer); a file that
    # does not exist yet is taken: it may appear later.
    base = ("agent", "--spoke-cluster-name=c1")
    assert usage_error(*base, "--terminate-on-files=") == (
        "--terminate-on-files: observed file name must not be empty"
    )
    assert usage_error(*base, "--terminate-on-files", str(tmp_path)) == (
        f"--terminate-on-files: {tmp_path} is a directory"
    )
    missing = str(tmp_path / "later")
    assert settings_of(f"--terminate-on-files={missing}").terminate_on_files == (missing,)
    # Checked once every flag is parsed, as OCM's panic comes only then.
    assert usage_error(*base, "--terminate-on-files=", "--status-sync-interval=x") == (
        'invalid argument "x" for "--status-sync-interval" flag: time: invalid duration "x"'
    )
