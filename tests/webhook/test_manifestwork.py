"""hub.md §5.2: the ManifestWork rules, executor checks included, through the pure core."""

from __future__ import annotations

from typing import Any

from hubcontroller.webhook import MANIFESTWORK, ExecuteAsRequest, ValidationOptions, validate
from hubcontroller.webhook.admission import UserInfo
from ocmkit.kube import Forbidden, Unreachable
from ocmkit.kube.access import ServiceAccount
from schemas import wire
from tests.webhook.helpers import (
    CLUSTER,
    RecordingAccess,
    allowed,
    bad_request,
    configmap,
    executor,
    manifest_work,
    response,
    review,
)

NIL_EXECUTOR = ValidationOptions(feature_gates=frozenset({wire.GATE_NIL_EXECUTOR_VALIDATING}))


async def _answer(
    rev: dict[str, Any], access: RecordingAccess, options: ValidationOptions | None = None
) -> dict[str, Any]:
    return await validate(rev, sar=access, options=options, resource=MANIFESTWORK)


async def test_delete_is_always_allowed() -> None:
    access = RecordingAccess(allow=False)
    old = manifest_work([], executor=executor())
    assert allowed(await _answer(review("DELETE", old=old), access, NIL_EXECUTOR))
    assert access.asked == []


async def test_connect_is_allowed_without_an_object() -> None:
    assert allowed(await _answer(review("CONNECT"), RecordingAccess(allow=False)))


async def test_empty_manifests() -> None:
    for operation in ("CREATE", "UPDATE"):
        work = manifest_work([])
        answer = await _answer(review(operation, work, manifest_work()), RecordingAccess())
        assert response(answer)["status"] == bad_request("manifests should not be empty")
    # A work without spec, workload or manifests has none either.
    bare = {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork"}
    answer = await _answer(review("CREATE", bare), RecordingAccess())
    assert response(answer)["status"] == bad_request("manifests should not be empty")


async def test_manifest_rules_apply_on_create_and_update() -> None:
    dup = manifest_work([configmap("a"), configmap("a")])
    message = "duplicate manifest for resource default/a with resource type v1.ConfigMap"
    for rev in (review("CREATE", dup), review("UPDATE", dup, manifest_work())):
        answer = await _answer(rev, RecordingAccess())
        assert response(answer)["status"] == bad_request(message)


async def test_manifests_are_checked_before_the_executor() -> None:
    access = RecordingAccess(allow=False)
    work = manifest_work([configmap("a"), configmap("a")], executor=executor())
    answer = await _answer(review("CREATE", work), access)
    assert "duplicate manifest" in response(answer)["status"]["message"]
    assert access.asked == []


async def test_no_executor_and_gate_off_needs_no_permission() -> None:
    access = RecordingAccess(allow=False)
    assert allowed(await _answer(review("CREATE", manifest_work()), access))
    assert access.asked == []


async def test_no_executor_with_gate_on_checks_the_agent_service_account() -> None:
    access = RecordingAccess(allow=False)
    answer = await _answer(review("CREATE", manifest_work()), access, NIL_EXECUTOR)
    assert response(answer)["status"] == bad_request(
        "user alice cannot manipulate the Manifestwork with executor /klusterlet-work-sa "
        f"in namespace {CLUSTER}"
    )
    (asked,) = access.asked
    assert asked.executor.user == "system:serviceaccount::klusterlet-work-sa"
    access = RecordingAccess(allow=True)
    assert allowed(await _answer(review("CREATE", manifest_work()), access, NIL_EXECUTOR))


async def test_executor_allowed() -> None:
    access = RecordingAccess(allow=True)
    work = manifest_work(executor=executor("ns1", "sa1"))
    assert allowed(await _answer(review("CREATE", work), access))
    assert len(access.asked) == 1


async def test_executor_refused_says_who_cannot_do_what() -> None:
    access = RecordingAccess(allow=False)
    work = manifest_work(executor=executor("ns1", "sa1"))
    answer = await _answer(review("CREATE", work, username="bob"), access)
    assert response(answer) == {
        "uid": "uid-1",
        "allowed": False,
        "status": bad_request(
            f"user bob cannot manipulate the Manifestwork with executor ns1/sa1 in namespace {CLUSTER}"
        ),
    }


async def test_the_review_asks_execute_as_for_the_requesting_user() -> None:
    access = RecordingAccess(allow=True)
    work = manifest_work(executor=executor("ns1", "sa1"))
    rev = review(
        "CREATE",
        work,
        username="alice",
        groups=["team-a", "system:authenticated"],
        extra={"scopes": ["s1", "s2"]},
        user_uid="alice-uid",
    )
    assert allowed(await _answer(rev, access))
    (asked,) = access.asked
    assert asked == ExecuteAsRequest(
        user=UserInfo(
            username="alice",
            uid="alice-uid",
            groups=("team-a", "system:authenticated"),
            extra={"scopes": ("s1", "s2")},
        ),
        namespace=CLUSTER,
        executor=ServiceAccount("ns1", "sa1"),
    )
    assert asked.subject_access_review() == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "namespace": CLUSTER,
                "verb": "execute-as",
                "group": "work.open-cluster-management.io",
                "resource": "manifestworks",
                "name": "system:serviceaccount:ns1:sa1",
            },
            "user": "alice",
            "groups": ["team-a", "system:authenticated"],
            "extra": {"scopes": ["s1", "s2"]},
            "uid": "alice-uid",
        },
    }


