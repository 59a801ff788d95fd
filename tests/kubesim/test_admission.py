"""Validating admission webhooks called by kubesim, end to end.

A small HTTPS webhook (aiohttp, certificates from a throwaway CA) is
registered with ValidatingWebhookConfigurations by URL and by service
reference; the tests drive kubesim with plain HTTP, kubernetes_asyncio and
kubectl and check what the webhook received and what the clients saw.
Nothing waits on time except the timeout test, which waits for kubesim's own
one-second webhook deadline.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import functools
import ipaddress
import json
import socket
import ssl
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim.sim import KubeSim
from tests.conftest import Kubectl, Raw
from tests.support.crds import crd
from tests.support.manifests import deployment

CONFIGS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
ADMIN_GROUPS = ["system:masters", "system:authenticated"]
CM_RULES = [
    {
        "operations": ["CREATE", "UPDATE", "DELETE"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["configmaps"],
    }
]
SERVICE_NAME = "webhook.hooks.svc"
Decide = Callable[[dict[str, Any]], dict[str, Any] | None]


# -- certificates -------------------------------------------------------------------
@dataclass(frozen=True)
class Pki:
    """A CA and a webhook serving certificate it signed (PEM)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @property
    def ca_bundle(self) -> str:
        """The CA as a webhook configuration's ``caBundle``."""
        return base64.b64encode(self.ca_pem).decode()


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@functools.cache
def _pki(ca_name: str = "kubesim-test-ca") -> Pki:
    """A CA and a certificate for the service name, localhost and 127.0.0.1 (cached)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt = x509.SubjectAlternativeName(
        [
            x509.DNSName(SERVICE_NAME),
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("webhook"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(alt, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Pki(
        ca.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


# -- the webhook ----------------------------------------------------------------------
def deny_marked(request: dict[str, Any]) -> dict[str, Any] | None:
    """Deny objects (or, on DELETE, old objects) whose data has ``deny: "yes"``."""
    obj = request.get("object") or request.get("oldObject") or {}
    if (obj.get("data") or {}).get("deny") == "yes":
        return {"message": 'data.deny is "yes"'}
    return None


@dataclass
class Webhook:
    """The test webhook: records every review and answers by path.

    ``/validate`` denies what ``decide`` returns a Status for; ``/forbid`` does
    the same with code 403 and reason Forbidden; ``/warn`` allows with
    warnings; ``/hang`` never answers; ``/baduid`` answers with a wrong uid.
    ``before`` runs before answering (to change the cluster meanwhile).
    """

    port: int
    pki: Pki
    reviews: list[dict[str, Any]] = field(default_factory=list)
    decide: Decide = deny_marked
    before: Callable[[dict[str, Any]], Awaitable[None]] | None = None
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str = "/validate") -> str:
        """The webhook's URL for ``path``."""
        return f"https://127.0.0.1:{self.port}{path}"

    def requests(self) -> list[dict[str, Any]]:
        """The ``request`` of every review received, in order."""
        return [r["request"] for r in self.reviews]

    async def handle(self, http: web.Request) -> web.Response:
        """Answer one AdmissionReview."""
        review = await http.json()
        self.reviews.append(review)
        request = review["request"]
        if http.path == "/hang":
            await self.release.wait()
        if self.before is not None:
            await self.before(request)
        answer: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        if http.path == "/baduid":
            answer["uid"] = "nope"
        if http.path == "/warn":
            answer["warnings"] = ["configmaps here are audited", "and logged"]
        status = self.decide(request)
        if status is not None:
            if http.path == "/forbid":
                status = {**status, "code": 403, "reason": "Forbidden"}
            answer = {**answer, "allowed": False, "status": status}
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
        )


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[Webhook]:
    """The test webhook, serving HTTPS on a free loopback port."""
    pki = _pki()
    (tmp_path / "tls.crt").write_bytes(pki.cert_pem)
    (tmp_path / "tls.key").write_bytes(pki.key_pem)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    hook = Webhook(sock.getsockname()[1], pki)
    app = web.Application()

    async def route(http: web.Request) -> web.Response:
        # Through the attribute, so a test can substitute its own handler.
        return await hook.handle(http)

    app.router.add_post("/{path:.*}", route)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    await web.SockSite(runner, sock, ssl_context=ctx).start()
    try:
        yield hook
    finally:
        hook.release.set()
        await runner.cleanup()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections (bound, never listening)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


