"""The work-agent chart: rendering, lint, schema, flags, security and RBAC."""

from __future__ import annotations

import base64
from importlib import metadata
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.charts.rendering import (
    AGENT,
    AGENT_ALL_OPTIONS,
    AGENT_MINIMAL,
    AGENT_NAMESPACE,
    AGENT_VALUE_SETS,
    HUB_KUBECONFIG,
    Values,
    args_of,
    check_shared_options,
    container,
    merged,
    render_agent,
)
from workagent.cli import AgentCommand
from workagent.settings import LEASE_NAME

AGGREGATE_LABEL = "open-cluster-management.io/aggregate-to-work"
READ_WRITE = ("get", "list", "watch", "create", "update", "patch", "delete")


def agent_command(values: Values, tmp_path: Path) -> AgentCommand:
    """The rendered Deployment's arguments, parsed by the agent's own command line."""
    command = AGENT.command(values, tmp_path)
    assert isinstance(command, AgentCommand)
    return command


# -- rendering and lint -------------------------------------------------------------------


@pytest.mark.parametrize("value_set", sorted(AGENT_VALUE_SETS))
def test_renders_the_expected_objects(value_set: str) -> None:
    values = AGENT_VALUE_SETS[value_set]
    rendered = render_agent(values)
    expected = {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
    }
    if values.get("hubKubeconfig"):
        expected.add("Secret")
    if values.get("serviceMonitor", {}).get("enabled"):
        expected.add("ServiceMonitor")
    if values.get("prometheusRule", {}).get("enabled"):
        expected.add("PrometheusRule")
    dashboard = values.get("grafanaDashboard", {})
    if dashboard.get("enabled"):
        expected.add("ConfigMap")
    assert rendered.kinds() == expected
    for obj in rendered.objects:
        if obj["kind"] == "ConfigMap":
            namespace = dashboard.get("namespace") or AGENT_NAMESPACE
            assert obj["metadata"]["namespace"] == namespace
        elif obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == AGENT_NAMESPACE, obj["kind"]
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert values["clusterName"] in rendered.notes


# -- values schema ------------------------------------------------------------------------

BAD_VALUES: dict[str, Values] = {
    "unknown top-level key": {"clusterNmae": "cluster1"},
    "unknown nested key": {"agent": {"worker": 3}},
    "unknown feature gate": {"featureGates": {"NoSuchGate": True}},
    "gate not a boolean": {"featureGates": {"RawFeedbackJsonString": "yes"}},
    "workers as a string": {"agent": {"workers": "3"}},
    "negative workers": {"agent": {"workers": -1}},
    "zero workers": {"agent": {"workers": 0}},
    "fractional workers": {"agent": {"workers": 2.5}},
    "negative burst": {"clients": {"hub": {"burst": -1}}},
    "qps as a string": {"clients": {"spoke": {"qps": "fast"}}},
    "negative max feedback watch": {"agent": {"maxFeedbackWatch": -1}},
    "duration without unit": {"agent": {"statusSyncInterval": "30"}},
    "zero status sync interval": {"agent": {"statusSyncInterval": "0s"}},
    "negative eviction grace period": {"agent": {"evictionGracePeriod": "-1h"}},
    "day unit": {"agent": {"evictionGracePeriod": "1d"}},
    "invalid cluster name": {"clusterName": "Cluster_1"},
    "unknown log level": {"log": {"level": "verbose"}},
    "unknown log format": {"log": {"format": "text"}},
    "port out of range": {"listen": {"port": 70000}},
    "https as a string": {"listen": {"https": "true"}},
    "unknown TLS version": {"listen": {"tls": {"minVersion": "VersionTLS14"}}},
    "cipher suite by its OpenSSL name": {
        "listen": {"tls": {"cipherSuites": ["ECDHE-RSA-AES128-GCM-SHA256"]}}
    },
    "cipher suites as one string": {"listen": {"tls": {"cipherSuites": "TLS_AES_128_GCM_SHA256"}}},
    "invalid serving certificate Secret name": {"listen": {"tls": {"secretName": "Agent_TLS"}}},
    "unknown TLS key": {"listen": {"tls": {"certFile": "/tls.crt"}}},
    "root user": {"securityContext": {"runAsUser": 0}},
    "replicas zero": {"replicas": 0},
    "replicas as a string": {"replicas": "2"},
    "service monitor flag as a string": {"serviceMonitor": {"enabled": "true"}},
    "unknown toleration field": {"tolerations": [{"key": "a", "operater": "Exists"}]},
    "unknown affinity kind": {"affinity": {"nodeAfinity": {}}},
    "rule without verbs": {"rbac": {"extraExecutionRules": [{"resources": ["machines"]}]}},
    "label value not a string": {"podLabels": {"tier": 1}},
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_schema_rejects_bad_values(case: str) -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        render_agent(merged(AGENT_MINIMAL, BAD_VALUES[case]))


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"hubKubeconfig": HUB_KUBECONFIG}, "clusterName is required"),
        ({"clusterName": "cluster1"}, "the hub kubeconfig is required"),
        (
            merged(AGENT_MINIMAL, {"hubKubeconfigSecret": {"name": "existing"}}),
            "not both",
        ),
        (
            merged(AGENT_MINIMAL, {"listen": {"https": False, "tls": {"secretName": "agent-tls"}}}),
            "listen.tls.secretName needs listen.https",
        ),
    ],
)
def test_missing_or_conflicting_required_values_fail_the_render(
    values: Values, message: str
) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        render_agent(values)


