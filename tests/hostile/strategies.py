"""Hypothesis strategies for hostile and malformed ManifestWork specs.

Everything a hub user can write into a ManifestWork, skewed towards what
breaks parsers and appliers: manifests without kind, apiVersion or name, with
wrongly typed fields, huge or non-ASCII names, unknown kinds, cluster-scoped
objects with a namespace and namespaced ones without; manifestConfigs with
odd resource identifiers, unparseable or pathological JSONPaths and CEL, and
every update strategy with odd options; random delete options and executors.

Some specs are rejected by the CRD schema on the hub (wrong types, unknown
enum values); the tests accept that as long as the rejection is a clean 4xx
with a message. The rest must reach the agent and end with clear conditions.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: Names: valid ones most of the time, then everything a name should not be.
NAMES = st.one_of(
    st.from_regex(r"\A[a-z][a-z0-9-]{0,10}[a-z0-9]\Z"),
    st.sampled_from(
        [
            "",
            "UPPER",
            "under_score",
            "dots.are.ok",
            "-leading-dash",
            "x" * 254,
            "y" * 64,
            "sp ace",
            "ñame-☃",
            "a/b",
            "..",
            "*",
            "null",
        ]
    ),
    st.text(max_size=12),
)
#: Values of the wrong type where a string is expected.
NOT_STRINGS = st.one_of(
    st.none(),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
MAYBE_NAMES = st.one_of(NAMES, NOT_STRINGS)

#: Nested junk for spec/data/anything.
JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=16),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=16,
)

_API_VERSION_STRINGS = st.sampled_from(
    [
        "v1",
        "apps/v1",
        "rbac.authorization.k8s.io/v1",
        "apiextensions.k8s.io/v1",
        "example.com/v1",
        "v2",
        "a/b/c",
        "/",
        "v1/",
        "/v1",
    ]
)
API_VERSIONS = st.one_of(_API_VERSION_STRINGS, st.just(""), NOT_STRINGS)
_KIND_STRINGS = st.sampled_from(
    [
        "ConfigMap",
        "Secret",
        "Namespace",
        "ClusterRole",
        "Deployment",
        "Service",
        "ServiceAccount",
        "CustomResourceDefinition",
        "Widget",
        "configmap",
    ]
)
KINDS = st.one_of(_KIND_STRINGS, st.just(""), NOT_STRINGS)


@st.composite
def well_formed_configmap(draw: st.DrawFn) -> dict[str, Any]:
    """A ConfigMap that applies cleanly (in ``default``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": draw(st.from_regex(r"\Acm-[a-z0-9]{1,12}\Z")), "namespace": "default"},
        "data": draw(st.dictionaries(st.from_regex(r"\A[a-z]{1,8}\Z"), st.text(max_size=20))),
    }


@st.composite
def scope_confusion(draw: st.DrawFn) -> dict[str, Any]:
    """A cluster-scoped object with a namespace, or a namespaced one without."""
    name = draw(st.from_regex(r"\A[a-z]{1,10}\Z"))
    return draw(
        st.sampled_from(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": f"ns-{name}", "namespace": "default"},
                },
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": f"cr-{name}", "namespace": "kube-system"},
                    "rules": [],
                },
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"nons-{name}"}},
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"d-{name}", "namespace": "default"},
                    "spec": draw(JUNK),
                },
            ]
        )
    )


