"""``hubcontroller grpc-server``: OCM's hub CloudEvents gRPC server for ManifestWorks.

:mod:`.broker` serves the CloudEventService, :mod:`.works` maps the hub's
ManifestWorks to spec events and status events back to the hub,
:mod:`.auth` authenticates (TokenReview, client certificates) and authorizes
(SubjectAccessReview) agents, :mod:`.server` runs it all as a process. Only
the settings are imported here: the command line must not load gRPC.
"""

from hubcontroller.grpcserver.config import GrpcServerConfig, GrpcServerSettings

__all__ = ["GrpcServerConfig", "GrpcServerSettings"]
