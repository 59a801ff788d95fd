"""Hostile ManifestWork specs through the hub's CRD schema and the real agent.

One agent (and one hub and spoke) per test; each hypothesis example creates a
batch of hostile works on the hub, then a well-formed canary work. The hub
may refuse a spec (a clean 4xx with a message); everything it accepts must end
with clear conditions, the canary must be applied as if nothing happened,
and the agent must still be running.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ocmkit.kube import KubeClient
from tests.conftest import eventually
from tests.hostile.helpers import assert_alive, create_or_refusal, hostile_work, settled
from tests.hostile.strategies import hostile_specs
from tests.integration.conftest import (
    configmap,
    wait_applied,
    work_body,
)
from tests.support.programs import AgentRunner

BATCH = 8
_names = itertools.count()


async def canary_applied(hub_client: KubeClient, tag: int) -> None:
    """A well-formed work created after hostile ones is applied."""
    name = f"canary-{tag}"
    created = await create_or_refusal(hub_client, work_body(name, [configmap(name)]))
    assert created is None, f"the canary was refused: {created}"
    await wait_applied(hub_client, name)


@settings(settings.get_profile("hostile"), max_examples=2)
@given(
    shaped=st.lists(hostile_specs(loose=False), min_size=BATCH - 1, max_size=BATCH - 1),
    loose=hostile_specs(),
)
async def test_hostile_works_end_clear_and_hurt_no_other(
    agent: AgentRunner,
    hub_client: KubeClient,
    shaped: list[dict[str, Any]],
    loose: dict[str, Any],
) -> None:
    tag = next(_names)
    accepted: dict[str, dict[str, Any]] = {}
    # Mostly specs the CRD lets through (the agent's problem), one that may break it.
    for index, spec in enumerate([*shaped, loose]):
        name = f"hostile-{tag}-{index}"
        if await create_or_refusal(hub_client, hostile_work(name, spec)) is None:
            accepted[name] = spec

    await canary_applied(hub_client, tag)

    pending: dict[str, str] = dict.fromkeys(accepted, "not checked yet")

    async def all_settled() -> bool:
        for name in list(pending):
            done, why = await settled(hub_client, name)
            if done:
                del pending[name]
            else:
                pending[name] = why
        return not pending

    try:
        await eventually(all_settled, timeout=30, what="every accepted hostile work to settle")
    except AssertionError as err:
        details = "\n".join(f"{n}: {why}\n  spec={accepted[n]!r}" for n, why in pending.items())
        raise AssertionError(f"{err}\n{details}") from None
    assert_alive(agent)
