"""Builders for AdmissionReviews, works and certificates, and a recording access check."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from hubcontroller.webhook import ExecuteAsRequest
from tests.support.throwaway_pki import PrivateKey, new_key, pem, pem_key, signed_certificate

WORK_GROUP = "work.open-cluster-management.io"
WORK_V1 = f"{WORK_GROUP}/v1"
WORK_V1ALPHA1 = f"{WORK_GROUP}/v1alpha1"
MW_PATH = "/validate-work-open-cluster-management-io-v1-manifestwork"
MWRS_PATH = "/validate-work-open-cluster-management-io-v1alpha1-manifestworkreplicaset"
MW_HOOK = "manifestworkvalidators.admission.work.open-cluster-management.io"
MWRS_HOOK = "manifestworkreplicasetvalidators.admission.work.open-cluster-management.io"
CLUSTER = "cluster1"


def configmap(name: str = "cm1", namespace: str = "default", **extra: Any) -> dict[str, Any]:
    """A ConfigMap manifest."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        **extra,
    }


def executor(namespace: str = "ns1", name: str = "sa1") -> dict[str, Any]:
    """A ServiceAccount executor."""
    return {
        "subject": {
            "type": "ServiceAccount",
            "serviceAccount": {"namespace": namespace, "name": name},
        }
    }


