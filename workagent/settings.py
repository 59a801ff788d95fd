"""The agent's settings: one typed object built from the command line."""

from __future__ import annotations

from dataclasses import dataclass, field

from workagent.runtime import LeaderElectionSettings

FEATURE_EXECUTOR_VALIDATING_CACHES = "ExecutorValidatingCaches"
FEATURE_RAW_FEEDBACK_JSON_STRING = "RawFeedbackJsonString"
KNOWN_AGENT_GATES = frozenset({FEATURE_EXECUTOR_VALIDATING_CACHES, FEATURE_RAW_FEEDBACK_JSON_STRING})
SPOKE_USER_AGENT = "work-agent"
LEASE_NAME = "work-agent-lock"


@dataclass(frozen=True)
class AgentSettings:
    """Everything ``workagent agent`` is configured with (OCM flag names in comments).

    Durations are seconds. ``spoke_kubeconfig`` empty and ``kubeconfig`` empty
    means in-cluster configuration for the spoke.
    """

    cluster_name: str  # --spoke-cluster-name / --cluster-name
    hub_kubeconfig: str = "/spoke/hub-kubeconfig/kubeconfig"  # --workload-source-config
    agent_id: str = ""  # --agent-id (empty: the hub hash)
    spoke_kubeconfig: str = ""  # --spoke-kubeconfig
    kubeconfig: str = ""  # --kubeconfig
    status_sync_interval: float = 30.0  # --status-sync-interval
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
    leader_election: LeaderElectionSettings = field(default_factory=LeaderElectionSettings)
    listen: str = "0.0.0.0:8443"  # --listen (metrics and probes)
    log_format: str = "json"  # --log-format json|console
    log_level: str = "info"  # -v / --log-level
    terminate_on_files: tuple[str, ...] = ()  # --terminate-on-files

    @property
    def spoke_config_path(self) -> str | None:
        """The spoke kubeconfig to load, or None for in-cluster configuration."""
        return self.spoke_kubeconfig or self.kubeconfig or None

    def gate(self, name: str) -> bool:
        """Whether a feature gate is on."""
        return name in self.feature_gates
