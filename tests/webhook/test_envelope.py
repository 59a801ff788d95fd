"""The AdmissionReview envelope: versions, uid echo, malformed input (never a crash)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from hubcontroller.webhook import (
    MANIFESTWORK,
    MANIFESTWORK_REPLICASET,
    AdmissionValidator,
    ValidationOptions,
    validate,
    validate_json,
)
from schemas import wire
from tests.webhook.helpers import (
    RecordingAccess,
    allowed,
    bare_response,
    configmap,
    errored,
    executor,
    manifest_work,
    response,
    review,
)

ALL_GATES = ValidationOptions(
    feature_gates=frozenset(
        {wire.GATE_MANIFEST_WORK_REPLICA_SET, wire.GATE_NIL_EXECUTOR_VALIDATING}
    )
)


async def _answer(rev: Any, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("sar", RecordingAccess())
    return await validate(rev, **kwargs)


async def test_v1_answer_echoes_uid_and_version() -> None:
    answer = await _answer(review("CREATE", manifest_work(), uid="abc-123"))
    assert answer == {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "response": {"uid": "abc-123", "allowed": True, "status": {"metadata": {}, "code": 200}},
    }


async def test_v1beta1_is_answered_in_v1beta1() -> None:
    rev = review("CREATE", manifest_work(), api_version="admission.k8s.io/v1beta1", uid="b1")
    answer = await _answer(rev)
    assert answer["apiVersion"] == "admission.k8s.io/v1beta1"
    assert response(answer)["uid"] == "b1"
    denied = review("CREATE", manifest_work([]), api_version="admission.k8s.io/v1beta1")
    answer = await _answer(denied)
    assert answer["apiVersion"] == "admission.k8s.io/v1beta1"
    assert not response(answer)["allowed"]


async def test_missing_api_version_and_kind_read_as_v1() -> None:
    rev = review("CREATE", manifest_work())
    del rev["apiVersion"], rev["kind"]
    answer = await _answer(rev)
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert allowed(answer)


async def test_malformed_reviews_get_a_400_answer() -> None:
    # No JSON object at all: Go cannot decode it, and answers without kind and apiVersion.
    assert bare_response(await _answer([]))["status"] == errored(
        "couldn't decode the AdmissionReview: expected a JSON object, got array"
    )
    cases: list[tuple[Any, str, str]] = [
        ({"apiVersion": "admission.k8s.io/v2", "request": {"uid": "u"}}, "u",
         'unsupported AdmissionReview apiVersion "admission.k8s.io/v2": '
         "expected admission.k8s.io/v1 or admission.k8s.io/v1beta1"),
        ({"kind": "ConfigMap", "request": {}}, "", 'expected an AdmissionReview, got kind "ConfigMap"'),
        # Go decodes into an empty request made beforehand: its operation is "".
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "",
         'unknown operation ""'),
        ({"request": None}, "", 'unknown operation ""'),
        ({"request": "x"}, "", "request: expected an object, got string"),
        ({"request": {"uid": "u", "operation": 5}}, "u", "request.operation: expected a string, got number"),
        ({"request": {"uid": "u", "userInfo": {"groups": "g"}}}, "u",
         "request.userInfo.groups: expected a list of strings"),
        ({"request": {"uid": "u", "userInfo": {"extra": {"k": [1]}}}}, "u",
         "request.userInfo.extra.k: expected a list of strings"),
        ({"request": {"uid": "u", "operation": "CREATE"}}, "u",
         "request.kind is missing: cannot tell which rules apply"),
        ({"request": {"uid": "u", "operation": "CREATE",
                      "kind": {"group": "", "version": "v1", "kind": "ConfigMap"}}}, "u",
         "no validating webhook for v1 ConfigMap"),
    ]  # fmt: skip
    for rev, uid, message in cases:
        answer = await _answer(rev)
        assert answer["apiVersion"] == "admission.k8s.io/v1"
        assert response(answer) == {"uid": uid, "allowed": False, "status": errored(message)}, rev


async def test_unknown_operation() -> None:
    answer = await _answer(review("PATCH", manifest_work(), uid="u9"))
    assert response(answer) == {
        "uid": "u9",
        "allowed": False,
        "status": errored('unknown operation "PATCH"'),
    }


async def test_missing_objects() -> None:
    for rev in (review("CREATE"), review("UPDATE", manifest_work()), review("DELETE")):
        answer = await _answer(rev, resource=MANIFESTWORK)
        assert response(answer)["status"] == errored("there is no content to decode")


async def test_object_of_another_kind() -> None:
    answer = await _answer(review("CREATE", configmap()), resource=MANIFESTWORK)
    assert response(answer)["status"] == errored(
        "unable to decode v1, Kind=ConfigMap into work.open-cluster-management.io/v1, Kind=ManifestWork"
    )
    # A replica set sent to the ManifestWork path.
    rev = review("CREATE", {"apiVersion": "work.open-cluster-management.io/v1alpha1",
                            "kind": "ManifestWorkReplicaSet"})  # fmt: skip
    answer = await _answer(rev, resource=MANIFESTWORK)
    assert not response(answer)["allowed"]
    assert response(answer)["status"]["code"] == 400


async def test_missing_type_defaults_to_the_webhook_type() -> None:
    work = manifest_work()
    del work["apiVersion"], work["kind"]
    assert allowed(await _answer(review("CREATE", work), resource=MANIFESTWORK))


async def test_wrongly_typed_fields_are_decoder_errors() -> None:
    def with_spec(spec: Any) -> dict[str, Any]:
        work = manifest_work()
        work["spec"] = spec
        return work

    cases = [
        (with_spec("x"), "json: cannot unmarshal string into Go struct field "
         "ManifestWork.spec of type v1.ManifestWorkSpec"),
        (with_spec({"workload": {"manifests": {"a": 1}}}), "json: cannot unmarshal object into "
         "Go struct field ManifestsTemplate.spec.workload.manifests of type []v1.Manifest"),
        (with_spec({"workload": [1]}), "json: cannot unmarshal array into Go struct field "
         "ManifestWorkSpec.spec.workload of type v1.ManifestsTemplate"),
        (with_spec({"workload": {"manifests": [configmap()]}, "executor": {"subject": {"type": 1}}}),
         "json: cannot unmarshal number into Go struct field "
         "ManifestWorkExecutorSubject.spec.executor.subject.type "
         "of type v1.ManifestWorkExecutorSubjectType"),
        (with_spec({"workload": {"manifests": [configmap()]},
                    "executor": {"subject": {"serviceAccount": {"name": False}}}}),
         "json: cannot unmarshal bool into Go struct field "
         "ManifestWorkSubjectServiceAccount.spec.executor.subject.serviceAccount.name of type string"),
        ({**manifest_work(), "metadata": {"namespace": 1}}, "json: cannot unmarshal number into "
         "Go struct field ObjectMeta.metadata.namespace of type string"),
        ({**manifest_work(), "metadata": []}, "json: cannot unmarshal array into Go struct field "
         "ManifestWork.metadata of type v1.ObjectMeta"),
        ("a string", "couldn't decode the object as a ManifestWork: expected a JSON object, got string"),
    ]  # fmt: skip
    for obj, message in cases:
        answer = await _answer(review("CREATE", obj), resource=MANIFESTWORK)
        assert response(answer)["status"] == errored(message), obj
    # Go's struct names in these messages are checked against OCM's webhook in
    # tests/peers/test_webhook_side_by_side.py. Nulls read as absent, as in Go.
    nulls = with_spec({"workload": {"manifests": [configmap()]}, "executor": None})
    assert allowed(await _answer(review("CREATE", nulls), resource=MANIFESTWORK))


def _ordinal(value: int) -> dict[str, Any]:
    work = manifest_work()
    meta = {"ordinal": value, "version": "v1", "kind": "ConfigMap", "name": "cm"}
    work["status"] = {"resourceStatus": {"manifests": [{"resourceMeta": meta}]}}
    return work


async def test_what_go_types_cannot_hold_is_refused() -> None:
    """The CRD does not bound int32 fields; Go's decoder does (hub.md §4: a 400)."""
    for value in (1 << 31, -(1 << 31) - 1, 1 << 40):
        for rev in (
            review("CREATE", _ordinal(value)),
            review("UPDATE", manifest_work(), _ordinal(value)),
        ):
            answer = await _answer(rev, resource=MANIFESTWORK)
            assert response(answer)["status"] == errored(
                f"json: cannot unmarshal number {value} into Go struct field "
                "ManifestResourceMeta.status.resourceStatus.manifests.resourceMeta.ordinal "
                "of type int32"
            )
    for value in ((1 << 31) - 1, -(1 << 31), 0):
        assert allowed(await _answer(review("CREATE", _ordinal(value)), resource=MANIFESTWORK))
    # A type error saved earlier in the document comes first, as in Go.
    both = _ordinal(1 << 40)
    both["metadata"]["name"] = 5
    answer = await _answer(review("CREATE", both), resource=MANIFESTWORK)
    assert "ObjectMeta.metadata.name" in response(answer)["status"]["message"]


