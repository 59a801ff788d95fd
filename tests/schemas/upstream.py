"""The upstream OCM CRDs (the fixtures in ``tests/fixtures/crds/``, descriptions
removed) and a path-by-path comparison of two CRDs."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures import upstream_crd_files

# Not part of the contract: free text, and what the API server fills in.
_IGNORED_KEYS = frozenset({"description"})


@dataclass(frozen=True, order=True)
class Difference:
    """One place where our CRD and the upstream one differ."""

    crd: str
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.crd}: {self.path}: {self.detail}"


def upstream_crds() -> dict[str, dict[str, Any]]:
    """Upstream CRDs by CRD name (a fresh copy: callers may change it)."""
    return copy.deepcopy(_load_upstream())


@functools.cache
def _load_upstream() -> dict[str, dict[str, Any]]:
    out = {}
    for path in upstream_crd_files():
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        out[crd["metadata"]["name"]] = crd
    return out


def openapi_schema(crd: dict[str, Any]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a one-version CRD."""
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def compare_crds(ours: dict[str, Any], theirs: dict[str, Any]) -> list[Difference]:
    """Every difference in name and ``spec`` (descriptions ignored), path by path."""
    name = theirs["metadata"]["name"]
    out: list[Difference] = []
    if ours["metadata"]["name"] != name:
        out.append(Difference(name, "metadata.name", f"ours is {ours['metadata']['name']!r}"))
    _compare(ours.get("spec"), theirs.get("spec"), "spec", name, out)
    return sorted(out)


def _compare(ours: Any, theirs: Any, path: str, crd: str, out: list[Difference]) -> None:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            if key in _IGNORED_KEYS:
                continue
            sub = f"{path}.{key}"
            if key not in ours:
                out.append(
                    Difference(crd, sub, f"missing in ours (upstream: {_short(theirs[key])})")
                )
            elif key not in theirs:
                out.append(Difference(crd, sub, f"not upstream (ours: {_short(ours[key])})"))
            else:
                _compare(ours[key], theirs[key], sub, crd, out)
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _compare(a, b, f"{path}[{i}]", crd, out)
    elif ours != theirs or type(ours) is not type(theirs):
        out.append(Difference(crd, path, f"ours {_short(ours)} != upstream {_short(theirs)}"))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def load_allowlist(path: Path) -> list[dict[str, str]]:
    """The checked-in allowlist: entries with ``crd``, ``path`` and ``reason``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return list(data or [])
