"""Replay the recorded kube-apiserver exchanges against kubesim and compare answers.

The recordings in tests/fixtures/apiserver/ hold a real apiserver's
answers. Each request is sent to kubesim in order (resourceVersions and uids
in later requests translated to kubesim's own), and the answer must match:
the status code always, and the body once volatile values (uids,
resourceVersions, timestamps, allocated IPs, continue tokens) are masked.
Every recorded exchange is replayed, the watch streams of watch.json included
(their events compared one by one).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from tests.conftest import Raw
from tests.kubesim.recordings import ORDER, as_v135, exchanges, send, translate_path
from tests.kubesim.truth import diff, mask

VOLATILE = frozenset(
    {
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "time",
        "lastTransitionTime",
        "clusterIP",
        "clusterIPs",
        "continue",
        "controller-uid",
    }
)
# Answers whose exact wording dumps Go structs; only code and reason are compared.
LOOSE_MESSAGES = ("spec.template: Invalid value: core.PodTemplateSpec",)


def _mask(value: Any) -> Any:
    return mask(value, volatile=VOLATILE)


def _compare(name: str, index: int, recorded: dict[str, Any], status: int, body: Any) -> None:
    where = (
        f"{name} exchange {index} ({recorded['request']['method']} {recorded['request']['path']})"
    )
    assert status == recorded["response"]["status"], f"{where}: status {status}, body {body}"
    expected = as_v135(recorded["response"].get("body"))
    if expected is None:
        return
    if isinstance(expected, dict) and expected.get("kind") == "Status":
        assert body.get("reason") == expected.get("reason"), where
        if any(s in expected.get("message", "") for s in LOOSE_MESSAGES):
            return
    if isinstance(expected, dict) and expected.get("kind") in ("APIResourceList", "APIGroupList"):
        return  # discovery is compared in test_discovery.py
    diffs = diff(_mask(expected), _mask(body))
    assert not diffs, f"{where}:\n" + "\n".join(diffs)


@pytest.mark.parametrize("name", ORDER)
async def test_replay_matches_recorded_apiserver(raw: Raw, name: str) -> None:
    mapping: dict[str, str] = {}
    # The later recordings assume the namespace (and objects) made by earlier ones.
    prefix = ORDER[: ORDER.index(name)]
    for setup in prefix:
        for ex in exchanges(setup):
            await _send(raw, ex, mapping)
    for i, ex in enumerate(exchanges(name)):
        status, body = await _send(raw, ex, mapping)
        if ex.get("unrecorded"):
            assert status == ex["response"]["status"], body
            continue
        if (
            name == "crd-lifecycle.json"
            and ex["request"]["method"] == "GET"
            and ex["request"]["path"] == "/apis/capture.example.com/v1"
        ):
            # Our discovery document omits storageVersionHash for CRDs; compare names only.
            assert status == 200
            assert [r["name"] for r in body["resources"]] == [
                r["name"] for r in ex["response"]["body"]["resources"]
            ]
            continue
        _compare(name, i, ex, status, body)


async def _send(raw: Raw, ex: dict[str, Any], mapping: dict[str, str]) -> tuple[int, Any]:
    async def request(method: str, path: str, data: bytes | None, ctype: str) -> tuple[int, Any]:
        return await raw.request(
            method, path, raw=data, content_type=ctype, headers={"User-Agent": "capture"}
        )

    return await send(request, ex, mapping)


def _watch_events(text: Any) -> list[dict[str, Any]]:
    """The events of a finished watch response (one JSON document per line)."""
    assert isinstance(text, str), text
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def test_watch_replay_matches_recorded_apiserver(raw: Raw) -> None:
    mapping: dict[str, str] = {}
    for setup in (
        "crud-and-errors.json",
        "server-side-apply.json",
        "defaulting-and-generation.json",
        "crd-lifecycle.json",
        "authorization.json",
    ):
        for ex in exchanges(setup):
            await _send(raw, ex, mapping)
    live, history, compacted = exchanges("watch.json")
    # The first watch starts from the then current resourceVersion; while it was
    # open the recording session created w1, set its data and deleted it,
    # without recording those requests. The watches' timeouts are shortened: to
    # 3 s for the one with bookmarks (its bookmark comes 2 s before the end), to 1 s
    # for the other.
    cms = "/api/v1/namespaces/capture-1795328638/configmaps"
    _, listed = await raw.request("GET", cms)
    start = re.search(r"resourceVersion=(\d+)", live["request"]["path"])
    assert start is not None
    mapping[start.group(1)] = listed["metadata"]["resourceVersion"]

    async def watch(ex: dict[str, Any]) -> list[dict[str, Any]]:
        timeout = 3 if "allowWatchBookmarks=true" in ex["request"]["path"] else 1
        path = re.sub(r"timeoutSeconds=\d+", f"timeoutSeconds={timeout}", ex["request"]["path"])
        status, text = await raw.request("GET", translate_path(path, mapping))
        assert status == ex["response"]["status"], text
        return _watch_events(text)

    watching = asyncio.ensure_future(watch(live))
    w1 = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w1"}}
    for method, path, body, ctype in [
        ("POST", cms, w1, "application/json"),
        ("PATCH", f"{cms}/w1", {"data": {"a": "1"}}, "application/merge-patch+json"),
        ("DELETE", f"{cms}/w1", None, "application/json"),
    ]:
        status, answer = await raw.request(
            method, path, body, content_type=ctype, headers={"User-Agent": "capture"}
        )
        assert status in (200, 201), answer
    for ex, events in ((live, await watching), (history, await watch(history))):
        expected = as_v135(ex["response"]["events"])
        assert [e["type"] for e in events] == [e["type"] for e in expected]
        diffs = diff(_mask(expected), _mask(events))
        assert not diffs, f"watch {ex['request']['path']}:\n" + "\n".join(diffs)
    # By then the recorded etcd had compacted resourceVersion 2 away (its watch
    # cache still replayed it): compact kubesim's history likewise.
    status, answer = await raw.request("POST", "/kubesim/faults", {"action": "expire-watches"})
    assert status == 201, answer
    status, body = await _send(raw, compacted, mapping)
    _compare("watch.json", 2, compacted, status, body)
