"""The recorded v1.24 exchanges, replayed on kubesim and on the real v1.35 apiserver.

Scenarios run on kubesim and on the real apiserver at once; see
tests/kubesim/against_real/__init__.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import eventually
from tests.kubesim.recordings import ORDER, exchanges, send
from tests.kubesim.truth import Record, Side, configmap, same

pytestmark = pytest.mark.realkube


# -- the recorded exchanges (v1.24) replayed on both ---------------------------------------

CAPTURE_NS = "capture-1795328638"
# What the recording session's later requests assume of a CRD it just created:
# served, which a real apiserver does a moment after the create.
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.capture.example.com"
# Recorded, not compared: the cluster's own answers, different by nature (version strings,
# the server's built-in groups), or a Status whose message dumps Go structs of the request.
REPLAY_VOLATILE = frozenset({"clusterIP", "clusterIPs", "continue", "controller-uid"})


# v1.35 shows a whole internal PodTemplateSpec (Go field names, every field) as the bad
# value of an immutable Job template; kubesim keeps the field, reason and detail.
GO_STRUCT_DUMP = re.compile(r"(spec\.template: Invalid value: ).*?(: field is immutable)")


def without_struct_dumps(body: Any) -> Any:
    """``body`` with a Status's Go struct dumps masked (see :data:`GO_STRUCT_DUMP`)."""
    if not (isinstance(body, dict) and body.get("kind") == "Status"):
        return body
    masked = json.loads(json.dumps(body))
    masked["message"] = GO_STRUCT_DUMP.sub(r"\1<struct>\2", masked.get("message", ""))
    for cause in (masked.get("details") or {}).get("causes") or []:
        cause["message"] = (
            re.sub(
                r"^Invalid value: .*?(: field is immutable)$",
                r"Invalid value: <struct>\1",
                cause["message"],
            )
            if cause.get("field") == "spec.template"
            else cause["message"]
        )
    return masked


async def settle(side: Side, ex: dict[str, Any]) -> None:
    """Wait for what a real cluster does asynchronously after ``ex``, on both sides."""
    request = ex["request"]
    if request["method"] == "POST" and request["path"].endswith("/customresourcedefinitions"):

        async def established() -> bool:
            crd = (await side.call("GET", CRD_PATH)).json
            conditions = (crd.get("status") or {}).get("conditions") or []
            ready = any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
            served = (await side.call("GET", "/apis/capture.example.com/v1")).status == 200
            return ready and served

        await eventually(established, what="the recorded CRD served")


async def test_recorded_exchanges_replayed_on_both(sides: tuple[Side, Side]) -> None:
    """Every request of the v1.24 recordings, sent to kubesim and to the v1.35
    apiserver: their answers must be the same (what changed since v1.24 shows
    here first)."""

    async def scenario(side: Side, rec: Record) -> None:
        mapping: dict[str, str] = {}

        async def request(
            method: str, path: str, data: bytes | None, ctype: str
        ) -> tuple[int, Any]:
            body = None if data is None else data.decode()
            answer = await side.call(method, path, body, content_type=ctype)
            return answer.status, answer.body

        for name in ORDER:
            if name == "namespace-termination.json":
                # The namespace controller would finish the deletion before the next
                # request: an object with a finalizer keeps the namespace terminating.
                held = configmap("held")
                held["metadata"]["finalizers"] = ["example.com/hold"]
                path = f"/api/v1/namespaces/{CAPTURE_NS}/configmaps"
                assert (await side.call("POST", path, held)).status == 201
            for i, ex in enumerate(exchanges(name)):
                status, body = await send(request, ex, mapping)
                rec.add(
                    f"{name} {i}",
                    {"status": status, "body": without_struct_dumps(body)},
                    volatile=REPLAY_VOLATILE,
                )
                await settle(side, ex)

    await same(scenario, sides)
