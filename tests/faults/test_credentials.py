"""The hub revokes the agent's token (401), then the credentials are rotated.

The hub kubesim serves TLS, where a bearer token is mandatory; the agent has a
token of its own (user ``agent``). Revoking it and closing the hub's watches
makes every request of the agent to the hub fail with 401 Unauthorized.

- Inline token, ``--terminate-on-files <hub kubeconfig>``: the agent keeps
  running and says why it cannot reach the hub, backs off instead of retrying
  hot, and exits with code 0 (``EXIT_OK``: a restart was asked for, nothing
  failed) once the kubeconfig is rotated to a new token; the restarted agent
  converges.
- ``tokenFile`` in the kubeconfig: the agent re-reads the file after a 401, so
  writing the new token to the file is enough: it converges without a restart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from kubesim.sim import KubeSim
from ocmkit.command import EXIT_OK
from ocmkit.runtime.manager import FILE_CHECK_SECONDS
from tests.conftest import eventually
from tests.faults.conftest import Clusters, fault_agent_settings
from tests.faults.harness import (
    AGENT_ON_HUB,
    agent_args,
    configmaps,
    create_work,
    spawn_agent,
)
from tests.support.processes import ProgramProcess
from tests.support.programs import AgentRunner

pytestmark = pytest.mark.kubesim_only(
    "the fault suite injects faults through kubesim (fault API, journal, restarts)"
)

#: How many 401 answers the agent may provoke in OBSERVE seconds of revoked
#: credentials: its informer backs off exponentially and the controllers'
#: retries are rate limited; a hot loop would send hundreds.
MAX_401S = 40
OBSERVE = 3.0


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[KubeSim]:
    """A hub serving TLS (bearer tokens mandatory); the tests' admin kubeconfig."""
    sim = KubeSim(tls=True)
    await sim.start()
    sim.write_kubeconfig(tmp_path / "hub.kubeconfig")
    try:
        yield sim
    finally:
        await sim.stop()


def unauthorized(hub: KubeSim, since: float = 0.0) -> int:
    """401 answers the hub gave the agent's client since ``since`` (monotonic)."""
    return sum(
        1
        for e in hub.journal().entries
        if e.code == 401 and e.at >= since and e.user_agent.startswith(AGENT_ON_HUB)
    )


async def revoke(hub: KubeSim, token: str) -> None:
    """Revoke ``token`` and end the open watches, so the agent must authenticate again.

    (An apiserver authenticates a watch once; without the close the agent would
    notice only when its watch times out.)
    """
    hub.revoke(token)
    hub.close_watches()

    async def refused() -> bool:
        return unauthorized(hub) > 0

    await eventually(refused, what="the hub to refuse the agent (401)")


async def test_rotated_kubeconfig_restarts_the_agent(
    env: Clusters,
    tmp_path: Path,
) -> None:
    """Revoked: the agent reports 401 and backs off; rotated: it exits 0; restarted:
    it converges."""
    agent_config = tmp_path / "agent-hub.kubeconfig"
    old_token = env.hub.add_user("agent", groups=("system:masters",))
    env.hub.write_kubeconfig(agent_config, token=old_token)
    args = agent_args(
        agent_config,
        tmp_path / "spoke.kubeconfig",
        "--disable-leader-election",
        f"--terminate-on-files={agent_config}",
    )
    await create_work(env.hub_client, "early", configmaps("early", 2))
    agent: ProgramProcess = await spawn_agent(tmp_path, "first", *args)
    try:
        await env.converged({"early"})

        await revoke(env.hub, old_token)
        await create_work(env.hub_client, "late", configmaps("late", 2))
        window_start = time.monotonic()
        # sleep-ok: an observation window; the count in it is the assertion
        await asyncio.sleep(OBSERVE)
        assert agent.process.returncode is None, f"the agent exited:\n{agent.log()}"
        refusals = unauthorized(env.hub, since=window_start)
        assert refusals <= MAX_401S, f"{refusals} 401s in {OBSERVE}s: retrying hot"
        assert "refused the credentials (401 Unauthorized)" in agent.log()
        assert old_token not in agent.log()

        new_token = env.hub.add_user("agent", groups=("system:masters",))
        rotated_at = time.monotonic()
        env.hub.write_kubeconfig(agent_config, token=new_token)
        code = await asyncio.wait_for(agent.process.wait(), timeout=FILE_CHECK_SECONDS + 30)
        assert code == EXIT_OK, agent.log()
        assert time.monotonic() - rotated_at < FILE_CHECK_SECONDS + 30
        assert "file changed, restarting" in agent.log()
    finally:
        await agent.terminate()

    restarted = await spawn_agent(tmp_path, "restarted", *args)
    try:
        await env.converged(
            {"early", "late"}, what="the restarted agent to converge with the new token"
        )
    finally:
        assert await restarted.terminate() == EXIT_OK


async def test_token_file_is_reread_after_401(
    env: Clusters,
    tmp_path: Path,
) -> None:
    """With ``tokenFile`` the agent picks the rotated token up after a 401, without
    a restart."""
    token_file = tmp_path / "hub-token"
    old_token = env.hub.add_user("agent", groups=("system:masters",))
    token_file.write_text(old_token)
    kubeconfig = env.hub.kubeconfig()
    kubeconfig["users"][0]["user"] = {"tokenFile": str(token_file)}
    agent_config = tmp_path / "agent-hub.kubeconfig"
    agent_config.write_text(yaml.safe_dump(kubeconfig))

    settings = replace(fault_agent_settings(tmp_path), hub_kubeconfig=str(agent_config))
    runner = AgentRunner(settings)
    await runner.start()
    try:
        await create_work(env.hub_client, "early", configmaps("early", 2))
        await env.converged({"early"})
        await revoke(env.hub, old_token)
        await create_work(env.hub_client, "late", configmaps("late", 2))
        token_file.write_text(env.hub.add_user("agent", groups=("system:masters",)))
        await env.converged(
            {"early", "late"}, what="the agent to converge with the token re-read from the file"
        )
        assert runner.agent is not None and not runner.agent.manager.stopping
    finally:
        assert await runner.stop() == EXIT_OK
