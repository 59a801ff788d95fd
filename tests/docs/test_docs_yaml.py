"""The YAML examples in ``docs/*.md`` are valid, and the work objects among them are too.

Every fenced ```yaml block of every page must be valid YAML. Every document
in it that is a ManifestWork or ManifestWorkReplicaSet must parse with
:func:`schemas.parse_object` and be stored, without an error, through our
generated CRD and OCM's (kubesim's CRD schema engine, as an API server stores
a custom object; OCM's CRDs from tests/fixtures/crds/); and an API server with
our CRDs (kubesim, and a real kube-apiserver) does accept each in a server-side
dry run, keeping every field it was given. Examples of the user guide must
moreover pass
:func:`schemas.validate_object`, the hub webhook's rules, since readers copy
them as they are.

An example may leave out what it is not about with ``...``: a value ``...``
(``metadata: ...``) or a list ``[...]`` (``manifests: [...]``) is filled in
with the smallest valid content for that field before parsing, as a reader
would fill it in. Only the fields listed in :data:`ELISION_FILLS` may be
elided; anything else fails, so an elision never hides a mistake.
"""

from __future__ import annotations

import copy
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ocmkit.kube import MANIFESTWORK_REPLICASETS, MANIFESTWORKS, KubeClient, KubeError
from schemas import SchemaValidationError, parse_object, validate_object
from tests.schemas.test_crd_agreement import same_outcome
from tests.support.prepare import ensure_namespace, install_crds
from tests.support.targets import Cluster

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
CRDS = tuple(
    REPO / "charts" / "crds" / f"work.open-cluster-management.io_{plural}.yaml"
    for plural in ("manifestworks", "manifestworkreplicasets")
)
WORK_KINDS = ("ManifestWork", "ManifestWorkReplicaSet")
#: Pages whose examples must also pass the webhook's rules.
STRICT_PAGES = ("user-guide.md",)
ELIDED = "..."

_SAMPLE_MANIFEST: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "elided", "namespace": "default"},
}
#: What an elided field stands for (the smallest content the schema accepts).
ELISION_FILLS: dict[str, Any] = {
    "metadata": {"name": "elided", "namespace": "cluster1"},
    "manifests": [_SAMPLE_MANIFEST],
    "workload": {"manifests": [_SAMPLE_MANIFEST]},
    "spec": {"workload": {"manifests": [_SAMPLE_MANIFEST]}},
    "manifestWorkTemplate": {"workload": {"manifests": [_SAMPLE_MANIFEST]}},
}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[\w-]*)[ \t]*$")


@dataclass(frozen=True)
class Block:
    """One fenced YAML block: page, first line (1-based), text."""

    page: str
    line: int
    text: str

    @property
    def id(self) -> str:
        """``page:line``, the test id."""
        return f"{self.page}:{self.line}"


def yaml_blocks(path: Path) -> list[Block]:
    """The ```yaml / ```yml blocks of a Markdown page, dedented (blocks may sit in lists)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        i += 1
        if fence is None:
            continue
        body: list[str] = []
        start = i + 1
        while i < len(lines) and not _FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if fence["info"] in ("yaml", "yml"):
            out.append(Block(path.name, start, textwrap.dedent("\n".join(body))))
    return out


BLOCKS = [block for page in sorted(DOCS.glob("*.md")) for block in yaml_blocks(page)]


def fill_elisions(node: Any, path: str = "") -> Any:
    """A copy of ``node`` with ``...`` and ``[...]`` values of known fields filled in."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if value in (ELIDED, [ELIDED]):
                if key not in ELISION_FILLS:
                    raise AssertionError(f"{path}{key}: only {sorted(ELISION_FILLS)} may be elided")
                out[key] = copy.deepcopy(ELISION_FILLS[key])
            else:
                out[key] = fill_elisions(value, f"{path}{key}.")
        return out
    if isinstance(node, list):
        return [fill_elisions(item, f"{path}[{i}].") for i, item in enumerate(node)]
    return node


def work_documents(block: Block) -> list[dict[str, Any]]:
    """The ManifestWork and ManifestWorkReplicaSet documents of a block."""
    docs = yaml.safe_load_all(block.text)
    return [d for d in docs if isinstance(d, dict) and d.get("kind") in WORK_KINDS]


