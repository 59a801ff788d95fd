"""The hub-controller chart's gRPC server: off by default; when on, its objects, flags, RBAC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from hubcontroller.cli import GrpcServerCommand, parse_command_line
from hubcontroller.grpcserver.config import load_server_config
from tests.charts.rendering import (
    HUB_CHART,
    HUB_NAMESPACE,
    HUB_VALUE_SETS,
    Values,
    args_of,
    container,
    lint_findings,
    render_hub,
)

NAME = "hub-controller-grpc-server"
ENABLED: Values = {"grpcServer": {"enabled": True, "certificate": {"secretName": "grpc-tls"}}}
ALL: Values = {
    "grpcServer": {
        "enabled": True,
        "replicas": 2,
        "port": 9090,
        "healthPort": 9091,
        "maxReceiveMessageSize": 8388608,
        "heartbeat": {"enabled": True, "interval": "30s"},
        "kubeAPIQPS": 100,
        "kubeAPIBurst": 200,
        "certificate": {
            "secretName": "grpc-tls",
            "clientCASecretName": "agent-ca",
            "clientCAKey": "ca-bundle.crt",
        },
        "service": {"type": "LoadBalancer", "port": 443, "annotations": {"a": "b"}},
    }
}


def command(values: Values) -> GrpcServerCommand:
    """The Deployment's arguments, parsed by ``hubcontroller``'s command line."""
    deployment = render_hub(values).one("Deployment", NAME)
    assert container(deployment)["command"] == ["hubcontroller"]
    parsed = parse_command_line(args_of(deployment))
    assert isinstance(parsed, GrpcServerCommand)
    assert parsed.notices == ()
    return parsed


def server_config(values: Values, tmp_path: Path) -> Any:
    """The rendered server config, read by the server's own loader."""
    config_map = render_hub(values).one("ConfigMap", f"{NAME}-config")
    path = tmp_path / "config.yaml"
    path.write_text(config_map["data"]["config.yaml"])
    return load_server_config(str(path))


@pytest.mark.parametrize("value_set", sorted(HUB_VALUE_SETS))
def test_off_by_default(value_set: str) -> None:
    rendered = render_hub(HUB_VALUE_SETS[value_set])
    assert not [o for o in rendered.objects if "grpc" in o["metadata"]["name"]]


def test_enabled_renders_the_server_objects(tmp_path: Path) -> None:
    rendered = render_hub(ENABLED)
    names = {
        (o["kind"], o["metadata"]["name"])
        for o in rendered.objects
        if "grpc" in o["metadata"]["name"]
    }
    assert names == {
        ("ConfigMap", f"{NAME}-config"),
        ("Deployment", NAME),
        ("Service", NAME),
        ("ServiceAccount", NAME),
        ("ClusterRole", NAME),
        ("ClusterRoleBinding", NAME),
    }
    settings = command(ENABLED).settings
    assert settings.server_config == "/etc/grpc-server/config.yaml"
    assert settings.heartbeat_interval == 10.0 and not settings.heartbeat_disabled
    config = server_config(ENABLED, tmp_path)
    assert config.port == 8090
    assert config.client_ca_file == ""
    assert config.tls_cert_file == "/var/run/secrets/hub/grpc/serving-cert/tls.crt"
    service = rendered.one("Service", NAME)
    assert service["spec"]["ports"] == [
        {"name": "grpc", "port": 8090, "targetPort": "grpc", "protocol": "TCP"}
    ]
    assert NAME in rendered.notes


def test_all_options_reach_the_server(tmp_path: Path) -> None:
    rendered = render_hub(ALL)
    deployment = rendered.one("Deployment", NAME)
    assert deployment["spec"]["replicas"] == 2
    settings = command(ALL).settings
    assert settings.heartbeat_interval == 30.0
    assert settings.listen == "0.0.0.0:9091"
    assert settings.insecure_serving  # the probes are plain HTTP
    assert (settings.kube_api_qps, settings.kube_api_burst) == (100.0, 200)
    config = server_config(ALL, tmp_path)
    assert config.port == 9090
    assert config.max_receive_message_size == 8388608
    assert config.client_ca_file == "/var/run/secrets/hub/grpc/ca/ca-bundle.crt"
    pod = deployment["spec"]["template"]["spec"]
    ca = next(v for v in pod["volumes"] if v["name"] == "client-ca")
    assert ca["secret"] == {
        "secretName": "agent-ca",
        "items": [{"key": "ca-bundle.crt", "path": "ca-bundle.crt"}],
    }
    service = rendered.one("Service", NAME)
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["metadata"]["annotations"] == {"a": "b"}
    disabled = {"grpcServer": {**ALL["grpcServer"], "heartbeat": {"enabled": False}}}
    assert command(disabled).settings.heartbeat_disabled


def test_rbac_is_what_the_server_does() -> None:
    rendered = render_hub(ENABLED)
    rules = rendered.one("ClusterRole", NAME)["rules"]
    assert rules == [
        {
            "apiGroups": ["work.open-cluster-management.io"],
            "resources": ["manifestworks"],
            "verbs": ["get", "list", "watch", "patch", "update"],
        },
        {
            "apiGroups": ["work.open-cluster-management.io"],
            "resources": ["manifestworks/status"],
            "verbs": ["patch", "update"],
        },
        {
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["tokenreviews"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["subjectaccessreviews"],
            "verbs": ["create"],
        },
    ]
    binding = rendered.one("ClusterRoleBinding", NAME)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": NAME, "namespace": HUB_NAMESPACE}
    ]


def test_pod_is_restricted_and_probed() -> None:
    pod = render_hub(ENABLED).one("Deployment", NAME)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    box = pod["containers"][0]
    assert box["securityContext"]["readOnlyRootFilesystem"] is True
    assert box["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert box["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "healthz",
        "scheme": "HTTP",
    }
    assert box["livenessProbe"]["httpGet"]["path"] == "/livez"


def test_a_serving_certificate_is_required() -> None:
    with pytest.raises(
        helm.HelmRenderError, match=r"grpcServer\.certificate\.secretName is required"
    ):
        render_hub({"grpcServer": {"enabled": True}})


@pytest.mark.parametrize(
    "values",
    [
        {"grpcServer": {"enabled": "yes"}},
        {"grpcServer": {"port": 70000}},
        {"grpcServer": {"heartbeat": {"interval": "5s"}}},
        {"grpcServer": {"service": {"type": "ExternalName"}}},
        {"grpcServer": {"certificate": {"secretName": "Bad_Name"}}},
        {"grpcServer": {"tls": {}}},
    ],
)
def test_schema_rejects_bad_values(values: Values) -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        render_hub(values)


@pytest.mark.parametrize("values", [ENABLED, ALL])
def test_strict_lint_is_clean(values: Values) -> None:
    assert lint_findings(HUB_CHART, values, namespace=HUB_NAMESPACE) == []


def test_values_file_documents_the_defaults() -> None:
    defaults = yaml.safe_load((HUB_CHART / "values.yaml").read_text())["grpcServer"]
    assert defaults["enabled"] is False
    assert defaults["port"] == 8090
