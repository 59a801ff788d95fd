"""Validating admission webhooks, called the way kube-apiserver calls them.

The stored ``ValidatingWebhookConfiguration`` objects (admissionregistration/v1)
say which requests each webhook reviews. For a matching create, update, patch
or delete, the HTTP layer computes the object as it would be stored (a dry run
of the write), hands it here in an :class:`AdmissionRequest`, and writes for
real only when every webhook allowed it. This module owns what happens in
between, mirroring ``k8s.io/apiserver/pkg/admission/plugin/webhook``:

- matching: ``rules`` (operations, groups, versions, resources with ``*``,
  ``*/*`` and ``resource/subresource``, scope), ``matchPolicy: Equivalent``
  through the other served versions of the same resource, ``namespaceSelector``
  (the labels of the object's namespace, or of the namespace itself) and
  ``objectSelector`` (the labels of the new or the old object); the
  admissionregistration resources themselves are never sent to webhooks;
- calling: an ``AdmissionReview`` (v1, or v1beta1 when that comes first in
  ``admissionReviewVersions``) POSTed with ``?timeout=Ns`` to
  ``clientConfig.url``, or to a service resolved through its ``Endpoints``
  (the address kube-apiserver's endpoint routing would pick), over TLS checked
  against ``caBundle`` and the name ``<service>.<namespace>.svc``;
- answering: every webhook runs concurrently; a denial becomes the webhook's
  ``Status`` (code at least 400, message ``admission webhook "<name>" denied
  the request: ...``); a webhook that cannot be called, times out or answers
  nonsense fails the request with a 500 ``failed calling webhook`` unless its
  ``failurePolicy`` is ``Ignore``; dry-run requests reach only webhooks whose
  ``sideEffects`` is ``None`` or ``NoneOnDryRun`` and are refused otherwise;
  ``warnings`` become ``Warning`` headers.

Error texts are the ones a Go client (kubectl) shows, including the Go
network and TLS wording (``dial tcp ...: connect: connection refused``,
``context deadline exceeded``, ``x509: certificate signed by unknown
authority``), so tests can compare messages with a real cluster's.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import ipaddress
import json
import logging
import os
import ssl
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from cryptography import x509
from cryptography.x509.oid import NameOID

from kubesim import errors
from kubesim.errors import ApiError
from kubesim.jsonerrors import go_message
from kubesim.jsonvalues import unmarshal_kind
from kubesim.resources import Registry, ResourceType
from kubesim.selectors import LabelSelector, label_selector_from_api
from kubesim.store import Store

log = logging.getLogger("kubesim.admission")

GROUP = "admissionregistration.k8s.io"
CONFIG_KEY = (GROUP, "validatingwebhookconfigurations")
SERVICE_KEY = ("", "services")
ENDPOINTS_KEY = ("", "endpoints")
NAMESPACE_KEY = ("", "namespaces")
DEFAULT_TIMEOUT = 10
USER_AGENT = "kube-apiserver-admission"
CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"
# The kind every /scale request and its webhooks see, whatever the parent resource.
SCALE_KIND = ("autoscaling", "v1", "Scale")
_REVIEW_VERSIONS = ("v1", "v1beta1")
# Service types kube-apiserver's endpoint resolver accepts.
_ROUTABLE_TYPES = ("ClusterIP", "LoadBalancer", "NodePort")
# OpenSSL verification codes and the Go crypto/x509 errors they correspond to.
_UNKNOWN_AUTHORITY = frozenset({2, 18, 19, 20, 21})
_NOT_VALID_NOW = frozenset({9, 10})
_NAME_MISMATCH = frozenset({62, 64})
# client-go caps the text of an unstructured error body at this length.
_MAX_ERROR_BODY = 2048


# -- configurations ----------------------------------------------------------------
def _strings(value: Any) -> tuple[str, ...]:
    """A list of strings from an unvalidated field (anything else: empty)."""
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str))


def _matches_any(patterns: Sequence[str], value: str) -> bool:
    return any(p in ("*", value) for p in patterns)


@dataclass(frozen=True)
class Rule:
    """One ``rules[]`` entry of a webhook (``RuleWithOperations``)."""

    operations: tuple[str, ...]
    groups: tuple[str, ...]
    versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str = "*"

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Rule:
        """A rule from its JSON; a missing scope means ``*``, as v1 defaults it."""
        scope = raw.get("scope")
        return cls(
            _strings(raw.get("operations")),
            _strings(raw.get("apiGroups")),
            _strings(raw.get("apiVersions")),
            _strings(raw.get("resources")),
            scope if isinstance(scope, str) and scope else "*",
        )

    def matches(self, operation: str, rt: ResourceType, subresource: str, namespace: str) -> bool:
        """Whether a request for ``rt`` (and ``subresource``) in ``namespace`` is covered.

        ``namespace`` is the request's admission namespace: a Namespace object's
        own name for requests about namespaces, as kube-apiserver sets it.
        """
        if not (
            _matches_any(self.operations, operation)
            and _matches_any(self.groups, rt.group)
            and _matches_any(self.versions, rt.version)
        ):
            return False
        is_namespace = (rt.group, rt.version, rt.plural) == ("", "v1", "namespaces")
        if self.scope == "Namespaced" and (is_namespace or not namespace):
            return False
        if self.scope == "Cluster" and not (is_namespace or not namespace):
            return False
        if self.scope not in ("*", "Namespaced", "Cluster"):
            return False
        for entry in self.resources:
            res, _, sub = entry.partition("/")
            if res in ("*", rt.plural) and sub in ("*", subresource):
                return True
        return False


@dataclass(frozen=True)
class Webhook:
    """One ``webhooks[]`` entry of a ValidatingWebhookConfiguration.

    Missing fields take the values kube-apiserver's v1 defaulting would have
    stored (kubesim keeps configurations as they were written).
    """

    name: str
    configuration: str
    rules: tuple[Rule, ...]
    client_config: Mapping[str, Any]
    failure_policy: str = "Fail"
    match_policy: str = "Equivalent"
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    side_effects: str | None = None
    timeout: int = DEFAULT_TIMEOUT
    review_versions: tuple[str, ...] = ("v1",)
    match_conditions: tuple[str, ...] = ()

    @classmethod
    def parse(cls, configuration: str, raw: Mapping[str, Any]) -> Webhook:
        """A webhook from its JSON inside configuration ``configuration``."""
        timeout = raw.get("timeoutSeconds")
        side_effects = raw.get("sideEffects")
        versions = _strings(raw.get("admissionReviewVersions"))
        client_config = raw.get("clientConfig")

        def selector(key: str) -> Mapping[str, Any] | None:
            value = raw.get(key)
            return value if isinstance(value, Mapping) else None

        return cls(
            name=str(raw.get("name") or ""),
            configuration=configuration,
            rules=tuple(Rule.parse(r) for r in raw.get("rules") or [] if isinstance(r, Mapping)),
            client_config=client_config if isinstance(client_config, Mapping) else {},
            failure_policy=str(raw.get("failurePolicy") or "Fail"),
            match_policy=str(raw.get("matchPolicy") or "Equivalent"),
            namespace_selector=selector("namespaceSelector"),
            object_selector=selector("objectSelector"),
            side_effects=side_effects if isinstance(side_effects, str) else None,
            # bool is an int too; a timeout of True seconds is not a timeout.
            timeout=(
                timeout
                if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0
                else DEFAULT_TIMEOUT
            ),
            # v1 requires the field; an unvalidated configuration without it gets v1.
            review_versions=versions or ("v1",),
            match_conditions=tuple(
                str(c.get("name") or "")
                for c in raw.get("matchConditions") or []
                if isinstance(c, Mapping)
            ),
        )


@dataclass(frozen=True)
class Invocation:
    """A webhook to call and the resource version it asked for.

    ``rt`` differs from the request's resource when the webhook matched an
    equivalent version (``matchPolicy: Equivalent``): it then reviews the
    object converted to that version.
    """

    webhook: Webhook
    rt: ResourceType


@dataclass
class AdmissionRequest:
    """What the apiserver knows of a write when it admits it (``admission.Attributes``).

    ``obj`` is the object as it would be stored (None for DELETE), ``old`` the
    stored one (None for CREATE); for ``/scale`` both are ``Scale`` objects.
    ``name`` is the name the request carried: empty for a create with only
    ``generateName`` and for the items of a deletecollection, as in Kubernetes.
    """

    operation: str
    rt: ResourceType
    subresource: str
    namespace: str
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    username: str
    groups: tuple[str, ...]
    dry_run: bool
    options: dict[str, Any]

    @property
    def kind(self) -> tuple[str, str, str]:
        """(group, version, kind) of the request's objects."""
        if self.subresource == "scale":
            return SCALE_KIND
        return (self.rt.group, self.rt.version, self.rt.kind)


