"""Fixtures of the hostile-input suite: the integration harness (hub and spoke
kubesims over HTTP, the OCM CRDs, the real agent in-process), with a short
status sync period so that status-side outcomes (feedback, condition rules)
show up within the tests' deadlines.

Hypothesis runs derandomized with the example database off: the suite gives
the same examples on every run and on every machine, so a CI failure can be
reproduced by running it again.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from tests.integration import conftest as integration
from tests.webhook import conftest as webhook

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
agent = integration.agent
# The webhook's serving certificate fixtures.
serving_cert = webhook.serving_cert
certdir = webhook.certdir


@pytest.fixture
def agent_overrides() -> dict[str, Any]:
    """The suite's agent syncs status every STATUS_SYNC_SECONDS."""
    return {"status_sync_interval": STATUS_SYNC_SECONDS}
