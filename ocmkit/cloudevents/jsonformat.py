"""The CloudEvents JSON event format (structured mode), as receivers decode it.

Receivers of both transports accept a structured event: the payload is one
JSON object with the context attributes, the extensions and ``data`` (or
``data_base64``). Numeric extensions may be JSON numbers or strings. Our
senders use binary mode, so nothing here encodes one.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ocmkit.cloudevents.event import (
    CloudEvent,
    EventDecodeError,
    ExtensionValue,
    format_time,
    parse_time,
)

_CONTEXT = (
    "specversion",
    "id",
    "source",
    "type",
    "time",
    "datacontenttype",
    "subject",
    "dataschema",
)


def from_json_format(payload: bytes) -> CloudEvent:
    """Decode a JSON-format event; raises EventDecodeError."""
    try:
        doc = json.loads(payload)
    except ValueError as err:
        raise EventDecodeError(f"structured event is not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise EventDecodeError("structured event is not a JSON object")
    if not isinstance(doc.get("specversion"), str) or not doc["specversion"]:
        raise EventDecodeError("structured event: missing 'specversion'")
    # id, source and type may be missing, as sdk-go reads such an event without
    # validating it (an empty type is refused where it is parsed).
    event = CloudEvent(
        id=_optional_str(doc, "id") or "",
        source=_optional_str(doc, "source") or "",
        type=_optional_str(doc, "type") or "",
        spec_version=doc["specversion"],
        data_content_type=_optional_str(doc, "datacontenttype"),
        subject=_optional_str(doc, "subject"),
        data_schema=_optional_str(doc, "dataschema"),
    )
    if isinstance(doc.get("time"), str):
        event.time = parse_time(doc["time"], what="structured event time")
    if "data_base64" in doc:
        try:
            event.data = base64.b64decode(doc["data_base64"])
        except (TypeError, ValueError) as err:
            raise EventDecodeError(f"structured event: bad data_base64: {err}") from None
    elif "data" in doc:
        data = doc["data"]
        event.data = (
            data.encode() if isinstance(data, str) and not _is_json(event) else _dumps(data)
        )
    for key, value in doc.items():
        if key in _CONTEXT or key in ("data", "data_base64"):
            continue
        event.extensions[key] = _extension(value)
    return event


def extension_text(value: ExtensionValue) -> str:
    """An extension value as the CloudEvents canonical string (MQTT user properties)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, str):
        return value
    return format_time(value, nanos=True)


def _is_json(event: CloudEvent) -> bool:
    content = event.data_content_type or "application/json"
    return content.split(";")[0].strip().endswith("json")


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _optional_str(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) else None


def _extension(value: Any) -> ExtensionValue:
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return json.dumps(value, separators=(",", ":"))