async def test_service_account_executor_without_account() -> None:
    access = RecordingAccess()
    work = manifest_work(executor={"subject": {"type": "ServiceAccount"}})
    answer = await _answer(review("CREATE", work), access)
    assert response(answer)["status"] == bad_request("executor service account can not be nil")
    assert access.asked == []
    # An executor without subject at all reads as an empty subject: no account either.
    answer = await _answer(review("CREATE", manifest_work(executor={})), access)
    assert response(answer)["status"] == bad_request("executor service account can not be nil")


async def test_review_failure_is_a_bad_request_with_the_error_text() -> None:
    message = (
        'subjectaccessreviews.authorization.k8s.io is forbidden: User "webhook" cannot create '
        'resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope'
    )
    access = RecordingAccess(error=Forbidden(403, "Forbidden", message))
    answer = await _answer(review("CREATE", manifest_work(executor=executor())), access)
    assert response(answer)["status"] == bad_request(message)
    access = RecordingAccess(error=Unreachable("POST /apis/authorization.k8s.io: refused"))
    answer = await _answer(review("CREATE", manifest_work(executor=executor())), access)
    assert response(answer)["status"] == bad_request("POST /apis/authorization.k8s.io: refused")
    access = RecordingAccess(error=TimeoutError())
    answer = await _answer(review("CREATE", manifest_work(executor=executor())), access)
    assert response(answer)["status"] == bad_request("TimeoutError")


async def test_update_with_unchanged_executor_needs_no_permission() -> None:
    access = RecordingAccess(allow=False)
    old = manifest_work([configmap("a")], executor=executor())
    new = manifest_work([configmap("a"), configmap("b")], executor=executor())
    assert allowed(await _answer(review("UPDATE", new, old), access, NIL_EXECUTOR))
    # Both absent is unchanged too, even with NilExecutorValidating.
    assert allowed(
        await _answer(review("UPDATE", manifest_work(), manifest_work()), access, NIL_EXECUTOR)
    )
    # Unknown fields do not take part in the comparison (Go decodes into the typed struct).
    noisy = executor()
    noisy["subject"]["unknown"] = True
    assert allowed(
        await _answer(review("UPDATE", manifest_work(executor=noisy), old), access, NIL_EXECUTOR)
    )
    assert access.asked == []


async def test_update_changing_the_executor_is_checked() -> None:
    access = RecordingAccess(allow=False)
    old = manifest_work(executor=executor("ns1", "sa1"))
    for new_executor in (executor("ns1", "sa2"), executor("ns2", "sa1")):
        new = manifest_work(executor=new_executor)
        answer = await _answer(review("UPDATE", new, old), access)
        assert not response(answer)["allowed"]
    # Adding an executor to a work without one is a change.
    answer = await _answer(
        review("UPDATE", manifest_work(executor=executor()), manifest_work()), access
    )
    assert not response(answer)["allowed"]
    # So is removing it, when missing executors are checked.
    answer = await _answer(
        review("UPDATE", manifest_work(), manifest_work(executor=executor())), access, NIL_EXECUTOR
    )
    assert "/klusterlet-work-sa" in response(answer)["status"]["message"]
    assert len(access.asked) == 4


async def test_namespace_of_the_work_falls_back_to_the_request() -> None:
    access = RecordingAccess(allow=False)
    work = manifest_work(executor=executor())
    del work["metadata"]["namespace"]
    answer = await _answer(review("CREATE", work, namespace="cluster9"), access)
    assert response(answer)["status"]["message"].endswith("in namespace cluster9")
