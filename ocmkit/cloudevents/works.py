"""ManifestWorks as manifestbundle CloudEvents, both directions (docs/cloudevents.md).

The source side (a hub server, a test source) turns a ManifestWork into a
spec event and reads status events back; the agent side turns spec events
into the ManifestWork its controllers cache and builds status, resync and
deletion events from the cached work. Only the manifestbundle codec exists:
data type ``io.open-cluster-management.works.v1alpha1.manifestbundles``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from ocmkit.cloudevents.event import (
    CLOUDEVENTS_DATA_TYPE_ANNOTATION,
    CLOUDEVENTS_ORIGINAL_SOURCE_LABEL,
    CONDITION_DELETED,
    DELETE_REQUEST,
    EXT_CLUSTER_NAME,
    EXT_DELETION_TIMESTAMP,
    EXT_LOG_TRACING,
    EXT_METADATA,
    EXT_ORIGINAL_SOURCE,
    EXT_RESOURCE_ID,
    EXT_RESOURCE_VERSION,
    EXT_SEQUENCE_ID,
    EXT_STATUS_HASH,
    MANIFEST_BUNDLES,
    RESYNC_REQUEST,
    RESYNC_RESPONSE,
    SPEC,
    STATUS,
    UPDATE_REQUEST,
    CloudEvent,
    EventDecodeError,
    EventType,
    ExtensionValue,
    format_time,
    parse_time,
    utcnow,
    work_event_type,
)
from ocmkit.govalues import go_marshal, json_type, protobuf_size
from schemas.wire import LOGGING_ANNOTATION_PREFIX, MANIFEST_WORK_FINALIZER

WORK_API_VERSION = "work.open-cluster-management.io/v1"
#: The webhook's default limit on the summed size of a work's manifests.
MAX_MANIFESTS_BYTES = 500 * 1024
#: The source name OCM's hub server puts on its events.
KUBE_SOURCE = "kube"
#: ManifestWork spec fields a ManifestBundle carries besides the manifests, and their
#: names in the bundle.
_BUNDLE_FIELDS = {
    "deleteOption": "deleteOption",
    "manifestConfigs": "manifestConfigs",
    "executor": "executer",  # sic: the wire name
}

# metav1.ObjectMeta in Go's field order (json.Marshal writes struct fields in order).
_OBJECT_META_FIELDS = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


#: Media types sdk-go's ``Event.DataAs`` (which OCM's work codecs read data with) decodes
#: as JSON: none, these two, and any ``+json`` suffix, matched case-sensitively.
_JSON_MEDIA_TYPES = frozenset({"", "application/json", "text/json"})


class SpecRejected(ValueError):
    """A spec event whose ManifestBundle the agent refuses (empty, too big, bad manifest)."""


def object_meta_json(meta: dict[str, Any]) -> str:
    """A work's metadata as Go's ``json.Marshal(ObjectMeta)`` lays it out.

    Empty fields are left out: ``omitempty``, and ``omitzero`` for
    ``creationTimestamp`` (apimachinery since v0.33; older ones wrote ``null``).
    """
    # Maps (labels, annotations) with sorted keys, as Go writes a map; structs
    # (ownerReferences, managedFields) in the order the API server wrote them,
    # which is Go's field order; <, > and & escaped.
    fields = (
        f'"{key}":{go_marshal(meta[key], sort_keys=key in _META_MAPS)}'
        for key in _OBJECT_META_FIELDS
        if meta.get(key) not in _EMPTY
    )
    return "{" + ",".join(fields) + "}"


_EMPTY: tuple[Any, ...] = (None, "", 0, [], {})
_META_MAPS = frozenset({"labels", "annotations"})


def log_tracing(meta: dict[str, Any]) -> str:
    """The ``logtracing`` extension: the work's ``logging.open-cluster-management.io/``
    annotations as a JSON map (``{}`` when there are none)."""
    annotations = meta.get("annotations") or {}
    picked = {k: v for k, v in annotations.items() if k.startswith(LOGGING_ANNOTATION_PREFIX)}
    return go_marshal(picked)


def status_hash(status: dict[str, Any] | None) -> str:
    """Lowercase hex SHA-256 of the status as OCM computes it: Go's ``encoding/json``
    of the typed ``ManifestWorkStatus`` after unstructured conversion (:func:`go_work_status`)."""
    return hashlib.sha256(go_marshal(go_work_status(status)).encode()).hexdigest()


def go_work_status(status: dict[str, Any] | None) -> dict[str, Any]:
    """A work status in the shape Go's typed ``ManifestWorkStatus`` converts to.

    What the unstructured converter keeps decides the hash: ``omitempty``
    drops empty lists and zero numbers but never a struct, so
    ``resourceStatus`` and each manifest's ``statusFeedback`` are always there
    (``{}`` when empty), a condition's strings always, and a manifest's
    ``conditions`` (no ``omitempty``) is ``null`` when absent. Unknown fields
    are dropped as the typed object drops them.
    """
    status = _mapping(status)
    out: dict[str, Any] = {}
    conditions = _go_conditions(status.get("conditions"))
    if conditions:
        out["conditions"] = conditions
    manifests = _mapping(status.get("resourceStatus")).get("manifests")
    entries = [_go_manifest(m) for m in manifests or [] if isinstance(m, dict)]
    out["resourceStatus"] = {"manifests": entries} if entries else {}
    return out


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one (as Go's converter drops it)."""
    return value if isinstance(value, dict) else {}