@dataclass
class Verdict:
    """The outcome of admission: warnings to send, and the error if refused."""

    warnings: list[str] = field(default_factory=list)
    error: ApiError | None = None


class AdmissionRefused(Exception):
    """Admission refused a request; carries the warnings the answer still sends."""

    def __init__(self, error: ApiError, warnings: list[str]) -> None:
        super().__init__(error.message)
        self.error = error
        self.warnings = warnings


class WebhookDenied(ApiError):
    """A webhook's own Status, answered as it sent it (no reason unless it gave one)."""

    def __init__(self, code: int, status: str, message: str, reason: str, details: Any) -> None:
        super().__init__(code, reason, message, details if isinstance(details, dict) else None)
        self.state = status

    def status(self) -> dict[str, Any]:
        """The Status body: kube-apiserver passes the webhook's fields through."""
        body = super().status()
        body["status"] = self.state
        if not self.reason:
            body.pop("reason")
        return body


def _denial(hook: str, result: Any) -> WebhookDenied:
    """The error for a ``allowed: false`` answer (``webhookerrors.ToStatusErr``, 1.30)."""
    status = result if isinstance(result, Mapping) else {}
    code = status.get("code")
    # A rejection is never answered with a success or redirect code.
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    state = status.get("status")
    if not isinstance(state, str) or state in ("", "Success"):
        state = "Failure"
    message = status.get("message") if isinstance(status.get("message"), str) else ""
    reason = status.get("reason") if isinstance(status.get("reason"), str) else ""
    denied = f'admission webhook "{hook}" denied the request'
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    return WebhookDenied(code, state, text, str(reason), status.get("details"))