def manifest_work(
    manifests: list[Any] | None = None,
    *,
    name: str = "work1",
    namespace: str = CLUSTER,
    executor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ManifestWork (one ConfigMap unless ``manifests`` is given)."""
    return {
        "apiVersion": WORK_V1,
        "kind": "ManifestWork",
        "metadata": {"name": name, "namespace": namespace},
        "spec": work_spec([configmap()] if manifests is None else manifests, executor),
    }


def work_spec(manifests: list[Any], executor: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ManifestWork's spec (or a ManifestWorkReplicaSet's template): these manifests,
    and the executor if one is given."""
    spec: dict[str, Any] = {"workload": {"manifests": manifests}}
    if executor is not None:
        spec["executor"] = executor
    return spec


def replica_set(
    manifests: list[Any] | None = None,
    *,
    name: str = "mwrs1",
    namespace: str = "default",
    executor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ManifestWorkReplicaSet (one ConfigMap unless ``manifests`` is given)."""
    return {
        "apiVersion": WORK_V1ALPHA1,
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "placementRefs": [{"name": "placement1"}],
            "manifestWorkTemplate": work_spec(
                [configmap()] if manifests is None else manifests, executor
            ),
        },
    }


def registered_hooks(
    client_config: Callable[[str], dict[str, Any]],
    *,
    mw_version: str = "v1",
    operations: tuple[str, ...] = ("CREATE", "UPDATE"),
    review_versions: tuple[str, ...] = ("v1",),
) -> list[dict[str, Any]]:
    """OCM's two webhooks of a ValidatingWebhookConfiguration: ManifestWork (``mw_version``)
    and ManifestWorkReplicaSet (v1alpha1) writes, each sent to ``client_config(path)``;
    failing closed, no side effects, 10 s."""

    def hook(name: str, path: str, version: str, resource: str) -> dict[str, Any]:
        return {
            "name": name,
            "clientConfig": client_config(path),
            "rules": [
                {
                    "operations": list(operations),
                    "apiGroups": [WORK_GROUP],
                    "apiVersions": [version],
                    "resources": [resource],
                }
            ],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "admissionReviewVersions": list(review_versions),
        }

    return [
        hook(MW_HOOK, MW_PATH, mw_version, "manifestworks"),
        hook(MWRS_HOOK, MWRS_PATH, "v1alpha1", "manifestworkreplicasets"),
    ]


def review(
    operation: str,
    obj: Any = None,
    old: Any = None,
    *,
    uid: str = "uid-1",
    username: str = "alice",
    groups: list[str] | None = None,
    extra: dict[str, list[str]] | None = None,
    user_uid: str = "",
    kind: str = "ManifestWork",
    version: str = "v1",
    api_version: str = "admission.k8s.io/v1",
    namespace: str = CLUSTER,
) -> dict[str, Any]:
    """An AdmissionReview request as the API server sends it."""
    user: dict[str, Any] = {"username": username, "groups": groups or ["system:authenticated"]}
    if extra is not None:
        user["extra"] = extra
    if user_uid:
        user["uid"] = user_uid
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": WORK_GROUP, "version": version, "kind": kind},
        "resource": {"group": WORK_GROUP, "version": version, "resource": kind.lower() + "s"},
        "requestKind": {"group": WORK_GROUP, "version": version, "kind": kind},
        "name": "work1",
        "namespace": namespace,
        "operation": operation,
        "userInfo": user,
        "dryRun": False,
    }
    if obj is not None:
        request["object"] = obj
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def response(answer: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` of an answer, checking the envelope on the way."""
    assert answer["kind"] == "AdmissionReview"
    assert set(answer) == {"kind", "apiVersion", "response"}
    resp: dict[str, Any] = answer["response"]
    assert set(resp) == {"uid", "allowed", "status"}
    return resp


def bare_response(answer: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` of an answer to a request that never became a review: Go writes
    it without kind and apiVersion."""
    assert set(answer) == {"response"}
    resp: dict[str, Any] = answer["response"]
    assert set(resp) == {"uid", "allowed", "status"}
    return resp


def allowed(answer: dict[str, Any]) -> bool:
    """True if the answer allows, checking the allowed shape."""
    resp = response(answer)
    if resp["allowed"]:
        assert resp["status"] == {"metadata": {}, "code": 200}
    return bool(resp["allowed"])


def bad_request(message: str) -> dict[str, Any]:
    """The status of an ``apierrors.NewBadRequest`` denial."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def forbidden(message: str) -> dict[str, Any]:
    """The status of a plain-error denial (controller-runtime's ``Denied``)."""
    return {"metadata": {}, "message": message, "reason": "Forbidden", "code": 403}


def errored(message: str, code: int = 400) -> dict[str, Any]:
    """The status of ``admission.Errored``."""
    return {"metadata": {}, "message": message, "code": code}


@dataclass
class RecordingAccess:
    """An access check that records each question and answers ``allow`` (or raises ``error``)."""

    allow: bool = True
    error: Exception | None = None
    asked: list[ExecuteAsRequest] = field(default_factory=list)

    async def __call__(self, request: ExecuteAsRequest) -> bool:
        self.asked.append(request)
        if self.error is not None:
            raise self.error
        return self.allow


@dataclass(frozen=True)
class ServingCert:
    """A self-signed serving certificate (its own CA) and its key, PEM."""

    cert_pem: bytes
    key_pem: bytes
    common_name: str


def make_cert(common_name: str = "webhook", *, key_type: str = "ec") -> ServingCert:
    """A self-signed certificate for 127.0.0.1 and localhost, valid for a day."""
    key: PrivateKey = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if key_type == "rsa"
        else new_key()
    )
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = signed_certificate(
        common_name,
        key,
        (x509.SubjectAlternativeName(names), False),
        (x509.BasicConstraints(ca=True, path_length=None), True),
    )
    return ServingCert(pem(cert), pem_key(key), common_name)


def install_cert(certdir: Path, cert: ServingCert, *, atomic: bool = True) -> None:
    """Write tls.crt and tls.key; ``atomic`` renames new files into place (as a Secret
    volume update does), otherwise the files are rewritten in place."""
    certdir.mkdir(parents=True, exist_ok=True)
    for name, data in (("tls.crt", cert.cert_pem), ("tls.key", cert.key_pem)):
        target = certdir / name
        if atomic:
            tmp = certdir / f".{name}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, target)
        else:
            target.write_bytes(data)