async def test_json_body_errors() -> None:
    access = RecordingAccess()
    for body, message in (
        (b"", "couldn't decode the AdmissionReview: Expecting value: line 1 column 1 (char 0)"),
        (b"{", "couldn't decode the AdmissionReview: Expecting property name enclosed in "
         "double quotes: line 1 column 2 (char 1)"),
        (b'{"a":1} x', "couldn't decode the AdmissionReview: Extra data: line 1 column 9 (char 8)"),
        (b'{"a":NaN}', "couldn't decode the AdmissionReview: invalid JSON value NaN: "
         "line 1 column 6 (char 5)"),
        # Invalid UTF-8 reads as U+FFFD (as in Go), which is no JSON outside a string.
        (b"\xff", "couldn't decode the AdmissionReview: Expecting value: line 1 column 1 "
         "(char 0)"),
    ):  # fmt: skip
        answer = await validate_json(body, sar=access)
        # Go answers a body it cannot decode without kind and apiVersion.
        assert bare_response(answer) == {"uid": "", "allowed": False, "status": errored(message)}


async def test_strings_read_as_go_reads_them() -> None:
    """Invalid UTF-8 and lone UTF-16 surrogates in strings are U+FFFD (Go's decoder), so
    the answer can be written, and two names that differ only there are duplicates."""
    access = RecordingAccess(allow=False)
    rev = review("CREATE", manifest_work(executor=executor("ns1", "sa1")), uid="\udc00")
    rev["request"]["userInfo"]["username"] = "\ud800"
    body = json.dumps(rev)  # ASCII, with the surrogates as \u escapes
    assert "\\ud800" in body
    answer = await validate_json(body.encode(), sar=access)
    assert response(answer)["uid"] == "\ufffd"
    assert "user \ufffd cannot manipulate" in response(answer)["status"]["message"]
    json.dumps(answer, ensure_ascii=False).encode()  # no lone surrogate left to fail on

    manifests = [configmap("\ud800"), configmap("\ud801")]
    body = json.dumps(review("CREATE", manifest_work(manifests=manifests)))
    answer = await validate_json(body.encode(), sar=access)
    assert response(answer)["status"]["message"] == (
        "duplicate manifest for resource default/\ufffd with resource type v1.ConfigMap"
    )
    # Invalid UTF-8 is U+FFFD byte by byte, as in Go: a cut 3-byte sequence is two.
    raw = json.dumps(review("CREATE", manifest_work(manifests=[configmap("a"), configmap("b")])))
    raw_bytes = raw.encode().replace(b'"name": "a"', b'"name": "\xe2\x82"')
    raw_bytes = raw_bytes.replace(b'"name": "b"', b'"name": "\xef\xbf\xbd\xef\xbf\xbd"')
    assert response(await validate_json(raw_bytes, sar=access))["status"]["message"] == (
        "duplicate manifest for resource default/\ufffd\ufffd with resource type v1.ConfigMap"
    )