def _maybe(
    loose: bool, good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """``good`` values, or also ``bad`` ones (which the CRD schema refuses) when ``loose``."""
    return st.one_of(good, bad) if loose else good


@st.composite
def garbage_manifest(draw: st.DrawFn, *, loose: bool = True) -> Any:
    """A manifest with random parts missing or wrongly typed.

    Not ``loose``: apiVersion and kind are non-empty strings and metadata an
    object, as the CRD requires of an embedded resource; the rest is junk.
    """
    manifest: dict[str, Any] = {}
    if loose:
        if draw(st.booleans()):
            manifest["apiVersion"] = draw(API_VERSIONS)
        if draw(st.booleans()):
            manifest["kind"] = draw(KINDS)
    else:
        manifest["apiVersion"] = draw(_API_VERSION_STRINGS)
        manifest["kind"] = draw(_KIND_STRINGS)
    metadata = draw(
        _maybe(
            loose,
            st.fixed_dictionaries(
                {},
                optional={
                    "name": _maybe(loose, NAMES, NOT_STRINGS),
                    "namespace": st.one_of(st.just("default"), _maybe(loose, NAMES, NOT_STRINGS)),
                    "generateName": st.just("gen-"),
                    "uid": st.text(max_size=8),
                    "labels": st.dictionaries(NAMES, NAMES, max_size=2),
                    "finalizers": st.lists(st.text(max_size=10), max_size=2),
                },
            ),
            NOT_STRINGS,
        )
    )
    if not loose or draw(st.booleans()):
        manifest["metadata"] = metadata
    for key in draw(st.sets(st.sampled_from(["spec", "data", "rules", "status", "junk"]))):
        manifest[key] = draw(JUNK)
    return manifest


def manifests(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """One manifest of any kind of trouble (and some good ones among them)."""
    return st.one_of(
        well_formed_configmap(),
        scope_confusion(),
        garbage_manifest(loose=loose),
        *([JUNK] if loose else []),
    )


JSONPATHS = st.one_of(
    st.sampled_from(
        [
            ".status.readyReplicas",
            ".data",
            ".metadata.name",
            "..",
            "..name",
            ".data[*]",
            "{.a}",
            ".a[?(@.b == 1)]",
            ".a[?(@.b <",
            "[0]",
            ".data[0:10:-1]",
            "{range .items[*]}{.x}{end}",
            "x" * 2000,
            "." + "[" * 40,
            "$",
            "",
        ]
    ),
    st.text(alphabet=".[]*?@()'\"=<>!a1 {}", max_size=24),
)
CEL = st.one_of(
    st.sampled_from(
        [
            "object.kind == 'ConfigMap'",
            "true",
            "1",
            "object.",
            "1/0",
            "object.nope.nope",
            "object.metadata.name > 1",
            "'a' * 1000000",
            "[1, 2].map(x, [x, x]).size() > 0",
            "size(object.data) >= 0",
            "has(object.status.x)",
            "",
        ]
    ),
    st.text(max_size=24),
)


def resource_identifiers(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """Resource identifiers with wildcards and junk (and, ``loose``, missing fields)."""
    shaped = st.fixed_dictionaries(
        {
            "group": st.sampled_from(["", "apps", "*", "example.com"]),
            "resource": st.sampled_from(["configmaps", "deployments", "*", "", "ConfigMap"]),
            "name": st.one_of(st.sampled_from(["*", "cm-*", "**", "[", "(.*)", ""]), NAMES),
            "namespace": st.sampled_from(["", "*", "default", "def*", "\\", "?"]),
        }
    )
    broken = st.fixed_dictionaries({}, optional={"resource": MAYBE_NAMES, "name": MAYBE_NAMES})
    return _maybe(loose, shaped, broken)


def feedback_rules(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """Feedback rules: either type (``loose``: bad ones too), odd JSONPaths."""
    types = ["WellKnownStatus", "JSONPaths"] + (["Nope", ""] if loose else [])
    return st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(types)},
            optional={
                "jsonPaths": st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(["a", "b", "c", "", "ñ"]), "path": JSONPATHS},
                        optional={"version": st.sampled_from(["v1", "v2", ""])},
                    ),
                    max_size=3,
                    unique_by=None if loose else (lambda p: p["name"]),
                )
            },
        ),
        max_size=2,
    )


