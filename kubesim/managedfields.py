"""Field ownership (``metadata.managedFields``) and server-side apply.

kube-apiserver records, for every object, which *manager* owns which fields:
one entry per manager identity, holding a ``FieldsV1`` set of field paths.
This module computes those entries for ordinary writes (``Update``: create,
PUT, merge/JSON/strategic patch) and implements server-side apply (``Apply``):
merging an applied configuration into the live object, detecting conflicts
with other managers, and removing fields an applier stopped applying.

Paths are tuples of ``FieldsV1`` elements: ``"f:<field>"`` for a field,
``"k:<json>"`` for an item of a list keyed by some of its fields,
``"v:<json>"`` for an item of a set and ``"i:<n>"`` for a list position. A
*member* path is one the set contains itself; in ``FieldsV1`` a member that
also has members below it is marked with ``".": {}``.

What the apiserver does, and therefore what this module does:

* Update: the fields that the write added or changed become the writer's
  (they leave every other entry); fields the write removed leave every entry.
  A map or list item that did not exist before is owned as a whole too (the
  ``"."`` marks). A write that adds or changes nothing leaves the writer's
  entry and its time alone.
* Apply: the applier's entry becomes exactly the applied configuration's
  fields. List items and empty maps of the configuration are members (so
  ``k:`` items carry ``"."`` in Apply entries as well); changing a field that
  another manager owns is a conflict unless forced. Fields the applier applied
  last time, no longer applies, and no other *applier* owns are removed.
* Entries are sorted as kube-apiserver encodes them: ``Apply`` before
  ``Update``, then by time (seconds), manager, apiVersion and subresource.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Self

from kubesim.errors import ApiError
from kubesim.jsonvalues import json_equal, prune_nulls
from kubesim.listtypes import ListSpec, ListTypeResolver, Path, builtin_list_type
from kubesim.objectmeta import OBJECT_META_FIELDS

__all__ = [
    "ApplyConflict",
    "Conflict",
    "FieldPath",
    "FieldSet",
    "conflict_causes",
    "conflict_message",
    "default_reset_fields",
    "fieldset_from_object",
    "format_field_path",
    "from_fields_v1",
    "server_side_apply",
    "to_fields_v1",
    "update_managed_fields",
]

FieldPath = tuple[str, ...]
"""One field path as ``FieldsV1`` elements, e.g. ``("f:data", "f:key")``."""

FieldSet = frozenset[FieldPath]
"""A set of member paths (container paths only when owned as a whole)."""

APPLY: Final = "Apply"
UPDATE: Final = "Update"

# Object fields the apiserver never records ownership of (its "strip meta").
_STRIPPED_TOP: Final = frozenset({"apiVersion", "kind"})
_STRIPPED_META: Final = frozenset(OBJECT_META_FIELDS) - {
    "generateName",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
}
# Of those, the ones an applied configuration may set on the object.
_APPLY_KEEPS_META: Final = frozenset({"name", "namespace"})

_JSON_SEPARATORS: Final = (",", ":")
# Fields every custom resource declares, whatever its schema says.
_CR_ROOT_FIELDS: Final = frozenset({("apiVersion",), ("kind",), ("metadata",)})


class _Missing:
    """Marks a field absent from an object (as opposed to ``null``)."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Final = _Missing()


# --------------------------------------------------------------------------
# Schema knowledge beyond list types


# Structs and maps the built-in kinds declare atomic (+structType/+mapType):
# label selectors and the like are owned and replaced as a whole.
_ATOMIC_BUILTIN_NAMES: Final = frozenset(
    {
        "selector",
        "podSelector",
        "namespaceSelector",
        "labelSelector",
        "objectSelector",
        "nodeSelector",
        "configMapKeyRef",
        "secretKeyRef",
        "fieldRef",
        "resourceFieldRef",
        "secretRef",
        "configMapRef",
        "roleRef",
        "preference",
        # ObjectReference (events, endpoint addresses) is an atomic struct.
        "involvedObject",
        "related",
        "regarding",
        "targetRef",
    }
)
_ATOMIC_BUILTIN_SUFFIXES: Final = frozenset(
    {("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")}
)
# Go maps (omitempty) of built-in kinds: an empty one does not survive the
# decoding that precedes the field manager, so it is nobody's field.
_GO_MAP_NAMES: Final = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "matchLabels",
        "nodeSelector",
        "limits",
        "requests",
        "capacity",
        "allocatable",
        "hard",
        "used",
        "parameters",
        "overhead",
    }
)