def _selector(raw: Mapping[str, Any] | None) -> LabelSelector:
    """A webhook selector; unset is v1's default ``{}``, which selects everything."""
    if raw is None:
        return LabelSelector.everything()
    try:
        return label_selector_from_api(raw)
    except ApiError as exc:
        # The apiserver reports an unparsable webhook selector as its own failure.
        raise errors.internal_error(exc.message) from exc


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


# -- calling ---------------------------------------------------------------------------
class _CallFailure(Exception):
    """A webhook could not be called or answered nonsense (Go's ``ErrCallingWebhook``)."""


@dataclass(frozen=True)
class _Target:
    """Where a webhook is, as Go prints it and as kubesim reaches it."""

    shown: str  # the URL in error messages, without the timeout parameter
    connect: str  # the URL aiohttp posts to (a service's endpoint address)
    host: str  # the Host header and TLS server name
    server_name: str | None
    tls: ssl.SSLContext | None


def _join_host(host: str, port: int | str) -> str:
    """``host:port``, bracketing IPv6 addresses as Go's ``net.JoinHostPort`` does."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _go_duration(seconds: int) -> str:
    """A whole number of seconds as Go's ``time.Duration.String`` prints it."""
    minutes, secs = divmod(seconds, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


# Messages of client-go's errors.NewGenericServerResponse, by HTTP status.
_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: (
        "the server was unable to return a response in the time allotted, but may still be "
        "processing the request"
    ),
}


def _http_error(code: int, content_type: str, raw: bytes) -> str:
    """The error client-go's REST client makes of a non-2xx webhook answer."""
    text = raw.decode("utf-8", errors="replace")
    with contextlib.suppress(ValueError):
        doc = json.loads(text)
        # A Status body is the error itself (rest.Result.Error).
        if isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("status") == "Failure":
            return str(doc.get("message") or "")
    server = text[:_MAX_ERROR_BODY].strip() if content_type.startswith("text/") else "unknown"
    if code in (403, 415):
        return server
    if code == 406:
        if server in ("", "unknown"):
            return "the server was unable to respond with a content type that the client supports"
        return server
    if code in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[code]
    if code >= 500:
        return (
            f"an error on the server ({json.dumps(server)}) has prevented the request from "
            "succeeding"
        )
    return f"the server responded with the status code {code} but did not return more information"


