"""Fixtures of the security tests: the integration suite's hub, spoke and agent.

Imported rather than redefined, so that the agent under test is started
exactly as every other integration test starts it.
"""

from __future__ import annotations

from tests.integration.conftest import (
    hub,
    hub_client,
    spoke,
    spoke_client,
    spoke_options,
)

__all__ = ["hub", "hub_client", "spoke", "spoke_client", "spoke_options"]