def _under(prefix: Path, paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(prefix + path for path in paths)


_POD_TEMPLATE: Final = (
    ("template",),
    ("template", "metadata"),
    ("template", "spec"),
    ("template", "spec", "containers"),
)
_WORKLOAD: Final = _under(("spec",), _POD_TEMPLATE)

# Containers that a built-in object always has once serialised (non-pointer
# structs, non-omitempty slices): they exist in the "old" object of every
# write, so a write never adds them and they get no "." of their own.
_ALWAYS_PRESENT_TYPED: Final = frozenset({("metadata",), ("spec",), ("status",)})
_ALWAYS_PRESENT_BY_KIND: Final[Mapping[str, frozenset[Path]]] = {
    "Deployment": frozenset((*_WORKLOAD, ("spec", "strategy"))),
    "ReplicaSet": frozenset(_WORKLOAD),
    "StatefulSet": frozenset((*_WORKLOAD, ("spec", "updateStrategy"))),
    "DaemonSet": frozenset((*_WORKLOAD, ("spec", "updateStrategy"))),
    "Job": frozenset(_WORKLOAD),
    "CronJob": frozenset(
        (
            ("spec", "jobTemplate"),
            ("spec", "jobTemplate", "metadata"),
            ("spec", "jobTemplate", "spec"),
            *_under(("spec", "jobTemplate", "spec"), _POD_TEMPLATE),
        )
    ),
    "PodTemplate": frozenset(_POD_TEMPLATE),
    "Pod": frozenset({("spec", "containers")}),
    "CustomResourceDefinition": frozenset(
        {
            ("spec", "names"),
            ("status", "acceptedNames"),
            ("status", "conditions"),
            ("status", "storedVersions"),
        }
    ),
    "PersistentVolumeClaim": frozenset({("spec", "resources")}),
    "RoleBinding": frozenset({("roleRef",)}),
    "ClusterRoleBinding": frozenset({("roleRef",)}),
    "Service": frozenset({("status", "loadBalancer")}),
}


def _resolve_array(node: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    while node is not None and node.get("type") == "array":
        items = node.get("items")
        node = items if isinstance(items, Mapping) else None
    return node


def _schema_child(node: Mapping[str, Any] | None, name: str) -> Mapping[str, Any] | None:
    node = _resolve_array(node)
    if node is None:
        return None
    props = node.get("properties")
    if isinstance(props, Mapping) and isinstance(props.get(name), Mapping):
        child: Mapping[str, Any] = props[name]
        return child
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


@dataclass(frozen=True)
class _Context:
    """What the walkers need to know about the kind being handled."""

    list_type: ListTypeResolver
    typed: bool
    always_present: frozenset[Path]
    schema: Mapping[str, Any] | None

    def list_spec(self, names: Path) -> ListSpec:
        return self.list_type(names)

    def atomic_map(self, names: Path) -> bool:
        """Whether the map (or struct) at ``names`` is owned as a whole."""
        if not names or names[0] == "metadata":
            return False
        if self.typed:
            return names[-1] in _ATOMIC_BUILTIN_NAMES or names[-2:] in _ATOMIC_BUILTIN_SUFFIXES
        node = self._schema_node(names)
        return node is not None and node.get("x-kubernetes-map-type") == "atomic"

    def key_defaults(self, names: Path, keys: Iterable[str]) -> dict[str, Any]:
        """Defaults of the key fields of the list at ``names``.

        An item may leave out a defaulted key (a container port's protocol):
        it is keyed as if the default were there, as newer apiservers do.
        """
        if self.typed:
            return {"protocol": "TCP"} if "protocol" in keys else {}
        if not names or names[0] == "metadata":
            return {}
        item = _resolve_array(self._schema_node(names))
        props = item.get("properties") if item is not None else None
        if not isinstance(props, Mapping):
            return {}
        return {
            k: props[k]["default"]
            for k in keys
            if isinstance(props.get(k), Mapping) and "default" in props[k]
        }

    def declared(self, names: Path) -> bool:
        """Whether the last name is a declared struct field (not a map entry).

        Only custom resources with a known schema tell the difference; map
        entries of an applied configuration are members of the Apply set.
        """
        if self.typed or self.schema is None or not names or names[0] == "metadata":
            return True
        if names in _CR_ROOT_FIELDS:
            return True
        parent = _resolve_array(self._schema_node(names[:-1]))
        if parent is None:
            return False
        props = parent.get("properties")
        return isinstance(props, Mapping) and names[-1] in props

    def _schema_node(self, names: Path) -> Mapping[str, Any] | None:
        node: Mapping[str, Any] | None = self.schema
        for name in names:
            node = _schema_child(node, name)
            if node is None:
                return None
        return node


def _context(list_type: ListTypeResolver, kind: Any, typed: bool | None) -> _Context:
    if typed is None:
        typed = list_type is builtin_list_type
    always: set[Path] = {("metadata",)}
    if typed:
        always |= _ALWAYS_PRESENT_TYPED
        if isinstance(kind, str):
            always |= _ALWAYS_PRESENT_BY_KIND.get(kind, frozenset())
    # SchemaListTypes keeps the CRD schema; it also says which maps are atomic
    # and which fields are declared, which list types alone cannot.
    schema = getattr(list_type, "_schema", None)
    return _Context(
        list_type=list_type,
        typed=typed,
        always_present=frozenset(always),
        schema=schema if isinstance(schema, Mapping) and not typed else None,
    )


def default_reset_fields(subresource: str | None) -> frozenset[str]:
    """Top-level fields a write through ``subresource`` may not own.

    Writes to the main resource never own ``status`` and writes to the status
    subresource never own ``spec`` (the apiserver's "reset fields"). Kinds
    without a status subresource would pass ``()`` explicitly.
    """
    if subresource is None or subresource == "":
        return frozenset({"status"})
    if subresource == "status":
        return frozenset({"spec"})
    return frozenset()


def _reset(subresource: str | None, reset_fields: Collection[str] | None) -> frozenset[str]:
    if reset_fields is None:
        return default_reset_fields(subresource)
    return frozenset(reset_fields)


def _strip(obj: Mapping[str, Any], reset: frozenset[str]) -> dict[str, Any]:
    """``obj`` without the fields nobody owns (shallow: values are shared)."""
    out = {k: v for k, v in obj.items() if k not in _STRIPPED_TOP and k not in reset}
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: v for k, v in meta.items() if k not in _STRIPPED_META}
    return out


# --------------------------------------------------------------------------
# Path elements


def _dumps(value: Any, *, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=_JSON_SEPARATORS, ensure_ascii=False, sort_keys=sort_keys)


def _value_element(value: Any) -> str:
    return "v:" + _dumps(value, sort_keys=True)


@dataclass(frozen=True)
class _Items:
    """How the items of one granular list are told apart."""

    spec: ListSpec
    # Values of key fields an item may leave out (the schema's defaults).
    defaults: Mapping[str, Any]

    def element(self, item: Any) -> str | None:
        """The path element of ``item``; None if it cannot be keyed."""
        if self.spec.kind != "map":
            return _value_element(item)
        if not isinstance(item, Mapping):
            return None
        # Key fields sorted by name, as the apiserver writes them; a key
        # missing without a default is left out.
        key = {}
        for name in sorted(self.spec.keys):
            if name in item:
                key[name] = item[name]
            elif name in self.defaults:
                key[name] = self.defaults[name]
        return "k:" + _dumps(key)

    def index(self, items: Any) -> dict[str, Any] | None:
        """Items by path element, first occurrence winning; None if unkeyable."""
        out: dict[str, Any] = {}
        for item in items if isinstance(items, list) else ():
            element = self.element(item)
            if element is None:
                return None
            out.setdefault(element, item)
        return out


def _value_rank(value: Any) -> tuple[Any, ...]:
    # Numbers < strings < booleans < lists < maps < null, as the SSA library
    # orders values.
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, float(value))
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_rank(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_rank(v)) for k, v in sorted(value.items())))
    return (5,)


