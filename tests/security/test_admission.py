"""Malformed ManifestWork fields are refused by the hub before any agent sees them.

The webhook's rules (hub.md §5) are covered one by one in
tests/webhook/test_kubectl_e2e.py. What hub.md leaves to the API server is the
ManifestWork CRD's schema (charts/crds, generated from schemas/): enums,
required fields, patterns and CEL rules of the executor, the delete options
and the manifest configs. Each case here is one field a work author could set
wrongly, or to gain something (an executor that is not a service account, a
field manager posing as another one), created on a hub serving our CRD:
kubesim, and a real kube-apiserver (the ground truth for what the schema
refuses).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import MANIFESTWORKS, NAMESPACES, Invalid, KubeClient
from tests.integration.conftest import (
    HUB_CRDS,
    work_body,
)
from tests.support.prepare import install_crds
from tests.support.programs import CLUSTER, CRD_DIR
from tests.support.targets import Cluster

CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cm1", "namespace": "default"},
}
IDENTIFIER = {"group": "", "resource": "configmaps", "namespace": "default", "name": "cm1"}


def config(**fields: Any) -> dict[str, Any]:
    """A manifestConfig for the ConfigMap with ``fields``."""
    return {"resourceIdentifier": IDENTIFIER, **fields}


def service_account(**account: Any) -> dict[str, Any]:
    """An executor whose subject is a service account with ``account``'s fields."""
    return {"subject": {"type": "ServiceAccount", "serviceAccount": account}}


# Each case: the spec fields beside the workload, and a phrase of the refusal.
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "executor of another subject type": (
        {"executor": {"subject": {"type": "User", "user": {"name": "admin"}}}},
        "spec.executor.subject.type",
    ),
    "executor without a subject type": (
        {"executor": {"subject": {"serviceAccount": {"namespace": "a", "name": "b"}}}},
        "spec.executor.subject.type",
    ),
    "executor account without a namespace": (
        {"executor": service_account(name="sa")},
        "spec.executor.subject.serviceAccount.namespace",
    ),
    "executor account name that is no DNS name": (
        {"executor": service_account(namespace="ns", name="Admin:*")},
        "spec.executor.subject.serviceAccount.name",
    ),
    "unknown propagation policy": (
        {"deleteOption": {"propagationPolicy": "Never"}},
        "spec.deleteOption.propagationPolicy",
    ),
    "orphaning rule without a resource": (
        {
            "deleteOption": {
                "propagationPolicy": "SelectivelyOrphan",
                "selectivelyOrphans": {"orphaningRules": [{"namespace": "default", "name": "x"}]},
            }
        },
        "resource",
    ),
    "orphaning rule without a name": (
        {
            "deleteOption": {
                "propagationPolicy": "SelectivelyOrphan",
                "selectivelyOrphans": {"orphaningRules": [{"resource": "configmaps"}]},
            }
        },
        "name",
    ),
    "manifest config without an identifier": (
        {"manifestConfigs": [{"updateStrategy": {"type": "Update"}}]},
        "resourceIdentifier",
    ),
    "identifier without a resource": (
        {"manifestConfigs": [{"resourceIdentifier": {"name": "cm1"}}]},
        "resource",
    ),
    "unknown update strategy": (
        {"manifestConfigs": [config(updateStrategy={"type": "Replace"})]},
        "updateStrategy.type",
    ),
    "field manager posing as another manager": (
        {
            "manifestConfigs": [
                config(
                    updateStrategy={
                        "type": "ServerSideApply",
                        "serverSideApply": {"fieldManager": "kube-controller-manager"},
                    }
                )
            ]
        },
        "serverSideApply.fieldManager",
    ),
    "unknown ignore-field condition": (
        {
            "manifestConfigs": [
                config(
                    updateStrategy={
                        "type": "ServerSideApply",
                        "serverSideApply": {
                            "ignoreFields": [{"condition": "Always", "jsonPaths": [".data"]}]
                        },
                    }
                )
            ]
        },
        "condition",
    ),
    "unknown feedback rule type": (
        {"manifestConfigs": [config(feedbackRules=[{"type": "Everything"}])]},
        "feedbackRules[0].type",
    ),
    "JSONPath without a path": (
        {
            "manifestConfigs": [
                config(feedbackRules=[{"type": "JSONPaths", "jsonPaths": [{"name": "x"}]}])
            ]
        },
        "path",
    ),
    "unknown scrape type": (
        {"manifestConfigs": [config(feedbackScrapeType="Stream")]},
        "feedbackScrapeType",
    ),
    "unknown condition rule type": (
        {"manifestConfigs": [config(conditionRules=[{"type": "Script", "condition": "Ok"}])]},
        "conditionRules[0].type",
    ),
}


# Left out, the same fields are defaulted (as in OCM's CRD) rather than refused.
SSA_WITHOUT_TYPE = config(
    updateStrategy={
        "serverSideApply": {"ignoreFields": [{"jsonPaths": [".data"]}]},
    }
)


@pytest.fixture
async def hub(cluster: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A hub (kubesim or a real apiserver) serving the ManifestWork CRD, with the cluster
    namespace."""
    client = await KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"), qps=0, name="hub")
    try:
        await install_crds(client, [CRD_DIR / name for name in HUB_CRDS])
        await client.create(NAMESPACES, {"metadata": {"name": CLUSTER}})
        yield client
    finally:
        await client.close()


async def test_malformed_works_are_refused(hub: KubeClient) -> None:
    """One hub for the whole table: each case is a create that must fail."""
    # The well-formed base of every case is accepted.
    await hub.create(MANIFESTWORKS, work_body("valid", [CONFIGMAP]))
    wrong: dict[str, str] = {}
    for index, (case, (spec, phrase)) in enumerate(REFUSED.items()):
        name = f"malformed-{index}"
        try:
            await hub.create(MANIFESTWORKS, work_body(name, [copy.deepcopy(CONFIGMAP)], **spec))
        except Invalid as err:
            if phrase not in str(err):
                wrong[case] = f"refused for another reason: {err}"
            continue
        wrong[case] = "accepted"
    assert wrong == {}
    stored = await hub.list(MANIFESTWORKS, CLUSTER)
    assert [w["metadata"]["name"] for w in stored["items"]] == ["valid"]


async def test_missing_strategy_type_and_condition_take_the_crd_defaults(
    hub: KubeClient,
) -> None:
    created = await hub.create(
        MANIFESTWORKS, work_body("defaulted", [CONFIGMAP], manifestConfigs=[SSA_WITHOUT_TYPE])
    )
    strategy = created["spec"]["manifestConfigs"][0]["updateStrategy"]
    assert strategy["type"] == "Update"
    assert strategy["serverSideApply"]["ignoreFields"][0]["condition"] == "OnSpokePresent"
    assert strategy["serverSideApply"]["fieldManager"] == "work-agent"
