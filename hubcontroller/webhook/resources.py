"""The two validated kinds, their webhook paths, and decoding their objects.

Paths follow controller-runtime's convention
``/validate-<group with dots as dashes>-<version>-<lowercase kind>`` (hub.md §4).

Decoding mirrors what the Go webhook's typed decode would accept: the
object's ``apiVersion``/``kind`` default to the webhook's type when absent
and must match it otherwise; the fields the rules read must have their JSON
types (JSON null reads as absent). The API server validated the object
against the CRD before calling us, so these checks only guard against
malformed requests; their messages follow Go's decoder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from pydantic import BaseModel

from hubcontroller.webhook.admission import Errored
from hubcontroller.webhook.godecode import decode_problem
from hubcontroller.webhook.manifests import Manifest, manifests_of
from ocmkit.govalues import json_type
from ocmkit.kube.access import ServiceAccount
from ocmkit.kube.resource import MANIFESTWORK_REPLICASETS, MANIFESTWORKS, Resource
from schemas.work_v1 import ManifestWork
from schemas.work_v1alpha1 import ManifestWorkReplicaSet

# The Go decoder's words for an absent embedded object.
NO_CONTENT: Final = "there is no content to decode"


@dataclass(frozen=True)
class WebhookResource(Resource):
    """A kind the webhook validates: its API resource, and where its manifests are."""

    #: Where the manifests are inside the object.
    manifests_path: tuple[str, ...] = ()
    #: Go type names along ``manifests_path`` (for decoder-style messages).
    go_types: tuple[str, ...] = ()
    #: The API model, for what Go's typed decode refuses beyond the CRD.
    model: type[BaseModel] | None = None

    @property
    def path(self) -> str:
        """The webhook's URL path."""
        return f"/validate-{self.group.replace('.', '-')}-{self.version}-{self.kind.lower()}"

    @property
    def raw_manifests_path(self) -> tuple[str, ...]:
        """Where the new object's manifests are inside an AdmissionReview."""
        return ("request", "object", *self.manifests_path)


MANIFESTWORK: Final = WebhookResource(
    **asdict(MANIFESTWORKS),
    manifests_path=("spec", "workload", "manifests"),
    go_types=("v1.ManifestWorkSpec", "v1.ManifestsTemplate", "[]v1.Manifest"),
    model=ManifestWork,
)
MANIFESTWORK_REPLICASET: Final = WebhookResource(
    **asdict(MANIFESTWORK_REPLICASETS),
    manifests_path=("spec", "manifestWorkTemplate", "workload", "manifests"),
    go_types=(
        "v1alpha1.ManifestWorkReplicaSetSpec",
        "v1.ManifestWorkSpec",
        "v1.ManifestsTemplate",
        "[]v1.Manifest",
    ),
    model=ManifestWorkReplicaSet,
)
RESOURCES: Final = (MANIFESTWORK, MANIFESTWORK_REPLICASET)


def resource_for(group: str, kind: str) -> WebhookResource | None:
    """The validated kind with this group and kind (any version), if any."""
    return next((r for r in RESOURCES if (r.group, r.kind) == (group, kind)), None)


@dataclass(frozen=True)
class Executor:
    """``spec.executor``: compared by value, as OCM compares it with ``reflect.DeepEqual``."""

    subject_type: str
    service_account: ServiceAccount | None


@dataclass(frozen=True)
class WorkObject:
    """What the rules read of a ManifestWork or ManifestWorkReplicaSet."""

    name: str
    namespace: str
    manifests: tuple[Manifest, ...]
    #: ManifestWork only; None when absent.
    executor: Executor | None = None


