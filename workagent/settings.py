"""The agent's settings: one typed object built from the command line.

:mod:`workagent.cli` builds an :class:`AgentSettings` from OCM's work-agent
flags (``docs/operations.md`` lists them) and calls :meth:`AgentSettings.validate`
before anything starts; the agent then reads only this object. Durations are
float seconds here; on the command line they are Go durations (``30s``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from ocmkit.command import DEFAULT_LISTEN, LIBRARY_GO_NAMESPACE
from ocmkit.settings import ProgramSettings, check_client_limits

if TYPE_CHECKING:
    from ocmkit.runtime import LeaderElectionSettings

FEATURE_EXECUTOR_VALIDATING_CACHES = "ExecutorValidatingCaches"
FEATURE_RAW_FEEDBACK_JSON_STRING = "RawFeedbackJsonString"
KNOWN_AGENT_GATES = frozenset(
    {FEATURE_EXECUTOR_VALIDATING_CACHES, FEATURE_RAW_FEEDBACK_JSON_STRING}
)
# Every agent gate is alpha and off by default (api feature/feature.go); AllAlpha
# and AllBeta switch the gates of that maturity that were not named explicitly.
ALPHA_AGENT_GATES = KNOWN_AGENT_GATES
BETA_AGENT_GATES: frozenset[str] = frozenset()

SPOKE_USER_AGENT = "work-agent"
#: --workload-source-driver values: the hub API server, or CloudEvents over gRPC or MQTT.
WORKLOAD_SOURCE_DRIVERS = ("kube", "grpc", "mqtt")
LEASE_NAME = "work-agent-lock"
DEFAULT_HUB_KUBECONFIG = "/spoke/hub-kubeconfig/kubeconfig"
DEFAULT_COMPONENT_NAMESPACE = "open-cluster-management-agent"

# OCM: a grace period of 100 years (876000h) or more turns eviction off.
EVICTION_DISABLED_AT = 876000 * 3600.0

# The cluster name is a hub namespace, so it must be a DNS-1123 label.
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_MAX_LABEL_LENGTH = 63


def default_leader_election() -> LeaderElectionSettings:
    """OCM's leader election for the work agent: Lease work-agent-lock, 137s/107s/26s."""
    # Imported on use: the runtime loads the Kubernetes client (seconds of CPU),
    # which `workagent --help` or a refused flag must not wait for.
    from ocmkit.runtime import LeaderElectionSettings  # noqa: PLC0415

    return LeaderElectionSettings(lease_name=LEASE_NAME, namespace=DEFAULT_COMPONENT_NAMESPACE)


