"""Bodies the apiserver cannot decode, and objects etcd cannot store, over HTTP.

The expected answers are kube-apiserver 1.30's, worked out from its request
handlers (the recordings in tests/fixtures/apiserver/ hold no such
exchange): each assertion names where the wording comes from.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesim.sim import KubeSim
from tests.conftest import Kubectl, Raw
from tests.support.crds import crd

SECRETS = "/api/v1/namespaces/dec/secrets"
WIDGETS = "/apis/example.com/v1/namespaces/dec/widgets"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
# etcd's default --max-request-bytes.
ETCD_LIMIT = 1_572_864


def _status(code: int, message: str, reason: str | None, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason is not None:
        body["reason"] = reason
    if details:
        body["details"] = details
    body["code"] = code
    return body


def _secret(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": data}


async def _namespace(raw: Raw) -> None:
    code, body = await raw.request("POST", "/api/v1/namespaces", {"metadata": {"name": "dec"}})
    assert code == 201, body


def _bad_base64(offset: int) -> str:
    # The decoder's wording for a create or update body (sigs.k8s.io/json with
    # Go's encoding/base64, behind the handlers' "cannot be handled as" prefix).
    return (
        'Secret in version "v1" cannot be handled as a Secret: '
        f"illegal base64 data at input byte {offset}"
    )


@pytest.mark.parametrize(
    ("value", "offset"),
    [
        ("billy", 4),  # a partial last quantum fails at its start
        ("bill!", 4),  # a byte outside the alphabet fails where it is
        ("<foo>", 0),
        ("APIKEY_BASE64", 6),
        ("Y", 0),
        ("YQ=", 3),  # "==" needed: fails at the end of the input
        ("Y===", 1),  # padding after one character
        ("YQ==YQ==", 4),  # data after the padding
        ("YQ\n=\n=x", 6),  # newlines are skipped, even inside the padding
    ],
)
async def test_secret_data_that_is_not_base64_is_refused_on_create(
    raw: Raw, value: str, offset: int
) -> None:
    await _namespace(raw)
    code, body = await raw.request("POST", SECRETS, _secret("s", ok="YQ==", bad=value))
    assert (code, body) == (400, _status(400, _bad_base64(offset), "BadRequest"))
    code, body = await raw.request("GET", f"{SECRETS}/s")
    assert code == 404


async def test_valid_base64_with_newlines_is_accepted_and_string_data_folds_into_data(
    raw: Raw,
) -> None:
    await _namespace(raw)
    body = _secret("s", wrapped="YWJj\nZGVm\r\n", short="YQ==")
    body["stringData"] = {"plain": "héllo", "short": "overrides data"}
    code, created = await raw.request("POST", SECRETS, body)
    assert code == 201, created
    assert "stringData" not in created
    assert created["data"] == {
        "wrapped": "YWJj\nZGVm\r\n",
        "short": "b3ZlcnJpZGVzIGRhdGE=",
        "plain": "aMOpbGxv",
    }


async def test_configmap_binary_data_and_update_are_decoded_too(raw: Raw) -> None:
    await _namespace(raw)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    code, body = await raw.request(
        "POST", "/api/v1/namespaces/dec/configmaps", {**cm, "binaryData": {"b": "%"}}
    )
    message = (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        "illegal base64 data at input byte 0"
    )
    assert (code, body) == (400, _status(400, message, "BadRequest"))
    code, body = await raw.request("POST", SECRETS, _secret("s", a="YQ=="))
    assert code == 201, body
    code, body = await raw.request("PUT", f"{SECRETS}/s", _secret("s", a="YQ", b="YQ=="))
    assert (code, body) == (400, _status(400, _bad_base64(0), "BadRequest"))


async def test_patches_that_leave_bad_base64_are_invalid(raw: Raw) -> None:
    await _namespace(raw)
    code, created = await raw.request(
        "POST", f"{SECRETS}?fieldManager=m", {**_secret("s", b="Yg==", a="YQ=="), "type": "Opaque"}
    )
    assert code == 201, created
    meta = created["metadata"]
    # JSON and merge patches decode the patched JSON (evanphx/json-patch output:
    # merged objects re-encoded with sorted keys, untouched ones as stored,
    # HTML characters escaped); the 422 has no kind or name and shows it with %q.
    fields = '{"f:data":{".":{},"f:a":{},"f:b":{}},"f:type":{}}'
    stored_meta = (
        f'{{"name":"s","namespace":"dec","uid":"{meta["uid"]}",'
        f'"resourceVersion":"{meta["resourceVersion"]}",'
        f'"creationTimestamp":"{meta["creationTimestamp"]}",'
        '"managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1",'
        f'"time":"{meta["managedFields"][0]["time"]}","fieldsType":"FieldsV1",'
        f'"fieldsV1":{fields}}}]}}'
    )

    def invalid(patched: str, detail: str) -> dict[str, Any]:
        shown = json.dumps(patched)  # Go's %q of ASCII text
        cause = f"Invalid value: {shown}: {detail}"
        return _status(
            422,
            f' "" is invalid: patch: {cause}',
            "Invalid",
            causes=[{"reason": "FieldValueInvalid", "message": cause, "field": "patch"}],
        )

    patched = (
        '{"apiVersion":"v1","data":{"a":"YQ==","b":"Yg==","c":"\\u003c!\\u003e"},'
        f'"kind":"Secret","metadata":{stored_meta},"type":"Opaque"}}'
    )
    code, body = await raw.request(
        "PATCH", f"{SECRETS}/s", {"data": {"c": "<!>"}}, content_type=MERGE
    )
    assert (code, body) == (422, invalid(patched, "illegal base64 data at input byte 0"))

    patched = (
        '{"apiVersion":"v1","data":{"a":"YQ==","b":"Yg=","c":"YQ=="},'
        f'"kind":"Secret","metadata":{stored_meta},"type":"Opaque"}}'
    )
    ops = [
        {"op": "add", "path": "/data/c", "value": "YQ=="},
        {"op": "replace", "path": "/data/b", "value": "Yg="},
    ]
    code, body = await raw.request("PATCH", f"{SECRETS}/s", ops, content_type=JSON_PATCH)
    assert (code, body) == (422, invalid(patched, "illegal base64 data at input byte 3"))

    # A strategic merge patch converts the patched map to the Go type: the value
    # is the patch map as %+v prints it, the detail the converter's wrapping.
    code, body = await raw.request(
        "PATCH", f"{SECRETS}/s", {"data": {"c": "a b"}, "type": "Opaque"}, content_type=STRATEGIC
    )
    expected = invalid(
        "map[data:map[c:a b] type:Opaque]",
        "error decoding from json: illegal base64 data at input byte 1",
    )
    assert (code, body) == (422, expected)

    code, after = await raw.request("GET", f"{SECRETS}/s")
    assert after == created


async def test_server_side_apply_of_bad_base64_is_a_plain_500(raw: Raw) -> None:
    await _namespace(raw)
    applied = {**_secret("s", a="!"), "metadata": {"name": "s", "namespace": "dec"}}
    # The field manager converts the merged object to the Go type; that error is
    # not a Status, so the apiserver answers 500 without a reason.
    gvk = "/v1, Kind=Secret"
    message = (
        f"failed to convert new object (dec/s; {gvk}) to proper version: unable to convert "
        f"unstructured object to {gvk}: error decoding from json: "
        "illegal base64 data at input byte 0"
    )
    for _ in range(2):  # creating, then over an existing Secret
        code, body = await raw.request(
            "PATCH", f"{SECRETS}/s?fieldManager=m", applied, content_type=APPLY
        )
        assert (code, body) == (500, _status(500, message, None))
        code, body = await raw.request("POST", SECRETS, _secret("s", a="YQ=="))
        assert code in (201, 409), body


async def test_kubectl_shows_the_decoding_error(kubectl: Kubectl, raw: Raw, tmp_path: Any) -> None:
    await _namespace(raw)
    manifest = tmp_path / "secret.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: dec\n"
        "data:\n  username: billy\n"
    )
    result = await kubectl("create", "-f", str(manifest), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f'Error from server (BadRequest): error when creating "{manifest}": ' + _bad_base64(4)
    )


# -- etcd's request size limit ----------------------------------------------------------


async def _widgets(raw: Raw) -> None:
    widgets = crd("example.com", "Widget", status_subresource=True)
    code, body = await raw.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widgets
    )
    assert code == 201, body
    await _namespace(raw)


def _widget(name: str, blob: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"blob": blob},
    }


# etcd's error passes through the apiserver unconverted: 500, no reason
# (kubernetes issues #74600 and #112152).
TOO_LARGE = _status(500, "etcdserver: request is too large", None)


async def test_objects_over_etcds_limit_are_refused_with_a_plain_500(
    raw: Raw, sim: KubeSim
) -> None:
    await _widgets(raw)
    big = "x" * (ETCD_LIMIT + 1000)  # within the 3 MiB request limit
    code, body = await raw.request("POST", f"{WIDGETS}?dryRun=All", _widget("w", big))
    assert code == 201, "a dry run never reaches etcd"
    rv_before = sim.api.store.rv
    code, body = await raw.request("POST", WIDGETS, _widget("w", big))
    assert (code, body) == (500, TOO_LARGE)
    assert sim.api.store.rv == rv_before, "a refused write uses no resourceVersion"
    code, body = await raw.request("GET", f"{WIDGETS}/w")
    assert code == 404

    code, small = await raw.request("POST", WIDGETS, _widget("w", "small"))
    assert code == 201, small
    for method, path, payload, ctype in [
        ("PUT", f"{WIDGETS}/w", {**small, "spec": {"blob": big}}, "application/json"),
        ("PATCH", f"{WIDGETS}/w", {"spec": {"blob": big}}, MERGE),
        ("PATCH", f"{WIDGETS}/w/status", {"status": {"blob": big}}, MERGE),
        ("PUT", f"{WIDGETS}/w/status", {**small, "status": {"blob": big}}, "application/json"),
        ("PATCH", f"{WIDGETS}/w?fieldManager=m&force=true", _widget("w", big), APPLY),
    ]:
        code, body = await raw.request(method, path, payload, content_type=ctype)
        assert (code, body) == (500, TOO_LARGE), (method, path)
    code, after = await raw.request("GET", f"{WIDGETS}/w")
    assert after == small

    # Just under the limit is stored, and answered with the stored encoding.
    code, fits = await raw.request("PUT", f"{WIDGETS}/w", {**small, "spec": {"blob": ""}})
    assert code == 200, fits
    room = ETCD_LIMIT - len(json.dumps(fits, separators=(",", ":")))
    code, fits = await raw.request("PUT", f"{WIDGETS}/w", {**fits, "spec": {"blob": "y" * room}})
    assert code == 200, fits
    code, got = await raw.request("GET", f"{WIDGETS}/w")
    assert got == fits and len(json.dumps(got, separators=(",", ":"))) <= ETCD_LIMIT

    # Over 3 MiB the apiserver refuses the request before decoding it.
    code, body = await raw.request("POST", WIDGETS, _widget("huge", "z" * (3 * 1024 * 1024)))
    assert code == 413 and body["message"] == "Request entity too large: limit is 3145728"


async def test_secrets_are_sized_as_stored_with_their_bytes_unencoded(raw: Raw) -> None:
    await _namespace(raw)
    # 1 MiB of data (the Secret maximum) is 1.33 MiB of base64; with a 200 KiB
    # annotation the JSON is over 1.5 MiB, but etcd holds the protobuf, with the
    # data as bytes: about 1.2 MiB, which fits.
    secret = _secret("big", blob="QUJD" * (1024 * 1024 // 3))
    secret["metadata"]["annotations"] = {"note": "n" * 200_000}
    code, body = await raw.request("POST", SECRETS, secret)
    assert code == 201, str(body)[:300]
    assert len(json.dumps(body, separators=(",", ":"))) > ETCD_LIMIT


async def test_configmap_total_size_error_names_the_root_as_the_apiserver_prints_it(
    raw: Raw,
) -> None:
    await _namespace(raw)
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "x" * (1024 * 1024), "b": "y"},
    }
    code, body = await raw.request("POST", "/api/v1/namespaces/dec/configmaps", cm)
    # ValidateConfigMap reports the total on field.NewPath(""), whose String() is "[]".
    cause = {
        "reason": "FieldValueTooLong",
        "message": "Too long: may not be more than 1048576 bytes",
        "field": "[]",
    }
    expected = _status(
        422,
        'ConfigMap "c" is invalid: []: Too long: may not be more than 1048576 bytes',
        "Invalid",
        name="c",
        kind="ConfigMap",
        causes=[cause],
    )
    assert (code, body) == (422, expected)