# -- helpers ------------------------------------------------------------------------
def by_url(hook: Webhook, path: str = "/validate") -> dict[str, Any]:
    """A clientConfig reaching the webhook by URL."""
    return {"url": hook.url(path), "caBundle": hook.pki.ca_bundle}


def by_service(hook: Webhook, name: str = "webhook", path: str = "/validate") -> dict[str, Any]:
    """A clientConfig reaching the webhook through service ``hooks/<name>``."""
    return {
        "service": {"namespace": "hooks", "name": name, "path": path},
        "caBundle": hook.pki.ca_bundle,
    }


def webhook_spec(name: str, client_config: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """One webhook of a configuration: ConfigMap writes, no side effects, v1 reviews."""
    return {
        "name": name,
        "clientConfig": client_config,
        "rules": CM_RULES,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **fields,
    }


async def register(raw: Raw, name: str, *webhooks: dict[str, Any]) -> None:
    """Create a ValidatingWebhookConfiguration."""
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(webhooks),
    }
    code, answer = await raw.request("POST", CONFIGS, body)
    assert code == 201, answer


async def namespace(raw: Raw, name: str, **labels: str) -> None:
    """Create a namespace with ``labels``."""
    code, answer = await raw.request(
        "POST", "/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}}
    )
    assert code == 201, answer


def cm(name: str, deny: str = "no", **labels: str) -> dict[str, Any]:
    """A ConfigMap whose ``data.deny`` says whether the webhook refuses it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"deny": deny},
    }


def cms(ns: str, name: str = "") -> str:
    """The URL of configmaps in ``ns`` (or of one of them)."""
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


async def service_for(raw: Raw, hook: Webhook, name: str = "webhook") -> None:
    """Service ``hooks/<name>`` on port 443, its Endpoints pointing at the webhook."""
    svc = {
        "metadata": {"name": name},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hook.port}]},
    }
    code, answer = await raw.request("POST", "/api/v1/namespaces/hooks/services", svc)
    assert code == 201, answer
    endpoints = {
        "metadata": {"name": name},
        "subsets": [
            {
                "addresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": "https", "port": hook.port}],
            }
        ],
    }
    code, answer = await raw.request("POST", "/api/v1/namespaces/hooks/endpoints", endpoints)
    assert code == 201, answer


def denied(webhook_name: str, code: int = 400, **extra: Any) -> dict[str, Any]:
    """The Status kube-apiserver answers for a webhook's denial of deny=yes."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'admission webhook "{webhook_name}" denied the request: data.deny is "yes"',
        **extra,
        "code": code,
    }


def failed(webhook_name: str, why: str) -> dict[str, Any]:
    """The Status of a webhook that could not be called under failurePolicy Fail."""
    cause = f'failed calling webhook "{webhook_name}": {why}'
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {cause}",
        "reason": "InternalError",
        "details": {"causes": [{"message": cause}]},
        "code": 500,
    }