@dataclass(frozen=True)
class AgentSettings(ProgramSettings):
    """Everything ``workagent agent`` is configured with (OCM flag names in comments).

    Durations are seconds. ``spoke_kubeconfig`` empty and ``kubeconfig`` empty
    means in-cluster configuration for the spoke.
    """

    SERVING_CERT_NAME: ClassVar[str] = SPOKE_USER_AGENT
    KNOWN_GATES: ClassVar[frozenset[str]] = KNOWN_AGENT_GATES

    cluster_name: str  # --spoke-cluster-name / --cluster-name
    # --workload-source-config / --hub-kubeconfig: the hub kubeconfig (kube driver) or
    # the grpc/mqtt driver's config file
    hub_kubeconfig: str = DEFAULT_HUB_KUBECONFIG
    workload_source_driver: str = "kube"  # --workload-source-driver: kube, grpc or mqtt
    cloudevents_client_id: str = ""  # --cloudevents-client-id (grpc and mqtt: required)
    # Ours: the first reconnect delay of the grpc/mqtt drivers (OCM: 5 s, x5 per failure).
    cloudevents_reconnect_seconds: float = 5.0
    agent_id: str = ""  # --agent-id (empty: the hub hash)
    spoke_kubeconfig: str = ""  # --spoke-kubeconfig
    kubeconfig: str = ""  # --kubeconfig
    status_sync_interval: float = 10.0  # --status-sync-interval (OCM's default)
    eviction_grace_period: float = 3600.0  # --appliedmanifestwork-eviction-grace-period
    max_json_raw_length: int = 1024  # --max-json-raw-length
    max_feedback_watch: int = 50  # --max-feedback-watch
    workers: int = 10  # --workload-agent-workers
    feature_gates: frozenset[str] = frozenset()  # --feature-gates (the enabled ones)
    kube_api_qps: float = 50.0  # --kube-api-qps (spoke)
    kube_api_burst: int = 100  # --kube-api-burst
    hub_kube_api_qps: float = 50.0  # --hub-kube-api-qps
    hub_kube_api_burst: int = 100  # --hub-kube-api-burst
    # --namespace, --disable-leader-election and --leader-election-* (Lease work-agent-lock)
    leader_election: LeaderElectionSettings = field(default_factory=default_leader_election)
    # --namespace, else the pod's, else library-go's: names the build_info series
    component_namespace: str = LIBRARY_GO_NAMESPACE
    listen: str = DEFAULT_LISTEN  # --listen / --health-port (metrics and probes, HTTPS)
    # Ours: plain HTTP on --listen (local runs, tests); OCM's agent always serves HTTPS.
    insecure_serving: bool = False  # --insecure-serving
    tls_cert_file: str = ""  # --tls-cert-file (ours; empty: a self-signed certificate)
    tls_private_key_file: str = ""  # --tls-private-key-file (ours)
    tls_min_version: str = ""  # --tls-min-version (Go name; empty: TLS 1.2)
    tls_cipher_suites: str = ""  # --tls-cipher-suites (comma-separated Go names)
    # Ours: label the per-work gauges with the work's name (small fleets only).
    metrics_work_labels: bool = False  # --metrics-work-labels
    log_format: str = "json"  # --log-format json|console
    log_level: str = "info"  # -v / --log-level: debug, info, warning or error
    terminate_on_files: tuple[str, ...] = ()  # --terminate-on-files

    @property
    def spoke_config_path(self) -> str | None:
        """The spoke kubeconfig to load, or None for in-cluster configuration."""
        return self.spoke_kubeconfig or self.kubeconfig or None

    def validate(self) -> None:
        """Raise ValueError naming the flag at fault if these settings cannot run.

        The command line calls this before anything starts, so a bad value is a
        one-line usage error rather than a failure minutes later.
        """
        if not self.cluster_name:
            # OCM's work agent starts anyway and watches the wrong namespace; refuse.
            raise ValueError("--spoke-cluster-name is required")
        if len(self.cluster_name) > _MAX_LABEL_LENGTH or not _DNS1123_LABEL.fullmatch(
            self.cluster_name
        ):
            raise ValueError(
                f"--spoke-cluster-name {self.cluster_name!r} is not a valid namespace name "
                "(lowercase letters, digits and '-', at most 63 characters)"
            )
        if not self.hub_kubeconfig:
            raise ValueError("--workload-source-config (the hub kubeconfig) must not be empty")
        driver = self.workload_source_driver
        if driver not in WORKLOAD_SOURCE_DRIVERS:
            known = ", ".join(WORKLOAD_SOURCE_DRIVERS)
            raise ValueError(
                f"--workload-source-driver={driver} is not supported (supported: {known})"
            )
        if driver != "kube" and not self.cloudevents_client_id:
            raise ValueError(
                f"--cloudevents-client-id is required with --workload-source-driver={driver} "
                f"(the Klusterlet passes <cluster>-work-agent)"
            )
        if self.cloudevents_reconnect_seconds <= 0:
            raise ValueError("the CloudEvents reconnect delay must be > 0")
        if self.workers < 1:
            raise ValueError(f"workload-agent-workers must be >= 1, got {self.workers}")
        if self.status_sync_interval <= 0:
            raise ValueError(
                f"--status-sync-interval must be > 0, got {self.status_sync_interval}s"
            )
        if self.eviction_grace_period < 0:
            raise ValueError(
                "--appliedmanifestwork-eviction-grace-period must not be negative, "
                f"got {self.eviction_grace_period}s"
            )
        if self.max_json_raw_length < 0:
            raise ValueError(f"--max-json-raw-length must be >= 0, got {self.max_json_raw_length}")
        if self.max_feedback_watch < 0:
            raise ValueError(f"--max-feedback-watch must be >= 0, got {self.max_feedback_watch}")
        check_client_limits("kube-api", self.kube_api_qps, self.kube_api_burst)
        check_client_limits("hub-kube-api", self.hub_kube_api_qps, self.hub_kube_api_burst)
        self.validate_shared()