def _go_conditions(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, list):
        return None
    conditions = []
    for cond in value:
        if not isinstance(cond, dict):
            continue
        entry: dict[str, Any] = {
            key: str(cond.get(key) or "") for key in ("type", "status", "reason", "message")
        }
        entry["lastTransitionTime"] = cond.get("lastTransitionTime") or None
        if cond.get("observedGeneration"):
            entry["observedGeneration"] = cond["observedGeneration"]
        conditions.append(entry)
    return conditions


_RESOURCE_META_STRINGS = ("group", "version", "kind", "resource", "name", "namespace")
_FIELD_VALUE_POINTERS = ("integer", "string", "boolean", "jsonRaw")


def _go_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    meta = _mapping(manifest.get("resourceMeta"))
    resource_meta: dict[str, Any] = {k: str(meta.get(k) or "") for k in _RESOURCE_META_STRINGS}
    resource_meta["ordinal"] = int(meta.get("ordinal") or 0)
    values = []
    for item in _mapping(manifest.get("statusFeedback")).get("values") or []:
        if not isinstance(item, dict):
            continue
        field_value = _mapping(item.get("fieldValue"))
        value: dict[str, Any] = {"type": str(field_value.get("type") or "")}
        for key in _FIELD_VALUE_POINTERS:  # pointers: omitted only when nil
            if field_value.get(key) is not None:
                value[key] = field_value[key]
        values.append({"name": str(item.get("name") or ""), "fieldValue": value})
    return {
        "resourceMeta": resource_meta,
        "statusFeedback": {"values": values} if values else {},
        "conditions": _go_conditions(manifest.get("conditions")),
    }


class SequenceIds:
    """Snowflake ids (node 1) for ``sequenceid``: strictly increasing per process."""

    EPOCH_MS = 1288834974657
    NODE = 1

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._step = 0

    def next(self) -> str:
        """The next id, as a decimal string."""
        with self._lock:
            now = max(int(time.time() * 1000), self._last_ms)
            if now == self._last_ms:
                self._step = (self._step + 1) & 0xFFF
                if self._step == 0:  # 4096 ids in one millisecond: borrow the next one
                    now += 1
            else:
                self._step = 0
            self._last_ms = now
            return str(((now - self.EPOCH_MS) << 22) | (self.NODE << 12) | self._step)


# -- source side ---------------------------------------------------------------------


