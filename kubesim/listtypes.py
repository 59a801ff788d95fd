"""How lists merge: the list types of built-in kinds and of CRD schemas.

Both server-side apply (managedFields, ``k:`` keys) and strategic merge patch
need to know, for a list at a given field path, whether it is atomic, a set of
scalars, or a map keyed by some of its items' fields. A *path* is the tuple of
field names from the object's root with list positions left out, e.g.
``("spec", "template", "spec", "containers", "ports")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Path = tuple[str, ...]


@dataclass(frozen=True)
class ListSpec:
    """The merge behaviour of one list.

    ``keys`` are the server-side-apply list-map keys; ``merge_key`` is the
    strategic-merge-patch ``patchMergeKey`` (often the first key, not always
    present: some SSA maps are atomic for strategic merge patch).
    """

    kind: Literal["atomic", "set", "map"]
    keys: tuple[str, ...] = ()
    merge_key: str | None = None

    @property
    def is_map(self) -> bool:
        """True when items are identified by key fields."""
        return self.kind == "map"


ATOMIC = ListSpec("atomic")
SET = ListSpec("set")


class ListTypeResolver(Protocol):
    """Answers the list type of the list found at a path of an object."""

    def __call__(self, path: Path) -> ListSpec:
        """The spec of the list at ``path``."""
        ...


def _map(*keys: str, merge_key: str | None = "") -> ListSpec:
    return ListSpec("map", keys, keys[0] if merge_key == "" else merge_key)


# Lists of built-in kinds keyed by their last field name, refined by the
# parent field name where the same name means different things.
_METADATA: dict[str, ListSpec] = {
    "finalizers": SET,
    "ownerReferences": _map("uid"),
    "managedFields": ATOMIC,
}
_BY_PARENT_AND_NAME: dict[tuple[str, str], ListSpec] = {
    # Container ports are keyed by (containerPort, protocol) for SSA and by
    # containerPort for strategic merge patch.
    ("containers", "ports"): _map("containerPort", "protocol"),
    ("initContainers", "ports"): _map("containerPort", "protocol"),
    ("ephemeralContainers", "ports"): _map("containerPort", "protocol"),
    ("spec", "ports"): _map("port", "protocol"),
}
_BY_NAME: dict[str, ListSpec] = {
    "containers": _map("name"),
    "initContainers": _map("name"),
    "ephemeralContainers": _map("name"),
    "env": _map("name"),
    "volumes": _map("name"),
    "volumeMounts": _map("mountPath"),
    "volumeDevices": _map("devicePath"),
    "imagePullSecrets": _map("name"),
    "hostAliases": _map("ip"),
    "conditions": _map("type"),
    "topologySpreadConstraints": _map("topologyKey", "whenUnsatisfiable"),
    "resourceClaims": _map("name"),
    "readinessGates": ATOMIC,
    "tolerations": ATOMIC,
    "args": ATOMIC,
    "command": ATOMIC,
    "envFrom": ATOMIC,
    "subjects": ATOMIC,
    "rules": ATOMIC,
}


def builtin_list_type(path: Path) -> ListSpec:
    """List type of a field of a built-in kind (atomic when unknown)."""
    if not path:
        return ATOMIC
    name = path[-1]
    if len(path) == 2 and path[0] == "metadata":
        return _METADATA.get(name, ATOMIC)
    if len(path) >= 2:
        spec = _BY_PARENT_AND_NAME.get((path[-2], name))
        # Service ports only: other ``spec.ports`` lists are not known maps.
        if spec is not None and (path[-2] != "spec" or path == ("spec", "ports")):
            return spec
    return _BY_NAME.get(name, ATOMIC)


class SchemaListTypes:
    """List types read from a CRD's OpenAPI v3 schema.

    Honours ``x-kubernetes-list-type`` and ``x-kubernetes-list-map-keys``;
    lists without them are atomic, as in the apiserver. ``metadata`` lists
    follow the built-in rules.
    """

    def __init__(self, schema: Mapping[str, Any] | None) -> None:
        self._schema = schema or {}
        self._cache: dict[Path, ListSpec] = {}

    def __call__(self, path: Path) -> ListSpec:
        """The spec of the list at ``path``."""
        if path and path[0] == "metadata":
            return builtin_list_type(path)
        cached = self._cache.get(path)
        if cached is not None:
            return cached
        node: Mapping[str, Any] | None = self._schema
        for name in path:
            node = _child(node, name)
            if node is None:
                break
        spec = ATOMIC
        if node is not None:
            list_type = node.get("x-kubernetes-list-type")
            if list_type == "set":
                spec = SET
            elif list_type == "map":
                keys = tuple(node.get("x-kubernetes-list-map-keys") or ())
                spec = ListSpec("map", keys, keys[0] if len(keys) == 1 else None)
        self._cache[path] = spec
        return spec


def _child(node: Mapping[str, Any] | None, name: str) -> Mapping[str, Any] | None:
    """The schema of field ``name`` under ``node``, stepping through list items."""
    while node is not None and node.get("type") == "array":
        node = node.get("items")
    if node is None:
        return None
    props = node.get("properties")
    if isinstance(props, Mapping) and name in props:
        child = props[name]
        return child if isinstance(child, Mapping) else None
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra
    return None
