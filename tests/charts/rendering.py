"""Rendering and linting the Helm charts offline with helm-python-sdk, plus value sets.

The value sets are shared by the chart tests and the kubesim dry runs, so the
objects proved valid by the API server are exactly the ones whose contents
the chart tests check.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

from hubcontroller.cli import parse_command_line as hub_command_line
from workagent.cli import parse_command_line as agent_command_line

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "charts"
SHARED_CRDS = CHARTS / "crds"
AGENT_CHART = CHARTS / "work-agent"
HUB_CHART = CHARTS / "hub-controller"

AGENT_NAMESPACE = "open-cluster-management-agent"
HUB_NAMESPACE = "open-cluster-management-hub"
NOTES = "NOTES.txt"

Values = dict[str, Any]
#: Helm's longest release name (53 characters): every name derived from it must stay valid.
LONG_RELEASE = "release-" + "x" * 44 + "y"

# The library logs each `fail` of a template at INFO on stderr; the tests check them.
helm.disable_logging()


@dataclass(frozen=True)
class Rendered:
    """The objects a chart renders (in template order) and its NOTES.txt."""

    objects: tuple[dict[str, Any], ...]
    notes: str

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """Every object of this kind."""
        return [obj for obj in self.objects if obj["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        """The single object of this kind (and name, if given)."""
        found = [o for o in self.of_kind(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
        return found[0]

    def kinds(self) -> set[str]:
        """The kinds rendered."""
        return {obj["kind"] for obj in self.objects}

    def to_yaml(self) -> str:
        """All objects as one multi-document YAML stream (for kubectl)."""
        return yaml.safe_dump_all(self.objects, sort_keys=False)


def render(chart: Path, values: Values, *, release: str, namespace: str) -> Rendered:
    """Render ``chart`` as ``helm install`` would, without a cluster.

    Raises helm's HelmValuesError (schema) or HelmRenderError (a template's ``fail``).
    """
    with helm.Chart.load(chart) as loaded:
        manifests = loaded.render(values, name=release, namespace=namespace, is_install=True)
    objects: list[dict[str, Any]] = []
    notes = ""
    for path, text in sorted(manifests.items()):
        if path.endswith(NOTES):
            notes = text
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return Rendered(tuple(objects), notes)


def lint_findings(chart: Path, values: Values, *, namespace: str) -> list[str]:
    """``helm lint --strict`` problems: errors and warnings (info lines are not problems)."""
    report = helm.lint(chart, values, strict=True, namespace=namespace)
    warning = 2
    problems = [str(e) for e in report.get("errors") or []]
    problems += [
        f"{m['path']}: {m['error']}"
        for m in report.get("messages") or []
        if int(m["severity"]) >= warning
    ]
    return problems


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> Values:
    """``base`` with ``override`` merged in recursively (as Helm merges -f files)."""
    out: Values = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def container(deployment: Mapping[str, Any], index: int = 0) -> dict[str, Any]:
    """A container of a Deployment's pod template."""
    found: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][index]
    return found


def args_of(deployment: Mapping[str, Any]) -> list[str]:
    """The command-line arguments of a Deployment's first container."""
    return [str(a) for a in container(deployment)["args"]]


def flag_names(args: list[str]) -> list[str]:
    """The ``--name`` of every flag in ``args`` (the command word excluded)."""
    return [a.partition("=")[0] for a in args if a.startswith("--")]


# -- value sets ---------------------------------------------------------------------------

HUB_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster: {server: "https://hub.example.com:6443"}
contexts:
- name: hub
  context: {cluster: hub, user: agent}
current-context: hub
users:
- name: agent
  user: {token: "not-a-real-token"}
"""

AFFINITY = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app.kubernetes.io/part-of": "ocm"}},
                },
            }
        ]
    }
}
TOLERATIONS = [
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
]
IMAGE = {"repository": "registry.example.com/ocm/ocm-work", "tag": "v0.1.0", "pullPolicy": "Always"}

#: The alerts and the dashboard, with their defaults (both charts).
MONITORING: Values = {"prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True}}

#: The serving TLS options of all-options (the agent's endpoint, the manager's).
SERVING_TLS: Values = {
    "restartOnChange": True,
    "minVersion": "VersionTLS13",
    "cipherSuites": [
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ],
}
LEADER_ELECTION: Values = {"leaseDuration": "60s", "renewDeadline": "40s", "retryPeriod": "10s"}
RESOURCES: Values = {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}


def pod_options(tier: str, resources: Values = RESOURCES) -> Values:
    """All-options' pod placement and decoration for one component (``tier`` its label)."""
    return {
        "resources": resources,
        "podAnnotations": {"example.com/scrape": "true"},
        "podLabels": {"example.com/tier": tier},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": TOLERATIONS,
        "affinity": AFFINITY,
    }


