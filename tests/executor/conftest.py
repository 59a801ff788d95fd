"""Fixtures for the executor tests: an admin spoke client for kubesim and RBAC helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import KubeClient
from schemas.work_v1 import ManifestWorkExecutor
from tests.support.simclient import sim_client
from workagent.executor.access import Access, AccessReviewer

NS = "demo"
SA_NS = "agents"
SA_NAME = "executor1"
EXECUTOR_KEY = f"{SA_NS}/{SA_NAME}"
RBAC = "rbac.authorization.k8s.io/v1"


@pytest.fixture
async def spoke(sim: KubeSim, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """The agent's spoke client (kubesim's admin, no QPS limit) with namespaces created."""
    async with sim_client(tmp_path, "work-agent", "executor-test", NS, SA_NS) as client:
        yield client


class CountingReviewer(AccessReviewer):
    """An AccessReviewer that records every review it sends."""

    def __init__(self, spoke: KubeClient) -> None:
        super().__init__(spoke)
        self.asked: list[Access] = []

    async def allowed(self, executor: Any, access: Access) -> bool:
        self.asked.append(access)
        return await super().allowed(executor, access)


def executor(namespace: str = SA_NS, name: str = SA_NAME) -> ManifestWorkExecutor:
    """A ServiceAccount executor as it arrives in a ManifestWork spec."""
    return ManifestWorkExecutor.model_validate(
        {
            "subject": {
                "type": "ServiceAccount",
                "serviceAccount": {"namespace": namespace, "name": name},
            }
        }
    )


def rule(groups: list[str], resources: list[str], verbs: list[str], **extra: Any) -> dict[str, Any]:
    """A PolicyRule."""
    return {"apiGroups": groups, "resources": resources, "verbs": verbs, **extra}


def role(name: str, rules: list[dict[str, Any]], namespace: str = NS) -> dict[str, Any]:
    """A Role body."""
    return {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": rules,
    }


def cluster_role(name: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A ClusterRole body (``extra``: e.g. ``aggregationRule``; ``labels`` go to metadata)."""
    labels = extra.pop("labels", None)
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": meta, "rules": rules, **extra}


def sa_subject(namespace: str = SA_NS, name: str = SA_NAME) -> dict[str, Any]:
    """A ServiceAccount subject."""
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def role_binding(
    name: str,
    role_name: str,
    *,
    kind: str = "Role",
    namespace: str = NS,
    subjects: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A RoleBinding of ``role_name`` (a Role or ClusterRole) to the test executor."""
    return {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
        "subjects": subjects if subjects is not None else [sa_subject()],
    }


def cluster_role_binding(
    name: str, role_name: str, *, subjects: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A ClusterRoleBinding of ClusterRole ``role_name`` to the test executor."""
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role_name,
        },
        "subjects": subjects if subjects is not None else [sa_subject()],
    }


def configmap(name: str = "cm1", namespace: str = NS) -> dict[str, Any]:
    """A ConfigMap manifest."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }
