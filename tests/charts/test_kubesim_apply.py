"""The rendered charts against an API server, driven by the real kubectl.

Each test runs against kubesim and against a real kube-apiserver. A
server-side dry run (``kubectl apply --dry-run=server --validate=strict``)
sends every object through the API server's decoding, defaulting and
validation without storing it, so the charts are proved to be valid
Kubernetes objects, not merely valid YAML. The hub chart's webhook
registration is then exercised for real: the API server calls our webhook
server with the chart's generated certificate, Service and paths (on a real
apiserver the Service is an ExternalName of 127.0.0.1 on the server's port,
as nothing routes a ClusterIP here; see ``tests.support.prepare``).
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocmkit.kube import MANIFESTWORK_REPLICASETS, MANIFESTWORKS, KubeClient
from tests.charts.rendering import (
    AGENT,
    AGENT_CHART,
    AGENT_NAMESPACE,
    AGENT_VALUE_SETS,
    HUB,
    HUB_CHART,
    HUB_NAMESPACE,
    LONG_RELEASE,
    Chart,
    Rendered,
    container,
    render_agent,
    render_hub,
)
from tests.conftest import Kubectl
from tests.support.crds import crd
from tests.support.prepare import is_kubesim, local_webhook_service, wait_admission
from tests.support.targets import Cluster
from tests.webhook.conftest import local_settings, running
from tests.webhook.helpers import configmap, manifest_work, replica_set

pytestmark = pytest.mark.kubectl


@pytest.fixture
def kubectl(cluster: Cluster, tmp_path: Path) -> Kubectl:
    """kubectl as the admin of ``cluster`` (kubesim or a real apiserver)."""
    if shutil.which("kubectl") is None:
        pytest.fail("the kubectl binary is required for these tests and is not on PATH")
    return Kubectl(tmp_path / "kubeconfig")


# prometheus-operator's CRDs are not ours to ship: minimal stand-ins that serve the
# kinds, so the ServiceMonitors and PrometheusRules go through the same dry run as
# everything else.
def stand_in_crd(kind: str, plural: str) -> dict[str, Any]:
    """A CRD of ``monitoring.coreos.com/v1`` ``kind`` that accepts any content."""
    return crd("monitoring.coreos.com", kind, plural=plural, list_kind=True)


MONITORING_CRDS = (
    stand_in_crd("ServiceMonitor", "servicemonitors"),
    stand_in_crd("PrometheusRule", "prometheusrules"),
)


async def prepare(kubectl: Kubectl, namespace: str, chart: Path) -> None:
    """What `helm install` needs first: the namespace, and the chart's CRDs installed."""
    await kubectl("create", "namespace", namespace)
    # Where the all-options value sets put the dashboards' ConfigMaps.
    await kubectl("create", "namespace", "monitoring")
    crds = sorted((chart / "crds").glob("*.yaml"))
    await kubectl("apply", *(f"--filename={p}" for p in crds))
    await kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(MONITORING_CRDS))
    # A real apiserver serves a new CRD once it is Established.
    await kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")


async def dry_run(kubectl: Kubectl, rendered: Rendered) -> list[str]:
    """``kubectl apply --dry-run=server``; the ``kind/name`` lines it printed."""
    result = await kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=rendered.to_yaml()
    )
    lines = result.stdout.splitlines()
    assert all(line.endswith(" (server dry run)") for line in lines), result.stdout
    return [line.split()[0] for line in lines]


def expected_lines(objects: Iterable[dict[str, Any]]) -> list[str]:
    """kubectl's ``<resource>.<group>/<name>`` for each object."""
    return sorted(f"{_resource(o)}/{o['metadata']['name']}" for o in objects)


def _resource(obj: dict[str, Any]) -> str:
    group = obj["apiVersion"].rpartition("/")[0]
    kind = obj["kind"].lower()
    return f"{kind}.{group}" if group else kind


async def stored(kubectl: Kubectl, namespace: str) -> list[str]:
    """Names of the chart's kinds actually stored (a dry run must store none).

    The namespace's own ``default`` ServiceAccount is not the chart's: on a real
    cluster kube-controller-manager makes one in every namespace.
    """
    result = await kubectl(
        "get",
        "deployments,services,secrets,serviceaccounts,roles,rolebindings",
        "-n",
        namespace,
        "-o",
        "name",
    )
    return [name for name in result.stdout.split() if name != "serviceaccount/default"]


