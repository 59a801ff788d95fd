"""YAML examples from the user documentation the project implements (``seeds/``).

The seeds are Markdown pages (fenced ```yaml blocks) and plain-text renders of
them (no fences, examples start at ``apiVersion:`` in column 0). Examples elide
parts with ``...`` (``metadata: ...``, a line holding only ``...``, a comment
such as ``# ... job specification``); :func:`load_example` fills those in with
the smallest valid content, so the rest of the example can be checked.

Fragments that show part of a ManifestWork (``manifestConfigs:``,
``resourceStatus:``, ``status:``) are wrapped into a whole ManifestWork.
Rendering debris with lost indentation (the second half of one page flattens
its YAML) is not an example: only fenced blocks are read from pages that use
fences.
"""

from __future__ import annotations

import copy
import itertools
import re
import textwrap
from dataclasses import dataclass
from typing import Any

import yaml

from conformance.shared import SEEDS

WORK_KINDS = ("ManifestWork", "ManifestWorkReplicaSet")

_ELIDED_VALUE = "__ELIDED__"
_ELIDED_KEY = "__elided__"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[\w-]*)[ \t]*$")
_VALUE_ELISION = re.compile(r"^(?P<head>\s*(?:- )?[\w.-]+:)\s*\.\.\.\s*$")
_LINE_ELISION = re.compile(r"^(?P<indent>\s*)(?:\.\.\.|#.*\.\.\..*)\s*$")

_SPEC_KEYS = {"workload", "manifestConfigs", "deleteOption", "executor"}
_STATUS_KEYS = {"conditions", "resourceStatus"}

SAMPLE_MANIFEST: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "elided", "namespace": "default"},
}
SAMPLE_CONDITION: dict[str, Any] = {
    "lastTransitionTime": "2024-01-01T00:00:00Z",
    "message": "elided",
    "reason": "Elided",
    "status": "True",
    "type": "Applied",
}
_FILL_BY_KEY: dict[str, Any] = {
    "metadata": {"name": "elided", "namespace": "cluster1"},
    "spec": {"workload": {"manifests": [SAMPLE_MANIFEST]}},
    "workload": {"manifests": [SAMPLE_MANIFEST]},
    "manifestWorkTemplate": {"workload": {"manifests": [SAMPLE_MANIFEST]}},
    "conditions": [SAMPLE_CONDITION],
    "resourceMeta": {
        "group": "",
        "kind": "ConfigMap",
        "name": "elided",
        "namespace": "default",
        "ordinal": 0,
        "resource": "configmaps",
        "version": "v1",
    },
}


@dataclass(frozen=True)
class Example:
    """One YAML example: where it is and its text."""

    source: str
    line: int
    text: str

    @property
    def id(self) -> str:
        """A stable test id: ``<seed file>:<line>``."""
        return f"{self.source}:{self.line}"