def decode(
    resource: WebhookResource,
    raw: Any,
    *,
    raw_manifests: Sequence[str] | None = None,
    default_namespace: str = "",
    with_manifests: bool = True,
) -> WorkObject:
    """Read an object under admission; raises :class:`Errored` (400) when it is malformed.

    ``raw_manifests`` are the manifests' texts as received, when known.
    ``with_manifests=False`` (an old object, whose executor is all the rules
    read) checks the manifests' shape but leaves them out of the result.
    """
    if raw is None:
        raise Errored(400, NO_CONTENT)
    struct = resource.kind
    if not isinstance(raw, Mapping):
        raise Errored(
            400,
            f"couldn't decode the object as a {struct}: "
            f"expected a JSON object, got {json_type(raw)}",
        )
    problem = decode_problem(raw, resource.model) if resource.model is not None else None
    if problem is not None and problem.immediate:
        raise Errored(400, problem.message)
    api_version = _typed(raw, "apiVersion", str, struct, "apiVersion", "string") or ""
    kind = _typed(raw, "kind", str, struct, "kind", "string") or ""
    # Go's decoder takes the missing parts of the type from the target type.
    if (api_version or resource.api_version) != resource.api_version or (
        kind or resource.kind
    ) != resource.kind:
        raise Errored(
            400,
            f"unable to decode {api_version or resource.api_version}, Kind={kind or resource.kind} "
            f"into {resource.api_version}, Kind={resource.kind}",
        )
    metadata = _typed(raw, "metadata", Mapping, struct, "metadata", "v1.ObjectMeta") or {}
    name = _typed(metadata, "name", str, "ObjectMeta", "metadata.name", "string") or ""
    namespace = (
        _typed(metadata, "namespace", str, "ObjectMeta", "metadata.namespace", "string") or ""
    )

    node: Mapping[str, Any] = raw
    where: list[str] = []
    values: list[Any] = []
    # Go names the struct that holds the field, and the field's whole path.
    holders = [struct, *(t.rpartition(".")[2] for t in resource.go_types[:-1])]
    *parents, leaf = resource.manifests_path
    for key, holder, go_type in zip(parents, holders, resource.go_types[:-1], strict=False):
        where.append(key)
        child = _typed(node, key, Mapping, holder, ".".join(where), go_type)
        if child is None:
            break
        node = child
    else:
        where.append(leaf)
        go_type = resource.go_types[-1]
        values = _typed(node, leaf, list, holders[-1], ".".join(where), go_type) or []

    executor = None
    spec = raw.get("spec")
    if resource.kind == MANIFESTWORK.kind and isinstance(spec, Mapping):
        executor = _executor(spec)
    if problem is not None:
        raise Errored(400, problem.message)
    return WorkObject(
        name=name,
        namespace=namespace or default_namespace,
        manifests=manifests_of(values, raw_manifests) if with_manifests else (),
        executor=executor,
    )


def _executor(spec: Mapping[str, Any]) -> Executor | None:
    path = "spec.executor"
    raw = _typed(spec, "executor", Mapping, "ManifestWorkSpec", path, "v1.ManifestWorkExecutor")
    if raw is None:
        return None
    # `subject` is a struct, not a pointer, in Go: absent reads as the zero value.
    holder = "ManifestWorkExecutor"
    subject = (
        _typed(raw, "subject", Mapping, holder, f"{path}.subject", "v1.ManifestWorkExecutorSubject")
        or {}
    )
    path += ".subject"
    holder = "ManifestWorkExecutorSubject"
    subject_type = (
        _typed(subject, "type", str, holder, f"{path}.type", "v1.ManifestWorkExecutorSubjectType")
        or ""
    )
    account = _typed(
        subject,
        "serviceAccount",
        Mapping,
        holder,
        f"{path}.serviceAccount",
        "v1.ManifestWorkSubjectServiceAccount",
    )
    service_account = None
    if account is not None:
        path += ".serviceAccount"
        holder = "ManifestWorkSubjectServiceAccount"
        service_account = ServiceAccount(
            namespace=_typed(account, "namespace", str, holder, f"{path}.namespace", "string")
            or "",
            name=_typed(account, "name", str, holder, f"{path}.name", "string") or "",
        )
    return Executor(subject_type, service_account)


def _typed(
    obj: Mapping[str, Any], key: str, expected: Any, holder: str, path: str, go_type: str
) -> Any:
    """``obj[key]`` if it has the expected JSON type, None if absent or null; else a 400.

    ``holder`` is the Go struct that has the field, ``path`` its path from the object.
    """
    value = obj.get(key)
    if value is None or isinstance(value, expected):
        # bool is an int in Python but never expected here, so no special case.
        return value
    raise Errored(
        400,
        f"json: cannot unmarshal {json_type(value)} into Go struct field "
        f"{holder}.{path} of type {go_type}",
    )
