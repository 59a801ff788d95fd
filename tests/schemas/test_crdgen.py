"""CRD generation: committed files are current, the CLI works, schemas are structural."""

from __future__ import annotations

import subprocess
import sys
import types
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from kubesim.crdschema import validate_crd_schema
from schemas.__main__ import main
from schemas.crdgen import crd_file_name, crd_for, render_all
from schemas.markers import CRDRequired, Default
from schemas.meta import KubeObject
from schemas.registry import KINDS

REPO = Path(__file__).resolve().parents[2]
CHARTS_CRDS = REPO / "charts" / "crds"
REGENERATE = "regenerate with: uv run python -m schemas crds --out charts/crds"


def test_committed_crds_are_current() -> None:
    rendered = render_all()
    committed = {p.name: p.read_text(encoding="utf-8") for p in CHARTS_CRDS.glob("*.yaml")}
    stale = sorted(name for name, text in rendered.items() if committed.get(name) != text)
    extra = sorted(set(committed) - set(rendered))
    assert not stale, f"stale or missing CRDs {stale}; {REGENERATE}"
    assert not extra, f"CRD files no model generates: {extra}; delete them"


def test_file_names() -> None:
    assert sorted(crd_file_name(m) for m in KINDS) == [
        "cluster.open-cluster-management.io_managedclusters.yaml",
        "cluster.open-cluster-management.io_placementdecisions.yaml",
        "cluster.open-cluster-management.io_placements.yaml",
        "work.open-cluster-management.io_appliedmanifestworks.yaml",
        "work.open-cluster-management.io_manifestworkreplicasets.yaml",
        "work.open-cluster-management.io_manifestworks.yaml",
    ]


def test_cli_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--out", str(tmp_path / "out")]) == 0
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == sorted(render_all())
    assert main(["crds", "--out", str(tmp_path / "out"), "--check"]) == 0
    victim = tmp_path / "out" / crd_file_name(KINDS[0])
    victim.write_text(victim.read_text() + "# edited\n")
    assert main(["crds", "--out", str(tmp_path / "out"), "--check"]) == 1
    assert "stale or missing" in capsys.readouterr().err


def test_cli_as_module(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "schemas", "crds", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.glob("*.yaml"))) == len(KINDS)


def test_output_is_deterministic_yaml() -> None:
    first, second = render_all(), render_all()
    assert first == second
    for name, text in first.items():
        crd = yaml.safe_load(text)
        assert crd["kind"] == "CustomResourceDefinition", name
        assert text.startswith("apiVersion: apiextensions.k8s.io/v1\n")


@pytest.mark.parametrize("model", KINDS, ids=lambda m: m.__name__)
def test_schema_is_structural(model: type[KubeObject]) -> None:
    crd = crd_for(model)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert validate_crd_schema(schema) == []
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert crd["spec"]["preserveUnknownFields"] is False


@pytest.mark.parametrize("model", KINDS, ids=lambda m: m.__name__)
def test_every_object_and_field_has_a_description(model: type[KubeObject]) -> None:
    schema = crd_for(model)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    missing: list[str] = []
    _walk_descriptions(schema, "", missing)
    assert not missing, f"no description at {missing}"


def _walk_descriptions(node: dict[str, Any], path: str, missing: list[str]) -> None:
    if path and path != ".metadata" and "description" not in node:
        missing.append(path)
    for key, sub in node.get("properties", {}).items():
        _walk_descriptions(sub, f"{path}.{key}", missing)
    items = node.get("items")
    if isinstance(items, dict) and "properties" in items:
        _walk_descriptions(items, f"{path}[]", missing)


def _models(root: type[BaseModel]) -> set[type[BaseModel]]:
    seen: set[type[BaseModel]] = set()
    todo = [root]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for info in model.model_fields.values():
            todo.extend(_nested_models(info.annotation))
    return seen


def _nested_models(tp: Any) -> list[type[BaseModel]]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    if get_origin(tp) in (Annotated, Union, types.UnionType, list, dict):
        return [m for arg in get_args(tp) for m in _nested_models(arg)]
    return []


def _markers(info: Any) -> list[Any]:
    out = list(info.metadata)
    tp = info.annotation
    while True:  # markers inside Optional[Annotated[...]]
        if get_origin(tp) is Annotated:
            out.extend(get_args(tp)[1:])
            tp = get_args(tp)[0]
        elif get_origin(tp) in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return out
            tp = members[0]
        else:
            return out


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


@pytest.mark.parametrize("model", KINDS, ids=lambda m: m.__name__)
def test_model_defaults_agree_with_crd_defaults(model: type[KubeObject]) -> None:
    """A field absent on the wire reads as what the API server would default it to."""
    for nested in _models(model):
        for name, info in nested.model_fields.items():
            markers = _markers(info)
            crd_default = next((m.value for m in markers if isinstance(m, Default)), None)
            where = f"{nested.__name__}.{name}"
            if any(isinstance(m, CRDRequired) for m in markers):
                assert crd_default is not None, f"{where}: CRDRequired needs a Default"
            if crd_default is None:
                continue
            if isinstance(crd_default, dict):
                # Object defaults stay None in the model, so that mutating the
                # default never goes unnoticed by exclude_unset.
                assert info.default is None, where
            else:
                assert _plain(info.default) == _plain(crd_default), where