def check_shared_options(settings: Any) -> None:
    """What the all-options sets' SERVING_TLS, LEADER_ELECTION and log options make of
    either program's settings (the agent's, the manager's)."""
    assert not settings.insecure_serving
    assert settings.tls_min_version == "VersionTLS13"
    assert settings.tls_cipher_suites == (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
    )
    assert (settings.log_format, settings.log_level) == ("console", "debug")
    election = settings.leader_election
    assert not election.disabled
    timings = (election.lease_duration, election.renew_deadline, election.retry_period)
    assert timings == (60, 40, 10)


#: The options both charts have, set (each chart's all-options set starts from these).
ALL_OPTIONS_OF_BOTH: Values = {
    "image": IMAGE,
    "imagePullSecrets": [{"name": "registry-credentials"}],
    "log": {"format": "console", "level": "debug"},
    "securityContext": {"runAsUser": 10001, "runAsGroup": 10002},
    "priorityClassName": "system-cluster-critical",
    "serviceMonitor": {
        "enabled": True,
        "interval": "15s",
        "scrapeTimeout": "5s",
        "labels": {"release": "prometheus"},
    },
    "prometheusRule": {
        "enabled": True,
        "labels": {"release": "prometheus"},
        "severity": "critical",
    },
    "grafanaDashboard": {
        "enabled": True,
        "labels": {"example.com/team": "ocm"},
        "namespace": "monitoring",
    },
}

AGENT_MINIMAL: Values = {"clusterName": "cluster1", "hubKubeconfig": HUB_KUBECONFIG}

AGENT_ALL_OPTIONS: Values = {
    **ALL_OPTIONS_OF_BOTH,
    "clusterName": "cluster-east-1",
    "agentID": "2c8a4a63-5d2e-4d1e-9f7e-0b2c0f1f2a3b",
    "hubKubeconfig": HUB_KUBECONFIG,
    "hubKubeconfigSecret": {"key": "hub.kubeconfig", "restartOnChange": True},
    "replicas": 3,
    "leaderElection": LEADER_ELECTION,
    "agent": {
        "statusSyncInterval": "1m30s",
        "evictionGracePeriod": "876000h",
        "maxFeedbackWatch": 200,
        "maxJSONRawLength": 4096,
        "workers": 20,
        "metricsWorkLabels": True,
    },
    "featureGates": {"ExecutorValidatingCaches": True, "RawFeedbackJsonString": True},
    "clients": {"spoke": {"qps": 100.5, "burst": 200}, "hub": {"qps": 75, "burst": 150}},
    "listen": {
        "address": "::",
        "port": 9443,
        "https": True,
        "tls": {"secretName": "work-agent-serving-cert", **SERVING_TLS},
    },
    "serviceAccount": {"name": "klusterlet-work-sa", "annotations": {"example.com/team": "ocm"}},
    "rbac": {
        "executionClusterRole": "cluster-admin",
        "extraExecutionRules": [
            {
                "apiGroups": ["cluster.x-k8s.io"],
                "resources": ["machines"],
                "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
            }
        ],
    },
    "metrics": {"service": {"port": 9090}},
    "prometheusRule": {
        **ALL_OPTIONS_OF_BOTH["prometheusRule"],
        "for": {
            "failingToApply": "5m",
            "notAvailable": "30m",
            "feedbackStale": "1h",
            "noLeader": "2m",
            "ruleWorkersFailing": "1m",
        },
    },
    **pod_options("agent"),
}

AGENT_VALUE_SETS: dict[str, Values] = {
    "default": AGENT_MINIMAL,
    "all-options": AGENT_ALL_OPTIONS,
    "replicas-2": merged(AGENT_MINIMAL, {"replicas": 2}),
    "existing-secret": {
        "clusterName": "cluster1",
        "hubKubeconfigSecret": {"name": "hub-kubeconfig-secret", "key": "kubeconfig"},
    },
    "service-monitor": merged(AGENT_MINIMAL, {"serviceMonitor": {"enabled": True}}),
    "plain-http": merged(
        AGENT_MINIMAL, {"listen": {"https": False}, "serviceMonitor": {"enabled": True}}
    ),
    "monitoring": merged(AGENT_MINIMAL, MONITORING),
}

# Any valid base64 will do for rendering and the dry run; the webhook never runs here.
EXISTING_CA_BUNDLE = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n...\n").decode()