def spec_event(work: dict[str, Any], action: str, source: str = KUBE_SOURCE) -> CloudEvent:
    """The spec event of a ManifestWork (``data`` = ManifestBundle unless it is deleting).

    A ``delete_request`` always carries a deletion timestamp: the work's, else
    now, which its metadata then carries too (as OCM's server sets it on the work).
    """
    meta = work.get("metadata") or {}
    if action == DELETE_REQUEST and not meta.get("deletionTimestamp"):
        meta = {**meta, "deletionTimestamp": format_time(utcnow())}
    event = CloudEvent.new(
        source,
        work_event_type(SPEC, action),
        {
            EXT_CLUSTER_NAME: str(meta.get("namespace") or ""),
            EXT_ORIGINAL_SOURCE: "",
            EXT_RESOURCE_ID: str(meta.get("uid") or ""),
            EXT_RESOURCE_VERSION: int(meta.get("generation") or 0),
            EXT_METADATA: object_meta_json(meta),
            EXT_LOG_TRACING: log_tracing(meta),
        },
    )
    deleting = meta.get("deletionTimestamp")
    if deleting or action == DELETE_REQUEST:
        event.extensions[EXT_DELETION_TIMESTAMP] = _time_value(deleting)
        return event
    spec = work.get("spec") or {}
    bundle: dict[str, Any] = {"manifests": (spec.get("workload") or {}).get("manifests") or []}
    for field, wire in _BUNDLE_FIELDS.items():
        if spec.get(field):
            bundle[wire] = spec[field]
    event.set_json(bundle)
    return event


def deleted_resync_response(uid: str, cluster: str, source: str = "source") -> CloudEvent:
    """The resync answer for a work the agent listed but the source no longer has.

    OCM's server sends it with source ``source`` and no ``resourceversion``,
    which OCM's Go agent cannot decode (it drops the event and leaves the
    orphan to eviction); ours adds ``resourceversion`` 0, which every agent
    reads as "a deletion of whatever generation it has".
    """
    return CloudEvent.new(
        source,
        work_event_type(SPEC, RESYNC_RESPONSE),
        {
            EXT_CLUSTER_NAME: cluster,
            EXT_ORIGINAL_SOURCE: "",
            EXT_RESOURCE_ID: uid,
            EXT_RESOURCE_VERSION: 0,
            EXT_DELETION_TIMESTAMP: utcnow(),
        },
    )


def resync_versions(event: CloudEvent) -> dict[str, int]:
    """The ``resourceID -> resourceVersion`` pairs of a spec resync request."""
    data = _object_data(event, "resync request")
    versions: dict[str, int] = {}
    for entry in data.get("resourceVersions") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("resourceID"), str):
            raise EventDecodeError(f"event {event.id}: bad resourceVersions entry {entry!r}")
        versions[entry["resourceID"]] = int(entry.get("resourceVersion") or 0)
    return versions


@dataclass(frozen=True)
class StatusUpdate:
    """What a status event reports about one work."""

    uid: str
    cluster: str
    generation: int
    action: str
    sequence_id: str
    conditions: list[dict[str, Any]]
    resource_status: list[dict[str, Any]]
    status_hash: str = ""

    @property
    def deleted(self) -> bool:
        """Whether the agent confirms it cleaned up after a deleted work."""
        return any(
            c.get("type") == CONDITION_DELETED and c.get("status") == "True"
            for c in self.conditions
        )

    def status(self) -> dict[str, Any]:
        """The ManifestWork ``status`` this update describes."""
        return {
            "conditions": self.conditions,
            "resourceStatus": {"manifests": self.resource_status},
        }


def decode_status_event(event: CloudEvent) -> StatusUpdate:
    """Read a status event as a source does; raises EventDecodeError."""
    kind = EventType.parse(event.type)
    if kind.data_type != MANIFEST_BUNDLES or kind.subresource != STATUS:
        raise EventDecodeError(f"event {event.id}: not a manifestbundle status event")
    data = _object_data(event, "status", typed=True)
    conditions = data.get("conditions") or []
    resources = data.get("resourceStatus") or []
    if not isinstance(conditions, list) or not isinstance(resources, list):
        raise EventDecodeError(f"event {event.id}: conditions/resourceStatus are not lists")
    return StatusUpdate(
        uid=event.ext_str(EXT_RESOURCE_ID),
        cluster=event.ext_str(EXT_CLUSTER_NAME),
        generation=event.ext_int(EXT_RESOURCE_VERSION),
        action=kind.action,
        sequence_id=event.ext_str(EXT_SEQUENCE_ID),
        conditions=[c for c in conditions if isinstance(c, dict)],
        resource_status=[r for r in resources if isinstance(r, dict)],
        status_hash=event.ext_str(EXT_STATUS_HASH, ""),
    )


