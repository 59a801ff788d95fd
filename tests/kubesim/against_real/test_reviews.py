"""Access reviews: RBAC answers, validation, and kubectl creating them.

Scenarios run on kubesim and on the real apiserver at once; see
tests/kubesim/against_real/__init__.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conftest import Kubectl, eventually
from tests.kubesim.truth import Record, Side, namespace, same

pytestmark = pytest.mark.realkube


# -- access reviews ------------------------------------------------------------------------

AUTHZ = "/apis/authorization.k8s.io/v1"


def review(kind: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """An access review body."""
    body: dict[str, Any] = {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec}
    if metadata:
        body["metadata"] = metadata
    return body


async def test_access_reviews(sides: tuple[Side, Side]) -> None:
    """Reviews allowed and denied by RBAC, and the validation of their specs."""
    ns = "reviews"
    reader = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "alice-reads", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
    }
    get_cm = {"namespace": ns, "verb": "get", "resource": "configmaps", "name": "x"}
    cases = [
        (
            "SAR allowed",
            "subjectaccessreviews",
            review("SubjectAccessReview", {"user": "alice", "resourceAttributes": get_cm}),
        ),
        (
            "SAR denied",
            "subjectaccessreviews",
            review("SubjectAccessReview", {"user": "bob", "resourceAttributes": get_cm}),
        ),
        (
            "SAR non-resource",
            "subjectaccessreviews",
            review(
                "SubjectAccessReview",
                {"user": "alice", "nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
            ),
        ),
        ("SAR empty spec", "subjectaccessreviews", review("SubjectAccessReview", {})),
        (
            "SAR both attributes",
            "subjectaccessreviews",
            review(
                "SubjectAccessReview",
                {
                    "user": "alice",
                    "resourceAttributes": get_cm,
                    "nonResourceAttributes": {"path": "/x", "verb": "get"},
                },
            ),
        ),
        (
            "SAR with a name",
            "subjectaccessreviews",
            review(
                "SubjectAccessReview", {"user": "alice", "resourceAttributes": get_cm}, name="named"
            ),
        ),
        (
            "LSAR allowed",
            f"namespaces/{ns}/localsubjectaccessreviews",
            review(
                "LocalSubjectAccessReview",
                {"user": "alice", "resourceAttributes": get_cm},
                namespace=ns,
            ),
        ),
        (
            "LSAR other namespace",
            f"namespaces/{ns}/localsubjectaccessreviews",
            review(
                "LocalSubjectAccessReview",
                {"user": "alice", "resourceAttributes": {**get_cm, "namespace": "elsewhere"}},
            ),
        ),
        (
            "SSAR",
            "selfsubjectaccessreviews",
            review("SelfSubjectAccessReview", {"resourceAttributes": get_cm}),
        ),
        ("SSAR empty", "selfsubjectaccessreviews", review("SelfSubjectAccessReview", {})),
    ]

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        for body in (reader, binding):
            kind = "roles" if body["kind"] == "Role" else "rolebindings"
            path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{kind}"
            assert (await side.call("POST", path, body)).status == 201

        async def granted() -> bool:
            # The real authorizer reads RBAC from an informer: a new binding counts a moment later.
            answer = await side.call("POST", f"{AUTHZ}/{cases[0][1]}", cases[0][2])
            return bool(answer.json.get("status", {}).get("allowed"))

        await eventually(granted, what=f"{side.name} to see the new RoleBinding")
        for step, path, body in cases:
            rec.answer(step, await side.call("POST", f"{AUTHZ}/{path}", body))

    await same(scenario, sides)


# -- kubectl -----------------------------------------------------------------------------

SAR_YAML = """\
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: alice
  resourceAttributes:
    namespace: default
    verb: get
    resource: pods
"""
# kubesim names its OpenAPI definitions after the Python client's model classes, without
# the Go package path the apiserver uses (io.k8s.api.authorization.v1.X): masked.
DEFINITION = re.compile(r"\bio\.k8s\.[a-z0-9.]*?(v\d\w*)\.([A-Z]\w*)")


async def test_kubectl_creates_access_reviews(sides: tuple[Side, Side]) -> None:
    """``kubectl create -f`` of a SubjectAccessReview: kubectl validates it on the
    client with the OpenAPI v2 document (protobuf), then creates it."""

    async def scenario(side: Side, rec: Record) -> None:
        kubectl = Kubectl(side.kubeconfig)
        for step, text in (
            ("valid", SAR_YAML),
            ("unknown field", SAR_YAML.replace("spec:\n", "spec:\n  bogus: 1\n")),
        ):
            done = await kubectl("create", "-f", "-", "-o", "json", stdin=text, check=False)
            rec.add(
                step,
                {
                    "exit": done.returncode,
                    "stdout": json.loads(done.stdout) if done.stdout else "",
                    "stderr": DEFINITION.sub(r"<definition \1.\2>", done.stderr),
                },
            )

    await same(scenario, sides)
