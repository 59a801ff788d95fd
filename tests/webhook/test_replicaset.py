"""hub.md §5.3: the ManifestWorkReplicaSet rules, through the pure core."""

from __future__ import annotations

from typing import Any

from hubcontroller.webhook import MANIFESTWORK_REPLICASET, ValidationOptions, validate
from schemas import wire
from tests.webhook.helpers import (
    RecordingAccess,
    allowed,
    bad_request,
    configmap,
    errored,
    executor,
    forbidden,
    replica_set,
    response,
    review,
)

ON = ValidationOptions(feature_gates=frozenset({wire.GATE_MANIFEST_WORK_REPLICA_SET}))
OFF = ValidationOptions()


def _review(operation: str, obj: Any = None, old: Any = None) -> dict[str, Any]:
    return review(operation, obj, old, kind="ManifestWorkReplicaSet", version="v1alpha1")


async def _answer(rev: dict[str, Any], options: ValidationOptions) -> dict[str, Any]:
    # No resource given: the rules are chosen from request.kind.
    return await validate(rev, sar=RecordingAccess(allow=False), options=options)


async def test_gate_off_denies_every_operation() -> None:
    for rev in (
        _review("CREATE", replica_set()),
        _review("UPDATE", replica_set(), replica_set()),
        _review("DELETE", old=replica_set()),
    ):
        answer = await _answer(rev, OFF)
        assert response(answer) == {
            "uid": "uid-1",
            "allowed": False,
            "status": forbidden("ManifestWorkReplicaSet feature is disabled"),
        }


async def test_gate_on_allows_a_valid_template() -> None:
    assert allowed(await _answer(_review("CREATE", replica_set()), ON))
    assert allowed(await _answer(_review("UPDATE", replica_set(), replica_set()), ON))


async def test_gate_on_allows_delete() -> None:
    assert allowed(await _answer(_review("DELETE", old=replica_set([])), ON))


async def test_template_manifests_are_validated() -> None:
    answer = await _answer(_review("CREATE", replica_set([])), ON)
    assert response(answer)["status"] == bad_request("Workload manifests should not be empty")
    answer = await _answer(
        _review("UPDATE", replica_set([configmap("x"), configmap("x")]), replica_set()), ON
    )
    assert response(answer)["status"] == bad_request(
        "duplicate manifest for resource default/x with resource type v1.ConfigMap"
    )
    template_less = replica_set()
    del template_less["spec"]["manifestWorkTemplate"]
    answer = await _answer(_review("CREATE", template_less), ON)
    assert response(answer)["status"] == bad_request("Workload manifests should not be empty")


async def test_size_limit_applies_to_the_template() -> None:
    options = ValidationOptions(manifest_limit=10, feature_gates=ON.feature_gates)
    answer = await _answer(_review("CREATE", replica_set()), options)
    assert "which exceeds the 10 limit" in response(answer)["status"]["message"]


async def test_template_executor_is_not_checked_here() -> None:
    access = RecordingAccess(allow=False)
    mwrs = replica_set()
    mwrs["spec"]["manifestWorkTemplate"]["executor"] = executor()
    answer = await validate(_review("CREATE", mwrs), sar=access, options=ON)
    assert allowed(answer)
    assert access.asked == []


async def test_explicit_resource_overrides_request_kind() -> None:
    rev = _review("CREATE", replica_set())
    rev["request"].pop("kind")
    answer = await validate(
        rev, sar=RecordingAccess(), options=ON, resource=MANIFESTWORK_REPLICASET
    )
    assert allowed(answer)


def _rollout(strategy: dict[str, Any]) -> dict[str, Any]:
    mwrs = replica_set()
    mwrs["spec"]["placementRefs"] = [{"name": "placement1", "rolloutStrategy": strategy}]
    return mwrs


async def test_what_go_types_cannot_read_is_refused() -> None:
    """minSuccessTime is a metav1.Duration and groupIndex an int32 in OCM's types: the
    CRD lets through what they cannot hold, OCM's decoder refuses it (code 400)."""
    for value, message in (
        ("abc", 'time: invalid duration "abc"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("", 'time: invalid duration ""'),
        ("5", 'time: missing unit in duration "5"'),
    ):
        for block in ("all", "progressive", "progressivePerGroup"):
            mwrs = _rollout({"type": "All", block: {"minSuccessTime": value}})
            for rev in (_review("CREATE", mwrs), _review("DELETE", old=mwrs)):
                assert response(await _answer(rev, ON))["status"] == errored(message)
    for value in ("-1s", "1h30m", ".5s", "0"):
        mwrs = _rollout({"type": "All", "all": {"minSuccessTime": value}})
        assert allowed(await _answer(_review("CREATE", mwrs), ON))

    groups = [{"groupIndex": 1 << 40}]
    mwrs = _rollout({"type": "Progressive", "progressive": {"mandatoryDecisionGroups": groups}})
    assert response(await _answer(_review("CREATE", mwrs), ON))["status"] == errored(
        "json: cannot unmarshal number 1099511627776 into Go struct field MandatoryDecisionGroup."
        "spec.placementRefs.rolloutStrategy.progressive.mandatoryDecisionGroups.groupIndex "
        "of type int32"
    )
    # A Duration's error stops Go's decoder at once: it wins over a saved range error.
    both = {"mandatoryDecisionGroups": groups, "minSuccessTime": "1x"}
    mwrs = _rollout({"type": "ProgressivePerGroup", "progressivePerGroup": both})
    assert response(await _answer(_review("CREATE", mwrs), ON))["status"] == errored(
        'time: unknown unit "x" in duration "1x"'
    )


async def test_int_or_string_beyond_int32_is_refused_at_once() -> None:
    """maxFailures and maxConcurrency are IntOrString in OCM's types: an int32 inside, whose
    own decoding fails (and stops Go's decoder) beyond int32, where the CRD lets it through."""
    holders = {
        "all": "RolloutAll",
        "progressive": "RolloutProgressive",
        "progressivePerGroup": "RolloutProgressivePerGroup",
    }
    for block, holder in holders.items():
        fields = ("maxFailures", "maxConcurrency") if block == "progressive" else ("maxFailures",)
        for field in fields:
            for value in (1 << 31, -(1 << 31) - 1, 10**20):
                mwrs = _rollout({"type": "All", block: {field: value}})
                for rev in (_review("CREATE", mwrs), _review("DELETE", old=mwrs)):
                    assert response(await _answer(rev, ON))["status"] == errored(
                        f"json: cannot unmarshal number {value} into Go struct field {holder}."
                        f"spec.placementRefs.rolloutStrategy.{block}.{field} of type int32"
                    )
            for fits in ((1 << 31) - 1, -(1 << 31), "2147483648", "50%"):
                mwrs = _rollout({"type": "All", block: {field: fits}})
                assert allowed(await _answer(_review("CREATE", mwrs), ON))
    # It stops the decoder, so it wins over a range error saved before it.
    both = {"mandatoryDecisionGroups": [{"groupIndex": 1 << 40}], "maxConcurrency": 1 << 31}
    mwrs = _rollout({"type": "Progressive", "progressive": both})
    assert (
        "RolloutProgressive.spec.placementRefs.rolloutStrategy.progressive.maxConcurrency"
        in (response(await _answer(_review("CREATE", mwrs), ON))["status"]["message"])
    )
