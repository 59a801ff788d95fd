"""Validation of built-in kinds, with kube-apiserver's field errors (v1.35 wording).

``validate_create`` and ``validate_update`` raise the 422 ``Invalid`` error of
``kubesim.errors.invalid`` listing one cause per problem, in the order the
apiserver reports them. They expect a defaulted object (run
``kubesim.defaults.apply_defaults`` first), as the apiserver validates after
defaulting.

Where the apiserver prints a structured bad value in a message, v1.35 shows
its JSON (``{"app":"web"}``, ``{"matchLabels":{...}}``, ``["a","b"]``);
large internal structs such as a whole pod template (Go field names, every
field) are shown as ``"object"`` instead.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesim.defaults import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
    VOLUME_SOURCES,
    parse_quantity,
)
from kubesim.errors import (
    ApiError,
    field_forbidden,
    field_invalid,
    field_invalid_shown,
    field_not_supported,
    field_required,
    go_json,
    invalid,
    shown_value,
)
from kubesim.jsonvalues import go_quote
from kubesim.selectors import (
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    label_selector_from_api,
    max_len_error,
    regex_error,
)

__all__ = [
    "Cause",
    "go_label_selector",
    "go_string_map",
    "is_dns1035_label",
    "is_dns1123_label",
    "validate_create",
    "validate_name",
    "validate_update",
]

Cause = dict[str, Any]
Obj = Mapping[str, Any]

IMMUTABLE = "field is immutable"
_NEGATIVE = "must be greater than or equal to 0"
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_TOTAL_ANNOTATION_SIZE = 256 * 1024
_MAX_DATA_SIZE = 1024 * 1024

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character"
)
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE = re.compile(_CONFIG_KEY_FMT)
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_ENV_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_NAME_RE = re.compile(_ENV_NAME_FMT)
_ENV_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit"
)
_PERCENT_RE = re.compile(r"[0-9]+%")


# --------------------------------------------------------------------------
# String rules
# --------------------------------------------------------------------------


def is_dns1123_label(value: str) -> list[str]:
    """Problems with ``value`` as a DNS-1123 label (empty list: valid)."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """Problems with ``value`` as a DNS-1035 label (empty list: valid)."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def _path_segment(value: str, prefix: bool) -> list[str]:
    if not prefix and value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{ch}'" for ch in ("/", "%") if ch in value]


