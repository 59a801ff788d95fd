"""Condition rules whose ``condition`` is no valid condition type.

The CRD takes any string as a rule's condition (as OCM's does), but a status
condition's type must be a qualified name of at most 316 characters: written
as it is, one such rule makes the hub refuse every status patch of the work,
and its whole status goes stale without a word. The agent leaves such a rule
out (and logs why); the other rules and the rest of the status are reported.
"""

from __future__ import annotations

import pytest

from ocmkit.kube import KubeClient
from tests.conftest import eventually
from tests.hostile.helpers import assert_alive, create_or_refusal
from tests.integration.conftest import (
    configmap,
    get_work,
    manifest_condition,
    wait_applied,
    work_body,
    work_condition,
)
from tests.support.programs import AgentRunner
from workagent.conditions.rules import is_condition_type


@pytest.mark.parametrize("condition", ["Not Valid!", "x" * 400, "-dash"])
async def test_a_rule_with_an_invalid_condition_type_is_reported_not_written(
    agent: AgentRunner, hub_client: KubeClient, condition: str
) -> None:
    rules = [
        {"condition": condition, "type": "CEL", "celExpressions": ["true"]},
        {"condition": "Fine", "type": "CEL", "celExpressions": ["true"]},
    ]
    ident = {"resource": "configmaps", "namespace": "default", "name": "ruled"}
    body = work_body(
        "ruled",
        [configmap("ruled")],
        manifestConfigs=[{"resourceIdentifier": ident, "conditionRules": rules}],
    )
    assert await create_or_refusal(hub_client, body) is None
    await wait_applied(hub_client, "ruled")

    async def evaluated() -> bool:
        work = await get_work(hub_client, "ruled")
        fine = manifest_condition(work, 0, "Fine")
        return fine is not None and fine["status"] == "True"

    await eventually(evaluated, timeout=20, what="the valid rule's condition")
    work = await get_work(hub_client, "ruled")
    assert manifest_condition(work, 0, condition) is None
    assert work_condition(work, "Fine") is not None
    assert work_condition(work, condition) is None
    assert_alive(agent)


@pytest.mark.parametrize(
    ("condition", "valid"),
    [
        ("Complete", True),
        ("example.com/Ready", True),
        ("a.b-c_d", True),
        ("x" * 316, True),
        ("x" * 317, False),
        ("Not Valid!", False),
        ("-dash", False),
        ("trailing-", False),
        ("Fine\n", False),
        ("Bad.Prefix/Ready", False),
        ("", False),
    ],
)
def test_condition_types(condition: str, valid: bool) -> None:
    assert is_condition_type(condition) is valid
