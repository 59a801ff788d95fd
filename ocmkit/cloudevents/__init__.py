"""CloudEvents for ManifestWorks: the event model and OCM's wire mappings.

A bottom layer shared by the agent's CloudEvents work source
(:mod:`workagent.sources`) and the hub's gRPC server
(:mod:`hubcontroller.grpcserver`): the event (:mod:`.event`), its gRPC
message mapping (:mod:`.protobuf`), the JSON event format (:mod:`.jsonformat`),
MQTT v5 messages (:mod:`.mqttcodec`) and ManifestWorks as manifestbundle
events (:mod:`.works`). docs/cloudevents.md describes the protocol.
"""

from ocmkit.cloudevents.event import (
    HEARTBEAT_TYPE,
    MANIFEST_BUNDLES,
    CloudEvent,
    EventDecodeError,
    EventType,
)

__all__ = ["HEARTBEAT_TYPE", "MANIFEST_BUNDLES", "CloudEvent", "EventDecodeError", "EventType"]