def _element_rank(element: str) -> tuple[Any, ...]:
    """Sort key of an element: fields, then keys, values and indexes."""
    prefix, _, rest = element.partition(":")
    try:
        if prefix == "f":
            return (0, rest)
        if prefix == "k":
            key = json.loads(rest)
            return (1, tuple((k, _value_rank(v)) for k, v in key.items()))
        if prefix == "v":
            return (2, _value_rank(json.loads(rest)))
        if prefix == "i":
            return (3, int(rest))
    except (ValueError, AttributeError):
        pass
    return (4, element)


def format_field_path(path: FieldPath) -> str:
    """A path in the syntax of apply conflicts: ``.spec.containers[name="c"].image``."""
    parts: list[str] = []
    for element in path:
        prefix, _, rest = element.partition(":")
        if prefix == "f":
            parts.append("." + rest)
        elif prefix == "k":
            try:
                key = json.loads(rest)
                parts.append("[" + ",".join(f"{k}={_dumps(v)}" for k, v in key.items()) + "]")
            except (ValueError, AttributeError):
                parts.append("[" + rest + "]")
        elif prefix == "v":
            parts.append("[=" + rest + "]")
        elif prefix == "i":
            parts.append("[" + rest + "]")
        else:
            parts.append("." + element)
    return "".join(parts)