# -- agent side ----------------------------------------------------------------------


def spec_resync_request(client_id: str, cluster: str, versions: dict[str, int]) -> CloudEvent:
    """ "Send me what changed": one entry per cached work (UID -> generation)."""
    event = CloudEvent.new(
        client_id,
        work_event_type(SPEC, RESYNC_REQUEST),
        {EXT_CLUSTER_NAME: cluster, EXT_ORIGINAL_SOURCE: ""},
    )
    event.set_json(
        {
            "resourceVersions": [
                {"resourceID": uid, "resourceVersion": generation}
                for uid, generation in versions.items()
            ]
        }
    )
    return event


def status_hashes(event: CloudEvent) -> dict[str, str]:
    """The ``resourceID -> statusHash`` pairs of a status resync request (empty: all)."""
    data = _object_data(event, "status resync")
    hashes: dict[str, str] = {}
    for entry in data.get("statusHashes") or []:
        if isinstance(entry, dict) and isinstance(entry.get("resourceID"), str):
            hashes[entry["resourceID"]] = str(entry.get("statusHash") or "")
    return hashes


def status_event(
    work: dict[str, Any],
    *,
    client_id: str,
    cluster: str,
    sequence_id: str,
    action: str = UPDATE_REQUEST,
) -> CloudEvent:
    """The status event of a cached work; raises EventDecodeError if it has no
    original-source label (it did not come from a source)."""
    meta = work.get("metadata") or {}
    labels = meta.get("labels") or {}
    original = labels.get(CLOUDEVENTS_ORIGINAL_SOURCE_LABEL)
    if not isinstance(original, str):
        raise EventDecodeError(
            f"work {meta.get('name')}: no {CLOUDEVENTS_ORIGINAL_SOURCE_LABEL} label"
        )
    status = work.get("status") or {}
    extensions: dict[str, ExtensionValue] = {
        EXT_CLUSTER_NAME: cluster,
        EXT_ORIGINAL_SOURCE: original,
        EXT_RESOURCE_ID: str(meta.get("uid") or ""),
        EXT_RESOURCE_VERSION: int(meta.get("generation") or 0),
        EXT_SEQUENCE_ID: sequence_id,
        EXT_STATUS_HASH: status_hash(status),
        # sdk-go clears the cache's own resourceVersion before it publishes a status
        # update; its answers to a status resync publish the cached work as it is.
        EXT_METADATA: object_meta_json(
            meta if action == RESYNC_RESPONSE else {**meta, "resourceVersion": ""}
        ),
        EXT_LOG_TRACING: log_tracing(meta),
    }
    event = CloudEvent.new(client_id, work_event_type(STATUS, action), extensions)
    data: dict[str, Any] = {"conditions": status.get("conditions") or None}
    manifests = (status.get("resourceStatus") or {}).get("manifests") or []
    if manifests:
        data["resourceStatus"] = manifests
    event.set_json(data)
    return event


def work_from_spec_event(event: CloudEvent, cluster: str) -> dict[str, Any]:
    """The ManifestWork a spec event describes, as the agent caches it.

    Raises EventDecodeError for an undecodable event and SpecRejected for a
    ManifestBundle the agent refuses.
    """
    uid = event.ext_str(EXT_RESOURCE_ID)
    if not uid:
        # The work's key in the cache and in every status event sent back.
        raise EventDecodeError(f"event {event.id}: extension {EXT_RESOURCE_ID!r} is empty")
    deleting = event.ext_time(EXT_DELETION_TIMESTAMP)
    # A deletion may come without resourceversion (OCM's server builds resync
    # deletions so): read it as 0 then.
    generation = event.ext_int(EXT_RESOURCE_VERSION, 0 if deleting is not None else None)
    meta: dict[str, Any] = {}
    raw_meta = event.extensions.get(EXT_METADATA)
    if raw_meta is not None:
        try:
            parsed = json.loads(event.ext_str(EXT_METADATA))
        except ValueError as err:
            raise EventDecodeError(f"event {event.id}: metadata is not JSON: {err}") from None
        if not isinstance(parsed, dict):
            raise EventDecodeError(f"event {event.id}: metadata is not a JSON object")
        meta = parsed
    meta.pop("managedFields", None)
    meta["uid"] = uid
    meta["name"] = meta.get("name") or uid
    meta["namespace"] = cluster
    meta["resourceVersion"] = ""
    meta["generation"] = generation
    annotations = dict(meta.get("annotations") or {})
    annotations[CLOUDEVENTS_DATA_TYPE_ANNOTATION] = MANIFEST_BUNDLES
    annotations.update(_tracing_annotations(event))
    meta["annotations"] = annotations
    labels = dict(meta.get("labels") or {})
    labels[CLOUDEVENTS_ORIGINAL_SOURCE_LABEL] = event.source
    meta["labels"] = labels
    spec: dict[str, Any] = {}
    if deleting is not None:
        meta["deletionTimestamp"] = format_time(deleting)
        meta["finalizers"] = [MANIFEST_WORK_FINALIZER]
    else:
        meta.pop("deletionTimestamp", None)
        spec = _spec_from_bundle(event)
    return {"apiVersion": WORK_API_VERSION, "kind": "ManifestWork", "metadata": meta, "spec": spec}


