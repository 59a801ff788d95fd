"""Server-side printing (``as=Table``) so that ``kubectl get`` shows useful columns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from kubesim.resources import ResourceType

Cell = Callable[[Mapping[str, Any]], Any]


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a meta.k8s.io Table."""
    return "as=Table" in accept


def age(timestamp: str | None) -> str:
    """Age as kubectl shows it (``5s``, ``3m``, ``2h``, ``4d``)."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    secs = max(int((datetime.now(UTC) - then).total_seconds()), 0)
    if secs < 120:
        return f"{secs}s"
    if secs < 7200:
        return f"{secs // 60}m"
    if secs < 172800:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


def _path(obj: Mapping[str, Any], dotted: str) -> Any:
    """Value at a simple JSONPath like ``.status.replicas`` (no filters)."""
    cur: Any = obj
    for part in dotted.strip().lstrip("{").rstrip("}").lstrip("$").strip(".").split("."):
        if not part:
            continue
        if isinstance(cur, Mapping):
            cur = cur.get(part)
        else:
            return None
    return cur


def _ready(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    return f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}"


_KIND_COLUMNS: dict[str, list[tuple[str, str, Cell]]] = {
    "Namespace": [("Status", "string", lambda o: (o.get("status") or {}).get("phase", ""))],
    "Pod": [("Status", "string", lambda o: (o.get("status") or {}).get("phase", ""))],
    "Deployment": [
        ("Ready", "string", _ready),
        ("Up-to-date", "integer", lambda o: (o.get("status") or {}).get("updatedReplicas", 0)),
        ("Available", "integer", lambda o: (o.get("status") or {}).get("availableReplicas", 0)),
    ],
    "StatefulSet": [("Ready", "string", _ready)],
    "ConfigMap": [
        ("Data", "integer", lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}))
    ],
    "Secret": [
        ("Type", "string", lambda o: o.get("type", "")),
        ("Data", "integer", lambda o: len(o.get("data") or {})),
    ],
    "Job": [
        (
            "Completions",
            "string",
            lambda o: (
                f"{(o.get('status') or {}).get('succeeded', 0)}/"
                f"{(o.get('spec') or {}).get('completions', 1)}"
            ),
        )
    ],
}


def _columns(rt: ResourceType) -> list[tuple[str, str, Cell]]:
    if rt.printer_columns:
        cols: list[tuple[str, str, Cell]] = []
        for col in rt.printer_columns:
            path = str(col.get("jsonPath", ""))
            ctype = str(col.get("type", "string"))
            if ctype == "date":
                cols.append(
                    (str(col.get("name", "")), "string", lambda o, p=path: age(_path(o, p)))
                )
            else:
                cols.append((str(col.get("name", "")), ctype, lambda o, p=path: _path(o, p)))
        return cols
    return _KIND_COLUMNS.get(rt.kind, []) if rt.builtin else []


def to_table(
    rt: ResourceType, objs: list[Mapping[str, Any]], list_meta: Mapping[str, Any]
) -> dict[str, Any]:
    """A Table of ``objs`` with Name, the kind's columns and Age."""
    extra = _columns(rt)
    definitions = [
        {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}
    ]
    definitions += [
        {"name": name, "type": ctype, "format": "", "description": name, "priority": 0}
        for name, ctype, _ in extra
    ]
    has_age = not any(name == "Age" for name, _, _ in extra)
    if has_age:
        definitions.append(
            {"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}
        )
    rows = []
    for obj in objs:
        meta = obj.get("metadata") or {}
        cells: list[Any] = [meta.get("name", "")]
        cells += [fn(obj) for _, _, fn in extra]
        if has_age:
            cells.append(age(meta.get("creationTimestamp")))
        rows.append(
            {
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": {k: v for k, v in meta.items() if k != "managedFields"},
                },
            }
        )
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
        "columnDefinitions": definitions,
        "rows": rows,
    }