# -- tests -----------------------------------------------------------------------------
async def test_url_webhook_allows_and_denies(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    await register(raw, "deny", webhook_spec("deny.kubesim.test", by_url(webhook)))
    code, body = await raw.request("POST", cms("hooks"), cm("fine"))
    assert code == 201, body
    code, body = await raw.request("POST", cms("hooks"), cm("bad", "yes"))
    assert (code, body) == (400, denied("deny.kubesim.test"))
    code, _ = await raw.request("GET", cms("hooks", "bad"))
    assert code == 404
    assert [r["name"] for r in webhook.requests()] == ["fine", "bad"]


async def test_review_request_fields_on_create(sim: KubeSim, raw: Raw, webhook: Webhook) -> None:
    """The AdmissionReview carries what kube-apiserver sends, for the caller's identity."""
    await namespace(raw, "hooks")
    await register(raw, "deny", webhook_spec("deny.kubesim.test", by_url(webhook)))
    token = sim.add_user("alice", groups=("team-a",))
    alice = Raw(raw.session, raw.base, token)
    code, stored = await alice.request(
        "POST", cms("hooks") + "?fieldManager=alice-tool&fieldValidation=Strict", cm("c1")
    )
    assert code == 201, stored
    [review] = webhook.reviews
    assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    request = dict(review["request"])
    uuid.UUID(request.pop("uid"))
    obj = request.pop("object")
    assert request == {
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
        "name": "c1",
        "namespace": "hooks",
        "operation": "CREATE",
        "userInfo": {"username": "alice", "groups": ["team-a", "system:authenticated"]},
        "oldObject": None,
        "dryRun": False,
        "options": {
            "kind": "CreateOptions",
            "apiVersion": "meta.k8s.io/v1",
            "fieldManager": "alice-tool",
            "fieldValidation": "Strict",
        },
    }
    # The object as it will be stored: defaulted, managed fields, no resourceVersion yet.
    assert obj["data"] == {"deny": "no"}
    assert obj["metadata"]["namespace"] == "hooks"
    assert obj["metadata"]["managedFields"][0]["manager"] == "alice-tool"
    assert "resourceVersion" not in obj["metadata"]
    assert obj["metadata"]["creationTimestamp"]


async def test_service_reference_resolved_through_endpoints(
    raw: Raw, webhook: Webhook, api_client: client.ApiClient
) -> None:
    await namespace(raw, "hooks")
    await service_for(raw, webhook)
    await register(raw, "deny", webhook_spec("deny.kubesim.test", by_service(webhook)))
    core = client.CoreV1Api(api_client)
    await core.create_namespaced_config_map("hooks", cm("fine"))
    with pytest.raises(ApiException) as exc:
        await core.create_namespaced_config_map("hooks", cm("bad", "yes"))
    assert exc.value.status == 400
    assert json.loads(exc.value.body or b"") == denied("deny.kubesim.test")
    assert [r["operation"] for r in webhook.requests()] == ["CREATE", "CREATE"]


async def test_kubectl_sees_denials_and_warnings(
    raw: Raw, webhook: Webhook, kubectl: Kubectl
) -> None:
    await namespace(raw, "hooks")
    await register(
        raw,
        "deny",
        webhook_spec("deny.kubesim.test", by_url(webhook)),
        webhook_spec("audit.kubesim.test", by_url(webhook, "/warn"), failurePolicy="Ignore"),
    )
    manifest = json.dumps(cm("bad", "yes"))
    result = await kubectl("create", "-n", "hooks", "-f", "-", stdin=manifest, check=False)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert "Warning: configmaps here are audited" in lines
    assert (
        'Error from server: error when creating "STDIN": admission webhook "deny.kubesim.test" '
        'denied the request: data.deny is "yes"'
    ) in lines
    result = await kubectl("apply", "-n", "hooks", "-f", "-", stdin=json.dumps(cm("fine")))
    assert "configmap/fine created" in result.stdout
    assert result.stderr.splitlines() == [
        "Warning: configmaps here are audited",
        "Warning: and logged",
    ]


async def test_denial_status_code_reason_and_warning_headers(
    sim: KubeSim, raw: Raw, webhook: Webhook
) -> None:
    await namespace(raw, "hooks")
    await register(
        raw,
        "forbid",
        webhook_spec("forbid.kubesim.test", by_url(webhook, "/forbid")),
        webhook_spec("warn.kubesim.test", by_url(webhook, "/warn")),
    )
    code, body = await raw.request("POST", cms("hooks"), cm("bad", "yes"))
    assert (code, body) == (403, denied("forbid.kubesim.test", 403, reason="Forbidden"))
    url = sim.url + cms("hooks")
    async with raw.session.post(url, json=cm("good")) as resp:
        assert resp.status == 201
        assert resp.headers.getall("Warning") == [
            '299 - "configmaps here are audited"',
            '299 - "and logged"',
        ]
    # A refused request still carries the warnings given meanwhile.
    async with raw.session.post(url, json=cm("worse", "yes")) as resp:
        assert resp.status == 403
        assert len(resp.headers.getall("Warning")) == 2


async def test_update_patch_apply_and_delete_are_reviewed(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    code, _ = await raw.request("POST", cms("hooks"), cm("kept", "yes"))
    assert code == 201
    await register(raw, "deny", webhook_spec("deny.kubesim.test", by_url(webhook)))
    _, before = await raw.request("GET", cms("hooks", "kept"))

    # DELETE: no object, the stored object as oldObject, the DeleteOptions sent.
    code, body = await raw.request(
        "DELETE", cms("hooks", "kept"), {"propagationPolicy": "Background"}
    )
    assert (code, body) == (400, denied("deny.kubesim.test"))
    request = webhook.requests()[-1]
    assert request["operation"] == "DELETE" and request["name"] == "kept"
    assert request["object"] is None and request["oldObject"] == before
    assert request["options"] == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
        "propagationPolicy": "Background",
    }
    code, after = await raw.request("GET", cms("hooks", "kept"))
    assert code == 200 and after == before

    # PUT: UPDATE with both objects; a denied update changes nothing.
    code, _ = await raw.request("POST", cms("hooks"), cm("c1"))
    _, old = await raw.request("GET", cms("hooks", "c1"))
    new = {**old, "data": {"deny": "yes"}}
    code, body = await raw.request("PUT", cms("hooks", "c1"), new)
    assert (code, body) == (400, denied("deny.kubesim.test"))
    request = webhook.requests()[-1]
    assert request["operation"] == "UPDATE"
    assert request["oldObject"] == old and request["object"]["data"] == {"deny": "yes"}
    assert request["options"] == {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
    _, unchanged = await raw.request("GET", cms("hooks", "c1"))
    assert unchanged == old

    # A merge patch is an UPDATE admitted with UpdateOptions.
    code, body = await raw.request(
        "PATCH",
        cms("hooks", "c1") + "?fieldManager=patcher",
        {"data": {"extra": "1"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, body
    request = webhook.requests()[-1]
    assert request["operation"] == "UPDATE"
    assert request["object"]["data"] == {"deny": "no", "extra": "1"}
    assert request["object"]["metadata"]["resourceVersion"] == old["metadata"]["resourceVersion"]
    assert request["options"] == {
        "kind": "UpdateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "patcher",
    }

    # Server-side apply creating an object is a CREATE with CreateOptions.
    applied = json.dumps(cm("applied"))
    code, body = await raw.request(
        "PATCH",
        cms("hooks", "applied") + "?fieldManager=applier",
        raw=applied.encode(),
        content_type="application/apply-patch+yaml",
    )
    assert code == 201, body
    request = webhook.requests()[-1]
    assert request["operation"] == "CREATE" and request["oldObject"] is None
    assert request["options"]["kind"] == "CreateOptions"
    denied_apply = json.dumps(cm("applied", "yes"))
    code, body = await raw.request(
        "PATCH",
        cms("hooks", "applied") + "?fieldManager=applier",
        raw=denied_apply.encode(),
        content_type="application/apply-patch+yaml",
    )
    assert (code, body) == (400, denied("deny.kubesim.test"))
    assert webhook.requests()[-1]["operation"] == "UPDATE"

    # An allowed DELETE goes through.
    code, body = await raw.request("DELETE", cms("hooks", "c1"))
    assert code == 200 and body["status"] == "Success"


async def test_deletecollection_admits_each_item(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    for obj in (cm("a"), cm("b", "yes"), cm("c")):
        code, _ = await raw.request("POST", cms("hooks"), obj)
        assert code == 201
    await register(raw, "deny", webhook_spec("deny.kubesim.test", by_url(webhook)))
    code, body = await raw.request("DELETE", cms("hooks"))
    assert (code, body) == (400, denied("deny.kubesim.test"))
    _, listed = await raw.request("GET", cms("hooks"))
    assert [i["metadata"]["name"] for i in listed["items"]] == ["b"]
    requests = webhook.requests()
    assert [r["oldObject"]["metadata"]["name"] for r in requests] == ["a", "b", "c"]
    # kube-apiserver names no object in the admission of a collection's items.
    assert all("name" not in r and r["operation"] == "DELETE" for r in requests)


async def test_namespace_selector(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "open")
    await namespace(raw, "guarded", webhooks="on")
    await register(
        raw,
        "deny",
        webhook_spec(
            "deny.kubesim.test",
            by_url(webhook),
            namespaceSelector={"matchLabels": {"webhooks": "on"}},
        ),
    )
    code, _ = await raw.request("POST", cms("open"), cm("bad", "yes"))
    assert code == 201
    code, body = await raw.request("POST", cms("guarded"), cm("bad", "yes"))
    assert (code, body) == (400, denied("deny.kubesim.test"))
    assert [r["namespace"] for r in webhook.requests()] == ["guarded"]


async def test_object_selector_matches_new_or_old_labels(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    await register(
        raw,
        "deny",
        webhook_spec(
            "deny.kubesim.test",
            by_url(webhook),
            objectSelector={
                "matchExpressions": [{"key": "checked", "operator": "In", "values": ["yes"]}]
            },
        ),
    )
    code, _ = await raw.request("POST", cms("hooks"), cm("unchecked", "yes"))
    assert code == 201
    assert webhook.reviews == []
    code, body = await raw.request("POST", cms("hooks"), cm("checked", "yes", checked="yes"))
    assert (code, body) == (400, denied("deny.kubesim.test"))
    code, _ = await raw.request("POST", cms("hooks"), cm("labelled", checked="yes"))
    assert code == 201
    # Dropping the label does not escape review: the old object still matches.
    code, body = await raw.request("PUT", cms("hooks", "labelled"), cm("labelled", "yes"))
    assert (code, body) == (400, denied("deny.kubesim.test"))
    assert [r["name"] for r in webhook.requests()] == ["checked", "labelled", "labelled"]


async def test_failure_policy_when_the_webhook_is_down(raw: Raw, closed_port: int) -> None:
    await namespace(raw, "strict", policy="fail")
    await namespace(raw, "lenient", policy="ignore")
    url = f"https://127.0.0.1:{closed_port}/validate"
    for policy in ("Fail", "Ignore"):
        await register(
            raw,
            policy.lower(),
            webhook_spec(
                f"{policy.lower()}.kubesim.test",
                {"url": url},
                failurePolicy=policy,
                namespaceSelector={"matchLabels": {"policy": policy.lower()}},
            ),
        )
    code, body = await raw.request("POST", cms("strict"), cm("c"))
    why = (
        f'failed to call webhook: Post "{url}?timeout=10s": dial tcp 127.0.0.1:{closed_port}: '
        "connect: connection refused"
    )
    assert (code, body) == (500, failed("fail.kubesim.test", why))
    code, _ = await raw.request("POST", cms("lenient"), cm("c"))
    assert code == 201


async def test_timeout(raw: Raw, webhook: Webhook) -> None:
    """A webhook slower than timeoutSeconds fails or is ignored (both at once: 1 s)."""
    await namespace(raw, "strict", policy="fail")
    await namespace(raw, "lenient", policy="ignore")
    for policy in ("Fail", "Ignore"):
        await register(
            raw,
            policy.lower(),
            webhook_spec(
                f"{policy.lower()}.kubesim.test",
                by_url(webhook, "/hang"),
                failurePolicy=policy,
                timeoutSeconds=1,
                namespaceSelector={"matchLabels": {"policy": policy.lower()}},
            ),
        )
    (code, body), (lenient_code, _) = await asyncio.gather(
        raw.request("POST", cms("strict"), cm("c")),
        raw.request("POST", cms("lenient"), cm("c")),
    )
    why = f'failed to call webhook: Post "{webhook.url("/hang")}?timeout=1s": context deadline exceeded'
    assert (code, body) == (500, failed("fail.kubesim.test", why))
    assert lenient_code == 201


async def test_dry_run_and_side_effects(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "pure")
    await namespace(raw, "effects", effects="yes")
    await register(
        raw,
        "pure",
        webhook_spec(
            "pure.kubesim.test",
            by_url(webhook),
            namespaceSelector={
                "matchExpressions": [{"key": "effects", "operator": "DoesNotExist"}]
            },
        ),
    )
    await register(
        raw,
        "effects",
        webhook_spec(
            "effects.kubesim.test",
            by_url(webhook),
            sideEffects="Some",
            namespaceSelector={"matchLabels": {"effects": "yes"}},
        ),
    )
    # sideEffects None: dry runs are reviewed (and marked), nothing is stored.
    code, body = await raw.request("POST", cms("pure") + "?dryRun=All", cm("c"))
    assert code == 201 and body["metadata"]["name"] == "c"
    request = webhook.requests()[-1]
    assert request["dryRun"] is True and request["options"]["dryRun"] == ["All"]
    code, _ = await raw.request("GET", cms("pure", "c"))
    assert code == 404
    code, body = await raw.request("POST", cms("pure") + "?dryRun=All", cm("d", "yes"))
    assert (code, body) == (400, denied("pure.kubesim.test"))
    # sideEffects Some: a dry run is refused without calling the webhook.
    reviewed = len(webhook.reviews)
    code, body = await raw.request("POST", cms("effects") + "?dryRun=All", cm("c"))
    assert code == 400
    assert body["reason"] == "BadRequest"
    assert body["message"] == 'admission webhook "effects.kubesim.test" does not support dry run'
    assert len(webhook.reviews) == reviewed
    code, _ = await raw.request("POST", cms("effects"), cm("c"))
    assert code == 201 and len(webhook.reviews) == reviewed + 1


async def test_tls_is_verified(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    await namespace(raw, "other", check="name")
    await service_for(raw, webhook, "renamed")
    stranger = _pki("some-other-ca")
    await register(
        raw,
        "ca",
        webhook_spec(
            "ca.kubesim.test",
            {"url": webhook.url(), "caBundle": stranger.ca_bundle},
            namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "hooks"}},
        ),
    )
    code, body = await raw.request("POST", cms("hooks"), cm("c"))
    why = (
        f'failed to call webhook: Post "{webhook.url()}?timeout=10s": tls: failed to verify '
        "certificate: x509: certificate signed by unknown authority"
    )
    assert (code, body) == (500, failed("ca.kubesim.test", why))
    await raw.request("DELETE", f"{CONFIGS}/ca")
    # The certificate names webhook.hooks.svc, not the service it is reached by.
    await register(
        raw,
        "name",
        webhook_spec(
            "name.kubesim.test",
            by_service(webhook, "renamed"),
            namespaceSelector={"matchLabels": {"check": "name"}},
        ),
    )
    code, body = await raw.request("POST", cms("other"), cm("c"))
    why = (
        'failed to call webhook: Post "https://renamed.hooks.svc:443/validate?timeout=10s": '
        "tls: failed to verify certificate: x509: certificate is valid for webhook.hooks.svc, "
        "localhost, not renamed.hooks.svc"
    )
    assert (code, body) == (500, failed("name.kubesim.test", why))


async def test_service_resolution_errors(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    code, _ = await raw.request(
        "POST",
        "/api/v1/namespaces/hooks/services",
        {"metadata": {"name": "lonely"}, "spec": {"ports": [{"port": 443}]}},
    )
    assert code == 201
    await register(
        raw,
        "missing",
        webhook_spec("missing.kubesim.test", by_service(webhook, "missing")),
        webhook_spec("lonely.kubesim.test", by_service(webhook, "lonely")),
    )
    code, body = await raw.request("POST", cms("hooks"), cm("c"))
    # Both fail; the first webhook's failure is the answer.
    why = (
        'failed to call webhook: Post "https://missing.hooks.svc:443/validate?timeout=10s": '
        'service "missing" not found'
    )
    assert (code, body) == (500, failed("missing.kubesim.test", why))
    await raw.request("DELETE", f"{CONFIGS}/missing")
    await register(
        raw, "lonely", webhook_spec("lonely.kubesim.test", by_service(webhook, "lonely"))
    )
    code, body = await raw.request("POST", cms("hooks"), cm("c"))
    why = (
        'failed to call webhook: Post "https://lonely.hooks.svc:443/validate?timeout=10s": '
        'endpoints "lonely" not found'
    )
    assert (code, body) == (500, failed("lonely.kubesim.test", why))


async def test_invalid_response_is_a_call_failure(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    await register(raw, "bad", webhook_spec("bad.kubesim.test", by_url(webhook, "/baduid")))
    code, body = await raw.request("POST", cms("hooks"), cm("c"))
    uid = webhook.requests()[-1]["uid"]
    why = f'received invalid webhook response: expected response.uid="{uid}", got "nope"'
    assert (code, body) == (500, failed("bad.kubesim.test", why))


async def test_rules_scope_and_exempt_configurations(raw: Raw, webhook: Webhook) -> None:
    everything = [
        {
            "operations": ["*"],
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "resources": ["*/*"],
            "scope": "Cluster",
        }
    ]
    await register(raw, "all", webhook_spec("all.kubesim.test", by_url(webhook), rules=everything))
    # Webhook configurations are never reviewed; namespaced objects are out of scope.
    await register(raw, "more", webhook_spec("more.kubesim.test", by_url(webhook)))
    await namespace(raw, "hooks")
    code, _ = await raw.request("POST", cms("hooks"), cm("c", "yes"))
    assert code == 400  # by more.kubesim.test, whose rules are the ConfigMap ones
    [ns_review, cm_review] = webhook.requests()
    assert ns_review["resource"]["resource"] == "namespaces"
    # A Namespace is its own namespace in admission.
    assert ns_review["namespace"] == ns_review["name"] == "hooks"
    assert cm_review["resource"]["resource"] == "configmaps"


async def test_generated_name_is_kept(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    await register(raw, "deny", webhook_spec("deny.kubesim.test", by_url(webhook)))
    body = cm("")
    body["metadata"] = {"generateName": "gen-"}
    code, stored = await raw.request("POST", cms("hooks"), body)
    assert code == 201, stored
    [request] = webhook.requests()
    # The request names nothing; the object reviewed is the one stored.
    assert "name" not in request
    assert request["object"]["metadata"]["name"] == stored["metadata"]["name"]


async def test_write_is_admitted_again_when_the_object_changed_meanwhile(
    raw: Raw, webhook: Webhook
) -> None:
    await namespace(raw, "hooks")
    code, _ = await raw.request("POST", cms("hooks"), cm("c"))
    await register(raw, "deny", webhook_spec("deny.kubesim.test", by_url(webhook)))

    async def concurrent_writer(request: dict[str, Any]) -> None:
        # While the first review is pending, someone else updates the object.
        if len(webhook.reviews) == 1:
            code, body = await raw.request(
                "PATCH",
                cms("hooks", "c"),
                {"data": {"other": "writer"}},
                content_type="application/merge-patch+json",
            )
            assert code == 200, body

    webhook.before = concurrent_writer
    code, body = await raw.request(
        "PATCH",
        cms("hooks", "c"),
        {"data": {"mine": "1"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, body
    assert body["data"] == {"deny": "no", "other": "writer", "mine": "1"}
    first, inner, again = webhook.requests()
    assert "other" not in first["object"]["data"]
    assert inner["object"]["data"] == {"deny": "no", "other": "writer"}
    # The write was reviewed again against the object as the other writer left it.
    assert again["oldObject"]["data"] == {"deny": "no", "other": "writer"}
    assert again["object"]["data"] == body["data"]


async def test_scale_subresource_is_reviewed_as_a_scale(raw: Raw, webhook: Webhook) -> None:
    await namespace(raw, "hooks")
    web = deployment("web", "hooks", container="c", image="nginx")
    deployments = "/apis/apps/v1/namespaces/hooks/deployments"
    code, _ = await raw.request("POST", deployments, web)
    assert code == 201
    rules = [
        {
            "operations": ["UPDATE"],
            "apiGroups": ["apps"],
            "apiVersions": ["v1"],
            "resources": ["deployments/scale"],
        }
    ]

    def at_most_three(request: dict[str, Any]) -> dict[str, Any] | None:
        if request["object"]["spec"]["replicas"] > 3:
            return {"message": "at most 3 replicas"}
        return None

    webhook.decide = at_most_three
    await register(raw, "scale", webhook_spec("scale.kubesim.test", by_url(webhook), rules=rules))
    code, _ = await raw.request(
        "PATCH",
        f"{deployments}/web/scale",
        {"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
    )
    assert code == 200
    code, body = await raw.request(
        "PATCH",
        f"{deployments}/web/scale",
        {"spec": {"replicas": 5}},
        content_type="application/merge-patch+json",
    )
    assert code == 400
    assert (
        body["message"]
        == 'admission webhook "scale.kubesim.test" denied the request: at most 3 replicas'
    )
    request = webhook.requests()[-1]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert request["subResource"] == request["requestSubResource"] == "scale"
    assert request["oldObject"]["spec"]["replicas"] == 3
    # A plain update of the deployment is not a scale: not reviewed.
    code, _ = await raw.request(
        "PATCH",
        f"{deployments}/web",
        {"spec": {"replicas": 9}},
        content_type="application/merge-patch+json",
    )
    assert code == 200 and len(webhook.reviews) == 2


async def test_equivalent_match_policy_converts_crd_versions(raw: Raw, webhook: Webhook) -> None:
    widgets = crd("example.com", "Widget", versions=("v1", "v2"))
    code, body = await raw.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgets
    )
    assert code == 201, body
    await namespace(raw, "hooks")
    rules = [
        {
            "operations": ["CREATE"],
            "apiGroups": ["example.com"],
            "apiVersions": ["v1"],
            "resources": ["widgets"],
        }
    ]
    await register(
        raw,
        "widgets",
        webhook_spec("equivalent.kubesim.test", by_url(webhook), rules=rules),
        webhook_spec("exact.kubesim.test", by_url(webhook), rules=rules, matchPolicy="Exact"),
    )
    widget = {"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}}
    code, body = await raw.request("POST", "/apis/example.com/v2/namespaces/hooks/widgets", widget)
    assert code == 201, body
    [request] = webhook.requests()  # the Exact webhook does not see v2 requests
    assert request["kind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert request["requestKind"] == {"group": "example.com", "version": "v2", "kind": "Widget"}
    assert request["resource"]["version"] == "v1"
    assert request["requestResource"]["version"] == "v2"
    assert request["object"]["apiVersion"] == "example.com/v1"


async def test_requests_without_matching_webhooks_are_not_reviewed(
    raw: Raw, webhook: Webhook
) -> None:
    secrets_only = [
        {"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"]}
    ]
    await register(raw, "s", webhook_spec("s.kubesim.test", by_url(webhook), rules=secrets_only))
    await namespace(raw, "hooks")
    code, _ = await raw.request("POST", cms("hooks"), cm("c", "yes"))
    assert code == 201
    code, _ = await raw.request("DELETE", cms("hooks", "c"))
    assert code == 200
    assert webhook.reviews == []