# --------------------------------------------------------------------------
# FieldsV1


def to_fields_v1(fs: Iterable[FieldPath]) -> dict[str, Any]:
    """The ``FieldsV1`` object of a field set, keys ordered as the apiserver writes them."""
    tree: dict[str, Any] = {}
    for path in fs:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        if path:
            node["."] = {}
    return _emit(tree)


def _emit(node: Mapping[str, Any]) -> dict[str, Any]:
    children = sorted((k for k in node if k != "."), key=_element_rank)
    out: dict[str, Any] = {}
    if children and "." in node:
        out["."] = {}
    for key in children:
        out[key] = _emit(node[key])
    return out


def from_fields_v1(d: Mapping[str, Any]) -> FieldSet:
    """The field set encoded by a ``FieldsV1`` object."""
    out: set[FieldPath] = set()

    def walk(node: Mapping[str, Any], prefix: FieldPath) -> None:
        for key, child in node.items():
            if key == ".":
                if prefix:
                    out.add(prefix)
                continue
            path = (*prefix, key)
            if isinstance(child, Mapping) and child:
                walk(child, path)
            else:
                out.add(path)

    walk(d, ())
    return frozenset(out)


def _ordered(paths: Iterable[FieldPath]) -> list[FieldPath]:
    """Paths in the apiserver's set order: each level's members, then deeper."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        node["."] = {}
    out: list[FieldPath] = []

    def walk(node: Mapping[str, Any], prefix: FieldPath) -> None:
        keys = sorted((k for k in node if k != "."), key=_element_rank)
        out.extend((*prefix, k) for k in keys if "." in node[k])
        for key in keys:
            if any(k != "." for k in node[key]):
                walk(node[key], (*prefix, key))

    walk(tree, ())
    return out


# --------------------------------------------------------------------------
# Field sets of objects


def _granular_list(ctx: _Context, names: Path, *values: Any) -> _Items | None:
    """How to key the list's items if they are tracked one by one, else None (atomic)."""
    spec = ctx.list_spec(names)
    if spec.kind == "atomic":
        return None
    items = _Items(spec, ctx.key_defaults(names, spec.keys))
    if any(items.index(value) is None for value in values):
        return None
    return items


#: metav1.Time fields of conditions: a zero time converts to an explicit null,
#: which the writer owns (unlike nil pointers and slices, which are left out).
_OWNED_WHEN_NULL = frozenset(
    {"lastUpdateTime", "lastTransitionTime", "lastProbeTime", "lastHeartbeatTime"}
)


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, list):
        return "list"
    if value is _MISSING or value is None:
        return "none"
    return "scalar"


