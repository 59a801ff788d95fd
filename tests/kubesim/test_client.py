"""kubesim through the real kubernetes_asyncio client."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.sim import KubeSim
from tests.conftest import Raw, eventually
from tests.support.crds import ANY_CONTENT, crd, object_schema
from tests.support.manifests import deployment


async def _ns(api: client.ApiClient, name: str = "demo") -> None:
    await client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})


@contextlib.asynccontextmanager
async def _api_of(sim: KubeSim, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio client of ``sim``, configured from the kubeconfig it writes."""
    sim.write_kubeconfig(tmp_path / "kc")
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(tmp_path / "kc"), client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        yield api


def _cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **meta},
        "data": data or {},
    }


async def test_create_get_list_and_errors(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    created = await core.create_namespaced_config_map("demo", _cm("c1", {"a": "1"}))
    assert created.metadata.uid and int(created.metadata.resource_version) > 0
    got = await core.read_namespaced_config_map("c1", "demo")
    assert got.data == {"a": "1"}
    assert got.metadata.managed_fields[0].manager == "OpenAPI-Generator"
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_config_map("demo", _cm("c1"))
    assert exc.value.status == 409 and '"AlreadyExists"' in str(exc.value.body)
    with pytest.raises(ApiException) as exc:
        await core.read_namespaced_config_map("missing", "demo")
    assert exc.value.status == 404
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_config_map("nosuchns", _cm("x"))
    assert exc.value.status == 404 and 'namespaces \\"nosuchns\\" not found' in str(exc.value.body)


async def test_label_and_field_selectors_and_pagination(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    for i in range(5):
        labels = {"page": "yes", "n": str(i)} if i < 4 else {"page": "no"}
        await core.create_namespaced_config_map("demo", _cm(f"p{i}", labels=labels))
    cases = {
        "page=yes": 4,
        "page==yes": 4,
        "page!=yes": 1,
        "n in (1,2)": 2,
        "n notin (1,2)": 3,
        "n": 4,
        "!n": 1,
        "page=yes,n=3": 1,
    }
    for selector, count in cases.items():
        listed = await core.list_namespaced_config_map("demo", label_selector=selector)
        assert len(listed.items) == count, selector
    by_name = await core.list_namespaced_config_map("demo", field_selector="metadata.name=p2")
    assert [i.metadata.name for i in by_name.items] == ["p2"]
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = await core.list_namespaced_config_map("demo", limit=2, _continue=token)
        pages += 1
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert pages == 3 and names == [f"p{i}" for i in range(5)]
    every = await core.list_config_map_for_all_namespaces()
    assert len(every.items) == 5


async def test_watch_replays_history_and_streams(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    start = (await core.list_namespaced_config_map("demo")).metadata.resource_version
    await core.create_namespaced_config_map("demo", _cm("w1"))
    await core.patch_namespaced_config_map("w1", "demo", {"data": {"a": "1"}})
    await core.delete_namespaced_config_map("w1", "demo")
    seen = []
    w = watch.Watch()
    async with w.stream(
        core.list_namespaced_config_map, "demo", resource_version=start, timeout_seconds=1
    ) as stream:
        async for ev in stream:
            seen.append((ev["type"], ev["object"].metadata.name))
            if len(seen) == 3:
                w.stop()
    assert seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


async def test_watch_from_expired_version_gets_410(tmp_path: Any) -> None:
    async with KubeSim(watch_history=3) as sim, _api_of(sim, tmp_path) as api:
        core = client.CoreV1Api(api)
        await _ns(api)
        first = await core.create_namespaced_config_map("demo", _cm("a"))
        for i in range(5):
            await core.patch_namespaced_config_map("a", "demo", {"data": {"i": str(i)}})
        w = watch.Watch()
        with pytest.raises(ApiException) as exc:
            async with w.stream(
                core.list_namespaced_config_map,
                "demo",
                resource_version=first.metadata.resource_version,
                timeout_seconds=1,
            ) as stream:
                async for _ in stream:
                    pass
        assert exc.value.status == 410


async def test_finalizers_hold_deletion(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    await core.create_namespaced_config_map("demo", _cm("fin", finalizers=["example.com/hold"]))
    await core.delete_namespaced_config_map("fin", "demo")
    held = await core.read_namespaced_config_map("fin", "demo")
    assert held.metadata.deletion_timestamp is not None
    await core.patch_namespaced_config_map("fin", "demo", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as exc:
        await core.read_namespaced_config_map("fin", "demo")
    assert exc.value.status == 404


async def test_namespace_deletion_removes_contents(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    await core.create_namespaced_config_map("demo", _cm("a"))
    await core.create_namespaced_secret("demo", {"metadata": {"name": "s"}, "data": {}})
    await core.delete_namespace("demo")
    # The namespace controller takes a moment after the contents are gone.
    assert (await core.read_namespace("demo")).status.phase == "Terminating"

    async def gone() -> bool:
        try:
            await core.read_namespace("demo")
        except ApiException as exc:
            return exc.status == 404
        return False

    await eventually(gone, what="namespace demo to be deleted")
    assert (await core.list_config_map_for_all_namespaces()).items == []


def _owned(name: str, owner: Any, block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return _cm(name, ownerReferences=[ref])


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
async def test_owner_reference_garbage_collection(
    api_client: client.ApiClient, policy: str
) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    owner = await core.create_namespaced_config_map("demo", _cm("owner"))
    await core.create_namespaced_config_map("demo", _owned("dep", owner, block=True))
    await core.delete_namespaced_config_map(
        "owner", "demo", body=client.V1DeleteOptions(propagation_policy=policy)
    )

    async def settled() -> bool:
        names = {c.metadata.name for c in (await core.list_namespaced_config_map("demo")).items}
        return names == ({"dep"} if policy == "Orphan" else set())

    await eventually(settled, what=f"{policy} deletion to settle")
    if policy == "Orphan":
        dep = await core.read_namespaced_config_map("dep", "demo")
        assert not dep.metadata.owner_references


async def test_dangling_owner_reference_is_collected(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    ghost = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="ghost", uid="00000000-0000-0000-0000-000000000001")
    )
    await core.create_namespaced_config_map("demo", _owned("orphaned", ghost))

    async def gone() -> bool:
        return not (await core.list_namespaced_config_map("demo")).items

    await eventually(gone, what="the dependent of a missing owner to be deleted")


WIDGET_CRD = crd(
    "example.com",
    "Widget",
    list_kind=True,
    schema=object_schema(
        spec=object_schema(size={"type": "integer", "minimum": 0}), status=ANY_CONTENT
    ),
    status_subresource=True,
)


async def test_crd_registration_custom_objects_status_and_generation(
    api_client: client.ApiClient,
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    await _ns(api_client)
    await ext.create_custom_resource_definition(WIDGET_CRD)
    crd = await ext.read_custom_resource_definition("widgets.example.com")
    conds = {c.type: c.status for c in crd.status.conditions}
    assert conds == {"NamesAccepted": "True", "Established": "True"}
    groups = await client.ApisApi(api_client).get_api_versions()
    assert "example.com" in [g.name for g in groups.groups]
    w = await custom.create_namespaced_custom_object(
        "example.com",
        "v1",
        "demo",
        "widgets",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1, "unknown": True},
            "status": {"ignored": True},
        },
    )
    assert w["spec"] == {"size": 1} and "status" not in w and w["metadata"]["generation"] == 1
    w = await custom.patch_namespaced_custom_object(
        "example.com",
        "v1",
        "demo",
        "widgets",
        "w",
        {"spec": {"size": 2}, "status": {"x": 1}},
        _content_type="application/merge-patch+json",
    )
    assert w["metadata"]["generation"] == 2 and "status" not in w
    w = await custom.patch_namespaced_custom_object_status(
        "example.com",
        "v1",
        "demo",
        "widgets",
        "w",
        {"spec": {"size": 3}, "status": {"x": 1}},
        _content_type="application/merge-patch+json",
    )
    assert w["spec"] == {"size": 2} and w["status"] == {"x": 1} and w["metadata"]["generation"] == 2
    with pytest.raises(ApiException) as exc:
        await custom.patch_namespaced_custom_object(
            "example.com",
            "v1",
            "demo",
            "widgets",
            "w",
            {"spec": {"size": -1}},
            _content_type="application/merge-patch+json",
        )
    assert exc.value.status == 422
    await ext.delete_custom_resource_definition("widgets.example.com")

    async def unserved() -> bool:
        try:
            await custom.list_namespaced_custom_object("example.com", "v1", "demo", "widgets")
        except ApiException as exc:
            return exc.status == 404
        return False

    await eventually(unserved, what="the widgets resource to disappear")


async def test_no_custom_object_is_created_while_its_crd_is_terminating(
    api_client: client.ApiClient,
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    await _ns(api_client)
    held = {**WIDGET_CRD, "metadata": {"name": "widgets.example.com", "finalizers": ["test/hold"]}}
    await ext.create_custom_resource_definition(held)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    await custom.create_namespaced_custom_object("example.com", "v1", "demo", "widgets", widget)
    await ext.delete_custom_resource_definition("widgets.example.com")

    async def emptied() -> bool:
        listed = await custom.list_namespaced_custom_object("example.com", "v1", "demo", "widgets")
        return not listed["items"]

    await eventually(emptied, what="the terminating CRD's objects to be deleted")
    # Still served (a finalizer holds the CRD), but creates are refused, as the
    # apiextensions handler does.
    with pytest.raises(ApiException) as exc:
        await custom.create_namespaced_custom_object("example.com", "v1", "demo", "widgets", widget)
    body = json.loads(exc.value.body or b"")
    assert exc.value.status == 405 and body["reason"] == "MethodNotAllowed"
    assert body["message"] == "create not allowed while custom resource definition is terminating"
    assert body["details"] == {"group": "example.com", "kind": "widgets"}
    await ext.patch_custom_resource_definition(
        "widgets.example.com",
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )


async def test_deployment_generation_and_status_subresource(api_client: client.ApiClient) -> None:
    apps = client.AppsV1Api(api_client)
    await _ns(api_client)
    body = deployment("web", "demo", container="c", image="nginx:1")
    d = await apps.create_namespaced_deployment("demo", body)
    assert d.metadata.generation == 1 and d.spec.strategy.type == "RollingUpdate"
    d = await apps.patch_namespaced_deployment("web", "demo", {"metadata": {"labels": {"x": "y"}}})
    assert d.metadata.generation == 1
    d = await apps.patch_namespaced_deployment("web", "demo", {"spec": {"replicas": 3}})
    assert d.metadata.generation == 2
    d = await apps.patch_namespaced_deployment_status(
        "web", "demo", {"status": {"replicas": 3, "readyReplicas": 3}, "spec": {"replicas": 9}}
    )
    assert d.status.ready_replicas == 3 and d.spec.replicas == 3 and d.metadata.generation == 2
    d = await apps.patch_namespaced_deployment("web", "demo", {"status": {"replicas": 0}})
    assert d.status.replicas == 3


async def test_server_side_apply_conflict_force_and_removal(raw: Raw) -> None:
    await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    path = "/api/v1/namespaces/demo/configmaps/ssa"
    apply = "application/apply-patch+yaml"
    status, _ = await raw.request(
        "PATCH", path + "?fieldManager=a", _cm("ssa", {"k": "A", "onlyA": "1"}), content_type=apply
    )
    assert status == 201
    status, body = await raw.request(
        "PATCH", path + "?fieldManager=b", _cm("ssa", {"k": "B"}), content_type=apply
    )
    assert (
        status == 409
        and body["message"] == 'Apply failed with 1 conflict: conflict with "a": .data.k'
    )
    status, body = await raw.request(
        "PATCH", path + "?fieldManager=b&force=true", _cm("ssa", {"k": "B"}), content_type=apply
    )
    assert status == 200 and body["data"] == {"k": "B", "onlyA": "1"}
    status, body = await raw.request(
        "PATCH", path + "?fieldManager=a", _cm("ssa", {}), content_type=apply
    )
    assert status == 200 and body["data"] == {"k": "B"}
    status, body = await raw.request("PATCH", path, _cm("ssa", {"k": "B"}), content_type=apply)
    assert status == 422 and "fieldManager: Required value" in body["message"]


async def test_bad_input_gets_apiserver_statuses(raw: Raw) -> None:
    await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    cms = "/api/v1/namespaces/demo/configmaps"
    status, body = await raw.request("POST", cms, raw=b"{not json")
    assert (status, body["reason"]) == (400, "BadRequest")
    status, body = await raw.request("POST", cms, _cm("Bad_Name"))
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    status, body = await raw.request("GET", "/apis/nope.example.com/v1/things")
    assert status == 404
    status, body = await raw.request("POST", cms, _cm("big", {"x": "y" * (3 * 1024 * 1024 + 10)}))
    assert (status, body["reason"]) == (413, "RequestEntityTooLarge")
    status, created = await raw.request("POST", cms, _cm("c"))
    assert status == 201
    stale = dict(created)
    stale["metadata"] = dict(created["metadata"], resourceVersion="1")
    status, body = await raw.request("PUT", cms + "/c", stale)
    assert (status, body["reason"]) == (409, "Conflict")
    status, body = await raw.request(
        "GET",
        cms + "?labelSelector=a%20in%20(",
    )
    assert (status, body["reason"]) == (400, "BadRequest")
    status, body = await raw.request(
        "PATCH", cms + "/c", raw=b"[{]", content_type="application/json-patch+json"
    )
    assert status == 400
    # The server keeps serving after all of that.
    status, _ = await raw.request("GET", cms + "/c")
    assert status == 200


async def test_unauthenticated_requests_are_refused(sim: KubeSim, raw: Raw) -> None:
    status, body = await raw.request(
        "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer nope"}
    )
    assert (status, body["reason"]) == (401, "Unauthorized")


async def test_rbac_enforcement_and_subject_access_review(tmp_path: Any) -> None:
    sim = KubeSim(enforce_rbac=True)
    await sim.start()
    try:
        import aiohttp

        token = sim.add_user("alice")
        async with aiohttp.ClientSession() as session:
            admin = Raw(session, sim.url, sim.admin_token)
            alice = Raw(session, sim.url, token)
            await admin.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
            status, body = await alice.request("GET", "/api/v1/namespaces/demo/configmaps")
            assert status == 403
            assert body["message"] == (
                'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API '
                'group "" in the namespace "demo"'
            )
            await admin.request(
                "POST",
                "/apis/rbac.authorization.k8s.io/v1/namespaces/demo/roles",
                {
                    "metadata": {"name": "cm-reader"},
                    "rules": [
                        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}
                    ],
                },
            )
            await admin.request(
                "POST",
                "/apis/rbac.authorization.k8s.io/v1/namespaces/demo/rolebindings",
                {
                    "metadata": {"name": "alice-reads"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Role",
                        "name": "cm-reader",
                    },
                    "subjects": [
                        {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}
                    ],
                },
            )
            status, _ = await alice.request("GET", "/api/v1/namespaces/demo/configmaps")
            assert status == 200
            status, _ = await alice.request("POST", "/api/v1/namespaces/demo/configmaps", _cm("x"))
            assert status == 403
            sar = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": "alice",
                    "resourceAttributes": {
                        "namespace": "demo",
                        "verb": "list",
                        "resource": "configmaps",
                    },
                },
            }
            status, body = await admin.request(
                "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar
            )
            assert status == 201 and body["status"]["allowed"] is True
            sar["spec"]["resourceAttributes"]["verb"] = "delete"  # type: ignore[index]
            status, body = await admin.request(
                "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", sar
            )
            assert body["status"]["allowed"] is False
    finally:
        await sim.stop()


async def test_restart_keeps_state_on_the_same_port(
    sim: KubeSim, api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    await _ns(api_client)
    await core.create_namespaced_config_map("demo", _cm("kept"))
    port = sim.port
    await sim.restart()
    assert sim.port == port
    assert (await core.read_namespaced_config_map("kept", "demo")).metadata.name == "kept"


async def test_tls_serving_with_kubeconfig_ca(tmp_path: Any) -> None:
    async with KubeSim(tls=True) as sim, _api_of(sim, tmp_path) as api:
        ns = await client.CoreV1Api(api).create_namespace({"metadata": {"name": "tls"}})
        assert ns.metadata.labels == {"kubernetes.io/metadata.name": "tls"}
    assert sim.url.startswith("https://")
    await asyncio.sleep(0)


async def test_watch_selector_transitions_bookmarks_and_timeout(raw: Raw, sim: KubeSim) -> None:
    import aiohttp

    await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    cms = "/api/v1/namespaces/demo/configmaps"
    _, listed = await raw.request("GET", cms)
    rv = listed["metadata"]["resourceVersion"]
    await raw.request("POST", cms, _cm("a", labels={"team": "x"}))
    await raw.request(
        "PATCH",
        cms + "/a",
        {"metadata": {"labels": {"team": "y"}}},
        content_type="application/merge-patch+json",
    )
    await raw.request(
        "PATCH",
        cms + "/a",
        {"metadata": {"labels": {"team": "x"}}},
        content_type="application/merge-patch+json",
    )
    # The last bookmark comes 2 s before the timeout (as kube-apiserver sends it).
    url = f"{sim.url}{cms}?watch=1&resourceVersion={rv}&labelSelector=team%3Dx&allowWatchBookmarks=true&timeoutSeconds=3"
    async with (
        aiohttp.ClientSession() as s,
        s.get(url, headers={"Authorization": f"Bearer {sim.admin_token}"}) as r,
    ):
        assert r.status == 200
        lines = [json.loads(line) async for line in r.content if line.strip()]
    kinds = [(e["type"], e["object"]["metadata"].get("labels", {}).get("team")) for e in lines]
    assert kinds[:3] == [("ADDED", "x"), ("DELETED", "y"), ("ADDED", "x")]
    assert kinds[-1][0] == "BOOKMARK"
    assert lines[-1]["object"]["metadata"]["resourceVersion"] == str(sim.store.rv)


async def test_deletecollection_generate_name_and_dry_run(raw: Raw) -> None:
    await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    cms = "/api/v1/namespaces/demo/configmaps"
    status, body = await raw.request("POST", cms, {"metadata": {"generateName": "gen-"}})
    assert (
        status == 201
        and body["metadata"]["name"].startswith("gen-")
        and len(body["metadata"]["name"]) == 9
    )
    status, body = await raw.request("POST", cms + "?dryRun=All", _cm("dry"))
    assert status == 201 and body["metadata"]["uid"]
    assert (await raw.request("GET", cms + "/dry"))[0] == 404
    for name in ("k1", "k2"):
        await raw.request("POST", cms, _cm(name, labels={"kill": "yes"}))
    status, body = await raw.request("DELETE", cms + "?labelSelector=kill%3Dyes")
    assert status == 200 and sorted(i["metadata"]["name"] for i in body["items"]) == ["k1", "k2"]
    status, body = await raw.request("GET", cms)
    assert [i["metadata"]["name"] for i in body["items"]] == [body["items"][0]["metadata"]["name"]]
    assert body["items"][0]["metadata"]["name"].startswith("gen-")


async def test_delete_preconditions(raw: Raw) -> None:
    await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    cms = "/api/v1/namespaces/demo/configmaps"
    _, created = await raw.request("POST", cms, _cm("p"))
    status, body = await raw.request("DELETE", cms + "/p", {"preconditions": {"uid": "wrong"}})
    assert (status, body["reason"]) == (409, "Conflict")
    assert "the UID in the precondition (wrong) does not match the UID in record" in body["message"]
    status, body = await raw.request(
        "DELETE",
        cms + "/p",
        {"preconditions": {"resourceVersion": created["metadata"]["resourceVersion"]}},
    )
    assert status == 200 and body["status"] == "Success"


async def test_streaming_list_ends_its_initial_events_with_a_bookmark(
    raw: Raw, sim: KubeSim
) -> None:
    """What client-go 1.35's informers ask for (compared with a real apiserver in
    tests/kubesim/against_real/): the objects, then the annotated bookmark, then changes."""
    import aiohttp

    await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    cms = "/api/v1/namespaces/demo/configmaps"
    for name in ("a", "b"):
        await raw.request("POST", cms, _cm(name))
    query = (
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&timeoutSeconds=30"
    )
    seen: list[dict[str, Any]] = []
    async with (
        aiohttp.ClientSession() as s,
        s.get(
            f"{sim.url}{cms}?{query}", headers={"Authorization": f"Bearer {sim.admin_token}"}
        ) as r,
    ):
        assert r.status == 200
        async for line in r.content:
            event = json.loads(line)
            seen.append(event)
            if event["type"] == "BOOKMARK":
                await raw.request("DELETE", f"{cms}/a")
            if event["type"] == "DELETED":
                break
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in seen] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("BOOKMARK", None),
        ("DELETED", "a"),
    ]
    bookmark = seen[2]["object"]
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(
        seen[1]["object"]["metadata"]["resourceVersion"]
    )
    # The options the apiserver refuses, refused likewise.
    status, body = await raw.request("GET", f"{cms}?watch=1&resourceVersionMatch=NotOlderThan")
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["details"]["causes"][0]["message"] == (
        "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
    )


async def test_aggregated_cluster_role_is_filled(raw: Raw) -> None:
    """kube-controller-manager's aggregation controller, emulated (compared with the
    real one in tests/kubesim/against_real/)."""
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    status, created = await raw.request(
        "POST",
        roles,
        {
            "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]},
        },
    )
    assert status == 201 and created["rules"] is None
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    await raw.request(
        "POST", roles, {"metadata": {"name": "part", "labels": {"x": "y"}}, "rules": [rule]}
    )
    _, role = await raw.request("GET", f"{roles}/agg")
    assert role["rules"] == [rule]
    managers = {(f["manager"], f["operation"]) for f in role["metadata"]["managedFields"]}
    assert ("clusterrole-aggregation-controller", "Apply") in managers
    await raw.request("DELETE", f"{roles}/part")
    _, role = await raw.request("GET", f"{roles}/agg")
    assert role["rules"] is None
