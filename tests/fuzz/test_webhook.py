"""Randomized side-by-side run of OCM's Go admission webhook (v1.2.1) and ours.

The ``webhooks`` fixture of ``tests/peers/test_webhook_side_by_side.py`` runs both
webhooks against one real API server (for the executor checks' SubjectAccessReviews).
Random AdmissionReviews of ManifestWorks and ManifestWorkReplicaSets are posted to both
as the same bytes and their whole answers (HTTP status and body) compared. Three kinds
of review, drawn at random:

- well-typed objects aimed at the rules: manifests of one name under other kinds,
  apiVersions and namespaces, case-variant and Unicode-folded keys, sizes near the limit,
  executors and users, UPDATE/DELETE with equal, changed or removed executors, rollout
  strategies with int32 and duration values at and past their bounds;
- malformed objects: any field of the wrong JSON type or null, odd strings, numbers
  Python cannot write, non-object manifests, odd operations;
- well-typed objects in odd envelopes and encodings: review fields of the wrong type,
  missing requests and objects, other content types, indentation, invalid bodies.

A differing answer is a finding unless the review was built with an input one of the
documented differences (docs/compatibility.md, "Admission webhook") covers and the
answers differ as that row says (``known_difference``).
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.fuzz.common import fuzz_marks, fuzz_run
from tests.peers.test_webhook_side_by_side import GRANTED, Webhooks, rs_review, webhooks
from tests.webhook.conftest import post
from tests.webhook.helpers import (
    MW_PATH,
    MWRS_PATH,
    configmap,
    executor,
    manifest_work,
    replica_set,
    review,
)

DEFAULT_BUDGET = 600.0
# Reviews are posted until the budget (FUZZ_BUDGET) is spent; one takes at most seconds.
pytestmark = fuzz_marks(DEFAULT_BUDGET, 900)
__all__ = ["webhooks"]

# -- the documented differences (docs/compatibility.md, "Admission webhook") -----------------

#: Go decodes the whole object into its types and refuses any JSON type the CRD would
#: refuse first (or a number its field cannot hold); we check only the fields the rules
#: read, the int32 and duration fields and a manifest's identity.
TYPED = "typed"
#: "a manifest with a second, case-variant metadata key whose other ObjectMeta fields
#: have the wrong type or an unreadable time is refused by OCM ... allowed here".
FOLDED_METADATA = "folded-metadata"
#: "an object without metadata.namespace is checked in the request's namespace (OCM
#: asks cluster-wide)".
NO_NAMESPACE = "no-namespace"
#: "an executor without a serviceAccount is refused with `executor service account can
#: not be nil` whatever its type (OCM ... would crash on another)".
EXECUTOR_NIL = "executor-nil"
#: "decoding errors are in Python's words" (of the AdmissionReview itself).
DECODING = "decoding"
#: "an AdmissionReview apiVersion other than v1 or v1beta1 is refused (OCM answers in it),
#: and an empty one is answered in v1 (OCM's answer has none)".
REVIEW_VERSION = "review-version"
#: "a review whose kind is not AdmissionReview is refused, and one without a kind is
#: answered as AdmissionReview (OCM answers in the kind sent, or with none)".
REVIEW_KIND = "review-kind"

#: What Go's decoders say when they refuse a JSON type, a number or a time.
GO_DECODE_ERROR = re.compile(
    r"cannot unmarshal|parsing time |time: invalid duration|json: |invalid character"
    r"|unexpected end of JSON input|couldn't get version/kind"
)
EXECUTOR_NIL_MESSAGE = "executor service account can not be nil"
REQUEST_NAMESPACE = re.compile(r" in namespace \S*$")

RAW = "__RAW__"
"""A string ``"__RAW__<text>"`` is sent as ``<text>``: numbers Python cannot write."""

ODD_STRINGS = [
    *("", " ", "a" * 300, "日本語", "emoji-\U0001f600", "rtl-\u202e", "comb-e\u0301"),
    *("nul-\u0000", "\ud800", "tab\t\n", "<>&", "\u017f", "\u212a", "None", "null", "0", "-1"),
]
#: Values of every JSON type, for fields of any type.
ODD_VALUES: list[Any] = [None, 0, -1, 1.5, True, False, "x", [], {}, [1], {"a": 1}, 1 << 40]
DURATIONS = [
    *("0", "5s", "1h30m", "abc", "", "1d", "-1s", ".5s", "+2m", "1\u00b5s", "9999999h"),
    *("1e3s", "5", "None", "3m ", "٣s"),
]
INT_OR_STRING = [
    *(0, 1, -1, 50, "50%", "100%", "101%", "abc", "", 1 << 31, 1 << 40, -(1 << 31) - 1),
    *("5", "-5%", f"{RAW}99999999999999999999"),
]
FOLD_KEYS = ["\u212aind", "apiVer\u017fion", "Metadata", "METADATA", "Kind", "ApiVersion", "KIND"]
USERS: list[dict[str, Any]] = [
    {"username": "alice"},
    {"username": GRANTED},
    {"username": ""},
    {"username": "bob", "groups": ["system:masters"]},
    {"username": "alice", "groups": []},
    {"username": "alice", "uid": "u-1", "extra": {"scopes.example.com/x": ["a", "b"]}},
    {"username": "alice", "extra": {"": ["a"]}},
    {"username": "日本", "groups": ["g1", "g1"]},
    {"username": "system:serviceaccount:ns1:sa1"},
    {"groups": ["system:authenticated"]},
    {},
]


@dataclass
class Review:
    """One request: where it goes, its bytes, and the documented differences its input
    falls under."""

    path: str
    body: Any
    known: set[str] = field(default_factory=set)
    content_type: str = "application/json"
    #: How the body is written: indented, non-ASCII as UTF-8 (lone surrogates as CESU-8).
    indent: int | None = None
    utf8: bool = False
    #: Bytes sent instead of the body.
    raw: bytes | None = None

    def data(self) -> bytes:
        """The bytes sent: the body as JSON, ``__RAW__`` strings written as their text."""
        if self.raw is not None:
            return self.raw
        text = json.dumps(self.body, indent=self.indent, ensure_ascii=not self.utf8)
        return re.sub(rf'"{RAW}([^"]*)"', r"\1", text).encode("utf-8", "surrogatepass")


class Generator:
    """Random reviews from one random source; ``known`` collects the documented
    differences the review being built falls under."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.known: set[str] = set()

    def pick(self, values: list[Any], known: str | None = None) -> Any:
        """A copy of one of ``values``; the review falls under ``known`` if given."""
        if known:
            self.known.add(known)
        return copy.deepcopy(self.rng.choice(values))

    # -- manifests --------------------------------------------------------------------------

    def manifest(self, i: int) -> dict[str, Any]:
        """A valid manifest of a few kinds."""
        kind, api = self.rng.choice(
            [
                *(("ConfigMap", "v1"), ("ConfigMap", "core/v1"), ("Secret", "v1")),
                *(("Deployment", "apps/v1"), ("Namespace", "v1"), ("Foo", "example.com/v1")),
            ]
        )
        m: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": {"name": f"m{i}"}}
        if kind != "Namespace":
            m["metadata"]["namespace"] = self.rng.choice(["default", "default", "", "kube-system"])
        if kind == "ConfigMap" and self.rng.random() < 0.3:
            m["data"] = {"k": self.pick(ODD_STRINGS[:12]) * self.rng.randint(1, 50)}
        return m

    def folded_key(self, m: dict[str, Any]) -> None:
        """A second, case-variant or Unicode-folded key for kind, apiVersion or metadata."""
        key = self.rng.choice(FOLD_KEYS)
        if key.lower().endswith("ind"):
            m[key] = self.pick(["ConfigMap", "Secret", ""])
        elif "ver" in key.lower():
            m[key] = self.pick(["v1", "apps/v1", ""])
        elif self.rng.random() < 0.6:
            m[key] = self.pick([{"namespace": "default"}, {"name": "m0"}, {"namespace": "other"}])
        else:
            m[key] = self.pick(
                [{"creationTimestamp": "bad"}, {"labels": {"a": 1}}, {"generation": 1.5}],
                FOLDED_METADATA,
            )

    def break_manifest(self, m: dict[str, Any]) -> Any:
        """One random breakage of a manifest."""
        meta = m["metadata"]
        choice = self.rng.randrange(17)
        if choice == 0:
            del m[self.rng.choice(["kind", "apiVersion", "metadata"])]
        elif choice == 1:
            m[self.rng.choice(["kind", "apiVersion"])] = self.pick(["", None, 5, ["x"], True])
        elif choice == 2:
            m["metadata"] = self.pick(["x", 5, [], None, True])
        elif choice == 3:
            meta.pop("name")
        elif choice == 4:
            meta[self.rng.choice(["name", "namespace"])] = self.pick(ODD_VALUES + ODD_STRINGS)
        elif choice == 5:
            meta["generateName"] = self.pick(["x-", "", None, 5, True], TYPED)
        elif choice == 6:
            self.folded_key(m)
        elif choice == 7:
            key = self.rng.choice(
                ["Name", "NAME", "Namespace", "NameSpace", "GenerateName", "\u017fame"]
            )
            meta[key] = self.pick(["m0", "other", "x-", "default", "kube-system"])
        elif choice == 8:
            # ObjectMeta's other fields: typed in Go, not read by us.
            key = self.rng.choice(
                [
                    *("labels", "annotations", "creationTimestamp", "uid", "ownerReferences"),
                    *("generation", "deletionGracePeriodSeconds", "resourceVersion"),
                    *("managedFields", "finalizers", "deletionTimestamp"),
                ]
            )
            meta[key] = self.pick([*ODD_VALUES, "garbage", f"{RAW}1e400"], TYPED)
        elif choice == 9:
            m["data"] = {"n": f"{RAW}123456789012345678901234567890"}
        elif choice == 10:
            # A number no float64 holds: Go's decoder refuses it (as the API server would).
            m["data"] = {"n": self.pick([f"{RAW}1e400", f"{RAW}-1e400"], TYPED)}
        elif choice == 11:
            m["spec"] = {"x": f"{RAW}-0", "y": f"{RAW}1E2", "z": f"{RAW}0.0000"}
        elif choice == 12:
            m[self.rng.choice(["kind", "apiVersion"])] = self.pick(ODD_STRINGS)
        elif choice == 13:
            meta["name"] = self.pick(ODD_STRINGS)
        else:
            return self.pick(["abc", 5, 1.5, True, None, [1], [], ""])
        return m

    def manifests(self, malformed: bool) -> list[Any]:
        """A work's manifests: empty, many, huge, duplicated, or a few (broken ones when
        ``malformed``)."""
        shape = self.rng.randrange(12)
        if shape == 0:
            return []
        if shape == 1:
            return [self.manifest(i) for i in range(self.rng.randint(50, 400))]
        if shape == 2:
            # About the size limit (512000), in one to four ConfigMaps.
            count = self.rng.randint(1, 4)
            size = (512000 + self.rng.randint(-200, 200)) // count
            big = []
            for i in range(count):
                cm = configmap(f"big{i}", data={"blob": ""})
                pad = max(size - len(json.dumps(cm)), 0)
                cm["data"]["blob"] = self.rng.choice(["x", "é", "\U0001f600", "\\"]) * pad
                big.append(cm)
            return big
        if shape == 3:
            first = self.manifest(0)
            other = copy.deepcopy(first)
            variant = self.rng.randrange(5)
            if variant == 1:
                other["apiVersion"] = "core/v1"
            elif variant == 2:
                other["metadata"].pop("namespace", None)
            elif variant == 3:
                other["metadata"]["namespace"] = ""
            elif variant == 4:
                other = {k: other[k] for k in reversed(list(other))}
            return [self.manifest(7), first, other]
        manifests: list[Any] = [self.manifest(i) for i in range(self.rng.randint(1, 4))]
        for i in self.rng.sample(
            range(len(manifests)), min(len(manifests), self.rng.randint(0, 2))
        ):
            if malformed:
                manifests[i] = self.break_manifest(manifests[i])
            elif self.rng.random() < 0.5:
                self.folded_key(manifests[i])
        return manifests

    # -- the rest of a ManifestWork ------------------------------------------------------------

    def executor(self, malformed: bool) -> Any:
        """An executor (None: none)."""
        executors = [
            None,
            executor(),
            executor(name="sa2"),
            executor(namespace="", name="sa1"),
            executor(namespace="ns1", name=""),
            executor(namespace="n:s", name="s:a"),
            {"subject": {"type": "ServiceAccount", "serviceAccount": {}}},
            {"subject": {"type": "ServiceAccount", "serviceAccount": None}},
            {**executor(), "x": 1},
        ]
        if malformed and self.rng.random() < 0.4:
            # No service account, another type: OCM checks it only for ServiceAccount.
            return self.pick(
                [{}, {"subject": None}, {"subject": {"type": "Other"}}, {"subject": {"type": ""}}],
                EXECUTOR_NIL,
            )
        if malformed and self.rng.random() < 0.3:
            sa = {"namespace": self.pick(["ns1", None, 5]), "name": self.pick(["sa1", None, 5])}
            return self.pick([{"subject": {"type": 5}}, {"subject": {"serviceAccount": sa}}], TYPED)
        return self.pick(executors)

    def identifier(self, malformed: bool) -> Any:
        """A manifestConfig's resourceIdentifier."""
        ri: dict[str, Any] = {"group": "", "resource": "configmaps", "name": "m0"}
        ri["namespace"] = "default"
        if malformed and self.rng.random() < 0.3:
            ri[self.rng.choice(list(ri))] = self.pick(ODD_VALUES, TYPED)
        elif self.rng.random() < 0.3:
            ri[self.rng.choice(["name", "unknown"])] = self.pick(["*", ""])
        return ri

    def manifest_config(self, malformed: bool) -> Any:
        """One manifestConfigs entry."""
        config: dict[str, Any] = {"resourceIdentifier": self.identifier(malformed)}
        which = self.rng.randrange(3)
        if which == 0:
            config["feedbackRules"] = [
                {"type": "WellKnownStatus"},
                {"type": "JSONPaths", "jsonPaths": [{"name": "a", "path": ".status"}]},
            ][: self.rng.randint(1, 2)]
        elif which == 1:
            strategies = [
                {
                    "type": "ServerSideApply",
                    "serverSideApply": {"force": True, "fieldManager": "x"},
                },
                *({"type": "Update"}, {"type": "CreateOnly"}, {"type": "ReadOnly"}),
                {"type": "Bogus"},
            ]
            config["updateStrategy"] = self.pick(strategies)
        else:
            rule = {"type": "CEL", "condition": "X", "celExpressions": ["true"], "message": "m"}
            rules = [[{"type": "WellKnownConditions", "condition": "Complete"}], [rule], [None]]
            config["conditionRules"] = self.pick(rules)
        if malformed and self.rng.random() < 0.3:
            key = self.rng.choice(["feedbackRules", "updateStrategy", "conditionRules"])
            config[key] = self.pick(
                [
                    *("x", [1], 5, [{"type": 5}], [{"type": "CEL", "celExpressions": 5}]),
                    [{"type": "JSONPaths", "jsonPaths": [{"name": 5, "path": None}]}],
                    {"type": "ServerSideApply", "serverSideApply": {"force": "yes"}},
                    {"serverSideApply": {"ignoreFields": "x"}},
                ],
                TYPED,
            )
        return config

    def delete_option(self, malformed: bool) -> Any:
        """A deleteOption."""
        option: dict[str, Any] = {
            "propagationPolicy": self.pick(
                ["Foreground", "Orphan", "Bogus", "", "SelectivelyOrphan"]
            )
        }
        roll = self.rng.random()
        if roll < 0.3:
            rules = [self.identifier(malformed)]
            option["selectivelyOrphans"] = {"orphaningRules": rules}
        elif roll < 0.5:
            option["ttlSecondsAfterFinished"] = self.pick([0, -1, 1 << 31, (1 << 63) - 1])
        if malformed and self.rng.random() < 0.5:
            key = self.rng.choice(["propagationPolicy", "selectivelyOrphans", "ttl"])
            if key == "ttl":
                # Past int64, or not an integer: Go's int64 refuses them.
                option["ttlSecondsAfterFinished"] = self.pick(
                    [1.5, "10", *(f"{RAW}{n}" for n in ("9223372036854775808", "1e19", "1.0"))],
                    TYPED,
                )
            else:
                option[key] = self.pick(ODD_VALUES, TYPED)
        return option

    def work(self, malformed: bool) -> dict[str, Any]:
        """A ManifestWork."""
        work = manifest_work(self.manifests(malformed))
        spec = work["spec"]
        exe = self.executor(malformed) if self.rng.random() < 0.4 else None
        if exe is not None:
            spec["executor"] = exe
        if self.rng.random() < 0.3:
            spec["deleteOption"] = self.delete_option(malformed)
        if self.rng.random() < 0.3:
            count = self.rng.randint(0, 3)
            spec["manifestConfigs"] = [self.manifest_config(malformed) for _ in range(count)]
        meta = work["metadata"]
        roll = self.rng.random()
        if roll < 0.1:
            self.known.add(NO_NAMESPACE)
            if self.rng.random() < 0.5:
                del meta["namespace"]
            else:
                meta["namespace"] = ""
        elif roll < 0.15:
            meta["namespace"] = "other"
        elif malformed and roll < 0.35:
            self.odd_object(work)
        return work

    def odd_object(self, work: dict[str, Any]) -> None:
        """A wrong type in the object's metadata, spec or status."""
        meta, spec = work["metadata"], work["spec"]
        which = self.rng.randrange(7)
        if which == 0:
            key = self.rng.choice(["labels", "creationTimestamp", "name", "finalizers"])
            meta[key] = self.pick([*ODD_VALUES, "garbage", ["x"]], TYPED)
        elif which == 1:
            meta["generation"] = self.pick([f"{RAW}9223372036854775808", "x", 1.5], TYPED)
        elif which == 2:
            spec["workload"] = self.pick([None, {}, {"manifests": None}, {"manifests": "x"}], TYPED)
        elif which == 3:
            work["spec"] = self.pick([None, {}, "x", []], TYPED)
        elif which == 4:
            big = {"name": "a", "fieldValue": {"type": "Integer", "integer": f"{RAW}1e19"}}
            work["status"] = self.pick(
                [
                    {"conditions": [{"type": "Applied", "lastTransitionTime": "garbage"}]},
                    {"conditions": "x"},
                    {"resourceStatus": {"manifests": [{"resourceMeta": {"ordinal": "x"}}]}},
                    {"resourceStatus": {"manifests": [{"statusFeedback": {"values": [big]}}]}},
                ],
                TYPED,
            )
        elif which == 5:
            spec["unknownField"] = {"x": [1, 2]}
        else:
            # The object's own kind and apiVersion: refused by the decoder in its words.
            key = self.rng.choice(["kind", "apiVersion"])
            work[key] = self.pick(["ManifestWorkList", "Foo", "", "v1", 5], DECODING)

    # -- ManifestWorkReplicaSets ---------------------------------------------------------------

    def rollout_config(self, block: str, malformed: bool) -> dict[str, Any]:
        """The settings of one rollout type."""
        config: dict[str, Any] = {}
        for key in ("minSuccessTime", "progressDeadline"):
            if self.rng.random() < 0.5:
                config[key] = self.pick(DURATIONS)
        keys = ["maxFailures", *(["maxConcurrency"] if block == "progressive" else [])]
        for key in keys:
            if self.rng.random() < 0.5:
                config[key] = self.pick(INT_OR_STRING)
        if block != "all" and self.rng.random() < 0.5:
            groups = [[{"groupName": "g1"}], [{"groupIndex": 1}], [{"groupIndex": 1 << 40}]]
            config["mandatoryDecisionGroups"] = self.pick([*groups, [None], None])
        if malformed and self.rng.random() < 0.3:
            key = self.rng.choice(["minSuccessTime", "maxFailures", "mandatoryDecisionGroups"])
            config[key] = self.pick(
                [5, True, 1.5, f"{RAW}1.0", f"{RAW}1e2", "x", [{"groupName": 5}]], TYPED
            )
        return config

    def replica_set(self, malformed: bool) -> dict[str, Any]:
        """A ManifestWorkReplicaSet."""
        rs = replica_set(self.manifests(malformed) if self.rng.random() < 0.5 else None)
        spec = rs["spec"]
        refs = []
        for _ in range(self.rng.randint(0, 3)):
            ref: dict[str, Any] = {"name": self.pick(["placement1", "", "日本"])}
            if self.rng.random() < 0.8:
                kind = self.pick(["All", "Progressive", "ProgressivePerGroup", "Bogus", ""])
                strategy: dict[str, Any] = {"type": kind}
                for block in ("all", "progressive", "progressivePerGroup"):
                    if self.rng.random() < 0.5:
                        strategy[block] = self.rollout_config(block, malformed)
                ref["rolloutStrategy"] = strategy
            refs.append(ref)
        spec["placementRefs"] = refs
        roll = self.rng.random()
        if roll < 0.1:
            spec["cascadeDeletionPolicy"] = self.pick(["Background", "Foreground", "Bogus"])
        elif roll < 0.3:
            spec["manifestWorkTemplate"]["executor"] = self.executor(malformed)
        elif roll < 0.4:
            spec["manifestWorkTemplate"]["deleteOption"] = self.delete_option(malformed)
        elif malformed and roll < 0.5:
            key = self.rng.choice(["placementRefs", "cascadeDeletionPolicy"])
            spec[key] = self.pick([*ODD_VALUES, [{"name": 5}]], TYPED)
        return rs

    # -- whole reviews -------------------------------------------------------------------------

    def review(self) -> Review:
        """The next review: well-typed, malformed, or in an odd envelope or encoding."""
        self.known = set()
        roll = self.rng.random()
        malformed = roll < 0.35
        if self.rng.random() < 0.6:
            path, body = MW_PATH, self.work_review(malformed)
        else:
            path, body = MWRS_PATH, self.replica_set_review(malformed)
        result = Review(path, body)
        if roll >= 0.8:
            self.envelope(result)
        result.known = self.known
        return result

    def work_review(self, malformed: bool) -> dict[str, Any]:
        """A ManifestWork review of a random operation and user."""
        operations = ["CREATE", "UPDATE", "DELETE", *(["CONNECT", "create"] if malformed else [])]
        operation = self.rng.choices(operations, [50, 35, 10, 1, 1][: len(operations)])[0]
        new = self.work(malformed)
        old = None
        if operation != "CREATE":
            old = self.pick(
                [copy.deepcopy(new), manifest_work(), manifest_work(executor=executor())]
            )
            if self.rng.random() < 0.3:
                old = self.work(malformed)
        body = review(operation, None if operation == "DELETE" else new, old)
        body["request"]["userInfo"] = self.pick(USERS)
        return body

    def replica_set_review(self, malformed: bool) -> dict[str, Any]:
        """A ManifestWorkReplicaSet review."""
        operation = self.rng.choice(["CREATE", "UPDATE", "DELETE"])
        new = self.replica_set(malformed)
        old = self.replica_set(malformed) if self.rng.random() < 0.5 else replica_set()
        if operation == "CREATE":
            return rs_review(operation, new)
        return rs_review(operation, None if operation == "DELETE" else new, old)

    def envelope(self, result: Review) -> None:
        """An odd AdmissionReview envelope, encoding or content type."""
        body, request = result.body, result.body["request"]
        which = self.rng.randrange(14)
        if which == 0:
            body["apiVersion"] = self.pick(["admission.k8s.io/v1beta1", "admission.k8s.io/v1"])
        elif which == 1:
            body["apiVersion"] = self.pick(["admission.k8s.io/v2", "", "Foo"], REVIEW_VERSION)
        elif which == 2:
            body["kind"] = self.pick(["", "Foo"], REVIEW_KIND)
        elif which == 3:
            request["uid"] = self.pick(["", "日本", "x" * 300, "\ud800"])
        elif which == 4:
            request["operation"] = self.pick(["", "CONNECT", "create", "PATCH"])
        elif which == 5:
            request.pop(self.rng.choice(["object", "oldObject", "kind", "userInfo"]), None)
        elif which == 6:
            request["object"] = self.pick([{}, {"spec": {}}], NO_NAMESPACE)
        elif which == 7:
            request["namespace"] = self.pick(["", "other"])
        elif which == 8:
            del body["request"]
        elif which == 9:
            # Wrong JSON types in the review itself.
            key = self.rng.choice(["uid", "operation", "kind", "userInfo", "dryRun", "object"])
            request[key] = self.pick([5, "x", [], True], DECODING)
            self.known.add(TYPED)
        elif which == 10:
            result.indent = 2
        elif which == 11:
            result.utf8 = True
        elif which == 12:
            result.content_type = self.pick(
                ["application/json; charset=utf-8", "text/plain", "application/JSON"]
            )
        else:
            bodies = [b"", b"{", b"null", b"[]", b"5", b"\xef\xbb\xbf{}", b"{} x", b'{"a":NaN}']
            result.raw = self.pick(bodies, DECODING)


