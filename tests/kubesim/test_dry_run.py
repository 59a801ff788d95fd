"""``dryRun=All`` on every write verb, as kube-apiserver answers it, and the journal's record.

A dry run goes through decoding, defaulting, admission and validation, answers
with the object the write would produce (a create with a uid and
creationTimestamp but no resourceVersion; an update or patch at the stored
resourceVersion), and stores nothing: no new resourceVersion, no watch event.
The request journal marks such requests ``dry_run``, which is how tests prove a
command wrote nothing.
"""

from __future__ import annotations

from typing import Any

from kubesim.sim import KubeSim
from tests.conftest import Raw
from tests.support.manifests import configmap

CMS = "/api/v1/namespaces/default/configmaps"


async def test_every_write_verb_honours_dry_run(sim: KubeSim, raw: Raw) -> None:
    await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "default"}})
    code, dry = await raw.request("POST", f"{CMS}?dryRun=All", configmap("a", k="0"))
    assert code == 201
    assert dry["metadata"]["uid"] and dry["metadata"]["creationTimestamp"]
    assert "resourceVersion" not in dry["metadata"]
    assert (await raw.request("GET", f"{CMS}/a"))[0] == 404

    code, live = await raw.request("POST", CMS, configmap("a", k="1"))
    assert code == 201
    rv = live["metadata"]["resourceVersion"]
    sim.journal().reset()
    writes: list[tuple[str, str, Any, str]] = [
        ("PATCH", "", {"data": {"k": "2"}}, "application/merge-patch+json"),
        (
            "PATCH",
            "",
            [{"op": "replace", "path": "/data/k", "value": "3"}],
            "application/json-patch+json",
        ),
        ("PATCH", "", {"data": {"k": "4"}}, "application/strategic-merge-patch+json"),
        (
            "PATCH",
            "&fieldManager=t&force=true",
            configmap("a", k="5"),
            "application/apply-patch+yaml",
        ),
        ("PUT", "", {**live, "data": {"k": "6"}}, "application/json"),
    ]
    for method, extra, body, content_type in writes:
        code, answer = await raw.request(
            method, f"{CMS}/a?dryRun=All{extra}", body, content_type=content_type
        )
        assert code == 200, (content_type, answer)
        assert answer["data"] != {"k": "1"}, content_type  # the change, as it would be
        assert answer["metadata"]["resourceVersion"] == rv, content_type
    code, _ = await raw.request("DELETE", f"{CMS}/a?dryRun=All")
    assert code == 200
    code, _ = await raw.request(
        "DELETE", f"{CMS}/a", {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}
    )
    assert code == 200
    # Server-side apply of an absent object: created in the answer only.
    code, _ = await raw.request(
        "PATCH",
        f"{CMS}/b?dryRun=All&fieldManager=t",
        configmap("b", k="1"),
        content_type="application/apply-patch+yaml",
    )
    assert code == 201

    code, after = await raw.request("GET", f"{CMS}/a")
    assert code == 200 and after["data"] == {"k": "1"}
    assert after["metadata"]["resourceVersion"] == rv
    assert (await raw.request("GET", f"{CMS}/b"))[0] == 404
    written = [e for e in sim.journal().entries if e.verb not in ("get", "list", "watch")]
    assert len(written) == len(writes) + 3
    assert all(e.dry_run for e in written), written
    assert not any(e.dry_run for e in sim.journal().entries if e.verb == "get")
    code, body = await raw.request("GET", "/kubesim/requests")
    assert code == 200 and all("dryRun" in r for r in body["requests"])
