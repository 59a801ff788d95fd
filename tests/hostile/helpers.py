"""Checks shared by the hostile-input tests: clear rejections, clear conditions, a live agent."""

from __future__ import annotations

from typing import Any

from ocmkit.kube import MANIFESTWORKS, KubeClient, KubeError
from tests.integration.conftest import (
    get_work,
    manifest_statuses,
    work_body,
    work_condition,
)
from tests.support.programs import AgentRunner

#: Words that mean a bug of ours leaked into a user-facing message.
LEAKED_BUG_WORDS = ("Traceback", "internal error", "AttributeError", "KeyError", "TypeError")


def hostile_work(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A ManifestWork ``name`` in ``cluster1`` with exactly ``spec``."""
    body = work_body(name, [])
    body["spec"] = spec
    return body


async def create_or_refusal(client: KubeClient, body: dict[str, Any]) -> KubeError | None:
    """Create ``body`` on the hub; None if created, else the refusal, checked to be clean."""
    try:
        await client.create(MANIFESTWORKS, body)
    except KubeError as err:
        assert 400 <= err.code < 500, f"the hub answered {err.code}: {err}"
        assert err.message.strip(), f"a refusal without a message: {err!r}"
        return err
    return None


def unclear_conditions(work: dict[str, Any]) -> list[str]:
    """What is unclear about a work's conditions (empty when all is clear).

    Every work-level condition says something; a manifest condition that is
    not True says why. No message betrays an exception of ours.
    """
    problems: list[str] = []
    checked: list[tuple[str, dict[str, Any]]] = [
        ("work", c) for c in (work.get("status") or {}).get("conditions") or []
    ]
    for entry in manifest_statuses(work):
        ordinal = entry["resourceMeta"].get("ordinal")
        for cond in entry.get("conditions") or []:
            checked.append((f"manifest {ordinal}", cond))
    for where, cond in checked:
        message = str(cond.get("message") or "")
        if not cond.get("reason"):
            problems.append(f"{where}: {cond.get('type')} has no reason")
        if (where == "work" or cond.get("status") != "True") and not message.strip():
            problems.append(f"{where}: {cond.get('type')}={cond.get('status')} has no message")
        leaked = [w for w in LEAKED_BUG_WORDS if w in message]
        if leaked:
            problems.append(f"{where}: {cond.get('type')} message shows a bug: {message[:300]}")
    return problems


async def settled(client: KubeClient, name: str) -> tuple[bool, str]:
    """Whether work ``name`` has an ``Applied`` condition for its generation, every
    manifest has a status entry, and all conditions are clear; else what is missing."""
    work = await get_work(client, name)
    applied = work_condition(work, "Applied")
    if applied is None:
        return False, "no Applied condition"
    if applied.get("observedGeneration") != work["metadata"].get("generation"):
        return False, "Applied is of an older generation"
    manifests = (work.get("spec") or {}).get("workload", {}).get("manifests") or []
    if len(manifest_statuses(work)) != len(manifests):
        return False, f"{len(manifest_statuses(work))} of {len(manifests)} manifest statuses"
    problems = unclear_conditions(work)
    return not problems, "; ".join(problems)


def assert_alive(runner: AgentRunner) -> None:
    """The in-process agent has not exited and all its controllers still run."""
    task = runner._task
    assert task is not None and not task.done(), "the agent exited"
    assert runner.agent is not None
    assert all(c.started for c in runner.agent.manager.controllers)