@dataclass
class _Diff:
    """Paths a write added or changed, and paths it removed."""

    ctx: _Context
    changed: set[FieldPath] = field(default_factory=set)
    removed: set[FieldPath] = field(default_factory=set)

    def same(self) -> bool:
        return not self.changed and not self.removed

    def walk(self, names: Path, path: FieldPath, old: Any, new: Any, *, item: bool = False) -> None:
        """Compare ``old`` and ``new`` found at ``path``."""
        ctx = self.ctx
        if ctx.typed and not (names and names[-1] in _OWNED_WHEN_NULL):
            # A built-in object serialises unset pointers as null on both
            # sides of every write: null carries no ownership there.
            old = _MISSING if old is None else old
            new = _MISSING if new is None else new
            if not item and names not in ctx.always_present:
                # Empty omitempty slices and maps vanish the same way.
                go_map = bool(names) and names[-1] in _GO_MAP_NAMES
                old = _MISSING if old == [] or (go_map and old == {}) else old
                new = _MISSING if new == [] or (go_map and new == {}) else new
        if not item and names in ctx.always_present:
            if old is _MISSING or old is None:
                old = {} if isinstance(new, Mapping) else [] if isinstance(new, list) else old
            if new is _MISSING or new is None:
                new = {} if isinstance(old, Mapping) else [] if isinstance(old, list) else new
        if old is _MISSING and new is _MISSING:
            return
        shapes = {_shape(old), _shape(new)} - {"none"}
        if len(shapes) > 1:
            # A field changing shape: the old content goes, the new one comes.
            self.walk(names, path, old, _MISSING, item=item)
            self.walk(names, path, _MISSING, new, item=item)
            return
        if shapes == {"map"} and (item or not ctx.atomic_map(names)):
            self._map(names, path, old, new)
            return
        if shapes == {"list"}:
            items = _granular_list(ctx, names, old, new)
            if items is not None:
                self._list(names, path, items, (old, new))
                return
        self._leaf(path, old, new)

    def _leaf(self, path: FieldPath, old: Any, new: Any) -> None:
        self._node(path, old, new)
        if path and old is not _MISSING and new is not _MISSING and not json_equal(old, new):
            self.changed.add(path)

    def _node(self, path: FieldPath, old: Any, new: Any) -> None:
        # A container is owned as such only when it appears or disappears
        # (null counts as present).
        if not path:
            return
        if old is _MISSING:
            self.changed.add(path)
        elif new is _MISSING:
            self.removed.add(path)

    def _members(
        self,
        path: FieldPath,
        sides: tuple[Any, Any],
        lhs: Mapping[Any, Any],
        rhs: Mapping[Any, Any],
    ) -> list[tuple[Any, Any, Any]]:
        """(key, before, after) of a map's or list's members, old ones first; a container
        empty (or null) on both sides is a leaf and has none."""
        if not lhs and not rhs:
            self._leaf(path, *sides)
            return []
        self._node(path, *sides)
        keys = [*lhs, *(k for k in rhs if k not in lhs)]
        return [(k, lhs.get(k, _MISSING), rhs.get(k, _MISSING)) for k in keys]

    def _map(self, names: Path, path: FieldPath, old: Any, new: Any) -> None:
        lhs: Mapping[str, Any] = old if isinstance(old, Mapping) else {}
        rhs: Mapping[str, Any] = new if isinstance(new, Mapping) else {}
        for key, before, after in self._members(path, (old, new), lhs, rhs):
            self.walk((*names, key), (*path, "f:" + key), before, after)

    def _list(self, names: Path, path: FieldPath, items: _Items, sides: tuple[Any, Any]) -> None:
        lhs = items.index(sides[0]) or {}
        rhs = items.index(sides[1]) or {}
        for element, before, after in self._members(path, sides, lhs, rhs):
            if items.spec.kind == "set":
                self._leaf((*path, element), before, after)
            else:
                self.walk(names, (*path, element), before, after, item=True)


def _object_diff(
    ctx: _Context, old: Mapping[str, Any] | None, new: Mapping[str, Any], reset: frozenset[str]
) -> _Diff:
    out = _Diff(ctx)
    out.walk((), (), _strip(old or {}, reset), _strip(new, reset))
    return out


def _config_fields(
    ctx: _Context,
    names: Path,
    path: FieldPath,
    value: Any,
    out: set[FieldPath],
    *,
    item: bool = False,
    declared: bool = True,
) -> None:
    """The fields an applied configuration sets (what its applier will own)."""
    if path and (not declared or value is None):
        out.add(path)
    if isinstance(value, Mapping):
        if path and (not value or (not item and ctx.atomic_map(names))):
            # Empty and atomic maps are owned as a whole.
            out.add(path)
            return
        for key, child in value.items():
            child_names = (*names, key)
            _config_fields(
                ctx,
                child_names,
                (*path, "f:" + key),
                child,
                out,
                declared=ctx.declared(child_names),
            )
    elif isinstance(value, list):
        items = _granular_list(ctx, names, value)
        if items is None:
            out.add(path)
            return
        for element, child in (items.index(value) or {}).items():
            out.add((*path, element))
            if items.spec.kind == "map":
                _config_fields(ctx, names, (*path, element), child, out, item=True)
    elif path:
        out.add(path)


def _object_config_fields(
    ctx: _Context, obj: Mapping[str, Any], reset: frozenset[str]
) -> set[FieldPath]:
    out: set[FieldPath] = set()
    _config_fields(ctx, (), (), _strip(obj, reset), out)
    # The metadata struct itself is never owned, only what is in it.
    out.discard(("f:metadata",))
    return out


