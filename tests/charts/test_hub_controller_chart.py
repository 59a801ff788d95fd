"""The hub-controller chart: rendering, lint, schema, flags, webhook registration, RBAC."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from hubcontroller.cli import ManagerCommand, WebhookCommand, parse_command_line
from hubcontroller.settings import MANAGER_LEASE_NAME
from hubcontroller.webhook import (
    MANIFESTWORK,
    MANIFESTWORK_REPLICASET,
    WebhookSettings,
    served_resources,
)
from tests.charts.rendering import (
    EXISTING_CA_BUNDLE,
    HUB,
    HUB_ALL_OPTIONS,
    HUB_NAMESPACE,
    HUB_VALUE_SETS,
    Rendered,
    Values,
    args_of,
    check_shared_options,
    container,
    merged,
    render_hub,
)

MANAGER = "hub-controller-manager"
WEBHOOK = "hub-controller-webhook"
MW_WEBHOOK = "manifestworkvalidators.admission.work.open-cluster-management.io"
MWRS_WEBHOOK = "manifestworkreplicasetvalidators.admission.work.open-cluster-management.io"
ALL_GATES = frozenset(
    {"ManifestWorkReplicaSet", "CleanUpCompletedManifestWork", "NilExecutorValidating"}
)
READ_WRITE = ("get", "list", "watch", "create", "update", "patch", "delete")


def manager_command(values: Values, tmp_path: Path) -> ManagerCommand:
    """The manager Deployment's arguments, parsed by ``hubcontroller``'s command line."""
    command = HUB.command(values, tmp_path)
    assert isinstance(command, ManagerCommand)
    return command


def webhook_settings(values: Values) -> tuple[WebhookCommand, WebhookSettings]:
    """The webhook Deployment's arguments, parsed and turned into the server's settings."""
    deployment = render_hub(values).one("Deployment", WEBHOOK)
    assert container(deployment)["command"] == ["hubcontroller"]
    command = parse_command_line(args_of(deployment))
    assert isinstance(command, WebhookCommand)
    # What the entry point does next: ports, TLS names and the limit are checked here.
    fields: dict[str, Any] = command.settings.settings_fields()
    return command, WebhookSettings(**fields)


def webhook_configuration(rendered: Rendered) -> dict[str, Any]:
    """The one ValidatingWebhookConfiguration."""
    return rendered.one("ValidatingWebhookConfiguration", MW_WEBHOOK)


# -- rendering and lint -------------------------------------------------------------------


@pytest.mark.parametrize("value_set", sorted(HUB_VALUE_SETS))
def test_renders_the_expected_objects(value_set: str) -> None:
    values = HUB_VALUE_SETS[value_set]
    rendered = render_hub(values)
    names = {(o["kind"], o["metadata"]["name"]) for o in rendered.objects}
    expected = {
        ("ServiceAccount", MANAGER),
        ("ClusterRole", MANAGER),
        ("ClusterRoleBinding", MANAGER),
        ("Role", MANAGER),
        ("RoleBinding", MANAGER),
        ("Deployment", MANAGER),
        ("Service", f"{MANAGER}-metrics"),
        ("ServiceAccount", WEBHOOK),
        ("ClusterRole", WEBHOOK),
        ("ClusterRoleBinding", WEBHOOK),
        ("Deployment", WEBHOOK),
        ("Service", WEBHOOK),
        ("ValidatingWebhookConfiguration", MW_WEBHOOK),
    }
    if not values.get("webhook", {}).get("certificate", {}).get("existingSecret"):
        expected.add(("Secret", f"{WEBHOOK}-serving-cert"))
    if values.get("serviceMonitor", {}).get("enabled"):
        expected |= {("ServiceMonitor", MANAGER), ("ServiceMonitor", WEBHOOK)}
    if values.get("prometheusRule", {}).get("enabled"):
        expected.add(("PrometheusRule", "hub-controller"))
    dashboard = values.get("grafanaDashboard", {})
    if dashboard.get("enabled"):
        expected.add(("ConfigMap", "hub-controller-dashboard"))
    assert names == expected
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration"}
    for obj in rendered.objects:
        if obj["kind"] == "ConfigMap":
            assert obj["metadata"]["namespace"] == (dashboard.get("namespace") or HUB_NAMESPACE)
        elif obj["kind"] not in cluster_scoped:
            assert obj["metadata"]["namespace"] == HUB_NAMESPACE, obj["kind"]
    assert MW_WEBHOOK in rendered.notes


# -- values schema ------------------------------------------------------------------------

BAD_VALUES: dict[str, Values] = {
    "unknown top-level key": {"featureGate": {}},
    "unknown manager key": {"manager": {"workers": 5}},
    "unknown webhook key": {"webhook": {"ports": 9443}},
    "unknown feature gate": {"featureGates": {"ManifestWorkReplicaSets": True}},
    "gate not a boolean": {"featureGates": {"ManifestWorkReplicaSet": "true"}},
    "cloud events gate (no effect here)": {"featureGates": {"CloudEventsDrivers": True}},
    "replicas as a string": {"manager": {"replicas": "2"}},
    "negative replicas": {"webhook": {"replicas": -1}},
    "negative burst": {"manager": {"kubeAPIBurst": -5}},
    "negative manifest limit": {"webhook": {"manifestLimit": -1}},
    "port out of range": {"webhook": {"port": 65536}},
    "port as a string": {"webhook": {"healthProbePort": "8000"}},
    "unknown TLS version": {"webhook": {"tlsMinVersion": "TLS1.2"}},
    "cipher suites as a string": {"webhook": {"tlsCipherSuites": "TLS_AES_128_GCM_SHA256"}},
    "unknown failure policy": {"webhook": {"failurePolicy": "Retry"}},
    "timeout over 30 s": {"webhook": {"timeoutSeconds": 31}},
    "zero validity": {"webhook": {"certificate": {"validityDays": 0}}},
    "caBundle not base64": {"webhook": {"certificate": {"caBundle": "-----BEGIN"}}},
    "zero lease duration": {"manager": {"leaderElection": {"leaseDuration": "0s"}}},
    "duration without unit": {"manager": {"leaderElection": {"retryPeriod": "26"}}},
    "root user": {"securityContext": {"runAsUser": 0}},
    "unknown log level": {"log": {"level": "trace"}},
    "service monitor flag as a string": {"serviceMonitor": {"enabled": "yes"}},
    "manager https as a string": {"manager": {"listen": {"https": "true"}}},
    "unknown manager TLS version": {"manager": {"listen": {"tls": {"minVersion": "VersionTLS14"}}}},
    "manager cipher suite by its OpenSSL name": {
        "manager": {"listen": {"tls": {"cipherSuites": ["ECDHE-RSA-AES128-GCM-SHA256"]}}}
    },
    "manager cipher suites as one string": {
        "manager": {"listen": {"tls": {"cipherSuites": "TLS_AES_128_GCM_SHA256"}}}
    },
    "invalid serving certificate Secret name": {
        "manager": {"listen": {"tls": {"secretName": "Manager_TLS"}}}
    },
    "unknown manager TLS key": {"manager": {"listen": {"tls": {"certFile": "/tls.crt"}}}},
    "service monitor tlsConfig not an object": {"serviceMonitor": {"tlsConfig": "insecure"}},
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_schema_rejects_bad_values(case: str) -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        render_hub(BAD_VALUES[case])


def test_existing_certificate_needs_its_ca_bundle() -> None:
    with pytest.raises(helm.HelmRenderError, match="caBundle is required"):
        render_hub({"webhook": {"certificate": {"existingSecret": "webhook-serving-cert"}}})


def test_manager_serving_certificate_needs_https() -> None:
    plain_with_cert = {"manager": {"listen": {"https": False, "tls": {"secretName": "mgr-tls"}}}}
    with pytest.raises(helm.HelmRenderError, match=r"secretName needs manager\.listen\.https"):
        render_hub(plain_with_cert)


# -- flags --------------------------------------------------------------------------------


@pytest.mark.parametrize("value_set", sorted(HUB_VALUE_SETS))
def test_every_manager_flag_is_accepted(value_set: str, tmp_path: Path) -> None:
    command = manager_command(HUB_VALUE_SETS[value_set], tmp_path)
    assert command.notices == ()  # no flag that is accepted but ignored
    assert command.settings.namespace == HUB_NAMESPACE


@pytest.mark.parametrize("value_set", sorted(HUB_VALUE_SETS))
def test_every_webhook_flag_is_accepted(value_set: str) -> None:
    command, settings = webhook_settings(HUB_VALUE_SETS[value_set])
    assert command.notices == ()
    assert settings.cert_dir == Path("/etc/webhook/certs")


def test_manager_defaults(tmp_path: Path) -> None:
    settings = manager_command({}, tmp_path).settings
    # Both controller gates stay off by default, as in OCM.
    assert settings.feature_gates == frozenset()
    assert (settings.kube_api_qps, settings.kube_api_burst) == (50, 100)
    assert settings.listen == "0.0.0.0:8443"
    # HTTPS with a certificate the manager makes itself, TLS 1.2 and up, OpenSSL's suites.
    assert not settings.insecure_serving
    assert (settings.tls_cert_file, settings.tls_private_key_file) == ("", "")
    assert (settings.tls_min_version, settings.tls_cipher_suites) == ("", "")
    assert settings.terminate_on_files == ()
    assert (settings.log_format, settings.log_level) == ("json", "info")
    assert settings.leader_election.disabled
    deployment = render_hub({}).one("Deployment", MANAGER)
    assert deployment["spec"]["strategy"]["type"] == "Recreate"


def test_manager_options(tmp_path: Path) -> None:
    settings = manager_command(HUB_ALL_OPTIONS, tmp_path).settings
    assert settings.feature_gates == ALL_GATES
    assert (settings.kube_api_qps, settings.kube_api_burst) == (100, 200)
    assert settings.listen == "0.0.0.0:9000"
    assert settings.tls_cert_file == "/etc/hub-controller/serving-cert/tls.crt"
    assert settings.tls_private_key_file == "/etc/hub-controller/serving-cert/tls.key"
    # A renewed certificate restarts the manager, which then serves it.
    assert settings.terminate_on_files == ("/etc/hub-controller/serving-cert/tls.crt",)
    check_shared_options(settings)
    assert settings.leader_election.lease_name == MANAGER_LEASE_NAME


@pytest.mark.parametrize(
    ("gates", "enabled"),
    [
        ({"ManifestWorkReplicaSet": True}, {"ManifestWorkReplicaSet"}),
        ({"CleanUpCompletedManifestWork": True}, {"CleanUpCompletedManifestWork"}),
    ],
)
def test_controller_gates_are_configurable(
    gates: dict[str, bool], enabled: set[str], tmp_path: Path
) -> None:
    values = {"featureGates": gates}
    assert manager_command(values, tmp_path).settings.feature_gates == enabled
    # The webhook gets the same gates, so both processes agree on what exists.
    assert webhook_settings(values)[1].feature_gates == enabled


def test_webhook_defaults_and_options() -> None:
    _, settings = webhook_settings({})
    ports = (settings.port, settings.health_probe_port, settings.metrics_port)
    assert ports == (9443, 8000, 8080)
    assert settings.manifest_limit == 512000
    assert (settings.tls_min_version, settings.tls_cipher_suites) == ("", "")
    assert settings.feature_gates == frozenset()

    command, settings = webhook_settings(HUB_ALL_OPTIONS)
    ports = (settings.port, settings.health_probe_port, settings.metrics_port)
    assert ports == (10443, 10080, 10081)
    assert settings.manifest_limit == 1048576
    assert settings.tls_min_version == "VersionTLS12"
    assert settings.tls_cipher_suites == ",".join(HUB_ALL_OPTIONS["webhook"]["tlsCipherSuites"])
    assert settings.feature_gates == ALL_GATES
    assert (command.settings.log_format, command.settings.log_level) == ("console", "debug")


# -- webhook registration -----------------------------------------------------------------


def _paths(configuration: dict[str, Any]) -> dict[str, str]:
    return {w["name"]: w["clientConfig"]["service"]["path"] for w in configuration["webhooks"]}


def test_manifestwork_webhook_is_registered_as_ocm_registers_it() -> None:
    rendered = render_hub({})
    configuration = webhook_configuration(rendered)
    assert len(configuration["webhooks"]) == 1
    hook = configuration["webhooks"][0]
    assert hook["name"] == MW_WEBHOOK
    assert hook["clientConfig"]["service"] == {
        "namespace": HUB_NAMESPACE,
        "name": WEBHOOK,
        "port": 443,
        "path": "/validate-work-open-cluster-management-io-v1-manifestwork",
    }
    assert hook["rules"] == [
        {
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["work.open-cluster-management.io"],
            "apiVersions": ["*"],
            "resources": ["manifestworks"],
        }
    ]
    assert hook["failurePolicy"] == "Fail"
    assert hook["sideEffects"] == "None"
    assert hook["timeoutSeconds"] == 10
    assert set(hook["admissionReviewVersions"]) == {"v1", "v1beta1"}
    service = rendered.one("Service", WEBHOOK)
    https = next(p for p in service["spec"]["ports"] if p["port"] == 443)
    assert https["targetPort"] == "webhook"


def test_replicaset_webhook_follows_its_gate() -> None:
    """Registered exactly when the server serves its path (else every MWRS write would fail)."""
    for gates in ({}, {"ManifestWorkReplicaSet": True}, dict.fromkeys(ALL_GATES, True)):
        values: Values = {"featureGates": gates}
        _, settings = webhook_settings(values)
        served = {resource.path for resource in served_resources(settings)}
        registered = set(_paths(webhook_configuration(render_hub(values))).values())
        assert registered == served
    hooks = webhook_configuration(render_hub({"featureGates": {"ManifestWorkReplicaSet": True}}))
    assert _paths(hooks) == {
        MW_WEBHOOK: MANIFESTWORK.path,
        MWRS_WEBHOOK: MANIFESTWORK_REPLICASET.path,
    }
    mwrs = hooks["webhooks"][1]
    assert mwrs["rules"] == [
        {
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": ["work.open-cluster-management.io"],
            "apiVersions": ["v1alpha1"],
            "resources": ["manifestworkreplicasets"],
        }
    ]
    assert mwrs["sideEffects"] == "None"


def test_webhook_options_reach_the_registration() -> None:
    configuration = webhook_configuration(render_hub(HUB_ALL_OPTIONS))
    for hook in configuration["webhooks"]:
        assert hook["failurePolicy"] == "Ignore"
        assert hook["timeoutSeconds"] == 5


def _pem(data_b64: str) -> bytes:
    return base64.b64decode(data_b64)


def test_generated_certificate_serves_the_webhook_service() -> None:
    rendered = render_hub({})
    secret = rendered.one("Secret", f"{WEBHOOK}-serving-cert")
    assert secret["type"] == "kubernetes.io/tls"
    ca_bundle = webhook_configuration(rendered)["webhooks"][0]["clientConfig"]["caBundle"]
    assert ca_bundle == secret["data"]["ca.crt"]

    ca = x509.load_pem_x509_certificate(_pem(ca_bundle))
    cert = x509.load_pem_x509_certificate(_pem(secret["data"]["tls.crt"]))
    key = serialization.load_pem_private_key(_pem(secret["data"]["tls.key"]), password=None)
    # Signed by the CA the API server is told to trust...
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    # ...for the name the API server dials: <service>.<namespace>.svc...
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert f"{WEBHOOK}.{HUB_NAMESPACE}.svc" in names.get_values_for_type(x509.DNSName)
    # ...with the key the server loads, and for the configured lifetime.
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.public_key() == cert.public_key()
    assert _lifetime(cert) == datetime.timedelta(days=3650)

    short = render_hub(HUB_ALL_OPTIONS).one("Secret")
    assert _lifetime(x509.load_pem_x509_certificate(_pem(short["data"]["tls.crt"]))) == (
        datetime.timedelta(days=365)
    )


def _lifetime(cert: x509.Certificate) -> datetime.timedelta:
    """Validity period, to the day (sprig backdates notBefore by a few seconds at most)."""
    period = cert.not_valid_after_utc - cert.not_valid_before_utc
    return datetime.timedelta(days=round(period / datetime.timedelta(days=1)))


def test_certificate_is_mounted_where_the_webhook_reads_it() -> None:
    rendered = render_hub({})
    pod = rendered.one("Deployment", WEBHOOK)["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["serving-cert"]["secret"]["secretName"] == f"{WEBHOOK}-serving-cert"
    mounts = {m["name"]: m for m in container(rendered.one("Deployment", WEBHOOK))["volumeMounts"]}
    assert mounts["serving-cert"]["mountPath"] == "/etc/webhook/certs"
    assert mounts["serving-cert"]["readOnly"] is True


def test_existing_certificate_secret() -> None:
    rendered = render_hub(HUB_VALUE_SETS["existing-secret"])
    assert rendered.of_kind("Secret") == []
    pod = rendered.one("Deployment", WEBHOOK)["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["serving-cert"]["secret"]["secretName"] == "webhook-serving-cert"
    for hook in webhook_configuration(rendered)["webhooks"]:
        assert hook["clientConfig"]["caBundle"] == EXISTING_CA_BUNDLE


# -- security, probes, metrics -------------------------------------------------------------


def _http_get(box: dict[str, Any], probe: str) -> tuple[str, str, str]:
    get = box[probe]["httpGet"]
    return get["path"], get["port"], get["scheme"]


def test_probes() -> None:
    """The manager's probes are HTTPS unless plain HTTP is chosen; the webhook's are HTTP."""
    cases = (
        (HUB_VALUE_SETS["default"], 8443, 8000, "HTTPS"),
        (HUB_ALL_OPTIONS, 9000, 10080, "HTTPS"),
        (HUB_VALUE_SETS["plain-http"], 8443, 8000, "HTTP"),
    )
    for values, manager_port, health_port, scheme in cases:
        rendered = render_hub(values)
        manager = container(rendered.one("Deployment", MANAGER))
        ports = {p["name"]: p["containerPort"] for p in manager["ports"]}
        assert ports == {"metrics": manager_port}
        assert _http_get(manager, "livenessProbe") == ("/livez", "metrics", scheme)
        assert _http_get(manager, "readinessProbe") == ("/readyz", "metrics", scheme)
        webhook = container(rendered.one("Deployment", WEBHOOK))
        ports = {p["name"]: p["containerPort"] for p in webhook["ports"]}
        assert ports["healthz"] == health_port
        assert _http_get(webhook, "livenessProbe") == ("/healthz", "healthz", "HTTP")
        assert _http_get(webhook, "readinessProbe") == ("/readyz", "healthz", "HTTP")


def test_service_monitors_scrape_both_components() -> None:
    assert render_hub({}).of_kind("ServiceMonitor") == []
    rendered = render_hub(HUB_ALL_OPTIONS)
    services = {s["metadata"]["name"]: s for s in rendered.of_kind("Service")}
    for monitor in rendered.of_kind("ServiceMonitor"):
        selector = monitor["spec"]["selector"]["matchLabels"]
        selected = [
            s for s in services.values() if selector.items() <= s["metadata"]["labels"].items()
        ]
        assert len(selected) == 1
        assert any(p["name"] == "metrics" for p in selected[0]["spec"]["ports"])
        assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
        assert monitor["metadata"]["labels"]["release"] == "prometheus"


SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def _scrape(values: Values, name: str) -> dict[str, Any]:
    """The one endpoint of a component's ServiceMonitor."""
    (endpoint,) = render_hub(values).one("ServiceMonitor", name)["spec"]["endpoints"]
    return dict(endpoint)


