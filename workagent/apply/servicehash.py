"""The ``operator.openshift.io/spec-hash`` of a Service, as OCM's agent computes it.

OCM's agent (through library-go) hashes ``json.Marshal`` of the typed
``corev1.ServiceSpec`` decoded from the manifest: fields in the struct's
order, unknown fields dropped, ``omitempty`` zero values left out, ``port``
and ``targetPort`` always written (``targetPort`` is a struct, so ``0`` when
absent). Hashing the same bytes makes the annotation the same under both
agents, so a spoke taken over from OCM's agent sees no Service rewritten.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from ocmkit.govalues import go_marshal

# How a field is written: omitted when zero (omitempty), omitted only when null
# (a pointer), or always; a tuple is a nested struct (through a pointer).
_OMIT_ZERO: Final = "omitempty"
_POINTER: Final = "pointer"
_ALWAYS: Final = "always"

_Fields = tuple[tuple[str, Any], ...]

_CLIENT_IP: Final[_Fields] = (("timeoutSeconds", _POINTER),)
_AFFINITY_CONFIG: Final[_Fields] = (("clientIP", _CLIENT_IP),)
_PORT: Final[_Fields] = (
    ("name", _OMIT_ZERO),
    ("protocol", _OMIT_ZERO),
    ("appProtocol", _POINTER),
    ("port", _ALWAYS),
    ("targetPort", _ALWAYS),
    ("nodePort", _OMIT_ZERO),
)
_SPEC: Final[_Fields] = (
    ("ports", _PORT),
    ("selector", _OMIT_ZERO),
    ("clusterIP", _OMIT_ZERO),
    ("clusterIPs", _OMIT_ZERO),
    ("type", _OMIT_ZERO),
    ("externalIPs", _OMIT_ZERO),
    ("sessionAffinity", _OMIT_ZERO),
    ("loadBalancerIP", _OMIT_ZERO),
    ("loadBalancerSourceRanges", _OMIT_ZERO),
    ("externalName", _OMIT_ZERO),
    ("externalTrafficPolicy", _OMIT_ZERO),
    ("healthCheckNodePort", _OMIT_ZERO),
    ("publishNotReadyAddresses", _OMIT_ZERO),
    ("sessionAffinityConfig", _AFFINITY_CONFIG),
    ("ipFamilies", _OMIT_ZERO),
    ("ipFamilyPolicy", _POINTER),
    ("allocateLoadBalancerNodePorts", _POINTER),
    ("loadBalancerClass", _POINTER),
    ("internalTrafficPolicy", _POINTER),
    ("trafficDistribution", _POINTER),
)


def service_spec_hash(spec: Any) -> str:
    """Hex SHA-256 of the Go encoding of a Service manifest's ``spec``."""
    typed = _struct(spec if isinstance(spec, Mapping) else {}, _SPEC)
    return hashlib.sha256(go_marshal(typed, sort_keys=False).encode()).hexdigest()


def _struct(obj: Mapping[str, Any], fields: _Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, how in fields:
        value = obj.get(name)
        if isinstance(how, tuple):
            if name == "ports":  # a slice of structs, omitempty
                if isinstance(value, list) and value:
                    out[name] = [_struct(p if isinstance(p, Mapping) else {}, how) for p in value]
            elif isinstance(value, Mapping):  # a pointer to a struct
                out[name] = _struct(value, how)
        elif how == _ALWAYS:
            out[name] = 0 if value is None else value
        elif how == _POINTER:
            if value is not None:
                out[name] = value
        elif value not in (None, "", 0, False, [], {}):
            out[name] = _sorted(value)
    return out


def _sorted(value: Any) -> Any:
    # A Go map (the selector) is written with its keys sorted.
    return dict(sorted(value.items())) if isinstance(value, Mapping) else value
