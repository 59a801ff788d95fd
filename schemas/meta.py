"""Types shared by every API group: timestamps, object metadata, conditions."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar

from annotated_types import Ge, MaxLen, MinLen
from pydantic import (
    Field,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from schemas.base import ResourceInfo, WireModel, is_wire_context
from schemas.markers import Format, ListMap, Pattern

__all__ = [
    "CONDITION_REASON_PATTERN",
    "CONDITION_TYPE_PATTERN",
    "DNS1123_SUBDOMAIN_PATTERN",
    "Condition",
    "ConditionStatus",
    "Conditions",
    "Int32",
    "Int64",
    "KubeObject",
    "ObjectMeta",
    "OwnerReference",
    "Time",
    "format_time",
    "now",
    "parse_time",
]

#: An integer the API declares as ``int32`` (not range-checked, like the API server).
Int32 = Annotated[StrictInt, Format("int32")]
#: An integer the API declares as ``int64``.
Int64 = Annotated[StrictInt, Format("int64")]

_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_time(value: Any) -> datetime:
    """An RFC 3339 timestamp (or an aware ``datetime``) as an aware ``datetime``.

    Naive datetimes are taken as UTC. Fractions beyond microseconds are cut,
    as Python cannot hold them.
    """
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if match is None:
        raise PydanticCustomError(
            "date_time", "must be an RFC 3339 date-time, such as 2006-01-02T15:04:05Z"
        )
    date, clock, fraction, zone = match.groups()
    micro = f".{(fraction or '')[:6]:0<6}" if fraction else ""
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        return datetime.fromisoformat(f"{date}T{clock}{micro}{zone}")
    except ValueError:
        raise PydanticCustomError("date_time", "must be a valid date and time") from None


def format_time(value: datetime) -> str:
    """``value`` as the API writes it: UTC, ``Z``, a fraction only when non-zero."""
    utc = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += "." + f"{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


def now() -> datetime:
    """The current UTC time in whole seconds, the precision Go's ``metav1.Time`` writes."""
    return datetime.now(UTC).replace(microsecond=0)


#: A ``date-time`` field. Written in UTC with a ``Z``; seconds precision
#: unless the value has a fraction (Go's ``metav1.Time`` form for whole
#: seconds), so timestamps written by Kubernetes read back unchanged.
Time = Annotated[
    datetime, PlainValidator(parse_time), PlainSerializer(format_time, when_used="json")
]

#: Condition type: an optional DNS subdomain prefix and a qualified name.
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
#: Condition reason: CamelCase-ish, starting with a letter.
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
#: A lowercase RFC 1123 subdomain.
DNS1123_SUBDOMAIN_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$"


class ConditionStatus(StrEnum):
    """The status of a condition."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(WireModel):
    """One aspect of an object's current state (``metav1.Condition``)."""

    type: Annotated[StrictStr, MaxLen(316), Pattern(CONDITION_TYPE_PATTERN)]
    """The condition type, in CamelCase or ``domain/CamelCase``."""
    status: ConditionStatus
    """Whether the condition holds: True, False or Unknown."""
    observed_generation: Annotated[Int64, Ge(0)] | None = None
    """The ``metadata.generation`` the condition was computed from."""
    last_transition_time: Time
    """When the status last changed."""
    reason: Annotated[StrictStr, MinLen(1), MaxLen(1024), Pattern(CONDITION_REASON_PATTERN)]
    """A programmatic identifier for the last transition, in CamelCase."""
    message: Annotated[StrictStr, MaxLen(32768)]
    """Human-readable details about the last transition (may be empty)."""


#: A list of conditions, unique by type.
Conditions = Annotated[list[Condition], ListMap("type")]


class OwnerReference(WireModel):
    """A reference from an object to the object that owns it."""

    api_version: StrictStr
    kind: StrictStr
    name: StrictStr
    uid: StrictStr
    controller: StrictBool | None = None
    block_owner_deletion: StrictBool | None = None


class ObjectMeta(WireModel):
    """Standard object metadata. Fields the API server adds are kept as they are."""

    name: StrictStr = ""
    generate_name: StrictStr = ""
    namespace: StrictStr = ""
    uid: StrictStr = ""
    resource_version: StrictStr = ""
    generation: Int64 = 0
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: dict[str, StrictStr] | None = None
    annotations: dict[str, StrictStr] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[StrictStr] | None = None
    managed_fields: list[dict[str, Any]] | None = None


class KubeObject(WireModel):
    """A top-level API object: ``apiVersion``, ``kind`` and ``metadata``.

    Subclasses set :attr:`api_resource`. Built in code, an object gets its
    ``apiVersion``, ``kind`` and ``metadata`` written out; read from the
    wire, ``apiVersion`` and ``kind`` must match the class when present.
    """

    api_resource: ClassVar[ResourceInfo]
    go_always = frozenset({"metadata"})

    api_version: StrictStr = ""
    """The versioned schema of this object (``group/version``)."""
    kind: StrictStr = ""
    """The type of this object, in CamelCase."""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    """Standard object metadata."""

    def model_post_init(self, context: Any, /) -> None:
        """Fill ``apiVersion`` and ``kind`` on objects built in code."""
        if not is_wire_context(context):
            if not self.api_version:
                self.api_version = self.api_resource.api_version
            if not self.kind:
                self.kind = self.api_resource.kind
        super().model_post_init(context)

    @field_validator("api_version", "kind")
    @classmethod
    def _check_type_meta(cls, value: str, info: ValidationInfo) -> str:
        # The ResourceInfo attributes carry the same names as the two fields.
        expected = getattr(cls.api_resource, info.field_name or "")
        if value and value != expected:
            raise ValueError(f"must be {expected}")
        return value
