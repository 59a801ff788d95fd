"""OCM's Go admission webhook (``work webhook-server``, v1.2.1) and ours, side by side.

Both serve HTTPS on loopback with the same certificate and ask the same real
API server's SubjectAccessReviews for executor checks. Every AdmissionReview of
the corpus below is posted to both; their answers must be the same, field by
field (``uid``, ``allowed``, the whole ``status``).

Runs in the real leg only; ``make ocm`` builds OCM's binary.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from hubcontroller.webhook import HubAccessReviewer
from ocmkit.kube import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, KubeClient
from tests.support.controlplane import spawn
from tests.support.ocmpeer import Peer, ocm_binary, wait_port
from tests.support.processes import free_port
from tests.support.programs import open_test_client
from tests.support.targets import REAL, PlanePool, open_cluster
from tests.webhook.conftest import client_context, local_settings, post, running
from tests.webhook.helpers import (
    MW_PATH,
    MWRS_PATH,
    configmap,
    executor,
    install_cert,
    make_cert,
    manifest_work,
    replica_set,
    review,
)

pytestmark = pytest.mark.realkube

GATES = "ManifestWorkReplicaSet=true"
GRANTED = "granted-user"


def big(size: int) -> dict[str, Any]:
    """A ConfigMap manifest of about ``size`` bytes."""
    return configmap("big", data={"blob": "x" * size})


def raw_review(operation: str, obj: Any, old: Any = None, **kw: Any) -> dict[str, Any]:
    """A review whose objects are given as is (manifests may be anything JSON)."""
    return review(operation, obj, old, **kw)


WORK = manifest_work()
WITH_EXECUTOR = manifest_work(executor=executor())
OTHER_EXECUTOR = manifest_work(executor=executor(name="sa2"))


def rollout(strategy: dict[str, Any]) -> dict[str, Any]:
    """A replica set whose placement rolls out with ``strategy``."""
    mwrs = replica_set()
    mwrs["spec"]["placementRefs"] = [{"name": "placement1", "rolloutStrategy": strategy}]
    return mwrs


def rs_review(operation: str, obj: Any, old: Any = None) -> dict[str, Any]:
    """A replica set review."""
    return review(operation, obj, old, kind="ManifestWorkReplicaSet", version="v1alpha1")


def with_ordinal(ordinal: int) -> dict[str, Any]:
    """A work whose status an agent wrote with this ordinal (the CRD does not bound it)."""
    work = manifest_work()
    meta = {"ordinal": ordinal, "version": "v1", "kind": "ConfigMap", "name": "cm"}
    work["status"] = {"resourceStatus": {"manifests": [{"resourceMeta": meta, "conditions": []}]}}
    return work


def with_spec(**fields: Any) -> dict[str, Any]:
    """A work with these spec fields replaced."""
    work = manifest_work()
    work["spec"].update(fields)
    return work


def progressive(**fields: Any) -> tuple[str, dict[str, Any]]:
    """A replica set's CREATE with a Progressive rollout of these fields, and its path."""
    return MWRS_PATH, rs_review("CREATE", rollout({"type": "Progressive", "progressive": fields}))