def condition_rules(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """Condition rules: CEL (good, broken, expensive), WellKnownConditions, odd types."""
    types = ["CEL", "WellKnownConditions"] + (["Regex"] if loose else [])
    return st.lists(
        st.fixed_dictionaries(
            {
                "condition": st.sampled_from(["Complete", "Available", "Custom", "", "x" * 400]),
                "type": st.sampled_from(types),
            },
            optional={
                "celExpressions": st.lists(CEL, max_size=3),
                "message": st.text(max_size=20),
                "messageExpression": CEL,
            },
        ),
        max_size=2,
        unique_by=None if loose else (lambda r: r["condition"]),
    )


def update_strategies(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """Every strategy type (``loose``: junk ones too), with odd server-side apply options."""
    conditions = ["OnSpokePresent", "OnSpokeChange"] + (["Sometimes"] if loose else [])
    ignore_field: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
        {"condition": st.sampled_from(conditions)},
        optional={
            "jsonPaths": st.lists(JSONPATHS, max_size=2),
            "jsonPointers": st.lists(
                st.sampled_from(["/data/a", "", "a", "/~2", "/-"]), max_size=2
            ),
            "jqPathExpressions": st.lists(
                st.sampled_from([".data.a", ".[", "..", ".data | keys", "path(..)"]), max_size=2
            ),
        },
    )
    types = ["Update", "CreateOnly", "ServerSideApply", "ReadOnly"] + (
        ["Bogus", ""] if loose else []
    )
    managers = ["work-agent", "work-agent-x", "work-agent" + "z" * 200] + (
        ["other", ""] if loose else []
    )
    return st.fixed_dictionaries(
        {"type": st.sampled_from(types)},
        optional={
            "serverSideApply": st.fixed_dictionaries(
                {},
                optional={
                    "force": _maybe(loose, st.booleans(), st.just("yes")),
                    "fieldManager": st.sampled_from(managers),
                    "ignoreFields": st.lists(
                        ignore_field,
                        max_size=2,
                        unique_by=None if loose else (lambda f: str(f["condition"])),
                    ),
                },
            )
        },
    )


def manifest_configs(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """manifestConfigs entries combining all of the above."""
    scrape = ["Poll", "Watch"] + (["Push"] if loose else [])
    return st.lists(
        st.fixed_dictionaries(
            {"resourceIdentifier": resource_identifiers(loose=loose)},
            optional={
                "feedbackRules": feedback_rules(loose=loose),
                "conditionRules": condition_rules(loose=loose),
                "updateStrategy": update_strategies(loose=loose),
                "feedbackScrapeType": st.sampled_from(scrape),
            },
        ),
        max_size=3,
    )


def delete_options(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """Delete options with odd policies, orphaning rules and TTLs."""
    policies = ["Foreground", "Orphan", "SelectivelyOrphan"] + (["Background", ""] if loose else [])
    ttls = [-1, 0, 2**62] + ([2**64, "10"] if loose else [])
    return st.fixed_dictionaries(
        {},
        optional={
            "propagationPolicy": st.sampled_from(policies),
            "selectivelyOrphans": st.fixed_dictionaries(
                {},
                optional={
                    "orphaningRules": st.lists(resource_identifiers(loose=loose), max_size=2)
                },
            ),
            "ttlSecondsAfterFinished": st.sampled_from(ttls),
        },
    )


def executors(*, loose: bool = True) -> st.SearchStrategy[Any]:
    """Executors: a service account (valid or not), a wrong type, or no subject."""
    account_names = _maybe(loose, st.from_regex(r"\A[a-z][a-z0-9-]{0,8}\Z"), MAYBE_NAMES)
    return st.fixed_dictionaries(
        {},
        optional={
            "subject": st.fixed_dictionaries(
                {"type": st.sampled_from(["ServiceAccount"] + (["User"] if loose else []))},
                optional={
                    "serviceAccount": st.fixed_dictionaries(
                        {"namespace": account_names, "name": account_names}
                    )
                },
            )
        },
    )


@st.composite
def hostile_specs(draw: st.DrawFn, *, max_manifests: int = 4, loose: bool = True) -> dict[str, Any]:
    """A ManifestWork ``spec``: at least one manifest, the rest optional.

    ``loose`` specs may break the CRD schema (types, enums, required fields);
    the others pass it and are hostile only in what the agent must make of them.
    """
    spec: dict[str, Any] = {
        "workload": {
            "manifests": draw(st.lists(manifests(loose=loose), min_size=1, max_size=max_manifests))
        }
    }
    if draw(st.booleans()):
        spec["manifestConfigs"] = draw(manifest_configs(loose=loose))
    if draw(st.integers(0, 3)) == 0:
        spec["deleteOption"] = draw(delete_options(loose=loose))
    if draw(st.integers(0, 4)) == 0:
        spec["executor"] = draw(executors(loose=loose))
    return spec
