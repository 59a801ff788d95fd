"""The typed round trip of built-in kinds: defaults, nulls, admission, managed fields.

Scenarios run on kubesim and on the real apiserver at once; see
tests/kubesim/against_real/__init__.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import eventually
from tests.kubesim.truth import Record, Side, namespace, same

pytestmark = pytest.mark.realkube


# -- the typed round trip of built-in kinds ------------------------------------------------

POD_TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "x"}},
    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
}
SELECTED: dict[str, Any] = {"selector": {"matchLabels": {"app": "x"}}, "template": POD_TEMPLATE}


async def test_status_comes_back_through_the_typed_schema(sides: tuple[Side, Side]) -> None:
    """A condition written through ``/status`` without its time fields reads back
    with them ``null``, for every kind whose conditions have them; and an unknown
    status field is dropped with a warning."""
    ns = "typed"
    apps = f"/apis/apps/v1/namespaces/{ns}"
    core = f"/api/v1/namespaces/{ns}"
    objects: list[tuple[str, dict[str, Any]]] = [
        (f"{apps}/deployments", {"metadata": {"name": "d"}, "spec": SELECTED}),
        (f"{apps}/replicasets", {"metadata": {"name": "rs"}, "spec": SELECTED}),
        (
            f"{apps}/statefulsets",
            {"metadata": {"name": "ss"}, "spec": {"serviceName": "x", **SELECTED}},
        ),
        (f"{apps}/daemonsets", {"metadata": {"name": "ds"}, "spec": SELECTED}),
        (
            f"/apis/batch/v1/namespaces/{ns}/jobs",
            {
                "metadata": {"name": "j"},
                "spec": {
                    "template": {
                        **POD_TEMPLATE,
                        "spec": {**POD_TEMPLATE["spec"], "restartPolicy": "Never"},
                    }
                },
            },
        ),
        (f"{core}/pods", {"metadata": {"name": "p"}, "spec": POD_TEMPLATE["spec"]}),
        (
            f"{core}/persistentvolumeclaims",
            {
                "metadata": {"name": "pvc"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        ),
    ]
    condition = {"type": "Ready", "status": "True", "reason": "Test", "message": "written"}

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        for collection, body in objects:
            created = await side.call("POST", collection, body)
            assert created.status == 201, created.body
            path = f"{collection}/{body['metadata']['name']}"
            patched = await side.call(
                "PATCH",
                f"{path}/status",
                {"status": {"conditions": [condition], "unknownField": 1}},
                content_type="application/merge-patch+json",
            )
            rec.add(
                f"{path} merge patch",
                {
                    "status": patched.status,
                    "warnings": patched.warnings,
                    "conditions": patched.json["status"]["conditions"],
                },
            )
            read = (await side.call("GET", path)).json
            rec.add(f"{path} read", read["status"].get("conditions"))
            read["status"]["conditions"] = [{"type": "Other", "status": "False"}]
            replaced = await side.call("PUT", f"{path}/status", read)
            rec.add(
                f"{path} put",
                {"status": replaced.status, "conditions": replaced.json["status"]["conditions"]},
            )
        # What the managed fields record of it (the null fields are the writer's too).
        deployment = (await side.call("GET", f"{apps}/deployments/d")).json
        rec.add("deployment managed fields", deployment["metadata"]["managedFields"])

    await same(scenario, sides)


async def test_roles_without_rules(sides: tuple[Side, Side]) -> None:
    """A Role or ClusterRole created without rules has ``rules: null``."""
    ns = "norules"

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        rec.answer(
            "role",
            await side.call(
                "POST", f"{rbac}/namespaces/{ns}/roles", {"metadata": {"name": "empty"}}
            ),
        )
        rec.answer(
            "cluster role",
            await side.call(
                "POST", f"{rbac}/clusterroles", {"metadata": {"name": "norules-empty"}}
            ),
        )
        rec.answer("read back", await side.call("GET", f"{rbac}/clusterroles/norules-empty"))

    await same(scenario, sides)


# -- every served kind, created with as little as it accepts ---------------------------------

MINIMAL_NS = "minimal"
LABELS = {"app": "x"}
MINIMAL: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces/minimal/configmaps", {"metadata": {"name": "cm"}}),
    ("/api/v1/namespaces/minimal/secrets", {"metadata": {"name": "s"}, "stringData": {"k": "v"}}),
    ("/api/v1/namespaces/minimal/serviceaccounts", {"metadata": {"name": "sa"}}),
    (
        "/api/v1/namespaces/minimal/services",
        {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}], "selector": LABELS}},
    ),
    (
        "/api/v1/namespaces/minimal/endpoints",
        {
            "metadata": {"name": "svc"},
            "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}],
        },
    ),
    (
        "/api/v1/namespaces/minimal/events",
        {
            "metadata": {"name": "ev"},
            "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": MINIMAL_NS},
            "reason": "Test",
            "message": "hello",
        },
    ),
    (
        "/api/v1/namespaces/minimal/persistentvolumeclaims",
        {
            "metadata": {"name": "pvc"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    ),
    ("/api/v1/nodes", {"metadata": {"name": "minimal-node"}}),
    ("/apis/apps/v1/namespaces/minimal/deployments", {"metadata": {"name": "d"}, "spec": SELECTED}),
    (
        "/apis/apps/v1/namespaces/minimal/statefulsets",
        {"metadata": {"name": "ss"}, "spec": SELECTED},
    ),
    ("/apis/apps/v1/namespaces/minimal/daemonsets", {"metadata": {"name": "ds"}, "spec": SELECTED}),
    (
        "/apis/apps/v1/namespaces/minimal/replicasets",
        {"metadata": {"name": "rs"}, "spec": SELECTED},
    ),
    (
        "/apis/batch/v1/namespaces/minimal/cronjobs",
        {
            "metadata": {"name": "cj"},
            "spec": {
                "schedule": "*/5 * * * *",
                "jobTemplate": {
                    "spec": {
                        "template": {"spec": {**POD_TEMPLATE["spec"], "restartPolicy": "OnFailure"}}
                    }
                },
            },
        },
    ),
    (
        "/apis/rbac.authorization.k8s.io/v1/namespaces/minimal/rolebindings",
        {
            "metadata": {"name": "rb"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "view",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": MINIMAL_NS}],
        },
    ),
    (
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": "minimal-crb"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "view",
            },
            "subjects": [{"kind": "User", "name": "alice"}],
        },
    ),
    ("/apis/coordination.k8s.io/v1/namespaces/minimal/leases", {"metadata": {"name": "l"}}),
    (
        "/apis/events.k8s.io/v1/namespaces/minimal/events",
        {
            "metadata": {"name": "ev2"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "example.com/test",
            "reportingInstance": "test-1",
            "action": "Testing",
            "reason": "Test",
            "type": "Normal",
            "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": MINIMAL_NS},
        },
    ),
    (
        "/apis/policy/v1/namespaces/minimal/poddisruptionbudgets",
        {
            "metadata": {"name": "pdb"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": LABELS}},
        },
    ),
    (
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        {"metadata": {"name": "minimal-vwc"}},
    ),
    (
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        {"metadata": {"name": "minimal-mwc"}},
    ),
]
# A Service's cluster IP is allocated from each server's own range.
ALLOCATED = frozenset({"clusterIP", "clusterIPs"})


async def test_minimal_objects_of_every_kind(sides: tuple[Side, Side]) -> None:
    """What each served kind looks like once created from the least it accepts
    (defaults, nulls, managed fields) and read back."""

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, MINIMAL_NS)
        for path, body in MINIMAL:
            created = await side.call("POST", path, body)
            rec.answer(f"create {path}", created, volatile=ALLOCATED)
            name = body["metadata"]["name"]
            rec.answer(f"read {path}", await side.call("GET", f"{path}/{name}"), volatile=ALLOCATED)

    await same(scenario, sides)


async def test_claims_and_daemon_sets_over_their_lifetime(sides: tuple[Side, Side]) -> None:
    """A claim no pod uses goes once deleted (its protection finalizer released); a
    DaemonSet's template generation follows its template."""
    ns = "lifetimes"
    claims = f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
    daemons = f"/apis/apps/v1/namespaces/{ns}/daemonsets"
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        await side.call("POST", claims, claim)
        rec.answer("claim deleted", await side.call("DELETE", f"{claims}/data"))

        async def gone() -> bool:
            return (await side.call("GET", f"{claims}/data")).status == 404

        await eventually(gone, what="the claim gone")
        await side.call("POST", daemons, {"metadata": {"name": "ds"}, "spec": SELECTED})
        for step, patch in (
            ("label only", {"metadata": {"labels": {"x": "y"}}}),
            ("template", {"spec": {"template": {"metadata": {"labels": {"app": "x", "v": "2"}}}}}),
            (
                "annotation set by hand",
                {"metadata": {"annotations": {"deprecated.daemonset.template.generation": "9"}}},
            ),
        ):
            answer = await side.call(
                "PATCH", f"{daemons}/ds", patch, content_type="application/merge-patch+json"
            )
            rec.add(
                step,
                {
                    "status": answer.status,
                    "annotations": answer.json["metadata"].get("annotations"),
                    "generation": answer.json["metadata"].get("generation"),
                },
            )

    await same(scenario, sides)


async def test_system_namespaces(sides: tuple[Side, Side]) -> None:
    """The namespaces a cluster starts with, as a client creating one sees them."""

    async def scenario(side: Side, rec: Record) -> None:
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            answer = await side.call("GET", f"/api/v1/namespaces/{name}")
            # The real one's default namespace may carry what other tests of this
            # module's control plane wrote; the system's own shape is compared.
            body = answer.json
            body["metadata"]["managedFields"] = [
                f
                for f in body["metadata"].get("managedFields") or []
                if f["manager"] == "kube-apiserver"
            ]
            rec.answer(name, answer)
        rec.answer(
            "created again",
            await side.call("POST", "/api/v1/namespaces", {"metadata": {"name": "default"}}),
        )
        rec.answer(
            "a new one",
            await side.call("POST", "/api/v1/namespaces", {"metadata": {"name": "brand-new"}}),
        )

    await same(scenario, sides)
