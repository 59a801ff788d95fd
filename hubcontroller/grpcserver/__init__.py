"""``hubcontroller grpc-server``: OCM's hub CloudEvents gRPC server for ManifestWorks.

Only the settings are imported here: the command line must not load gRPC.
"""

from hubcontroller.grpcserver.config import GrpcServerConfig, GrpcServerSettings

__all__ = ["GrpcServerConfig", "GrpcServerSettings"]
