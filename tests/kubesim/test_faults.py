"""Fault injection through kubesim's admin API, observed by real clients."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.sim import KubeSim
from tests.conftest import Raw, eventually


async def _fault(raw: Raw, **body: Any) -> tuple[int, Any]:
    return await raw.request("POST", "/kubesim/faults", body)


async def _setup(raw: Raw) -> None:
    status, _ = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    assert status == 201


CMS = "/api/v1/namespaces/demo/configmaps"


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (429, "TooManyRequests"),
        (500, "InternalError"),
        (503, "ServiceUnavailable"),
        (409, "Conflict"),
    ],
)
async def test_fail_next_n_requests(raw: Raw, code: int, reason: str) -> None:
    await _setup(raw)
    status, rule = await _fault(
        raw, verb="create", resource="configmaps", code=code, count=2, retryAfter=3
    )
    assert status == 201 and rule["code"] == code
    for i in range(2):
        status, body = await raw.request("POST", CMS, {"metadata": {"name": f"c{i}"}})
        assert (status, body["reason"]) == (code, reason)
    status, _ = await raw.request("POST", CMS, {"metadata": {"name": "ok"}})
    assert status == 201
    status, _ = await raw.request("GET", CMS)
    assert status == 200


async def test_429_carries_retry_after(sim: KubeSim, raw: Raw) -> None:
    await _setup(raw)
    await _fault(raw, verb="get", resource="configmaps", code=429, count=1, retryAfter=7)
    async with (
        aiohttp.ClientSession() as s,
        s.get(sim.url + CMS + "/x", headers={"Authorization": f"Bearer {sim.admin_token}"}) as r,
    ):
        assert r.status == 429 and r.headers["Retry-After"] == "7"
        assert json.loads(await r.text())["details"]["retryAfterSeconds"] == 7


async def test_fraction_of_requests_fail(sim: KubeSim, raw: Raw) -> None:
    await _setup(raw)
    sim.state.faults.rng.seed(1)
    await _fault(raw, verb="list", resource="configmaps", code=500, fraction=0.5)
    codes = [(await raw.request("GET", CMS))[0] for _ in range(40)]
    assert 5 < codes.count(500) < 35 and codes.count(200) == 40 - codes.count(500)
    status, _ = await raw.request("DELETE", "/kubesim/faults")
    assert status == 200
    for _ in range(5):
        assert (await raw.request("GET", CMS))[0] == 200


async def test_latency_is_added(raw: Raw) -> None:
    await _setup(raw)
    await _fault(raw, verb="list", resource="configmaps", latency=0.3, count=1)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    status, _ = await raw.request("GET", CMS)
    assert status == 200 and loop.time() - t0 >= 0.3


async def test_close_and_expire_watches(api_client: client.ApiClient, raw: Raw) -> None:
    await _setup(raw)
    core = client.CoreV1Api(api_client)
    for action, expect_410 in (("close-watches", False), ("expire-watches", True)):
        rv = (await core.list_namespaced_config_map("demo")).metadata.resource_version
        w = watch.Watch()
        events: list[str] = []
        error: list[int] = []

        async def consume(
            rv: str = rv, w: watch.Watch = w, events: list[str] = events, error: list[int] = error
        ) -> None:
            try:
                async with w.stream(
                    core.list_namespaced_config_map,
                    "demo",
                    resource_version=rv,
                    timeout_seconds=30,
                    _request_timeout=60,
                ) as stream:
                    async for ev in stream:
                        events.append(ev["type"])
            except ApiException as exc:
                error.append(exc.status)

        task = asyncio.create_task(consume())

        async def watching() -> bool:
            return bool((await raw.request("GET", "/kubesim/watches"))[1]["open"] >= 1)

        await eventually(watching, what="the watch to open")
        status, body = await _fault(raw, action=action)
        assert status == 201 and next(iter(body.values())) >= 1
        await asyncio.wait_for(task, 10)
        if expect_410:
            assert error == [410]
        else:
            # The client library reconnects once after a clean close; either way it ends.
            assert error in ([], [410])


async def test_refuse_connections_for_a_period(sim: KubeSim, raw: Raw) -> None:
    await _setup(raw)
    status, _ = await _fault(raw, action="refuse-connections", seconds=0.5)
    assert status == 201
    async with aiohttp.ClientSession() as s:
        with pytest.raises(aiohttp.ClientError):
            async with s.get(
                sim.url + CMS, headers={"Authorization": f"Bearer {sim.admin_token}"}
            ) as r:
                await r.read()

    async def back() -> bool:
        try:
            async with (
                aiohttp.ClientSession() as s2,
                s2.get(sim.url + CMS, headers={"Authorization": f"Bearer {sim.admin_token}"}) as r,
            ):
                return r.status == 200
        except aiohttp.ClientError:
            return False

    await eventually(back, what="kubesim to accept connections again")


async def test_bad_fault_requests_are_rejected(raw: Raw) -> None:
    for body in (
        {"code": 418},
        {"verb": "get"},
        {"code": 500, "fraction": 2},
        {"action": "explode"},
        {"code": 500, "colour": "red"},
    ):
        status, answer = await raw.request("POST", "/kubesim/faults", body)
        assert status == 400, body
        assert answer["reason"] == "BadRequest"
    status, _ = await raw.request("POST", "/kubesim/faults", raw=b"nope")
    assert status == 400


async def test_stats_count_requests_and_reset(raw: Raw) -> None:
    await raw.request("DELETE", "/kubesim/stats")
    await _setup(raw)
    await raw.request("GET", CMS + "/missing")
    await raw.request("GET", CMS)
    status, stats = await raw.request("GET", "/kubesim/stats")
    assert status == 200
    rows = {(r["verb"], r["resource"], r["code"]): r["count"] for r in stats["requests"]}
    assert rows[("create", "namespaces", 201)] == 1
    assert rows[("get", "configmaps", 404)] == 1
    assert rows[("list", "configmaps", 200)] == 1
    assert stats["total"] == 3
    await raw.request("DELETE", "/kubesim/stats")
    assert (await raw.request("GET", "/kubesim/stats"))[1]["total"] == 0


async def test_journal_names_the_user_of_each_request(sim: KubeSim, raw: Raw) -> None:
    """Two clients with one User-Agent are told apart by their tokens; a revoked
    token is answered 401 and journaled without a user."""
    await raw.request("DELETE", "/kubesim/requests")
    await _setup(raw)
    alice = sim.add_user("alice", groups=("system:masters",))
    bob = sim.add_user("bob", groups=("system:masters",))

    async def create(token: str, name: str) -> int:
        headers = {"Authorization": f"Bearer {token}", "User-Agent": "same-agent/1.0"}
        async with (
            aiohttp.ClientSession() as s,
            s.post(sim.url + CMS, json={"metadata": {"name": name}}, headers=headers) as r,
        ):
            return r.status

    assert await create(alice, "from-alice") == 201
    assert await create(bob, "from-bob") == 201
    sim.revoke(bob)
    assert await create(bob, "after-revoke") == 401

    rows = sim.journal().select(verbs=("create",))
    assert [(e.resource, e.user, e.code) for e in rows] == [
        ("namespaces", "kubesim-admin", 201),
        ("configmaps", "alice", 201),
        ("configmaps", "bob", 201),
        ("configmaps", "", 401),
    ]
    assert all(a.at <= b.at for a, b in itertools.pairwise(rows))
    assert rows[1].user_agent == "same-agent/1.0"
    status, answer = await raw.request("GET", "/kubesim/requests?user=alice")
    assert status == 200
    assert [(r["verb"], r["resource"], r["code"]) for r in answer["requests"]] == [
        ("create", "configmaps", 201)
    ]
    await raw.request("DELETE", "/kubesim/requests")
    assert (await raw.request("GET", "/kubesim/requests"))[1]["requests"] == []
