"""Generated protobuf and gRPC modules of the CloudEvents service (``make proto``)."""