#: name -> (path, AdmissionReview)
CORPUS: dict[str, tuple[str, dict[str, Any]]] = {
    "valid": (MW_PATH, review("CREATE", WORK)),
    "no manifests": (MW_PATH, review("CREATE", manifest_work([]))),
    "generateName": (
        MW_PATH,
        review("CREATE", manifest_work([{**configmap(), "metadata": {"generateName": "x-"}}])),
    ),
    "no name": (
        MW_PATH,
        review("CREATE", manifest_work([{"apiVersion": "v1", "kind": "ConfigMap"}])),
    ),
    "generateName and name": (
        MW_PATH,
        review(
            "CREATE",
            manifest_work([{**configmap(), "metadata": {"name": "a", "generateName": "x-"}}]),
        ),
    ),
    "duplicate": (MW_PATH, review("CREATE", manifest_work([configmap(), configmap()]))),
    "same object, two apiVersions": (
        MW_PATH,
        review("CREATE", manifest_work([configmap(), {**configmap(), "apiVersion": "core/v1"}])),
    ),
    "too large": (
        MW_PATH,
        review("CREATE", manifest_work([big(300_000), configmap("b", data={"x": "y" * 250_000})])),
    ),
    "just below the limit": (MW_PATH, review("CREATE", manifest_work([big(511_000)]))),
    "a string manifest": (MW_PATH, review("CREATE", manifest_work(["abc"]))),
    "a list manifest": (MW_PATH, review("CREATE", manifest_work([[1, 2]]))),
    "a null manifest": (MW_PATH, review("CREATE", manifest_work([None]))),
    "metadata not an object": (
        MW_PATH,
        review(
            "CREATE", manifest_work([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}])
        ),
    ),
    "executor, not allowed": (MW_PATH, review("CREATE", WITH_EXECUTOR, username="alice")),
    "executor, allowed": (MW_PATH, review("CREATE", WITH_EXECUTOR, username=GRANTED)),
    "executor without its service account": (
        MW_PATH,
        review(
            "CREATE",
            manifest_work(executor={"subject": {"type": "ServiceAccount"}}),
            username="alice",
        ),
    ),
    "update, executor unchanged": (
        MW_PATH,
        review("UPDATE", WITH_EXECUTOR, WITH_EXECUTOR, username="alice"),
    ),
    "update, executor changed": (
        MW_PATH,
        review("UPDATE", OTHER_EXECUTOR, WITH_EXECUTOR, username="alice"),
    ),
    "update, executor removed": (MW_PATH, review("UPDATE", WORK, WITH_EXECUTOR, username="alice")),
    "delete": (MW_PATH, review("DELETE", None, WORK)),
    "v1beta1 review": (MW_PATH, review("CREATE", WORK, api_version="admission.k8s.io/v1beta1")),
    "replica set": (
        MWRS_PATH,
        review("CREATE", replica_set(), kind="ManifestWorkReplicaSet", version="v1alpha1"),
    ),
    "replica set, no manifests": (
        MWRS_PATH,
        review("CREATE", replica_set([]), kind="ManifestWorkReplicaSet", version="v1alpha1"),
    ),
    "replica set, duplicate": (
        MWRS_PATH,
        review(
            "CREATE",
            replica_set([configmap(), configmap()]),
            kind="ManifestWorkReplicaSet",
            version="v1alpha1",
        ),
    ),
    "replica set with an executor": (
        MWRS_PATH,
        review(
            "CREATE",
            replica_set(executor=executor()),
            kind="ManifestWorkReplicaSet",
            version="v1alpha1",
            username="alice",
        ),
    ),
    "replica set, delete": (
        MWRS_PATH,
        review("DELETE", None, replica_set(), kind="ManifestWorkReplicaSet", version="v1alpha1"),
    ),
    # What Go's typed decode refuses although the CRD lets it through.
    **{
        f"minSuccessTime {value!r}": (
            MWRS_PATH,
            rs_review("CREATE", rollout({"type": "All", "all": {"minSuccessTime": value}})),
        )
        for value in ("abc", "1d", "", "5", "-1s", "1h30m", ".5s", "+2m", "1\u00b5s", "9999999h")
    },
    "groupIndex past int32": progressive(mandatoryDecisionGroups=[{"groupIndex": 1 << 40}]),
    "groupIndex past int32, then a bad minSuccessTime": (
        MWRS_PATH,
        rs_review(
            "CREATE",
            rollout(
                {
                    "type": "ProgressivePerGroup",
                    "progressivePerGroup": {
                        "mandatoryDecisionGroups": [{"groupIndex": -(1 << 31) - 1}],
                        "minSuccessTime": "1x",
                    },
                }
            ),
        ),
    ),
    "groupIndex at the int32 bounds": progressive(
        mandatoryDecisionGroups=[{"groupIndex": (1 << 31) - 1}, {"groupIndex": -(1 << 31)}]
    ),
    "old replica set with a bad minSuccessTime, deleted": (
        MWRS_PATH,
        rs_review("DELETE", None, rollout({"type": "All", "all": {"minSuccessTime": "x"}})),
    ),
    "ordinal past int32 in the status": (MW_PATH, review("CREATE", with_ordinal(1 << 40))),
    "ordinal past int32 in the old status": (
        MW_PATH,
        review("UPDATE", WORK, with_ordinal(-(1 << 35))),
    ),
    "executor subject type a number": (
        MW_PATH,
        review("CREATE", with_spec(executor={"subject": {"type": 1}})),
    ),
    "service account name a bool": (
        MW_PATH,
        review("CREATE", with_spec(executor={"subject": {"serviceAccount": {"name": False}}})),
    ),
    "workload an array": (MW_PATH, review("CREATE", with_spec(workload=[1]))),
    "manifests an object": (MW_PATH, review("CREATE", with_spec(workload={"manifests": {}}))),
    "metadata an array": (MW_PATH, review("CREATE", {**manifest_work(), "metadata": []})),
    "metadata.name a number": (
        MW_PATH,
        review("CREATE", {**manifest_work(), "metadata": {"name": 5}}),
    ),
    "spec a string": (MW_PATH, review("CREATE", {**manifest_work(), "spec": "x"})),
    "replica set template an array": (
        MWRS_PATH,
        rs_review("CREATE", {**replica_set(), "spec": {"manifestWorkTemplate": []}}),
    ),
    # An int-or-string holds an int32; its own decoding stops Go's decoder at once.
    **{
        f"{block}.{field} {value}": (
            MWRS_PATH,
            rs_review("CREATE", rollout({"type": "All", block: {field: value}})),
        )
        for block, field in (
            ("all", "maxFailures"),
            ("progressive", "maxConcurrency"),
            ("progressivePerGroup", "maxFailures"),
        )
        for value in (1 << 31, -(1 << 31) - 1, (1 << 31) - 1, "2147483648")
    },
    "maxConcurrency past int32 after a groupIndex past int32": progressive(
        mandatoryDecisionGroups=[{"groupIndex": 1 << 40}], maxConcurrency=1 << 31
    ),
    "old replica set with maxFailures past int32, deleted": (
        MWRS_PATH,
        rs_review("DELETE", None, rollout({"type": "All", "all": {"maxFailures": 1 << 33}})),
    ),
    # Go matches a manifest's keys to PartialObjectMetadata's fields ignoring case.
    "a KELVIN SIGN kind makes a duplicate": (
        MW_PATH,
        review(
            "CREATE",
            manifest_work(
                [configmap(), {**configmap(), "kind": "Secret", "\u212aind": "ConfigMap"}]
            ),
        ),
    ),
    "a second Metadata object adds to the first": (
        MW_PATH,
        review(
            "CREATE",
            manifest_work(
                [
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
                    {
                        "Metadata": {"namespace": "other"},
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "a"},
                    },
                ]
            ),
        ),
    ),
    "a dotless-i kind is no field": (
        MW_PATH,
        review("CREATE", manifest_work([{**configmap(), "k\u0131nd": 5, "k\u0130nd": 5}])),
    ),
    "METADATA a string": (
        MW_PATH,
        review("CREATE", manifest_work([{**configmap(), "METADATA": "x"}])),
    ),
    "ApiVersion a number": (
        MW_PATH,
        review("CREATE", manifest_work([{**configmap(), "ApiVersion": 5}])),
    ),
    # Go reads a lone UTF-16 surrogate as U+FFFD (json.dumps escapes it).
    "a lone surrogate in the user and the uid": (
        MW_PATH,
        review("CREATE", WITH_EXECUTOR, username="\ud800", uid="\udc00"),
    ),
    "names that differ in a lone surrogate": (
        MW_PATH,
        review("CREATE", manifest_work([configmap("\ud800"), configmap("\ud801")])),
    ),
    "a review without a request": (
        MW_PATH,
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
    ),
}