def _data_json(event: CloudEvent) -> Any:
    """The event's data read as OCM's codecs read it: by its media type (the content
    type before any ``;``), so XML, text or unknown types are refused, not parsed."""
    media = event.data_content_type or ""
    if ";" in media:
        media = media.split(";", 1)[0].strip()
    suffix = media.rsplit("+", 1)[1] if "+" in media else ""
    if event.data and media not in _JSON_MEDIA_TYPES and suffix != "json":
        raise EventDecodeError(f"event {event.id}: data of content type {media!r} is not JSON")
    return event.json_data()


def _spec_from_bundle(event: CloudEvent) -> dict[str, Any]:
    bundle = _data_json(event)
    if not isinstance(bundle, dict):
        raise EventDecodeError(f"event {event.id}: no ManifestBundle data")
    manifests = bundle.get("manifests")
    if manifests is not None and not isinstance(manifests, list):
        raise SpecRejected(f"manifests must be a list, not {json_type(manifests)}")
    if not manifests:
        raise SpecRejected("manifests should not be empty")
    size = 0
    for index, manifest in enumerate(manifests):
        if not isinstance(manifest, dict):
            raise SpecRejected(f"manifest {index} is not an object")
        # As OCM's agent counts it: RawExtension.Size() of the manifest as a Go source
        # sends it (compact, <>& escaped), as the webhook counts it too.
        size += protobuf_size(len(go_marshal(manifest, sort_keys=False).encode()))
        metadata = manifest.get("metadata")
        if not manifest.get("kind"):
            raise SpecRejected(f"manifest {index}: kind is required")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            raise SpecRejected(f"manifest {index}: metadata.name is required")
        if metadata.get("generateName"):
            raise SpecRejected(f"manifest {index}: generateName is not allowed")
    if size > MAX_MANIFESTS_BYTES:
        raise SpecRejected(
            f"the size of manifests is {size} bytes which exceeds the {MAX_MANIFESTS_BYTES} limit"
        )
    spec: dict[str, Any] = {"workload": {"manifests": copy.deepcopy(manifests)}}
    for field, wire in _BUNDLE_FIELDS.items():
        if bundle.get(wire) is not None:
            spec[field] = bundle[wire]
    return spec


def _object_data(event: CloudEvent, what: str, *, typed: bool = False) -> dict[str, Any]:
    # typed: read as OCM's codecs read a status (by media type); resync requests are
    # read as JSON whatever their content type, as sdk-go reads them.
    data = (_data_json(event) if typed else event.json_data()) or {}
    if not isinstance(data, dict):
        raise EventDecodeError(f"event {event.id}: {what} data is not an object")
    return data


def _tracing_annotations(event: CloudEvent) -> dict[str, str]:
    raw = event.extensions.get(EXT_LOG_TRACING)
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {str(k): str(v) for k, v in parsed.items() if isinstance(v, str)}


def _time_value(value: Any) -> ExtensionValue:
    if isinstance(value, str) and value:
        return parse_time(value, what="deletionTimestamp")
    return utcnow()
