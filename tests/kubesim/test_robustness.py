"""Hostile and malformed requests: kubesim answers with a Status and keeps serving."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesim.api import Api, Caller
from kubesim.errors import ApiError
from kubesim.listopts import ListOptions
from kubesim.resources import Registry

PATHS = [
    "/api/v1/namespaces",
    "/api/v1/namespaces/demo/configmaps",
    "/api/v1/namespaces/demo/configmaps/c",
    "/apis/apps/v1/namespaces/demo/deployments",
    "/apis/apps/v1/namespaces/demo/deployments/d/status",
    "/apis/batch/v1/namespaces/demo/jobs",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
]
CONTENT_TYPES = [
    "application/json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "text/plain",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
metadata = st.fixed_dictionaries(
    {"name": st.sampled_from(["c", "d", "Bad_Name", "", "x" * 300])},
    optional={
        "labels": st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=2),
        "finalizers": st.lists(st.text(max_size=10), max_size=2),
    },
)
bodies = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"metadata": metadata},
        optional={"spec": json_values, "data": json_values, "status": json_values},
    ),
)


def _check(api: Api) -> None:
    """The store still answers reads after whatever happened."""
    rt = api.registry.get("", "v1", "configmaps")
    assert rt is not None
    api.list(rt, "demo", ListOptions())


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    verb=st.sampled_from(["create", "update", "patch", "delete"]),
    kind=st.sampled_from(
        [
            ("", "v1", "configmaps"),
            ("apps", "v1", "deployments"),
            ("batch", "v1", "jobs"),
            ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        ]
    ),
    body=bodies,
    ctype=st.sampled_from(CONTENT_TYPES[:5]),
)
def test_api_never_crashes_on_garbage(
    verb: str, kind: tuple[str, str, str], body: Any, ctype: str
) -> None:
    api = Api(registry=Registry())
    ns_rt = api.registry.get("", "v1", "namespaces")
    assert ns_rt is not None
    api.create(ns_rt, "", {"metadata": {"name": "demo"}}, Caller())
    rt = api.registry.get(*kind)
    assert rt is not None
    caller = Caller(manager="fuzz")
    ns = "demo" if rt.namespaced else ""
    try:
        if verb == "create":
            api.create(rt, ns, body, caller)
        elif verb == "update":
            api.update(rt, ns, "c", body, caller)
        elif verb == "patch":
            api.patch(rt, ns, "c", ctype, body, caller)
        else:
            api.delete(rt, ns, "c", caller)
    except ApiError as err:
        assert 400 <= err.code < 500, err.status()
        assert err.status()["kind"] == "Status"
    _check(api)


async def test_http_garbage_gets_statuses(raw: Any) -> None:
    status, _ = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "demo"}})
    assert status == 201
    garbage = [
        b"",
        b"null",
        b"[]",
        b"{",
        b"\xff\xfe",
        b'{"metadata": 5}',
        b'{"kind": 7}',
        json.dumps("x" * 100).encode(),
    ]
    for path in PATHS:
        for method in ("POST", "PUT", "PATCH"):
            for ctype in CONTENT_TYPES:
                for data in garbage:
                    code, answer = await raw.request(method, path, raw=data, content_type=ctype)
                    assert 400 <= code < 500 or code in (200, 201), (
                        method,
                        path,
                        ctype,
                        data,
                        code,
                        answer,
                    )
                    if code >= 400:
                        assert isinstance(answer, dict) and answer.get("kind") == "Status", (
                            method,
                            path,
                            ctype,
                            data,
                            answer,
                        )
    code, _ = await raw.request("GET", "/api/v1/namespaces/demo")
    assert code == 200
