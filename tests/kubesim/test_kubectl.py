"""kubesim driven by the real kubectl binary (a client nobody here wrote).

Each test runs kubectl as a platform team would and checks both what kubectl
prints (and its exit code) and what the server stored. kubectl validates with
``--validate=strict`` by default, so every write here also exercises
server-side field validation against the OpenAPI schemas kubesim serves.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml

from kubesim.sim import KubeSim
from tests.conftest import Kubectl, eventually

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
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, description: How big the gadget is.}
              color: {type: string}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"""

# What a platform team applies for one service: every kind in one file.
STACK = """
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: team
  labels: {{app: api, tier: backend}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: api}}
  template:
    metadata:
      labels: {{app: api}}
    spec:
      serviceAccountName: api
      containers:
      - name: api
        image: registry.example/api:{version}
        ports:
        - containerPort: 8080
        env:
        - name: MODE
          valueFrom:
            configMapKeyRef: {{name: api-config, key: mode}}
        resources:
          requests: {{cpu: 100m, memory: 64Mi}}
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: team
spec:
  selector: {{app: api}}
  ports:
  - name: http
    port: 80
    targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: api-config
  namespace: team
data:
  mode: {mode}
---
apiVersion: v1
kind: Secret
metadata:
  name: api-secret
  namespace: team
type: Opaque
data:
  password: {password}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: api
  namespace: team
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: config-reader
  namespace: team
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: api-config-reader
  namespace: team
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: config-reader
subjects:
- kind: ServiceAccount
  name: api
  namespace: team
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: team-deployment-viewer
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: team
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: registry.example/migrate:1.0
        command: [sh, -c, echo migrate]
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  namespace: team
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: registry.example/report:1.0
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
  namespace: team
spec:
  holderIdentity: api-0
  leaseDurationSeconds: 15
"""

STACK_OBJECTS = [
    "namespace/team",
    "deployment.apps/api",
    "service/api",
    "configmap/api-config",
    "secret/api-secret",
    "serviceaccount/api",
    "role.rbac.authorization.k8s.io/config-reader",
    "rolebinding.rbac.authorization.k8s.io/api-config-reader",
    "clusterrole.rbac.authorization.k8s.io/team-deployment-viewer",
    "job.batch/migrate",
    "cronjob.batch/nightly",
    "lease.coordination.k8s.io/leader",
]


def stack(replicas: int = 2, version: str = "1.0", mode: str = "production") -> str:
    """The STACK manifest with the values a change would touch."""
    password = base64.b64encode(b"hunter2").decode()
    return STACK.format(replicas=replicas, version=version, mode=mode, password=password)


def applied(stdout: str) -> dict[str, str]:
    """``kind/name -> created|configured|unchanged|...`` from kubectl apply's output."""
    out = {}
    for line in stdout.splitlines():
        name, _, outcome = line.partition(" ")
        out[name] = outcome
    return out


def rows(table: str) -> list[dict[str, str]]:
    """The rows of a kubectl table as dicts, cut at the header's column offsets."""
    lines = [line for line in table.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0]
    cols = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    out = []
    for line in lines[1:]:
        row = {}
        for i, (start, name) in enumerate(cols):
            end = cols[i + 1][0] if i + 1 < len(cols) else None
            row[name] = line[start:end].strip()
        out.append(row)
    return out


async def get_json(kubectl: Kubectl, *args: str) -> Any:
    """``kubectl get ... -o json``, decoded."""
    return json.loads((await kubectl("get", *args, "-o", "json")).stdout)


@contextlib.asynccontextmanager
async def running(**options: Any) -> AsyncIterator[KubeSim]:
    """A kubesim of its own (TLS, RBAC or simulated workloads), stopped afterwards."""
    server = KubeSim(**options)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


class KubectlFor(Protocol):
    """Makes a kubectl runner for ``server`` as ``who`` (the admin unless a token is given)."""

    def __call__(self, server: KubeSim, who: str, token: str | None = None) -> Kubectl:
        """The runner, with its own kubeconfig and discovery cache."""
        ...


@pytest.fixture
def kubectl_for(tmp_path: Path) -> KubectlFor:
    """Makes a kubectl runner for another server and identity (own kubeconfig and cache)."""
    if shutil.which("kubectl") is None:
        pytest.fail("the kubectl binary is required for these tests and is not on PATH")

    def make(server: KubeSim, who: str, token: str | None = None) -> Kubectl:
        return Kubectl(server.write_kubeconfig(tmp_path / who / "kubeconfig", token=token))

    return make


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
        "selfsubjectreviews.authentication.k8s.io",
    ):
        assert name in resources


