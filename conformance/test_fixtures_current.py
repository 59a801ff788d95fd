"""The repository's test fixtures still match the reference data they were taken from.

``make test`` reads only ``tests/fixtures/``; these checks catch a fixture that
drifted from the reference folder (or a reference file added without a fixture).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.shared import REFERENCE
from tests.fixtures import APISERVER_RECORDINGS, UPSTREAM_CRDS, upstream_crd_files
from tests.fixtures.crds.regenerate import fixture_name, render

RECORDINGS = sorted((REFERENCE / "apiserver").glob("*.json"))
UPSTREAM = sorted((REFERENCE / "crds").glob("*.yaml"))


def _name(path: Path) -> str:
    return path.name


def test_the_reference_folder_has_data() -> None:
    assert RECORDINGS
    assert UPSTREAM


def test_every_recording_is_a_fixture() -> None:
    fixtures = sorted(p.name for p in APISERVER_RECORDINGS.glob("*.json"))
    assert fixtures == [p.name for p in RECORDINGS]


@pytest.mark.parametrize("reference", RECORDINGS, ids=_name)
def test_recording_fixture_is_the_reference_file(reference: Path) -> None:
    fixture = APISERVER_RECORDINGS / reference.name
    assert fixture.read_bytes() == reference.read_bytes(), f"{fixture} differs from {reference}"


def test_every_upstream_crd_is_a_fixture() -> None:
    expected = sorted(fixture_name(yaml.safe_load(p.read_text(encoding="utf-8"))) for p in UPSTREAM)
    assert sorted(p.name for p in upstream_crd_files()) == expected


@pytest.mark.parametrize("upstream", UPSTREAM, ids=_name)
def test_crd_fixture_is_what_regenerate_writes(upstream: Path) -> None:
    crd = yaml.safe_load(upstream.read_text(encoding="utf-8"))
    fixture = UPSTREAM_CRDS / fixture_name(crd)
    assert fixture.read_text(encoding="utf-8") == render(crd, upstream.name), (
        f"{fixture} is stale: run tests/fixtures/crds/regenerate.py {upstream}"
    )