@pytest.mark.parametrize("chart", [AGENT, HUB], ids=lambda c: c.name)
async def test_chart_objects_pass_a_server_side_dry_run(kubectl: Kubectl, chart: Chart) -> None:
    await prepare(kubectl, chart.namespace, chart.path)
    for value_set in sorted(chart.value_sets):
        rendered = chart.render(chart.value_sets[value_set])
        printed = await dry_run(kubectl, rendered)
        assert sorted(printed) == expected_lines(rendered.objects), value_set
    long_names = chart.render(chart.value_sets["service-monitor"], release=LONG_RELEASE)
    assert sorted(await dry_run(kubectl, long_names)) == expected_lines(long_names.objects)
    assert await stored(kubectl, chart.namespace) == []


async def test_the_dry_run_catches_invalid_objects(kubectl: Kubectl) -> None:
    """The check above has teeth: a broken Deployment is refused."""
    await prepare(kubectl, AGENT_NAMESPACE, AGENT_CHART)
    deployment = render_agent(AGENT_VALUE_SETS["default"]).one("Deployment")
    deployment["spec"]["replica"] = 2  # misspelt
    container(deployment)["ports"][0]["containerPort"] = 70000
    result = await kubectl(
        "apply",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        "-",
        stdin=json.dumps(deployment),
        check=False,
    )
    assert result.returncode != 0
    assert 'unknown field "spec.replica"' in result.stderr


async def test_generated_webhook_registration_reaches_the_webhook(
    kubectl: Kubectl, cluster: Cluster, tmp_path: Path
) -> None:
    """Install the registration for real and let the API server call our webhook.

    Proves together: the generated CA is trusted for the Service's DNS name,
    the key loads, the paths and rules route ManifestWork and
    ManifestWorkReplicaSet writes to the right handlers.
    """
    rendered = render_hub({"featureGates": {"ManifestWorkReplicaSet": True}})
    await prepare(kubectl, HUB_NAMESPACE, HUB_CHART)
    await kubectl("create", "namespace", "cluster1")

    secret = rendered.one("Secret")
    certdir = tmp_path / "certs"
    certdir.mkdir()
    for key in ("tls.crt", "tls.key"):
        (certdir / key).write_bytes(base64.b64decode(secret["data"][key]))
    settings = local_settings(certdir, feature_gates=frozenset({"ManifestWorkReplicaSet"}))
    async with running(settings) as server:
        registration = rendered.one("ValidatingWebhookConfiguration")
        if is_kubesim(cluster):
            service = rendered.one("Service", "hub-controller-webhook")
            # No pods here: point the Service's endpoints at the in-test server.
            endpoints = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "hub-controller-webhook", "namespace": HUB_NAMESPACE},
                "subsets": [
                    {
                        "addresses": [{"ip": "127.0.0.1"}],
                        "ports": [{"name": "https", "port": server.port}],
                    }
                ],
            }
            routing = [service, endpoints]
        else:
            # An ExternalName Service of 127.0.0.1 is dialled on the registration's port.
            routing = local_webhook_service(
                cluster, HUB_NAMESPACE, "hub-controller-webhook", server.port
            )
            for hook in registration["webhooks"]:
                hook["clientConfig"]["service"]["port"] = server.port
        await kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([*routing, registration]))
        async with await KubeClient.from_kubeconfig(
            str(tmp_path / "kubeconfig"), qps=0, name="admin"
        ) as client:
            probes = (
                (MANIFESTWORKS, manifest_work([configmap("cm1"), configmap("cm1")], name="p")),
                (
                    MANIFESTWORK_REPLICASETS,
                    replica_set([configmap("cm1"), configmap("cm1")], namespace="cluster1"),
                ),
            )
            for (resource, probe), hook in zip(probes, registration["webhooks"], strict=True):
                await wait_admission(client, resource, probe, hook["name"])

        await kubectl("create", "-f", "-", stdin=json.dumps(manifest_work(name="good")))
        refusals = (
            (
                manifest_work([configmap("cm1"), configmap("cm1")], name="dup"),
                'admission webhook "manifestworkvalidators.admission.work.open-cluster-'
                'management.io" denied the request: duplicate manifest for resource '
                "default/cm1 with resource type v1.ConfigMap",
            ),
            (
                replica_set([configmap("cm1"), configmap("cm1")], namespace="cluster1"),
                'admission webhook "manifestworkreplicasetvalidators.admission.work.open-cluster-'
                'management.io" denied the request: duplicate manifest',
            ),
        )
        for refused_object, message in refusals:
            refused = await kubectl(
                "create", "-f", "-", stdin=json.dumps(refused_object), check=False
            )
            assert refused.returncode != 0
            assert message in refused.stderr
