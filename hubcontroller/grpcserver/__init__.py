"""``hubcontroller grpc-server``: OCM's hub CloudEvents gRPC server for ManifestWorks.

:mod:`.broker` serves the CloudEventService, :mod:`.works` maps the hub's
ManifestWorks to spec events and status events back to the hub,
:mod:`.auth` authenticates (TokenReview, client certificates) and authorizes
(SubjectAccessReview) agents, :mod:`.server` runs it all as a process.
"""

from hubcontroller.grpcserver.config import GrpcServerConfig, GrpcServerSettings
from hubcontroller.grpcserver.server import build_grpc_server, run, run_grpc_server

__all__ = [
    "GrpcServerConfig",
    "GrpcServerSettings",
    "build_grpc_server",
    "run",
    "run_grpc_server",
]
