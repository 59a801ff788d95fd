"""Hub manager fixtures: a hub with the OCM CRDs, and the real manager in-process.

Everything goes through real HTTP: the manager runs ``build_hub_manager(settings)``
in-process (or ``uv run hubcontroller manager ...`` as a subprocess) against
the hub, kubesim or a real kube-apiserver (each test runs on both). Tests observe the hub with their own client and wait on
conditions with :func:`tests.conftest.eventually`, never on time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ocmkit.kube import MANIFESTWORKS, KubeClient, NotFound
from schemas.meta import format_time
from schemas.meta import now as api_now
from schemas.wire import CONDITION_COMPLETE
from tests.conftest import eventually
from tests.support.programs import (
    CLUSTER,
    CRD_DIR,
    ManagerRunner,
    manager_settings,
    open_test_client,
)
from tests.support.targets import Cluster

HUB_NAMESPACE = "open-cluster-management-hub"


async def hub_test_client(kubeconfig: Path) -> KubeClient:
    """A test client (user agent ``hub-test``) with every CRD of ``charts/crds`` served and
    the namespaces installed."""
    return await open_test_client(
        kubeconfig,
        user_agent="hub-test",
        name="test-hub",
        crds=sorted(CRD_DIR.glob("*.yaml")),
        namespaces=(CLUSTER, HUB_NAMESPACE),
    )


@pytest.fixture
async def hub_client(cluster: Cluster, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A client of the hub (kubesim or a real apiserver; kubeconfig ``tmp_path/kubeconfig``),
    CRDs installed."""
    async with await hub_test_client(tmp_path / "kubeconfig") as client:
        yield client


@pytest.fixture
async def manager(hub_client: KubeClient, tmp_path: Path) -> AsyncIterator[ManagerRunner]:
    """The real manager with the GC gate on, running in-process and ready."""
    async with ManagerRunner(manager_settings(tmp_path / "kubeconfig")) as runner:
        yield runner


# -- helpers ----------------------------------------------------------------------------


def work_body(
    name: str, *, ttl: int | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A ManifestWork in ``cluster1`` with one ConfigMap, and a TTL when given."""
    spec: dict[str, Any] = {
        "workload": {
            "manifests": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"{name}-cm", "namespace": "default"},
                    "data": {"key": "value"},
                }
            ]
        }
    }
    if ttl is not None:
        spec["deleteOption"] = {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": ttl}
    metadata: dict[str, Any] = {"name": name, "namespace": CLUSTER}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": metadata,
        "spec": spec,
    }


def condition(ctype: str, status: str, at: Any) -> dict[str, Any]:
    """A work condition that turned ``status`` at ``at`` (a datetime)."""
    return {
        "type": ctype,
        "status": status,
        "reason": "Test",
        "message": f"{ctype} set by the test",
        "lastTransitionTime": format_time(at),
    }


async def write_conditions(
    client: KubeClient, name: str, *conditions: dict[str, Any]
) -> dict[str, Any]:
    """Write ``status.conditions`` of work ``name`` as an agent would (status subresource)."""
    return await client.patch(
        MANIFESTWORKS,
        name,
        {"status": {"conditions": list(conditions)}},
        CLUSTER,
        subresource="status",
    )


async def write_complete(
    client: KubeClient, name: str, at: datetime | None = None
) -> dict[str, Any]:
    """Write work ``name``'s ``Complete=True`` as an agent would, turned at ``at`` (now by
    default; an agent's clock may be off either way)."""
    return await write_conditions(
        client, name, condition(CONDITION_COMPLETE, "True", at or api_now())
    )


async def exists(client: KubeClient, name: str, namespace: str = CLUSTER) -> bool:
    """Whether work ``name`` exists."""
    try:
        await client.get(MANIFESTWORKS, name, namespace)
    except NotFound:
        return False
    return True


async def wait_deleted(client: KubeClient, name: str, namespace: str = CLUSTER) -> None:
    """Wait until work ``name`` is gone."""

    async def gone() -> bool:
        return not await exists(client, name, namespace)

    # Generous: other suites may share the machine; the wait ends as soon as it is gone.
    await eventually(gone, timeout=30, what=f"work {namespace}/{name} to be deleted")
