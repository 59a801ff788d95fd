"""Every strategy on every common kind: created (or read), owned as asked, quiet when repeated."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from ocmkit.kube import (
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    JOBS,
    SECRETS,
    SERVICES,
    KubeClient,
    Resource,
)
from schemas.work_v1 import UpdateStrategy
from tests.apply.conftest import NS, Writes, request
from tests.kube.helpers import WIDGET_CRD, WIDGETS
from workagent.apply import Appliers


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": NS, "labels": {"app": name}}


MANIFESTS: dict[str, tuple[Resource, dict[str, Any]]] = {
    "configmap": (
        CONFIGMAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("cm"), "data": {"k": "v"}},
    ),
    "deployment": (
        DEPLOYMENTS,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta("dep"),
            "spec": {
                "selector": {"matchLabels": {"app": "dep"}},
                "template": {
                    "metadata": {"labels": {"app": "dep"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        },
    ),
    "service": (
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("svc"),
            "spec": {"selector": {"app": "dep"}, "ports": [{"port": 80}]},
        },
    ),
    "secret": (
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _meta("sec"),
            "data": {"token": base64.b64encode(b"t0ken").decode()},
        },
    ),
    "job": (
        JOBS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta("job"),
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            },
        },
    ),
    "custom-resource": (
        WIDGETS,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": _meta("widget"),
            "spec": {"size": 3},
        },
    ),
}


@pytest.mark.parametrize("kind", sorted(MANIFESTS))
@pytest.mark.parametrize("strategy", ["Update", "CreateOnly", "ServerSideApply", "ReadOnly"])
async def test_strategy_on_kind(
    kube: KubeClient,
    other: KubeClient,
    owner: dict[str, Any],
    writes: Writes,
    kind: str,
    strategy: str,
) -> None:
    resource, manifest = MANIFESTS[kind]
    await kube.create(CRDS, copy.deepcopy(WIDGET_CRD))
    name = manifest["metadata"]["name"]
    if strategy == "ReadOnly":
        # ReadOnly only reads: someone else created the object.
        await other.create(resource, copy.deepcopy(manifest), NS)
    applier = Appliers(kube).for_strategy(UpdateStrategy.model_validate({"type": strategy}))

    first = await applier.apply(request(resource, manifest, owner))
    await writes.reset()
    second = await applier.apply(request(resource, manifest, owner))
    verbs = await writes.verbs()

    live = await kube.get(resource, name, NS)
    assert first["metadata"]["uid"] == second["metadata"]["uid"] == live["metadata"]["uid"]
    assert live["metadata"]["labels"]["app"] == name
    if strategy == "ReadOnly":
        assert "ownerReferences" not in live["metadata"]
    else:
        assert live["metadata"]["ownerReferences"] == [owner]
    if strategy == "ServerSideApply":
        # Without ignoreFields every apply is sent; it changes nothing.
        assert verbs["patch"] == 1 and verbs["update"] == verbs["create"] == 0
        assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    else:
        assert sum(verbs[v] for v in ("create", "update", "patch", "delete")) == 0, verbs