# -- flags --------------------------------------------------------------------------------


@pytest.mark.parametrize("value_set", sorted(AGENT_VALUE_SETS))
def test_every_flag_is_accepted_by_the_agent(value_set: str, tmp_path: Path) -> None:
    command = agent_command(AGENT_VALUE_SETS[value_set], tmp_path)
    # No flag the agent would accept and ignore: each one the chart passes has an effect.
    assert command.notices == ()
    settings = command.settings
    assert settings.cluster_name == AGENT_VALUE_SETS[value_set]["clusterName"]
    assert settings.leader_election.namespace == AGENT_NAMESPACE


def test_default_flags_keep_the_agent_defaults(tmp_path: Path) -> None:
    settings = agent_command(AGENT_MINIMAL, tmp_path).settings
    assert settings.hub_kubeconfig == "/spoke/hub-kubeconfig/kubeconfig"
    assert settings.terminate_on_files == ("/spoke/hub-kubeconfig/kubeconfig",)
    assert settings.agent_id == ""
    assert settings.status_sync_interval == 30
    assert settings.eviction_grace_period == 3600
    assert (settings.max_feedback_watch, settings.max_json_raw_length) == (50, 1024)
    assert settings.workers == 10
    assert settings.feature_gates == frozenset()
    assert (settings.kube_api_qps, settings.kube_api_burst) == (50, 100)
    assert (settings.hub_kube_api_qps, settings.hub_kube_api_burst) == (50, 100)
    assert settings.listen == "0.0.0.0:8443"
    # HTTPS with a certificate the agent makes itself, TLS 1.2 and up, OpenSSL's suites.
    assert not settings.insecure_serving
    assert (settings.tls_cert_file, settings.tls_private_key_file) == ("", "")
    assert (settings.tls_min_version, settings.tls_cipher_suites) == ("", "")
    assert (settings.log_format, settings.log_level) == ("json", "info")
    assert not settings.metrics_work_labels


