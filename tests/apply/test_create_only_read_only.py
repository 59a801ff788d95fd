"""The CreateOnly and ReadOnly strategies against kubesim (spec/agent.md 5.2, 5.3)."""

from __future__ import annotations

from typing import Any

import pytest

from ocmkit.kube import CONFIGMAPS, DEPLOYMENTS, KubeClient, NotFound
from tests.apply.conftest import NS, Writes, marker, request
from tests.support.manifests import configmap as configmap_manifest
from workagent.apply import CreateOnlyApplier, ReadOnlyApplier


def configmap(value: str) -> dict[str, Any]:
    return configmap_manifest("once", NS, key=value)


async def test_create_only_creates_then_never_updates(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    applier = CreateOnlyApplier(kube)
    created = await applier.apply(request(CONFIGMAPS, configmap("first"), owner))
    assert created["data"] == {"key": "first"}
    assert created["metadata"]["ownerReferences"] == [owner]
    await writes.reset()
    live = await applier.apply(request(CONFIGMAPS, configmap("second"), owner))
    assert live["data"] == {"key": "first"}
    assert await writes.verbs() == {"get": 1}


async def test_create_only_adopts_and_disowns_existing_objects(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    await other.create(CONFIGMAPS, configmap("theirs"), NS)
    applier = CreateOnlyApplier(kube)
    await writes.reset()
    live = await applier.apply(request(CONFIGMAPS, configmap("ours"), owner))
    # Adopted: the owner reference is added by a merge patch, the content is untouched.
    assert live["data"] == {"key": "theirs"}
    assert live["metadata"]["ownerReferences"] == [owner]
    assert (await writes.verbs())["patch"] == 1
    live = await applier.apply(request(CONFIGMAPS, configmap("ours"), marker(owner)))
    assert "ownerReferences" not in live["metadata"]
    assert live["data"] == {"key": "theirs"}


async def test_create_only_with_removal_marker_creates_without_owner(
    kube: KubeClient, owner: dict[str, Any]
) -> None:
    live = await CreateOnlyApplier(kube).apply(request(CONFIGMAPS, configmap("x"), marker(owner)))
    assert "ownerReferences" not in live["metadata"]


async def test_read_only_returns_the_live_object_and_never_writes(
    kube: KubeClient, other: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    live = await other.create(CONFIGMAPS, configmap("theirs"), NS)
    await writes.reset()
    got = await ReadOnlyApplier(kube).apply(request(CONFIGMAPS, configmap("ours"), owner))
    assert got["metadata"]["uid"] == live["metadata"]["uid"]
    assert got["data"] == {"key": "theirs"}
    assert "ownerReferences" not in got["metadata"]
    assert await writes.verbs() == {"get": 1}


async def test_read_only_missing_object(
    kube: KubeClient, owner: dict[str, Any], writes: Writes
) -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "absent", "namespace": NS, "uid": "x"},
    }
    await writes.reset()
    # As OCM: the manifest itself (no uid), so the manifest counts as applied.
    got = await ReadOnlyApplier(kube).apply(request(DEPLOYMENTS, manifest, owner))
    assert got["metadata"] == {"name": "absent", "namespace": NS}
    with pytest.raises(NotFound):
        await ReadOnlyApplier(kube, missing_is_error=True).apply(
            request(DEPLOYMENTS, manifest, owner)
        )
    assert await writes.writes() == 0