def all_examples() -> list[Example]:
    """Every YAML block in the seeds (not only work objects)."""
    out: list[Example] = []
    for path in sorted(SEEDS.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        found = _fenced(lines) if "```" in text else _unfenced(lines)
        out.extend(Example(path.name, line, body) for line, body in found)
    return out


def work_examples() -> list[tuple[Example, dict[str, Any]]]:
    """Examples that show a ManifestWork or ManifestWorkReplicaSet, filled in."""
    out = []
    for example in all_examples():
        doc = load_example(example)
        if doc is not None:
            out.append((example, doc))
    return out


def _fenced(lines: list[str]) -> list[tuple[int, str]]:
    out = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None or m["info"] not in ("yaml", "yml"):
            i += 1
            continue
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not _FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        out.append((start + 1, textwrap.dedent("\n".join(body))))
        i += 1
    return out


def _unfenced(lines: list[str]) -> list[tuple[int, str]]:
    """Blocks from ``apiVersion:`` in column 0 to the next blank line or the next
    such ``apiVersion:``, trimmed of trailing prose until the rest parses."""
    out = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("apiVersion: "):
            i += 1
            continue
        start, body = i, [lines[i]]
        i += 1
        while i < len(lines) and lines[i].strip() and not lines[i].startswith("apiVersion: "):
            body.append(lines[i])
            i += 1
        while body and not _parses(_mark_elisions("\n".join(body))):
            body.pop()
        if body and not is_flattened("\n".join(body)):
            out.append((start + 1, "\n".join(body)))
    return out


def is_flattened(text: str) -> bool:
    """Whether a block lost its indentation in rendering: a top-level key with no
    value followed by another top-level key (``metadata:`` then ``namespace: x``)."""
    lines = text.splitlines()
    for line, following in itertools.pairwise(lines):
        if re.fullmatch(r"(metadata|spec):", line) and re.match(r"[\w-]+:", following):
            return True
    return False


def work_lines_not_extracted() -> list[str]:
    """``<seed>:<line>`` of every ``kind: ManifestWork...`` that is in no extracted
    example: rendering debris the seed tests must account for."""
    covered: set[tuple[str, int]] = set()
    for example in all_examples():
        n = example.text.count("\n") + 1
        covered.update((example.source, example.line + k) for k in range(-1, n + 1))
    out = []
    for path in sorted(SEEDS.glob("*.txt")):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            hit = re.search(r"kind: (ManifestWork|ManifestWorkReplicaSet)\b", line)
            if hit and (path.name, no) not in covered:
                out.append(f"{path.name}:{no}")
    return out


def _parses(text: str) -> bool:
    try:
        list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return False
    return True


def _mark_elisions(text: str) -> str:
    out = []
    for line in text.splitlines():
        if m := _VALUE_ELISION.match(line):
            out.append(f"{m['head']} {_ELIDED_VALUE}")
        elif m := _LINE_ELISION.match(line):
            out.append(f"{m['indent']}{_ELIDED_KEY}: true")
        else:
            out.append(line)
    return "\n".join(out)


def load_example(example: Example) -> dict[str, Any] | None:
    """The example as a whole work object with elisions filled, or None if it is
    not a (part of a) ManifestWork or ManifestWorkReplicaSet."""
    marked = _mark_elisions(example.text)
    if not _parses(marked):
        # A lone "..." the marker cannot stand in for: drop such lines instead.
        marked = "\n".join(
            line for line in marked.splitlines() if line.strip() != f"{_ELIDED_KEY}: true"
        )
    docs = [d for d in yaml.safe_load_all(marked) if isinstance(d, dict)]
    if len(docs) != 1:
        return None
    doc = _wrap(docs[0])
    if doc is None:
        return None
    _fill(doc, ())
    return doc


def _wrap(doc: dict[str, Any]) -> dict[str, Any] | None:
    if doc.get("kind") in WORK_KINDS:
        return doc
    if "kind" in doc or "apiVersion" in doc:
        return None
    keys = set(doc) - {_ELIDED_KEY}
    base: dict[str, Any] = {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": _ELIDED_VALUE,
    }
    if keys and keys <= _SPEC_KEYS:
        return {**base, "spec": {"workload": _ELIDED_VALUE, **doc}}
    if keys and keys <= _STATUS_KEYS:
        return {**base, "spec": _ELIDED_VALUE, "status": doc}
    if keys == {"status"}:
        return {**base, "spec": _ELIDED_VALUE, **doc}
    return None


def _fill(node: Any, path: tuple[str | int, ...]) -> None:
    if isinstance(node, dict):
        marked = node.pop(_ELIDED_KEY, None) is not None
        for key in list(node):
            if node[key] == _ELIDED_VALUE:
                node[key] = copy.deepcopy(_FILL_BY_KEY[key])
            else:
                _fill(node[key], (*path, key))
        if marked:
            _fill_marked(node, path)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            _fill(item, (*path, i))


def _fill_marked(node: dict[str, Any], path: tuple[str | int, ...]) -> None:
    """Complete an object part of which was elided."""
    last = next((p for p in reversed(path) if isinstance(p, str)), "")
    if last == "manifests":  # a manifest: it needs a name to be admitted
        node.setdefault("metadata", {}).setdefault("name", "elided")
    elif last == "manifestWorkTemplate":
        node.setdefault("workload", copy.deepcopy(_FILL_BY_KEY["workload"]))