def test_every_option_reaches_the_agent(tmp_path: Path) -> None:
    settings = agent_command(AGENT_ALL_OPTIONS, tmp_path).settings
    assert settings.cluster_name == "cluster-east-1"
    assert settings.agent_id == "2c8a4a63-5d2e-4d1e-9f7e-0b2c0f1f2a3b"
    assert settings.hub_kubeconfig == "/spoke/hub-kubeconfig/hub.kubeconfig"
    assert settings.terminate_on_files == (
        "/spoke/hub-kubeconfig/hub.kubeconfig",
        "/etc/work-agent/serving-cert/tls.crt",  # a renewed certificate restarts the agent
    )
    assert settings.status_sync_interval == 90
    assert settings.eviction_grace_period == 876000 * 3600
    assert (settings.max_feedback_watch, settings.max_json_raw_length) == (200, 4096)
    assert settings.workers == 20
    assert settings.metrics_work_labels
    assert settings.feature_gates == {"ExecutorValidatingCaches", "RawFeedbackJsonString"}
    assert (settings.kube_api_qps, settings.kube_api_burst) == (100.5, 200)
    assert (settings.hub_kube_api_qps, settings.hub_kube_api_burst) == (75, 150)
    assert settings.listen == "[::]:9443"
    assert settings.tls_cert_file == "/etc/work-agent/serving-cert/tls.crt"
    assert settings.tls_private_key_file == "/etc/work-agent/serving-cert/tls.key"
    check_shared_options(settings)


def test_restart_on_kubeconfig_change_can_be_turned_off(tmp_path: Path) -> None:
    values = merged(AGENT_MINIMAL, {"hubKubeconfigSecret": {"restartOnChange": False}})
    assert agent_command(values, tmp_path).settings.terminate_on_files == ()


def test_one_replica_runs_without_leader_election(tmp_path: Path) -> None:
    deployment = render_agent(AGENT_MINIMAL).one("Deployment")
    assert deployment["spec"]["replicas"] == 1
    # Two agents without a Lease must never overlap, not even during a rollout.
    assert deployment["spec"]["strategy"]["type"] == "Recreate"
    assert agent_command(AGENT_MINIMAL, tmp_path).settings.leader_election.disabled