def _config_key(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _CONFIG_KEY_RE.fullmatch(value):
        errs.append(
            regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name")
        )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _port_name(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 15:
        errs.append(max_len_error(15))
    if not re.fullmatch(r"[-a-z0-9]+", value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _mask_trailing_dash(name: str) -> str:
    # generateName prefixes may end in "-"; the apiserver checks them as if
    # the last two characters were replaced by "a".
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


# --------------------------------------------------------------------------
# Causes and Go value rendering
# --------------------------------------------------------------------------


def _duplicate(field: str, value: Any) -> Cause:
    return {
        "reason": "FieldValueDuplicate",
        "message": f"Duplicate value: {shown_value(value)}",
        "field": field,
    }


def _not_found(field: str, value: Any) -> Cause:
    return {
        "reason": "FieldValueNotFound",
        "message": f"Not found: {shown_value(value)}",
        "field": field,
    }


def _too_long(field: str, limit: int) -> Cause:
    return {
        "reason": "FieldValueTooLong",
        "message": f"Too long: may not be more than {limit} bytes",
        "field": field,
    }


def go_string_map(value: Any) -> str:
    """A ``map[string]string`` as v1.35 shows a bad value: JSON, keys sorted (nil: null)."""
    if not isinstance(value, Mapping):
        return "null"
    return go_json({str(k): str(v) for k, v in value.items()}, sort=True)


def _go_sharp_strings(value: list[str]) -> str:
    """``%#v`` of a ``[]string``, for messages that format one into their detail."""
    return "[]string{" + ", ".join(go_quote(v) for v in value) + "}"


def _go_strings(value: Any) -> str:
    """A ``[]string`` bad value as JSON (nil: null)."""
    if not isinstance(value, list):
        return "null"
    return go_json([str(v) for v in value], sort=False)


def go_label_selector(sel: Any) -> str:
    """A ``metav1.LabelSelector`` bad value as JSON (empty fields omitted, nil: null)."""
    if not isinstance(sel, Mapping):
        return "null"
    out: dict[str, Any] = {}
    if isinstance(sel.get("matchLabels"), Mapping) and sel["matchLabels"]:
        out["matchLabels"] = dict(sorted((str(k), str(v)) for k, v in sel["matchLabels"].items()))
    exprs = [e for e in sel.get("matchExpressions") or [] if isinstance(e, Mapping)]
    if exprs:
        shown = []
        for e in exprs:
            item: dict[str, Any] = {
                "key": _str(e.get("key")),
                "operator": _str(e.get("operator")),
            }
            if isinstance(e.get("values"), list) and e["values"]:
                item["values"] = [str(v) for v in e["values"]]
            shown.append(item)
        out["matchExpressions"] = shown
    return go_json(out, sort=False)


def _go_intstr(value: Any) -> str:
    """An IntOrString bad value: its JSON, a number or a quoted string."""
    if isinstance(value, str):
        return go_json(value, sort=False)
    number = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return str(number)


# --------------------------------------------------------------------------
# Small accessors
# --------------------------------------------------------------------------


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in _list(value) if isinstance(v, Mapping)]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _meta(obj: Obj) -> Mapping[str, Any]:
    return _map(obj.get("metadata"))


def _normalize(value: Any) -> Any:
    """Drop nulls and empty containers: Go's semantic equality treats them alike."""
    if isinstance(value, Mapping):
        out = {k: _normalize(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [], "", False, 0)}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value


def _same(a: Any, b: Any) -> bool:
    return bool(_normalize(a) == _normalize(b))


def _nonneg(causes: list[Cause], field: str, value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        causes.append(field_invalid(field, value, _NEGATIVE))


# --------------------------------------------------------------------------
# Names and object metadata
# --------------------------------------------------------------------------

_RBAC = "rbac.authorization.k8s.io"
_RBAC_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


def _name_rule(kind: str, group: str, label: bool) -> Callable[[str], list[str]]:
    if kind == "Service" and group == "":
        return is_dns1035_label
    if kind in _RBAC_KINDS and group in ("", _RBAC):
        return lambda n: _path_segment(n, False)
    if label or (kind == "Namespace" and group == ""):
        return is_dns1123_label
    return is_dns1123_subdomain


def validate_name(
    kind: str,
    name: str,
    *,
    label: bool = False,
    group: str = "",
    field: str = "metadata.name",
    prefix: bool = False,
) -> list[Cause]:
    """Causes for an invalid object name of ``kind`` (empty list: valid).

    Names are DNS-1123 subdomains unless ``label`` asks for a DNS-1123 label;
    some kinds have their own rule that takes precedence (Namespace: label,
    Service: DNS-1035 label, RBAC kinds: path segment). ``prefix`` checks a
    ``generateName`` prefix, which may end in ``-``.
    """
    if not name:
        if prefix:
            return []
        return [field_required(field, "name or generateName is required")]
    rule = _name_rule(kind, group, label)
    if prefix and rule is not is_dns1123_subdomain and kind in _RBAC_KINDS:
        problems = _path_segment(name, True)
    else:
        problems = rule(_mask_trailing_dash(name) if prefix else name)
    return [field_invalid(field, name, msg) for msg in problems]


def _labels(causes: list[Cause], labels: Any, field: str) -> None:
    for key, value in _map(labels).items():
        causes.extend(field_invalid(field, key, msg) for msg in is_qualified_name(str(key)))
        if not isinstance(value, str):
            continue
        causes.extend(field_invalid(field, value, msg) for msg in is_valid_label_value(value))


def _annotations(causes: list[Cause], annotations: Any, field: str) -> None:
    total = 0
    for key, value in _map(annotations).items():
        # Annotation keys are qualified names, case-insensitively.
        causes.extend(field_invalid(field, key, msg) for msg in is_qualified_name(str(key).lower()))
        total += len(str(key)) + len(value if isinstance(value, str) else "")
    if total > _TOTAL_ANNOTATION_SIZE:
        causes.append(_too_long(field, _TOTAL_ANNOTATION_SIZE))


def _finalizers(causes: list[Cause], finalizers: Any, field: str) -> None:
    values = _list(finalizers)
    for fin in values:
        causes.extend(field_invalid(field, fin, msg) for msg in is_qualified_name(str(fin)))
    if "orphan" in values and "foregroundDeletion" in values:
        causes.append(
            field_invalid_shown(
                field,
                _go_strings(values),
                "finalizer orphan and foregroundDeletion cannot be both set",
            )
        )


def _owner_references(causes: list[Cause], refs: Any, field: str) -> None:
    controller = ""
    for ref in _dicts(refs):
        api_version = _str(ref.get("apiVersion"))
        version = api_version.rsplit("/", 1)[-1] if api_version else ""
        if not version:
            causes.append(
                field_invalid(f"{field}.apiVersion", api_version, "version must not be empty")
            )
        if not ref.get("kind"):
            causes.append(
                field_invalid(f"{field}.kind", _str(ref.get("kind")), "kind must not be empty")
            )
        if not ref.get("name"):
            causes.append(
                field_invalid(f"{field}.name", _str(ref.get("name")), "name must not be empty")
            )
        if not ref.get("uid"):
            causes.append(
                field_invalid(f"{field}.uid", _str(ref.get("uid")), "uid must not be empty")
            )
        if ref.get("controller") is True:
            name = _str(ref.get("name"))
            if controller:
                causes.append(
                    field_invalid(
                        field,
                        refs,
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {name}",
                    )
                )
            else:
                controller = name


def _meta_common(causes: list[Cause], meta: Mapping[str, Any]) -> None:
    _labels(causes, meta.get("labels"), "metadata.labels")
    _annotations(causes, meta.get("annotations"), "metadata.annotations")
    _owner_references(causes, meta.get("ownerReferences"), "metadata.ownerReferences")
    _finalizers(causes, meta.get("finalizers"), "metadata.finalizers")


def _validate_meta_create(
    group: str, kind: str, obj: Obj, namespaced: bool, *, name_check: bool = True
) -> list[Cause]:
    causes: list[Cause] = []
    meta = _meta(obj)
    generate_name = _str(meta.get("generateName"))
    if generate_name:
        causes.extend(
            validate_name(
                kind, generate_name, group=group, field="metadata.generateName", prefix=True
            )
        )
    if name_check:
        causes.extend(validate_name(kind, _str(meta.get("name")), group=group))
    if namespaced:
        namespace = _str(meta.get("namespace"))
        if not namespace:
            causes.append(field_required("metadata.namespace"))
        else:
            causes.extend(
                field_invalid("metadata.namespace", namespace, m)
                for m in is_dns1123_label(namespace)
            )
    _nonneg(causes, "metadata.generation", meta.get("generation"))
    _meta_common(causes, meta)
    return causes


def _validate_meta_update(old: Obj, new: Obj) -> list[Cause]:
    causes: list[Cause] = []
    old_meta, new_meta = _meta(old), _meta(new)
    if old_meta.get("deletionTimestamp"):
        added = [
            f
            for f in _list(new_meta.get("finalizers"))
            if f not in _list(old_meta.get("finalizers"))
        ]
        if added:
            causes.append(
                field_forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {_go_sharp_strings(sorted(set(added)))}",
                )
            )
    old_gen, new_gen = old_meta.get("generation"), new_meta.get("generation")
    if isinstance(old_gen, int) and isinstance(new_gen, int) and new_gen < old_gen:
        causes.append(field_invalid("metadata.generation", new_gen, "must not be decremented"))
    for key in ("name", "namespace"):
        if _str(new_meta.get(key)) != _str(old_meta.get(key)):
            causes.append(field_invalid(f"metadata.{key}", _str(new_meta.get(key)), IMMUTABLE))
    # An update without uid or creationTimestamp keeps the stored ones.
    for key in ("uid", "creationTimestamp"):
        if new_meta.get(key) and new_meta.get(key) != old_meta.get(key):
            causes.append(field_invalid(f"metadata.{key}", new_meta.get(key), IMMUTABLE))
    _meta_common(causes, new_meta)
    return causes


# --------------------------------------------------------------------------
# Pod specs
# --------------------------------------------------------------------------

_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]


def _validate_volumes(causes: list[Cause], volumes: Any, path: str) -> set[str]:
    names: set[str] = set()
    for i, vol in enumerate(_dicts(volumes)):
        vpath = f"{path}[{i}]"
        sources = [k for k in VOLUME_SOURCES if vol.get(k) is not None]
        if not sources:
            causes.append(field_required(vpath, "must specify a volume type"))
        elif len(sources) > 1:
            causes.append(
                field_forbidden(f"{vpath}.{sources[1]}", "may not specify more than 1 volume type")
            )
        name = _str(vol.get("name"))
        if not name:
            causes.append(field_required(f"{vpath}.name"))
        else:
            causes.extend(field_invalid(f"{vpath}.name", name, m) for m in is_dns1123_label(name))
        if name in names:
            causes.append(_duplicate(f"{vpath}.name", name))
        names.add(name)
    return names


def _validate_resources(causes: list[Cause], resources: Any, path: str) -> None:
    res = _map(resources)
    limits, requests = _map(res.get("limits")), _map(res.get("requests"))
    for section, values in (("limits", limits), ("requests", requests)):
        for rname, raw in values.items():
            q = parse_quantity(raw)
            if q is not None and q < 0:
                causes.append(field_invalid(f"{path}.{section}[{rname}]", str(raw), _NEGATIVE))
    for rname, raw in requests.items():
        req, lim = parse_quantity(raw), parse_quantity(limits.get(rname))
        if rname in limits and req is not None and lim is not None and req > lim:
            causes.append(
                field_invalid(
                    f"{path}.requests", str(raw), f"must be less than or equal to {rname} limit"
                )
            )


def _validate_container(
    causes: list[Cause],
    c: Mapping[str, Any],
    path: str,
    all_names: set[str],
    volumes: set[str],
    *,
    is_pod: bool,
) -> None:
    name = _str(c.get("name"))
    if not name:
        causes.append(field_required(f"{path}.name"))
    else:
        causes.extend(field_invalid(f"{path}.name", name, m) for m in is_dns1123_label(name))
    if name and name in all_names:
        causes.append(_duplicate(f"{path}.name", name))
    all_names.add(name)
    image = _str(c.get("image"))
    if not image:
        causes.append(field_required(f"{path}.image"))
    elif is_pod and image != image.strip():
        causes.append(
            field_invalid(f"{path}.image", image, "must not have leading or trailing whitespace")
        )
    port_names: set[str] = set()
    for i, port in enumerate(_dicts(c.get("ports"))):
        ppath = f"{path}.ports[{i}]"
        pname = _str(port.get("name"))
        if pname:
            problems = _port_name(pname)
            causes.extend(field_invalid(f"{ppath}.name", pname, m) for m in problems)
            if not problems and pname in port_names:
                causes.append(_duplicate(f"{ppath}.name", pname))
            port_names.add(pname)
        container_port = port.get("containerPort")
        if not container_port:
            causes.append(field_required(f"{ppath}.containerPort"))
        elif not 1 <= _int(container_port) <= 65535:
            causes.append(field_invalid(f"{ppath}.containerPort", container_port, _PORT_RANGE))
        host_port = port.get("hostPort")
        if host_port and not 1 <= _int(host_port) <= 65535:
            causes.append(field_invalid(f"{ppath}.hostPort", host_port, _PORT_RANGE))
        protocol = _str(port.get("protocol"))
        if not protocol:
            causes.append(field_required(f"{ppath}.protocol"))
        elif protocol not in _PROTOCOLS:
            causes.append(field_not_supported(f"{ppath}.protocol", protocol, _PROTOCOLS))
    for i, env in enumerate(_dicts(c.get("env"))):
        epath = f"{path}.env[{i}].name"
        ename = _str(env.get("name"))
        if not ename:
            causes.append(field_required(epath))
        elif not _ENV_NAME_RE.fullmatch(ename):
            causes.append(
                field_invalid(
                    epath,
                    ename,
                    regex_error(
                        _ENV_NAME_MSG, _ENV_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"
                    ),
                )
            )
    mount_paths: set[str] = set()
    for i, mount in enumerate(_dicts(c.get("volumeMounts"))):
        mpath = f"{path}.volumeMounts[{i}]"
        mname = _str(mount.get("name"))
        if not mname:
            causes.append(field_required(f"{mpath}.name"))
        if mname not in volumes:
            causes.append(_not_found(f"{mpath}.name", mname))
        mount_path = _str(mount.get("mountPath"))
        if not mount_path:
            causes.append(field_required(f"{mpath}.mountPath"))
        if mount_path and mount_path in mount_paths:
            causes.append(field_invalid(f"{mpath}.mountPath", mount_path, "must be unique"))
        mount_paths.add(mount_path)
    _validate_resources(causes, c.get("resources"), f"{path}.resources")
    policy = _str(c.get("terminationMessagePolicy"))
    if not policy:
        causes.append(field_required(f"{path}.terminationMessagePolicy"))
    elif policy not in _TERMINATION_MESSAGE_POLICIES:
        causes.append(
            field_not_supported(
                f"{path}.terminationMessagePolicy", policy, _TERMINATION_MESSAGE_POLICIES
            )
        )
    pull = _str(c.get("imagePullPolicy"))
    if not pull:
        causes.append(field_required(f"{path}.imagePullPolicy"))
    elif pull not in _PULL_POLICIES:
        causes.append(field_not_supported(f"{path}.imagePullPolicy", pull, _PULL_POLICIES))


def _validate_pod_spec(causes: list[Cause], spec: Any, path: str, *, is_pod: bool = False) -> None:
    spec = _map(spec)
    volumes = _validate_volumes(causes, spec.get("volumes"), f"{path}.volumes")
    names: set[str] = set()
    containers = spec.get("containers")
    if not _list(containers):
        causes.append(field_required(f"{path}.containers"))
    for i, c in enumerate(_dicts(containers)):
        _validate_container(causes, c, f"{path}.containers[{i}]", names, volumes, is_pod=is_pod)
    for i, c in enumerate(_dicts(spec.get("initContainers"))):
        _validate_container(causes, c, f"{path}.initContainers[{i}]", names, volumes, is_pod=is_pod)
    restart = _str(spec.get("restartPolicy"))
    if not restart:
        causes.append(field_required(f"{path}.restartPolicy"))
    elif restart not in _RESTART_POLICIES:
        causes.append(field_not_supported(f"{path}.restartPolicy", restart, _RESTART_POLICIES))
    dns = _str(spec.get("dnsPolicy"))
    if not dns:
        causes.append(field_required(f"{path}.dnsPolicy"))
    elif dns not in _DNS_POLICIES:
        causes.append(field_not_supported(f"{path}.dnsPolicy", dns, _DNS_POLICIES))
    _nonneg(
        causes, f"{path}.terminationGracePeriodSeconds", spec.get("terminationGracePeriodSeconds")
    )
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= 2147483647:
        causes.append(
            field_invalid(
                f"{path}.activeDeadlineSeconds",
                deadline,
                "must be between 1 and 2147483647, inclusive",
            )
        )


def _validate_pod_template(causes: list[Cause], template: Any, path: str) -> None:
    template = _map(template)
    meta = _map(template.get("metadata"))
    # The apiserver reports template label errors under "<path>.labels".
    _labels(causes, meta.get("labels"), f"{path}.labels")
    _annotations(causes, meta.get("annotations"), f"{path}.annotations")
    _validate_pod_spec(causes, template.get("spec"), f"{path}.spec")
    if _list(_map(template.get("spec")).get("ephemeralContainers")):
        causes.append(
            field_forbidden(
                f"{path}.spec.ephemeralContainers",
                "ephemeral containers not allowed in pod template",
            )
        )


# --------------------------------------------------------------------------
# Workloads
# --------------------------------------------------------------------------


def _selector_matches(selector: Any, labels: Any) -> bool | None:
    """Whether ``selector`` selects ``labels``; None when the selector is invalid."""
    try:
        sel = label_selector_from_api(selector if isinstance(selector, Mapping) else None)
    except ApiError:
        return None
    return sel.matches(_map(labels))


def _validate_api_selector(causes: list[Cause], selector: Any, path: str) -> None:
    sel = _map(selector)
    _labels(causes, sel.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(_dicts(sel.get("matchExpressions"))):
        epath = f"{path}.matchExpressions[{i}]"
        op = _str(expr.get("operator"))
        values = _list(expr.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                causes.append(
                    field_required(
                        f"{epath}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                causes.append(
                    field_forbidden(
                        f"{epath}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            causes.append(field_invalid(f"{epath}.operator", op, "not a valid selector operator"))
        key = _str(expr.get("key"))
        causes.extend(field_invalid(f"{epath}.key", key, m) for m in is_qualified_name(key))


def _template_labels_match(
    causes: list[Cause], selector: Any, template: Any, path: str, *, skip_empty: bool
) -> None:
    """The selector must select the pods its template produces."""
    labels = _map(_map(template).get("metadata")).get("labels")
    sel = selector if isinstance(selector, Mapping) else None
    if (
        skip_empty
        and sel is not None
        and not sel.get("matchLabels")
        and not sel.get("matchExpressions")
    ):
        return
    if _selector_matches(sel, labels) is False:
        causes.append(
            field_invalid_shown(
                f"{path}.metadata.labels",
                go_string_map(labels),
                "`selector` does not match template `labels`",
            )
        )


def _replicated_selector(
    causes: list[Cause], spec: Mapping[str, Any], empty_msg: str, *, required: bool = True
) -> None:
    selector = spec.get("selector")
    if selector is None:
        if required:
            causes.append(field_required("spec.selector"))
        return
    _validate_api_selector(causes, selector, "spec.selector")
    sel = _map(selector)
    if not sel.get("matchLabels") and not sel.get("matchExpressions"):
        causes.append(field_invalid_shown("spec.selector", go_label_selector(selector), empty_msg))


def _selector_is_valid(selector: Any) -> bool:
    return _selector_matches(selector, {}) is not None


def _validate_replicated_template(
    causes: list[Cause], spec: Mapping[str, Any], kind: str, *, replicaset_style: bool
) -> None:
    selector = spec.get("selector")
    if not _selector_is_valid(selector):
        causes.append(
            field_invalid_shown(
                "spec.selector", go_label_selector(selector), "invalid label selector"
            )
        )
        return
    template = spec.get("template")
    _template_labels_match(causes, selector, template, "spec.template", skip_empty=True)
    _validate_pod_template(causes, template, "spec.template")
    tspec = _map(_map(template).get("spec"))
    restart = _str(tspec.get("restartPolicy"))
    if restart and restart != "Always":
        causes.append(field_not_supported("spec.template.spec.restartPolicy", restart, ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        if replicaset_style:
            causes.append(
                field_invalid(
                    "spec.template.spec.activeDeadlineSeconds",
                    tspec.get("activeDeadlineSeconds"),
                    f"activeDeadlineSeconds in {kind} is not Supported",
                )
            )
        else:
            causes.append(
                field_forbidden(
                    "spec.template.spec.activeDeadlineSeconds",
                    f"activeDeadlineSeconds in {kind} is not Supported",
                )
            )


def _int_or_percent(causes: list[Cause], value: Any, path: str) -> None:
    if isinstance(value, str):
        if not _PERCENT_RE.fullmatch(value):
            causes.append(
                field_invalid_shown(
                    path, _go_intstr(value), "must be an integer or percentage (e.g '5%')"
                )
            )
        elif int(value[:-1]) > 100:
            causes.append(
                field_invalid_shown(path, _go_intstr(value), "must not be greater than 100%")
            )
    elif isinstance(value, int) and value < 0:
        causes.append(field_invalid(path, value, _NEGATIVE))


def _intstr_value(value: Any) -> int:
    if isinstance(value, str) and _PERCENT_RE.fullmatch(value):
        return int(value[:-1])
    return _int(value)


def _validate_rolling(causes: list[Cause], rolling: Mapping[str, Any], path: str) -> None:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    _int_or_percent(causes, unavailable, f"{path}.maxUnavailable")
    _int_or_percent(causes, surge, f"{path}.maxSurge")
    if _intstr_value(unavailable) == 0 and _intstr_value(surge) == 0:
        causes.append(
            field_invalid_shown(
                f"{path}.maxUnavailable",
                _go_intstr(unavailable),
                "may not be 0 when `maxSurge` is 0",
            )
        )


def _deployment_spec(causes: list[Cause], obj: Obj) -> None:
    spec = _map(obj.get("spec"))
    _nonneg(causes, "spec.replicas", spec.get("replicas"))
    _replicated_selector(causes, spec, "empty selector is invalid for deployment")
    _validate_replicated_template(causes, spec, "ReplicaSet", replicaset_style=True)
    strategy = _map(spec.get("strategy"))
    stype = _str(strategy.get("type"))
    if stype == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            causes.append(
                field_forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
    elif stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            causes.append(
                field_required(
                    "spec.strategy.rollingUpdate", "this should be defaulted and never be nil"
                )
            )
        else:
            _validate_rolling(causes, _map(rolling), "spec.strategy.rollingUpdate")
    else:
        causes.append(field_not_supported("spec.strategy", stype, ["Recreate", "RollingUpdate"]))
    _nonneg(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    _nonneg(causes, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        _nonneg(causes, "spec.progressDeadlineSeconds", deadline)
        if deadline <= _int(spec.get("minReadySeconds")):
            causes.append(
                field_invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )


def _replicaset_spec(causes: list[Cause], obj: Obj) -> None:
    spec = _map(obj.get("spec"))
    _nonneg(causes, "spec.replicas", spec.get("replicas"))
    _nonneg(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    # Upstream really says "deployment" here.
    _replicated_selector(causes, spec, "empty selector is invalid for deployment")
    _validate_replicated_template(causes, spec, "ReplicaSet", replicaset_style=True)


def _statefulset_spec(causes: list[Cause], obj: Obj) -> None:
    spec = _map(obj.get("spec"))
    policy = _str(spec.get("podManagementPolicy"))
    if not policy:
        causes.append(field_required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        causes.append(
            field_invalid(
                "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
            )
        )
    strategy = _map(spec.get("updateStrategy"))
    stype = _str(strategy.get("type"))
    if not stype:
        causes.append(field_required("spec.updateStrategy"))
    elif stype == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            causes.append(
                field_invalid(
                    "spec.updateStrategy.rollingUpdate",
                    strategy.get("rollingUpdate"),
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif stype == "RollingUpdate":
        rolling = _map(strategy.get("rollingUpdate"))
        _nonneg(causes, "spec.updateStrategy.rollingUpdate.partition", rolling.get("partition"))
    else:
        causes.append(
            field_invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'")
        )
    _nonneg(causes, "spec.replicas", spec.get("replicas"))
    _nonneg(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    _replicated_selector(causes, spec, "empty selector is invalid for statefulset")
    _validate_replicated_template(causes, spec, "StatefulSet", replicaset_style=False)


def _daemonset_spec(causes: list[Cause], obj: Obj) -> None:
    spec = _map(obj.get("spec"))
    selector = spec.get("selector")
    _replicated_selector(causes, spec, "empty selector is invalid for daemonset")
    if _selector_is_valid(selector):
        _template_labels_match(
            causes, selector, spec.get("template"), "spec.template", skip_empty=False
        )
    _validate_pod_template(causes, spec.get("template"), "spec.template")
    tspec = _map(_map(spec.get("template")).get("spec"))
    restart = _str(tspec.get("restartPolicy"))
    if restart and restart != "Always":
        causes.append(field_not_supported("spec.template.spec.restartPolicy", restart, ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        causes.append(
            field_invalid(
                "spec.template.spec.activeDeadlineSeconds",
                tspec.get("activeDeadlineSeconds"),
                "activeDeadlineSeconds in DaemonSet is not Supported",
            )
        )
    _nonneg(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    strategy = _map(spec.get("updateStrategy"))
    stype = _str(strategy.get("type"))
    if stype == "RollingUpdate":
        rolling = _map(strategy.get("rollingUpdate"))
        _int_or_percent(
            causes,
            rolling.get("maxUnavailable"),
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
        )
        _int_or_percent(
            causes, rolling.get("maxSurge"), "spec.updateStrategy.rollingUpdate.maxSurge"
        )
    elif stype != "OnDelete":
        causes.append(
            field_not_supported("spec.updateStrategy.type", stype, ["OnDelete", "RollingUpdate"])
        )


def _job_spec_common(causes: list[Cause], spec: Mapping[str, Any], path: str) -> None:
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ):
        _nonneg(causes, f"{path}.{key}", spec.get(key))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            causes.append(
                field_not_supported(f"{path}.completionMode", mode, ["NonIndexed", "Indexed"])
            )
        if mode == "Indexed" and spec.get("completions") is None:
            causes.append(field_required(f"{path}.completions", "when completion mode is Indexed"))
    _validate_pod_template(causes, spec.get("template"), f"{path}.template")
    restart = _str(_map(_map(spec.get("template")).get("spec")).get("restartPolicy"))
    rpath = f"{path}.template.spec.restartPolicy"
    if restart in ("Always", ""):
        causes.append(field_required(rpath, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        causes.append(field_not_supported(rpath, restart, ["OnFailure", "Never"]))


def _job_spec(causes: list[Cause], spec: Mapping[str, Any]) -> None:
    _job_spec_common(causes, spec, "spec")
    selector = spec.get("selector")
    if selector is None:
        causes.append(field_required("spec.selector"))
    else:
        _validate_api_selector(causes, selector, "spec.selector")
    if (
        _selector_matches(selector, _map(_map(spec.get("template")).get("metadata")).get("labels"))
        is False
    ):
        labels = _map(_map(spec.get("template")).get("metadata")).get("labels")
        causes.append(
            field_invalid_shown(
                "spec.template.metadata.labels",
                go_string_map(labels),
                "`selector` does not match template `labels`",
            )
        )


def _job_generated_selector(causes: list[Cause], obj: Obj) -> None:
    """A generated selector's labels must be on the template (validateGeneratedSelector)."""
    spec = _map(obj.get("spec"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return
    meta = _meta(obj)
    uid, name = _str(meta.get("uid")), _str(meta.get("name"))
    if not uid:
        causes.append(field_required("metadata.uid"))
    labels = _map(_map(_map(spec.get("template")).get("metadata")).get("labels"))
    # On create the batch.kubernetes.io labels are required beside the legacy ones.
    expected_labels = {
        LEGACY_CONTROLLER_UID_LABEL: uid,
        LEGACY_JOB_NAME_LABEL: name,
        CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
    }
    for key, expected in expected_labels.items():
        lpath = f"spec.template.metadata.labels[{key}]"
        if key not in labels:
            causes.append(field_required(lpath, f"must be '{expected}'"))
        elif labels[key] != expected:
            causes.append(
                field_invalid_shown(lpath, go_string_map(labels), f"must be '{expected}'")
            )
    if _selector_matches(spec.get("selector"), expected_labels) is False:
        causes.append(
            field_invalid_shown(
                "spec.selector",
                go_label_selector(spec.get("selector")),
                "`selector` not auto-generated",
            )
        )


def _job_create(causes: list[Cause], obj: Obj) -> None:
    _job_generated_selector(causes, obj)
    _job_spec(causes, _map(obj.get("spec")))


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_CRON_NAMES: tuple[dict[str, int], ...] = (
    {},
    {},
    {},
    {m: i + 1 for i, m in enumerate(_MONTHS)},
    {d: i for i, d in enumerate(_WEEKDAYS)},
)
_CRON_DESCRIPTORS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)


def _cron_int(text: str, names: Mapping[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"[0-9]+", text):
        raise ValueError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    return int(text)


def _cron_range(expr: str, low: int, high: int, names: Mapping[str, int]) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _cron_int(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _cron_int(low_and_high[1], names)
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 2:
        step = _cron_int(range_and_step[1], names)
        if step <= 0:
            raise ValueError(f"step of range should be a positive number: {expr}")
    elif len(range_and_step) > 2:
        raise ValueError(f"too many slashes: {expr}")
    if start < low:
        raise ValueError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise ValueError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")


def _cron_problem(schedule: str) -> str | None:
    """Check a standard cron schedule, worded like the robfig/cron parser."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        text = text.split(None, 1)[1] if " " in text else ""
    if text.startswith("@"):
        if text in _CRON_DESCRIPTORS or text.startswith("@every "):
            return None
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        for part, (low, high), names in zip(fields, _CRON_BOUNDS, _CRON_NAMES, strict=True):
            for expr in part.split(","):
                _cron_range(expr, low, high, names)
    except ValueError as exc:
        return str(exc)
    return None


def _cronjob_spec(causes: list[Cause], obj: Obj) -> None:
    spec = _map(obj.get("spec"))
    schedule = _str(spec.get("schedule"))
    if not schedule:
        causes.append(field_required("spec.schedule"))
    else:
        problem = _cron_problem(schedule)
        if problem:
            causes.append(field_invalid("spec.schedule", schedule, problem))
    _nonneg(causes, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    policy = _str(spec.get("concurrencyPolicy"))
    if not policy:
        causes.append(field_required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        causes.append(
            field_not_supported("spec.concurrencyPolicy", policy, ["Allow", "Forbid", "Replace"])
        )
    job_spec = _map(_map(spec.get("jobTemplate")).get("spec"))
    _job_spec_common(causes, job_spec, "spec.jobTemplate.spec")
    if job_spec.get("selector") is not None:
        causes.append(
            field_invalid_shown(
                "spec.jobTemplate.spec.selector",
                go_label_selector(job_spec.get("selector")),
                "`selector` will be auto-generated",
            )
        )
    if job_spec.get("manualSelector") is True:
        causes.append(
            field_not_supported("spec.jobTemplate.spec.manualSelector", True, ["nil", "false"])
        )
    _nonneg(causes, "spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"))
    _nonneg(causes, "spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit"))


def _cronjob_create(causes: list[Cause], obj: Obj) -> None:
    _cronjob_spec(causes, obj)
    name = _str(_meta(obj).get("name"))
    # The controller appends an 11-character suffix to make Job names.
    if len(name) > 52:
        causes.append(field_invalid("metadata.name", name, "must be no more than 52 characters"))


def _pod_spec_create(causes: list[Cause], obj: Obj) -> None:
    _validate_pod_spec(causes, obj.get("spec"), "spec", is_pod=True)


def _pod_template_create(causes: list[Cause], obj: Obj) -> None:
    _validate_pod_template(causes, obj.get("template"), "template")


# --------------------------------------------------------------------------
# Status
# --------------------------------------------------------------------------

_GREATER = "cannot be greater than status.replicas"


def _replica_status(
    causes: list[Cause],
    status: Mapping[str, Any],
    nonneg: Iterable[str],
    bounded: Iterable[str],
    ready_msg: str,
) -> None:
    for key in nonneg:
        _nonneg(causes, f"status.{key}", status.get(key))
    replicas = _int(status.get("replicas"))
    for key in bounded:
        if _int(status.get(key)) > replicas:
            causes.append(field_invalid(f"status.{key}", _int(status.get(key)), _GREATER))
    available = _int(status.get("availableReplicas"))
    if available > _int(status.get("readyReplicas")):
        causes.append(field_invalid("status.availableReplicas", available, ready_msg))


def _collision_count(causes: list[Cause], old: Obj | None, new: Obj) -> None:
    if old is None:
        return
    old_count = _map(old.get("status")).get("collisionCount")
    new_count = _map(new.get("status")).get("collisionCount")
    if isinstance(old_count, int) and (new_count is None or _int(new_count) < old_count):
        causes.append(
            field_invalid("status.collisionCount", _int(new_count), "cannot be decremented")
        )


def _deployment_status(causes: list[Cause], obj: Obj, old: Obj | None) -> None:
    status = _map(obj.get("status"))
    _replica_status(
        causes,
        status,
        (
            "observedGeneration",
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "collisionCount",
        ),
        ("updatedReplicas", "readyReplicas", "availableReplicas"),
        "cannot be greater than readyReplicas",
    )
    _collision_count(causes, old, obj)


def _replicaset_status(causes: list[Cause], obj: Obj, old: Obj | None) -> None:
    _replica_status(
        causes,
        _map(obj.get("status")),
        (
            "replicas",
            "fullyLabeledReplicas",
            "readyReplicas",
            "availableReplicas",
            "observedGeneration",
        ),
        ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
        "cannot be greater than readyReplicas",
    )


def _statefulset_status(causes: list[Cause], obj: Obj, old: Obj | None) -> None:
    _replica_status(
        causes,
        _map(obj.get("status")),
        (
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
            "observedGeneration",
            "collisionCount",
        ),
        ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"),
        "cannot be greater than status.readyReplicas",
    )
    _collision_count(causes, old, obj)


def _daemonset_status(causes: list[Cause], obj: Obj, old: Obj | None) -> None:
    status = _map(obj.get("status"))
    for key in (
        "numberMisscheduled",
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberReady",
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "collisionCount",
    ):
        _nonneg(causes, f"status.{key}", status.get(key))
    _collision_count(causes, old, obj)


def _job_status(causes: list[Cause], obj: Obj, old: Obj | None) -> None:
    status = _map(obj.get("status"))
    for key in ("active", "succeeded", "failed", "ready"):
        _nonneg(causes, f"status.{key}", status.get(key))


# --------------------------------------------------------------------------
# Services
# --------------------------------------------------------------------------


def _service_spec(causes: list[Cause], obj: Obj) -> None:
    spec = _map(obj.get("spec"))
    stype = _str(spec.get("type"))
    headless = spec.get("clusterIP") == "None"
    ports = _dicts(spec.get("ports"))
    if not ports and not headless and stype != "ExternalName":
        causes.append(field_required("spec.ports"))
    if stype == "ExternalName":
        if _list(spec.get("clusterIPs")):
            causes.append(
                field_forbidden("spec.clusterIPs", "may not be set for ExternalName services")
            )
        cname = _str(spec.get("externalName")).removesuffix(".")
        if cname:
            causes.extend(
                field_invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname)
            )
        else:
            causes.append(field_required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        ppath = f"spec.ports[{i}]"
        pname = _str(port.get("name"))
        if len(ports) > 1 and not pname:
            causes.append(field_required(f"{ppath}.name"))
        elif pname:
            causes.extend(field_invalid(f"{ppath}.name", pname, m) for m in is_dns1123_label(pname))
            if pname in names:
                causes.append(_duplicate(f"{ppath}.name", pname))
            names.add(pname)
        if not 1 <= _int(port.get("port")) <= 65535:
            causes.append(field_invalid(f"{ppath}.port", port.get("port"), _PORT_RANGE))
        protocol = _str(port.get("protocol"))
        if not protocol:
            causes.append(field_required(f"{ppath}.protocol"))
        elif protocol not in _PROTOCOLS:
            causes.append(field_not_supported(f"{ppath}.protocol", protocol, _PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            causes.extend(
                field_invalid(f"{ppath}.targetPort", target, m) for m in _port_name(target)
            )
        elif isinstance(target, int) and not 1 <= target <= 65535:
            causes.append(field_invalid(f"{ppath}.targetPort", target, _PORT_RANGE))
        if stype == "ClusterIP" and port.get("nodePort"):
            causes.append(
                field_forbidden(f"{ppath}.nodePort", "may not be used when `type` is 'ClusterIP'")
            )
    affinity = _str(spec.get("sessionAffinity"))
    if affinity not in ("ClientIP", "None"):
        causes.append(field_not_supported("spec.sessionAffinity", affinity, ["ClientIP", "None"]))
    if stype not in ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"):
        causes.append(
            field_not_supported(
                "spec.type", stype, ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
            )
        )
    cluster_ips = _list(spec.get("clusterIPs"))
    cluster_ip = spec.get("clusterIP")
    if cluster_ip and cluster_ips and cluster_ips[0] != cluster_ip:
        causes.append(
            field_invalid_shown(
                "spec.clusterIPs", _go_strings(cluster_ips), "first value must match `clusterIP`"
            )
        )
    for i, ip in enumerate(cluster_ips):
        if ip == "None":
            continue
        try:
            ipaddress.ip_address(str(ip))
        except ValueError:
            causes.append(
                field_invalid(
                    f"spec.clusterIPs[{i}]",
                    ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )


def _service_update(causes: list[Cause], old: Obj, new: Obj) -> None:
    old_spec, new_spec = _map(old.get("spec")), _map(new.get("spec"))
    if "ExternalName" in (old_spec.get("type"), new_spec.get("type")):
        return
    old_ips, new_ips = _list(old_spec.get("clusterIPs")), _list(new_spec.get("clusterIPs"))
    if old_spec.get("clusterIP") == "None" and new_spec.get("clusterIP") == "None":
        return
    shown = _go_strings(new_ips)
    if len(old_ips) == len(new_ips):
        if old_ips != new_ips:
            causes.append(
                field_invalid_shown("spec.clusterIPs[0]", shown, "may not change once set")
            )
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            causes.append(
                field_invalid_shown(
                    "spec.clusterIPs[0]", shown, "primary clusterIP can not be unset"
                )
            )
        elif new_ips[0] != old_ips[0]:
            causes.append(
                field_invalid_shown("spec.clusterIPs[0]", shown, "may not change once set")
            )
    elif old_ips and new_ips[0] != old_ips[0]:
        causes.append(field_invalid_shown("spec.clusterIPs[0]", shown, "may not change once set"))


# --------------------------------------------------------------------------
# Core config kinds
# --------------------------------------------------------------------------


def _data_size(value: Any, binary: bool) -> int:
    if not isinstance(value, str):
        return 0
    if binary:
        try:
            return len(base64.b64decode(value, validate=False))
        except (binascii.Error, ValueError):
            return len(value)
    return len(value.encode())


def _config_data(causes: list[Cause], obj: Obj, *, secret: bool) -> None:
    data, binary = _map(obj.get("data")), _map(obj.get("binaryData"))
    total = 0
    for key, value in data.items():
        causes.extend(field_invalid(f"data[{key}]", key, m) for m in _config_key(str(key)))
        if key in binary:
            causes.append(
                field_invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
            )
        total += _data_size(value, secret)
    for key, value in binary.items():
        causes.extend(field_invalid(f"binaryData[{key}]", key, m) for m in _config_key(str(key)))
        if key in data:
            causes.append(
                field_invalid(f"binaryData[{key}]", key, "duplicate of key present in data")
            )
        total += _data_size(value, True)
    for key in _map(obj.get("stringData")):
        causes.extend(field_invalid(f"stringData[{key}]", key, m) for m in _config_key(str(key)))
    if total > _MAX_DATA_SIZE:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "message": f"Too long: may not be more than {_MAX_DATA_SIZE} bytes",
                # A ConfigMap's total is checked on field.NewPath(""), which the
                # apiserver prints as "[]" (a root step without a name is an index).
                "field": "data" if secret else "[]",
            }
        )


def _configmap_create(causes: list[Cause], obj: Obj) -> None:
    _config_data(causes, obj, secret=False)


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.key", "tls.crt"),
}


def _secret_create(causes: list[Cause], obj: Obj) -> None:
    _config_data(causes, obj, secret=True)
    stype = _str(obj.get("type"))
    data = {**_map(obj.get("data")), **_map(obj.get("stringData"))}
    if stype == "kubernetes.io/service-account-token":
        annotations = _map(_meta(obj).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            causes.append(
                field_required("metadata.annotations[kubernetes.io/service-account.name]")
            )
    elif stype == "kubernetes.io/tls":
        causes.extend(field_required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data)
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            causes.append(field_required("data[username]"))
            causes.append(field_required("data[password]"))
    elif stype in _SECRET_REQUIRED_KEYS:
        causes.extend(
            field_required(f"data[{k}]") for k in _SECRET_REQUIRED_KEYS[stype] if k not in data
        )


def _immutable_data(causes: list[Cause], old: Obj, new: Obj) -> None:
    if old.get("immutable") is not True:
        return
    if new.get("immutable") is not True:
        causes.append(field_forbidden("immutable", "field is immutable when `immutable` is set"))
    for key in ("data", "binaryData"):
        if _map(old.get(key)) != _map(new.get(key)):
            causes.append(field_forbidden(key, "field is immutable when `immutable` is set"))


def _secret_update(causes: list[Cause], old: Obj, new: Obj) -> None:
    if _str(new.get("type")) != _str(old.get("type")):
        causes.append(field_invalid("type", _str(new.get("type")), IMMUTABLE))
    _immutable_data(causes, old, new)


def _namespace_create(causes: list[Cause], obj: Obj) -> None:
    for fin in _list(_map(obj.get("spec")).get("finalizers")):
        name = str(fin)
        causes.extend(field_invalid("spec.finalizers", name, m) for m in is_qualified_name(name))
        if "/" not in name and name not in ("kubernetes", "orphan", "foregroundDeletion"):
            causes.append(
                field_invalid(
                    "spec.finalizers",
                    name,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )


# --------------------------------------------------------------------------
# RBAC
# --------------------------------------------------------------------------


def _policy_rules(causes: list[Cause], rules: Any, *, namespaced: bool) -> None:
    for i, rule in enumerate(_dicts(rules)):
        path = f"rules[{i}]"
        if not _list(rule.get("verbs")):
            causes.append(field_required(f"{path}.verbs", "verbs must contain at least one value"))
        urls = _list(rule.get("nonResourceURLs"))
        if urls:
            if namespaced:
                causes.append(
                    field_invalid_shown(
                        f"{path}.nonResourceURLs",
                        _go_strings(urls),
                        "namespaced rules cannot apply to non-resource URLs",
                    )
                )
            if _list(rule.get("apiGroups")) or _list(rule.get("resources")):
                causes.append(
                    field_invalid_shown(
                        f"{path}.nonResourceURLs",
                        _go_strings(urls),
                        "rules cannot apply to both regular resources and non-resource URLs",
                    )
                )
            continue
        if not _list(rule.get("apiGroups")):
            causes.append(
                field_required(
                    f"{path}.apiGroups", "resource rules must supply at least one api group"
                )
            )
        if not _list(rule.get("resources")):
            causes.append(
                field_required(
                    f"{path}.resources", "resource rules must supply at least one resource"
                )
            )


def _role_create(causes: list[Cause], obj: Obj) -> None:
    _policy_rules(causes, obj.get("rules"), namespaced=True)


def _cluster_role_create(causes: list[Cause], obj: Obj) -> None:
    if obj.get("aggregationRule") is None:
        _policy_rules(causes, obj.get("rules"), namespaced=False)


def _binding(causes: list[Cause], obj: Obj, *, namespaced: bool) -> None:
    ref = _map(obj.get("roleRef"))
    if ref.get("apiGroup") != _RBAC:
        causes.append(field_not_supported("roleRef.apiGroup", _str(ref.get("apiGroup")), [_RBAC]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.get("kind") not in kinds:
        causes.append(field_not_supported("roleRef.kind", _str(ref.get("kind")), kinds))
    ref_name = _str(ref.get("name"))
    if not ref_name:
        causes.append(field_required("roleRef.name"))
    else:
        causes.extend(
            field_invalid("roleRef.name", ref_name, m) for m in _path_segment(ref_name, False)
        )
    for i, subject in enumerate(_dicts(obj.get("subjects"))):
        spath = f"subjects[{i}]"
        sname = _str(subject.get("name"))
        if not sname:
            causes.append(field_required(f"{spath}.name"))
        kind = subject.get("kind")
        if kind == "ServiceAccount":
            if sname:
                causes.extend(
                    field_invalid(f"{spath}.name", sname, m) for m in is_dns1123_subdomain(sname)
                )
            if subject.get("apiGroup"):
                causes.append(
                    field_not_supported(f"{spath}.apiGroup", _str(subject.get("apiGroup")), [""])
                )
            if not namespaced and not subject.get("namespace"):
                causes.append(field_required(f"{spath}.namespace"))
        elif kind in ("User", "Group"):
            if subject.get("apiGroup") != _RBAC:
                causes.append(
                    field_not_supported(f"{spath}.apiGroup", _str(subject.get("apiGroup")), [_RBAC])
                )
        else:
            causes.append(
                field_not_supported(
                    f"{spath}.kind", _str(kind), ["ServiceAccount", "User", "Group"]
                )
            )


def _role_binding_create(causes: list[Cause], obj: Obj) -> None:
    _binding(causes, obj, namespaced=True)


def _cluster_role_binding_create(causes: list[Cause], obj: Obj) -> None:
    _binding(causes, obj, namespaced=False)


def _binding_update(causes: list[Cause], old: Obj, new: Obj) -> None:
    if _map(old.get("roleRef")) != _map(new.get("roleRef")):
        ref = _map(new.get("roleRef"))
        shown = (
            f"rbac.RoleRef{{APIGroup:{go_quote(_str(ref.get('apiGroup')))}, "
            f"Kind:{go_quote(_str(ref.get('kind')))}, Name:{go_quote(_str(ref.get('name')))}}}"
        )
        causes.append(field_invalid_shown("roleRef", shown, "cannot change roleRef"))


# --------------------------------------------------------------------------
# CustomResourceDefinitions
# --------------------------------------------------------------------------

_CRD_GROUP = "apiextensions.k8s.io"


def _crd_name(causes: list[Cause], obj: Obj) -> None:
    """metadata.name: a DNS subdomain that must equal ``<plural>.<group>``."""
    spec = _map(obj.get("spec"))
    name = _str(_meta(obj).get("name"))
    if not name:
        causes.append(field_required("metadata.name", "name or generateName is required"))
        return
    problems = is_dns1123_subdomain(name)
    expected = f"{_str(_map(spec.get('names')).get('plural'))}.{_str(spec.get('group'))}"
    if name != expected:
        problems.append('must be spec.names.plural+"."+spec.group')
    causes.extend(field_invalid("metadata.name", name, m) for m in problems)


def _go_versions(versions: Any) -> str:
    items = _dicts(versions)
    if not isinstance(versions, list):
        return "[]apiextensions.CustomResourceDefinitionVersion(nil)"
    shown = ", ".join(
        "apiextensions.CustomResourceDefinitionVersion{"
        f"Name:{go_quote(_str(v.get('name')))}, Served:{shown_value(bool(v.get('served')))}, "
        f"Storage:{shown_value(bool(v.get('storage')))}, ...}}"
        for v in items
    )
    return "[]apiextensions.CustomResourceDefinitionVersion{" + shown + "}"


def _crd_spec(causes: list[Cause], obj: Obj) -> None:
    spec = _map(obj.get("spec"))
    group = _str(spec.get("group"))
    if not group:
        causes.append(field_required("spec.group"))
    elif problems := is_dns1123_subdomain(group):
        causes.append(field_invalid("spec.group", group, ",".join(problems)))
    elif len(group.split(".")) < 2:
        causes.append(
            field_invalid("spec.group", group, "should be a domain with at least one dot")
        )
    scope = _str(spec.get("scope"))
    if not scope:
        causes.append(field_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        causes.append(field_not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    versions = spec.get("versions")
    storage_count = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(_dicts(versions)):
        vpath = f"spec.versions[{i}]"
        vname = _str(version.get("name"))
        if version.get("storage") is True:
            storage_count += 1
        if vname in seen:
            unique = False
        seen.add(vname)
        if problems := is_dns1035_label(vname):
            causes.append(field_invalid(f"{vpath}.name", vname, ",".join(problems)))
        schema = _map(version.get("schema")).get("openAPIV3Schema")
        if not isinstance(schema, Mapping):
            causes.append(field_required(f"{vpath}.schema.openAPIV3Schema", "schemas are required"))
        else:
            root_type = schema.get("type")
            tpath = f"{vpath}.schema.openAPIV3Schema.type"
            if not root_type:
                causes.append(field_required(tpath, "must not be empty at the root"))
            elif root_type != "object":
                causes.append(field_invalid(tpath, root_type, "must be object at the root"))
    if not unique:
        causes.append(
            field_invalid_shown(
                "spec.versions", _go_versions(versions), "must contain unique version names"
            )
        )
    if storage_count != 1:
        causes.append(
            field_invalid_shown(
                "spec.versions",
                _go_versions(versions),
                "must have exactly one version marked as storage version",
            )
        )
    names = _map(spec.get("names"))
    plural = _str(names.get("plural"))
    if not plural:
        causes.append(field_required("spec.names.plural"))
    elif problems := is_dns1035_label(plural):
        causes.append(field_invalid("spec.names.plural", plural, ",".join(problems)))
    singular = _str(names.get("singular"))
    if singular and (problems := is_dns1035_label(singular)):
        causes.append(field_invalid("spec.names.singular", singular, ",".join(problems)))
    kind = _str(names.get("kind"))
    list_kind = _str(names.get("listKind"))
    if not kind:
        causes.append(field_required("spec.names.kind"))
    for key, value in (("kind", kind), ("listKind", list_kind)):
        if value and (problems := is_dns1035_label(value.lower())):
            causes.append(
                field_invalid(
                    f"spec.names.{key}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(problems),
                )
            )
    if not list_kind:
        causes.append(field_required("spec.names.listKind"))
    elif kind and kind == list_kind:
        causes.append(
            field_invalid("spec.names.listKind", list_kind, "kind and listKind may not be the same")
        )
    for i, short in enumerate(_list(names.get("shortNames"))):
        if problems := is_dns1035_label(str(short)):
            causes.append(field_invalid(f"spec.names.shortNames[{i}]", short, ",".join(problems)))
    for i, category in enumerate(_list(names.get("categories"))):
        if problems := is_dns1035_label(str(category)):
            causes.append(
                field_invalid(f"spec.names.categories[{i}]", category, ",".join(problems))
            )
    strategy = _str(_map(spec.get("conversion")).get("strategy"))
    if strategy and strategy not in ("None", "Webhook"):
        causes.append(
            field_not_supported("spec.conversion.strategy", strategy, ["None", "Webhook"])
        )


def _crd_api_approval(causes: list[Cause], obj: Obj) -> None:
    group = _str(_map(obj.get("spec")).get("group"))
    protected = group in ("k8s.io", "kubernetes.io") or group.endswith(
        (".k8s.io", ".kubernetes.io")
    )
    if not protected:
        return
    annotations = _map(_meta(obj).get("annotations"))
    if "api-approved.kubernetes.io" not in annotations:
        causes.append(
            field_required(
                "metadata.annotations[api-approved.kubernetes.io]",
                'protected groups must have approval annotation "api-approved.kubernetes.io", '
                "see https://github.com/kubernetes/enhancements/pull/1111",
            )
        )


def _crd_stored_versions(causes: list[Cause], obj: Obj) -> None:
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return  # not defaulted yet; defaulting fills storedVersions
    stored = [str(v) for v in _list(status.get("storedVersions"))]
    path = "status.storedVersions"
    if not stored:
        causes.append(
            field_invalid_shown(path, _go_strings(stored), "must have at least one stored version")
        )
        return
    versions = _dicts(_map(obj.get("spec")).get("versions"))
    names = [_str(v.get("name")) for v in versions]
    for v in versions:
        if v.get("storage") is True and _str(v.get("name")) not in stored:
            causes.append(
                field_invalid(path, v, "must have the storage version " + _str(v.get("name")))
            )
    for i, name in enumerate(stored):
        if name not in names:
            causes.append(field_invalid(f"{path}[{i}]", name, "must appear in spec.versions"))


def _crd_create(causes: list[Cause], obj: Obj) -> None:
    _crd_spec(causes, obj)
    _crd_stored_versions(causes, obj)
    _crd_api_approval(causes, obj)


def _crd_established(obj: Obj) -> bool:
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in _dicts(_map(obj.get("status")).get("conditions"))
    )


def _crd_update(causes: list[Cause], old: Obj, new: Obj) -> None:
    old_spec, new_spec = _map(old.get("spec")), _map(new.get("spec"))
    if _crd_established(old):
        if old_spec.get("scope") != new_spec.get("scope"):
            causes.append(field_invalid("spec.scope", _str(new_spec.get("scope")), IMMUTABLE))
        old_kind = _map(old_spec.get("names")).get("kind")
        new_kind = _map(new_spec.get("names")).get("kind")
        if old_kind != new_kind:
            causes.append(field_invalid("spec.names.kind", _str(new_kind), IMMUTABLE))
    if old_spec.get("group") != new_spec.get("group"):
        causes.append(field_invalid("spec.group", _str(new_spec.get("group")), IMMUTABLE))
    old_plural = _map(old_spec.get("names")).get("plural")
    new_plural = _map(new_spec.get("names")).get("plural")
    if old_plural != new_plural:
        causes.append(field_invalid("spec.names.plural", _str(new_plural), IMMUTABLE))


# --------------------------------------------------------------------------
# Update rules
# --------------------------------------------------------------------------


def _immutable_selector(causes: list[Cause], old: Obj, new: Obj) -> None:
    old_sel = _map(old.get("spec")).get("selector")
    new_sel = _map(new.get("spec")).get("selector")
    if not _same(old_sel, new_sel):
        causes.append(field_invalid_shown("spec.selector", go_label_selector(new_sel), IMMUTABLE))


def _statefulset_update(causes: list[Cause], old: Obj, new: Obj) -> None:
    mutable = (
        "replicas",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "persistentVolumeClaimRetentionPolicy",
    )
    old_rest = {k: v for k, v in _map(old.get("spec")).items() if k not in mutable}
    new_rest = {k: v for k, v in _map(new.get("spec")).items() if k not in mutable}
    if not _same(old_rest, new_rest):
        causes.append(
            field_forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'template', "
                "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                "'minReadySeconds' are forbidden",
            )
        )


def _job_update(causes: list[Cause], old: Obj, new: Obj) -> None:
    old_spec, new_spec = _map(old.get("spec")), _map(new.get("spec"))
    if old_spec.get("completions") != new_spec.get("completions"):
        causes.append(field_invalid("spec.completions", new_spec.get("completions"), IMMUTABLE))
    if not _same(old_spec.get("selector"), new_spec.get("selector")):
        causes.append(
            field_invalid_shown(
                "spec.selector", go_label_selector(new_spec.get("selector")), IMMUTABLE
            )
        )
    old_tpl, new_tpl = _map(old_spec.get("template")), _map(new_spec.get("template"))
    if old_spec.get("suspend") is True and not _map(old.get("status")).get("startTime"):
        # A suspended Job that never started may change its scheduling directives.
        old_tpl, new_tpl = _mask_scheduling(old_tpl), _mask_scheduling(new_tpl)
    if not _same(old_tpl, new_tpl):
        causes.append(field_invalid("spec.template", new_spec.get("template"), IMMUTABLE))
    if old_spec.get("completionMode") != new_spec.get("completionMode"):
        causes.append(
            field_invalid("spec.completionMode", new_spec.get("completionMode"), IMMUTABLE)
        )


def _mask_scheduling(template: Mapping[str, Any]) -> dict[str, Any]:
    meta = {
        k: v
        for k, v in _map(template.get("metadata")).items()
        if k not in ("labels", "annotations")
    }
    spec = {
        k: v
        for k, v in _map(template.get("spec")).items()
        if k not in ("nodeSelector", "tolerations")
    }
    affinity = {k: v for k, v in _map(spec.get("affinity")).items() if k != "nodeAffinity"}
    spec["affinity"] = affinity or None
    return {**template, "metadata": meta, "spec": spec}


_POD_UPDATE_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`, "
    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
    "(only additions to existing tolerations) or `spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _pod_update(causes: list[Cause], old: Obj, new: Obj) -> None:
    def masked(spec: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations")}
        for key in ("containers", "initContainers"):
            out[key] = [{k: v for k, v in c.items() if k != "image"} for c in _dicts(spec.get(key))]
        return out

    old_spec, new_spec = _map(old.get("spec")), _map(new.get("spec"))
    if not _same(masked(old_spec), masked(new_spec)):
        causes.append(field_forbidden("spec", _POD_UPDATE_MSG))
        return
    old_tol = _dicts(old_spec.get("tolerations"))
    new_tol = _dicts(new_spec.get("tolerations"))
    if any(t not in new_tol for t in old_tol):
        causes.append(field_forbidden("spec", _POD_UPDATE_MSG))


# --------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------

_Check = Callable[[list[Cause], Obj], None]
_UpdateCheck = Callable[[list[Cause], Obj, Obj], None]
_StatusCheck = Callable[[list[Cause], Obj, Obj | None], None]

_CREATE: dict[tuple[str, str], _Check] = {
    ("", "Pod"): _pod_spec_create,
    ("", "PodTemplate"): _pod_template_create,
    ("", "Service"): _service_spec,
    ("", "Namespace"): _namespace_create,
    ("", "ConfigMap"): _configmap_create,
    ("", "Secret"): _secret_create,
    ("apps", "Deployment"): _deployment_spec,
    ("apps", "ReplicaSet"): _replicaset_spec,
    ("apps", "StatefulSet"): _statefulset_spec,
    ("apps", "DaemonSet"): _daemonset_spec,
    ("batch", "Job"): _job_create,
    ("batch", "CronJob"): _cronjob_create,
    (_RBAC, "Role"): _role_create,
    (_RBAC, "ClusterRole"): _cluster_role_create,
    (_RBAC, "RoleBinding"): _role_binding_create,
    (_RBAC, "ClusterRoleBinding"): _cluster_role_binding_create,
    (_CRD_GROUP, "CustomResourceDefinition"): _crd_create,
}

# Spec checks re-run on update (create-only checks such as the CronJob name
# length or the Job's generated selector are left out).
_UPDATE_SPEC: dict[tuple[str, str], _Check] = {
    **_CREATE,
    ("batch", "Job"): lambda causes, obj: _job_spec(causes, _map(obj.get("spec"))),
    ("batch", "CronJob"): _cronjob_spec,
}

_UPDATE: dict[tuple[str, str], _UpdateCheck] = {
    ("", "Pod"): _pod_update,
    ("", "Service"): _service_update,
    ("", "ConfigMap"): _immutable_data,
    ("", "Secret"): _secret_update,
    ("apps", "Deployment"): _immutable_selector,
    ("apps", "ReplicaSet"): _immutable_selector,
    ("apps", "DaemonSet"): _immutable_selector,
    ("apps", "StatefulSet"): _statefulset_update,
    ("batch", "Job"): _job_update,
    (_RBAC, "RoleBinding"): _binding_update,
    (_RBAC, "ClusterRoleBinding"): _binding_update,
    (_CRD_GROUP, "CustomResourceDefinition"): _crd_update,
}

_STATUS: dict[tuple[str, str], _StatusCheck] = {
    ("apps", "Deployment"): _deployment_status,
    ("apps", "ReplicaSet"): _replicaset_status,
    ("apps", "StatefulSet"): _statefulset_status,
    ("apps", "DaemonSet"): _daemonset_status,
    ("batch", "Job"): _job_status,
    (_CRD_GROUP, "CustomResourceDefinition"): lambda causes, obj, old: _crd_stored_versions(
        causes, obj
    ),
}


def _raise(group: str, kind: str, obj: Obj, causes: list[Cause]) -> None:
    if causes:
        raise invalid(kind, _str(_meta(obj).get("name")), causes, group)


def validate_create(group: str, kind: str, obj: dict[str, Any], namespaced: bool) -> None:
    """Validate a (defaulted) object about to be created.

    Raises the apiserver's 422 ``Invalid`` ``ApiError`` listing every problem.
    ``namespaced`` says whether the kind lives in namespaces (then
    ``metadata.namespace`` is required).
    """
    key = (group, kind)
    is_crd = key == (_CRD_GROUP, "CustomResourceDefinition")
    causes = _validate_meta_create(group, kind, obj, namespaced, name_check=not is_crd)
    if is_crd:
        crd_causes: list[Cause] = []
        _crd_name(crd_causes, obj)
        causes = crd_causes + causes
    check = _CREATE.get(key)
    if check is not None:
        check(causes, obj)
    _raise(group, kind, obj, causes)


def validate_update(
    group: str,
    kind: str,
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    subresource: str = "",
) -> None:
    """Validate the change from ``old`` to ``new`` (both defaulted).

    Checks metadata immutability, the kind's spec rules and immutable fields,
    and status consistency. With ``subresource="status"`` the spec is not
    re-validated, as on the apiserver's ``/status`` endpoint.
    """
    key = (group, kind)
    causes = _validate_meta_update(old, new)
    if subresource != "status":
        check = _UPDATE_SPEC.get(key)
        if check is not None:
            check(causes, new)
        rule = _UPDATE.get(key)
        if rule is not None:
            rule(causes, old, new)
    status_check = _STATUS.get(key)
    if status_check is not None:
        status_check(causes, new, old)
    _raise(group, kind, new, causes)
