"""The ``--workload-source-config`` files of the grpc and mqtt drivers (OCM's keys).

grpc: ``url`` (``host:port``), ``caFile``/``caData``, ``clientCertFile``/
``clientCertData``, ``clientKeyFile``/``clientKeyData``, ``token``/``tokenFile``,
``keepAliveConfig`` {``enable``, ``time``, ``timeout``, ``permitWithoutStream``},
``serverHealthinessTimeout``. mqtt: ``brokerHost``, ``username``, ``password``,
the same certificate keys, ``keepAlive`` (seconds), ``dialTimeout``, ``pubQoS``,
``subQoS`` and ``topics``. ``*Data`` values are base64 of the PEM; durations use
Go syntax. Every problem is a ValueError naming the file and the key.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ocmkit.durations import parse_duration_seconds
from ocmkit.kube.config import yaml_problem


class SourceConfigError(ValueError):
    """A driver config file that cannot be used (the message names file and key)."""


@dataclass(frozen=True)
class TLSMaterial:
    """PEM bytes of the CA bundle and the client certificate and key (each optional)."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    cert_file: str = ""
    key_file: str = ""


#: grpc-go's floor for a client's keepalive time (OCM's agent uses it as well).
MIN_KEEPALIVE_TIME = 10.0
#: The largest MQTT keep alive (seconds): the CONNECT packet has two bytes for it.
MAX_KEEP_ALIVE = 65535


@dataclass(frozen=True)
class KeepAlive:
    """gRPC client keep-alive (``keepAliveConfig``)."""

    enable: bool = False
    #: The ping interval used: ``configured_time``, at least :data:`MIN_KEEPALIVE_TIME`.
    time: float = 30.0
    timeout: float = 10.0
    permit_without_stream: bool = False
    #: ``time`` as the file gives it.
    configured_time: float = 30.0


@dataclass(frozen=True)
class GrpcConfig:
    """The grpc driver's config file."""

    url: str
    tls: TLSMaterial
    token: str = ""
    #: Where ``token`` was read from (``tokenFile``, when no inline ``token`` is given).
    token_file: str = ""
    keep_alive: KeepAlive = KeepAlive()
    server_healthiness_timeout: float | None = None

    @property
    def secure(self) -> bool:
        """TLS whenever a CA, a client certificate or a token is configured.

        Go dials plaintext with a CA only; OCM's server serves TLS only, so a
        CA means TLS here.
        """
        return bool(self.tls.ca or self.tls.cert or self.token)


@dataclass(frozen=True)
class MqttTopics:
    """``topics``: where sources publish and agents publish."""

    source_events: str
    agent_events: str
    source_broadcast: str = ""
    agent_broadcast: str = ""

    def problem(self) -> str | None:
        """What OCM's topic rules find wrong here (the first thing), or None."""
        for key, value, pattern, required in (
            ("topics.sourceEvents", self.source_events, _SOURCE_EVENTS, True),
            ("topics.agentEvents", self.agent_events, _AGENT_EVENTS, True),
            ("topics.sourceBroadcast", self.source_broadcast, _SOURCE_BROADCAST, False),
            ("topics.agentBroadcast", self.agent_broadcast, _AGENT_BROADCAST, False),
        ):
            if not value:
                if required:
                    return f"{key} is required"
                continue
            if not pattern.match(value):
                return f"{key} {value!r} does not match {pattern.pattern}"
        if strip_share(self.agent_events).count("+") > 1 and not self.agent_broadcast:
            # The spec resync request is for every source: with no concrete source in
            # agentEvents it can only go to agentBroadcast.
            return (
                f"topics.agentEvents {self.agent_events!r} has no concrete source segment: "
                "set it, or set topics.agentBroadcast"
            )
        return None


