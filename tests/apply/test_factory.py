"""Choosing the applier for a manifest's updateStrategy."""

from __future__ import annotations

from typing import Any

from ocmkit.kube import CONFIGMAPS, NAMESPACES, KubeClient
from schemas.work_v1 import ManifestConfigOption, UpdateStrategy
from tests.apply.conftest import Writes, request
from tests.support.manifests import configmap
from workagent.apply import (
    Appliers,
    CreateOnlyApplier,
    ReadOnlyApplier,
    ServerSideApplier,
    UpdateApplier,
)


def strategy(**wire: Any) -> UpdateStrategy:
    return UpdateStrategy.model_validate(wire)


async def test_for_strategy(kube: KubeClient) -> None:
    appliers = Appliers(kube)
    assert appliers.for_strategy(None) is appliers.update
    assert isinstance(appliers.update, UpdateApplier)
    assert appliers.for_strategy(strategy(type="Update")) is appliers.update
    assert isinstance(appliers.for_strategy(strategy(type="CreateOnly")), CreateOnlyApplier)
    assert isinstance(appliers.for_strategy(strategy(type="ReadOnly")), ReadOnlyApplier)
    assert appliers.for_strategy(strategy(type="ServerSideApply")) is appliers.server_side
    assert isinstance(Appliers(kube).for_strategy(None), UpdateApplier)


async def test_server_side_options_from_the_strategy(
    kube: KubeClient, owner: dict[str, Any]
) -> None:
    option = {
        "resourceIdentifier": {"resource": "configmaps", "name": "*", "namespace": "*"},
        "updateStrategy": {
            "type": "ServerSideApply",
            "serverSideApply": {"fieldManager": "work-agent-y"},
        },
    }
    chosen = Appliers(kube, default_field_manager="work-agent-x").for_strategy(
        ManifestConfigOption.model_validate(option).update_strategy
    )
    assert isinstance(chosen, ServerSideApplier)
    manifest: dict[str, Any] = configmap("cm", "apply", a="1")
    # The strategy's options apply.
    live = await chosen.apply(request(CONFIGMAPS, manifest, owner, option=option))
    assert "work-agent-y" in {e["manager"] for e in live["metadata"]["managedFields"]}
    bare = Appliers(kube, default_field_manager="work-agent-x").server_side
    manifest["metadata"]["name"] = "cm-2"
    live = await bare.apply(request(CONFIGMAPS, manifest, owner))
    assert "work-agent-x" in {e["manager"] for e in live["metadata"]["managedFields"]}


async def test_namespace_metadata_only(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team", "namespace": "ignored", "labels": {"team": "a"}},
    }
    appliers = Appliers(kube)
    live = await appliers.update.apply(request(NAMESPACES, manifest, owner))
    assert live["metadata"]["labels"]["team"] == "a"
    await writes.reset()
    await Appliers(kube).update.apply(request(NAMESPACES, manifest, owner))
    assert await writes.writes() == 0
    manifest["metadata"]["labels"] = {"team": "b"}
    live = await appliers.update.apply(request(NAMESPACES, manifest, owner))
    assert live["metadata"]["labels"]["team"] == "b"
    assert live["metadata"]["ownerReferences"] == [owner]