def test_service_monitor_tls_follows_the_manager_endpoint() -> None:
    # Self-signed: HTTPS, nothing to verify against.
    self_signed = _scrape(HUB_VALUE_SETS["service-monitor"], MANAGER)
    assert (self_signed["scheme"], self_signed["tlsConfig"]) == (
        "https",
        {"insecureSkipVerify": True},
    )
    # Over HTTPS the manager reviews the caller: Prometheus sends its own token.
    assert self_signed["bearerTokenFile"] == SERVICE_ACCOUNT_TOKEN
    # A real certificate is verified against its Secret's CA, for the Service's name.
    verified = _scrape(HUB_ALL_OPTIONS, MANAGER)
    assert verified["scheme"] == "https"
    assert verified["tlsConfig"] == {
        "ca": {"secret": {"name": "manager-serving-cert", "key": "ca.crt"}},
        "serverName": f"{MANAGER}-metrics.{HUB_NAMESPACE}.svc",
    }
    plain = _scrape(HUB_VALUE_SETS["plain-http"], MANAGER)
    assert plain["scheme"] == "http"
    assert "tlsConfig" not in plain
    assert "bearerTokenFile" not in plain
    own = {"ca": {"configMap": {"name": "hub-ca", "key": "ca.crt"}}, "serverName": "manager"}
    chosen = _scrape({"serviceMonitor": {"enabled": True, "tlsConfig": own}}, MANAGER)
    assert chosen["tlsConfig"] == own