def message(answer: tuple[int, Any]) -> str:
    """The refusal message of an answer ('' when there is none)."""
    reply = answer[1]
    if not isinstance(reply, dict):
        return ""
    response = reply.get("response") or {}
    return str((response.get("status") or {}).get("message", ""))


def allowed(answer: tuple[int, Any]) -> bool:
    """Whether the answer allows the request."""
    reply = answer[1]
    return isinstance(reply, dict) and bool((reply.get("response") or {}).get("allowed"))


def known_difference(known: set[str], ocm: tuple[int, Any], ours: tuple[int, Any]) -> str | None:
    """The documented difference that explains two differing answers, if any: the review
    falls under it and the answers differ as it says."""
    ocm_message, our_message = message(ocm), message(ours)
    go_refused = not allowed(ocm) and bool(GO_DECODE_ERROR.search(ocm_message))
    if TYPED in known and go_refused:
        return TYPED
    if FOLDED_METADATA in known and go_refused:
        # Refused by OCM, allowed here, or refused by a later rule.
        return FOLDED_METADATA
    if EXECUTOR_NIL in known and our_message == EXECUTOR_NIL_MESSAGE:
        return EXECUTOR_NIL
    if DECODING in known and not allowed(ocm) and not allowed(ours) and ocm[0] == ours[0]:
        return DECODING
    if REVIEW_VERSION in known and (not allowed(ours) or unversioned(ocm) == unversioned(ours)):
        # Refused here, or (an empty apiVersion) answered in v1, where OCM answers in it.
        return REVIEW_VERSION
    if REVIEW_KIND in known and (not allowed(ours) or unkinded(ocm) == unkinded(ours)):
        return REVIEW_KIND
    if NO_NAMESPACE in known:
        # The same answer, but for the namespace the access check names.
        same = [REQUEST_NAMESPACE.sub(" in namespace <ns>", m) for m in (ocm_message, our_message)]
        if same[0] == same[1] and allowed(ocm) == allowed(ours):
            return NO_NAMESPACE
    return None


