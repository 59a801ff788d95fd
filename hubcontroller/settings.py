"""Settings of the hub processes, built from the command line (:mod:`hubcontroller.cli`).

Durations are float seconds here; on the command line they are Go durations (``30s``).
This module is imported by ``hubcontroller --help`` and by every refused
command line, so it must stay light: the runtime (and with it the Kubernetes
client) is imported only where a value needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, ClassVar

from ocmkit.command import DEFAULT_LISTEN, LIBRARY_GO_NAMESPACE
from ocmkit.settings import ProgramSettings, check_client_limits, check_gates, check_logging
from schemas import wire

if TYPE_CHECKING:
    from ocmkit.runtime import LeaderElectionSettings

#: Every hub gate (api feature/feature.go); all alpha and off by default.
KNOWN_HUB_GATES = frozenset(
    {
        wire.GATE_MANIFEST_WORK_REPLICA_SET,
        wire.GATE_CLEAN_UP_COMPLETED_MANIFEST_WORK,
        wire.GATE_NIL_EXECUTOR_VALIDATING,
        wire.GATE_CLOUD_EVENTS_DRIVERS,
    }
)
ALPHA_HUB_GATES = KNOWN_HUB_GATES
BETA_HUB_GATES: frozenset[str] = frozenset()

MANAGER_LEASE_NAME = "work-manager-lock"
#: Where OCM's cluster-manager operator runs the work manager and its webhook.
DEFAULT_HUB_NAMESPACE = "open-cluster-management-hub"
#: Common name of the self-signed serving certificate (``work-manager@<unix time>``).
SERVING_CERT_NAME = "work-manager"
#: The only ManifestWork transport supported here (OCM also has mqtt and grpc).
WORK_DRIVER_KUBE = "kube"
#: OCM's shared informer resync period on the hub.
HUB_RESYNC_SECONDS = 30 * 60.0
#: Workers of each hub controller (OCM runs both with 5).
HUB_WORKERS = 5

DEFAULT_WEBHOOK_PORT = 9443
DEFAULT_WEBHOOK_METRICS_PORT = 8080
DEFAULT_WEBHOOK_HEALTH_PROBE_PORT = 8000
#: OCM's default ``--manifestLimit``: 500 KiB of manifests per work.
DEFAULT_MANIFEST_LIMIT = 512000


def default_manager_leader_election() -> LeaderElectionSettings:
    """OCM's leader election for the work manager: Lease work-manager-lock, 137s/107s/26s."""
    # Imported on use: the runtime loads the Kubernetes client, which `--help`
    # or a refused flag must not wait for.
    from ocmkit.runtime import LeaderElectionSettings  # noqa: PLC0415

    return LeaderElectionSettings(lease_name=MANAGER_LEASE_NAME, namespace=DEFAULT_HUB_NAMESPACE)


@dataclass(frozen=True)
class HubManagerSettings(ProgramSettings):
    """Everything ``hubcontroller manager`` is configured with (OCM flag names in comments).

    ``kubeconfig`` empty means in-cluster configuration; the Lease always lives
    on that cluster, even when ManifestWorks go through ``work_driver_config``.
    """

    SERVING_CERT_NAME: ClassVar[str] = SERVING_CERT_NAME
    KNOWN_GATES: ClassVar[frozenset[str]] = KNOWN_HUB_GATES

    kubeconfig: str = ""  # --kubeconfig
    work_driver: str = WORK_DRIVER_KUBE  # --work-driver (only kube)
    work_driver_config: str = ""  # --work-driver-config
    feature_gates: frozenset[str] = frozenset()  # --feature-gates (the enabled ones)
    kube_api_qps: float = 50.0  # --kube-api-qps
    kube_api_burst: int = 100  # --kube-api-burst
    # --namespace, --disable-leader-election and --leader-election-* (Lease work-manager-lock)
    leader_election: LeaderElectionSettings = field(default_factory=default_manager_leader_election)
    # --namespace, else the pod's, else library-go's: names the build_info series
    component_namespace: str = LIBRARY_GO_NAMESPACE
    listen: str = DEFAULT_LISTEN  # --listen (metrics and probes, HTTPS)
    # Ours: plain HTTP on --listen (local runs, tests); OCM's manager always serves HTTPS.
    insecure_serving: bool = False  # --insecure-serving
    tls_cert_file: str = ""  # --tls-cert-file (ours; empty: a self-signed certificate)
    tls_private_key_file: str = ""  # --tls-private-key-file (ours)
    tls_min_version: str = ""  # --tls-min-version (Go name; empty: TLS 1.2)
    tls_cipher_suites: str = ""  # --tls-cipher-suites (comma-separated Go names)
    log_format: str = "json"  # --log-format json|console
    log_level: str = "info"  # -v / --log-level
    terminate_on_files: tuple[str, ...] = ()  # --terminate-on-files
    workers: int = HUB_WORKERS  # not a flag: OCM hard-codes 5 per controller
    resync_seconds: float = HUB_RESYNC_SECONDS  # not a flag either

    def validate(self) -> None:
        """Raise ValueError naming the flag at fault if these settings cannot run."""
        if self.work_driver != WORK_DRIVER_KUBE:
            raise ValueError(
                f"--work-driver={self.work_driver} is not supported: only kube (ManifestWorks "
                "in a Kubernetes API server) is; OCM's grpc and mqtt drivers are not"
            )
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.resync_seconds <= 0:
            raise ValueError(f"resync period must be > 0, got {self.resync_seconds}s")
        check_client_limits("kube-api", self.kube_api_qps, self.kube_api_burst)
        self.validate_shared()


@dataclass(frozen=True)
class WebhookFlags:
    """The flags of ``hubcontroller webhook-server`` as given (OCM's names and defaults).

    The webhook's own settings object (which checks ports, TLS names and the
    limit) is built from :meth:`settings_fields`.
    """

    port: int = DEFAULT_WEBHOOK_PORT  # --port (<= 0: 9443)
    metrics_port: int = DEFAULT_WEBHOOK_METRICS_PORT  # --metrics-port (<= 0: off)
    health_probe_port: int = DEFAULT_WEBHOOK_HEALTH_PROBE_PORT  # --health-probe-port (<= 0: off)
    certdir: str = ""  # --certdir (empty: <TMPDIR>/k8s-webhook-server/serving-certs)
    tls_min_version: str = ""  # --tls-min-version (Go name; empty: TLS 1.2)
    tls_cipher_suites: str = ""  # --tls-cipher-suites (comma-separated Go names)
    manifest_limit: int = DEFAULT_MANIFEST_LIMIT  # --manifestLimit (bytes)
    feature_gates: frozenset[str] = frozenset()  # --feature-gates (the enabled ones)
    kubeconfig: str = ""  # --kubeconfig (empty: $KUBECONFIG, in-cluster, ~/.kube/config)
    log_format: str = "json"  # --log-format json|console
    log_level: str = "info"  # -v / --log-level

    def settings_fields(self) -> dict[str, object]:
        """The webhook settings' keyword arguments: every flag but the logging ones."""
        return {
            spec.name: getattr(self, spec.name)
            for spec in fields(WebhookFlags)
            if spec.name not in ("log_format", "log_level")
        }

    def validate(self) -> None:
        """Raise ValueError for unknown gate names or logging (the webhook checks the rest)."""
        check_gates(self.feature_gates, KNOWN_HUB_GATES)
        check_logging(self.log_format, self.log_level)
