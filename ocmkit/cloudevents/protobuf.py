"""CloudEvent <-> the gRPC ``io.cloudevents.v1.CloudEvent`` message, as OCM maps it.

This is OCM's own mapping, not the CNCF protobuf format: senders use binary
mode; ``datacontenttype`` travels under the attribute key ``contenttype``,
every other attribute and extension under ``ce-<name>`` with a value kind
that follows its type, and the data always in ``binary_data``. Receivers
also take structured mode (``contenttype`` ``application/cloudevents+json``:
``binary_data`` is a whole JSON-format event).
"""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from ocmkit.cloudevents.event import (
    HEARTBEAT_TYPE,
    MAX_INTEGER,
    SPEC_VERSION,
    STRUCTURED_CONTENT_TYPE,
    CloudEvent,
    EventDecodeError,
    ExtensionValue,
    parse_time,
)
from ocmkit.cloudevents.jsonformat import from_json_format
from ocmkit.cloudevents.pb.cloudevent_pb2 import CloudEvent as PbCloudEvent
from ocmkit.cloudevents.pb.cloudevent_pb2 import CloudEventAttributeValue

CONTENT_TYPE_KEY = "contenttype"
PREFIX = "ce-"
#: The response header that opens a Subscribe stream.
SUBSCRIPTION_ID_HEADER = "subscription-id"
#: Context attributes (``ce-<name>``) and the CloudEvent fields they set (but ``time``).
_ATTRIBUTE_FIELDS = {
    "id": "id",
    "source": "source",
    "type": "type",
    "specversion": "spec_version",
    "subject": "subject",
    "dataschema": "data_schema",
    "datacontenttype": "data_content_type",
}


def _timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment.astimezone(UTC))
    return stamp


def _value(value: ExtensionValue) -> CloudEventAttributeValue:
    if isinstance(value, bool):
        return CloudEventAttributeValue(ce_boolean=value)
    if isinstance(value, int):
        if -MAX_INTEGER - 1 <= value <= MAX_INTEGER:
            return CloudEventAttributeValue(ce_integer=value)
        # Too big for int32: receivers also accept an Integer as a decimal string.
        return CloudEventAttributeValue(ce_string=str(value))
    if isinstance(value, datetime):
        return CloudEventAttributeValue(ce_timestamp=_timestamp(value))
    if isinstance(value, bytes):
        return CloudEventAttributeValue(ce_bytes=value)
    return CloudEventAttributeValue(ce_string=value)


def to_pb(event: CloudEvent) -> PbCloudEvent:
    """The binary-mode protobuf message of ``event``."""
    message = PbCloudEvent(
        id=event.id, source=event.source, spec_version=event.spec_version, type=event.type
    )
    attrs = message.attributes
    if event.data_content_type:
        attrs[CONTENT_TYPE_KEY].ce_string = event.data_content_type
    if event.time is not None:
        attrs[PREFIX + "time"].CopyFrom(_value(event.time))
    if event.subject is not None:
        attrs[PREFIX + "subject"].CopyFrom(_value(event.subject))
    if event.data_schema is not None:
        attrs[PREFIX + "dataschema"].ce_uri = event.data_schema
    for name, value in event.extensions.items():
        attrs[PREFIX + name].CopyFrom(_value(value))
    if event.data is not None:
        message.binary_data = event.data
    return message


def heartbeat_pb(event_id: str) -> PbCloudEvent:
    """The heartbeat a server sends on a Subscribe stream (no attributes)."""
    return PbCloudEvent(id=event_id, spec_version=SPEC_VERSION, type=HEARTBEAT_TYPE)


def is_heartbeat(message: PbCloudEvent) -> bool:
    """Whether a stream message is a heartbeat (dropped before decoding)."""
    return message.type == HEARTBEAT_TYPE


def _decoded(value: CloudEventAttributeValue) -> ExtensionValue:
    kind = value.WhichOneof("attr")
    if kind is None:
        raise EventDecodeError("attribute without a value")
    if kind == "ce_timestamp":
        return value.ce_timestamp.ToDatetime(tzinfo=UTC)
    decoded: ExtensionValue = getattr(value, kind)  # ce_boolean, ce_integer, ce_string ...
    return decoded


def from_pb(message: PbCloudEvent) -> CloudEvent:
    """Decode a protobuf message as OCM's receivers do; raises EventDecodeError."""
    attrs = message.attributes
    if not attrs:
        raise EventDecodeError(f"event {message.id!r} has no attributes: cannot decode it")
    content = attrs[CONTENT_TYPE_KEY].ce_string if CONTENT_TYPE_KEY in attrs else None
    if content is not None and content.startswith(STRUCTURED_CONTENT_TYPE):
        return from_json_format(message.binary_data)
    if not message.spec_version:
        raise EventDecodeError(f"event {message.id!r}: no spec_version")
    event = CloudEvent(
        id=message.id,
        source=message.source,
        type=message.type,
        spec_version=message.spec_version,
        data_content_type=content,
    )
    for key, value in attrs.items():
        if not key.startswith(PREFIX):
            continue  # only contenttype is meaningful without the prefix
        name = key[len(PREFIX) :]
        decoded = _decoded(value)
        if name == "time":
            if isinstance(decoded, datetime):
                event.time = decoded
            elif isinstance(decoded, str):
                event.time = parse_time(decoded, what="ce-time")
        elif name in _ATTRIBUTE_FIELDS:
            text = decoded if isinstance(decoded, str) else str(decoded)
            setattr(event, _ATTRIBUTE_FIELDS[name], text)
        else:
            event.extensions[name] = decoded
    if message.WhichOneof("data") == "binary_data":
        event.data = message.binary_data
    # text_data and proto_data are ignored, as OCM's receivers do.
    return event
