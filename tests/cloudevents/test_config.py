"""The drivers' config files (OCM's keys) and the MQTT topic layout."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs

from tests.support.throwaway_pki import (
    new_key,
    pem,
    pem_encrypted_key,
    pem_key,
    signed_certificate,
)
from workagent.sources.config import MqttTopics, load_grpc_config, load_mqtt_config
from workagent.sources.grpcdriver import GrpcTransport
from workagent.sources.mqttdriver import MqttTransport, publish_topic, subscribe_topics
from workagent.sources.transport import SubscriptionFailed


def write(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_grpc_config_as_registration_writes_it(tmp_path: Path) -> None:
    ca = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    (tmp_path / "tls.crt").write_bytes(b"cert")
    (tmp_path / "tls.key").write_bytes(b"key")
    config = load_grpc_config(
        write(
            tmp_path,
            {
                "url": "grpc.hub.example.com:443",
                "caData": base64.b64encode(ca).decode(),
                "clientCertFile": str(tmp_path / "tls.crt"),
                "clientKeyFile": str(tmp_path / "tls.key"),
                "token": "",
                "keepAliveConfig": {
                    "enable": True,
                    "time": "30s",
                    "timeout": "10s",
                    "permitWithoutStream": True,
                },
            },
        )
    )
    assert config.url == "grpc.hub.example.com:443"
    assert config.tls.ca == ca and config.tls.cert == b"cert" and config.tls.key == b"key"
    assert config.keep_alive.enable and config.keep_alive.permit_without_stream
    assert config.keep_alive.time == 30.0 and config.keep_alive.timeout == 10.0
    assert config.secure
    assert config.server_healthiness_timeout is None


def test_pem_data_may_be_wrapped_as_yaml_blocks_and_base64_write_it(tmp_path: Path) -> None:
    """Go's decoder skips line breaks: ``caData: |`` (which ends in one) and base64(1)'s
    76-column lines are read; anything else that is not base64 is still refused."""
    ca = b"-----BEGIN CERTIFICATE-----\n" + b"M" * 300 + b"\n-----END CERTIFICATE-----\n"
    encoded = base64.b64encode(ca).decode()
    wrapped = "\r\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    path = tmp_path / "config.yaml"
    path.write_text(f"url: hub:443\ncaData: |\n  {wrapped.replace(chr(10), chr(10) + '  ')}\n")
    assert load_grpc_config(str(path)).tls.ca == ca
    path.write_text(f"brokerHost: 127.0.0.1:1883\ncaData: |\n  {encoded}\n{MQTT_TOPICS}")
    assert load_mqtt_config(str(path)).tls.ca == ca
    path.write_text(f"url: hub:443\ncaData: '{encoded[:40]} {encoded[40:]}'\n")
    with pytest.raises(ValueError, match="caData must be the base64 of a PEM file"):
        load_grpc_config(str(path))


#: A valid topics block, as YAML.
MQTT_TOPICS = """topics:
  sourceEvents: sources/maestro/consumers/+/sourceevents
  agentEvents: sources/maestro/consumers/+/agentevents
