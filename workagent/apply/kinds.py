"""Per-kind rules of the Update strategy (spec/agent.md 5.1 step 2, library-go resourceapply).

Each kind's rules say how to prepare a manifest before it is created or
compared, and what to write to bring a live object in line with it (or
nothing, when it already is). Kinds without rules of their own use
:func:`generic_plan`, the generic path of 5.1.1 with the comparison limited
to what the manifest sets. The kinds with rules of their own are those of
library-go's typed appliers (:data:`KIND_RULES`), whose observable
behaviour each planner keeps.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from workagent.apply.base import InvalidManifest
from workagent.apply.merge import MISSING, merge_object_meta, overlay, semantic_equal
from workagent.apply.servicehash import service_spec_hash

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
SERVICE_SPEC_HASH_ANNOTATION: Final = "operator.openshift.io/spec-hash"
SERVICE_ACCOUNT_TOKEN_TYPE: Final = "kubernetes.io/service-account-token"

# Top-level fields the content comparison leaves alone.
_NOT_CONTENT: Final = frozenset({"metadata", "status"})


@dataclass(frozen=True)
class Plan:
    """What to write to bring a live object in line with its manifest.

    ``recreate``: delete and create ``body`` instead of updating (a change
    the API server refuses to update); ``recreate_if_immutable``: do so when
    the update is refused with ``field is immutable``.
    """

    body: dict[str, Any]
    recreate: bool = False
    recreate_if_immutable: bool = False


def _identity(required: dict[str, Any]) -> dict[str, Any]:
    return required


Prepare = Callable[[dict[str, Any]], dict[str, Any]]
#: (live object, prepared manifest, manifest applied last time or MISSING) -> plan or None
Planner = Callable[[dict[str, Any], dict[str, Any], Any], Plan | None]


@dataclass(frozen=True)
class KindRules:
    """How the Update strategy treats one kind."""

    plan: Planner
    prepare: Prepare = field(default=_identity)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _with_meta(existing: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(existing)
    body["metadata"] = meta
    return body


def _set_or_drop(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        obj.pop(key, None)
    else:
        obj[key] = copy.deepcopy(value)


# -- generic -----------------------------------------------------------------------------


def generic_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """5.1.1 steps 3-5: merge metadata, lay the manifest's content over the live content.

    The live finalizers, status and every field the manifest does not set
    are kept, so server defaults and immutable generated fields survive the
    update.
    """
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    live = {k: v for k, v in existing.items() if k not in _NOT_CONTENT}
    wanted = {k: v for k, v in required.items() if k not in _NOT_CONTENT}
    previous = (
        {k: v for k, v in last.items() if k not in _NOT_CONTENT}
        if isinstance(last, dict)
        else MISSING
    )
    content = overlay(live, wanted, previous)
    if not modified and content == live:
        return None
    body = copy.deepcopy(content)
    body["metadata"] = meta
    if "status" in existing:
        body["status"] = copy.deepcopy(existing["status"])
    return Plan(body)


# -- metadata only -----------------------------------------------------------------------


def metadata_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """Namespace, ServiceAccount, Pod: labels, annotations and owners only."""
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    return Plan(_with_meta(existing, meta)) if modified else None


# -- ConfigMap -----------------------------------------------------------------------------


def _decoded(values: Any) -> dict[str, Any]:
    """A map of base64 strings decoded, so spellings of the same bytes compare equal."""
    out: dict[str, Any] = {}
    for key, value in (values or {}).items():
        try:
            out[key] = base64.b64decode(str(value), validate=False)
        except (binascii.Error, ValueError):
            out[key] = value
    return out


def configmap_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """ConfigMap: metadata merged, data and binaryData replaced whole when any key differs."""
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    data_same = dict(existing.get("data") or {}) == dict(required.get("data") or {})
    binary_same = _decoded(existing.get("binaryData")) == _decoded(required.get("binaryData"))
    if data_same and binary_same and not modified:
        return None
    body = _with_meta(existing, meta)
    _set_or_drop(body, "data", required.get("data") or None)
    _set_or_drop(body, "binaryData", required.get("binaryData") or None)
    return Plan(body)


# -- Secret --------------------------------------------------------------------------------


def secret_prepare(required: dict[str, Any]) -> dict[str, Any]:
    """Fold ``stringData`` into ``data`` (base64), refusing conflicting values."""
    string_data = required.pop("stringData", None)
    if not string_data:
        return required
    data = dict(required.get("data") or {})
    decoded = _decoded(data)
    for key, text in string_data.items():
        encoded = str(text).encode()
        if key in data and decoded.get(key) != encoded:
            # library-go's wording (Go %q quoting).
            raise InvalidManifest(f'Secret.stringData["{key}"] conflicts with Secret.data["{key}"]')
        data[key] = base64.b64encode(encoded).decode()
    required["data"] = data
    return required


def secret_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """Secret: data replaced (merged for service-account tokens), empty type is Opaque."""
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    body = _with_meta(existing, meta)
    wanted_type = required.get("type") or "Opaque"
    if wanted_type == SERVICE_ACCOUNT_TOKEN_TYPE:
        # The token controller fills in the token: set only the manifest's keys.
        data = dict(existing.get("data") or {})
        data.update(required.get("data") or {})
    else:
        data = dict(required.get("data") or {})
    _set_or_drop(body, "data", data or None)
    body["type"] = wanted_type
    # The type is immutable: a Secret of another type must be recreated.
    recreate = wanted_type != (existing.get("type") or "Opaque")
    if not (modified or recreate) and _decoded(data) == _decoded(existing.get("data")):
        return None
    return Plan(body, recreate=recreate, recreate_if_immutable=True)


# -- Service -------------------------------------------------------------------------------


def service_prepare(required: dict[str, Any]) -> dict[str, Any]:
    """Record the hash of the manifest's spec in the spec-hash annotation, as OCM's."""
    meta = required.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations[SERVICE_SPEC_HASH_ANNOTATION] = service_spec_hash(required.get("spec"))
    meta["annotations"] = annotations
    return required


def service_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """Service: spec replaced when selector or type differ or metadata changed."""
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    live_spec = existing.get("spec") or {}
    wanted_spec = required.get("spec") or {}
    selector_same = semantic_equal(live_spec.get("selector"), wanted_spec.get("selector"))
    wanted_type = wanted_spec.get("type") or ""
    live_type = live_spec.get("type") or ""
    type_same = wanted_type == live_type or (not wanted_type and live_type == "ClusterIP")
    if selector_same and type_same and not modified:
        return None
    body = _with_meta(existing, meta)
    # Allocated cluster IPs and node ports left out are kept by the API server.
    body["spec"] = copy.deepcopy(wanted_spec)
    return Plan(body)


# -- RBAC ----------------------------------------------------------------------------------


def role_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """ClusterRole/Role: rules replaced, or only the aggregationRule when one is set.

    The aggregation controller owns the rules of an aggregated role.
    """
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    aggregation = required.get("aggregationRule")
    body = _with_meta(existing, meta)
    if aggregation:
        same = semantic_equal(existing.get("aggregationRule"), aggregation)
        body["aggregationRule"] = copy.deepcopy(aggregation)
    else:
        same = semantic_equal(existing.get("rules"), required.get("rules")) and not existing.get(
            "aggregationRule"
        )
        _set_or_drop(body, "rules", required.get("rules"))
        body.pop("aggregationRule", None)
    return None if same and not modified else Plan(body)


def _binding_parts(obj: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Subjects and roleRef with the API groups the API server defaults filled in."""
    subjects = []
    for given in obj.get("subjects") or []:
        subject = dict(given)
        if subject.get("kind") in ("User", "Group") and not subject.get("apiGroup"):
            subject["apiGroup"] = RBAC_GROUP
        subjects.append(subject)
    role_ref = dict(obj.get("roleRef") or {})
    role_ref["apiGroup"] = RBAC_GROUP
    return subjects, role_ref


