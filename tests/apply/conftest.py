"""Fixtures for the update-strategy tests: clients for kubesim, an owner, write counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import APPLIED_MANIFESTWORKS, CRDS, KubeClient, Resource
from schemas.crdgen import crd_for
from schemas.work_v1 import AppliedManifestWork, ManifestConfigOption
from tests.conftest import Raw
from tests.support.simclient import sim_client
from workagent.apply import ApplyRequest

NS = "apply"
WORK = "work-1"
WRITE_VERBS = ("create", "update", "patch", "delete")


@pytest.fixture
async def kube(sim: KubeSim, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """The agent's spoke client (User-Agent ``work-agent``) with namespace ``apply`` created."""
    async with sim_client(tmp_path, "work-agent", "apply-test", NS) as client:
        yield client


@pytest.fixture
async def other(sim: KubeSim, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """Another writer on the managed cluster (field manager ``spoke-user``)."""
    async with sim_client(tmp_path, "spoke-user/1.0", "other") as client:
        yield client


async def applied_work_owner(client: KubeClient, work: str = WORK) -> dict[str, Any]:
    """Create an AppliedManifestWork of ``work``; the owner reference to it."""
    amw = await client.create(
        APPLIED_MANIFESTWORKS,
        {
            "apiVersion": APPLIED_MANIFESTWORKS.api_version,
            "kind": "AppliedManifestWork",
            "metadata": {"name": f"hub-{work}"},
            "spec": {"hubHash": "hub", "manifestWorkName": work, "agentID": "agent"},
        },
    )
    return {
        "apiVersion": APPLIED_MANIFESTWORKS.api_version,
        "kind": "AppliedManifestWork",
        "name": amw["metadata"]["name"],
        "uid": amw["metadata"]["uid"],
    }


@pytest.fixture
async def owner(kube: KubeClient) -> dict[str, Any]:
    """The owner reference to a real AppliedManifestWork (kubesim collects orphans)."""
    await kube.create(CRDS, crd_for(AppliedManifestWork))
    return await applied_work_owner(kube)


def web_deployment(
    image: str = "nginx:1.25", *, replicas: int = 2, **container: Any
) -> dict[str, Any]:
    """Deployment ``web`` of one container (``container``: its other fields), with the
    null creationTimestamps a manifest from a work carries."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS, "creationTimestamp": None},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "creationTimestamp": None},
                "spec": {"containers": [{"name": "web", "image": image, **container}]},
            },
        },
    }


def marker(owner: dict[str, Any]) -> dict[str, Any]:
    """The removal marker of ``owner``."""
    return {**owner, "uid": owner["uid"] + "-"}


def request(
    resource: Resource,
    manifest: dict[str, Any],
    owner: dict[str, Any],
    *,
    option: ManifestConfigOption | dict[str, Any] | None = None,
    work: str = WORK,
) -> ApplyRequest:
    """An ApplyRequest for ``manifest``."""
    if isinstance(option, dict):
        option = ManifestConfigOption.model_validate(option)
    return ApplyRequest(
        resource=resource, required=manifest, owner=owner, option=option, work_name=work
    )


@dataclass
class Writes:
    """Counts of the agent's requests, read from kubesim's admin API."""

    raw: Raw

    async def reset(self) -> None:
        """Forget every count."""
        status, _ = await self.raw.request("DELETE", "/kubesim/stats")
        assert status == 200

    async def verbs(self, agent: str = "work-agent") -> Counter[str]:
        """Requests by verb (``get``, ``update``...) sent with ``agent``'s User-Agent."""
        status, body = await self.raw.request("GET", "/kubesim/stats")
        assert status == 200
        counts: Counter[str] = Counter()
        for row in body["requests"]:
            if row["userAgent"] == agent:
                counts[row["verb"]] += row["count"]
        return counts

    async def writes(self, agent: str = "work-agent") -> int:
        """How many write requests (create, update, patch, delete) ``agent`` sent."""
        counts = await self.verbs(agent)
        return sum(counts[v] for v in WRITE_VERBS)


@pytest.fixture
def writes(raw: Raw) -> Writes:
    """Write counts of the agent's client."""
    return Writes(raw)


def managers(obj: dict[str, Any]) -> set[tuple[str, str]]:
    """(manager, operation) of every managedFields entry."""
    return {(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or []}