"""


@pytest.mark.parametrize(
    ("time", "configured", "used"), [("1s", 1.0, 10.0), ("10s", 10.0, 10.0), ("45s", 45.0, 45.0)]
)
def test_grpc_keepalive_time_is_at_least_10s_as_grpc_go(
    tmp_path: Path, time: str, configured: float, used: float
) -> None:
    path = write(
        tmp_path,
        {"url": "hub:8090", "keepAliveConfig": {"enable": True, "time": time, "timeout": "1s"}},
    )
    config = load_grpc_config(path)
    assert (config.keep_alive.configured_time, config.keep_alive.time) == (configured, used)
    with capture_logs() as logs:
        options = dict(GrpcTransport(path, "cluster1").channel_options())
    assert options["grpc.keepalive_time_ms"] == int(used * 1000)
    assert options["grpc.keepalive_timeout_ms"] == 1000
    warnings = [r for r in logs if r["log_level"] == "warning"]
    if configured < used:
        assert warnings == [
            {
                "event": "keepAliveConfig.time below the minimum, using the minimum",
                "log_level": "warning",
                "configured_seconds": configured,
                "used_seconds": used,
            }
        ]
    else:
        assert warnings == []


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "url is required"),
        ({"url": "https://hub:443"}, "no scheme"),
        ({"url": "hub:443", "caData": "%%%"}, "caData must be the base64 of a PEM file"),
        ({"url": "hub:443", "clientCertData": "Y2VydA=="}, "go together"),
        ({"url": "hub:443", "token": "t"}, "a token needs a CA"),
        ({"url": "hub:443", "keepAliveConfig": {"time": "30"}}, "time:"),
        ({"url": "hub:443", "caFile": "/nonexistent/ca.crt"}, "caFile /nonexistent/ca.crt"),
    ],
)
def test_grpc_config_errors_name_the_key(tmp_path: Path, doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_grpc_config(write(tmp_path, doc))


def test_grpc_config_token_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("secret\n")
    config = load_grpc_config(
        write(tmp_path, {"url": "hub:8090", "caData": "Y2E=", "tokenFile": str(tmp_path / "token")})
    )
    assert config.token == "secret"
    assert config.token_file == str(tmp_path / "token")  # read again for every call
    # An inline token wins, and is used as given.
    config = load_grpc_config(
        write(
            tmp_path,
            {
                "url": "hub:8090",
                "caData": "Y2E=",
                "token": "inline",
                "tokenFile": str(tmp_path / "token"),
            },
        )
    )
    assert (config.token, config.token_file) == ("inline", "")


def test_mqtt_config_and_topics(tmp_path: Path) -> None:
    config = load_mqtt_config(
        write(
            tmp_path,
            {
                "brokerHost": "127.0.0.1:1883",
                "topics": {
                    "sourceEvents": "sources/maestro/consumers/+/sourceevents",
                    "agentEvents": "sources/maestro/consumers/+/agentevents",
                    "sourceBroadcast": "sources/+/sourcebroadcast",
                },
            },
        )
    )
    assert (config.host, config.port, config.pub_qos, config.sub_qos) == ("127.0.0.1", 1883, 1, 1)
    assert subscribe_topics(config.topics, "cluster1") == [
        "sources/maestro/consumers/cluster1/sourceevents",
        "sources/+/sourcebroadcast",
    ]
    assert (
        publish_topic(config.topics, "cluster1", "maestro")
        == "sources/maestro/consumers/cluster1/agentevents"
    )
    # The spec resync goes to agentBroadcast when there is one.
    broadcast = MqttTopics(
        source_events="sources/+/consumers/+/sourceevents",
        agent_events="sources/+/consumers/+/agentevents",
        agent_broadcast="clusters/+/agentbroadcast",
    )
    assert publish_topic(broadcast, "cluster1", "") == "clusters/cluster1/agentbroadcast"
    assert (
        publish_topic(broadcast, "cluster1", "maestro")
        == "sources/maestro/consumers/cluster1/agentevents"
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"topics": {}}, "brokerHost is required"),
        ({"brokerHost": "broker"}, "not host:port"),
        ({"brokerHost": "b:1883"}, "topics is required"),
        ({"brokerHost": "b:1883", "topics": {"sourceEvents": "a/b/c"}}, "topics.sourceEvents"),
        (
            {
                "brokerHost": "b:1883",
                "pubQoS": 3,
                "topics": {
                    "sourceEvents": "sources/s/consumers/+/sourceevents",
                    "agentEvents": "sources/s/consumers/+/agentevents",
                },
            },
            "pubQoS must be 0, 1 or 2",
        ),
        (
            {
                "brokerHost": "b:1883",
                "topics": {
                    "sourceEvents": "sources/+/consumers/+/sourceevents",
                    "agentEvents": "sources/+/consumers/+/agentevents",
                },
            },
            "no concrete source segment",
        ),
        *(
            (
                {
                    "brokerHost": "b:1883",
                    "keepAlive": keep_alive,
                    "topics": {
                        "sourceEvents": "sources/s/consumers/+/sourceevents",
                        "agentEvents": "sources/s/consumers/+/agentevents",
                    },
                },
                "keepAlive must be between 0 and 65535",
            )
            # Beyond two bytes paho failed the CONNECT with a struct.error traceback.
            for keep_alive in (-5, 65536, 100000)
        ),
    ],
)
def test_mqtt_config_errors(tmp_path: Path, doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_mqtt_config(write(tmp_path, doc))


def _mqtt_with_client_pair(folder: Path) -> dict[str, Any]:
    """An MQTT config whose client certificate pair is ``tls.crt``/``tls.key`` in ``folder``."""
    return {
        "brokerHost": "127.0.0.1:8883",
        "clientCertFile": str(folder / "tls.crt"),
        "clientKeyFile": str(folder / "tls.key"),
        "topics": {
            "sourceEvents": "sources/maestro/consumers/+/sourceevents",
            "agentEvents": "sources/maestro/consumers/+/agentevents",
        },
    }


async def test_mqtt_encrypted_client_key_is_an_error_not_a_passphrase_prompt(
    tmp_path: Path,
) -> None:
    """OpenSSL would ask for the passphrase on the terminal (EINVAL without one)."""
    key = new_key()
    (tmp_path / "tls.crt").write_bytes(pem(signed_certificate("agent", key)))
    encrypted = pem_encrypted_key(key)
    (tmp_path / "tls.key").write_bytes(encrypted)
    doc = _mqtt_with_client_pair(tmp_path)
    transport = MqttTransport(write(tmp_path, doc), "cluster1", "cluster1-work-agent")
    with pytest.raises(SubscriptionFailed) as caught:
        transport._new_client()
    assert str(caught.value) == (
        "mqtt TLS: the private key is encrypted (an unencrypted key is needed)"
    )
    # The same key unencrypted loads.
    (tmp_path / "tls.key").write_bytes(pem_key(key))
    transport = MqttTransport(write(tmp_path, doc), "cluster1", "cluster1-work-agent")
    assert transport._new_client() is not None


async def test_mqtt_client_pair_that_does_not_load_is_an_invalid_setting(tmp_path: Path) -> None:
    """At start it was a traceback (exit 1): check() let SubscriptionFailed through."""
    (tmp_path / "tls.crt").write_bytes(pem(signed_certificate("agent", new_key())))
    (tmp_path / "tls.key").write_bytes(pem_key(new_key()))  # another key
    doc = _mqtt_with_client_pair(tmp_path)
    transport = MqttTransport(write(tmp_path, doc), "cluster1", "cluster1-work-agent")
    with pytest.raises(ValueError, match=r"^mqtt TLS: the private key does not match"):
        await transport.check()