HUB_ALL_OPTIONS: Values = {
    **ALL_OPTIONS_OF_BOTH,
    "featureGates": {
        "ManifestWorkReplicaSet": True,
        "CleanUpCompletedManifestWork": True,
        "NilExecutorValidating": True,
    },
    "manager": {
        "replicas": 2,
        "leaderElection": LEADER_ELECTION,
        "kubeAPIQPS": 100,
        "kubeAPIBurst": 200,
        "listen": {
            "address": "0.0.0.0",
            "port": 9000,
            "https": True,
            "tls": {"secretName": "manager-serving-cert", **SERVING_TLS},
        },
        **pod_options("manager"),
    },
    "webhook": {
        "replicas": 3,
        "port": 10443,
        "healthProbePort": 10080,
        "metricsPort": 10081,
        "tlsMinVersion": "VersionTLS12",
        "tlsCipherSuites": [
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        ],
        "manifestLimit": 1048576,
        "failurePolicy": "Ignore",
        "timeoutSeconds": 5,
        "certificate": {"validityDays": 365},
        **pod_options(
            "webhook",
            {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        ),
    },
    "prometheusRule": {
        **ALL_OPTIONS_OF_BOTH["prometheusRule"],
        "certificateExpiryDays": 30,
        "for": {"noLeader": "2m", "certificateExpiry": "30m"},
    },
}

HUB_VALUE_SETS: dict[str, Values] = {
    "default": {},
    "all-options": HUB_ALL_OPTIONS,
    "replicas-2": {"manager": {"replicas": 2}, "webhook": {"replicas": 2}},
    "existing-secret": {
        "webhook": {
            "certificate": {
                "existingSecret": "webhook-serving-cert",
                "caBundle": EXISTING_CA_BUNDLE,
            }
        }
    },
    "service-monitor": {"serviceMonitor": {"enabled": True}},
    "plain-http": {"manager": {"listen": {"https": False}}, "serviceMonitor": {"enabled": True}},
    "monitoring": MONITORING,
}


def render_agent(values: Values, *, release: str = "work-agent") -> Rendered:
    """Render the work-agent chart into the agent namespace."""
    return render(AGENT_CHART, values, release=release, namespace=AGENT_NAMESPACE)


def render_hub(values: Values, *, release: str = "hub-controller") -> Rendered:
    """Render the hub-controller chart into the hub namespace."""
    return render(HUB_CHART, values, release=release, namespace=HUB_NAMESPACE)


@dataclass(frozen=True)
class Chart:
    """One of our charts, and how the tests render it."""

    path: Path
    namespace: str
    render: Callable[..., Rendered]
    minimal: Values
    value_sets: dict[str, Values]
    crds: tuple[str, ...]
    deployments: int
    #: The program's Deployment, its command and that command's parser.
    program_deployment: str
    program: str
    parse_command_line: Callable[..., Any]
    #: Where all-options mounts the program's serving certificate Secret, and which.
    serving_cert_dir: str
    serving_cert_secret: str

    @property
    def name(self) -> str:
        """The chart's name (its directory's)."""
        return self.path.name

    def deployment(self, values: Values) -> dict[str, Any]:
        """The program's Deployment as rendered with ``values``."""
        return self.render(values).one("Deployment", self.program_deployment)

    def command(self, values: Values, tmp_path: Path) -> Any:
        """The program Deployment's arguments, parsed by the program's own command line."""
        deployment = self.deployment(values)
        assert container(deployment)["command"] == [self.program]
        # The namespace file stands in for the pod's service account mount.
        namespace_file = tmp_path / "namespace"
        namespace_file.write_text(self.namespace)
        return self.parse_command_line(args_of(deployment), namespace_file=namespace_file)


AGENT = Chart(
    AGENT_CHART,
    AGENT_NAMESPACE,
    render_agent,
    AGENT_MINIMAL,
    AGENT_VALUE_SETS,
    ("work.open-cluster-management.io_appliedmanifestworks.yaml",),
    deployments=1,
    program_deployment="work-agent",
    program="workagent",
    parse_command_line=agent_command_line,
    serving_cert_dir="/etc/work-agent/serving-cert",
    serving_cert_secret="work-agent-serving-cert",
)
HUB = Chart(
    HUB_CHART,
    HUB_NAMESPACE,
    render_hub,
    {},
    HUB_VALUE_SETS,
    (
        "work.open-cluster-management.io_manifestworkreplicasets.yaml",
        "work.open-cluster-management.io_manifestworks.yaml",
    ),
    deployments=2,  # the manager and the webhook
    program_deployment="hub-controller-manager",
    program="hubcontroller",
    parse_command_line=hub_command_line,
    serving_cert_dir="/etc/hub-controller/serving-cert",
    serving_cert_secret="manager-serving-cert",
)