def fieldset_from_object(
    obj: Mapping[str, Any],
    list_type: ListTypeResolver,
    *,
    with_dots: bool,
    typed: bool | None = None,
    reset_fields: Collection[str] = (),
) -> FieldSet:
    """The fields present in ``obj``, as a manager owning all of it would.

    Server-managed metadata (name, namespace, uid, resourceVersion, ...),
    ``apiVersion``, ``kind`` and the top-level ``reset_fields`` are left out.
    With ``with_dots`` the set is what an Update creating ``obj`` records:
    maps and list items are members too (the ``"."`` entries) except the
    containers a built-in object always has. Without it, the set is what an
    Apply of ``obj`` records: leaves, list items, empty and atomic maps.
    ``typed`` defaults to whether ``list_type`` is the built-in resolver.
    """
    ctx = _context(list_type, obj.get("kind"), typed)
    reset = frozenset(reset_fields)
    if with_dots:
        return frozenset(_object_diff(ctx, None, obj, reset).changed)
    return frozenset(_object_config_fields(ctx, obj, reset))


# --------------------------------------------------------------------------
# Managed fields entries


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: set[FieldPath]

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # Appliers are one manager whatever apiVersion they apply with.
        version = self.api_version if self.operation != APPLY else ""
        return (self.manager, self.operation, version, self.subresource)

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = to_fields_v1(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _decode(managed: Iterable[Mapping[str, Any]]) -> list[_Entry]:
    entries: list[_Entry] = []
    by_identity: dict[tuple[str, str, str, str], _Entry] = {}
    for raw in managed:
        fields_v1 = raw.get("fieldsV1")
        time = raw.get("time")
        entry = _Entry(
            manager=str(raw.get("manager", "")),
            operation=str(raw.get("operation", UPDATE)),
            api_version=str(raw.get("apiVersion", "")),
            subresource=str(raw.get("subresource") or ""),
            time=time if isinstance(time, str) else None,
            fields=set(from_fields_v1(fields_v1)) if isinstance(fields_v1, Mapping) else set(),
        )
        known = by_identity.get(entry.identity)
        if known is not None:
            known.fields |= entry.fields
            continue
        by_identity[entry.identity] = entry
        entries.append(entry)
    return entries


def _seconds(time: str | None) -> int:
    if not time:
        return 0
    try:
        return int(datetime.fromisoformat(time).timestamp())
    except ValueError:
        return 0


def _encode(entries: Iterable[_Entry]) -> list[dict[str, Any]]:
    kept = [e for e in entries if e.fields]
    kept.sort(
        key=lambda e: (e.operation, _seconds(e.time), e.manager, e.api_version, e.subresource)
    )
    return [e.encode() for e in kept]


def update_managed_fields(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    managed: Sequence[Mapping[str, Any]],
    *,
    manager: str,
    api_version: str,
    subresource: str | None,
    now: str,
    list_type: ListTypeResolver,
    typed: bool | None = None,
    reset_fields: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """The managedFields after an Update-operation write of ``new`` over ``old``.

    ``old`` is None for a create. Fields the write added or changed become
    owned by ``manager``'s Update entry (for this ``api_version`` and
    ``subresource``) and leave every other entry; removed fields leave every
    entry; empty entries are dropped. A write that adds or changes nothing
    keeps the writer's entry and time; one that changes nothing at all returns
    ``managed`` as it was. ``reset_fields`` defaults to
    :func:`default_reset_fields`; ``typed`` to whether ``list_type`` is the
    built-in resolver.
    """
    ctx = _context(list_type, new.get("kind") or (old or {}).get("kind"), typed)
    diff = _object_diff(ctx, old, new, _reset(subresource, reset_fields))
    if diff.same():
        return copy.deepcopy([dict(e) for e in managed])
    entries = _decode(managed)
    for entry in entries:
        entry.fields -= diff.changed | diff.removed
    if diff.changed:
        me = _Entry(manager, UPDATE, api_version, subresource or "", now, set(diff.changed))
        for entry in entries:
            if entry.identity == me.identity:
                entry.fields |= diff.changed
                entry.time = now
                break
        else:
            entries.append(me)
    return _encode(entries)


# --------------------------------------------------------------------------
# Conflicts


class Conflict(tuple[str, str]):
    """``(manager, field path)``, knowing who the manager is for messages.

    Compares equal to a plain ``(manager, path)`` tuple.
    """

    operation: str
    api_version: str
    subresource: str

    def __new__(
        cls,
        manager: str,
        path: str,
        *,
        operation: str = APPLY,
        api_version: str = "",
        subresource: str = "",
    ) -> Self:
        """A conflict on ``path`` with the entry of ``manager``."""
        self = super().__new__(cls, (manager, path))
        self.operation = operation
        self.api_version = api_version
        self.subresource = subresource
        return self

    @property
    def manager(self) -> str:
        """The manager's name."""
        return self[0]

    @property
    def path(self) -> str:
        """The field path, e.g. ``.data.key``."""
        return self[1]


def _details(conflict: tuple[str, str]) -> tuple[str, str, str]:
    if isinstance(conflict, Conflict):
        return conflict.operation, conflict.api_version, conflict.subresource
    return APPLY, "", ""


def _identity_string(conflict: tuple[str, str]) -> str:
    # The manager identifier the apiserver sorts by: its JSON encoding.
    operation, api_version, subresource = _details(conflict)
    ident: dict[str, str] = {"manager": conflict[0], "operation": operation}
    if operation != APPLY and api_version:
        ident["apiVersion"] = api_version
    if subresource:
        ident["subresource"] = subresource
    return _dumps(ident)


def _print_manager(conflict: tuple[str, str]) -> str:
    operation, api_version, subresource = _details(conflict)
    text = _dumps(conflict[0])
    if subresource:
        text += f" with subresource {_dumps(subresource)}"
    if operation == UPDATE:
        text += f" using {api_version}"
    return text


def _grouped(conflicts: Sequence[tuple[str, str]]) -> list[tuple[str, list[tuple[str, str]]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for conflict in conflicts:
        groups.setdefault(_identity_string(conflict), []).append(conflict)
    return [(_print_manager(groups[k][0]), groups[k]) for k in sorted(groups)]


def conflict_message(conflicts: Sequence[tuple[str, str]]) -> str:
    """The message of the 409 answered to a conflicting apply, as kube-apiserver words it."""
    if len(conflicts) == 1:
        return (
            f"Apply failed with 1 conflict: conflict with {_print_manager(conflicts[0])}: "
            + (conflicts[0][1])
        )
    lines: list[str] = []
    for printed, group in _grouped(conflicts):
        lines.append(f"conflicts with {printed}:")
        lines.extend(f"- {c[1]}" for c in group)
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


def conflict_causes(conflicts: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The ``details.causes`` of that 409, one per conflicting field."""
    return [
        {"reason": "FieldManagerConflict", "message": f"conflict with {printed}", "field": c[1]}
        for printed, group in _grouped(conflicts)
        for c in group
    ]


class ApplyConflict(Exception):
    """A server-side apply changed fields owned by other managers."""

    def __init__(self, conflicts: Sequence[tuple[str, str]]) -> None:
        """Conflicts are ``(manager, path)`` tuples, usually :class:`Conflict`."""
        self.conflicts: list[tuple[str, str]] = list(conflicts)
        super().__init__(conflict_message(self.conflicts))

    @property
    def message(self) -> str:
        """The Status message."""
        return conflict_message(self.conflicts)

    @property
    def causes(self) -> list[dict[str, str]]:
        """The Status ``details.causes``."""
        return conflict_causes(self.conflicts)

    def api_error(self) -> ApiError:
        """The 409 Conflict Status error kube-apiserver answers."""
        return ApiError(409, "Conflict", self.message, {"causes": self.causes})


# --------------------------------------------------------------------------
# Server-side apply


def _merge(ctx: _Context, names: Path, live: Any, config: Any, *, item: bool = False) -> Any:
    """``config`` merged into ``live`` (both already private copies)."""
    if isinstance(config, dict):
        if not isinstance(live, dict) or (not item and ctx.atomic_map(names)):
            return prune_nulls(config)
        for key, value in config.items():
            if value is None:
                # An applied null unsets the field (its applier owns it).
                live.pop(key, None)
            else:
                live[key] = _merge(ctx, (*names, key), live.get(key, _MISSING), value)
        return live
    if isinstance(config, list):
        items = _granular_list(ctx, names, config, live)
        if items is None or not isinstance(live, list):
            return prune_nulls(config)
        wanted = items.index(config) or {}
        merged: list[Any] = []
        seen: set[str] = set()
        # Live order first, then the configuration's new items in its order.
        for existing in live:
            element = items.element(existing)
            if element is None or element not in wanted or element in seen:
                merged.append(existing)
                continue
            seen.add(element)
            if items.spec.kind == "map":
                merged.append(_merge(ctx, names, existing, wanted[element], item=True))
            else:
                merged.append(existing)
        merged.extend(
            prune_nulls(value) for element, value in wanted.items() if element not in seen
        )
        return merged
    return config


def _remove_path(ctx: _Context, obj: dict[str, Any], path: FieldPath) -> None:
    """Delete the field or list item at ``path`` from ``obj`` (in place)."""
    node: Any = obj
    names: Path = ()
    last = len(path) - 1
    for position, element in enumerate(path):
        if element.startswith("f:"):
            if not isinstance(node, dict):
                return
            names = (*names, element[2:])
            if position == last:
                node.pop(element[2:], None)
                return
            node = node.get(element[2:], _MISSING)
            continue
        items = _granular_list(ctx, names)
        if items is None or not isinstance(node, list):
            return
        if position == last:
            node[:] = [item for item in node if items.element(item) != element]
            return
        node = next((item for item in node if items.element(item) == element), _MISSING)


def _apply_config(applied: Mapping[str, Any], reset: frozenset[str]) -> dict[str, Any]:
    """A private copy of the applied configuration, limited to what it may set."""
    config = {k: copy.deepcopy(v) for k, v in applied.items() if k not in reset}
    meta = config.get("metadata")
    if isinstance(meta, dict):
        config["metadata"] = {
            k: v for k, v in meta.items() if k not in _STRIPPED_META or k in _APPLY_KEEPS_META
        }
    return config


def server_side_apply(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    managed: Sequence[Mapping[str, Any]],
    *,
    manager: str,
    force: bool,
    api_version: str,
    subresource: str | None,
    now: str,
    list_type: ListTypeResolver,
    typed: bool | None = None,
    reset_fields: Collection[str] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Apply ``applied`` as ``manager``: the new object and its managedFields.

    ``live`` is None to create. The configuration is merged into the live
    object (maps recursively, keyed lists by key, sets as unions, atomic
    values replaced; an applied null unsets). Changing a value owned by another
    manager raises :class:`ApplyConflict` unless ``force``, which takes the
    fields over. Equal values are shared. Fields this manager applied before,
    no longer applies, and no other applier owns are removed. The manager's
    Apply entry becomes exactly the configuration's fields. The returned
    object carries the new list as ``metadata.managedFields``.
    """
    reset = _reset(subresource, reset_fields)
    ctx = _context(list_type, applied.get("kind") or (live or {}).get("kind"), typed)
    config = _apply_config(applied, reset)
    before: dict[str, Any] = copy.deepcopy(dict(live)) if live is not None else {}
    meta = before.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    merged = _merge(ctx, (), copy.deepcopy(before), config)

    entries = _decode(managed)
    me = _Entry(manager, APPLY, api_version, subresource or "", now, set())
    previous = next((e for e in entries if e.identity == me.identity), None)
    me.fields = _object_config_fields(ctx, config, reset)

    # Prune: what this applier dropped from its configuration, unless another
    # applier still wants it. Updaters' ownership does not keep fields.
    if previous is not None and previous.fields:
        kept = set(me.fields)
        for entry in entries:
            if entry.operation == APPLY and entry is not previous:
                kept |= entry.fields
        present = _object_config_fields(ctx, merged, reset)
        # Whole items first: removing a key field would make an item unfindable.
        for path in sorted((previous.fields & present) - kept, key=len):
            _remove_path(ctx, merged, path)

    diff = _object_diff(ctx, before, merged, reset)
    conflicts: list[Conflict] = []
    for entry in entries:
        if entry is previous:
            continue
        for path in _ordered(entry.fields & diff.changed):
            conflicts.append(
                Conflict(
                    entry.manager,
                    format_field_path(path),
                    operation=entry.operation,
                    api_version=entry.api_version,
                    subresource=entry.subresource,
                )
            )
    if conflicts and not force:
        # Grouped by manager as the message lists them (stable: paths keep order).
        conflicts.sort(key=_identity_string)
        raise ApplyConflict(conflicts)

    for entry in entries:
        if entry is not previous:
            entry.fields -= diff.changed | diff.removed
    if previous is not None:
        previous.fields = me.fields
        previous.api_version = api_version
        if not diff.same():
            previous.time = now
    else:
        entries.append(me)
    result = _encode(entries)

    meta = merged.setdefault("metadata", {})
    if isinstance(meta, dict):
        if result:
            meta["managedFields"] = copy.deepcopy(result)
        else:
            meta.pop("managedFields", None)
    return merged, result