def test_blocks_are_found() -> None:
    pages = {b.page for b in BLOCKS}
    assert {"user-guide.md", "hub.md", "kubesim.md"} <= pages
    guide_works = [d for b in BLOCKS if b.page == "user-guide.md" for d in work_documents(b)]
    assert len(guide_works) >= 15, "the user guide shows its concepts with examples"
    kinds = {d["kind"] for d in guide_works}
    assert kinds == set(WORK_KINDS)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_block_is_valid_yaml(block: Block) -> None:
    try:
        docs = list(yaml.safe_load_all(block.text))
    except yaml.YAMLError as err:
        pytest.fail(f"docs/{block.id}: not valid YAML: {err}")
    assert any(d is not None for d in docs), f"docs/{block.id}: empty block"


WORK_BLOCKS = [b for b in BLOCKS if work_documents(b)]


@pytest.mark.parametrize("block", WORK_BLOCKS, ids=lambda b: b.id)
def test_work_objects_parse(block: Block) -> None:
    for doc in work_documents(block):
        filled = fill_elisions(doc)
        check = validate_object if block.page in STRICT_PAGES else parse_object
        try:
            check(filled)
        except SchemaValidationError as err:
            pytest.fail(f"docs/{block.id}: {doc['kind']} is invalid:\n" + "\n".join(err.lines()))
        causes = same_outcome(filled)  # also asserts both CRDs agree
        assert not causes, f"docs/{block.id}: the CRDs refuse the {doc['kind']}: {causes}"


def test_elisions_are_filled_and_checked() -> None:
    work = {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": ELIDED,
        "spec": {"workload": {"manifests": [ELIDED]}},
    }
    parse_object(fill_elisions(work))
    with pytest.raises(AssertionError, match="only"):
        fill_elisions({"spec": {"deleteOption": ELIDED}})
    bad = fill_elisions({**work, "spec": {"workload": {"manifests": [ELIDED]}, "bogus": 1}})
    bad["spec"]["deleteOption"] = {"propagationPolicy": "Sometimes"}
    with pytest.raises(SchemaValidationError):
        parse_object(bad)


def dropped(sent: Any, stored: Any, path: str = "") -> list[str]:
    """The fields of ``sent`` that ``stored`` lacks or holds with another value."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        return [
            lost
            for key, value in sent.items()
            for lost in (
                dropped(value, stored[key], f"{path}.{key}") if key in stored else [f"{path}.{key}"]
            )
        ]
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        return [
            lost
            for i, pair in enumerate(zip(sent, stored, strict=True))
            for lost in dropped(*pair, f"{path}[{i}]")
        ]
    return [] if sent == stored else [path or "."]


async def test_work_objects_are_accepted_by_an_api_server(cluster: Cluster, tmp_path: Path) -> None:
    """Every work example, created with a server-side dry run on a hub serving our CRDs,
    is accepted and comes back with every field it was sent (nothing pruned; its status,
    where an example shows one, is not the author's to write)."""
    async with await KubeClient.from_kubeconfig(
        str(tmp_path / "kubeconfig"), qps=0, name="docs"
    ) as client:
        await install_crds(client, CRDS)
        problems: dict[str, str] = {}
        for block in WORK_BLOCKS:
            for index, doc in enumerate(work_documents(block)):
                filled = fill_elisions(doc)
                namespace = filled["metadata"]["namespace"]
                await ensure_namespace(client, namespace)
                resource = (
                    MANIFESTWORKS if doc["kind"] == "ManifestWork" else MANIFESTWORK_REPLICASETS
                )
                try:
                    stored = await client.create(resource, filled, namespace, dry_run=True)
                except KubeError as err:
                    problems[f"{block.id}#{index}"] = f"refused: {err}"
                    continue
                # A create never writes status: examples show what the agent reports.
                sent = {key: value for key, value in filled.items() if key != "status"}
                lost = dropped(sent, stored)
                if lost:
                    problems[f"{block.id}#{index}"] = f"not kept: {lost}"
        assert problems == {}
