"""Expressions built to be slow, through the real agent: they cost their own work only.

``tests/conditions/test_safety.py`` covers the CEL evaluator itself (budget,
kills, no starvation of the pool). Here the whole agent runs: a work whose
condition rule is a runaway CEL comprehension and a work whose feedback rule
has many JSONPaths with recursive descent over a large object must not stall
the event loop, the apply loop or the status of other works; each gets a
condition that says what went wrong.
"""

from __future__ import annotations

from typing import Any

from ocmkit.kube import KubeClient
from tests.conftest import eventually
from tests.hostile.helpers import assert_alive, create_or_refusal
from tests.integration.conftest import (
    configmap,
    get_work,
    manifest_condition,
    values_of,
    wait_applied,
    work_body,
)
from tests.support.loop_lag import LoopLag
from tests.support.manifests import json_paths, manifest_config
from tests.support.programs import AgentRunner
from workagent.conditions.reasons import BUDGET_EXCEEDED_MESSAGE, LIMIT_MESSAGE

#: 150**3 comprehension steps: minutes for celpy, cut at OCM's per-call cost limit
#: (about a second), or at the 5 s wall-clock budget on a machine slower than that.
RUNAWAY_CEL = "object.data.all(a, object.data.all(b, object.data.all(c, a + b + c != '')))"
#: Each path walks every node (and every byte of every string) of the object twice.
SLOW_PATHS = ["..a..b", "..[?(@.b > 0)]", "..k..x", "..data..z"]
#: How many slow paths the feedback rule repeats: tens of seconds of CPU together.
SLOW_PATH_COUNT = 24


def cel_rule(expression: str) -> dict[str, Any]:
    """A CEL condition rule setting condition ``Checked``."""
    return {"condition": "Checked", "type": "CEL", "celExpressions": [expression]}


async def test_slow_cel_and_jsonpath_hurt_no_other_work(
    agent: AgentRunner, hub_client: KubeClient
) -> None:
    # 150 keys: the comprehension has 3.4 million steps.
    keys = {f"k{i:03d}": "v" for i in range(150)}
    slow_cel = work_body(
        "slow-cel",
        [configmap("slow-cel", **keys)],
        manifestConfigs=[
            manifest_config("", "configmaps", "slow-cel", rules=[cel_rule(RUNAWAY_CEL)])
        ],
    )
    # One 400 KB value: recursive descent visits each of its bytes.
    paths = [(f"p{i}", SLOW_PATHS[i % len(SLOW_PATHS)]) for i in range(SLOW_PATH_COUNT)]
    slow_paths = work_body(
        "slow-jsonpath",
        [configmap("slow-jsonpath", k="x" * 400_000)],
        manifestConfigs=[
            manifest_config("", "configmaps", "slow-jsonpath", feedback=[json_paths(*paths)])
        ],
    )
    with LoopLag() as lag:
        for body in (slow_cel, slow_paths):
            assert await create_or_refusal(hub_client, body) is None
        await wait_applied(hub_client, "slow-jsonpath")

        # A work created after them: applied, its rule evaluated, its feedback read.
        canary = work_body(
            "canary",
            [configmap("canary", key="ok")],
            manifestConfigs=[
                manifest_config(
                    "",
                    "configmaps",
                    "canary",
                    rules=[cel_rule("object.data.key == 'ok'")],
                    feedback=[json_paths(("key", ".data.key"), ("any", "..key"))],
                )
            ],
        )
        assert await create_or_refusal(hub_client, canary) is None
        await wait_applied(hub_client, "canary")

        async def canary_reported() -> bool:
            work = await get_work(hub_client, "canary")
            checked = manifest_condition(work, 0, "Checked")
            return (
                checked is not None
                and checked["status"] == "True"
                and dict(values_of(work, 0)).get("key") == {"type": "String", "string": "ok"}
                and dict(values_of(work, 0)).get("any") == {"type": "String", "string": "ok"}
            )

        # Seconds, not the minutes the expressions would take.
        await eventually(canary_reported, timeout=20, what="the canary's rule and feedback")

        async def slow_ones_reported() -> bool:
            cel_work = await get_work(hub_client, "slow-cel")
            checked = manifest_condition(cel_work, 0, "Checked")
            path_work = await get_work(hub_client, "slow-jsonpath")
            synced = manifest_condition(path_work, 0, "StatusFeedbackSynced")
            return (
                checked is not None
                and checked["status"] == "False"
                and checked["message"] in (LIMIT_MESSAGE, BUDGET_EXCEEDED_MESSAGE)
                and synced is not None
                and synced["status"] == "False"
                and "intermediate values" in synced["message"]
            )

        await eventually(slow_ones_reported, timeout=30, what="the slow works' conditions")
    # A stall detector, not a timing: the expressions would hold the loop for
    # minutes; the JSONPath budget is about a second of CPU, and a loaded 2-core
    # machine may add several more to any pause.
    assert lag.worst < 10.0, f"the event loop was held up for {lag.worst:.1f}s"
    assert_alive(agent)
