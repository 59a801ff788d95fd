"""The upstream CRD fixtures hold the definitions' facts and no description texts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures import upstream_crd_files
from tests.fixtures.crds.regenerate import (
    fixture_name,
    main,
    render,
    structural,
    without_descriptions,
)
from tests.integration.conftest import (
    WIDGET_CRD,
)

FILES = upstream_crd_files()


def _keys(node: Any, names: bool = False) -> set[str]:
    """Every schema keyword used in ``node`` (field names under ``properties`` excluded)."""
    if isinstance(node, list):
        return set().union(*(_keys(item) for item in node))
    if not isinstance(node, dict):
        return set()
    own = set() if names else set(node)
    return own.union(*(_keys(v, names=not names and k == "properties") for k, v in node.items()))


def test_one_fixture_per_ocm_crd() -> None:
    assert [p.name.split(".", 1)[0] for p in FILES] == [
        "appliedmanifestworks",
        "managedclusters",
        "manifestworkreplicasets",
        "manifestworks",
        "placementdecisions",
        "placements",
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name.split(".", 1)[0])
def test_fixture_has_no_descriptions_and_is_regenerated_unchanged(path: Path) -> None:
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert "description" not in _keys(crd)
    assert list(crd) == ["apiVersion", "kind", "metadata", "spec"]
    assert fixture_name(crd) == path.name
    assert structural(crd) == crd  # what the script writes is a fixed point of it
    version = crd["spec"]["versions"][0]
    assert {"name", "served", "storage", "schema"} <= set(version)
    assert version["schema"]["openAPIV3Schema"]["type"] == "object"


def test_facts_survive_the_stripping() -> None:
    keys = set().union(*(_keys(yaml.safe_load(p.read_text(encoding="utf-8"))) for p in FILES))
    assert {
        "type",
        "required",
        "enum",
        "default",
        "format",
        "pattern",
        "maxLength",
        "x-kubernetes-validations",
        "x-kubernetes-list-type",
        "x-kubernetes-preserve-unknown-fields",
        "additionalPrinterColumns",
        "subresources",
    } <= keys


def test_descriptions_go_and_fields_called_description_stay() -> None:
    schema = {
        "description": "prose",
        "type": "object",
        "properties": {
            "description": {"description": "prose", "type": "string"},
            "properties": {"type": "object", "properties": {"description": {"type": "string"}}},
        },
        "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "kept"}],
    }
    assert without_descriptions(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "properties": {"type": "object", "properties": {"description": {"type": "string"}}},
        },
        "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "kept"}],
    }


def _upstream_like() -> dict[str, Any]:
    """A CRD as upstream files hold it: descriptions, a printer column, a status."""
    crd = copy.deepcopy(WIDGET_CRD)
    version = crd["spec"]["versions"][0]
    version["additionalPrinterColumns"] = [
        {"jsonPath": ".spec.size", "name": "Size", "type": "integer", "description": "x"}
    ]
    schema = version["schema"]["openAPIV3Schema"]
    schema["description"] = "A widget."
    schema["properties"]["spec"]["properties"]["size"]["description"] = "How big."
    crd["status"] = {"storedVersions": []}
    return crd


def test_command_line_writes_the_fixture(tmp_path: Path) -> None:
    upstream = tmp_path / "0000_00_example.com_widgets.crd.yaml"
    upstream.write_text(yaml.safe_dump(_upstream_like()), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    assert main([str(upstream), "--output-dir", str(out)]) == 0
    written = out / "widgets.example.com.yaml"
    text = written.read_text(encoding="utf-8")
    assert text == render(yaml.safe_load(upstream.read_text(encoding="utf-8")), upstream.name)
    assert text.startswith(f"# {upstream.name} (open-cluster-management-io/api)")
    crd = yaml.safe_load(text)
    assert "status" not in crd
    version = crd["spec"]["versions"][0]
    assert version["additionalPrinterColumns"] == [
        {"jsonPath": ".spec.size", "name": "Size", "type": "integer"}
    ]
    assert version["schema"] == WIDGET_CRD["spec"]["versions"][0]["schema"]


def test_command_line_rejects_what_is_not_a_crd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "configmap.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", encoding="utf-8")
    assert main([str(bad), "--output-dir", str(tmp_path)]) == 1
    assert "not a CustomResourceDefinition (kind 'ConfigMap'" in capsys.readouterr().err
    assert not list(tmp_path.glob("x*.yaml"))
