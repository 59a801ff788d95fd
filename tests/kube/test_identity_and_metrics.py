"""The User-Agent reaching the server (field managers) and the client's Prometheus metrics."""

from __future__ import annotations

import contextlib
from pathlib import Path
from urllib.parse import urlsplit

from kubesim.sim import KubeSim
from ocmkit.kube import (
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    KubeClient,
    NotFound,
    default_user_agent,
)
from tests.conftest import Raw
from tests.kube.helpers import NS, cm, sample


async def test_user_agent_names_the_field_manager(client: KubeClient, raw: Raw) -> None:
    await client.create(CONFIGMAPS, cm("ua", a="1"), NS)
    await client.patch(CONFIGMAPS, "ua", {"data": {"b": "2"}}, NS)
    got = await client.get(CONFIGMAPS, "ua", NS)
    got["data"]["c"] = "3"
    updated = await client.update(CONFIGMAPS, got)
    managers = {e["manager"] for e in updated["metadata"]["managedFields"]}
    assert managers == {"work-agent"}
    status, stats = await raw.request("GET", "/kubesim/stats")
    assert status == 200
    agents = {row["userAgent"] for row in stats["requests"]}
    assert agents == {"work-agent"}


async def test_default_user_agent(sim: KubeSim, tmp_path: Path) -> None:
    assert default_user_agent().startswith("workagent/")
    async with await KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"), qps=0) as client:
        made = await client.create(
            NAMESPACES,
            {"metadata": {"name": "x"}},
        )
    assert made["metadata"]["managedFields"][0]["manager"] == "workagent"


async def test_request_metrics_by_verb_and_code(client: KubeClient) -> None:
    labels = {"client": "test"}

    def count(verb: str, code: str) -> float:
        return sample("kube_client_requests_total", {**labels, "verb": verb, "code": code})

    before = {
        k: count(*k) for k in [("create", "201"), ("get", "200"), ("get", "404"), ("watch", "200")]
    }
    hist_before = sample("kube_client_request_duration_seconds_count", {**labels, "verb": "get"})
    await client.create(CONFIGMAPS, cm("m"), NS)
    await client.get(CONFIGMAPS, "m", NS)
    with contextlib.suppress(NotFound):
        await client.get(DEPLOYMENTS, "none", NS)
    async with client.watch(CONFIGMAPS, NS, resource_version="0"):
        pass
    assert count("create", "201") - before[("create", "201")] == 1
    assert count("get", "200") - before[("get", "200")] == 1
    assert count("get", "404") - before[("get", "404")] == 1
    assert count("watch", "200") - before[("watch", "200")] == 1
    hist_after = sample("kube_client_request_duration_seconds_count", {**labels, "verb": "get"})
    assert hist_after - hist_before == 2


async def test_derived_client_has_its_own_bucket_and_name_and_shares_the_pool(
    sim: KubeSim, tmp_path: Path
) -> None:
    root = await KubeClient.from_kubeconfig(
        str(tmp_path / "kubeconfig"), user_agent="work-agent", qps=0.5, burst=1, name="root"
    )
    derived = root.derive("derived")
    try:
        assert derived.rate_limiter is not root.rate_limiter
        assert (derived.rate_limiter.qps, derived.rate_limiter.burst) == (0.5, 1)
        assert derived.user_agent == root.user_agent
        before = sample(
            "kube_client_requests_total", {"client": "derived", "verb": "list", "code": "200"}
        )
        await root.list(NAMESPACES)  # spends the root's only token
        assert root.rate_limiter.tokens < 1
        assert derived.rate_limiter.tokens == 1  # untouched: a bucket of its own
        await derived.list(NAMESPACES)
        after = sample(
            "kube_client_requests_total", {"client": "derived", "verb": "list", "code": "200"}
        )
        assert after - before == 1
        await derived.close()  # a no-op: the pool belongs to the root
        root.rate_limiter = derived.rate_limiter = type(root.rate_limiter)(0, 1)
        await root.list(NAMESPACES)
    finally:
        await root.close()
    try:
        await derived.list(NAMESPACES)
    except RuntimeError as err:
        assert "closed" in str(err)
    else:
        raise AssertionError("a derived client works on after its root closed the pool")


async def test_client_go_request_metrics(client: KubeClient) -> None:
    """client-go's ``rest_client_*`` series, as OCM's programs expose them: by HTTP method
    and ``host:port``; a watch counts as a request, not in the latency histograms."""
    host = urlsplit(client.config.host).netloc
    assert host.startswith("127.0.0.1:")

    def count(code: str, method: str) -> float:
        return sample("rest_client_requests_total", {"code": code, "method": method, "host": host})

    def observed(family: str, verb: str, part: str = "count") -> float:
        return sample(f"{family}_{part}", {"verb": verb, "host": host})

    keys = [("201", "POST"), ("200", "GET"), ("404", "GET")]
    before = {k: count(*k) for k in keys}
    families = (
        "rest_client_request_duration_seconds",
        "rest_client_rate_limiter_duration_seconds",
        "rest_client_request_size_bytes",
        "rest_client_response_size_bytes",
    )
    gets_before = {family: observed(family, "GET") for family in families}
    posted_before = observed("rest_client_request_size_bytes", "POST", "sum")
    await client.create(CONFIGMAPS, cm("rest", a="1"), NS)
    await client.get(CONFIGMAPS, "rest", NS)
    with contextlib.suppress(NotFound):
        await client.get(DEPLOYMENTS, "none", NS)
    async with client.watch(CONFIGMAPS, NS, resource_version="0"):
        pass
    assert count("201", "POST") - before[("201", "POST")] == 1
    assert count("200", "GET") - before[("200", "GET")] == 2  # the get and the watch
    assert count("404", "GET") - before[("404", "GET")] == 1
    for family in families:  # the two gets; the watch is not measured
        assert observed(family, "GET") - gets_before[family] == 2, family
    assert observed("rest_client_request_size_bytes", "POST", "sum") - posted_before > 50
