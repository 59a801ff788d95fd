"""Hostile ManifestWork and ManifestWorkReplicaSet specs through the admission webhook.

The validation core and the HTTPS server must answer every such request: an
allowed answer, or a denial whose message tells the user what is wrong. A 500
answer would be a bug of ours (the core turns its own exceptions into one).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubcontroller.webhook import (
    MANIFESTWORK,
    MANIFESTWORK_REPLICASET,
    ValidationOptions,
    WebhookServer,
    validate,
    validate_json,
)
from schemas import wire
from tests.hostile.strategies import MAYBE_NAMES, NAMES, hostile_specs
from tests.webhook.conftest import client_context, local_settings, post, running
from tests.webhook.helpers import (
    MW_PATH,
    MWRS_PATH,
    WORK_V1,
    WORK_V1ALPHA1,
    RecordingAccess,
    ServingCert,
    response,
    review,
)

ALL_GATES = ValidationOptions(
    feature_gates=frozenset(
        {wire.GATE_MANIFEST_WORK_REPLICA_SET, wire.GATE_NIL_EXECUTOR_VALIDATING}
    )
)


def _work(spec: dict[str, Any], name: Any) -> dict[str, Any]:
    return {
        "apiVersion": WORK_V1,
        "kind": "ManifestWork",
        "metadata": {"name": name, "namespace": "cluster1"},
        "spec": spec,
    }


def _replica_set(spec: dict[str, Any], name: Any) -> dict[str, Any]:
    # The template is a ManifestWork spec, placement refs as the CRD wants them.
    return {
        "apiVersion": WORK_V1ALPHA1,
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"placementRefs": [{"name": "placement1"}], "manifestWorkTemplate": spec},
    }


def assert_clear(resp: dict[str, Any]) -> None:
    """An allowed answer, or a 4xx denial with a non-empty human message."""
    assert isinstance(resp["allowed"], bool)
    if resp["allowed"]:
        return
    status = resp["status"]
    assert 400 <= status["code"] < 500, status
    assert isinstance(status.get("message"), str) and status["message"].strip(), status


async def _check(rev: dict[str, Any], resource: Any) -> dict[str, Any]:
    """The verdict of ``rev``, identical through the decoded and the body entry points."""
    answer = await validate(rev, sar=RecordingAccess(), options=ALL_GATES, resource=resource)
    resp = response(answer)
    assert_clear(resp)
    body = json.dumps(rev).encode()
    by_body = await validate_json(body, sar=RecordingAccess(), options=ALL_GATES, resource=resource)
    assert response(by_body)["allowed"] == resp["allowed"]
    return resp


@settings(settings.get_profile("hostile"), max_examples=100)
@given(
    spec=hostile_specs(max_manifests=6),
    old_spec=hostile_specs(max_manifests=2),
    name=MAYBE_NAMES,
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]),
    sar_allows=st.booleans(),
)
async def test_hostile_manifestworks_get_a_clear_answer(
    spec: dict[str, Any],
    old_spec: dict[str, Any],
    name: Any,
    operation: str,
    sar_allows: bool,
) -> None:
    new, old = _work(spec, name), _work(old_spec, "old")
    rev = review(
        operation,
        None if operation == "DELETE" else new,
        old if operation != "CREATE" else None,
    )
    resp = await _check(rev, MANIFESTWORK)
    # The executor check's answer changes the verdict, never its clarity.
    answer = await validate(rev, sar=RecordingAccess(allow=sar_allows), options=ALL_GATES)
    assert_clear(response(answer))
    if operation == "CREATE" and resp["allowed"]:
        # Allowed works had manifests that decode as named objects with a kind.
        manifests = spec["workload"]["manifests"]
        assert all(isinstance(m, dict) and m.get("kind") for m in manifests)


@settings(settings.get_profile("hostile"), max_examples=80)
@given(spec=hostile_specs(max_manifests=6), name=NAMES)
async def test_hostile_replicasets_get_a_clear_answer(spec: dict[str, Any], name: str) -> None:
    rev = review(
        "CREATE", _replica_set(spec, name), kind="ManifestWorkReplicaSet", version="v1alpha1"
    )
    await _check(rev, MANIFESTWORK_REPLICASET)


@pytest.fixture
async def webhook(certdir: Path) -> AsyncIterator[WebhookServer]:
    """The HTTPS webhook server with every gate on."""
    settings_ = local_settings(
        certdir,
        feature_gates=frozenset(
            {wire.GATE_MANIFEST_WORK_REPLICA_SET, wire.GATE_NIL_EXECUTOR_VALIDATING}
        ),
    )
    async with running(settings_) as server:
        yield server


@settings(settings.get_profile("hostile"), max_examples=25)
@given(spec=hostile_specs(max_manifests=4), name=MAYBE_NAMES, replica_set=st.booleans())
async def test_hostile_specs_over_https(
    webhook: WebhookServer,
    serving_cert: ServingCert,
    spec: dict[str, Any],
    name: Any,
    replica_set: bool,
) -> None:
    if replica_set:
        obj = _replica_set(spec, name)
        rev = review("CREATE", obj, kind="ManifestWorkReplicaSet", version="v1alpha1")
        path = MWRS_PATH
    else:
        rev, path = review("CREATE", _work(spec, name)), MW_PATH
    code, answer = await post(
        f"https://127.0.0.1:{webhook.port}{path}", rev, client_context(serving_cert)
    )
    assert code == 200, answer
    assert_clear(response(answer))
