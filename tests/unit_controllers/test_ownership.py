"""Ownership rules of delete options (spec/agent.md section 7) and owner references."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.work_v1 import DeleteOption
from workagent.controllers.ownership import (
    applied_work_owner,
    is_applied_work_reference,
    owned_by_the_work,
    owner_for,
)

CM = ("", "configmaps", "ns1", "cm1")


def _options(raw: dict[str, Any] | None) -> list[DeleteOption | None]:
    """The option as the model the spec validates it into."""
    return [None if raw is None else DeleteOption.from_wire(raw)]


def _selective(*rules: tuple[str, str, str, str]) -> dict[str, Any]:
    return {
        "propagationPolicy": "SelectivelyOrphan",
        "selectivelyOrphans": {
            "orphaningRules": [
                {"group": g, "resource": r, "namespace": ns, "name": n} for g, r, ns, n in rules
            ]
        },
    }


@pytest.mark.parametrize(
    "raw",
    [
        None,
        {},
        {"propagationPolicy": "Foreground"},
        {"propagationPolicy": "SelectivelyOrphan"},
        {"propagationPolicy": "SelectivelyOrphan", "selectivelyOrphans": {}},
        # Foreground ignores orphaning rules.
        {**_selective(CM), "propagationPolicy": "Foreground"},
    ],
)
def test_owned(raw: dict[str, Any] | None) -> None:
    for option in _options(raw):
        assert owned_by_the_work(*CM, option)


def test_orphan_owns_nothing() -> None:
    for option in _options({"propagationPolicy": "Orphan"}):
        assert not owned_by_the_work(*CM, option)
        assert not owned_by_the_work("apps", "deployments", "ns1", "d1", option)


def test_selectively_orphan_matches_all_four_fields_exactly() -> None:
    for option in _options(_selective(CM, ("apps", "deployments", "", "cluster-wide"))):
        assert not owned_by_the_work(*CM, option)
        assert not owned_by_the_work("apps", "deployments", "", "cluster-wide", option)
        assert owned_by_the_work("", "configmaps", "ns1", "cm2", option)
        assert owned_by_the_work("", "configmaps", "ns2", "cm1", option)
        assert owned_by_the_work("", "secrets", "ns1", "cm1", option)
        assert owned_by_the_work("apps", "configmaps", "ns1", "cm1", option)
        assert owned_by_the_work("apps", "deployments", "ns1", "cluster-wide", option)


def test_orphaning_rules_have_no_wildcards() -> None:
    for option in _options(_selective(("", "configmaps", "*", "*"))):
        assert owned_by_the_work(*CM, option)


def test_owner_reference_and_removal_marker() -> None:
    applied = {"metadata": {"name": "abc-work1", "uid": "u-1"}, "spec": {}}
    owner = applied_work_owner(applied)
    assert owner == {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "AppliedManifestWork",
        "name": "abc-work1",
        "uid": "u-1",
    }
    assert owner_for(owner, True) == owner
    marker = owner_for(owner, False)
    assert marker["uid"] == "u-1-"
    assert owner["uid"] == "u-1"  # the original is not modified


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ({"apiVersion": "work.open-cluster-management.io/v1", "kind": "AppliedManifestWork"}, True),
        ({"apiVersion": "work.open-cluster-management.io/v2", "kind": "AppliedManifestWork"}, True),
        ({"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork"}, False),
        ({"apiVersion": "example.com/v1", "kind": "AppliedManifestWork"}, False),
        ({"apiVersion": "", "kind": "AppliedManifestWork"}, False),
        ({"kind": "AppliedManifestWork"}, False),
    ],
)
def test_is_applied_work_reference(ref: dict[str, Any], expected: bool) -> None:
    assert is_applied_work_reference(ref) is expected