async def test_deep_nesting_gets_an_answer() -> None:
    """Nesting past Python's stack is a 400 answer, with or without a surrogate to replace."""
    for depth, leaf in ((600, '"\\ud800"'), (5000, "1")):
        nested = "[" * depth + leaf + "]" * depth
        work = json.dumps(manifest_work(manifests=[configmap("a", data={"k": "v"})]))
        body = json.dumps(review("CREATE", json.loads(work))).replace('"v"', nested)
        answer = await validate_json(body.encode(), sar=RecordingAccess())
        status = response(answer)["status"] if "kind" in answer else bare_response(answer)["status"]
        assert status["code"] in (200, 400), status


async def test_internal_errors_are_a_500_answer_not_a_crash() -> None:
    class Exploding(Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise RuntimeError("boom")

        def __iter__(self) -> Iterator[str]:
            return iter(["request"])

        def __len__(self) -> int:
            return 1

    panics = REGISTRY.get_sample_value("controller_runtime_webhook_panics_total") or 0.0
    answer = await validate(Exploding(), sar=RecordingAccess())
    assert response(answer) == {
        "uid": "",
        "allowed": False,
        "status": errored("internal error: RuntimeError('boom')", 500),
    }
    # Counted as controller-runtime counts a recovered panic.
    assert REGISTRY.get_sample_value("controller_runtime_webhook_panics_total") == panics + 1


async def test_validator_reports_the_verdict() -> None:
    validator = AdmissionValidator(ValidationOptions(), RecordingAccess(allow=False))
    verdict = await validator.review(review("CREATE", manifest_work(executor=executor()), uid="v1"))
    assert (verdict.allowed, verdict.code, verdict.operation, verdict.uid) == (
        False,
        400,
        "CREATE",
        "v1",
    )
    assert verdict.message.startswith("user alice cannot manipulate")


# -- never a crash, whatever arrives ------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(
    ["request", "object", "oldObject", "spec", "workload", "manifests", "executor", "subject",
     "serviceAccount", "metadata", "name", "namespace", "kind", "apiVersion", "operation", "uid",
     "userInfo", "groups", "extra", "manifestWorkTemplate", "type", "generateName"]
)  # fmt: skip
_shaped = st.recursive(
    _scalars | st.sampled_from(["CREATE", "UPDATE", "DELETE", "ServiceAccount", "ConfigMap"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_keys, children, max_size=6),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(review=_json | _shaped)
async def test_any_json_gets_an_answer(review: Any) -> None:
    for resource in (None, MANIFESTWORK, MANIFESTWORK_REPLICASET):
        answer = await validate(review, sar=RecordingAccess(), options=ALL_GATES, resource=resource)
        resp = response(answer) if isinstance(review, dict) else bare_response(answer)
        assert isinstance(resp["allowed"], bool)
        assert resp["status"]["code"] != 500, resp
        # And through the body path too, with the same verdict.
        body = json.dumps(review).encode()
        assert (
            await validate_json(body, sar=RecordingAccess(), options=ALL_GATES, resource=resource)
            == answer
        )
