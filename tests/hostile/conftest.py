"""Fixtures of the hostile-input suite: the integration harness (hub and spoke
kubesims over HTTP, the OCM CRDs, the real agent in-process), with a short
status sync period so that status-side outcomes (feedback, condition rules)
show up within the tests' deadlines.

Hypothesis runs derandomized with the example database off: the suite gives
the same examples on every run and on every machine, so a CI failure can be
reproduced by running it again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from ocmkit.kube import KubeClient
from tests.integration import conftest as integration
from tests.support.programs import AgentRunner, agent_settings
from tests.webhook import conftest as webhook
from workagent.settings import AgentSettings

STATUS_SYNC_SECONDS = 2.0

settings.register_profile(
    "hostile",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    # No shrinking for the agent-level tests: examples share one live agent and
    # hub, so a shrunk re-run would not start from the same state anyway.
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# The integration fixtures, served to this directory too.
hub = integration.hub
spoke = integration.spoke
spoke_options = integration.spoke_options
hub_client = integration.hub_client
spoke_client = integration.spoke_client
# The webhook's serving certificate fixtures.
serving_cert = webhook.serving_cert
certdir = webhook.certdir


def hostile_agent_settings(tmp_path: Path) -> AgentSettings:
    """The in-process agent's settings for this suite."""
    return agent_settings(tmp_path, status_sync_interval=STATUS_SYNC_SECONDS)


@pytest.fixture
async def agent(
    hub_client: KubeClient, spoke_client: KubeClient, tmp_path: Path
) -> AsyncIterator[AgentRunner]:
    """The real agent for ``cluster1``, running in-process and ready."""
    async with AgentRunner(hostile_agent_settings(tmp_path)) as runner:
        yield runner
