"""Fault-suite fixtures: the integration harness (hub and spoke kubesims over HTTP,
the OCM CRDs, the real agent in-process), with a short status sync period.

The status controller re-reads the applied objects every
``--status-sync-interval``; after a fault that made a read fail (``Available``
Unknown) that period is what brings ``Available`` back, so it is 2 s here
instead of 30 s. Nothing else differs from the integration tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import KubeClient
from tests.faults.invariants import CONVERGE_SECONDS, Expected, converged
from tests.integration import conftest as integration
from tests.integration.conftest import (
    hub_hash_of,
)
from tests.support.programs import AgentRunner, agent_settings
from workagent.settings import AgentSettings

STATUS_SYNC_SECONDS = 2.0

# The integration fixtures, served to this directory too.
hub = integration.hub
spoke = integration.spoke
spoke_options = integration.spoke_options
hub_client = integration.hub_client
spoke_client = integration.spoke_client


def fault_agent_settings(tmp_path: Path) -> AgentSettings:
    """The in-process agent's settings for fault tests."""
    return agent_settings(tmp_path, status_sync_interval=STATUS_SYNC_SECONDS)


@pytest.fixture
async def runner(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """The real agent for ``cluster1``, in-process, not started (a test may inject faults
    first); stopped at the end."""
    agent = AgentRunner(fault_agent_settings(tmp_path))
    try:
        yield agent
    finally:
        await agent.stop()


@pytest.fixture
async def agent(runner: AgentRunner) -> AgentRunner:
    """The real agent for ``cluster1``, running in-process and ready."""
    await runner.start()
    return runner


@pytest.fixture
def the_hash(hub: KubeSim, tmp_path: Path) -> str:
    """The hub hash of the test hub kubeconfig (names the AppliedManifestWorks)."""
    return hub_hash_of(tmp_path)


@dataclass(frozen=True)
class Clusters:
    """The hub and spoke kubesims, test clients of both, the hub hash of the agent."""

    hub: KubeSim
    spoke: KubeSim
    hub_client: KubeClient
    spoke_client: KubeClient
    the_hash: str

    async def converged(
        self,
        expected: Expected | Collection[str],
        *,
        timeout: float = CONVERGE_SECONDS,
        what: str = "the agent to converge",
    ) -> None:
        """Wait for :func:`converged` on these clusters; a bare collection names the works."""
        if not isinstance(expected, Expected):
            expected = Expected(works=expected)
        await converged(
            self.hub_client, self.spoke_client, self.the_hash, expected, timeout=timeout, what=what
        )


@pytest.fixture
def env(
    hub: KubeSim, spoke: KubeSim, hub_client: KubeClient, spoke_client: KubeClient, the_hash: str
) -> Clusters:
    """Both clusters of a fault test, with their clients."""
    return Clusters(hub, spoke, hub_client, spoke_client, the_hash)