@pytest.mark.parametrize("value_set", ["service-monitor", "all-options", "plain-http"])
def test_webhook_metrics_stay_plain_http(value_set: str) -> None:
    endpoint = _scrape(HUB_VALUE_SETS[value_set], WEBHOOK)
    assert endpoint["scheme"] == "http"
    assert "tlsConfig" not in endpoint
    assert "bearerTokenFile" not in endpoint


def test_all_options_reach_the_pods() -> None:
    rendered = render_hub(HUB_ALL_OPTIONS)
    for name, component in ((MANAGER, "manager"), (WEBHOOK, "webhook")):
        deployment = rendered.one("Deployment", name)
        options = HUB_ALL_OPTIONS[component]
        assert deployment["spec"]["replicas"] == options["replicas"]
        pod = deployment["spec"]["template"]
        assert pod["metadata"]["labels"]["example.com/tier"] == component
        assert pod["metadata"]["annotations"] == options["podAnnotations"]
        spec = pod["spec"]
        assert spec["serviceAccountName"] == name
        assert spec["imagePullSecrets"] == [{"name": "registry-credentials"}]
        assert spec["priorityClassName"] == "system-cluster-critical"
        assert spec["securityContext"]["runAsUser"] == 10001
        assert spec["securityContext"]["runAsGroup"] == 10002
        assert spec["nodeSelector"] == options["nodeSelector"]
        assert spec["tolerations"] == options["tolerations"]
        assert spec["affinity"] == options["affinity"]
        box = container(deployment)
        assert box["image"] == "registry.example.com/ocm/ocm-work:v0.1.0"
        assert box["resources"] == options["resources"]


