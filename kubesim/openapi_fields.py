"""Unknown fields of an object, found against an OpenAPI v3 schema.

kube-apiserver decodes request bodies into typed objects (built-in kinds) or
prunes them against the CRD's structural schema (custom resources). Either way
it knows which fields the schema does not declare and, depending on the
``fieldValidation`` parameter, rejects the request, warns or silently drops
them. :class:`FieldChecker` finds those fields; the server decides what to do.

Schema semantics are those of structural schemas: ``properties`` declare
fields, ``additionalProperties`` declares map values,
``x-kubernetes-preserve-unknown-fields`` keeps anything undeclared and
``x-kubernetes-embedded-resource`` implies ``apiVersion``, ``kind`` and an
ObjectMeta ``metadata``. ``$ref`` (alone or as the single ``allOf`` entry the
apiserver wraps refs in) points into ``definitions``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesim.openapi_models import REF_PREFIX

Schema = Mapping[str, Any]


@dataclass(frozen=True)
class Step:
    """One step of a path: a field name, a list item (index and value) or a map key."""

    name: str = ""
    index: int = -1
    item: Any = None
    key: str | None = None


Path = tuple[Step, ...]


@dataclass
class FieldChecker:
    """Finds the fields of objects that a schema does not declare."""

    root: Schema
    definitions: Mapping[str, Schema] = field(default_factory=dict)
    object_meta: Schema | None = None

    def unknown(self, obj: Any) -> list[Path]:
        """Paths of the undeclared fields of ``obj``, in document order."""
        out: list[Path] = []
        self._walk(obj, self.root, (), out)
        return out

    def _resolve(self, schema: Schema | None) -> Schema | None:
        seen = 0
        while schema is not None and seen < 32:
            seen += 1
            target = schema.get("$ref")
            if isinstance(target, str) and target.startswith(REF_PREFIX):
                schema = self.definitions.get(target[len(REF_PREFIX) :])
                continue
            all_of = schema.get("allOf")
            if (
                "properties" not in schema
                and isinstance(all_of, list)
                and len(all_of) == 1
                and isinstance(all_of[0], Mapping)
                and "$ref" in all_of[0]
            ):
                schema = all_of[0]
                continue
            return schema
        return schema

    def _walk(self, value: Any, schema: Schema | None, path: Path, out: list[Path]) -> None:
        node = self._resolve(schema)
        if node is None:
            return
        if isinstance(value, list):
            items = node.get("items")
            if isinstance(items, Mapping):
                for i, item in enumerate(value):
                    self._walk(item, items, (*path, Step(index=i, item=item)), out)
            return
        if not isinstance(value, dict):
            return
        props = node.get("properties")
        props = props if isinstance(props, Mapping) else None
        extra = node.get("additionalProperties")
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = node.get("x-kubernetes-embedded-resource") is True
        if props is None and extra is None and not embedded and node.get("type") != "object":
            return  # no structure declared here (nor a type): nothing to check
        for key, sub in value.items():
            step = Step(name=key)
            if embedded and key in ("apiVersion", "kind"):
                continue
            if embedded and key == "metadata" and not (props and key in props):
                self._walk(sub, self.object_meta, (*path, step), out)
            elif props is not None and key in props:
                self._walk(sub, props[key], (*path, step), out)
            elif isinstance(extra, Mapping):
                self._walk(sub, extra, (*path, Step(key=key)), out)
            elif extra is True or preserve:
                continue
            else:
                out.append((*path, step))


def strict_path(path: Path) -> str:
    """A path as strict decoding errors show it: ``spec.containers[0].foo``."""
    out = ""
    for step in path:
        if step.index >= 0:
            out += f"[{step.index}]"
        elif step.key is not None:
            out += f"[{step.key}]"
        else:
            out += ("." if out else "") + step.name
    return out


ListKeys = Callable[[tuple[str, ...]], tuple[str, ...]]


def apply_path(path: Path, list_keys: ListKeys) -> str:
    """A path as server-side apply's typed conversion shows it.

    ``.spec.containers[name="web"].foo``: items of keyed lists by their keys,
    other items by index, map keys like fields.
    """
    out = ""
    names: tuple[str, ...] = ()
    for step in path:
        if step.index >= 0:
            keys = list_keys(names)
            if keys and isinstance(step.item, dict) and all(k in step.item for k in keys):
                parts = ",".join(f"{k}={json.dumps(step.item[k])}" for k in keys)
                out += f"[{parts}]"
            else:
                out += f"[{step.index}]"
        else:
            name = step.key if step.key is not None else step.name
            out += f".{name}"
            names = (*names, name)
    return out