def test_several_replicas_elect_a_leader(tmp_path: Path) -> None:
    values = AGENT_VALUE_SETS["replicas-2"]
    deployment = render_agent(values).one("Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert "--disable-leader-election" not in args_of(deployment)
    election = agent_command(values, tmp_path).settings.leader_election
    assert not election.disabled
    assert election.lease_name == LEASE_NAME
    timings = (election.lease_duration, election.renew_deadline, election.retry_period)
    assert timings == (137, 107, 26)


# -- hub kubeconfig -----------------------------------------------------------------------


def test_inline_hub_kubeconfig_becomes_a_mounted_secret() -> None:
    rendered = render_agent(AGENT_MINIMAL)
    secret = rendered.one("Secret")
    assert base64.b64decode(secret["data"]["kubeconfig"]).decode() == HUB_KUBECONFIG
    pod = rendered.one("Deployment")["spec"]["template"]
    assert "checksum/hub-kubeconfig" in pod["metadata"]["annotations"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["hub-kubeconfig"]["secret"]["secretName"] == secret["metadata"]["name"]
    mounts = {m["name"]: m for m in container(rendered.one("Deployment"))["volumeMounts"]}
    assert mounts["hub-kubeconfig"] == {
        "name": "hub-kubeconfig",
        "mountPath": "/spoke/hub-kubeconfig",
        "readOnly": True,
    }


def test_existing_hub_kubeconfig_secret_is_mounted_whole(tmp_path: Path) -> None:
    values = AGENT_VALUE_SETS["existing-secret"]
    rendered = render_agent(values)
    assert rendered.of_kind("Secret") == []
    pod = rendered.one("Deployment")["spec"]["template"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    # Whole, not one key: kubeconfigs naming tls.crt/tls.key by relative path keep working.
    assert volumes["hub-kubeconfig"] == {
        "name": "hub-kubeconfig",
        "secret": {"secretName": "hub-kubeconfig-secret"},
    }
    assert "annotations" not in pod["metadata"]
    settings = agent_command(values, tmp_path).settings
    assert settings.hub_kubeconfig == "/spoke/hub-kubeconfig/kubeconfig"


# -- pod security, probes, resources -------------------------------------------------------


def test_probes_use_https_on_the_listen_port_unless_plain_http_is_chosen() -> None:
    plain = AGENT_VALUE_SETS["plain-http"]
    for values, port, scheme in (
        (AGENT_MINIMAL, 8443, "HTTPS"),
        (AGENT_ALL_OPTIONS, 9443, "HTTPS"),
        (plain, 8443, "HTTP"),
    ):
        rendered = render_agent(values)
        box = container(rendered.one("Deployment"))
        assert box["ports"] == [{"name": "metrics", "containerPort": port, "protocol": "TCP"}]
        for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
            assert box[probe]["httpGet"] == {"path": path, "port": "metrics", "scheme": scheme}
        service = rendered.one("Service")
        assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def test_service_monitor_is_off_by_default_and_scrapes_the_metrics_service() -> None:
    assert render_agent(AGENT_MINIMAL).of_kind("ServiceMonitor") == []
    rendered = render_agent(AGENT_ALL_OPTIONS)
    monitor = rendered.one("ServiceMonitor")
    service = rendered.one("Service")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    # A real certificate is verified against its Secret's CA, for the Service's name.
    assert monitor["spec"]["endpoints"] == [
        {
            "port": "metrics",
            "path": "/metrics",
            "scheme": "https",
            "interval": "15s",
            "scrapeTimeout": "5s",
            # The agent reviews the caller over HTTPS: Prometheus sends its own token.
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "tlsConfig": {
                "ca": {"secret": {"name": "work-agent-serving-cert", "key": "ca.crt"}},
                "serverName": f"{service['metadata']['name']}.{AGENT_NAMESPACE}.svc",
            },
        }
    ]
    assert service["spec"]["ports"][0]["port"] == 9090


def test_service_monitor_tls_follows_the_endpoint() -> None:
    def endpoint(values: Values) -> dict[str, Any]:
        monitor = render_agent(values).one("ServiceMonitor")
        (only,) = monitor["spec"]["endpoints"]
        return dict(only)

    self_signed = endpoint(AGENT_VALUE_SETS["service-monitor"])
    assert (self_signed["scheme"], self_signed["tlsConfig"]) == (
        "https",
        {"insecureSkipVerify": True},
    )
    plain = endpoint(AGENT_VALUE_SETS["plain-http"])
    assert plain["scheme"] == "http"
    assert "tlsConfig" not in plain
    assert "bearerTokenFile" not in plain
    own = {"ca": {"configMap": {"name": "agent-ca", "key": "ca.crt"}}, "serverName": "agent"}
    chosen = endpoint(
        merged(AGENT_MINIMAL, {"serviceMonitor": {"enabled": True, "tlsConfig": own}})
    )
    assert chosen["tlsConfig"] == own


def test_all_options_reach_the_pod() -> None:
    deployment = render_agent(AGENT_ALL_OPTIONS).one("Deployment")
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"]["example.com/tier"] == "agent"
    assert pod["metadata"]["annotations"]["example.com/scrape"] == "true"
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "klusterlet-work-sa"
    assert spec["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["tolerations"] == AGENT_ALL_OPTIONS["tolerations"]
    assert spec["affinity"] == AGENT_ALL_OPTIONS["affinity"]
    box = container(deployment)
    assert box["image"] == "registry.example.com/ocm/ocm-work:v0.1.0"
    assert box["imagePullPolicy"] == "Always"
    assert box["resources"] == AGENT_ALL_OPTIONS["resources"]


def test_image_tag_defaults_to_the_app_version() -> None:
    box = container(render_agent(AGENT_MINIMAL).one("Deployment"))
    assert box["image"] == f"ocm-work:{metadata.version('ocm-work')}"


# -- RBAC ---------------------------------------------------------------------------------


def _rules(role: dict[str, Any]) -> list[tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]]:
    return [
        (tuple(r.get("apiGroups", ())), tuple(r.get("resources", ())), frozenset(r["verbs"]))
        for r in role.get("rules") or []
    ]


def _grants(role: dict[str, Any], group: str, resource: str, *verbs: str) -> bool:
    return any(
        group in groups and resource in resources and set(verbs) <= granted
        for groups, resources, granted in _rules(role)
    )


def test_rbac_grants_what_ocm_grants_its_work_agent() -> None:
    rendered = render_agent(AGENT_MINIMAL)
    roles = {r["metadata"]["name"]: r for r in rendered.of_kind("ClusterRole")}
    assert set(roles) == {"work-agent:agent", "work-agent:aggregate", "work-agent:execution"}

    agent = roles["work-agent:agent"]
    work = "work.open-cluster-management.io"
    # Patches only (tests/security/test_chart_rbac.py holds the exact allow-list).
    amw_verbs = ("get", "list", "watch", "create", "patch", "delete")
    assert _grants(agent, work, "appliedmanifestworks", *amw_verbs)
    assert _grants(agent, work, "appliedmanifestworks/status", "patch")
    assert _grants(agent, "authorization.k8s.io", "subjectaccessreviews", "create")
    assert _grants(agent, "authentication.k8s.io", "tokenreviews", "create")

    # Aggregation by OCM's label, so ClusterRoles shipped in works extend the agent.
    aggregate = roles["work-agent:aggregate"]
    assert aggregate["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {AGGREGATE_LABEL: "true"}}]
    }
    assert "rules" not in aggregate  # the controller manager owns them

    execution = roles["work-agent:execution"]
    assert execution["metadata"]["labels"][AGGREGATE_LABEL] == "true"
    assert _grants(execution, "apiextensions.k8s.io", "customresourcedefinitions", *READ_WRITE)
    assert _grants(execution, "", "namespaces", "create", "delete")
    for kind in ("clusterroles", "roles"):
        assert _grants(
            execution, "rbac.authorization.k8s.io", kind, *READ_WRITE, "bind", "escalate"
        )
    for kind in ("clusterrolebindings", "rolebindings"):
        assert _grants(execution, "rbac.authorization.k8s.io", kind, *READ_WRITE)

    bindings = {b["metadata"]["name"]: b for b in rendered.of_kind("ClusterRoleBinding")}
    assert {name: b["roleRef"]["name"] for name, b in bindings.items()} == {
        "work-agent:agent": "work-agent:agent",
        "work-agent:aggregate": "work-agent:aggregate",
        # Admin-level rights, as OCM grants them (not cluster-admin).
        "work-agent:execution-admin": "admin",
    }
    subject = {"kind": "ServiceAccount", "name": "work-agent", "namespace": AGENT_NAMESPACE}
    assert all(b["subjects"] == [subject] for b in bindings.values())
    assert rendered.one("ServiceAccount")["metadata"]["name"] == "work-agent"

    role = rendered.one("Role")
    assert _grants(role, "coordination.k8s.io", "leases", "get", "create", "update")
    assert not _grants(role, "", "events", "create")  # the agent writes no Events
    binding = rendered.one("RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [subject]


def test_rbac_options() -> None:
    rendered = render_agent(AGENT_ALL_OPTIONS)
    execution = rendered.one("ClusterRole", "work-agent:execution")
    assert _grants(execution, "cluster.x-k8s.io", "machines", "get", "create", "delete")
    admin = rendered.one("ClusterRoleBinding", "work-agent:execution-admin")
    assert admin["roleRef"]["name"] == "cluster-admin"
    account = rendered.one("ServiceAccount")
    assert account["metadata"]["name"] == "klusterlet-work-sa"
    assert account["metadata"]["annotations"] == {"example.com/team": "ocm"}
    for binding in (*rendered.of_kind("ClusterRoleBinding"), *rendered.of_kind("RoleBinding")):
        assert binding["subjects"][0]["name"] == "klusterlet-work-sa"


def test_release_name_prefixes_every_object() -> None:
    rendered = render_agent(AGENT_MINIMAL, release="spoke")
    names = {(o["kind"], o["metadata"]["name"]) for o in rendered.objects}
    assert ("Deployment", "spoke-work-agent") in names
    assert ("Secret", "spoke-work-agent-hub-kubeconfig") in names
    assert ("ClusterRole", "spoke-work-agent:aggregate") in names
    assert all(name.startswith("spoke-work-agent") for _, name in names)


def test_rendered_yaml_round_trips() -> None:
    rendered = render_agent(AGENT_ALL_OPTIONS)
    assert list(yaml.safe_load_all(rendered.to_yaml())) == list(rendered.objects)