def unversioned(answer: tuple[int, Any], field: str = "apiVersion") -> Any:
    """An answer without the review's ``apiVersion`` (or ``field``)."""
    status, reply = answer
    if isinstance(reply, dict):
        reply = {k: v for k, v in reply.items() if k != field}
    return status, reply


def unkinded(answer: tuple[int, Any]) -> Any:
    """An answer without the review's ``kind``."""
    return unversioned(answer, "kind")


def comparable(answer: tuple[int, Any]) -> tuple[int, Any]:
    """An answer, text bodies without their trailing whitespace."""
    status, reply = answer
    return status, reply.strip() if isinstance(reply, str) else reply


async def test_random_reviews_alike(webhooks: Webhooks) -> None:
    """Random reviews get the same answers from OCM's webhook and ours."""
    run = fuzz_run("webhook", DEFAULT_BUDGET)
    gen = Generator(run.rng("reviews"))
    counts: Counter[str] = Counter()
    number = 0
    while run.left() > 0:
        item = gen.review()
        ocm, ours = await asyncio.gather(
            *(
                post(
                    base + item.path,
                    None,
                    webhooks.context,
                    raw=item.data(),
                    content_type=item.content_type,
                )
                for base in (webhooks.ocm, webhooks.ours)
            )
        )
        webhooks.peer.check_alive()
        if comparable(ocm) == comparable(ours):
            counts["same"] += 1
        elif row := known_difference(item.known, ocm, ours):
            counts[f"known: {row}"] += 1
        else:
            # The review is not logged (manifests, a Secret's data): its number and the
            # seed repeat it. Messages may quote a manifest: cut short.
            run.finding(
                f"review #{number} on {item.path.rsplit('-', 1)[-1]}: the answers differ",
                number=number,
                known=sorted(item.known),
                ocm=[ocm[0], json.dumps(ocm[1], ensure_ascii=False)[:1000]],
                ours=[ours[0], json.dumps(ours[1], ensure_ascii=False)[:1000]],
            )
        number += 1
        if number % 500 == 0:
            run.log(f"{number} reviews: {dict(counts)}")
    run.log(f"{number} reviews: {dict(counts)}")
    run.assert_none()