async def test_create_an_access_review(kubectl: Kubectl) -> None:
    """kubectl validates a SubjectAccessReview on the client, with the protobuf
    OpenAPI v2 document (it has no PATCH to validate on the server with)."""
    review = (
        "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\n"
        "spec: {user: alice, resourceAttributes: {verb: get, resource: pods}}\n"
    )
    out = await kubectl("create", "-f", "-", "-o", "json", stdin=review)
    assert json.loads(out.stdout)["status"] == {"allowed": False}
    bad = await kubectl(
        "create", "-f", "-", stdin=review.replace("spec: {", "spec: {bogus: 1, "), check=False
    )
    assert bad.returncode == 1
    assert 'unknown field "bogus"' in bad.stderr


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


async def test_apply_a_stack_then_reapply_diff_dry_run_and_change(kubectl: Kubectl) -> None:
    first = applied((await kubectl("apply", "-f", "-", stdin=stack())).stdout)
    assert first == dict.fromkeys(STACK_OBJECTS, "created")
    again = applied((await kubectl("apply", "-f", "-", stdin=stack())).stdout)
    assert again == dict.fromkeys(STACK_OBJECTS, "unchanged")
    same = await kubectl("diff", "-f", "-", stdin=stack(), check=False)
    assert (same.returncode, same.stdout) == (0, ""), same.stderr

    changed = stack(replicas=3, version="1.1", mode="staging")
    diff = await kubectl("diff", "-f", "-", stdin=changed, check=False)
    assert diff.returncode == 1, diff.stderr  # 1: differences found (>1 would be an error)
    assert "-  replicas: 2" in diff.stdout and "+  replicas: 3" in diff.stdout
    assert "+  mode: staging" in diff.stdout
    dry = applied((await kubectl("apply", "--dry-run=server", "-f", "-", stdin=changed)).stdout)
    assert dry["deployment.apps/api"] == "configured (server dry run)"
    assert dry["service/api"] == "unchanged (server dry run)"
    live = await get_json(kubectl, "deploy", "api", "-n", "team")
    assert live["spec"]["replicas"] == 2, "a server dry run must not store anything"

    out = applied((await kubectl("apply", "-f", "-", stdin=changed)).stdout)
    assert {name for name, outcome in out.items() if outcome == "configured"} == {
        "deployment.apps/api",
        "configmap/api-config",
    }
    assert set(out.values()) == {"configured", "unchanged"}
    dep = await get_json(kubectl, "deploy", "api", "-n", "team")
    assert dep["spec"]["replicas"] == 3 and dep["metadata"]["generation"] == 2
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/api:1.1"
    mode = await kubectl("get", "cm", "api-config", "-n", "team", "-o", "jsonpath={.data.mode}")
    assert mode.stdout == "staging"
    settled = await kubectl("diff", "-f", "-", stdin=changed, check=False)
    assert settled.returncode == 0, settled.stdout


