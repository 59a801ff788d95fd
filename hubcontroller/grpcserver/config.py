"""``hubcontroller grpc-server`` settings: OCM's ``--server-config`` file and broker flags.

The server config file uses OCM's snake_case keys (``tls_cert_file``,
``tls_key_file``, ``client_ca_file``, ``server_bind_port`` ...; a missing file
means the defaults, as OCM). With ``client_ca_file`` a client certificate
is asked for and verified when given (bearer tokens are checked first, as
OCM does; :mod:`hubcontroller.grpcserver.tlsfront` serves that TLS); without
it, clients authenticate with tokens only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

import yaml

from ocmkit.command import DEFAULT_LISTEN, LIBRARY_GO_NAMESPACE
from ocmkit.durations import parse_duration_seconds
from ocmkit.settings import ServingSettings, check_client_limits, check_logging

DEFAULT_CLIENT_CA_FILE = "/var/run/secrets/hub/grpc/ca/ca-bundle.crt"
DEFAULT_TLS_CERT_FILE = "/var/run/secrets/hub/grpc/serving-cert/tls.crt"
DEFAULT_TLS_KEY_FILE = "/var/run/secrets/hub/grpc/serving-cert/tls.key"
DEFAULT_BIND_PORT = "8090"
#: OCM's broker default heartbeat interval.
DEFAULT_HEARTBEAT_SECONDS = 10.0


@dataclass(frozen=True)
class GrpcServerConfig:
    """The server config file (OCM ``GRPCServerOptions``); durations in seconds."""

    tls_cert_file: str = DEFAULT_TLS_CERT_FILE
    tls_key_file: str = DEFAULT_TLS_KEY_FILE
    client_ca_file: str = DEFAULT_CLIENT_CA_FILE
    tls_min_version: str = "VersionTLS12"
    tls_max_version: str = "VersionTLS13"
    cipher_suites: str = ""
    server_bind_port: str = DEFAULT_BIND_PORT
    max_concurrent_streams: int = 2**32 - 1
    max_receive_message_size: int = 4 * 1024 * 1024
    max_send_message_size: int = 2**31 - 1
    connection_timeout: float = 120.0
    max_connection_age: float = math.inf
    client_min_ping_interval: float = 5.0
    server_ping_interval: float = 30.0
    server_ping_timeout: float = 10.0
    permit_ping_without_stream: bool = False
    write_buffer_size: int = 32 * 1024
    read_buffer_size: int = 32 * 1024
    cert_watch_interval: float = 60.0
    #: Keys the file set that this server does not act on (logged at start).
    unused: tuple[str, ...] = field(default=())

    @property
    def port(self) -> int:
        """``server_bind_port`` as a number."""
        return int(self.server_bind_port)


#: The file's keys and their types, as the dataclass declares them (annotations are text).
_KEY_TYPES = {f.name: f.type for f in fields(GrpcServerConfig) if f.name != "unused"}
#: Accepted for OCM compatibility, not applied (gRPC core picks these itself).
_NOT_APPLIED = frozenset(
    {
        "tls_min_version",
        "tls_max_version",
        "cipher_suites",
        "write_buffer_size",
        "read_buffer_size",
        "connection_timeout",
    }
)


def load_server_config(path: str) -> GrpcServerConfig:
    """Read ``--server-config``; a missing file gives the defaults. Raises ValueError."""
    if not path or not Path(path).exists():
        return GrpcServerConfig()
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"--server-config {path}: {first}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"--server-config {path}: not a YAML mapping")
    values: dict[str, Any] = {}
    unused: list[str] = []
    for key, raw in doc.items():
        kind = _KEY_TYPES.get(key)
        if kind == "str":
            values[key] = "" if raw is None else str(raw)
        elif kind == "int":
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise ValueError(f"--server-config {path}: {key} must be an integer")
            values[key] = raw
        elif kind == "float":  # every float of the file is a duration
            try:
                values[key] = parse_duration_seconds(str(raw))
            except ValueError as err:
                raise ValueError(f"--server-config {path}: {key}: {err}") from None
        elif kind == "bool":
            if not isinstance(raw, bool):
                raise ValueError(f"--server-config {path}: {key} must be true or false")
            values[key] = raw
        else:
            raise ValueError(f"--server-config {path}: unknown key {key!r}")
        if key in _NOT_APPLIED:
            unused.append(key)
    config = GrpcServerConfig(**values, unused=tuple(unused))
    if not config.server_bind_port.isdigit() or not 0 <= config.port <= 65535:
        raise ValueError(f"--server-config {path}: server_bind_port {config.server_bind_port!r}")
    if config.cert_watch_interval <= 30:
        raise ValueError(
            f"--server-config {path}: cert_watch_interval ({config.cert_watch_interval}s) "
            "must be greater than 30 seconds"
        )
    return config


@dataclass(frozen=True)
class GrpcServerSettings(ServingSettings):
    """Everything ``hubcontroller grpc-server`` runs with."""

    SERVING_CERT_NAME: ClassVar[str] = "grpc-server"

    kubeconfig: str = ""  # --kubeconfig (empty: in-cluster)
    server_config: str = ""  # --server-config
    heartbeat_disabled: bool = False  # --broker-heartbeat-disabled
    heartbeat_interval: float = DEFAULT_HEARTBEAT_SECONDS  # --broker-heartbeat-interval
    bind_address: str = ""  # --bind-address (ours; empty: every interface, as OCM)
    listen: str = DEFAULT_LISTEN  # --listen: /metrics and the probes (HTTPS, as OCM)
    insecure_serving: bool = False  # --insecure-serving (ours: plain HTTP)
    tls_cert_file: str = ""  # --tls-cert-file (ours; empty: a self-signed certificate)
    tls_private_key_file: str = ""  # --tls-private-key-file (ours)
    tls_min_version: str = ""  # --tls-min-version (the endpoint; gRPC core picks its own)
    tls_cipher_suites: str = ""  # --tls-cipher-suites (likewise)
    terminate_on_files: tuple[str, ...] = ()  # --terminate-on-files
    log_format: str = "json"
    log_level: str = "info"
    kube_api_qps: float = 50.0
    kube_api_burst: int = 100
    # --namespace, else the pod's, else library-go's: names the build_info series
    component_namespace: str = LIBRARY_GO_NAMESPACE

    def validate(self) -> None:
        """Raise ValueError naming the flag at fault."""
        # OCM v1.2.1's server takes any interval (later sdk-go refuses one below 10s);
        # a non-positive one would stop Go's ticker, so it is refused here.
        if not self.heartbeat_disabled and not self.heartbeat_interval > 0:
            raise ValueError(
                f"--broker-heartbeat-interval ({self.heartbeat_interval}s) must be greater "
                "than 0 when heartbeat is enabled"
            )
        self.validate_serving()
        check_logging(self.log_format, self.log_level)
        check_client_limits("kube-api", self.kube_api_qps, self.kube_api_burst)
