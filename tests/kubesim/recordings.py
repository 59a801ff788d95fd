"""The recorded kube-apiserver exchanges (tests/fixtures/apiserver/) and how to replay them.

The recordings came from a real kube-apiserver v1.24. Replaying one means
sending its requests in order to another server, with the resourceVersions,
uids and continue tokens of later requests translated to the ones that
server made up (learnt from its answers, position by position).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from tests.fixtures import APISERVER_RECORDINGS

REFERENCE = APISERVER_RECORDINGS
#: The recordings in the order they were made: later ones use the namespace
#: and objects of earlier ones.
ORDER = (
    "crud-and-errors.json",
    "server-side-apply.json",
    "defaulting-and-generation.json",
    "crd-lifecycle.json",
    "authorization.json",
    "namespace-termination.json",
)

# Objects the recording session made without recording the request: their
# creation is replayed before the exchange that first shows them.
_NS_PATH = "/api/v1/namespaces/capture-1795328638/configmaps"
UNRECORDED: dict[tuple[str, int], list[dict[str, Any]]] = {
    ("crud-and-errors.json", 12): [
        {
            "request": {
                "method": "POST",
                "path": _NS_PATH,
                "content_type": "application/json",
                "body": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"p{i}", "labels": {"page": "yes"}},
                },
            },
            "response": {"status": 201},
        }
        for i in range(3)
    ],
}


def exchanges(name: str) -> list[dict[str, Any]]:
    """The exchanges of one recording, with the unrecorded setup requests put in."""
    data = json.loads((REFERENCE / name).read_text())
    out: list[dict[str, Any]] = []
    for i, ex in enumerate(data["exchanges"]):
        for extra in UNRECORDED.get((name, i), []):
            out.append(dict(extra, unrecorded=True))
        out.append(ex)
    return out


def learn(recorded: Any, ours: Any, mapping: dict[str, str]) -> None:
    """Pair the recorded volatile values with ours, position by position."""
    if isinstance(recorded, dict) and isinstance(ours, dict):
        for k, v in recorded.items():
            if k in ("uid", "resourceVersion", "controller-uid", "continue") and isinstance(v, str):
                theirs = ours.get(k)
                if isinstance(theirs, str):
                    mapping[v] = theirs
            elif k in ours:
                learn(v, ours[k], mapping)
    elif isinstance(recorded, list) and isinstance(ours, list):
        for a, b in zip(recorded, ours, strict=False):
            learn(a, b, mapping)


def translate(value: Any, mapping: dict[str, str]) -> Any:
    """``value`` with the recorded volatile strings replaced by the replaying server's."""
    if isinstance(value, dict):
        return {k: translate(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [translate(v, mapping) for v in value]
    if isinstance(value, str):
        return mapping.get(value, value)
    return value


def translate_path(path: str, mapping: dict[str, str]) -> str:
    """A recorded path with its resourceVersion and continue parameters translated."""

    def sub(m: re.Match[str]) -> str:
        return m.group(1) + mapping.get(m.group(2), m.group(2))

    def sub_token(m: re.Match[str]) -> str:
        token = urllib.parse.unquote(m.group(2))
        return m.group(1) + urllib.parse.quote(mapping.get(token, token), safe="")

    path = re.sub(r"(resourceVersion=)(\d+)", sub, path)
    return re.sub(r"(continue=)([^&]+)", sub_token, path)


#: Sends one request: (method, path, body bytes or None, content type) -> (status, body).
Requester = Callable[[str, str, bytes | None, str], Awaitable[tuple[int, Any]]]


async def send(request: Requester, ex: dict[str, Any], mapping: dict[str, str]) -> tuple[int, Any]:
    """Replay one recorded exchange; learns the answer's volatile values into ``mapping``."""
    req = ex["request"]
    body = translate(req.get("body"), mapping)
    ctype = req.get("content_type") or "application/json"
    data: bytes | None
    if isinstance(body, str):
        data = body.encode()  # a deliberately malformed body, sent as recorded
    else:
        data = None if body is None else json.dumps(body).encode()
    status, answer = await request(req["method"], translate_path(req["path"], mapping), data, ctype)
    learn(ex["response"].get("body"), answer, mapping)
    return status, answer


# -- what changed from v1.24 (recorded) to v1.35 (kubesim's reference now) ------------------
# Each change is also seen on the real v1.35 apiserver by tests/kubesim/against_real/.


def _without_null_creation_timestamps(value: Any) -> Any:
    """v1.35 omits a zero creationTimestamp (embedded metadata, reviews, bookmarks);
    v1.24 wrote ``null``."""
    if isinstance(value, dict):
        return {
            k: _without_null_creation_timestamps(v)
            for k, v in value.items()
            if not (k == "creationTimestamp" and v is None)
        }
    if isinstance(value, list):
        return [_without_null_creation_timestamps(v) for v in value]
    return value


def _job_as_v135(job: dict[str, Any]) -> None:
    """A Job as v1.35 defaults it: the batch.kubernetes.io/ labels beside the legacy
    ones, the selector on batch.kubernetes.io/controller-uid, manualSelector and
    podReplacementPolicy defaulted (and so owned by the creating manager)."""
    spec = job["spec"]
    prefixed = "batch.kubernetes.io/"
    for labels in (job["metadata"]["labels"], spec["template"]["metadata"]["labels"]):
        for key in ("controller-uid", "job-name"):
            labels[prefixed + key] = labels[key]
        ordered = sorted(labels.items())  # a Go map: its keys come out sorted
        labels.clear()
        labels.update(ordered)
    spec["selector"]["matchLabels"] = {
        prefixed + "controller-uid": spec["selector"]["matchLabels"]["controller-uid"]
    }
    # In the JobSpec's field order: manualSelector after the selector, the policy last.
    items = list(spec.items())
    at = [k for k, _ in items].index("selector") + 1
    items[at:at] = [("manualSelector", False)]
    spec.clear()
    spec.update(items)
    spec["podReplacementPolicy"] = "TerminatingOrFailed"
    for entry in job["metadata"].get("managedFields") or []:
        fields = entry["fieldsV1"].get("f:spec")
        if fields is not None:
            fields["f:manualSelector"] = {}
            fields["f:podReplacementPolicy"] = {}


def as_v135(recorded: Any) -> Any:
    """A recorded v1.24 answer as v1.35 gives it."""
    value = _without_null_creation_timestamps(recorded)
    if isinstance(value, dict) and value.get("kind") == "Job":
        _job_as_v135(value)
    return value