# -- RBAC ---------------------------------------------------------------------------------


def _rule_set(role: dict[str, Any]) -> set[tuple[str, str, frozenset[str]]]:
    return {
        (group, resource, frozenset(rule["verbs"]))
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def test_manager_rbac_is_hub_md_section_1() -> None:
    rendered = render_hub({})
    work, cluster = "work.open-cluster-management.io", "cluster.open-cluster-management.io"
    events = frozenset({"create", "patch", "update"})
    assert _rule_set(rendered.one("ClusterRole", MANAGER)) == {
        (work, "manifestworks", frozenset({*READ_WRITE, "deletecollection", "execute-as"})),
        (work, "manifestworkreplicasets", frozenset({"get", "list", "watch", "update", "patch"})),
        (work, "manifestworkreplicasets/status", frozenset({"update", "patch"})),
        (work, "manifestworkreplicasets/finalizers", frozenset({"update"})),
        (cluster, "placements", frozenset({"get", "list", "watch"})),
        (cluster, "placementdecisions", frozenset({"get", "list", "watch"})),
        ("authorization.k8s.io", "subjectaccessreviews", frozenset({"create"})),
        ("authentication.k8s.io", "tokenreviews", frozenset({"create"})),
        ("", "events", events),
        ("events.k8s.io", "events", events),
    }
    lease_role = rendered.one("Role", MANAGER)
    assert lease_role["metadata"]["namespace"] == HUB_NAMESPACE
    assert _rule_set(lease_role) == {
        ("coordination.k8s.io", "leases", frozenset({"get", "create", "update"}))
    }
    subject = [{"kind": "ServiceAccount", "name": MANAGER, "namespace": HUB_NAMESPACE}]
    assert rendered.one("ClusterRoleBinding", MANAGER)["subjects"] == subject
    assert rendered.one("ClusterRoleBinding", MANAGER)["roleRef"]["name"] == MANAGER
    assert rendered.one("RoleBinding", MANAGER)["subjects"] == subject


def test_webhook_rbac_is_only_subject_access_reviews() -> None:
    rendered = render_hub({})
    assert _rule_set(rendered.one("ClusterRole", WEBHOOK)) == {
        ("authorization.k8s.io", "subjectaccessreviews", frozenset({"create"}))
    }
    binding = rendered.one("ClusterRoleBinding", WEBHOOK)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": WEBHOOK, "namespace": HUB_NAMESPACE}
    ]


def test_release_name_prefixes_every_namespaced_object() -> None:
    rendered = render_hub(merged({}, {}), release="ocm")
    for obj in rendered.objects:
        if obj["kind"] != "ValidatingWebhookConfiguration":  # OCM's fixed name
            assert obj["metadata"]["name"].startswith("ocm-hub-controller-"), obj["kind"]
    hook = webhook_configuration(rendered)["webhooks"][0]
    assert hook["clientConfig"]["service"]["name"] == "ocm-hub-controller-webhook"