@dataclass(frozen=True)
class MqttConfig:
    """The mqtt driver's config file."""

    broker_host: str
    #: ``brokerHost`` split into host and port.
    host: str
    port: int
    topics: MqttTopics
    tls: TLSMaterial
    username: str = ""
    password: str = ""
    keep_alive: int = 60
    dial_timeout: float = 60.0
    pub_qos: int = 1
    sub_qos: int = 1


def read_yaml(path: str, what: str, error: type[Exception]) -> Any:
    """The YAML document in ``path``; raises ``error`` naming ``what`` and the problem."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except yaml.YAMLError as err:
        # Where and what on one line, as for the spoke's kubeconfig.
        raise error(f"{what} {path} is not valid YAML: {yaml_problem(err)}") from None
    except OSError as err:
        # strerror alone: the message names the path already ("Is a directory").
        raise error(f"cannot read {what} {path}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise error(f"cannot read {what} {path}: {err}") from None


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        doc = read_yaml(path, "workload source config", SourceConfigError)
        if not isinstance(doc, dict):
            raise SourceConfigError(f"workload source config {path} is not a YAML mapping")
        self.doc: dict[str, Any] = doc

    def fail(self, message: str) -> SourceConfigError:
        return SourceConfigError(f"workload source config {self.path}: {message}")

    def string(self, key: str, doc: dict[str, Any] | None = None) -> str:
        value = (self.doc if doc is None else doc).get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(f"{key} must be a string")
        return value

    def boolean(self, key: str, doc: dict[str, Any], default: bool) -> bool:
        value = doc.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(f"{key} must be true or false")
        return value

    def integer(self, key: str, default: int) -> int:
        value = self.doc.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{key} must be an integer")
        return value

    def duration(self, key: str, doc: dict[str, Any], default: float | None) -> float | None:
        value = doc.get(key)
        if value is None or value == "":
            return default
        try:
            return parse_duration_seconds(str(value))
        except ValueError as err:
            raise self.fail(f"{key}: {err}") from None

    def pem(self, file_key: str, data_key: str) -> tuple[bytes | None, str]:
        data = self.string(data_key)
        name = self.string(file_key)
        if data:
            try:
                # Line breaks are allowed, as Go's decoder skips them: a YAML block
                # scalar ends in one, and base64(1) wraps at 76 columns.
                joined = data.replace("\r", "").replace("\n", "")
                return base64.b64decode(joined, validate=True), ""
            except (binascii.Error, ValueError):
                raise self.fail(f"{data_key} must be the base64 of a PEM file") from None
        if name:
            try:
                return Path(name).read_bytes(), name
            except OSError as err:
                raise self.fail(f"{file_key} {name}: {err.strerror or err}") from None
        return None, ""

    def tls(self) -> TLSMaterial:
        ca, _ = self.pem("caFile", "caData")
        cert, cert_file = self.pem("clientCertFile", "clientCertData")
        key, key_file = self.pem("clientKeyFile", "clientKeyData")
        if (cert is None) != (key is None):
            raise self.fail(
                "clientCertFile/clientCertData and clientKeyFile/clientKeyData go together"
            )
        return TLSMaterial(ca=ca, cert=cert, key=key, cert_file=cert_file, key_file=key_file)


def load_grpc_config(path: str) -> GrpcConfig:
    """Read and check a grpc driver config file; raises SourceConfigError."""
    reader = _Reader(path)
    url = reader.string("url")
    if not url:
        raise reader.fail("url is required")
    if "://" in url:
        raise reader.fail(f"url {url!r} must be host:port (no scheme)")
    tls = reader.tls()
    token = reader.string("token")
    token_file = "" if token else reader.string("tokenFile")
    if token_file:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as err:
            raise reader.fail(f"tokenFile {token_file}: {err.strerror or err}") from None
    if token and tls.ca is None:
        raise reader.fail("a token needs a CA (caFile or caData)")
    raw_keep = reader.doc.get("keepAliveConfig") or {}
    if not isinstance(raw_keep, dict):
        raise reader.fail("keepAliveConfig must be a mapping")
    configured_time = reader.duration("time", raw_keep, 30.0) or 30.0
    keep = KeepAlive(
        enable=reader.boolean("enable", raw_keep, False),
        # As grpc-go: pings more often than every 10s would make servers (5s minimum
        # by default, and strikes) answer GOAWAY too_many_pings.
        time=max(configured_time, MIN_KEEPALIVE_TIME),
        configured_time=configured_time,
        timeout=reader.duration("timeout", raw_keep, 10.0) or 10.0,
        permit_without_stream=reader.boolean("permitWithoutStream", raw_keep, False),
    )
    healthiness = reader.duration("serverHealthinessTimeout", reader.doc, None)
    return GrpcConfig(
        url=url,
        tls=tls,
        token=token,
        token_file=token_file,
        keep_alive=keep,
        server_healthiness_timeout=healthiness,
    )


_SOURCE_EVENTS = re.compile(
    r"^(\$share/[a-z0-9-]+/)?[a-z]+/([a-z0-9-]+|\+)/[a-z]+/([a-z0-9-]+|\+)/sourceevents$"
)
_AGENT_EVENTS = re.compile(
    r"^(\$share/[a-z0-9-]+/)?[a-z]+/([a-z0-9-]+|\+)/[a-z]+/([a-z0-9-]+|\+)/agentevents$"
)
_SOURCE_BROADCAST = re.compile(r"^(\$share/[a-z0-9-]+/)?[a-z]+/([a-z0-9-]+|\+)/sourcebroadcast$")
_AGENT_BROADCAST = re.compile(r"^(\$share/[a-z0-9-]+/)?[a-z]+/([a-z0-9-]+|\+)/agentbroadcast$")


def strip_share(topic: str) -> str:
    """A topic without its `$share/<group>/` prefix."""
    return topic.split("/", 2)[2] if topic.startswith("$share/") else topic


def load_mqtt_config(path: str) -> MqttConfig:
    """Read and check an mqtt driver config file; raises SourceConfigError."""
    reader = _Reader(path)
    broker = reader.string("brokerHost")
    if not broker:
        raise reader.fail("brokerHost is required")
    host, sep, port = broker.rpartition(":")
    if not sep or not port.isdigit():
        raise reader.fail(f"brokerHost {broker!r} is not host:port")
    raw_topics = reader.doc.get("topics")
    if not isinstance(raw_topics, dict):
        raise reader.fail("topics is required")
    topics = MqttTopics(
        source_events=reader.string("sourceEvents", raw_topics),
        agent_events=reader.string("agentEvents", raw_topics),
        source_broadcast=reader.string("sourceBroadcast", raw_topics),
        agent_broadcast=reader.string("agentBroadcast", raw_topics),
    )
    problem = topics.problem()
    if problem is not None:
        raise reader.fail(problem)
    pub_qos = reader.integer("pubQoS", 1)
    sub_qos = reader.integer("subQoS", 1)
    for key, qos in (("pubQoS", pub_qos), ("subQoS", sub_qos)):
        if qos not in (0, 1, 2):
            raise reader.fail(f"{key} must be 0, 1 or 2")
    keep_alive = reader.integer("keepAlive", 60)
    if not 0 <= keep_alive <= MAX_KEEP_ALIVE:
        # An MQTT CONNECT carries it in two bytes; OCM reads it as a uint16 too.
        raise reader.fail(f"keepAlive must be between 0 and {MAX_KEEP_ALIVE} (seconds)")
    return MqttConfig(
        broker_host=broker,
        host=host.strip("[]"),
        port=int(port),
        topics=topics,
        tls=reader.tls(),
        username=reader.string("username"),
        password=reader.string("password"),
        keep_alive=keep_alive,
        dial_timeout=reader.duration("dialTimeout", reader.doc, 60.0) or 60.0,
        pub_qos=pub_qos,
        sub_qos=sub_qos,
    )
