"""hub.md §5.1: the shared manifest rules, through the pure core, for both kinds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hubcontroller.webhook import (
    MANIFESTWORK,
    MANIFESTWORK_REPLICASET,
    ValidationOptions,
    WebhookResource,
    validate,
    validate_json,
)
from hubcontroller.webhook.manifests import Manifest
from ocmkit.govalues import protobuf_size
from schemas import wire
from tests.webhook.helpers import (
    RecordingAccess,
    allowed,
    bad_request,
    configmap,
    manifest_work,
    replica_set,
    response,
    review,
)

GATES = frozenset({wire.GATE_MANIFEST_WORK_REPLICA_SET})


def _review(resource: WebhookResource, manifests: list[Any]) -> dict[str, Any]:
    if resource is MANIFESTWORK:
        return review("CREATE", manifest_work(manifests))
    return review(
        "CREATE", replica_set(manifests), kind="ManifestWorkReplicaSet", version="v1alpha1"
    )


async def _answer(
    resource: WebhookResource, manifests: list[Any], limit: int = 512000
) -> dict[str, Any]:
    options = ValidationOptions(manifest_limit=limit, feature_gates=GATES)
    return await validate(
        _review(resource, manifests), sar=RecordingAccess(), options=options, resource=resource
    )


BOTH = pytest.mark.parametrize(
    "resource", [MANIFESTWORK, MANIFESTWORK_REPLICASET], ids=["manifestwork", "replicaset"]
)


def test_protobuf_size_counts_tag_varint_and_bytes() -> None:
    # The spec's example: 300 bytes count 303 (tag, two-byte varint, bytes).
    assert protobuf_size(300) == 303
    assert protobuf_size(1) == 3
    assert protobuf_size(127) == 129
    assert protobuf_size(128) == 131
    assert protobuf_size(16383) == 16386
    assert protobuf_size(16384) == 16388
    assert Manifest(None, "null").size == 0  # an empty RawExtension
    assert Manifest({}, "{}").size == 4


@BOTH
async def test_distinct_manifests_are_allowed(resource: WebhookResource) -> None:
    manifests = [
        configmap("cm1"),
        configmap("cm2"),
        configmap("cm1", "other"),  # same name, other namespace
        {**configmap("cm1"), "kind": "Secret"},  # same name, other kind
        {**configmap("cm1"), "apiVersion": "v2"},  # same object under another apiVersion
    ]
    assert allowed(await _answer(resource, manifests))


async def test_empty_manifests_replica_set() -> None:
    # The ManifestWork rule checks emptiness first with its own words (see test_manifestwork).
    answer = await _answer(MANIFESTWORK_REPLICASET, [])
    assert response(answer)["status"] == bad_request("Workload manifests should not be empty")


@BOTH
async def test_duplicate_manifest(resource: WebhookResource) -> None:
    manifests = [configmap("test1"), configmap("test2"), configmap("test1")]
    answer = await _answer(resource, manifests)
    assert response(answer) == {
        "uid": "uid-1",
        "allowed": False,
        "status": bad_request(
            "duplicate manifest for resource default/test1 with resource type v1.ConfigMap"
        ),
    }


@BOTH
async def test_duplicate_cluster_scoped_manifest(resource: WebhookResource) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}
    answer = await _answer(resource, [ns, ns])
    assert response(answer)["status"] == bad_request(
        "duplicate manifest for resource /ns1 with resource type v1.Namespace"
    )


@BOTH
async def test_name_required(resource: WebhookResource) -> None:
    for manifest in (
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default"}},
        {"apiVersion": "v1", "kind": "ConfigMap"},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}},
        # A wrongly typed name reads as empty, as unstructured's getters do.
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 7}},
    ):
        answer = await _answer(resource, [manifest])
        assert response(answer)["status"] == bad_request("name must be set in manifest")


@BOTH
async def test_generate_name_forbidden(resource: WebhookResource) -> None:
    manifest = configmap("cm1")
    manifest["metadata"]["generateName"] = "cm-"
    answer = await _answer(resource, [manifest])
    assert response(answer)["status"] == bad_request("generateName must not be set in manifest")


@BOTH
async def test_manifest_must_decode_as_object_with_kind(resource: WebhookResource) -> None:
    answer = await _answer(resource, ["just a string"])
    assert response(answer)["status"] == bad_request(
        "json: cannot unmarshal string into Go value of type map[string]interface {}"
    )
    answer = await _answer(resource, [[1, 2]])
    assert response(answer)["status"] == bad_request(
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    )
    answer = await _answer(resource, [None])
    assert response(answer)["status"] == bad_request("unexpected end of JSON input")
    # The decoder quotes the manifest's JSON as received.
    no_kind = {"apiVersion": "v1", "metadata": {"name": "a<b"}}
    answer = await _answer(resource, [no_kind])
    assert response(answer)["status"] == bad_request(
        """Object 'Kind' is missing in '{"apiVersion":"v1","metadata":{"name":"a\\u003cb"}}'"""
    )


@BOTH
async def test_metadata_extraction_failure(resource: WebhookResource) -> None:
    bad_namespace = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": 5},
    }
    answer = await _answer(resource, [configmap("ok"), bad_namespace])
    assert response(answer)["status"] == bad_request(
        "failed to extract metadata from manifest at index 1: json: cannot unmarshal number "
        "into Go struct field ObjectMeta.metadata.namespace of type string"
    )
    bad_api_version = {"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "a"}}
    answer = await _answer(resource, [bad_api_version])
    assert response(answer)["status"] == bad_request(
        "failed to extract metadata from manifest at index 0: json: cannot unmarshal number "
        "into Go struct field PartialObjectMetadata.TypeMeta.apiVersion of type string"
    )


def _cm(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


@BOTH
async def test_identity_keys_match_as_go_matches_them(resource: WebhookResource) -> None:
    """OCM reads a manifest's identity with Go's decoder: keys match fields ignoring case
    (Unicode letters that fold to ASCII ones too), the last key wins, and a second
    metadata object adds to the first. The API server sends keys sorted."""
    default = {"namespace": "default"}
    duplicates = [
        # KELVIN SIGN (after "kind" when sorted) says ConfigMap: the same as the first.
        [configmap("a"), {**configmap("a"), "kind": "Secret", "\u212aind": "ConfigMap"}],
        # LONG S in apiVersion overrides apps/v1.
        [configmap("a"), {**configmap("a"), "apiVersion": "apps/v1", "apiVer\u017fion": "v1"}],
        # "Metadata" comes first when sorted; "metadata" adds its name to that namespace.
        [configmap("a"), {"Metadata": default, **_cm("a")}],
    ]
    for manifests in duplicates:
        answer = await _answer(resource, manifests)
        assert response(answer)["status"] == bad_request(
            "duplicate manifest for resource default/a with resource type v1.ConfigMap"
        ), manifests
    # The second is in namespace "other" for Go: no duplicate.
    assert allowed(
        await _answer(resource, [_cm("a"), {"Metadata": {"namespace": "other"}, **_cm("a")}])
    )
    for extra, field in (
        ({"METADATA": "x"}, "PartialObjectMetadata.metadata of type v1.ObjectMeta"),
        ({"ApiVersion": 5}, "PartialObjectMetadata.TypeMeta.apiVersion of type string"),
        ({"\u212aIND": 5}, "PartialObjectMetadata.TypeMeta.kind of type string"),
        ({"Metadata": {"NAME": 5}}, "ObjectMeta.metadata.name of type string"),
    ):
        answer = await _answer(resource, [_cm("a", **extra)])
        kind = "string" if extra == {"METADATA": "x"} else "number"
        assert response(answer)["status"] == bad_request(
            f"failed to extract metadata from manifest at index 0: json: cannot unmarshal "
            f"{kind} into Go struct field {field}"
        )
    # A null leaves the field as it was: still a ConfigMap, so a duplicate.
    answer = await _answer(resource, [_cm("a"), {**_cm("a"), "\u212aind": None}])
    assert "duplicate manifest for resource /a" in response(answer)["status"]["message"]
    # Dotted and dotless i fold to no ASCII letter in Go: these keys are no field.
    for key in ("k\u0130nd", "k\u0131nd"):
        assert allowed(await _answer(resource, [{**_cm("a"), key: 5}]))
        assert allowed(
            await _answer(resource, [_cm("a"), {**_cm("a"), "kind": "Secret", key: "ConfigMap"}])
        )


@BOTH
async def test_first_failure_wins_in_manifest_order(resource: WebhookResource) -> None:
    nameless = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}
    # The duplicate comes before the nameless manifest, so it is reported.
    answer = await _answer(resource, [configmap("a"), configmap("a"), nameless])
    assert "duplicate manifest" in response(answer)["status"]["message"]
    answer = await _answer(resource, [configmap("a"), nameless, configmap("a")])
    assert response(answer)["status"]["message"] == "name must be set in manifest"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@BOTH
async def test_size_limit_boundary(resource: WebhookResource) -> None:
    manifests = [configmap("a", data={"k": "v" * 300}), configmap("b")]
    total = sum(protobuf_size(len(_compact(m))) for m in manifests)
    assert allowed(await _answer(resource, manifests, limit=total))
    answer = await _answer(resource, manifests, limit=total - 1)
    assert response(answer)["status"] == bad_request(
        f"the size of manifests is {total} bytes which exceeds the {total - 1} limit"
    )


@BOTH
async def test_size_limit_checked_before_the_manifests(resource: WebhookResource) -> None:
    # Over the limit and duplicated: the size wins.
    big = configmap("a", data={"k": "v" * 1000})
    answer = await _answer(resource, [big, big], limit=1000)
    assert response(answer)["status"]["message"].startswith("the size of manifests is ")


async def test_size_matches_ocm_figures() -> None:
    # OCM's validator test: two Secrets with 300 KiB and 200 KiB of data. Go's
    # test encoder ends each raw manifest with a newline, which counts 512192
    # there; as an API server sends them (no newline) they count 512190.
    def secret(size: int) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "data": "a" * size,
            "kind": "Secret",
            "metadata": {"name": "test", "namespace": "test"},
        }

    answer = await _answer(MANIFESTWORK, [secret(300 * 1024), secret(200 * 1024)])
    assert response(answer)["status"] == bad_request(
        "the size of manifests is 512190 bytes which exceeds the 512000 limit"
    )


async def test_size_counts_the_bytes_as_received() -> None:
    # A body with whitespace inside a manifest: the raw bytes count, not a re-encoding.
    manifest = configmap("a", data={"k": "é" * 10})
    body = json.dumps(review("CREATE", manifest_work([manifest])), indent=4, ensure_ascii=False)
    start = body.index("{\n", body.index('"manifests"'))
    raw = json.JSONDecoder().raw_decode(body, start)
    text = body[start : raw[1]]
    received = protobuf_size(len(text.encode()))
    compact = protobuf_size(
        len(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode())
    )
    assert received > compact
    options = ValidationOptions(manifest_limit=compact)
    answer = await validate_json(body.encode(), sar=RecordingAccess(), options=options)
    assert response(answer)["status"] == bad_request(
        f"the size of manifests is {received} bytes which exceeds the {compact} limit"
    )
    # The same review as a dict is re-encoded compactly, as the API server sends it.
    assert allowed(await validate(json.loads(body), sar=RecordingAccess(), options=options))
    # Escaped forms count as sent: "\u00e9" is 6 bytes where "é" is 2.
    escaped = json.dumps(review("CREATE", manifest_work([manifest])), ensure_ascii=True)
    answer = await validate_json(escaped, sar=RecordingAccess(), options=options)
    assert not response(answer)["allowed"]
