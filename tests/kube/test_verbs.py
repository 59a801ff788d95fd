"""Every verb of KubeClient against kubesim, over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.sim import KubeSim
from ocmkit.kube import (
    CONFIGMAPS,
    DEPLOYMENTS,
    NAMESPACES,
    Conflict,
    Gone,
    KubeClient,
    NotFound,
)
from tests.kube.helpers import NS, cm


def _deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


async def test_create_get_update_delete(client: KubeClient) -> None:
    created = await client.create(CONFIGMAPS, cm("a", x="1"), NS)
    assert created["metadata"]["namespace"] == NS and created["data"] == {"x": "1"}
    got = await client.get(CONFIGMAPS, "a", NS)
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    got["data"]["x"] = "2"
    updated = await client.update(CONFIGMAPS, got)
    assert updated["data"] == {"x": "2"}
    # The namespace may come from the body alone.
    body = cm("b")
    body["metadata"]["namespace"] = NS
    assert (await client.create(CONFIGMAPS, body))["metadata"]["namespace"] == NS
    assert await client.delete(CONFIGMAPS, "a", NS) is None
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "a", NS)


async def test_create_generate_name_and_dry_run(client: KubeClient) -> None:
    made = await client.create(CONFIGMAPS, {"metadata": {"generateName": "gen-"}}, NS)
    assert made["metadata"]["name"].startswith("gen-")
    await client.create(CONFIGMAPS, cm("dry"), NS, dry_run=True)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "dry", NS)


async def test_namespace_is_required_for_namespaced_and_ignored_for_cluster_scoped(
    client: KubeClient,
) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        await client.get(CONFIGMAPS, "a")
    ns = await client.get(NAMESPACES, NS, "ignored")
    assert ns["metadata"]["name"] == NS


async def test_status_subresource_get_update_patch(client: KubeClient) -> None:
    dep = await client.create(DEPLOYMENTS, _deployment("web"), NS)
    assert dep["kind"] == "Deployment" and dep["metadata"]["generation"] == 1
    dep["status"] = {"replicas": 1, "observedGeneration": 1}
    written = await client.update(DEPLOYMENTS, dep, NS, subresource="status")
    assert written["status"]["replicas"] == 1
    patched = await client.patch(
        DEPLOYMENTS,
        "web",
        {"status": {"readyReplicas": 1}, "spec": {"replicas": 5}},
        NS,
        subresource="status",
    )
    # A status write ignores spec changes and does not bump the generation.
    assert patched["status"]["readyReplicas"] == 1
    assert patched["spec"]["replicas"] == 1 and patched["metadata"]["generation"] == 1
    status = await client.get(DEPLOYMENTS, "web", NS, subresource="status")
    assert status["status"]["readyReplicas"] == 1
    scale = await client.get(DEPLOYMENTS, "web", NS, subresource="scale")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1


async def test_patch_types(client: KubeClient) -> None:
    await client.create(CONFIGMAPS, cm("p", a="1", b="2"), NS)
    merged = await client.patch(CONFIGMAPS, "p", {"data": {"a": None, "c": "3"}}, NS)
    assert merged["data"] == {"b": "2", "c": "3"}
    jsonp = await client.patch(
        CONFIGMAPS, "p", [{"op": "replace", "path": "/data/b", "value": "9"}], NS, patch_type="json"
    )
    assert jsonp["data"] == {"b": "9", "c": "3"}
    strategic = await client.patch(
        CONFIGMAPS, "p", {"metadata": {"labels": {"l": "v"}}}, NS, patch_type="strategic"
    )
    assert strategic["metadata"]["labels"] == {"l": "v"}
    dry = await client.patch(CONFIGMAPS, "p", {"data": {"d": "4"}}, NS, dry_run=True)
    assert dry["data"]["d"] == "4"
    assert "d" not in (await client.get(CONFIGMAPS, "p", NS))["data"]
    with pytest.raises(ValueError, match="patch type"):
        await client.patch(CONFIGMAPS, "p", {}, NS, patch_type="bogus")  # type: ignore[arg-type]


async def test_server_side_apply_conflict_and_force(client: KubeClient) -> None:
    applied = await client.patch(
        CONFIGMAPS, "ssa", cm("ssa", k="one"), NS, patch_type="apply", field_manager="first"
    )
    assert applied["data"] == {"k": "one"}
    managers = {e["manager"] for e in applied["metadata"]["managedFields"]}
    assert managers == {"first"}
    with pytest.raises(Conflict) as exc:
        await client.patch(
            CONFIGMAPS, "ssa", cm("ssa", k="two"), NS, patch_type="apply", field_manager="second"
        )
    assert exc.value.code == 409 and "first" in exc.value.message
    assert exc.value.status is not None and exc.value.status["details"]["causes"]
    forced = await client.patch(
        CONFIGMAPS,
        "ssa",
        cm("ssa", k="two"),
        NS,
        patch_type="apply",
        field_manager="second",
        force=True,
    )
    assert forced["data"] == {"k": "two"}
    assert {e["manager"] for e in forced["metadata"]["managedFields"]} == {"second"}


async def test_delete_options(client: KubeClient) -> None:
    body = cm("fin")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    made = await client.create(CONFIGMAPS, body, NS)
    with pytest.raises(Conflict):
        await client.delete(CONFIGMAPS, "fin", NS, preconditions={"uid": "not-the-uid"})
    # With a finalizer the object survives and comes back with a deletionTimestamp.
    pending = await client.delete(
        CONFIGMAPS,
        "fin",
        NS,
        propagation_policy="Foreground",
        preconditions={"uid": made["metadata"]["uid"]},
        grace_period_seconds=0,
    )
    assert pending is not None and pending["metadata"]["deletionTimestamp"]
    await client.patch(CONFIGMAPS, "fin", {"metadata": {"finalizers": None}}, NS)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "fin", NS)


async def test_list_pages_selectors_and_filled_kinds(client: KubeClient, sim: KubeSim) -> None:
    for i in range(7):
        body = cm(f"c{i}")
        body["metadata"]["labels"] = {"parity": "even" if i % 2 == 0 else "odd"}
        await client.create(CONFIGMAPS, body, NS)
    await client.create(NAMESPACES, {"metadata": {"name": "other"}})
    await client.create(CONFIGMAPS, cm("elsewhere"), "other")
    sim.state.stats.reset()
    listed = await client.list(CONFIGMAPS, NS, page_size=3)
    assert [i["metadata"]["name"] for i in listed["items"]] == [f"c{i}" for i in range(7)]
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"
    assert int(listed["metadata"]["resourceVersion"]) > 0
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in listed["items"])
    pages = sim.state.stats.to_json()["byVerb"]["list"]
    assert pages == 3
    even = await client.list(CONFIGMAPS, NS, label_selector="parity=even")
    assert len(even["items"]) == 4
    named = await client.list(CONFIGMAPS, NS, field_selector="metadata.name=c3")
    assert [i["metadata"]["name"] for i in named["items"]] == ["c3"]
    everywhere = await client.list(CONFIGMAPS)
    assert len(everywhere["items"]) == 8


async def test_list_restarts_once_when_continue_expires(
    client: KubeClient, sim: KubeSim, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        await client.create(CONFIGMAPS, cm(f"c{i}"), NS)
    real_call = client._call
    calls: list[dict[str, str]] = []
    made: list[int] = []
    expire_after: set[int] = {1}  # expire the continue token after the 1st page only

    async def call(verb: str, method: str, path: str, **kw: Any) -> Any:
        if verb == "list":
            calls.append(dict(kw.get("params") or []))
        answer = await real_call(verb, method, path, **kw)
        if verb == "list" and len(calls) in expire_after:
            # Something changes and the history is compacted: the token is now too old.
            made.append(len(made))
            await real_call(
                "create", "POST", f"/api/v1/namespaces/{NS}/configmaps", body=cm(f"x{len(made)}")
            )
            sim.store.compact()
        return answer

    monkeypatch.setattr(client, "_call", call)
    listed = await client.list(CONFIGMAPS, NS, page_size=2)
    # page 1, page 2 (410), then a full restart: 3 pages of the 6 objects now present.
    assert ["continue" in c for c in calls] == [False, True, False, True, True]
    assert len(listed["items"]) == 6

    calls.clear()
    expire_after.clear()
    expire_after.update(range(1, 10))
    with pytest.raises(Gone):
        await client.list(CONFIGMAPS, NS, page_size=2)
    assert ["continue" in c for c in calls] == [False, True, False, True]
    assert len([c for c in calls if "continue" not in c]) == 2  # restarted exactly once


async def test_list_passes_resource_version_only_on_the_first_page(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        await client.create(CONFIGMAPS, cm(f"c{i}"), NS)
    real_call = client._call
    params: list[list[tuple[str, str]]] = []

    async def call(verb: str, method: str, path: str, **kw: Any) -> Any:
        params.append(list(kw.get("params") or []))
        return await real_call(verb, method, path, **kw)

    monkeypatch.setattr(client, "_call", call)
    await client.list(CONFIGMAPS, NS, page_size=2, resource_version="0")
    assert ("resourceVersion", "0") in params[0]
    assert all(k != "resourceVersion" for k, _ in params[1])
    # Parameters are built fresh: a second list starts clean.
    params.clear()
    await client.list(CONFIGMAPS, NS, page_size=2)
    assert [k for k, _ in params[0]] == ["limit"]
