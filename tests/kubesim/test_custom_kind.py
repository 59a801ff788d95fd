"""Writes of a custom resource must carry its kind and apiVersion, as on a real apiserver.

A built-in type is decoded into the Go type the URL names, so its body may omit
both; a custom resource is decoded as unstructured JSON, which needs them. The
bodies are sent as they are with ``kubectl create --raw`` (no client fills them in).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import MANIFESTWORKS, KubeClient
from tests.support.prepare import install_crds
from tests.support.targets import Cluster

CRD = Path(__file__).parents[2] / "charts/hub-controller/crds"
PATH = "/apis/work.open-cluster-management.io/v1/namespaces/default/manifestworks"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


async def kubectl_create_raw(kubeconfig: Path, path: str, body: bytes) -> tuple[int, str]:
    """``kubectl create --raw`` of ``body`` as given: (exit code, what kubectl printed)."""
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        f"--kubeconfig={kubeconfig}",
        "create",
        "--raw",
        path,
        "-f",
        "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(body), timeout=60)
    return proc.returncode or 0, out.decode()


@pytest.fixture
async def kubeconfig(cluster: Cluster, tmp_path: Path) -> Path:
    """The admin's kubeconfig of a cluster with the ManifestWork CRD served."""
    path = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    client = await KubeClient.from_kubeconfig(str(path), qps=0, name="test")
    try:
        await install_crds(client, [CRD / "work.open-cluster-management.io_manifestworks.yaml"])
    finally:
        await client.close()
    return path


def raw(body: dict[str, Any]) -> bytes:
    """``body`` as Python's json writes it (with spaces: the messages quote the bytes)."""
    return json.dumps(body).encode()


async def test_a_custom_resource_without_kind_is_refused(kubeconfig: Path) -> None:
    body = raw({"apiVersion": "work.open-cluster-management.io/v1", "metadata": {"name": "w"}})
    code, out = await kubectl_create_raw(kubeconfig, PATH, body)
    assert code != 0
    assert (
        "Error from server (BadRequest): the object provided is unrecognized (must be of type "
        "ManifestWork): Object 'Kind' is missing in "
        '\'{"apiVersion": "work.open-cluster-management.io/v1", "metadata": {"name": "w"}}\' '
        '({"apiVersion": "work.open-clus ...)'
    ) in out

    short = raw({"metadata": {}})
    code, out = await kubectl_create_raw(kubeconfig, PATH, short)
    assert code != 0
    assert "Object 'Kind' is missing in '{\"metadata\": {}}' ({\"metadata\": {}})" in out


async def test_a_custom_resource_without_api_version_is_refused(kubeconfig: Path) -> None:
    code, out = await kubectl_create_raw(
        kubeconfig, PATH, raw({"kind": "ManifestWork", "metadata": {"name": "w"}})
    )
    assert code != 0
    assert (
        "Error from server (BadRequest): the API version in the data () does not match the "
        "expected API version (work.open-cluster-management.io/v1)"
    ) in out


async def test_a_custom_resource_of_another_kind_is_invalid(kubeconfig: Path) -> None:
    body = {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "Foo",
        "metadata": {"name": "w"},
    }
    code, out = await kubectl_create_raw(kubeconfig, PATH, raw(body))
    assert code != 0
    assert ('The Foo "w" is invalid: kind: Invalid value: "Foo": must be ManifestWork') in out

    body["apiVersion"], body["kind"] = "v1", "ConfigMap"
    code, out = await kubectl_create_raw(kubeconfig, PATH, raw(body))
    assert code != 0
    assert (
        "the API version in the data (v1) does not match the expected API version "
        "(work.open-cluster-management.io/v1)"
    ) in out


async def test_a_built_in_object_needs_neither(kubeconfig: Path) -> None:
    code, out = await kubectl_create_raw(kubeconfig, CONFIGMAPS, raw({"metadata": {"name": "c"}}))
    assert code == 0, out
    created = json.loads(out)
    assert (created["apiVersion"], created["kind"]) == ("v1", "ConfigMap")

    body = {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork"}
    code, out = await kubectl_create_raw(kubeconfig, PATH, raw({**body, "metadata": {"name": "w"}}))
    assert code == 0, out
    assert json.loads(out)["metadata"]["name"] == "w"


async def test_our_client_sends_kind_and_api_version_as_a_typed_client_does(
    kubeconfig: Path,
) -> None:
    """KubeClient fills in what a body lacks, so a caller's bare body is not refused."""
    client = await KubeClient.from_kubeconfig(str(kubeconfig), qps=0, name="test")
    try:
        created = await client.create(
            MANIFESTWORKS, {"metadata": {"name": "bare"}, "spec": {}}, "default"
        )
        assert created["kind"] == "ManifestWork"
        created["spec"] = {"workload": {"manifests": []}}
        del created["kind"], created["apiVersion"]
        updated = await client.update(MANIFESTWORKS, created, "default")
        assert updated["metadata"]["generation"] == 2
    finally:
        await client.close()
