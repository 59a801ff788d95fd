"""Pruning, defaulting and validation of custom objects (kubesim.crdschema)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim import crdschema
from kubesim.crdschema import CRDSchema, unsupported_rules, validate_crd_schema
from kubesim.errors import ApiError
from tests.fixtures import APISERVER_RECORDINGS, UPSTREAM_CRDS, upstream_crd_files
from tests.support.manifests import configmap

CRDS = upstream_crd_files()

WORK_GROUP = "work.open-cluster-management.io"


def _crd(name: str) -> dict[str, Any]:
    (path,) = UPSTREAM_CRDS.glob(f"{name}.*.yaml")
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def _raw_schema(name: str) -> dict[str, Any]:
    version = _crd(name)["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _schema(name: str) -> CRDSchema:
    return CRDSchema(_raw_schema(name))


def _causes(schema: CRDSchema, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Any:
    return [(c["field"], c["reason"], c["message"]) for c in schema.causes(obj, old)]


def _rules(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations", []):
            yield path, rule
        for key, value in node.items():
            yield from _rules(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _rules(value, f"{path}/{i}")


@pytest.fixture(autouse=True)
def _fresh_unsupported() -> Iterator[None]:
    crdschema.reset_unsupported_rules()
    yield
    crdschema.reset_unsupported_rules()


def manifestwork(**spec: Any) -> dict[str, Any]:
    """A valid ManifestWork carrying a ConfigMap and a Deployment as raw objects."""
    body: dict[str, Any] = {
        "workload": {
            "manifests": [
                configmap("cm", key="value"),
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
                    "spec": {
                        "replicas": 2,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
                        },
                    },
                },
            ]
        }
    }
    body.update(spec)
    return {
        "apiVersion": f"{WORK_GROUP}/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "work", "namespace": "cluster1", "labels": {"a": "b"}},
        "spec": body,
    }


def _process_mw(obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return _schema("manifestworks").process(
        obj, old, kind="ManifestWork", name="work", group=WORK_GROUP
    )


# ---------------------------------------------------------------- the OCM CRDs


@pytest.mark.parametrize("path", CRDS, ids=lambda p: p.name.split(".")[0])
def test_ocm_schemas_are_structural(path: Path) -> None:
    crd = yaml.safe_load(path.read_text())
    for i, version in enumerate(crd["spec"]["versions"]):
        where = f"spec.versions[{i}].schema.openAPIV3Schema"
        assert validate_crd_schema(version["schema"]["openAPIV3Schema"], where) == []


def test_manifest_nodes_are_embedded_and_preserving() -> None:
    manifests = _raw_schema("manifestworks")["properties"]["spec"]["properties"]["workload"][
        "properties"
    ]["manifests"]["items"]
    assert manifests["x-kubernetes-embedded-resource"] is True
    assert manifests["x-kubernetes-preserve-unknown-fields"] is True


def test_valid_manifestwork_survives_unchanged() -> None:
    obj = manifestwork(deleteOption={"propagationPolicy": "Orphan"})
    before = copy.deepcopy(obj)
    assert _process_mw(obj) == before
    assert obj == before  # the input is never mutated


def test_unknown_fields_are_pruned_recursively() -> None:
    obj = manifestwork(
        bogus=1,
        deleteOption={"propagationPolicy": "Orphan", "extra": "x"},
        manifestConfigs=[
            {
                "resourceIdentifier": {"resource": "configmaps", "name": "cm", "zzz": 1},
                "feedbackScrapeType": "Watch",
                "unknown": {"deep": True},
            }
        ],
    )
    obj["topLevel"] = "dropped"
    obj["metadata"]["notObjectMeta"] = "dropped"
    obj["status"] = {"conditions": [], "whatever": 1}
    manifest = obj["spec"]["workload"]["manifests"][0]
    manifest["metadata"]["alsoUnknown"] = 1
    manifest["arbitrary"] = {"kept": ["as", "is"]}
    obj["spec"]["workload"]["unknown"] = 1

    pruned = _schema("manifestworks").prune(obj)

    assert "topLevel" not in pruned
    assert pruned["metadata"] == {"name": "work", "namespace": "cluster1", "labels": {"a": "b"}}
    assert "bogus" not in pruned["spec"]
    assert pruned["spec"]["deleteOption"] == {"propagationPolicy": "Orphan"}
    config = pruned["spec"]["manifestConfigs"][0]
    assert config == {
        "resourceIdentifier": {"resource": "configmaps", "name": "cm"},
        "feedbackScrapeType": "Watch",
    }
    assert pruned["status"] == {"conditions": []}
    assert list(pruned["spec"]["workload"]) == ["manifests"]
    assert pruned["spec"]["workload"]["manifests"][1] == obj["spec"]["workload"]["manifests"][1]
    # Raw manifests keep everything but unknown ObjectMeta fields.
    kept = pruned["spec"]["workload"]["manifests"][0]
    assert kept["arbitrary"] == {"kept": ["as", "is"]}
    assert kept["metadata"] == {"name": "cm", "namespace": "default"}
    assert obj["metadata"]["notObjectMeta"] == "dropped"  # input untouched


def test_embedded_metadata_round_trips_through_object_meta() -> None:
    obj = manifestwork()
    manifest = obj["spec"]["workload"]["manifests"][0]
    manifest["metadata"].update(creationTimestamp=None, labels={}, generation=0, uid="")
    pruned = _schema("manifestworks").prune(obj)
    assert pruned["spec"]["workload"]["manifests"][0]["metadata"] == {
        "name": "cm",
        "namespace": "default",
    }


def test_manifestwork_defaults_apply_only_under_present_parents() -> None:
    obj = manifestwork(
        deleteOption={},
        manifestConfigs=[
            {
                "resourceIdentifier": {"resource": "deployments", "name": "web"},
                "updateStrategy": {"serverSideApply": {"ignoreFields": [{}]}},
            },
            {"resourceIdentifier": {"resource": "configmaps", "name": "cm"}},
        ],
    )
    out = _process_mw(obj)
    assert out["spec"]["deleteOption"] == {"propagationPolicy": "Foreground"}
    first, second = out["spec"]["manifestConfigs"]
    assert first["feedbackScrapeType"] == "Poll"
    assert first["updateStrategy"]["type"] == "Update"
    ssa = first["updateStrategy"]["serverSideApply"]
    assert ssa["fieldManager"] == "work-agent"
    assert ssa["ignoreFields"] == [{"condition": "OnSpokePresent"}]
    # No parent, no default: updateStrategy is not invented.
    assert second == {
        "resourceIdentifier": {"resource": "configmaps", "name": "cm"},
        "feedbackScrapeType": "Poll",
    }
    assert "deleteOption" not in _process_mw(manifestwork())["spec"]


def test_managedcluster_and_placement_defaults() -> None:
    cluster = _schema("managedclusters").default(
        {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
         "metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": True}}
    )  # fmt: skip
    assert cluster["spec"]["leaseDurationSeconds"] == 60

    placement = _schema("placements")
    base: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "p", "namespace": "ns"},
    }
    out = placement.default({**base, "spec": {"decisionStrategy": {"groupStrategy": {}}}})
    assert out["spec"]["decisionStrategy"]["groupStrategy"]["clustersPerDecisionGroup"] == "100%"

    # int-or-string: an integer or a string is fine, a boolean is not.
    ok = {**base, "spec": {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 5}}}}
    assert placement.causes(placement.default(ok)) == []
    bad = copy.deepcopy(ok)
    bad["spec"]["decisionStrategy"]["groupStrategy"]["clustersPerDecisionGroup"] = True
    fld = "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"
    assert _causes(placement, bad) == [
        ("<nil>", "FieldValueInvalid",
         f'Invalid value: "": "{fld}" must validate at least one schema (anyOf)'),
        (fld, "FieldValueTypeInvalid",
         f'Invalid value: "boolean": {fld} in body must be of type integer: "boolean"'),
    ]  # fmt: skip


def test_invalid_enum_and_missing_required_are_all_reported() -> None:
    obj = manifestwork(
        deleteOption={"propagationPolicy": "Sometimes"},
        manifestConfigs=[{"resourceIdentifier": {"name": "x"}}, {}],
    )
    with pytest.raises(ApiError) as caught:
        _process_mw(obj)
    err = caught.value
    assert err.code == 422
    assert err.reason == "Invalid"
    assert err.details is not None
    assert [(c["field"], c["reason"], c["message"]) for c in err.details["causes"]] == [
        ("spec.deleteOption.propagationPolicy", "FieldValueNotSupported",
         'Unsupported value: "Sometimes": supported values: '
         '"Foreground", "Orphan", "SelectivelyOrphan"'),
        ("spec.manifestConfigs[0].resourceIdentifier.resource", "FieldValueRequired",
         "Required value"),
        ("spec.manifestConfigs[1].resourceIdentifier", "FieldValueRequired", "Required value"),
        # The CRD has CEL rules, and they are not run on an object this broken.
        ("<nil>", "FieldValueInvalid",
         'Invalid value: "null": some validation rules were not checked because the object '
         "was invalid; correct the existing errors to complete validation"),
    ]  # fmt: skip
    assert err.message.startswith(
        'ManifestWork.work.open-cluster-management.io "work" is invalid: '
        '[spec.deleteOption.propagationPolicy: Unsupported value: "Sometimes"'
    )
    assert err.details["group"] == WORK_GROUP


# ----------------------------------------------------------------- CEL in OCM


def test_ocm_cel_rules_are_evaluated_or_recorded() -> None:
    found = []
    for path in CRDS:
        for version in yaml.safe_load(path.read_text())["spec"]["versions"]:
            raw = version["schema"]["openAPIV3Schema"]
            CRDSchema(raw)  # compiles every rule; must not raise
            found += [rule["rule"] for _, rule in _rules(raw)]
    assert found  # the OCM CRDs do carry x-kubernetes-validations
    recorded = {u.rule for u in unsupported_rules()}
    assert recorded <= set(found)


def test_manifestwork_condition_rule() -> None:
    def with_rule(rule: dict[str, Any]) -> dict[str, Any]:
        return manifestwork(
            manifestConfigs=[
                {"resourceIdentifier": {"resource": "jobs", "name": "j"}, "conditionRules": [rule]}
            ]
        )

    ok = with_rule({"type": "CEL", "condition": "Complete", "celExpressions": ["true"]})
    assert _process_mw(ok)["spec"]["manifestConfigs"][0]["conditionRules"][0]["type"] == "CEL"
    assert _process_mw(with_rule({"type": "WellKnownConditions", "condition": ""}))

    with pytest.raises(ApiError) as caught:
        _process_mw(with_rule({"type": "CEL", "condition": ""}))
    assert caught.value.details is not None
    assert caught.value.details["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": Condition is required for CEL rules',
            "field": "spec.manifestConfigs[0].conditionRules[0]",
        }
    ]
    assert unsupported_rules() == []


def test_manifestworkreplicaset_condition_rule() -> None:
    schema = _schema("manifestworkreplicasets")
    obj = {
        "apiVersion": f"{WORK_GROUP}/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "rs", "namespace": "ns"},
        "spec": {
            "placementRefs": [{"name": "p"}],
            "manifestWorkTemplate": {
                "manifestConfigs": [
                    {
                        "resourceIdentifier": {"resource": "jobs", "name": "j"},
                        "conditionRules": [{"type": "CEL", "condition": ""}],
                    }
                ]
            },
        },
    }
    out = schema.default(schema.prune(obj))
    assert out["spec"]["placementRefs"][0]["rolloutStrategy"] == {
        "type": "All",
        "all": {"progressDeadline": "None", "maxFailures": 0, "minSuccessTime": "0"},
    }
    assert _causes(schema, out) == [
        ("spec.manifestWorkTemplate.manifestConfigs[0].conditionRules[0]", "FieldValueInvalid",
         'Invalid value: "object": Condition is required for CEL rules'),
    ]  # fmt: skip


# ------------------------------------------------------------ generic schemas


def _obj(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x.example.com/v1", "kind": "X", "metadata": {"name": "x"}, "spec": spec}


def _spec_schema(spec: dict[str, Any], **root: Any) -> CRDSchema:
    return CRDSchema({"type": "object", "properties": {"spec": spec}, **root})


def _props(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def test_types_nullable_and_integral_floats() -> None:
    schema = _spec_schema(
        _props(
            i={"type": "integer"},
            n={"type": "number"},
            s={"type": "string"},
            b={"type": "boolean"},
            o={"type": "object"},
            a={"type": "array", "items": {"type": "string"}},
            maybe={"type": "string", "nullable": True},
        )
    )
    good = {"i": 1.0, "n": 2, "s": "x", "b": False, "o": {}, "a": ["y"], "maybe": None}
    assert schema.causes(_obj(good)) == []
    bad = {"i": 1.5, "n": "2", "s": 5, "b": "true", "o": [], "a": [1]}
    assert _causes(schema, _obj(bad)) == [
        ("spec.i", "FieldValueTypeInvalid",
         'Invalid value: "number": spec.i in body must be of type integer: "number"'),
        ("spec.n", "FieldValueTypeInvalid",
         'Invalid value: "string": spec.n in body must be of type number: "string"'),
        ("spec.s", "FieldValueTypeInvalid",
         'Invalid value: "integer": spec.s in body must be of type string: "integer"'),
        ("spec.b", "FieldValueTypeInvalid",
         'Invalid value: "string": spec.b in body must be of type boolean: "string"'),
        ("spec.o", "FieldValueTypeInvalid",
         'Invalid value: "array": spec.o in body must be of type object: "array"'),
        ("spec.a[0]", "FieldValueTypeInvalid",
         'Invalid value: "integer": spec.a[0] in body must be of type string: "integer"'),
    ]  # fmt: skip


def test_non_nullable_nulls_are_pruned_before_defaulting() -> None:
    schema = _spec_schema(
        {**_props(a={"type": "string"}, b={"type": "string", "default": "d"}), "required": ["a"]}
    )
    out = schema.default(schema.prune(_obj({"a": None, "b": None})))
    assert out["spec"] == {"b": "d"}
    assert _causes(schema, out) == [("spec.a", "FieldValueRequired", "Required value")]
    # A null array item is not pruned: it fails the type check.
    items = _spec_schema(_props(l={"type": "array", "items": {"type": "string"}}))
    assert _causes(items, items.prune(_obj({"l": [None]}))) == [
        ("spec.l[0]", "FieldValueTypeInvalid",
         'Invalid value: "null": spec.l[0] in body must be of type string: "null"'),
    ]  # fmt: skip


def test_defaults_in_items_maps_and_defaults_are_pruned() -> None:
    item = _props(name={"type": "string"}, port={"type": "integer", "default": 80})
    schema = _spec_schema(
        _props(
            list={"type": "array", "items": item},
            map={"type": "object", "additionalProperties": item},
            obj={**_props(x={"type": "string"}), "default": {"x": "y", "junk": 1}},
            nested={**_props(inner={**_props(z={"type": "integer", "default": 1})})},
        )
    )
    out = schema.default(_obj({"list": [{"name": "a"}, {"port": 1}], "map": {"k": {}}}))
    assert out["spec"] == {
        "list": [{"name": "a", "port": 80}, {"port": 1}],
        "map": {"k": {"port": 80}},
        "obj": {"x": "y"},  # the default itself was pruned
    }
    assert "inner" not in schema.default(_obj({"nested": {}}))["spec"]["nested"]
    assert schema.default(_obj({"nested": {"inner": {}}}))["spec"]["nested"]["inner"] == {"z": 1}


def test_additional_properties_and_preserve_unknown_fields() -> None:
    schema = _spec_schema(
        _props(
            labels={"type": "object", "additionalProperties": {"type": "string"}},
            free={"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                  "properties": {"known": _props(a={"type": "string"})}},
            port={"x-kubernetes-int-or-string": True,
                  "anyOf": [{"type": "integer"}, {"type": "string"}]},
        )
    )  # fmt: skip
    obj = _obj(
        {
            "labels": {"a": "b"},
            "free": {"anything": {"deep": [1]}, "known": {"a": "x", "junk": 1}},
            "port": "http",
        }
    )
    pruned = schema.prune(obj)
    assert pruned["spec"]["labels"] == {"a": "b"}
    assert pruned["spec"]["free"] == {"anything": {"deep": [1]}, "known": {"a": "x"}}
    assert pruned["spec"]["port"] == "http"
    bad = _obj({"labels": {"a": 1}})
    assert _causes(schema, bad) == [
        ("spec.labels.a", "FieldValueTypeInvalid",
         'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'),
    ]  # fmt: skip


def test_root_preserving_schema_keeps_everything_from_crd_lifecycle() -> None:
    recording = json.loads((APISERVER_RECORDINGS / "crd-lifecycle.json").read_text())
    exchanges = recording["exchanges"]
    crd = exchanges[0]["request"]["body"]
    schema = CRDSchema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    create = next(
        e
        for e in exchanges
        if e["request"]["method"] == "POST" and "widgets" in e["request"]["path"]
    )
    body = create["request"]["body"]
    out = schema.process(body, kind="Widget", name="w", group="capture.example.com")
    # Everything is kept, status included: the recorded server dropped status
    # because of the status subresource, which is the caller's business.
    assert out == body
    stored = create["response"]["body"]
    assert out["spec"] == stored["spec"]
    assert "status" not in stored


def test_string_number_array_object_constraints() -> None:
    schema = _spec_schema(
        _props(
            name={"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
            count={"type": "integer", "minimum": 0, "maximum": 10},
            ratio={"type": "number", "exclusiveMinimum": True, "minimum": 0.5,
                   "exclusiveMaximum": True, "maximum": 1000000},
            step={"type": "integer", "multipleOf": 5},
            tags={"type": "array", "items": {"type": "string"}, "maxItems": 2},
            hosts={"type": "array", "items": {"type": "string"}, "minItems": 1},
            meta={"type": "object", "additionalProperties": {"type": "string"},
                  "maxProperties": 1},
            extra={"type": "object", "additionalProperties": {"type": "string"},
                   "minProperties": 2},
        )
    )  # fmt: skip
    good = {"name": "abc", "count": 10, "ratio": 0.75, "step": 15, "tags": ["a"], "hosts": ["h"]}
    assert schema.causes(_obj(good)) == []
    bad = {
        "name": "ABCDEFG",
        "count": -1,
        "ratio": 1000000.0,
        "step": 7,
        "tags": ["a", "b", "c"],
        "hosts": [],
        "meta": {"a": "1", "b": "2"},
        "extra": {"a": "1"},
    }
    assert _causes(schema, _obj(bad)) == [
        ("spec.name", "FieldValueTooLong", "Too long: may not be longer than 5"),
        ("spec.name", "FieldValueInvalid",
         "Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+$'"),
        ("spec.count", "FieldValueInvalid",
         "Invalid value: -1: spec.count in body should be greater than or equal to 0"),
        ("spec.ratio", "FieldValueInvalid",
         "Invalid value: 1e+06: spec.ratio in body should be less than 1e+06"),
        ("spec.step", "FieldValueInvalid",
         "Invalid value: 7: spec.step in body should be a multiple of 5"),
        ("spec.tags", "FieldValueTooMany", "Too many: 3: must have at most 2 items"),
        ("spec.hosts", "FieldValueInvalid",
         "Invalid value: 0: spec.hosts in body should have at least 1 items"),
        ("spec.meta", "FieldValueTooMany", "Too many: 2: must have at most 1 items"),
        ("spec.extra", "FieldValueInvalid",
         "Invalid value: 1: spec.extra in body should have at least 2 properties"),
    ]  # fmt: skip
    short = _causes(schema, _obj({"name": "a"}))
    assert short == [
        ("spec.name", "FieldValueInvalid",
         'Invalid value: "a": spec.name in body should be at least 2 chars long'),
    ]  # fmt: skip


def test_formats() -> None:
    schema = _spec_schema(
        _props(
            when={"type": "string", "format": "date-time"},
            data={"type": "string", "format": "byte"},
            small={"type": "integer", "format": "int32"},
            id={"type": "string", "format": "uuid"},
        )
    )
    good = {
        "when": "2026-11-22T06:23:58Z",
        "data": "aGVsbG8=",
        "small": 2**40,  # int32 is not range-checked by the apiserver either
        "id": "853dae8f-887d-428b-bc82-71b4c0784657",
    }
    assert schema.causes(_obj(good)) == []
    assert schema.causes(_obj({"when": "2026-11-22T06:23:58.123+02:00"})) == []
    bad = {"when": "yesterday", "data": "not base64!", "id": "nope"}
    assert _causes(schema, _obj(bad)) == [
        ("spec.when", "FieldValueTypeInvalid",
         'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"'),
        ("spec.data", "FieldValueTypeInvalid",
         'Invalid value: "not base64!": spec.data in body must be of type byte: "not base64!"'),
        ("spec.id", "FieldValueTypeInvalid",
         'Invalid value: "nope": spec.id in body must be of type uuid: "nope"'),
    ]  # fmt: skip


def test_list_type_set_and_map_duplicates() -> None:
    schema = _spec_schema(
        _props(
            set={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            ports={
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "protocol"],
                "items": _props(name={"type": "string"}, protocol={"type": "string"},
                                port={"type": "integer"}),
            },
        )
    )  # fmt: skip
    obj = _obj(
        {
            "set": ["a", "b", "a", "a"],
            "ports": [
                {"name": "http", "protocol": "TCP", "port": 80},
                {"name": "http", "protocol": "UDP", "port": 80},
                {"name": "http", "protocol": "TCP", "port": 8080},
            ],
        }
    )
    assert _causes(schema, obj) == [
        ("spec.set[2]", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.ports[2]", "FieldValueDuplicate",
         'Duplicate value: map[string]interface {}{"name":"http", "protocol":"TCP"}'),
    ]  # fmt: skip


def test_junctors_are_validation_only() -> None:
    schema = _spec_schema(
        _props(
            one={"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
            every={"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]},
            never={"type": "string", "not": {"enum": ["forbidden"]}},
        )
    )
    assert schema.causes(_obj({"one": 20, "every": "abc", "never": "fine"})) == []
    assert _causes(schema, _obj({"one": 5, "every": "a", "never": "forbidden"})) == [
        ("<nil>", "FieldValueInvalid",
         'Invalid value: "": "spec.one" must validate one and only one schema (oneOf). '
         "Found 2 valid alternatives"),
        ("spec.every", "FieldValueInvalid",
         'Invalid value: "a": spec.every in body should be at least 2 chars long'),
        ("<nil>", "FieldValueInvalid",
         'Invalid value: "": "spec.every" must validate all the schemas (allOf)'),
        ("<nil>", "FieldValueInvalid",
         'Invalid value: "": "spec.never" must not validate the schema (not)'),
    ]  # fmt: skip


def test_embedded_resources_need_api_version_and_kind() -> None:
    obj = manifestwork()
    manifest = obj["spec"]["workload"]["manifests"][0]
    del manifest["kind"]
    manifest["apiVersion"] = "a/b/c"
    assert _causes(_schema("manifestworks"), obj) == [
        ("spec.workload.manifests[0].kind", "FieldValueRequired",
         "Required value: must not be empty"),
        ("spec.workload.manifests[0].apiVersion", "FieldValueInvalid",
         'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c'),
        ("<nil>", "FieldValueInvalid",
         'Invalid value: "null": some validation rules were not checked because the object '
         "was invalid; correct the existing errors to complete validation"),
    ]  # fmt: skip


# ------------------------------------------------------------------ CEL rules


def _ruled(rule: dict[str, Any], **node: Any) -> CRDSchema:
    return _spec_schema({**_props(**node), "x-kubernetes-validations": [rule]})


def test_rule_messages_reasons_and_field_paths() -> None:
    rule = {"rule": "self.min <= self.max"}
    schema = _ruled(rule, min={"type": "integer"}, max={"type": "integer"})
    assert schema.causes(_obj({"min": 1, "max": 2})) == []
    assert _causes(schema, _obj({"min": 3, "max": 2})) == [
        ("spec", "FieldValueInvalid", 'Invalid value: "object": failed rule: self.min <= self.max'),
    ]  # fmt: skip

    detailed = _ruled(
        {
            "rule": "self.min <= self.max",
            "messageExpression": "'min ' + string(self.min) + ' exceeds max'",
            "reason": "FieldValueForbidden",
            "fieldPath": ".min",
        },
        min={"type": "integer"},
        max={"type": "integer"},
    )
    assert _causes(detailed, _obj({"min": 3, "max": 2})) == [
        ("spec.min", "FieldValueForbidden", "Forbidden: min 3 exceeds max"),
    ]


def test_root_rules_see_only_name_of_metadata() -> None:
    schema = CRDSchema(
        {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.metadata.name.startsWith('ok')", "message": "bad name"},
                {"rule": "!has(self.metadata.namespace)"},
            ],
        }
    )
    good = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "ok-1", "namespace": "ns"}}
    assert schema.causes(good) == []
    bad = {**good, "metadata": {"name": "nope"}}
    assert _causes(schema, bad) == [
        ("<nil>", "FieldValueInvalid", 'Invalid value: "object": bad name')
    ]


def test_transition_rules_need_an_old_value() -> None:
    schema = _spec_schema(
        _props(
            fixed={"type": "string", "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "is immutable"}]},
            items={
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {**_props(name={"type": "string"}, size={"type": "integer"}),
                          "x-kubernetes-validations": [
                              {"rule": "self.size >= oldSelf.size", "message": "may not shrink"}]},
            },
        )
    )  # fmt: skip
    old = _obj({"fixed": "a", "items": [{"name": "x", "size": 2}]})
    assert schema.causes(_obj({"fixed": "b", "items": [{"name": "x", "size": 1}]})) == []
    assert schema.causes(old, old) == []
    new = _obj({"fixed": "b", "items": [{"name": "y", "size": 1}, {"name": "x", "size": 1}]})
    assert _causes(schema, new, old) == [
        ("spec.fixed", "FieldValueInvalid", 'Invalid value: "string": is immutable'),
        ("spec.items[1]", "FieldValueInvalid", 'Invalid value: "object": may not shrink'),
    ]


def test_evaluation_errors_fail_the_rule() -> None:
    schema = _ruled({"rule": "self.missing == 1"}, present={"type": "integer"})
    assert _causes(schema, _obj({"present": 1})) == [
        ("spec", "FieldValueInvalid",
         'Invalid value: "object": no such key: missing evaluating rule: self.missing == 1'),
    ]  # fmt: skip


def test_rules_celpy_cannot_handle_pass_and_are_recorded() -> None:
    unknown_function = {"rule": "isURL(self.url)"}
    unparseable = {"rule": "self.?url.orValue('') != 'x'"}
    schema = _spec_schema(
        {**_props(url={"type": "string"}),
         "x-kubernetes-validations": [unknown_function, unparseable]}
    )  # fmt: skip
    assert schema.causes(_obj({"url": "not a url"})) == []
    recorded = {u.rule: u.detail for u in unsupported_rules()}
    assert set(recorded) == {unknown_function["rule"], unparseable["rule"]}
    assert "isURL" in recorded[unknown_function["rule"]]
    # celpy's parser is one per process: the agent's CEL engine installs its own
    # grammar (which knows ``.?``) when it is made first, and then the rule
    # parses and fails on the function celpy lacks.
    detail = recorded[unparseable["rule"]]
    assert "parse" in detail or "undeclared reference to 'orValue'" in detail, detail


def test_kubernetes_string_functions_are_provided() -> None:
    schema = _ruled(
        {"rule": "self.name.lowerAscii().split('-').join('.') == 'a.b' && self.name.trim() != ''"},
        name={"type": "string"},
    )
    assert schema.causes(_obj({"name": "A-B"})) == []
    assert unsupported_rules() == []


def test_overlong_rules_are_not_evaluated() -> None:
    rule = "true && " * 600 + "false"
    schema = _ruled({"rule": rule}, a={"type": "string"})
    assert schema.causes(_obj({})) == []
    assert [u.rule for u in unsupported_rules()] == [rule]


# ------------------------------------------------------ validate_crd_schema


def test_validate_crd_schema_rejects_non_structural_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "properties": {
                    "list": {"type": "array"},
                    "both": {"type": "object", "properties": {}, "additionalProperties": {}},
                    "ok": {"x-kubernetes-preserve-unknown-fields": True},
                    "port": {"x-kubernetes-int-or-string": True},
                    "pairs": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "items": {"type": "object"},
                    },
                },
            },
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        },
    }
    base = "spec.versions[0].schema.openAPIV3Schema"
    causes = [(c["field"], c["message"]) for c in validate_crd_schema(schema)]
    assert causes == [
        (f"{base}.properties[metadata]",
         "Forbidden: must not specify anything other than name and generateName, "
         "but metadata is implicitly specified"),
        (f"{base}.properties[spec].type",
         "Required value: must not be empty for specified object fields"),
        (f"{base}.properties[spec].properties[list].items", "Required value: must be specified"),
        (f"{base}.properties[spec].properties[both].additionalProperties",
         "Forbidden: additionalProperties and properties are mutual exclusive"),
        (f"{base}.properties[spec].properties[both].additionalProperties.type",
         "Required value: must not be empty for specified object fields"),
        (f"{base}.properties[spec].properties[pairs].x-kubernetes-list-map-keys",
         "Required value: must not be empty if x-kubernetes-list-type is map"),
    ]  # fmt: skip
    assert [c["message"] for c in validate_crd_schema({"type": "string"}, "s")] == [
        'Invalid value: "string": must be object at the root'
    ]


def test_go_float_formatting() -> None:
    go = crdschema._go_float
    assert [go(x) for x in (0.0, 1.0, 1.5, 100000.0, 1e6, 1234567.0, 0.0001, 0.00001)] == [
        "0", "1", "1.5", "100000", "1e+06", "1.234567e+06", "0.0001", "1e-05",
    ]  # fmt: skip