def _hostname_error(der: bytes, host: str) -> str:
    """Go's ``x509.HostnameError`` text for a certificate that does not name ``host``."""
    cert = x509.load_der_x509_certificate(der)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = san.get_values_for_type(x509.DNSName)
        ips = [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
        has_san = True
    except x509.ExtensionNotFound:
        dns, ips, has_san = [], [], False
    common = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not has_san and common and str(common[0].value).lower() == host.lower():
        return "x509: certificate relies on legacy Common Name field, use SANs instead"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        valid = ", ".join(dns)
    else:
        if not ips:
            return (
                f"x509: cannot validate certificate for {host} because it doesn't contain any "
                "IP SANs"
            )
        valid = ", ".join(ips)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


async def _peer_certificate(host: str, port: int, server_name: str | None) -> bytes | None:
    """The server's certificate, fetched without verifying it (to word a name mismatch)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        _, writer = await asyncio.open_connection(host, port, ssl=ctx, server_hostname=server_name)
    except OSError:
        return None
    try:
        sslobj = writer.get_extra_info("ssl_object")
        return sslobj.getpeercert(binary_form=True) if sslobj is not None else None
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


class Admission:
    """Finds the validating webhooks of a request and asks them."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self._signature: tuple[tuple[str, str], ...] = ()
        self._hooks: list[Webhook] = []
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}

    # -- matching ----------------------------------------------------------------------
    def configured(self) -> bool:
        """Whether any ValidatingWebhookConfiguration exists (else admission is free)."""
        return self.store.count(CONFIG_KEY) > 0

    def webhooks(self) -> list[Webhook]:
        """Every webhook, configurations by name as kube-apiserver orders them."""
        configs = self.store.items(CONFIG_KEY)
        signature = tuple(
            (c["metadata"]["name"], c["metadata"].get("resourceVersion", "")) for c in configs
        )
        if signature != self._signature:
            hooks: list[Webhook] = []
            for config in sorted(configs, key=lambda c: str(c["metadata"]["name"])):
                for raw in config.get("webhooks") or []:
                    if isinstance(raw, Mapping):
                        hooks.append(Webhook.parse(config["metadata"]["name"], raw))
            for hook in hooks:
                if hook.match_conditions:
                    # Said once per configuration change, not per request.
                    log.warning(
                        "webhook %s: matchConditions %s are not evaluated by kubesim; the "
                        "webhook is called as if they all matched",
                        hook.name,
                        ", ".join(hook.match_conditions),
                    )
            self._hooks, self._signature = hooks, signature
        return self._hooks

    def matching(
        self, operation: str, rt: ResourceType, subresource: str, namespace: str
    ) -> list[Invocation]:
        """The webhooks whose rules cover a request (selectors are checked by ``review``).

        Cheap enough for every write: an empty list without configurations.
        """
        if not self.configured() or rt.group == GROUP:
            # Webhooks never review webhook configurations, lest they lock themselves in.
            return []
        found: list[Invocation] = []
        for hook in self.webhooks():
            if any(r.matches(operation, rt, subresource, namespace) for r in hook.rules):
                found.append(Invocation(hook, rt))
                continue
            if hook.match_policy != "Equivalent":
                continue
            others = [o for o in self.registry.by_key(rt.key) if o.version != rt.version]
            match = next(
                (
                    other
                    for rule in hook.rules  # earlier rules first, as kube-apiserver
                    for other in others
                    if rule.matches(operation, other, subresource, namespace)
                ),
                None,
            )
            if match is not None:
                found.append(Invocation(hook, match))
        return found

    def _selected(self, inv: Invocation, request: AdmissionRequest) -> bool:
        """namespaceSelector and objectSelector (``ShouldCallHook``)."""
        hook = inv.webhook
        is_namespaces = (request.rt.group, request.rt.plural) == NAMESPACE_KEY
        if request.namespace or is_namespaces:
            ns_selector = _selector(hook.namespace_selector)
            if not ns_selector.empty and not ns_selector.matches(self._namespace_labels(request)):
                return False
        obj_selector = _selector(hook.object_selector)
        if obj_selector.empty:
            return True
        return any(
            labels is not None and obj_selector.matches(labels)
            for labels in (_labels(request.obj), _labels(request.old))
        )

    def _namespace_labels(self, request: AdmissionRequest) -> Mapping[str, str]:
        is_namespaces = (request.rt.group, request.rt.plural) == NAMESPACE_KEY
        if is_namespaces and not request.subresource and request.operation in (CREATE, UPDATE):
            # The namespace being written is not stored yet: its new labels count.
            return _labels(request.obj) or {}
        ns = self.store.get(NAMESPACE_KEY, ("", request.namespace))
        if ns is None:
            raise errors.not_found("namespaces", request.namespace)
        return _labels(ns) or {}

    # -- reviewing ---------------------------------------------------------------------
    async def review(self, request: AdmissionRequest, invocations: list[Invocation]) -> Verdict:
        """Ask every selected webhook; the first refusal in webhook order wins.

        Raises ``ApiError`` for a request kube-apiserver refuses before calling
        any webhook (the namespace is gone, a selector does not parse).
        """
        chosen = [inv for inv in invocations if self._selected(inv, request)]
        if not chosen:
            return Verdict()
        outcomes = await asyncio.gather(*(self._invoke(inv, request) for inv in chosen))
        verdict = Verdict()
        for warnings, error in outcomes:
            for text in warnings:
                if text and text not in verdict.warnings:
                    verdict.warnings.append(text)
            if error is not None and verdict.error is None:
                verdict.error = error
        return verdict

    async def _invoke(
        self, inv: Invocation, request: AdmissionRequest
    ) -> tuple[list[str], ApiError | None]:
        """Call one webhook: (its warnings, the error refusing the request or None)."""
        hook = inv.webhook
        try:
            return await self._call(inv, request)
        except _CallFailure as exc:
            reason = f'failed calling webhook "{hook.name}": {exc}'
            if hook.failure_policy == "Ignore":
                log.warning("Failed calling webhook, failing open %s: %s", hook.name, reason)
                return [], None
            log.warning("Failed calling webhook, failing closed %s: %s", hook.name, reason)
            return [], errors.internal_error(reason)

    async def _call(
        self, inv: Invocation, request: AdmissionRequest
    ) -> tuple[list[str], ApiError | None]:
        hook = inv.webhook
        if request.dry_run:
            if hook.side_effects is None:
                raise _CallFailure("Webhook SideEffects is nil")
            if hook.side_effects not in ("None", "NoneOnDryRun"):
                # Not a call failure: failurePolicy does not apply.
                return [], errors.bad_request(
                    f'admission webhook "{hook.name}" does not support dry run'
                )
        version = next((v for v in hook.review_versions if v in _REVIEW_VERSIONS), None)
        if version is None:
            raise _CallFailure(
                "could not create admission objects: webhook does not accept known "
                "AdmissionReview versions (v1, v1beta1)"
            )
        uid = str(uuid.uuid4())
        payload = json.dumps(
            self.review_body(inv, request, uid, version), separators=(",", ":")
        ).encode()
        shown = ""
        try:
            async with asyncio.timeout(hook.timeout):
                target = self._target(hook)
                shown = target.shown
                code, content_type, raw = await self._post(target, hook.timeout, payload)
        except TimeoutError:
            # The context's deadline, as Go's http client reports it.
            raise self._post_failure(
                shown or self._shown(hook), hook, "context deadline exceeded"
            ) from None
        except _DialFailure as exc:
            raise self._post_failure(exc.shown, hook, str(exc)) from exc
        if not 200 <= code <= 206:
            raise _CallFailure(f"failed to call webhook: {_http_error(code, content_type, raw)}")
        return self._answer(hook, uid, version, raw)

    def review_body(
        self, inv: Invocation, request: AdmissionRequest, uid: str, version: str
    ) -> dict[str, Any]:
        """The ``AdmissionReview`` sent to a webhook, fields in Go's order."""
        group, kind_version, kind = (
            SCALE_KIND
            if request.subresource == "scale"
            else (inv.rt.group, inv.rt.version, inv.rt.kind)
        )
        rgroup, rversion, rkind = request.kind
        body: dict[str, Any] = {
            "uid": uid,
            "kind": {"group": group, "version": kind_version, "kind": kind},
            "resource": {
                "group": inv.rt.group,
                "version": inv.rt.version,
                "resource": inv.rt.plural,
            },
        }
        if request.subresource:
            body["subResource"] = request.subresource
        body["requestKind"] = {"group": rgroup, "version": rversion, "kind": rkind}
        body["requestResource"] = {
            "group": request.rt.group,
            "version": request.rt.version,
            "resource": request.rt.plural,
        }
        if request.subresource:
            body["requestSubResource"] = request.subresource
        if request.name:
            body["name"] = request.name
        if request.namespace:
            body["namespace"] = request.namespace
        body["operation"] = request.operation
        user: dict[str, Any] = {"username": request.username}
        if request.groups:
            user["groups"] = list(request.groups)
        body["userInfo"] = user
        body["object"] = self._converted(inv, request, request.obj)
        body["oldObject"] = self._converted(inv, request, request.old)
        body["dryRun"] = request.dry_run
        body["options"] = request.options
        return {
            "kind": "AdmissionReview",
            "apiVersion": f"admission.k8s.io/{version}",
            "request": body,
        }

    @staticmethod
    def _converted(
        inv: Invocation, request: AdmissionRequest, obj: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """``obj`` in the version the webhook asked for (CRD versions differ in apiVersion)."""
        if obj is None or inv.rt.version == request.rt.version:
            return obj
        if obj.get("apiVersion") != request.rt.api_version:
            return obj  # a Scale: the same whatever the parent's version
        return {**obj, "apiVersion": inv.rt.api_version}

    def _answer(
        self, hook: Webhook, uid: str, version: str, raw: bytes
    ) -> tuple[list[str], ApiError | None]:
        """Check a 2xx answer (``VerifyAdmissionResponse``) and read its decision."""
        text = raw.decode("utf-8", errors="replace")
        try:
            review = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _CallFailure(
                f"failed to call webhook: couldn't get version/kind; json parse error: "
                f"{go_message(exc)}"
            ) from exc
        if review is None:
            review = {}  # Go decodes null into an empty review: "response was absent"
        if not isinstance(review, dict):
            raise _CallFailure(
                "failed to call webhook: couldn't get version/kind; json parse error: json: "
                f"cannot unmarshal {unmarshal_kind(review)} into Go value of type struct "
                '{ APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string '
                '"json:\\"kind,omitempty\\"" }'
            )
        response = review.get("response")
        if not isinstance(response, dict):
            raise _CallFailure("received invalid webhook response: webhook response was absent")
        if version == "v1":
            # v1beta1 answers were never checked, and still are not.
            got = response.get("uid")
            got = got if isinstance(got, str) else ""
            if got != uid:
                raise _CallFailure(
                    f"received invalid webhook response: expected response.uid={json.dumps(uid)}, "
                    f"got {json.dumps(got)}"
                )
            api_version = str(review.get("apiVersion") or "")
            group, _, ver = api_version.rpartition("/")
            kind = str(review.get("kind") or "")
            if (group, ver, kind) != ("admission.k8s.io", "v1", "AdmissionReview"):
                raise _CallFailure(
                    "received invalid webhook response: expected webhook response of "
                    f"admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{ver}, Kind={kind}"
                )
            if response.get("patch"):
                raise _CallFailure(
                    "received invalid webhook response: validating webhook may not return "
                    "response.patch"
                )
            if response.get("patchType") is not None:
                raise _CallFailure(
                    "received invalid webhook response: validating webhook may not return "
                    "response.patchType"
                )
        warnings = [w for w in response.get("warnings") or [] if isinstance(w, str)]
        if response.get("allowed") is True:
            return warnings, None
        return warnings, _denial(hook.name, response.get("status"))

    # -- reaching a webhook ----------------------------------------------------------------
    @staticmethod
    def _shown(hook: Webhook) -> str:
        """The webhook's URL as Go prints it (scheme, host and port, path)."""
        cc = hook.client_config
        service = cc.get("service")
        if isinstance(service, Mapping):
            port = service.get("port") or 443
            host = f"{service.get('name', '')}.{service.get('namespace', '')}.svc"
            return f"https://{_join_host(host, port)}{service.get('path') or '/'}"
        parts = urlsplit(str(cc.get("url") or ""))
        # The REST client keeps scheme, host and path: a query in the URL is dropped.
        return f"{parts.scheme}://{parts.netloc}{parts.path or '/'}"

    def _post_failure(self, shown: str, hook: Webhook, why: str) -> _CallFailure:
        url = f"{shown}?timeout={_go_duration(hook.timeout)}"
        return _CallFailure(f'failed to call webhook: Post "{url}": {why}')

    def _tls(self, hook: Webhook) -> ssl.SSLContext:
        """A context trusting ``caBundle`` (or the system's roots without one)."""
        bundle = hook.client_config.get("caBundle")
        key = bundle if isinstance(bundle, str) else ""
        ctx = self._contexts.get(key)
        if ctx is not None:
            return ctx
        try:
            if key:
                pem = base64.b64decode(key, validate=True).decode("ascii")
                ctx = ssl.create_default_context(cadata=pem)
            else:
                ctx = ssl.create_default_context()
        except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
            raise _CallFailure(
                "could not get REST client: unable to load root certificates: unable to parse "
                "bytes as PEM block"
            ) from exc
        ctx.set_alpn_protocols(["http/1.1"])
        self._contexts[key] = ctx
        return ctx

    def _target(self, hook: Webhook) -> _Target:
        """Where to POST: the URL, or the service's first ready endpoint address."""
        cc = hook.client_config
        service = cc.get("service")
        if isinstance(service, Mapping):
            name = str(service.get("name") or "")
            namespace = str(service.get("namespace") or "")
            port = service.get("port") or 443
            tls = self._tls(hook)
            shown = self._shown(hook)
            address = self._resolve(namespace, name, port, shown)
            server_name = f"{name}.{namespace}.svc"
            return _Target(
                shown,
                f"https://{address}{service.get('path') or '/'}",
                _join_host(server_name, port),
                server_name,
                tls,
            )
        url = cc.get("url")
        if not isinstance(url, str) or not url:
            raise _CallFailure(
                "could not get REST client: webhook configuration must have either service or URL"
            )
        parts = urlsplit(url)
        shown = self._shown(hook)
        plain = parts.scheme != "https"
        return _Target(
            shown, shown, parts.netloc, parts.hostname, None if plain else self._tls(hook)
        )

    def _resolve(self, namespace: str, name: str, port: Any, shown: str) -> str:
        """A service's endpoint ``ip:port``, as kube-apiserver's ``ResolveEndpoint``.

        The service port is found by number, the endpoint port by that service
        port's name; the first subset with a ready address and the port wins
        (kube-apiserver starts at a random subset and address).
        """
        svc = self.store.get(SERVICE_KEY, (namespace, name))
        if svc is None:
            raise _DialFailure(shown, f'service "{name}" not found')
        spec = svc.get("spec") or {}
        svc_type = spec.get("type") or "ClusterIP"
        if svc_type not in _ROUTABLE_TYPES:
            raise _DialFailure(shown, f'unsupported service type "{svc_type}"')
        svc_port = next(
            (
                p
                for p in spec.get("ports") or []
                if isinstance(p, Mapping) and p.get("port") == port
            ),
            None,
        )
        if svc_port is None:
            raise _DialFailure(shown, f'no service port {port} found for service "{name}"')
        endpoints = self.store.get(ENDPOINTS_KEY, (namespace, name))
        if endpoints is None:
            raise _DialFailure(shown, f'endpoints "{name}" not found')
        port_name = svc_port.get("name") or ""
        for subset in endpoints.get("subsets") or []:
            addresses = [a for a in subset.get("addresses") or [] if a.get("ip")]
            if not addresses:
                continue
            for ep_port in subset.get("ports") or []:
                if (ep_port.get("name") or "") == port_name and ep_port.get("port"):
                    return _join_host(str(addresses[0]["ip"]), int(ep_port["port"]))
        raise _DialFailure(shown, f'no endpoints available for service "{name}"')

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # A fresh connection per call, so a webhook that went away shows as
            # refused rather than as a dead kept-alive connection.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(force_close=True),
                timeout=aiohttp.ClientTimeout(total=None),
            )
        return self._session

    async def _post(self, target: _Target, timeout: int, payload: bytes) -> tuple[int, str, bytes]:
        """POST the review; network failures become :class:`_DialFailure` in Go's words."""
        url = f"{target.connect}?timeout={_go_duration(timeout)}"
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, */*",
            "User-Agent": USER_AGENT,
            "Host": target.host,
        }
        try:
            async with self._client().post(
                url,
                data=payload,
                headers=headers,
                ssl=target.tls if target.tls is not None else True,
                server_hostname=target.server_name if target.tls is not None else None,
            ) as resp:
                return resp.status, resp.headers.get("Content-Type", ""), await resp.read()
        except aiohttp.ClientConnectorCertificateError as exc:
            raise _DialFailure(target.shown, await self._certificate_problem(target, exc)) from exc
        except aiohttp.ClientConnectorSSLError as exc:
            raise _DialFailure(target.shown, _tls_problem(exc)) from exc
        except aiohttp.ClientConnectorDNSError as exc:
            raise _DialFailure(target.shown, f"dial tcp: lookup {exc.host}: no such host") from exc
        except aiohttp.ClientConnectorError as exc:
            where = _join_host(exc.host, exc.port or 443)
            raise _DialFailure(
                target.shown, f"dial tcp {where}: connect: {_errno_text(exc.os_error)}"
            ) from exc
        except aiohttp.ServerDisconnectedError as exc:
            raise _DialFailure(target.shown, "EOF") from exc
        except aiohttp.ClientOSError as exc:
            raise _DialFailure(target.shown, f"read tcp: {_errno_text(exc)}") from exc
        except aiohttp.ClientError as exc:
            raise _DialFailure(target.shown, str(exc) or type(exc).__name__) from exc

    async def _certificate_problem(
        self, target: _Target, exc: aiohttp.ClientConnectorCertificateError
    ) -> str:
        """Go's text for a certificate that does not verify."""
        cause = exc.certificate_error
        code = getattr(cause, "verify_code", None)
        prefix = "tls: failed to verify certificate: "
        if code in _NAME_MISMATCH:
            der = await _peer_certificate(exc.host, exc.port or 443, target.server_name)
            wanted = target.server_name or exc.host
            if der is not None:
                return prefix + _hostname_error(der, wanted)
            return prefix + f"x509: certificate is not valid for {wanted}"
        if code in _UNKNOWN_AUTHORITY:
            return prefix + "x509: certificate signed by unknown authority"
        if code in _NOT_VALID_NOW:
            return prefix + "x509: certificate has expired or is not yet valid"
        return prefix + f"x509: {getattr(cause, 'verify_message', cause)}"

    async def close(self) -> None:
        """Close the webhook client's connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None


class _DialFailure(Exception):
    """A transport failure: Go reports it as ``Post "<url>": <this>``."""

    def __init__(self, shown: str, message: str) -> None:
        super().__init__(message)
        self.shown = shown


def _errno_text(exc: OSError | None) -> str:
    """An errno as Go's syscall package words it (lower case, e.g. "connection refused")."""
    if exc is None or exc.errno is None:
        return str(exc or "unknown error").lower()
    return os.strerror(exc.errno).lower()


def _tls_problem(exc: aiohttp.ClientConnectorSSLError) -> str:
    """Go's text for a TLS handshake that failed for another reason than the certificate."""
    text = str(exc.os_error if exc.os_error is not None else exc)
    if "WRONG_VERSION_NUMBER" in text or "record layer failure" in text:
        return "http: server gave HTTP response to HTTPS client"
    return f"remote error: tls: {text}"
