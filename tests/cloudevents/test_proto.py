"""The generated gRPC modules are what `make proto` generates from the committed .proto."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROTO = "ocmkit/cloudevents/pb/cloudevent.proto"
GENERATED = (
    "cloudevent_pb2.py",
    "cloudevent_pb2.pyi",
    "cloudevent_pb2_grpc.py",
    "cloudevent_pb2_grpc.pyi",
)


def test_generated_modules_match_the_proto(tmp_path: Path) -> None:
    (tmp_path / "ocmkit/cloudevents/pb").mkdir(parents=True)
    shutil.copy(REPO / PROTO, tmp_path / PROTO)
    bindir = Path(sys.executable).parent
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            ".",
            "--python_out=.",
            "--grpc_python_out=.",
            f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
            "--mypy_out=.",
            f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
            "--mypy_grpc_out=.",
            PROTO,
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    for name in GENERATED:
        fresh = (tmp_path / "ocmkit/cloudevents/pb" / name).read_text()
        committed = (REPO / "ocmkit/cloudevents/pb" / name).read_text()
        assert fresh == committed, f"{name} is stale: run `make proto`"


def test_service_and_message_names_are_the_wire_contract() -> None:
    from ocmkit.cloudevents.pb import cloudevent_pb2

    service = cloudevent_pb2.DESCRIPTOR.services_by_name["CloudEventService"]
    assert service.full_name == "io.cloudevents.v1.CloudEventService"
    assert [m.name for m in service.methods] == ["Publish", "Subscribe"]
    fields = {
        msg: {f.name: f.number for f in cloudevent_pb2.DESCRIPTOR.message_types_by_name[msg].fields}
        for msg in (
            "CloudEvent",
            "CloudEventAttributeValue",
            "PublishRequest",
            "SubscriptionRequest",
        )
    }
    assert fields["CloudEvent"] == {
        "id": 1, "source": 2, "spec_version": 3, "type": 4, "attributes": 5,
        "binary_data": 6, "text_data": 7, "proto_data": 8,
    }  # fmt: skip
    assert fields["CloudEventAttributeValue"] == {
        "ce_boolean": 1, "ce_integer": 2, "ce_string": 3, "ce_bytes": 4,
        "ce_uri": 5, "ce_uri_ref": 6, "ce_timestamp": 7,
    }  # fmt: skip
    assert fields["PublishRequest"] == {"event": 1}
    assert fields["SubscriptionRequest"] == {"source": 1, "cluster_name": 2, "data_type": 3}
