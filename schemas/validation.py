"""Turning raw objects into models, with every problem reported at once.

Two levels:

* :func:`parse_object` checks what the API server enforces through the CRD
  (types, enums, required fields, patterns, limits, list-map keys, CEL
  rules, ``apiVersion``/``kind`` of each manifest). Use it on objects read
  from the API: anything the server stored passes.
* :func:`validate_object` adds the admission rules the hub webhook applies to
  the manifests of a ManifestWork or ManifestWorkReplicaSet template (at
  least one manifest, each with ``metadata.name``, no ``generateName``, no
  duplicates) and requires a service account for a ServiceAccount executor.
  The manifest size limit needs the request's raw bytes and is left to the
  webhook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, overload

from pydantic import ValidationError

from schemas.errors import FieldProblem, SchemaValidationError, format_path, problems_from_pydantic
from schemas.meta import KubeObject
from schemas.registry import model_for
from schemas.work_v1 import ExecutorSubjectType, ManifestWork, ManifestWorkSpec
from schemas.work_v1alpha1 import ManifestWorkReplicaSet

__all__ = ["manifest_problems", "parse_object", "spec_problems", "validate_object"]

M = TypeVar("M", bound=KubeObject)

Path = tuple[str | int, ...]


@overload
def parse_object(raw: Any) -> KubeObject: ...
@overload
def parse_object(raw: Any, model: type[M]) -> M: ...
def parse_object(raw: Any, model: type[KubeObject] | None = None) -> KubeObject:
    """``raw`` as a model, checked as the API server would check it.

    Without ``model`` the class is chosen from ``apiVersion`` and ``kind``.
    Raises :class:`SchemaValidationError` listing every problem.
    """
    cls = model if model is not None else _model_of(raw)
    try:
        return cls.model_validate(raw)
    except ValidationError as err:
        raise SchemaValidationError(cls.api_resource.kind, problems_from_pydantic(err)) from None


@overload
def validate_object(raw: Any) -> KubeObject: ...
@overload
def validate_object(raw: Any, model: type[M]) -> M: ...
def validate_object(raw: Any, model: type[KubeObject] | None = None) -> KubeObject:
    """:func:`parse_object` plus the hub's admission rules (module docstring).

    Raises :class:`SchemaValidationError` listing every problem, schema and
    admission ones together, such as
    ``spec.workload.manifests[2]: kind is required``.
    """
    cls = model if model is not None else _model_of(raw)
    try:
        obj = cls.model_validate(raw)
    except ValidationError as err:
        problems = problems_from_pydantic(err)
        problems += _raw_admission_problems(raw, cls)
        raise SchemaValidationError(cls.api_resource.kind, problems) from None
    problems = _admission_problems(obj)
    if problems:
        raise SchemaValidationError(cls.api_resource.kind, problems)
    return obj


def _model_of(raw: Any) -> type[KubeObject]:
    if not isinstance(raw, Mapping):
        raise SchemaValidationError("object", [FieldProblem("(root)", "must be an object")])
    api_version, kind = raw.get("apiVersion"), raw.get("kind")
    cls = model_for(str(api_version), str(kind))
    if cls is None:
        raise SchemaValidationError(
            str(kind or "object"),
            [FieldProblem("(root)", f"unsupported apiVersion/kind {api_version}/{kind}")],
        )
    return cls


def _spec_of(obj: KubeObject) -> tuple[ManifestWorkSpec | None, Path]:
    if isinstance(obj, ManifestWork):
        return obj.spec, ("spec",)
    if isinstance(obj, ManifestWorkReplicaSet):
        spec = obj.spec.manifest_work_template if obj.spec is not None else None
        return spec, ("spec", "manifestWorkTemplate")
    return None, ()


def _admission_problems(obj: KubeObject) -> list[FieldProblem]:
    spec, path = _spec_of(obj)
    if not path:
        return []
    return spec_problems(spec, path)


def spec_problems(spec: ManifestWorkSpec | None, path: Sequence[str | int]) -> list[FieldProblem]:
    """Admission problems of a ManifestWork spec found at ``path``."""
    base = tuple(path)
    workload = spec.workload if spec is not None else None
    manifests = workload.manifests if workload is not None else None
    out = manifest_problems(manifests or [], (*base, "workload", "manifests"))
    executor = spec.executor if spec is not None else None
    subject = executor.subject if executor is not None else None
    if (
        subject is not None
        and subject.type == ExecutorSubjectType.SERVICE_ACCOUNT
        and subject.service_account is None
    ):
        where = format_path((*base, "executor", "subject"))
        out.append(FieldProblem(where, "serviceAccount is required when type is ServiceAccount"))
    return out


def manifest_problems(
    manifests: Sequence[Mapping[str, Any]], path: Sequence[str | int]
) -> list[FieldProblem]:
    """The webhook's per-manifest rules, for manifests found at ``path``.

    Manifests that are not objects are skipped (the schema reports them).
    """
    base = tuple(path)
    if not manifests:
        return [FieldProblem(format_path(base), "must not be empty")]
    out: list[FieldProblem] = []
    seen: dict[str, int] = {}
    for i, manifest in enumerate(manifests):
        if not isinstance(manifest, Mapping):
            continue
        where = format_path((*base, i))
        meta = manifest.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        name, namespace = meta.get("name"), meta.get("namespace") or ""
        if not name:
            out.append(FieldProblem(where, "metadata.name is required"))
        if meta.get("generateName"):
            out.append(FieldProblem(where, "metadata.generateName must not be set"))
        # Keyed on the literal strings, as the hub does: the same object under
        # two apiVersions is not a duplicate.
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        key = f"{api_version}/{kind}/{namespace}/{name}"
        if name and key in seen:
            out.append(
                FieldProblem(
                    where,
                    f"duplicate manifest for resource {namespace}/{name} with resource type "
                    f"{api_version}.{kind} (same as manifests[{seen[key]}])",
                )
            )
        elif name:
            seen[key] = i
    return out


def _raw_admission_problems(raw: Any, cls: type[KubeObject]) -> list[FieldProblem]:
    """Admission problems found in raw input that failed schema validation."""
    if not isinstance(raw, Mapping):
        return []
    spec: Any = raw.get("spec")
    path: Path = ("spec",)
    if cls is ManifestWorkReplicaSet:
        spec = spec.get("manifestWorkTemplate") if isinstance(spec, Mapping) else None
        path = ("spec", "manifestWorkTemplate")
    elif cls is not ManifestWork:
        return []
    workload = spec.get("workload") if isinstance(spec, Mapping) else None
    manifests = workload.get("manifests") if isinstance(workload, Mapping) else None
    if manifests is not None and not isinstance(manifests, list):
        return []
    return manifest_problems(manifests or [], (*path, "workload", "manifests"))
