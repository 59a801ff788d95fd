"""The ``hubcontroller`` command line: OCM's work-manager and webhook-server flags."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

import hubcontroller.__main__ as entry
from hubcontroller.cli import (
    GrpcServerCommand,
    ManagerCommand,
    WebhookCommand,
    manager_flags,
    parse_command_line,
    webhook_flags,
)
from hubcontroller.settings import (
    KNOWN_HUB_GATES,
    HubManagerSettings,
    WebhookFlags,
)
from ocmkit.command import import_optional
from ocmkit.flags import ShowText, UsageError
from schemas.wire import (
    GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK,
    GATE_CLOUD_EVENTS_DRIVERS,
    GATE_MANIFEST_WORK_REPLICA_SET,
    GATE_NIL_EXECUTOR_VALIDATING,
)
from tests.support.processes import run_console_script

NO_FILE = Path("/nonexistent/serviceaccount/namespace")


def manager(*args: str, namespace_file: Path = NO_FILE) -> ManagerCommand:
    """Parse ``hubcontroller manager <args>``."""
    command = parse_command_line(["manager", *args], namespace_file=namespace_file)
    assert isinstance(command, ManagerCommand), command
    return command


def webhook(*args: str) -> WebhookFlags:
    """Flags of ``hubcontroller webhook-server <args>``."""
    command = parse_command_line(["webhook-server", *args], namespace_file=NO_FILE)
    assert isinstance(command, WebhookCommand), command
    return command.settings


def usage_error(*args: str) -> str:
    """The message of a command line that must be refused."""
    with pytest.raises(UsageError) as caught:
        parse_command_line(list(args), namespace_file=NO_FILE)
    return str(caught.value)


def run(argv: Sequence[str]) -> tuple[int, str, str]:
    """``execute(argv)`` with captured output: (code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = entry.execute(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# -- manager ------------------------------------------------------------------------------


def test_manager_defaults_are_ocm_defaults() -> None:
    settings = manager().settings
    assert settings.kubeconfig == ""
    assert settings.work_driver == "kube"
    assert settings.work_driver_config == ""
    assert settings.feature_gates == frozenset()
    assert (settings.kube_api_qps, settings.kube_api_burst) == (50.0, 100)
    assert settings.listen == "0.0.0.0:8443"
    # HTTPS with a certificate the manager makes itself, TLS 1.2 and up, OpenSSL's suites.
    assert not settings.insecure_serving
    assert (settings.tls_cert_file, settings.tls_private_key_file) == ("", "")
    assert (settings.tls_min_version, settings.tls_cipher_suites) == ("", "")
    assert settings.workers == 5
    assert settings.resync_seconds == 1800.0
    election = settings.leader_election
    assert (election.lease_name, election.namespace) == (
        "work-manager-lock",
        "open-cluster-management-hub",
    )
    assert not election.disabled
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        137.0,
        107.0,
        26.0,
    )
    assert (settings.log_format, settings.log_level) == ("json", "info")


def test_manager_takes_the_operator_argument_list() -> None:
    """As the cluster-manager operator starts OCM's binary: "/work", "manager", ..."""
    command = parse_command_line(
        [
            "/work",
            "manager",
            "--kubeconfig=/var/run/secrets/hub/kubeconfig",
            "--feature-gates=ManifestWorkReplicaSet=true",
            "--feature-gates=CleanUpCompletedManifestWork=true",
            "--disable-leader-election",
            "--work-driver=kube",
        ],
        namespace_file=NO_FILE,
    )
    assert isinstance(command, ManagerCommand)
    settings = command.settings
    assert settings.kubeconfig == "/var/run/secrets/hub/kubeconfig"
    assert settings.feature_gates == {
        GATE_MANIFEST_WORK_REPLICA_SET,
        GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK,
    }
    assert settings.leader_election.disabled
    assert command.notices == ()


def test_manager_flag_forms() -> None:
    settings = manager(
        "--kubeconfig",
        "/hub.kubeconfig",
        "--work_driver_config=/works.kubeconfig",
        "--kube-api-qps=20.5",
        "--kube-api-burst",
        "0x20",
        "--leader-election-lease-duration=1m",
        "--leader-election-renew-deadline=40s",
        "--leader-election-retry-period=10s",
        "--namespace=hub-ns",
        "--listen=127.0.0.1:9443",
        "--tls-cert-file=/tls/tls.crt",
        "--tls-private-key-file",
        "/tls/tls.key",
        "--tls-min-version=VersionTLS13",
        "--tls_cipher_suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
        "--terminate-on-files=/a",
        "--terminate-on-files",
        "/b",
        "-v4",
    ).settings
    assert settings.kubeconfig == "/hub.kubeconfig"
    assert settings.work_driver_config == "/works.kubeconfig"
    assert (settings.kube_api_qps, settings.kube_api_burst) == (20.5, 32)
    election = settings.leader_election
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (
        60.0,
        40.0,
        10.0,
    )
    assert settings.namespace == "hub-ns"
    assert settings.listen == "127.0.0.1:9443"
    assert (settings.tls_cert_file, settings.tls_private_key_file) == (
        "/tls/tls.crt",
        "/tls/tls.key",
    )
    assert settings.tls_min_version == "VersionTLS13"
    assert settings.tls_cipher_suites == (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256"
    )
    assert settings.terminate_on_files == ("/a", "/b")
    assert settings.log_level == "debug"


def test_flags_may_come_before_the_command() -> None:
    command = parse_command_line(["--v", "4", "manager"], namespace_file=NO_FILE)
    assert isinstance(command, ManagerCommand)
    assert command.settings.log_level == "debug"


def test_namespace_comes_from_the_pod_when_not_given(tmp_path: Path) -> None:
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("cluster-manager-ns\n")
    assert manager(namespace_file=namespace_file).settings.namespace == "cluster-manager-ns"
    assert manager(namespace_file=namespace_file).settings.component_namespace == (
        "cluster-manager-ns"
    )
    assert manager("--namespace=x", namespace_file=namespace_file).settings.namespace == "x"
    assert manager().settings.component_namespace == "openshift-config-managed"


def test_grpc_server_namespace_names_its_build_info(tmp_path: Path) -> None:
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("open-cluster-management-hub\n")
    for argv, file, expected in (
        (["grpc-server"], NO_FILE, "openshift-config-managed"),
        (["grpc-server"], namespace_file, "open-cluster-management-hub"),
        (["server", "grpc", "--namespace=ns1"], namespace_file, "ns1"),
    ):
        command = parse_command_line(argv, namespace_file=file)
        assert isinstance(command, GrpcServerCommand), argv
        assert command.settings.component_namespace == expected, argv
        assert not command.notices, "--namespace is no longer an ignored flag"


def test_grpc_server_takes_any_positive_heartbeat_interval() -> None:
    # OCM v1.2.1's server runs with 1s (later sdk-go releases want 10s at least).
    command = parse_command_line(["grpc-server", "--broker-heartbeat-interval=1s"])
    assert isinstance(command, GrpcServerCommand)
    assert command.settings.heartbeat_interval == 1.0
    for value in ("0", "-1s"):
        assert "must be greater than 0 when heartbeat is enabled" in usage_error(
            "grpc-server", f"--broker-heartbeat-interval={value}"
        )
    off = ["grpc-server", "--broker-heartbeat-disabled", "--broker-heartbeat-interval=0"]
    assert isinstance(parse_command_line(off), GrpcServerCommand)


def test_manager_runs_with_an_empty_listen_on_the_default_address() -> None:
    # Validated at parse time: "" is library-go's 0.0.0.0:8443 (see tests/unit/test_cli.py).
    assert manager("--listen=").settings.listen == ""


def test_feature_gates_all_alpha_and_explicit_false() -> None:
    gates = manager("--feature-gates=AllAlpha=true,NilExecutorValidating=false").settings
    assert gates.feature_gates == KNOWN_HUB_GATES - {GATE_NIL_EXECUTOR_VALIDATING}
    gates = manager("--feature-gates=CleanUpCompletedManifestWork=true").settings
    assert gates.gate(GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK)
    assert not gates.gate(GATE_MANIFEST_WORK_REPLICA_SET)


def test_the_command_line_loads_no_models() -> None:
    """``--help`` and refused flags stay light: the gate names come from schemas.wire,
    which loads no pydantic model (checked in a fresh interpreter: this one has them)."""
    script = (
        "import sys, hubcontroller.cli; print(sorted(m for m in sys.modules if 'pydantic' in m))"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "[]"


def test_ignored_flags_are_reported() -> None:
    command = manager(
        "--cloudevents-client-id=abc",
        "--config=/x",
        "--vmodule=foo=2",
        "--log-flush-frequency=10s",
        "--feature-gates=CloudEventsDrivers=true",
    )
    flags = [notice.flag for notice in command.notices]
    assert flags == [
        "--vmodule",
        "--cloudevents-client-id",
        "--config",
        "--feature-gates",
    ]
    assert GATE_CLOUD_EVENTS_DRIVERS in command.notices[-1].message


def test_tls_flags_configure_the_endpoint_as_the_operator_passes_them() -> None:
    """OCM's operator may pass library-go's TLS flags: they take effect, no notice."""
    command = manager(
        "--tls-min-version=VersionTLS12",
        "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    )
    assert command.notices == ()
    assert command.settings.tls_min_version == "VersionTLS12"


def test_serving_is_https_unless_insecure_serving() -> None:
    assert manager().settings.insecure_serving is False
    assert manager("--insecure-serving").settings.insecure_serving is True
    assert manager("--insecure-serving=false").settings.insecure_serving is False


def test_tls_flags_under_insecure_serving_warn_that_they_change_nothing() -> None:
    command = manager(
        "--insecure-serving",
        "--tls-min-version=VersionTLS13",
        "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    )
    assert [n.flag for n in command.notices] == ["--tls-min-version", "--tls-cipher-suites"]
    assert all("--insecure-serving serves plain HTTP" in n.message for n in command.notices)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--bogus"], "unknown flag: --bogus"),
        (["--kube-api-burst=lots"], 'invalid argument "lots" for "--kube-api-burst" flag'),
        (["--leader-election-lease-duration=5"], "missing unit in duration"),
        (["--feature-gates=Nope=true"], "unrecognized feature gate: Nope"),
        (["--feature-gates=ManifestWorkReplicaSet=yes"], "invalid value of"),
        (["--work-driver=grpc"], "--work-driver=grpc is not supported"),
        (["--listen=nowhere"], "--listen"),
        (["--leader-election-lease-duration=100s"], "must be greater than the renew deadline"),
        (["--vmodule=bad"], 'invalid argument "bad" for "--vmodule" flag'),
        (["--log-level=loud"], "--log-level 'loud' is not one of"),
        (["--log-format=xml"], "--log-format 'xml' is not one of"),
        (
            ["--tls-min-version=TLS1.3"],
            "--tls-min-version: unknown tls version 'TLS1.3' "
            "(one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13)",
        ),
        (
            ["--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,AES128-GCM-SHA256"],
            "--tls-cipher-suites: Cipher suite AES128-GCM-SHA256 not supported or doesn't exist",
        ),
        (
            ["--tls-cert-file=/tls/tls.crt"],
            "--tls-cert-file and --tls-private-key-file must be given together",
        ),
        (
            ["--tls-private-key-file=/tls/tls.key"],
            "--tls-cert-file and --tls-private-key-file must be given together",
        ),
        (
            ["--insecure-serving", "--tls-cert-file=/a", "--tls-private-key-file=/b"],
            "--insecure-serving serves plain HTTP: it cannot be combined with",
        ),
        (["--insecure-serving=maybe"], 'invalid argument "maybe" for "--insecure-serving" flag'),
        (["extra"], 'unexpected argument "extra" for "hubcontroller manager"'),
        (["--kubeconfig"], "flag needs an argument: --kubeconfig"),
    ],
)
def test_manager_refuses(args: list[str], expected: str) -> None:
    assert expected in usage_error("manager", *args)


def test_commands_are_checked() -> None:
    assert "no command given" in usage_error()
    assert "no command given" in usage_error("--v=2")
    assert 'unknown command "agent"' in usage_error("agent")


def test_help_and_version() -> None:
    for args in (["--help"], ["-h"], ["help"]):
        root = parse_command_line(args)
        assert isinstance(root, ShowText)
        assert "manager [flags]" in root.text and "webhook-server [flags]" in root.text
    text = parse_command_line(["manager", "--help"])
    assert isinstance(text, ShowText)
    for flag in manager_flags():
        assert f"--{flag.name}" in text.text
    text = parse_command_line(["help", "webhook-server"])  # cobra's help command
    assert isinstance(text, ShowText)
    for flag in webhook_flags():
        assert f"--{flag.name}" in text.text
    # As with cobra, the flags are parsed before help is considered.
    assert usage_error("webhook-server", "--bogus", "--help") == "unknown flag: --bogus"
    assert usage_error("--bogus") == "unknown flag: --bogus"
    version = parse_command_line(["--version"])
    assert isinstance(version, ShowText) and version.text.startswith("hubcontroller version ")


# -- webhook-server -----------------------------------------------------------------------


def test_webhook_defaults_are_ocm_defaults() -> None:
    flags = webhook()
    assert (flags.port, flags.metrics_port, flags.health_probe_port) == (9443, 8080, 8000)
    assert (flags.certdir, flags.tls_min_version, flags.tls_cipher_suites) == ("", "", "")
    assert flags.manifest_limit == 512000
    assert flags.feature_gates == frozenset()
    assert flags.kubeconfig == ""
    assert (flags.log_format, flags.log_level) == ("json", "info")


def test_webhook_takes_the_operator_argument_list() -> None:
    command = parse_command_line(
        [
            "/work",
            "webhook-server",
            "--port=9443",
            "--feature-gates=ManifestWorkReplicaSet=true",
            "--certdir=/tmp/certs",
            "--manifestLimit=1024",
            "--kubeconfig=/hub.kubeconfig",
            "--tls-min-version=VersionTLS13",
            "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
            "--metrics-port=0",
            "--health-probe-port=0",
        ]
    )
    assert isinstance(command, WebhookCommand)
    flags = command.settings
    assert GATE_MANIFEST_WORK_REPLICA_SET in flags.feature_gates
    assert flags.settings_fields() == {
        "port": 9443,
        "metrics_port": 0,
        "health_probe_port": 0,
        "certdir": "/tmp/certs",
        "tls_min_version": "VersionTLS13",
        "tls_cipher_suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
        "manifest_limit": 1024,
        "feature_gates": frozenset({GATE_MANIFEST_WORK_REPLICA_SET}),
        "kubeconfig": "/hub.kubeconfig",
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--manifestLimit=big"], 'invalid argument "big" for "--manifestLimit" flag'),
        (["--manifest-limit=10"], "unknown flag: --manifest-limit"),
        (["--port=high"], 'invalid argument "high" for "--port" flag'),
        (["--feature-gates=ExecutorValidatingCaches=true"], "unrecognized feature gate"),
        (["--disable-leader-election"], "unknown flag: --disable-leader-election"),
        (["--log-format=xml"], "--log-format 'xml' is not one of"),
        (["extra"], 'unexpected argument "extra" for "hubcontroller webhook-server"'),
    ],
)
def test_webhook_refuses(args: list[str], expected: str) -> None:
    assert expected in usage_error("webhook-server", *args)


# -- the entry point ----------------------------------------------------------------------


def test_usage_errors_are_one_line_with_exit_code_2() -> None:
    code, out, err = run(["manager", "--feature-gates=Nope=true"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith('hubcontroller: invalid argument "Nope=true"')
    assert "unrecognized feature gate: Nope" in err


def test_bad_tls_version_is_one_line_with_exit_code_2() -> None:
    code, out, err = run(["manager", "--tls-min-version=VersionTLS14"])
    assert (code, out) == (2, "")
    assert err == (
        "hubcontroller: --tls-min-version: unknown tls version 'VersionTLS14' "
        "(one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13)\n"
    )


def test_help_exits_0() -> None:
    code, out, err = run(["webhook-server", "--help"])
    assert (code, err) == (0, "")
    assert "--manifestLimit int" in out


def test_missing_webhook_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entry, "import_optional", lambda _name: None)
    code, _, err = run(["webhook-server", "--port=9444"])
    assert code == 1
    assert err == "hubcontroller: the webhook server is not available in this build\n"


@dataclass(frozen=True)
class FakeWebhookSettings:
    """Stands in for the webhook's settings: refuses port 1 as the real one refuses values."""

    port: int
    metrics_port: int
    health_probe_port: int
    certdir: str
    tls_min_version: str
    tls_cipher_suites: str
    manifest_limit: int
    feature_gates: frozenset[str]
    kubeconfig: str

    def __post_init__(self) -> None:
        if self.port == 1:
            raise ValueError("--port=1: not\nhere")


def test_webhook_entry_point_gets_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    received: list[FakeWebhookSettings] = []

    async def serve(settings: FakeWebhookSettings) -> int:
        received.append(settings)
        return 3

    webhook = SimpleNamespace(run_webhook_server=serve, WebhookSettings=FakeWebhookSettings)
    monkeypatch.setattr(entry, "import_optional", lambda _name: webhook)
    code, _, _ = run(["webhook-server", "--port=9444", "--manifestLimit=10", "--log-level=error"])
    assert code == 3
    (settings,) = received
    assert (settings.port, settings.manifest_limit) == (9444, 10)
    # A value the webhook's settings refuse is a one-line usage error, exit code 2.
    code, _, err = run(["webhook-server", "--port=1"])
    assert (code, err) == (2, "hubcontroller: --port=1: not here\n")
    assert len(received) == 1


def test_webhook_settings_of_this_build_accept_the_flags() -> None:
    """When the webhook is part of the build, its settings take every parsed flag."""
    module = import_optional(entry.WEBHOOK_MODULE)
    assert module is not None, "the webhook server is part of this build"
    settings = module.WebhookSettings(**webhook("--manifestLimit=10").settings_fields())
    assert getattr(settings, "manifest_limit", None) == 10
    with pytest.raises(ValueError, match=r"TLS1\.2"):
        module.WebhookSettings(**webhook("--tls-min-version=TLS1.2").settings_fields())
    # Built without the command line: the settings check the gates themselves.
    with pytest.raises(ValueError, match="unrecognized feature gate: Bogus"):
        module.WebhookSettings(feature_gates=frozenset({"Bogus"}))


def test_manager_settings_validate_directly() -> None:
    with pytest.raises(ValueError, match="workers must be >= 1"):
        HubManagerSettings(workers=0).validate()
    with pytest.raises(ValueError, match="unrecognized feature gate: Bogus"):
        HubManagerSettings(feature_gates=frozenset({"Bogus"})).validate()


def test_console_script_refuses_unknown_flags() -> None:
    done = run_console_script("hubcontroller", "manager", "--bogus")
    assert done.returncode == 2
    assert done.stderr == "hubcontroller: unknown flag: --bogus\n"


@pytest.mark.parametrize("program", ["manager", "grpc-server"])
def test_terminate_on_files_refuses_an_empty_name_or_a_directory(
    program: str, tmp_path: Path
) -> None:
    # OCM's programs panic at start on both (library-go's file observer).
    assert usage_error(program, "--terminate-on-files=") == (
        "--terminate-on-files: observed file name must not be empty"
    )
    assert usage_error(program, f"--terminate-on-files={tmp_path}") == (
        f"--terminate-on-files: {tmp_path} is a directory"
    )