def binding_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """ClusterRoleBinding/RoleBinding: subjects and roleRef replaced.

    A changed roleRef is refused by the API server (it is immutable): the
    apply fails and the old binding stays.
    """
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    live_subjects, live_ref = _binding_parts(existing)
    subjects, role_ref = _binding_parts(required)
    if (
        semantic_equal(live_subjects, subjects)
        and semantic_equal(live_ref, role_ref)
        and not modified
    ):
        return None
    body = _with_meta(existing, meta)
    _set_or_drop(body, "subjects", subjects or None)
    body["roleRef"] = role_ref
    return Plan(body)


# -- CustomResourceDefinition ------------------------------------------------------------


def default_crd_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A CRD spec defaulted as apiextensions.k8s.io/v1 defaults it on the API server."""
    spec = copy.deepcopy(spec)
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        conversion = spec["conversion"] = {}
    conversion.setdefault("strategy", "None")
    webhook = conversion.get("webhook")
    client_config = webhook.get("clientConfig") if isinstance(webhook, dict) else None
    service = client_config.get("service") if isinstance(client_config, dict) else None
    if isinstance(service, dict):
        service.setdefault("port", 443)
    return spec


def crd_plan(existing: dict[str, Any], required: dict[str, Any], last: Any) -> Plan | None:
    """CustomResourceDefinition: spec replaced when it differs from the defaulted manifest spec."""
    meta, modified = merge_object_meta(_meta(existing), _meta(required))
    spec = default_crd_spec(required.get("spec") or {})
    if semantic_equal(existing.get("spec"), spec) and not modified:
        return None
    body = _with_meta(existing, meta)
    body["spec"] = spec
    return Plan(body)


# -- registry ------------------------------------------------------------------------------

GENERIC: Final = KindRules(generic_plan)
_METADATA_ONLY: Final = KindRules(metadata_plan)

#: Rules by (API group, kind); kinds not listed use :data:`GENERIC`.
KIND_RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("", "Namespace"): _METADATA_ONLY,
    ("", "ServiceAccount"): _METADATA_ONLY,
    ("", "Pod"): _METADATA_ONLY,
    ("", "ConfigMap"): KindRules(configmap_plan),
    ("", "Secret"): KindRules(secret_plan, secret_prepare),
    ("", "Service"): KindRules(service_plan, service_prepare),
    (RBAC_GROUP, "ClusterRole"): KindRules(role_plan),
    (RBAC_GROUP, "Role"): KindRules(role_plan),
    (RBAC_GROUP, "ClusterRoleBinding"): KindRules(binding_plan),
    (RBAC_GROUP, "RoleBinding"): KindRules(binding_plan),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): KindRules(crd_plan),
}


def rules_for(group: str, kind: str) -> KindRules:
    """The Update rules of a kind."""
    return KIND_RULES.get((group, kind), GENERIC)
