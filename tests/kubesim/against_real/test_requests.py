"""Discovery, and requests that go wrong.

Scenarios run on kubesim and on the real apiserver at once; see
tests/kubesim/against_real/__init__.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.kubesim.truth import Record, Side, configmap, namespace, same

pytestmark = pytest.mark.realkube


# -- discovery -------------------------------------------------------------------------------


async def test_discovery_of_the_served_resources(sides: tuple[Side, Side]) -> None:
    """The discovery entries of every resource kubesim serves (the real server serves
    more resources and groups; those are left out), plain and aggregated."""
    kubesim_side = sides[0]
    served = (await kubesim_side.call("GET", "/apis")).json
    paths = ["/api/v1"] + [
        f"/apis/{version['groupVersion']}"
        for group in served["groups"]
        for version in group["versions"]
    ]
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

    async def scenario(side: Side, rec: Record) -> None:
        for path in paths:
            listed = (await side.call("GET", path)).json
            ours = (await kubesim_side.call("GET", path)).json
            names = {r["name"] for r in ours["resources"]}
            rec.add(
                path,
                sorted(
                    (r for r in listed["resources"] if r["name"] in names), key=lambda r: r["name"]
                ),
            )
        for path in ("/api", "/apis"):
            answer = await side.call("GET", path, accept=aggregated)
            ours = (await kubesim_side.call("GET", path, accept=aggregated)).json
            ours_by_group = {g["metadata"].get("name", ""): g for g in ours["items"]}
            for group in answer.json["items"]:
                name = group["metadata"].get("name", "")
                if name not in ours_by_group:
                    continue
                for version in group["versions"]:
                    mine = [
                        v
                        for v in ours_by_group[name]["versions"]
                        if v["version"] == version["version"]
                    ]
                    if not mine:
                        continue
                    kept = {r["resource"]: r for r in mine[0]["resources"]}
                    version["resources"] = sorted(
                        (r for r in version["resources"] if r["resource"] in kept),
                        key=lambda r: r["resource"],
                    )
                    for resource in version["resources"]:
                        # Subresources kubesim does not serve (pods/exec...) are left out.
                        ours_subs = {
                            s["subresource"]
                            for s in kept[resource["resource"]].get("subresources") or []
                        }
                        subs = [
                            s
                            for s in resource.pop("subresources", [])
                            if s["subresource"] in ours_subs
                        ]
                        if subs:
                            resource["subresources"] = subs
                    rec.add(f"aggregated {name or 'core'}/{version['version']}", version)

    await same(scenario, sides)


# -- requests that go wrong --------------------------------------------------------------------


async def test_request_errors(sides: tuple[Side, Side]) -> None:
    """The Status answers of requests that go wrong, beyond the recorded ones."""
    ns = "errors"
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    merge = "application/merge-patch+json"
    json_patch = "application/json-patch+json"

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        made = (await side.call("POST", cms, configmap("a"))).json
        calls: list[tuple[str, str, str, Any, str]] = [
            (
                "unknown resource",
                "GET",
                f"/api/v1/namespaces/{ns}/gizmos",
                None,
                "application/json",
            ),
            (
                "unknown group",
                "GET",
                "/apis/nowhere.example.com/v1/things",
                None,
                "application/json",
            ),
            ("PUT on a collection", "PUT", cms, configmap("a"), "application/json"),
            ("POST to an object", "POST", f"{cms}/a", configmap("a"), "application/json"),
            ("unsupported patch type", "PATCH", f"{cms}/a", {"data": {}}, "text/plain"),
            ("patch of a missing object", "PATCH", f"{cms}/missing", {"data": {}}, merge),
            (
                "JSON patch test fails",
                "PATCH",
                f"{cms}/a",
                [{"op": "test", "path": "/data/k", "value": "no"}],
                json_patch,
            ),
            (
                "JSON patch bad path",
                "PATCH",
                f"{cms}/a",
                [{"op": "replace", "path": "/nothere/x", "value": 1}],
                json_patch,
            ),
            ("name differs from the URL", "PUT", f"{cms}/a", configmap("b"), "application/json"),
            (
                "namespace differs from the URL",
                "POST",
                cms,
                {**configmap("c"), "metadata": {"name": "c", "namespace": "elsewhere"}},
                "application/json",
            ),
            (
                "wrong kind",
                "POST",
                cms,
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "d"}},
                "application/json",
            ),
            (
                "delete with a stale uid",
                "DELETE",
                f"{cms}/a",
                {
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"},
                },
                "application/json",
            ),
            (
                "delete with a stale resourceVersion",
                "DELETE",
                f"{cms}/a",
                {
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "preconditions": {"resourceVersion": "1"},
                },
                "application/json",
            ),
            ("dry-run create", "POST", f"{cms}?dryRun=All", configmap("dry"), "application/json"),
            ("bad dryRun", "POST", f"{cms}?dryRun=Some", configmap("dry"), "application/json"),
            (
                "generated name",
                "POST",
                cms,
                {"metadata": {"generateName": "gen-"}},
                "application/json",
            ),
            (
                "unconditional update",
                "PUT",
                f"{cms}/a",
                {**configmap("a"), "data": {"k": "v2"}},
                "application/json",
            ),
            (
                "bad fieldValidation",
                "POST",
                f"{cms}?fieldValidation=Loose",
                configmap("e"),
                "application/json",
            ),
            (
                "strict: unknown field",
                "POST",
                f"{cms}?fieldValidation=Strict",
                {**configmap("f"), "extra": 1},
                "application/json",
            ),
            (
                "strict: duplicate field",
                "POST",
                f"{cms}?fieldValidation=Strict",
                '{"metadata":{"name":"g"},"data":{"k":"1","k":"2"}}',
                "application/json",
            ),
            (
                "deletecollection by label",
                "DELETE",
                f"{cms}?labelSelector=none%3Dmatch",
                None,
                "application/json",
            ),
        ]
        del made
        for step, method, path, body, ctype in calls:
            answer = await side.call(method, path, body, content_type=ctype)
            if isinstance(answer.body, dict):
                # A generated name ends in five random characters.
                if answer.body.get("metadata", {}).get("generateName"):
                    answer.body["metadata"]["name"] = "gen-<random>"
                # Each server's own resourceVersion, named in a precondition failure.
                if isinstance(answer.body.get("message"), str):
                    answer.body["message"] = re.sub(
                        r"in record \((\d+)\)", "in record (<rv>)", answer.body["message"]
                    )
            rec.answer(step, answer)

    await same(scenario, sides)