@dataclass
class Webhooks:
    """The two servers' base URLs and a client context trusting their certificate."""

    ocm: str
    ours: str
    peer: Peer
    context: Any
    #: the base URLs of the probe endpoints: OCM's (port 8000: it has no flag), ours
    probes: tuple[str, str]


async def grant_execute_as(admin: KubeClient) -> None:
    """``granted-user`` may execute as ns1/sa1 (OCM's ``execute-as`` verb on manifestworks)."""
    role = {
        "metadata": {"name": "execute-as-sa1"},
        "rules": [
            {
                "apiGroups": ["work.open-cluster-management.io"],
                "resources": ["manifestworks"],
                "verbs": ["execute-as"],
                "resourceNames": ["system:serviceaccount:ns1:sa1"],
            }
        ],
    }
    await admin.create(CLUSTER_ROLES, role)
    binding = {
        "metadata": {"name": "execute-as-sa1"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "execute-as-sa1",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": GRANTED}],
    }
    await admin.create(CLUSTER_ROLE_BINDINGS, binding)


@pytest.fixture
async def webhooks(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Webhooks]:
    """OCM's webhook (a process) and ours (in-process) with one certificate and one hub."""
    cert = make_cert("webhook")
    certdir = tmp_path / "certs"
    install_cert(certdir, cert)
    async with open_cluster(REAL, realkube_pool) as plane:
        kubeconfig = plane.write_kubeconfig(tmp_path / "hub.kubeconfig")
        async with await open_test_client(
            kubeconfig, user_agent="side-by-side", name="hub", crds=[]
        ) as admin:
            await grant_execute_as(admin)
            port = free_port()
            argv = [
                str(ocm_binary("work")),
                "webhook-server",
                f"--port={port}",
                f"--certdir={certdir}",
                f"--kubeconfig={kubeconfig}",
                f"--feature-gates={GATES}",
            ]
            peer = Peer(spawn("ocm-webhook", argv, tmp_path / "ocm-webhook.log"))
            settings = local_settings(
                certdir,
                feature_gates=frozenset({"ManifestWorkReplicaSet"}),
                health_probe_port=free_port(),
            )
            try:
                await wait_port(peer, port, "OCM's webhook")
                async with running(settings, HubAccessReviewer(admin)) as ours:
                    yield Webhooks(
                        f"https://127.0.0.1:{port}",
                        f"https://127.0.0.1:{ours.port}",
                        peer,
                        client_context(cert),
                        ("http://127.0.0.1:8000", f"http://127.0.0.1:{ours.health_port}"),
                    )
            finally:
                await peer.stop()


async def answer(base: str, path: str, body: dict[str, Any], context: Any) -> Any:
    """The webhook's HTTP status and its answer's ``response``."""
    status, reply = await post(base + path, body, context)
    return status, reply.get("response") if isinstance(reply, dict) else reply


#: OCM v1.2.1's webhook serves /metrics on this port (it has no flag for it).
OCM_METRICS = "http://127.0.0.1:8080/metrics"
WEBHOOK_SERIES = "controller_runtime_webhook_"


def webhook_families(text: str) -> dict[str, Metric]:
    """controller-runtime's webhook families in a scrape."""
    return {
        family.name: family
        for family in text_string_to_metric_families(text)
        if family.name.startswith(WEBHOOK_SERIES)
    }


def requests_by_path_and_code(families: dict[str, Metric]) -> Counter[tuple[str, str]]:
    """``controller_runtime_webhook_requests_total`` as {(webhook, code): count}."""
    counts: Counter[tuple[str, str]] = Counter()
    for sample in families["controller_runtime_webhook_requests"].samples:
        if sample.name.endswith("_total"):
            counts[(sample.labels["webhook"], sample.labels["code"])] += int(sample.value)
    return counts


def label_names(family: Metric) -> set[frozenset[str]]:
    """The label names of a family's samples (``le`` aside)."""
    return {frozenset(k for k in sample.labels if k != "le") for sample in family.samples}


async def test_same_reviews_same_answers(webhooks: Webhooks) -> None:
    # Ours runs in this process: its counts are what the corpus adds to the registry's.
    ours_before = requests_by_path_and_code(webhook_families(generate_latest().decode()))
    differences = []
    for name, (path, body) in CORPUS.items():
        ocm, ours = await asyncio.gather(
            answer(webhooks.ocm, path, copy.deepcopy(body), webhooks.context),
            answer(webhooks.ours, path, copy.deepcopy(body), webhooks.context),
        )
        webhooks.peer.check_alive()
        if ocm != ours:
            differences.append(
                f"{name}:\n  OCM's: {json.dumps(ocm, sort_keys=True)}\n"
                f"  ours:  {json.dumps(ours, sort_keys=True)}"
            )
    assert not differences, "\n".join(differences)

    # The same requests, counted alike in controller-runtime's series.
    async with aiohttp.ClientSession() as session, session.get(OCM_METRICS) as response:
        ocm_families = webhook_families(await response.text())
    our_families = webhook_families(generate_latest().decode())
    ours = requests_by_path_and_code(our_families)
    ours.subtract(ours_before)
    assert +ours == requests_by_path_and_code(ocm_families)
    for name, family in ocm_families.items():
        assert name in our_families, f"{name} is not ours"
        assert our_families[name].type == family.type, name
        if family.samples and our_families[name].samples:
            assert label_names(our_families[name]) == label_names(family), name


#: name -> (Content-Type, body) of requests refused before a review is decoded.
RAW_REQUESTS: dict[str, tuple[str, bytes]] = {
    "text/plain": ("text/plain", json.dumps(review("CREATE", WORK)).encode()),
    "a media type parameter": (
        "application/json; charset=utf-8",
        json.dumps(review("CREATE", WORK)).encode(),
    ),
    "upper case": ("Application/JSON", json.dumps(review("CREATE", WORK)).encode()),
    "empty": ("application/json", b""),
    "no JSON (the parser's words differ)": ("application/json", b"not json"),
    "too large, and text/plain": ("text/plain", b"x" * (7 << 20)),
    "invalid UTF-8 in a name": (
        "application/json",
        json.dumps(review("CREATE", manifest_work([configmap("a")])))
        .encode()
        .replace(b'"name": "a"', b'"name": "a\xff"'),
    ),
}


async def test_same_raw_requests_same_answers(webhooks: Webhooks) -> None:
    """Whole answers (kind and apiVersion too) and HTTP codes, for what no review holds."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        for name, (content_type, body) in RAW_REQUESTS.items():
            answers = []
            for base in (webhooks.ocm, webhooks.ours):
                async with session.post(
                    base + MW_PATH,
                    data=body,
                    headers={"Content-Type": content_type},
                    ssl=webhooks.context,
                ) as response:
                    reply = json.loads(await response.read())
                    if "words differ" in name:
                        reply["response"]["status"]["message"] = "(a parse error)"
                    answers.append((response.status, reply))
            assert answers[0] == answers[1], (name, answers)


#: (method, path) of probe requests both webhooks answer alike, byte for byte. Not
#: ``/readyz?verbose``: ours has one readiness check more ("webhook": are we serving).
PROBE_REQUESTS = [
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/healthz?verbose"),
    ("GET", "/healthz?verbose&exclude=nothing"),
    ("POST", "/readyz"),
    ("PUT", "/healthz/"),
    ("GET", "/healthz/healthz-ping"),
    ("GET", "/readyz/readyz-ping"),
    ("GET", "/readyz/nothing"),
    ("GET", "/nothing"),
    ("GET", "/"),
    ("HEAD", "/healthz"),
]


async def test_probes_answer_alike(webhooks: Webhooks) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        for method, path in PROBE_REQUESTS:
            answers = []
            for base in webhooks.probes:
                async with session.request(method, base + path) as response:
                    answers.append((response.status, response.content_type, await response.read()))
            assert answers[0] == answers[1], (method, path, answers)
