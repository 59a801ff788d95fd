"""The CloudEvent as both transports carry it, and OCM's event type strings.

A :class:`CloudEvent` is transport-neutral: :mod:`ocmkit.cloudevents.protobuf`
maps it to and from the gRPC message, :mod:`ocmkit.cloudevents.mqttcodec` to
and from MQTT v5 messages. Extension values keep their CloudEvents type (String,
Integer, Timestamp, Boolean, Binary) because the gRPC mapping encodes each type
differently; the accessors below accept what OCM's receivers accept (an Integer
or Timestamp may also arrive as a string).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

SPEC_VERSION = "1.0"
JSON_CONTENT_TYPE = "application/json"
#: The content type of a structured-mode event (the whole event is the payload).
STRUCTURED_CONTENT_TYPE = "application/cloudevents+json"

#: The only work data type OCM agents and sources still use (manifestbundle codec).
MANIFEST_BUNDLES = "io.open-cluster-management.works.v1alpha1.manifestbundles"
HEARTBEAT_TYPE = "io.open-cluster-management.cloudevents.heartbeat"

SPEC = "spec"
STATUS = "status"
CREATE_REQUEST = "create_request"
UPDATE_REQUEST = "update_request"
DELETE_REQUEST = "delete_request"
RESYNC_REQUEST = "resync_request"
RESYNC_RESPONSE = "resync_response"

# Extension attribute names (lowercase, as on the wire).
EXT_CLUSTER_NAME = "clustername"
EXT_ORIGINAL_SOURCE = "originalsource"
EXT_RESOURCE_ID = "resourceid"
EXT_RESOURCE_VERSION = "resourceversion"
EXT_DELETION_TIMESTAMP = "deletiontimestamp"
EXT_METADATA = "metadata"
EXT_SEQUENCE_ID = "sequenceid"
EXT_STATUS_HASH = "statushash"
EXT_LOG_TRACING = "logtracing"

#: Annotation the agent puts on works that came as CloudEvents (value: the data type).
CLOUDEVENTS_DATA_TYPE_ANNOTATION = "cloudevents.open-cluster-management.io/datatype"
#: Label naming the source that sent a work (the spec event's ``source``).
CLOUDEVENTS_ORIGINAL_SOURCE_LABEL = "cloudevents.open-cluster-management.io/originalsource"
#: The condition an agent reports once a deleted work is cleaned up (never on the hub).
CONDITION_DELETED = "Deleted"
REASON_MANIFESTS_DELETED = "ManifestsDeleted"
#: Message of that condition; ``{cluster}`` is the managed cluster's name.
MANIFESTS_DELETED_MESSAGE = "The manifests are deleted from the cluster {cluster}"

#: The largest Integer a CloudEvents extension holds (Go senders drop larger ones).
MAX_INTEGER = 2**31 - 1

ExtensionValue = str | int | bool | bytes | datetime


class EventDecodeError(ValueError):
    """An event that cannot be decoded (missing or mistyped attribute, bad data)."""


@dataclass(frozen=True)
class EventType:
    """``<data type>.<subresource>.<action>``, the data type being three dot-parts."""

    data_type: str
    subresource: str
    action: str

    def __str__(self) -> str:
        return f"{self.data_type}.{self.subresource}.{self.action}"

    @classmethod
    def parse(cls, text: str) -> EventType:
        """Split a type string; raises EventDecodeError for anything but 5 dot-parts."""
        parts = text.split(".")
        if len(parts) < 5:
            raise EventDecodeError(f"unsupported cloudevents type format: {text!r}")
        return cls(".".join(parts[:-2]), parts[-2], parts[-1])


def work_event_type(subresource: str, action: str) -> str:
    """The type string of a manifestbundles event."""
    return str(EventType(MANIFEST_BUNDLES, subresource, action))


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


@dataclass
class CloudEvent:
    """One CloudEvent: context attributes, extensions and the (JSON) data bytes."""

    id: str
    source: str
    type: str
    spec_version: str = SPEC_VERSION
    time: datetime | None = None
    data_content_type: str | None = None
    subject: str | None = None
    data_schema: str | None = None
    data: bytes | None = None
    extensions: dict[str, ExtensionValue] = field(default_factory=dict)

    @classmethod
    def new(
        cls, source: str, type_: str, extensions: dict[str, ExtensionValue] | None = None
    ) -> CloudEvent:
        """A new event with a random id and the current time."""
        return cls(
            id=str(uuid.uuid4()),
            source=source,
            type=type_,
            time=utcnow(),
            extensions=dict(extensions or {}),
        )

    def set_json(self, value: Any) -> None:
        """Set the data to ``value`` as compact JSON (``application/json``)."""
        self.data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        self.data_content_type = JSON_CONTENT_TYPE

    def json_data(self) -> Any:
        """The data decoded as JSON (None when there is none)."""
        if not self.data:
            return None
        try:
            return json.loads(self.data)
        except ValueError as err:
            raise EventDecodeError(f"event {self.id}: data is not JSON: {err}") from None

    def ext_str(self, name: str, default: str | None = None) -> str:
        """A String extension; raises EventDecodeError when missing (without default)."""
        value = self.extensions.get(name, default)
        if value is None:
            raise EventDecodeError(f"event {self.id}: missing extension {name!r}")
        if isinstance(value, bool | bytes | datetime):
            raise EventDecodeError(f"event {self.id}: extension {name!r} is not a string")
        return str(value)

    def ext_int(self, name: str, default: int | None = None) -> int:
        """An Integer extension (also accepted as a decimal string), int32 as the
        CloudEvents type: a larger value is refused, as sdk-go refuses it."""
        value = self.extensions.get(name, default)
        if value is None:
            raise EventDecodeError(f"event {self.id}: missing extension {name!r}")
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise EventDecodeError(f"event {self.id}: extension {name!r} is not an integer")
        try:
            number = int(value)
        except ValueError:
            raise EventDecodeError(
                f"event {self.id}: extension {name!r} is not an integer: {value!r}"
            ) from None
        if not -MAX_INTEGER - 1 <= number <= MAX_INTEGER:
            # sdk-go's words; an sdk-go source could not decode our events echoing it.
            raise EventDecodeError(
                f"event {self.id}: extension {name!r}: "
                f'cannot convert "{value}" to int32: out of range'
            )
        return number

    def ext_time(self, name: str) -> datetime | None:
        """A Timestamp extension (also accepted as an RFC 3339 string); None if absent."""
        value = self.extensions.get(name)
        if value is None:
            return None
        if isinstance(value, datetime):
            return value
        if isinstance(value, str):
            return parse_time(value, what=f"event {self.id}: extension {name!r}")
        raise EventDecodeError(f"event {self.id}: extension {name!r} is not a timestamp")


def parse_time(text: str, *, what: str = "timestamp") -> datetime:
    """An RFC 3339 timestamp (``Z`` or an offset, with or without fractions)."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    # Python's parser takes at most 6 fraction digits; Go writes up to 9.
    if "." in value:
        head, _, rest = value.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        value = head + "." + rest[: min(digits, 6)] + rest[digits:]
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise EventDecodeError(f"{what}: not an RFC 3339 time: {text!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def format_time(moment: datetime, *, nanos: bool = False) -> str:
    """RFC 3339 in UTC with a ``Z``; with ``nanos`` the fraction as Go's RFC3339Nano
    writes it (trailing zeros trimmed)."""
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{utc.microsecond * 1000:09d}".rstrip("0")
    if nanos and fraction:
        text += "." + fraction
    return text + "Z"
