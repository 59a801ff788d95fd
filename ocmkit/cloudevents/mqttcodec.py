"""CloudEvent <-> MQTT v5 message (payload, content type, user properties).

Senders use binary mode: every context attribute and extension is a user
property ``ce-<name>`` with a string value (Integers decimal, Timestamps RFC
3339 UTC), ``datacontenttype`` is the Content Type property and the payload
is the data. Receivers also take structured mode (Content Type
``application/cloudevents+json``, the payload a JSON-format event). Nothing
here imports an MQTT client: the driver passes plain values in and out.
"""

from __future__ import annotations

from collections.abc import Iterable

from ocmkit.cloudevents.event import (
    STRUCTURED_CONTENT_TYPE,
    CloudEvent,
    EventDecodeError,
    parse_time,
)
from ocmkit.cloudevents.jsonformat import extension_text, from_json_format

PREFIX = "ce-"


def to_mqtt(event: CloudEvent) -> tuple[bytes, str | None, list[tuple[str, str]]]:
    """``(payload, content type, user properties)`` of ``event`` in binary mode."""
    props = [
        (PREFIX + "specversion", event.spec_version),
        (PREFIX + "id", event.id),
        (PREFIX + "source", event.source),
        (PREFIX + "type", event.type),
    ]
    optional = (("time", event.time), ("subject", event.subject), ("dataschema", event.data_schema))
    for name, value in (*optional, *event.extensions.items()):
        if value is not None:
            props.append((PREFIX + name, extension_text(value)))
    return event.data or b"", event.data_content_type, props


def from_mqtt(
    payload: bytes, content_type: str | None, user_properties: Iterable[tuple[str, str]]
) -> CloudEvent:
    """Decode a received message (binary or structured); raises EventDecodeError."""
    if content_type and content_type.startswith(STRUCTURED_CONTENT_TYPE):
        return from_json_format(payload)
    props = {k.lower(): v for k, v in user_properties if k.lower().startswith(PREFIX)}
    spec_version = props.pop(PREFIX + "specversion", "")
    if not spec_version:
        raise EventDecodeError("MQTT message without ce-specversion: not a CloudEvent")
    event = CloudEvent(
        id=props.pop(PREFIX + "id", ""),
        source=props.pop(PREFIX + "source", ""),
        type=props.pop(PREFIX + "type", ""),
        spec_version=spec_version,
        data_content_type=content_type or None,
    )
    # No check of ce-id or ce-type here: OCM's transport does not validate received
    # events, so one without an id is handled, and an empty type fails where it is parsed.
    time = props.pop(PREFIX + "time", None)
    if time:
        event.time = parse_time(time, what="ce-time")
    event.subject = props.pop(PREFIX + "subject", None)
    event.data_schema = props.pop(PREFIX + "dataschema", None)
    content = props.pop(PREFIX + "datacontenttype", None)
    if content and not event.data_content_type:
        event.data_content_type = content
    for key, value in props.items():
        event.extensions[key[len(PREFIX) :]] = value
    event.data = payload or None
    return event
