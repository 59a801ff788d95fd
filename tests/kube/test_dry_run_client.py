"""The dry-run clients: every write is a server-side dry run, and the overlay chains them.

Against kubesim, whose request journal records which writes were dry runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, KubeClient, NotFound
from ocmkit.kube.mergepatch import apply_merge_patch
from tests.support.manifests import configmap
from workagent.dryrun import DryRunClient

WRITES = ("create", "update", "patch", "delete")


def test_apply_merge_patch_is_rfc_7386() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    patch = {"a": "z", "c": {"f": None, "h": 1}, "l": [3], "n": {"o": None}}
    assert apply_merge_patch(target, patch) == {
        "a": "z",
        "c": {"d": "e", "h": 1},
        "l": [3],
        "n": {},
    }
    assert target["c"] == {"d": "e", "f": "g"}  # not modified
    assert apply_merge_patch({"a": 1}, ["x"]) == ["x"]


@pytest.fixture
async def clients(sim: KubeSim, tmp_path: Path) -> Any:
    path = str(tmp_path / "kubeconfig")
    real = await KubeClient.from_kubeconfig(path, qps=0, user_agent="setup")
    dry = await DryRunClient.from_kubeconfig(path, qps=0, user_agent="dry")
    try:
        yield real, dry
    finally:
        await real.close()
        await dry.close()


async def test_writes_chain_in_the_overlay_and_store_nothing(
    sim: KubeSim, clients: tuple[KubeClient, DryRunClient]
) -> None:
    real, dry = clients
    live = await real.create(CONFIGMAPS, configmap("old", k="1"))
    sim.journal().reset()

    # Created in the dry run only: read back, then merge-patched (sent as a dry-run create).
    created = await dry.create(CONFIGMAPS, configmap("new", k="1"))
    assert created["metadata"]["uid"]
    assert (await dry.get(CONFIGMAPS, "new", "default"))["data"] == {"k": "1"}
    patched = await dry.patch(CONFIGMAPS, "new", {"metadata": {"labels": {"l": "v"}}}, "default")
    assert patched["metadata"]["labels"] == {"l": "v"} and patched["data"] == {"k": "1"}
    # An existing object: patch, then a merge patch on top of the first (a dry-run update).
    first = await dry.patch(
        CONFIGMAPS,
        "old",
        configmap("old", k="2"),
        "default",
        patch_type="apply",
        field_manager="t",
        force=True,
    )
    assert first["data"] == {"k": "2"}
    second = await dry.patch(CONFIGMAPS, "old", {"metadata": {"labels": {"x": "y"}}}, "default")
    assert second["data"] == {"k": "2"} and second["metadata"]["labels"] == {"x": "y"}
    # Deleted, then created again: the body as it would be created.
    await dry.delete(CONFIGMAPS, "old", "default")
    with pytest.raises(NotFound):
        await dry.get(CONFIGMAPS, "old", "default")
    again = await dry.create(CONFIGMAPS, configmap("old", k="3"))
    assert again["data"] == {"k": "3"}
    assert ("", "configmaps", "default", "old") in dry.recreated

    writes = [e for e in sim.journal().entries if e.user_agent == "dry" and e.verb in WRITES]
    # create, create (the patch of "new"), apply, update (the patch of "old"), delete; the
    # re-create is not sent: the object still exists, a dry-run create would be refused.
    assert [e.verb for e in writes] == ["create", "create", "patch", "update", "delete"]
    assert all(e.dry_run for e in writes)
    assert (await real.get(CONFIGMAPS, "old", "default"))["metadata"] == live["metadata"]
    with pytest.raises(NotFound):
        await real.get(CONFIGMAPS, "new", "default")
