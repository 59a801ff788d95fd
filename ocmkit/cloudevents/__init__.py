"""CloudEvents for ManifestWorks: the event model and OCM's wire mappings.

Shared by the agent's CloudEvents work sources and the hub's gRPC server;
docs/cloudevents.md describes the protocol.
"""

from ocmkit.cloudevents.event import (
    HEARTBEAT_TYPE,
    MANIFEST_BUNDLES,
    CloudEvent,
    EventDecodeError,
    EventType,
)

__all__ = ["HEARTBEAT_TYPE", "MANIFEST_BUNDLES", "CloudEvent", "EventDecodeError", "EventType"]