async def test_create_dry_run_replace_and_scale(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    dry = await kubectl(
        "create",
        "configmap",
        "plan",
        "-n",
        "demo",
        "--from-literal=a=1",
        "--dry-run=server",
        "-o",
        "json",
    )
    planned = json.loads(dry.stdout)
    assert planned["data"] == {"a": "1"} and planned["metadata"]["uid"]  # answered by the server
    missing = await kubectl("get", "cm", "plan", "-n", "demo", check=False)
    assert missing.returncode == 1 and 'configmaps "plan" not found' in missing.stderr
    defaulted = json.loads(
        (
            await kubectl(
                "create",
                "--dry-run=server",
                "-o",
                "json",
                "-f",
                "-",
                stdin=DEPLOY.format(replicas=1, image="nginx:1"),
            )
        ).stdout
    )
    assert defaulted["spec"]["strategy"]["type"] == "RollingUpdate"

    await kubectl("create", "configmap", "settings", "-n", "demo", "--from-literal=level=1")
    live = yaml.safe_load(
        (await kubectl("get", "cm", "settings", "-n", "demo", "-o", "yaml")).stdout
    )
    live["data"]["level"] = "2"
    out = await kubectl("replace", "-f", "-", stdin=yaml.safe_dump(live))
    assert out.stdout.strip() == "configmap/settings replaced"
    stale = await kubectl("replace", "-f", "-", stdin=yaml.safe_dump(live), check=False)
    assert stale.returncode == 1
    assert "Error from server (Conflict)" in stale.stderr
    assert "the object has been modified" in stale.stderr
    del live["metadata"]["resourceVersion"]  # without one, replace is unconditional
    live["data"]["level"] = "3"
    await kubectl("replace", "-f", "-", stdin=yaml.safe_dump(live))
    level = await kubectl("get", "cm", "settings", "-n", "demo", "-o", "jsonpath={.data.level}")
    assert level.stdout == "3"

    await kubectl("apply", "-f", "-", stdin=DEPLOY.format(replicas=1, image="nginx:1"))
    out = await kubectl("scale", "deploy", "web", "-n", "demo", "--replicas=4")
    assert out.stdout.strip() == "deployment.apps/web scaled"
    replicas = await kubectl(
        "get", "deploy", "web", "-n", "demo", "-o", "jsonpath={.spec.replicas}"
    )
    assert replicas.stdout == "4"
    guarded = await kubectl(
        "scale", "deploy/web", "-n", "demo", "--replicas=2", "--current-replicas=3", check=False
    )
    assert guarded.returncode == 1 and "Expected replicas to be 3, was 4" in guarded.stderr


async def test_annotate_and_label_need_overwrite_to_change_a_value(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("create", "configmap", "owned", "-n", "demo")
    owner = "team.example.com/owner"
    await kubectl("annotate", "cm", "owned", "-n", "demo", f"{owner}=alice")
    refused = await kubectl("annotate", "cm", "owned", "-n", "demo", f"{owner}=bob", check=False)
    assert refused.returncode == 1
    assert f"--overwrite is false but found the following declared annotation(s): '{owner}' " in (
        refused.stderr
    )
    await kubectl("annotate", "cm", "owned", "-n", "demo", f"{owner}=bob", "--overwrite")
    await kubectl("label", "cm", "owned", "-n", "demo", "tier=silver")
    refused = await kubectl("label", "cm", "owned", "-n", "demo", "tier=gold", check=False)
    assert refused.returncode == 1 and "'tier' already has a value (silver)" in refused.stderr
    out = await kubectl("label", "cm", "owned", "-n", "demo", "tier=gold", "--overwrite")
    assert out.stdout.strip() == "configmap/owned labeled"
    meta = (await get_json(kubectl, "cm", "owned", "-n", "demo"))["metadata"]
    assert meta["annotations"] == {owner: "bob"} and meta["labels"] == {"tier": "gold"}
    shown = rows((await kubectl("get", "cm", "owned", "-n", "demo", "--show-labels")).stdout)
    assert shown[0]["LABELS"] == "tier=gold"
    await kubectl("label", "cm", "owned", "-n", "demo", "tier-")
    await kubectl("annotate", "cm", "owned", "-n", "demo", f"{owner}-")
    meta = (await get_json(kubectl, "cm", "owned", "-n", "demo"))["metadata"]
    assert not meta.get("labels") and not meta.get("annotations")


def owned_configmap(name: str, owner: dict[str, Any], *, block: bool) -> str:
    """A ConfigMap owned by ``owner``; a blocking one is also held by a finalizer."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": owner["metadata"]["namespace"],
                "finalizers": ["example.com/hold"] if block else [],
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": owner["metadata"]["name"],
                        "uid": owner["metadata"]["uid"],
                        "blockOwnerDeletion": block,
                    }
                ],
            },
        }
    )


async def test_cascading_delete_foreground_and_orphan(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("create", "configmap", "parent", "-n", "demo")
    await kubectl("create", "configmap", "keeper", "-n", "demo")
    parent = await get_json(kubectl, "cm", "parent", "-n", "demo")
    keeper = await get_json(kubectl, "cm", "keeper", "-n", "demo")
    await kubectl("apply", "-f", "-", stdin=owned_configmap("child", parent, block=True))
    await kubectl("apply", "-f", "-", stdin=owned_configmap("orphan", keeper, block=False))

    # Foreground: the garbage collector deletes the child first; the owner waits for it.
    await kubectl("delete", "cm", "parent", "-n", "demo", "--cascade=foreground", "--wait=false")

    async def child_deleting() -> bool:
        child = await get_json(kubectl, "cm", "child", "-n", "demo")
        return bool(child["metadata"].get("deletionTimestamp"))

    await eventually(child_deleting, what="the garbage collector to delete the child")
    waiting = await get_json(kubectl, "cm", "parent", "-n", "demo")
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    release = '{"metadata":{"finalizers":null}}'
    await kubectl("patch", "cm", "child", "-n", "demo", "--type=merge", "-p", release)
    await kubectl("wait", "--for=delete", "cm/child", "cm/parent", "-n", "demo", "--timeout=10s")

    # Orphan: the owner goes (kubectl waits for it), the dependent stays, unowned.
    out = await kubectl("delete", "cm", "keeper", "-n", "demo", "--cascade=orphan")
    assert out.stdout.strip() == 'configmap "keeper" deleted'
    orphan = await get_json(kubectl, "cm", "orphan", "-n", "demo")
    assert "ownerReferences" not in orphan["metadata"]
    assert not orphan["metadata"].get("deletionTimestamp")
    names = (await kubectl("get", "cm", "-n", "demo", "-o", "name")).stdout.split()
    assert names == ["configmap/orphan"]


async def test_get_output_formats_sorting_and_selectors(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=stack())
    await kubectl(
        "create", "deployment", "worker", "-n", "team", "--image=registry.example/worker:1"
    )
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("create", "configmap", "other", "-n", "demo", "--from-literal=x=1")

    # --sort-by on a spec field needs whole objects in the table rows (includeObject).
    wide = rows(
        (
            await kubectl("get", "deploy", "-n", "team", "-o", "wide", "--sort-by=.spec.replicas")
        ).stdout
    )
    assert [r["NAME"] for r in wide] == ["worker", "api"]
    assert wide[1]["READY"] == "0/2" and wide[1]["UP-TO-DATE"] == "0"
    assert wide[1]["CONTAINERS"] == "api" and wide[1]["IMAGES"] == "registry.example/api:1.0"
    assert wide[1]["SELECTOR"] == "app=api"
    narrow = (await kubectl("get", "deploy", "-n", "team")).stdout
    assert narrow.split("\n")[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    svc = rows((await kubectl("get", "svc", "api", "-n", "team", "-o", "wide")).stdout)[0]
    assert (svc["TYPE"], svc["EXTERNAL-IP"], svc["PORT(S)"]) == ("ClusterIP", "<none>", "80/TCP")
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", svc["CLUSTER-IP"]) and svc["SELECTOR"] == "app=api"
    cron = rows((await kubectl("get", "cronjob", "nightly", "-n", "team")).stdout)[0]
    assert (cron["SCHEDULE"], cron["SUSPEND"], cron["ACTIVE"]) == ("0 2 * * *", "False", "0")
    job = rows((await kubectl("get", "job", "migrate", "-n", "team")).stdout)[0]
    assert (job["STATUS"], job["COMPLETIONS"]) == ("Running", "0/1")
    binding = rows((await kubectl("get", "rolebinding", "-n", "team", "-o", "wide")).stdout)[0]
    assert (binding["ROLE"], binding["SERVICEACCOUNTS"]) == ("Role/config-reader", "team:api")
    lease = rows((await kubectl("get", "lease", "-n", "team")).stdout)[0]
    assert lease["HOLDER"] == "api-0"
    secret = rows((await kubectl("get", "secret", "-n", "team")).stdout)[0]
    assert (secret["TYPE"], secret["DATA"]) == ("Opaque", "1")

    as_yaml = yaml.safe_load(
        (await kubectl("get", "cm", "api-config", "-n", "team", "-o", "yaml")).stdout
    )
    assert as_yaml["data"] == {"mode": "production"}
    names = await kubectl("get", "deploy", "-n", "team", "-o", "jsonpath={.items[*].metadata.name}")
    assert names.stdout == "api worker"
    ranged = await kubectl(
        "get",
        "deploy",
        "-n",
        "team",
        "-o",
        'jsonpath={range .items[*]}{.metadata.name}={.spec.replicas}{"\\n"}{end}',
    )
    assert ranged.stdout == "api=2\nworker=1\n"
    custom = await kubectl(
        "get",
        "cronjob",
        "-n",
        "team",
        "-o",
        "custom-columns=NAME:.metadata.name,IMAGE:"
        ".spec.jobTemplate.spec.template.spec.containers[0].image",
        "--no-headers",
    )
    assert custom.stdout.split() == ["nightly", "registry.example/report:1.0"]

    everywhere = rows((await kubectl("get", "cm", "-A")).stdout)
    assert {(r["NAMESPACE"], r["NAME"]) for r in everywhere} >= {
        ("team", "api-config"),
        ("demo", "other"),
    }
    labelled = await kubectl("get", "deploy", "-A", "-l", "tier=backend", "-o", "name")
    assert labelled.stdout.split() == ["deployment.apps/api"]
    fields = await kubectl(
        "get", "cm", "-A", "--field-selector", "metadata.namespace=demo", "-o", "name"
    )
    assert fields.stdout.split() == ["configmap/other"]
    excluded = await kubectl(
        "get", "cm", "-A", "--field-selector", "metadata.name!=other", "-o", "name"
    )
    assert excluded.stdout.split() == ["configmap/api-config"]
    everything = set((await kubectl("get", "all", "-n", "team", "-o", "name")).stdout.split())
    assert everything == {
        "service/api",
        "deployment.apps/api",
        "deployment.apps/worker",
        "job.batch/migrate",
        "cronjob.batch/nightly",
    }
    bad = await kubectl("get", "cm", "-A", "--field-selector", "data.x=1", check=False)
    assert bad.returncode == 1 and 'Error from server (BadRequest): Unable to find "/v1, ' in (
        bad.stderr
    )
    assert 'field selector "data.x=1"' in bad.stderr


async def test_watch_prints_changes_until_the_request_timeout(
    sim: KubeSim, kubectl: Kubectl
) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl("create", "configmap", "before", "-n", "demo", "--from-literal=v=1")
    watch = ("get", "cm", "-n", "demo", "--watch", "--request-timeout=3s")
    table = asyncio.create_task(kubectl(*watch, check=False))
    events = asyncio.create_task(
        kubectl(*watch, "--output-watch-events", "-o", "json", check=False)
    )

    async def watching() -> bool:
        return sim.store.watch_count() >= 2

    await eventually(watching, what="both kubectl watches to be open")
    await kubectl("create", "configmap", "during", "-n", "demo")
    await kubectl("label", "cm", "before", "-n", "demo", "seen=yes")
    # The request timeout ends a watch; kubectl treats that as a normal end.
    printed = await table
    assert printed.returncode == 0 and printed.stderr == "", printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[0].split() == ["NAME", "DATA", "AGE"]
    assert [line.split()[0] for line in lines[1:]] == ["before", "during", "before"]
    streamed = await events
    assert streamed.returncode == 0, streamed.stderr
    decoder = json.JSONDecoder()
    seen, text = [], streamed.stdout.strip()
    while text:
        event, end = decoder.raw_decode(text)
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        text = text[end:].strip()
    assert seen == [("ADDED", "before"), ("ADDED", "during"), ("MODIFIED", "before")]


async def test_api_versions_and_explain(kubectl: Kubectl) -> None:
    versions = (await kubectl("api-versions")).stdout.split()
    for gv in (
        "v1",
        "apps/v1",
        "batch/v1",
        "rbac.authorization.k8s.io/v1",
        "coordination.k8s.io/v1",
        "apiextensions.k8s.io/v1",
        "authentication.k8s.io/v1",
    ):
        assert gv in versions
    spec = (await kubectl("explain", "deployment.spec")).stdout
    assert "KIND:       Deployment" in spec and "FIELD: spec <DeploymentSpec>" in spec
    assert re.search(r"^  replicas\t<integer>$", spec, re.M)
    assert re.search(r"^  selector\t<LabelSelector> -required-$", spec, re.M)
    assert re.search(r"^  template\t<PodTemplateSpec> -required-$", spec, re.M)
    assert "Number of desired pods." in spec
    ports = (await kubectl("explain", "deploy.spec.template.spec.containers.ports")).stdout
    assert "FIELD: ports <[]ContainerPort>" in ports
    assert re.search(r"^  containerPort\t<integer> -required-$", ports, re.M)
    deep = (await kubectl("explain", "cronjob.spec.jobTemplate", "--recursive")).stdout
    assert re.search(r"^ +restartPolicy\t<string>$", deep, re.M)
    nope = await kubectl("explain", "deployment.spec.nope", check=False)
    assert nope.returncode == 1 and 'field "nope" does not exist' in nope.stderr

    await kubectl("apply", "-f", "-", stdin=CRD)
    await kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=10s")
    custom = (await kubectl("explain", "gadgets.spec")).stdout
    assert "GROUP:      example.com" in custom
    assert re.search(r"^  size\t<integer>$", custom, re.M) and "How big the gadget is." in custom


async def test_auth_can_i_and_forbidden_as_a_restricted_user_over_tls(
    kubectl_for: KubectlFor,
) -> None:
    async with running(tls=True, enforce_rbac=True) as server:
        assert server.url.startswith("https://")
        admin = kubectl_for(server, "admin")
        alice = kubectl_for(server, "alice", server.add_user("alice", ("devs",)))
        await admin("create", "namespace", "team")
        await admin(
            "create",
            "role",
            "config-reader",
            "-n",
            "team",
            "--verb=get,list,watch",
            "--resource=configmaps",
        )
        # kubectl sends role bindings as protobuf (they are decoded, not refused).
        out = await admin(
            "create",
            "rolebinding",
            "alice-reads",
            "-n",
            "team",
            "--role=config-reader",
            "--user=alice",
            "--group=devs",
        )
        assert out.stdout.strip() == "rolebinding.rbac.authorization.k8s.io/alice-reads created"
        await admin("create", "clusterrole", "ns-viewer", "--verb=get,list", "--resource=ns")
        await admin(
            "create", "clusterrolebinding", "devs-see-ns", "--clusterrole=ns-viewer", "--group=devs"
        )
        binding = rows((await admin("get", "rolebinding", "-n", "team", "-o", "wide")).stdout)[0]
        assert (binding["ROLE"], binding["USERS"], binding["GROUPS"]) == (
            "Role/config-reader",
            "alice",
            "devs",
        )
        await admin("create", "configmap", "settings", "-n", "team")

        yes = await alice("auth", "can-i", "list", "configmaps", "-n", "team")
        assert (yes.returncode, yes.stdout.strip()) == (0, "yes")
        no = await alice("auth", "can-i", "delete", "configmaps", "-n", "team", check=False)
        assert (no.returncode, no.stdout.strip()) == (1, "no")
        elsewhere = await alice("auth", "can-i", "get", "configmaps", "-n", "default", check=False)
        assert (elsewhere.returncode, elsewhere.stdout.strip()) == (1, "no")
        rules = rows((await alice("auth", "can-i", "--list", "-n", "team")).stdout)
        assert {
            "Resources": "configmaps",
            "Non-Resource URLs": "[]",
            "Resource Names": "[]",
            "Verbs": "[get list watch]",
        } in rules

        listed = await alice("get", "cm", "-n", "team", "-o", "name")
        assert listed.stdout.split() == ["configmap/settings"]
        denied = await alice("create", "configmap", "mine", "-n", "team", check=False)
        assert denied.returncode == 1
        assert (
            'configmaps is forbidden: User "alice" cannot create resource "configmaps" in API '
            'group "" in the namespace "team"'
        ) in denied.stderr
        namespaces = await alice("get", "namespaces", "-o", "name")  # via the group binding
        assert "namespace/team" in namespaces.stdout.split()
        hidden = await alice("get", "secrets", "-n", "team", check=False)
        assert hidden.returncode == 1 and "Error from server (Forbidden)" in hidden.stderr
        who = json.loads((await alice("auth", "whoami", "-o", "json")).stdout)
        assert who["status"]["userInfo"]["username"] == "alice"
        assert "devs" in who["status"]["userInfo"]["groups"]

        stranger = kubectl_for(server, "stranger", "not-a-valid-token")
        refused = await stranger("get", "namespaces", check=False)
        assert refused.returncode == 1
        assert "error: You must be logged in to the server" in refused.stderr


async def test_server_side_apply_of_a_crd_and_its_objects(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    out = await kubectl("apply", "--server-side", "-f", "-", stdin=CRD)
    assert out.stdout.strip() == (
        "customresourcedefinition.apiextensions.k8s.io/gadgets.example.com serverside-applied"
    )
    await kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=10s")
    gadget = (
        "apiVersion: example.com/v1\nkind: Gadget\n"
        "metadata: {name: %s, namespace: demo}\nspec: {size: 3, %s: red}\n"
    )
    out = await kubectl("apply", "--server-side", "-f", "-", stdin=gadget % ("g1", "color"))
    assert out.stdout.strip() == "gadget.example.com/g1 serverside-applied"
    got = await get_json(kubectl, "gadget", "g1", "-n", "demo", "--show-managed-fields")
    assert got["spec"] == {"size": 3, "color": "red"}
    assert [m["manager"] for m in got["metadata"]["managedFields"]] == ["kubectl"]

    table = rows((await kubectl("get", "gadgets", "-n", "demo")).stdout)
    assert table == [{"NAME": "g1", "SIZE": "3", "READY": ""}]  # Color is -o wide only
    ready = '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
    await kubectl(
        "patch", "gadget", "g1", "-n", "demo", "--subresource=status", "--type=merge", "-p", ready
    )
    wide = rows((await kubectl("get", "gd", "-n", "demo", "-o", "wide")).stdout)
    assert wide == [{"NAME": "g1", "SIZE": "3", "COLOR": "red", "READY": "True"}]

    # Unknown fields: strict decoding refuses them, server-side apply cannot type them.
    strict = await kubectl("create", "-f", "-", stdin=gadget % ("g2", "colour"), check=False)
    assert strict.returncode == 1
    assert (
        'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: '
        'unknown field "spec.colour"'
    ) in strict.stderr
    ssa = await kubectl(
        "apply", "--server-side", "-f", "-", stdin=gadget % ("g2", "colour"), check=False
    )
    assert ssa.returncode == 1
    assert (
        "failed to create typed patch object (demo/g2; example.com/v1, Kind=Gadget): "
        ".spec.colour: field not declared in schema"
    ) in ssa.stderr
    warned = await kubectl("apply", "--validate=warn", "-f", "-", stdin=gadget % ("g3", "colour"))
    assert 'Warning: unknown field "spec.colour"' in warned.stderr
    lax = await kubectl("apply", "--validate=false", "-f", "-", stdin=gadget % ("g4", "colour"))
    assert lax.stdout.strip() == "gadget.example.com/g4 created"
    for name in ("g3", "g4"):
        pruned = await get_json(kubectl, "gadget", name, "-n", "demo")
        assert pruned["spec"] == {"size": 3}, "unknown fields of custom objects are pruned"
    assert (await kubectl("get", "gadget", "g2", "-n", "demo", check=False)).returncode == 1


async def test_strict_field_validation_of_built_in_kinds(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    manifest = DEPLOY.format(replicas=1, image="nginx:1")
    typo = manifest.replace("image: nginx:1", "image: nginx:1\n        imagePullPolicyy: Always")
    strict = await kubectl("apply", "-f", "-", stdin=typo, check=False)
    assert strict.returncode == 1
    assert (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" '
        "cannot be handled as a Deployment: strict decoding error: unknown field "
        '"spec.template.spec.containers[0].imagePullPolicyy"'
    ) in strict.stderr
    assert (await kubectl("get", "deploy", "web", "-n", "demo", check=False)).returncode == 1
    labelz = manifest.replace("  namespace: demo", "  namespace: demo\n  labelz: {a: b}")
    meta = await kubectl("create", "-f", "-", stdin=labelz, check=False)
    assert 'unknown field "metadata.labelz"' in meta.stderr
    ssa = await kubectl("apply", "--server-side", "-f", "-", stdin=typo, check=False)
    assert ssa.returncode == 1
    assert (
        "failed to create typed patch object (demo/web; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="web"].imagePullPolicyy: field not declared in schema'
    ) in ssa.stderr
    warned = await kubectl("apply", "--validate=warn", "-f", "-", stdin=typo)
    assert warned.stdout.strip() == "deployment.apps/web created"
    assert (
        'Warning: unknown field "spec.template.spec.containers[0].imagePullPolicyy"'
        in warned.stderr
    )
    # The apiserver drops undeclared fields of built-in kinds, so the live object never
    # has the typo and kubectl's three-way merge keeps sending it ("configured").
    lax = await kubectl("apply", "--validate=false", "-f", "-", stdin=typo)
    assert lax.stdout.strip() == "deployment.apps/web configured" and lax.stderr == ""
    live = json.loads((await kubectl("get", "deploy", "web", "-n", "demo", "-o", "json")).stdout)
    assert "imagePullPolicyy" not in json.dumps(live["spec"])


async def test_rollout_status_and_waits_with_simulated_workloads(kubectl_for: KubectlFor) -> None:
    async with running(simulate_workloads=True, workload_delay=0.05) as server:
        kubectl = kubectl_for(server, "admin")
        await kubectl("apply", "-f", "-", stdin=NS)
        await kubectl("apply", "-f", "-", stdin=DEPLOY.format(replicas=2, image="nginx:1"))
        out = await kubectl("rollout", "status", "deploy/web", "-n", "demo", "--timeout=20s")
        assert out.stdout.strip().endswith('deployment "web" successfully rolled out')
        await kubectl("set", "image", "deploy/web", "-n", "demo", "web=nginx:2")
        out = await kubectl("rollout", "status", "deploy/web", "-n", "demo", "--timeout=20s")
        assert out.stdout.strip().endswith('deployment "web" successfully rolled out')
        await kubectl("wait", "--for=condition=Available", "deploy/web", "-n", "demo")
        row = rows((await kubectl("get", "deploy", "web", "-n", "demo")).stdout)[0]
        assert (row["READY"], row["UP-TO-DATE"], row["AVAILABLE"]) == ("2/2", "2", "2")

        await kubectl("create", "job", "once", "-n", "demo", "--image=busybox")
        await kubectl("wait", "--for=condition=Complete", "job/once", "-n", "demo", "--timeout=20s")
        job = rows((await kubectl("get", "job", "once", "-n", "demo")).stdout)[0]
        assert (job["STATUS"], job["COMPLETIONS"]) == ("Complete", "1/1")


async def test_create_job_from_a_cronjob(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    await kubectl(
        "create",
        "cronjob",
        "nightly",
        "-n",
        "demo",
        "--image=busybox",
        "--schedule=0 2 * * *",
        "--",
        "echo",
        "hi",
    )
    out = await kubectl("create", "job", "manual-1", "--from=cronjob/nightly", "-n", "demo")
    assert out.stdout.strip() == "job.batch/manual-1 created"
    cron = await get_json(kubectl, "cronjob", "nightly", "-n", "demo")
    job = await get_json(kubectl, "job", "manual-1", "-n", "demo")
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "CronJob",
        "nightly",
        cron["metadata"]["uid"],
    )
    assert owner["controller"] is True
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    listed = rows((await kubectl("get", "jobs", "-n", "demo")).stdout)
    assert [r["NAME"] for r in listed] == ["manual-1"]


async def test_errors_keep_kubectl_messages_and_exit_codes(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", "-", stdin=NS)
    bad_name = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: demo}\n"
    invalid = await kubectl("apply", "-f", "-", stdin=bad_name, check=False)
    assert invalid.returncode == 1
    assert invalid.stderr.startswith(
        'The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
    )
    created = await kubectl("create", "configmap", "Bad_Name", "-n", "demo", check=False)
    assert created.returncode == 1
    assert 'error: failed to create configmap: ConfigMap "Bad_Name" is invalid' in created.stderr
    mismatch = DEPLOY.format(replicas=1, image="nginx:1").replace(
        "labels: {app: web}", "labels: {app: other}"
    )
    rejected = await kubectl("apply", "-f", "-", stdin=mismatch, check=False)
    assert rejected.returncode == 1
    assert rejected.stderr.startswith(
        'The Deployment "web" is invalid: spec.template.metadata.labels: Invalid value'
    )
    nowhere = bad_name.replace("Bad_Name", "x").replace("demo", "nosuch")
    no_ns = await kubectl("apply", "-f", "-", stdin=nowhere, check=False)
    assert no_ns.returncode == 1
    assert (
        'Error from server (NotFound): error when creating "STDIN": namespaces "nosuch" not found'
    ) in no_ns.stderr
    unknown = await kubectl("get", "widgets", check=False)
    assert unknown.returncode == 1
    assert 'error: the server doesn\'t have a resource type "widgets"' in unknown.stderr
    missing = await kubectl("get", "cm", "nope", "-n", "demo", check=False)
    assert missing.returncode == 1
    assert 'Error from server (NotFound): configmaps "nope" not found' in missing.stderr
    await kubectl("create", "configmap", "dup", "-n", "demo")
    dup = await kubectl("create", "configmap", "dup", "-n", "demo", check=False)
    assert dup.returncode == 1
    assert 'error: failed to create configmap: configmaps "dup" already exists' in dup.stderr
    again = await kubectl(
        "create", "-f", "-", stdin=bad_name.replace("Bad_Name", "dup"), check=False
    )
    assert again.returncode == 1
    assert (
        'Error from server (AlreadyExists): error when creating "STDIN": configmaps "dup" '
        "already exists"
    ) in again.stderr
