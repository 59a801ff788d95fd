"""kubesim driven by the real kubectl binary (a client nobody here wrote)."""

from __future__ import annotations

import asyncio
import json

from tests.conftest import Kubectl

NS = """
apiVersion: v1
kind: Namespace
metadata:
  name: demo
"""

DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: {image}
        ports:
        - containerPort: 80
"""

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"""


async def test_version_and_discovery(kubectl: Kubectl) -> None:
    out = await kubectl("version", "-o", "json")
    assert json.loads(out.stdout)["serverVersion"]["gitVersion"].startswith("v1.")
    resources = (await kubectl("api-resources", "-o", "name")).stdout.split()
    for name in (
        "configmaps",
        "deployments.apps",
        "jobs.batch",
        "leases.coordination.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io",
        "clusterroles.rbac.authorization.k8s.io",
    ):
        assert name in resources


async def test_create_get_list_delete(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("create", "configmap", "c1", "-n", "demo", "--from-literal=a=1")
    got = json.loads(
        (
            await kubectl(
                "get", "configmap", "c1", "-n", "demo", "-o", "json", "--show-managed-fields"
            )
        ).stdout
    )
    assert got["data"] == {"a": "1"}
    assert got["metadata"]["managedFields"][0]["manager"] == "kubectl-create"
    table = (await kubectl("get", "configmaps", "-n", "demo")).stdout
    assert "c1" in table and "NAME" in table
    dup = await kubectl("create", "configmap", "c1", "-n", "demo", check=False)
    assert dup.returncode != 0 and "already exists" in dup.stderr
    missing = await kubectl("get", "configmap", "nope", "-n", "demo", check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr
    await kubectl("label", "configmap", "c1", "-n", "demo", "tier=gold")
    sel = (await kubectl("get", "cm", "-n", "demo", "-l", "tier=gold", "-o", "name")).stdout.split()
    assert sel == ["configmap/c1"]
    await kubectl("delete", "configmap", "c1", "-n", "demo")
    assert (await kubectl("get", "cm", "-n", "demo", "-o", "name")).stdout.strip() == ""


async def test_client_side_apply_twice_with_a_change(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    out = await kubectl("apply", "-f", "-", stdin=DEPLOY.format(replicas=1, image="nginx:1"))
    assert "created" in out.stdout
    out = await kubectl("apply", "-f", "-", stdin=DEPLOY.format(replicas=2, image="nginx:2"))
    assert "configured" in out.stdout
    dep = json.loads((await kubectl("get", "deploy", "web", "-n", "demo", "-o", "json")).stdout)
    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert dep["metadata"]["generation"] == 2
    assert "kubectl.kubernetes.io/last-applied-configuration" in dep["metadata"]["annotations"]
    assert not any(
        k.startswith("$") for k in json.dumps(dep).split('"') if k.startswith("$setElementOrder")
    )
    out = await kubectl("apply", "-f", "-", stdin=DEPLOY.format(replicas=2, image="nginx:2"))
    assert "unchanged" in out.stdout


async def test_server_side_apply_conflict_and_force(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: demo}\ndata: {k: %s}\n"
    await kubectl("apply", "--server-side", "--field-manager=alpha", "-f", "-", stdin=cm % "A")
    clash = await kubectl(
        "apply", "--server-side", "--field-manager=beta", "-f", "-", stdin=cm % "B", check=False
    )
    assert clash.returncode != 0 and "conflict" in clash.stderr.lower()
    await kubectl(
        "apply",
        "--server-side",
        "--field-manager=beta",
        "--force-conflicts",
        "-f",
        "-",
        stdin=cm % "B",
    )
    got = json.loads(
        (
            await kubectl("get", "cm", "s", "-n", "demo", "-o", "json", "--show-managed-fields")
        ).stdout
    )
    assert got["data"] == {"k": "B"}
    assert [m["manager"] for m in got["metadata"]["managedFields"]] == ["beta"]


async def test_patch_types(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("apply", "-f", "-", stdin=DEPLOY.format(replicas=1, image="nginx:1"))
    await kubectl(
        "patch", "deploy", "web", "-n", "demo", "--type=merge", "-p", '{"spec":{"replicas":4}}'
    )
    await kubectl(
        "patch",
        "deploy",
        "web",
        "-n",
        "demo",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:3"}]',
    )
    await kubectl(
        "patch",
        "deploy",
        "web",
        "-n",
        "demo",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}',
    )
    dep = json.loads((await kubectl("get", "deploy", "web", "-n", "demo", "-o", "json")).stdout)
    names = sorted(c["name"] for c in dep["spec"]["template"]["spec"]["containers"])
    assert dep["spec"]["replicas"] == 4 and names == ["side", "web"]
    images = {c["name"]: c["image"] for c in dep["spec"]["template"]["spec"]["containers"]}
    assert images["web"] == "nginx:3"


async def test_crd_then_custom_objects_and_finalizers(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("apply", "-f", "-", stdin=CRD)
    await kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=10s")
    gadget = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: demo, finalizers: [example.com/hold]}\nspec: {size: 3}\n"
    await kubectl("apply", "-f", "-", stdin=gadget)
    table = (await kubectl("get", "gd", "-n", "demo")).stdout
    assert "SIZE" in table and "3" in table
    await kubectl("delete", "gadget", "g", "-n", "demo", "--wait=false")
    held = json.loads((await kubectl("get", "gadget", "g", "-n", "demo", "-o", "json")).stdout)
    assert held["metadata"]["deletionTimestamp"]
    await kubectl(
        "patch",
        "gadget",
        "g",
        "-n",
        "demo",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    gone = await kubectl("get", "gadget", "g", "-n", "demo", check=False)
    assert gone.returncode != 0
    await kubectl("delete", "crd", "gadgets.example.com")
    after = await kubectl("get", "gadgets", "-n", "demo", check=False)
    assert after.returncode != 0


async def test_namespace_deletion_and_wait(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("create", "configmap", "x", "-n", "demo")
    await kubectl("delete", "namespace", "demo", "--timeout=20s")
    out = await kubectl("get", "ns", "demo", check=False)
    assert out.returncode != 0


async def test_watch_stream_through_kubectl(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    watcher = asyncio.create_task(
        kubectl(
            "get",
            "cm",
            "-n",
            "demo",
            "--watch",
            "--output-watch-events",
            "-o",
            "json",
            "--request-timeout=3s",
            check=False,
        )
    )
    await kubectl("wait", "--for=jsonpath={.status.phase}=Active", "ns/demo", "--timeout=5s")
    await kubectl("create", "configmap", "seen", "-n", "demo")
    result = await watcher
    assert '"seen"' in result.stdout and '"ADDED"' in result.stdout


async def test_status_subresource_and_auth_can_i(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("apply", "-f", "-", stdin=DEPLOY.format(replicas=1, image="nginx:1"))
    await kubectl(
        "patch",
        "deploy",
        "web",
        "-n",
        "demo",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"replicas":1,"readyReplicas":1}}',
    )
    dep = json.loads((await kubectl("get", "deploy", "web", "-n", "demo", "-o", "json")).stdout)
    assert dep["status"]["readyReplicas"] == 1
    out = await kubectl("auth", "can-i", "delete", "deployments", "-n", "demo")
    assert out.stdout.strip() == "yes"
