"""Randomized side by side: OCM v1.2.1's gRPC server (``server grpc``) and ours.

OCM's Go work agent serves both managed clusters (the ``grpc-server`` leg of the
``peers`` fixture of tests/peers/test_agent_side_by_side.py): ``cluster-ocm``
through OCM's server, ``cluster-ours`` through ``hubcontroller grpc-server``, in
front of one real hub. Random works (ConfigMaps, Secrets, ServiceAccounts,
Deployments, Jobs, Namespaces, ClusterRoles, objects someone else wrote first, an
unknown kind, invalid manifests; update strategies, feedback, condition rules,
delete options) are created on the hub, changed, deleted, and their objects edited
on the managed clusters. After every step the hub's work (status, finalizers,
labels, annotations, generation, deletion), its AppliedManifestWork and every
object it lists must settle the same on both sides. The agents are one program,
so a difference is the servers'.

The generator (``Gen``) and the step loop (``Scenario``) serve tests/fuzz/test_mqtt.py
too. Repeat a run with ``make fuzz-peers FUZZ_AREAS=grpcserver FUZZ_SEED=<seed>``.
"""

from __future__ import annotations

import asyncio
import copy
import random
from typing import Any

import pytest

from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS, SECRETS, SERVICE_ACCOUNTS, Conflict
from ocmkit.kube.errors import Invalid
from ocmkit.kube.mergepatch import normalized
from ocmkit.kube.resource import DEPLOYMENTS
from tests.fuzz.common import FuzzRun, budget_of, fuzz_marks, fuzz_run
from tests.fuzz.workstatus import complete, known_lag
from tests.integration.conftest import work_body
from tests.peers.test_agent_side_by_side import (
    NS,
    Case,
    Hub,
    Side,
    applied_work,
    comparable_applied,
    comparable_work,
    compare_object,
    hub_work,
    peers,
    same_on_both,
    settled,
)
from tests.support.manifests import configmap, manifest_config

__all__ = ["Gen", "Scenario", "body_spec", "listed", "peers"]

#: How long one comparison waits to settle: OCM's agent backs off after bursts of
#: conflicts, and the machine may be shared.
SETTLE = 150.0
DEFAULT_BUDGET = 720.0


# The final check of every work comes after the budget, and may take as long again.
pytestmark = fuzz_marks(DEFAULT_BUDGET, budget_of(DEFAULT_BUDGET) + 1800)

# -- the generator -----------------------------------------------------------------------

#: Objects on both managed clusters before any work, written by "someone-else".
PRE: dict[str, dict[str, Any]] = {
    **{
        f"fz-pre-cm-{k}": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"fz-pre-cm-{k}", "namespace": NS, "labels": {"pre": "yes"}},
            "data": {"a": "theirs", f"only{k}": "x"},
        }
        for k in range(8)
    },
    **{
        f"fz-pre-secret-{k}": {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"fz-pre-secret-{k}", "namespace": NS},
            "type": "Opaque",
            "data": {"a": "dGhlaXJz"},
        }
        for k in range(3)
    },
    **{
        f"fz-pre-sa-{k}": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": f"fz-pre-sa-{k}", "namespace": NS, "labels": {"pre": "yes"}},
        }
        for k in range(2)
    },
}
RESOURCES = {r.plural: r for r in (CONFIGMAPS, SECRETS, SERVICE_ACCOUNTS, DEPLOYMENTS)}
#: kind -> (group, resource, namespaced)
GROUPS = {
    "ConfigMap": ("", "configmaps", True),
    "Secret": ("", "secrets", True),
    "ServiceAccount": ("", "serviceaccounts", True),
    "Deployment": ("apps", "deployments", True),
    "Job": ("batch", "jobs", True),
    "Namespace": ("", "namespaces", False),
    "ClusterRole": ("rbac.authorization.k8s.io", "clusterroles", False),
    "Widget": ("example.com", "widgets", True),
}
#: Feedback paths per kind. Not `.status.conditions`: their times are each cluster's
#: own. Not a Secret's data: the run's log must not carry it.
PATHS = {
    "ConfigMap": [
        ".data",
        ".data.a",
        ".data.b",
        ".metadata.labels",
        ".metadata.name",
        "{.data.a}",
        ".data[*]",
        ".binaryData",
        ".immutable",
    ],
    "Secret": [".type", ".metadata.name"],
    "ServiceAccount": [".automountServiceAccountToken", ".metadata.name", ".secrets"],
    "Deployment": [
        ".spec.replicas",
        ".status.readyReplicas",
        ".status.replicas",
        ".spec.template.spec.containers[0].image",
        ".spec.paused",
        ".spec.strategy",
        '.status.conditions[?(@.type=="Available")].status',
        "..image",
        ".spec.template.spec.containers[*].name",
        ".metadata.generation",
        ".status.observedGeneration",
    ],
    "Job": [
        ".status.succeeded",
        ".spec.backoffLimit",
        ".spec.completions",
        '.status.conditions[?(@.type=="Complete")].status',
        ".spec.template.spec.containers[0].command",
    ],
    "Namespace": [".status.phase", ".metadata.labels", ".spec.finalizers"],
    "ClusterRole": [".rules", ".rules[0].verbs", ".rules[0].verbs[0]", ".metadata.labels"],
    "Widget": [".spec"],
}
ODD_PATHS = [
    ".nothing.here",
    "bad[",
    "{.data.a",
    ".metadata.uid[0]",
    "..",
    ".[*]",
    ".metadata.annotations",
    '.metadata.labels["pre"]',
    ".kind",
    "$.metadata.name",
    ".spec.x.y.z",
    "{range .data}{end}",
]
CEL = {
    "any": [
        "true",
        "false",
        "has(object.metadata.labels)",
        "object.metadata.name != ''",
        "object.kind == 'ConfigMap'",
        "object.missing == 1",
        "1 + 'a' == 2",
        "'x'",
        "object.metadata.?labels.orValue({}).size() >= 0",
        "size(object.metadata.name) > 3",
        "has(object.status) && hasConditions(object.status)",
    ],
    "ConfigMap": [
        "object.data.a == 'ours'",
        "has(object.data.b)",
        "object.data.exists(k, k.startsWith('a'))",
        "object.data.a.matches('^o')",
    ],
    "Deployment": [
        "object.status.readyReplicas == object.spec.replicas",
        "object.status.availableReplicas > 0",
        "!has(object.spec.paused)",
        "object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
    ],
    "Job": [
        "has(object.status.completionTime)",
        "object.status.succeeded >= 1",
        "!has(object.status.completionTime)",
    ],
}
MESSAGE_EXPR = [
    "'n=' + object.metadata.name",
    "string(result)",
    "object.nope",
    "1",
    "result ? 'ok' : 'bad'",
    "badcel",
]
#: Condition rules' types. Not `Available`: a rule named after a manifest's built-in
#: condition makes OCM v1.2.1's agent rewrite it on every sync and storm status events
#: (thousands a minute), which starves its apply of new generations for minutes (an OCM
#: bug: ours writes one status per sync for such a work).
CONDITIONS = ["Ready", "Progressing", "Degraded", "Healthy", "Complete"]
BAD = [
    "cm-int",
    "cm-list-data",
    "bad-label",
    "bad-name",
    "missing-ns",
    "dep-str-replicas",
    "dep-no-selector",
    "secret-bad-b64",
    "unknown-field",
    "sa-bad-automount",
    "pod",
]


class Gen:
    """Random work specs and changes to them, from one seeded random source.

    What docs/compatibility.md says differs visibly is not generated. Never a Job under
    ``Update``: OCM's agent PUTs the manifest again, which a Job's immutable selector
    refuses; with our agent on one side it does so where ours does not (row "`Update`
    on kinds without a typed path"), through OCM's server it applies every new work
    twice (row "first status of a work"). ``our_agent`` (our agent serves one side):
    an unknown kind only alone (row "a manifest that cannot be resolved (unknown
    kind)"), ``ignoreFields`` by ``jsonPaths`` only (row "`ignoreFields.jsonPointers`,
    `ignoreFields.jqPathExpressions`"). Otherwise (OCM's agent through both servers):
    no Namespace under ``ServerSideApply``, whose second apply gives it a
    ``before-first-apply`` managedFields entry (row "first status of a work")."""

    def __init__(self, rng: random.Random, *, our_agent: bool) -> None:
        self.rng = rng
        self.our_agent = our_agent
        self.n = 0
        self.pre_free = sorted(PRE)
        rng.shuffle(self.pre_free)

    def name(self, stem: str) -> str:
        """A new object name."""
        self.n += 1
        return f"fz-{stem}-{self.n}"

    def data(self) -> dict[str, str]:
        """ConfigMap data."""
        keys = self.rng.sample(["a", "b", "c", "d"], self.rng.randint(0, 3))
        return {k: self.rng.choice(["ours", "1", "", "x y", "ünï", "<&>"]) for k in keys}

    def meta(self, name: str, namespaced: bool = True) -> dict[str, Any]:
        """Object metadata, sometimes with labels or annotations."""
        r = self.rng
        meta: dict[str, Any] = {"name": name}
        if namespaced:
            meta["namespace"] = NS
        if r.random() < 0.3:
            meta["labels"] = {r.choice(["team", "app", "pre"]): r.choice(["a", "b", "yes"])}
        if r.random() < 0.15:
            meta["annotations"] = {"note": r.choice(["hub", "x"])}
        return meta

    def manifest(self, kind: str = "", allow_bad: bool = True) -> dict[str, Any]:
        """A manifest of ``kind`` (random when empty; ``pre``: one of PRE; ``bad``: invalid)."""
        r = self.rng
        kinds = ["ConfigMap", "Secret", "ServiceAccount", "Deployment", "Job", "Namespace"]
        kinds += ["ClusterRole", "pre", "bad"]
        kind = kind or r.choices(kinds, [5, 2, 2, 3, 1, 1, 1, 3, 2 if allow_bad else 0])[0]
        if kind == "pre":
            return self.pre() if self.pre_free else self.manifest("ConfigMap", allow_bad)
        if kind == "bad":
            return self.bad(r.choice(BAD))
        if kind == "ConfigMap":
            obj = self.obj("v1", kind, self.name("cm"), data=self.data())
            if r.random() < 0.1:
                obj["immutable"] = True
            if r.random() < 0.1:
                obj["binaryData"] = {"bin": "AAEC"}
            return obj
        if kind == "Secret":
            obj = self.obj("v1", kind, self.name("sec"))
            if r.random() < 0.5:
                obj["data"] = {"a": r.choice(["b3Vycw==", "dGhlaXJz"])}
            else:
                obj["stringData"] = {"p": r.choice(["hunter2", "x"])}
            if r.random() < 0.3:
                obj["type"] = r.choice(["Opaque", "kubernetes.io/basic-auth"])
                if obj["type"] == "kubernetes.io/basic-auth":
                    obj["stringData"] = {"username": "u", "password": "p"}
            return obj
        if kind == "ServiceAccount":
            obj = self.obj("v1", kind, self.name("sa"))
            if r.random() < 0.5:
                obj["automountServiceAccountToken"] = r.choice([True, False])
            return obj
        if kind == "Deployment":
            return self.deployment()
        if kind == "Job":
            container = {"name": "main", "image": "busybox", "command": ["true"]}
            pod = {"restartPolicy": "Never", "containers": [container]}
            spec = {"backoffLimit": r.choice([0, 2]), "template": {"spec": pod}}
            return self.obj("batch/v1", kind, self.name("job"), spec=spec)
        if kind == "Namespace":
            return {"apiVersion": "v1", "kind": kind, "metadata": self.meta(self.name("ns"), False)}
        verbs = r.sample(["get", "list", "watch"], r.randint(1, 3))
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": self.meta(self.name("cr"), namespaced=False),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}],
        }

    def obj(self, api_version: str, kind: str, name: str, **body: Any) -> dict[str, Any]:
        """A namespaced object with random metadata."""
        return {"apiVersion": api_version, "kind": kind, "metadata": self.meta(name), **body}

    def pre(self) -> dict[str, Any]:
        """A manifest for one of the objects someone else wrote first."""
        obj = copy.deepcopy(PRE[self.pre_free.pop()])
        obj["metadata"].pop("labels", None)
        if obj["kind"] == "ConfigMap":
            obj["data"] = self.data() or {"a": "ours"}
        elif obj["kind"] == "Secret":
            obj["data"] = {"a": self.rng.choice(["b3Vycw==", "dGhlaXJz"])}
        else:
            obj["automountServiceAccountToken"] = self.rng.choice([True, False])
        return obj

    def deployment(self) -> dict[str, Any]:
        """A Deployment, sometimes without replicas, paused or recreated."""
        r = self.rng
        name = self.name("dep")
        labels = {"app": name}
        image = r.choice(["nginx:1.27", "nginx:1.28"])
        spec: dict[str, Any] = {
            "replicas": r.choice([0, 1, 2, 3]),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        }
        if r.random() < 0.2:
            del spec["replicas"]
        if r.random() < 0.15:
            spec["paused"] = True
        if r.random() < 0.15:
            spec["strategy"] = {"type": "Recreate"}
        return self.obj("apps/v1", "Deployment", name, spec=spec)

    def bad(self, which: str) -> dict[str, Any]:
        """A manifest the managed cluster refuses (or cannot resolve), as ``which`` says."""
        name = self.name("bad")
        if which in ("dep-str-replicas", "dep-no-selector"):
            dep = self.deployment()
            if which == "dep-str-replicas":
                dep["spec"]["replicas"] = "two"
            else:
                del dep["spec"]["selector"]
            return dep
        bodies: dict[str, tuple[str, str, dict[str, Any]]] = {
            "cm-int": ("v1", "ConfigMap", {"data": {"a": 1}}),
            "cm-list-data": ("v1", "ConfigMap", {"data": ["a"]}),
            "secret-bad-b64": ("v1", "Secret", {"data": {"a": "not base64!"}}),
            "unknown-field": ("v1", "ConfigMap", {"data": {"a": "1"}, "spec": {"x": 1}}),
            "sa-bad-automount": ("v1", "ServiceAccount", {"automountServiceAccountToken": "yes"}),
            "pod": ("v1", "Pod", {"spec": {"containers": [{"name": "c", "image": ""}]}}),
        }
        if which in bodies:
            api_version, kind, body = bodies[which]
            return self.obj(api_version, kind, name, **body)
        meta: dict[str, Any] = {"name": name, "namespace": NS}
        if which == "bad-label":
            meta["labels"] = {"a": "bad value!"}
        elif which == "bad-name":
            meta["name"] = name.upper() + "_X"
        else:  # missing-ns
            meta["namespace"] = "fz-missing"
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "1"}}

    def strategy(self, kind: str) -> dict[str, Any] | None:
        """An update strategy (None: the default)."""
        r = self.rng
        types = ["Update", "ServerSideApply", "CreateOnly", "ReadOnly", None]
        t = r.choices(types, [1, 3, 1, 1, 3])[0]
        if kind == "Job" and t in (None, "Update"):
            t = "ServerSideApply"
        elif kind == "Namespace" and t == "ServerSideApply" and not self.our_agent:
            t = None
        if t is None:
            return None
        s: dict[str, Any] = {"type": t}
        if t != "ServerSideApply" or r.random() < 0.3:
            return s
        ssa: dict[str, Any] = {}
        if r.random() < 0.5:
            ssa["force"] = r.choice([True, False])
        if r.random() < 0.3:
            ssa["fieldManager"] = r.choice(["work-agent", "work-agent-fz"])
        if r.random() < 0.5:
            field: dict[str, Any] = {"condition": r.choice(["OnSpokePresent", "OnSpokeChange"])}
            how = 0.0 if self.our_agent else r.random()
            if how < 0.6:
                paths = {"ConfigMap": [".data.a", ".data"], "Secret": [".data"]}
                paths["Deployment"] = [".spec.replicas"]
                field["jsonPaths"] = r.sample(paths.get(kind, [".metadata.labels"]), 1)
            elif how < 0.8:
                field["jsonPointers"] = [r.choice(["/data/a", "/spec/replicas", "/data"])]
            else:
                jq = [".data.a", ".spec.replicas", ".data | .b"]
                field["jqPathExpressions"] = [r.choice(jq)]
            ssa["ignoreFields"] = [field]
        if ssa:
            s["serverSideApply"] = ssa
        return s

    def feedback(self, kind: str) -> list[dict[str, Any]] | None:
        """Feedback rules (None: none)."""
        r = self.rng
        if r.random() < 0.45:
            return None
        rules: list[dict[str, Any]] = []
        if r.random() < 0.4:
            rules.append({"type": "WellKnownStatus"})
        if r.random() < 0.85:
            pool = PATHS.get(kind, []) + ODD_PATHS
            entries = []
            for i, path in enumerate(r.sample(pool, min(len(pool), r.randint(1, 4)))):
                entry = {"name": f"f{i}", "path": path}
                if r.random() < 0.1:
                    entry["version"] = r.choice(["v1", "v2"])
                entries.append(entry)
            rules.append({"type": "JSONPaths", "jsonPaths": entries})
        return rules or None

    def rules(self, kind: str) -> list[dict[str, Any]] | None:
        """Condition rules (None: none)."""
        r = self.rng
        if r.random() < 0.55:
            return None
        out: list[dict[str, Any]] = []
        for cond in dict.fromkeys(r.choice(CONDITIONS) for _ in range(r.randint(1, 2))):
            if r.random() < 0.25:
                rule: dict[str, Any] = {"type": "WellKnownConditions", "condition": cond}
            else:
                exprs = r.sample(CEL["any"] + CEL.get(kind, []) * 2, r.randint(1, 2))
                rule = {"type": "CEL", "condition": cond, "celExpressions": exprs}
            if r.random() < 0.3:
                rule["messageExpression"] = r.choice(MESSAGE_EXPR)
            elif r.random() < 0.3:
                rule["message"] = "custom"
            out.append(rule)
        return out

    def configs(self, manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``manifestConfigs`` for some of ``manifests`` (always for Jobs)."""
        configs = []
        for m in manifests:
            kind = m.get("kind", "")
            if kind not in GROUPS or (kind != "Job" and self.rng.random() < 0.25):
                continue
            group, resource, namespaced = GROUPS[kind]
            meta = m.get("metadata") or {}
            namespace = str(meta.get("namespace", "")) if namespaced else ""
            cfg = manifest_config(
                group,
                resource,
                str(meta.get("name", "")),
                namespace,
                feedback=self.feedback(kind),
                rules=self.rules(kind),
                strategy=self.strategy(kind),
                scrape=self.rng.choice([None, None, "Poll", "Watch"]),
            )
            configs.append(cfg)
        return configs

    def delete_option(self, manifests: list[dict[str, Any]]) -> dict[str, Any] | None:
        """A delete option (None: the default)."""
        r = self.rng
        t = r.choices([None, "Foreground", "Orphan", "SelectivelyOrphan"], [4, 1, 1, 2])[0]
        if t is None:
            return None
        opt: dict[str, Any] = {"propagationPolicy": t}
        if t == "SelectivelyOrphan":
            rules = []
            for m in manifests:
                if m.get("kind") in GROUPS and r.random() < 0.5:
                    group, resource, namespaced = GROUPS[m["kind"]]
                    namespace = NS if namespaced else ""
                    name = m["metadata"].get("name", "")
                    rules.append(
                        {"group": group, "resource": resource, "namespace": namespace, "name": name}
                    )
            if r.random() < 0.2:
                absent = {"group": "", "resource": "configmaps", "name": "fz-nothing"}
                rules.append({**absent, "namespace": NS})
            opt["selectivelyOrphans"] = {"orphaningRules": rules}
        return opt

    def work(self) -> dict[str, Any]:
        """A work spec (``_solo``: an unknown kind alone, which keeps its work alone)."""
        r = self.rng
        if r.random() < 0.06:
            meta = {"name": self.name("w"), "namespace": NS}
            widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta}
            if self.our_agent:
                return {"workload": {"manifests": [widget]}, "_solo": True}
            return {"workload": {"manifests": [widget, self.manifest()]}}
        manifests = [self.manifest() for _ in range(r.randint(1, 3))]
        spec: dict[str, Any] = {"workload": {"manifests": manifests}}
        configs = self.configs(manifests)
        if configs:
            spec["manifestConfigs"] = configs
        opt = self.delete_option(manifests)
        if opt:
            spec["deleteOption"] = opt
        return spec

    # -- changes ----------------------------------------------------------------------

    def mutate(self, spec: dict[str, Any]) -> str:
        """Change ``spec`` in place; what was done (``noop``: nothing)."""
        r = self.rng
        manifests = spec["workload"]["manifests"]
        ops = ["data", "reorder", "strategy", "feedback", "rules", "deleteOption", "drop-config"]
        if not spec.get("_solo"):
            ops += ["add", "add", "remove", "fix-or-break"]
        op = r.choice(ops)
        if op == "data":
            return self.mutate_data(spec)
        if op == "reorder":
            r.shuffle(manifests)
            return "reorder"
        if op == "add":
            manifests.append(self.manifest())
            if r.random() < 0.5 or manifests[-1]["kind"] == "Job":
                spec.setdefault("manifestConfigs", []).extend(self.configs(manifests[-1:]))
            return f"add {outline(manifests[-1])}"
        if op == "remove":
            if len(manifests) <= 1:
                return "noop"
            return f"remove {outline(manifests.pop(r.randrange(len(manifests))))}"
        if op == "fix-or-break":
            i = r.randrange(len(manifests))
            manifests[i] = self.manifest("bad" if r.random() < 0.5 else "", allow_bad=False)
            if manifests[i]["kind"] == "Job":
                spec.setdefault("manifestConfigs", []).extend(self.configs(manifests[i : i + 1]))
            return f"replace #{i} with {outline(manifests[i])}"
        if op == "deleteOption":
            opt = self.delete_option(manifests)
            spec.pop("deleteOption", None)
            spec.update({"deleteOption": opt} if opt else {})
            return f"deleteOption {(opt or {}).get('propagationPolicy')}"
        configs = spec.get("manifestConfigs") or []
        if not configs:
            spec["manifestConfigs"] = self.configs(manifests)
            return "new configs"
        if op == "drop-config":
            i = r.randrange(len(configs))
            if configs[i]["resourceIdentifier"]["resource"] == "jobs":
                return "noop"  # a Job keeps its strategy (see the class)
            configs.pop(i)
            return "drop one config"
        cfg = r.choice(configs)
        resource = cfg["resourceIdentifier"]["resource"]
        kind = next((k for k, v in GROUPS.items() if v[1] == resource), "")
        key, value = {
            "strategy": ("updateStrategy", self.strategy),
            "feedback": ("feedbackRules", self.feedback),
            "rules": ("conditionRules", self.rules),
        }[op]
        new = value(kind)
        cfg.pop(key, None)
        cfg.update({key: new} if new is not None else {})
        return f"{op} {cfg['resourceIdentifier']['name']}"

    def mutate_data(self, spec: dict[str, Any]) -> str:
        """A content change of one manifest."""
        r = self.rng
        kinds = ("ConfigMap", "Secret", "Deployment", "ServiceAccount", "ClusterRole")
        cands = [m for m in spec["workload"]["manifests"] if m.get("kind") in kinds]
        if not cands:
            return "noop"
        m = r.choice(cands)
        if m["kind"] == "ConfigMap" and isinstance(m.get("data"), dict):
            d = m["data"]
            if d and r.random() < 0.4:
                d.pop(r.choice(sorted(d)))
            else:
                d[r.choice(["a", "b", "e"])] = r.choice(["ours", "changed", ""])
        elif m["kind"] == "ConfigMap":  # data that is no map (invalid): fixed
            m["data"] = {"a": "fixed"}
        elif m["kind"] == "Secret":
            m.pop("stringData" if r.random() < 0.5 else "data", None)
            m.setdefault("data", {})["z"] = "eg=="
        elif m["kind"] == "Deployment" and r.random() < 0.5:
            m["spec"]["replicas"] = r.choice([0, 1, 2, 4])
        elif m["kind"] == "Deployment":
            m["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.29"
        elif m["kind"] == "ServiceAccount":
            if m.pop("automountServiceAccountToken", None) is None:
                m["automountServiceAccountToken"] = False
        else:
            verbs = m["rules"][0]["verbs"]
            m["rules"][0]["verbs"] = ["get"] if len(verbs) > 1 else ["list", "get"]
        if m["metadata"].get("labels") and r.random() < 0.3:
            del m["metadata"]["labels"]
        return f"data {outline(m)}"


def outline(manifest: dict[str, Any]) -> str:
    """``Kind/name`` of a manifest (logged instead of its content)."""
    return f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"


def spec_outline(spec: dict[str, Any] | None) -> str:
    """A work spec's manifests by kind and name, and what else it sets."""
    if spec is None:
        return "(deleted)"
    names = " ".join(outline(m) for m in spec["workload"]["manifests"])
    configs = len(spec.get("manifestConfigs") or [])
    policy = (spec.get("deleteOption") or {}).get("propagationPolicy")
    return f"{names}; {configs} configs; deletion {policy or 'default'}"


def body_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as written (without the generator's ``_`` notes)."""
    return {k: copy.deepcopy(v) for k, v in spec.items() if not k.startswith("_")}


def settled_or_complete(work: dict[str, Any] | None) -> bool:
    """Settled as the side-by-side test says, or ``Complete`` (the apply stops then)."""
    if work is None:
        return False
    conds = (work.get("status") or {}).get("conditions") or []
    complete = any(c.get("type") == "Complete" and c.get("status") == "True" for c in conds)
    return complete or settled(work, Case([]))


async def listed(hub: Hub, name: str) -> list[dict[str, Any]]:
    """The objects either side's AppliedManifestWork of ``name`` lists."""
    out: list[dict[str, Any]] = []
    for side in hub.sides:
        applied = await applied_work(side, name)
        for res in ((applied or {}).get("status") or {}).get("appliedResources") or []:
            key = {k: res.get(k) for k in ("group", "version", "resource", "namespace", "name")}
            if key not in out:
                out.append(key)
    return out


async def compare_listed(hub: Hub, res: dict[str, Any]) -> None:
    """One listed object is the same on both sides (a Secret's difference unshown: the
    run's log must not carry its data)."""
    try:
        await compare_object(hub, res, SETTLE)
    except AssertionError as err:
        if res["resource"] != "secrets":
            raise
        raise AssertionError(str(err).splitlines()[0]) from None


# -- the steps -----------------------------------------------------------------------------


class Scenario:
    """Works created, changed and deleted at random, objects edited on the managed
    clusters, and after each step everything compared. Subclasses say how works reach
    the sides (``write``, ``delete``), how a side reports one (``read``, ``comparable``,
    ``gone``) and may add steps of their own (``special``)."""

    #: What someone else edits on the managed clusters.
    edited: tuple[str, ...] = ("configmaps", "secrets", "serviceaccounts", "deployments")

    def __init__(self, run: FuzzRun, hub: Hub, gen: Gen) -> None:
        self.run = run
        self.hub = hub
        self.gen = gen
        self.rng = run.rng("steps")
        self.works: dict[str, dict[str, Any]] = {}
        self.diverged: set[str] = set()
        #: Works a side has shown ``Complete`` (OCM's apply loop then waits for a resync).
        self.was_complete: set[str] = set()

    async def write(self, name: str, spec: dict[str, Any]) -> bool:
        """Create or update work ``name`` on both sides; False when it is refused."""
        raise NotImplementedError

    def lag(self, ocm: dict[str, Any] | None, ours: dict[str, Any] | None, name: str) -> str | None:
        """The row that explains one side's agent being behind the other.
        Here OCM's agent serves both sides, so either may lag."""
        seen = name in self.was_complete
        return known_lag(ocm, ours, seen) or known_lag(ours, ocm, seen)

    async def delete(self, name: str) -> None:
        """Delete work ``name`` on both sides."""
        raise NotImplementedError

    async def read(self, side: Side, name: str) -> dict[str, Any] | None:
        """The work as ``side`` reports it (None: none)."""
        raise NotImplementedError

    def comparable(self, work: dict[str, Any]) -> Any:
        """What must be the same of a work read on both sides."""
        return comparable_work(work, {})

    def comparable_applied(self, applied: dict[str, Any]) -> Any:
        """What must be the same of an AppliedManifestWork."""
        return comparable_applied(applied)

    async def gone(self, name: str) -> None:
        """Until the deletion of ``name`` is done on both sides, alike."""
        raise NotImplementedError

    async def compare_more(self, name: str) -> None:
        """Anything else to compare of a settled work."""

    async def special(self, step: int, live: list[str]) -> bool:
        """A step of the subclass's own; False: none was taken."""
        return False

    def finding(self, what: str, err: AssertionError, name: str = "") -> None:
        """Records a divergence with the work's outline and the difference."""
        spec = self.works.get(name) if name else None
        self.run.finding(what, work=spec_outline(spec), diff=str(err)[-6000:])

    async def play(self) -> None:
        """The whole run: the managed clusters' own objects, works, steps, final check."""
        for side in self.hub.sides:
            for obj in PRE.values():
                resource = RESOURCES[GROUPS[obj["kind"]][1]]
                name = obj["metadata"]["name"]
                await side.spoke.patch(
                    resource,
                    name,
                    copy.deepcopy(obj),
                    NS,
                    patch_type="apply",
                    field_manager="someone-else",
                )
        # Both agents subscribed (and their first resync answered) before the random
        # works come: one work applied on both sides.
        await self.create("fz-warmup", {"workload": {"manifests": [configmap("fz-warmup")]}})
        await self.check("fz-warmup", "create")
        for i in range(max(6, int(self.run.budget / 40))):
            await self.create(f"fz{i}", self.gen.work())
        for name in list(self.works)[1:]:
            await self.check(name, "create")
        self.run.log(f"created: {len(self.works)} works, {len(self.diverged)} diverged")
        step = 0
        while self.run.left() > 0:
            await self.step(step)
            step += 1
        late = sorted(self.diverged)
        for name in list(self.works):
            await self.check(name, "final")
        for name in late:
            self.diverged.discard(name)
            if name in self.works:
                await self.check(name, "final (diverged before)")
                if name not in self.diverged:
                    self.run.log(f"  {name} converged by the end")
        self.run.log(f"done after {step} steps; diverged: {sorted(self.diverged)}")

    async def create(self, name: str, spec: dict[str, Any]) -> None:
        """A new work (dropped when the hub refuses it)."""
        self.run.log(f"create {name}: {spec_outline(spec)}")
        if await self.write(name, spec):
            self.works[name] = spec

    async def step(self, step: int) -> None:
        """One random step."""
        live = sorted(n for n in self.works if n not in self.diverged)
        roll = self.rng.random()
        if len(live) < 4 or roll < 0.08:  # new works: the run must not run out of them
            await self.create(f"fz-new{step}", self.gen.work())
            await self.check(f"fz-new{step}", "create")
            return
        if await self.special(step, live):
            return
        name = self.rng.choice(live)
        if roll < 0.22:
            before = await listed(self.hub, name)
            self.run.log(f"step {step}: delete {name}")
            await self.delete(name)
            await self.deleted(name, before)
            return
        if roll < 0.34:
            await self.edit_spoke(step, name)
        await self.change(step, name)

    async def change(self, step: int, name: str, check: bool = True) -> None:
        """A random change of work ``name``, compared unless ``check`` is off."""
        spec = self.works[name]
        old = copy.deepcopy(spec)
        what = self.gen.mutate(spec)
        self.run.log(f"step {step}: {name}: {what}")
        if normalized(old) == normalized(spec):
            # Go's semantic equality: no agent applies it before its periodic resync.
            self.works[name] = old
            return
        if not await self.write(name, spec):
            self.works[name] = old
        elif check:
            await self.check(name, f"step {step} ({what})")

    async def edit_spoke(self, step: int, name: str) -> None:
        """Someone else edits one of the work's objects on both managed clusters."""
        objs = [o for o in await listed(self.hub, name) if o["resource"] in self.edited]
        if not objs:
            return
        o = self.rng.choice(objs)
        patch: dict[str, Any] = {"metadata": {"labels": {"edited": "yes"}}}
        edits: dict[str, dict[str, Any]] = {
            "configmaps": {"data": {"a": "edited", "e": "new"}},
            "secrets": {"data": {"a": "ZWRpdGVk"}},
            "deployments": {"spec": {"replicas": 5}},
        }
        patch.update(edits.get(o["resource"], {}))
        self.run.log(f"step {step}: someone else edits {o['resource']} {o['name']}")
        for side in self.hub.sides:
            try:
                await side.spoke.patch(
                    RESOURCES[o["resource"]],
                    o["name"],
                    patch,
                    o["namespace"] or None,
                    patch_type="merge",
                    field_manager="someone-else",
                )
            except Exception as err:  # refused alike on both sides: compared later
                self.run.log(f"  the edit failed on {side.cluster}: {str(err)[:200]}")
        # sleep-ok: the agents see the edit before the next spec (the order matters)
        await asyncio.sleep(2)

    async def check(self, name: str, what: str) -> None:
        """Work ``name`` settles the same on both sides; so do its AppliedManifestWork
        and its objects, and a few status syncs later its status still."""
        if name in self.diverged or name not in self.works:
            return

        async def read(side: Side) -> Any:
            work = await self.read(side, name)
            if complete(work):
                self.was_complete.add(name)
            return work

        def comparable(work: Any) -> Any:
            return None if work is None else self.comparable(work)

        status = f"the status of work {name!r}"
        try:
            await same_on_both(
                self.hub, status, read, comparable, ready=settled_or_complete, timeout=SETTLE
            )
            await self.compare_applied(name)
            # sleep-ok: feedback and rule conditions follow with the status syncs after
            # the apply (1 s apart); nothing marks the last of them
            await asyncio.sleep(3)
            await same_on_both(
                self.hub,
                f"{status} (later)",
                read,
                comparable,
                ready=settled_or_complete,
                timeout=SETTLE,
            )
            await self.compare_more(name)
        except AssertionError as err:
            raw = [await read(side) for side in self.hub.sides]
            if row := self.lag(raw[0], raw[1], name):
                # OCM's agent behind for a documented reason (docs/compatibility.md, row).
                self.run.log(f"  {name} after {what}: known ({row})")
                self.diverged.add(name)
                return
            both = [comparable(work) for work in raw]
            if (
                str(err).startswith(f"timed out after {SETTLE}s waiting for {status}")
                and both[0] == both[1]
            ):
                # Not a divergence: the same, only not settled (in time) on one side or both.
                self.run.log(f"  {name} after {what}: the same on both sides, not settled")
                return
            self.diverged.add(name)
            self.finding(f"work {name} after {what}", err, name)

    async def compare_applied(self, name: str) -> None:
        """The AppliedManifestWork of ``name``, then every object it lists."""

        async def read(side: Side) -> Any:
            return side.unhashed(await applied_work(side, name))

        def comparable(applied: Any) -> Any:
            return None if applied is None else self.comparable_applied(applied)

        what = f"the AppliedManifestWork of {name!r}"
        await same_on_both(self.hub, what, read, comparable, timeout=SETTLE)
        for res in await listed(self.hub, name):
            await compare_listed(self.hub, res)

    async def deleted(self, name: str, before: list[dict[str, Any]]) -> None:
        """The deletion of ``name`` done alike, and what it left on the managed clusters."""
        self.works.pop(name)
        try:
            await self.gone(name)
        except AssertionError as err:
            self.finding(f"deleting work {name}", err)
        for res in before:
            try:
                await compare_listed(self.hub, res)
            except AssertionError as err:
                self.finding(f"{res['resource']} {res['name']} after deleting {name}", err)


class HubScenario(Scenario):
    """Works on the hub, served to each side's agent by its server."""

    async def write(self, name: str, spec: dict[str, Any]) -> bool:
        """Create or update (retrying conflicts with the servers' own writes)."""
        for side in self.hub.sides:
            for _ in range(20):
                work = await hub_work(self.hub, side, name)
                try:
                    if work is None:
                        body = work_body(name, [], **body_spec(spec))
                        body["metadata"]["namespace"] = side.cluster
                        await self.hub.client.create(MANIFESTWORKS, body, side.cluster)
                    else:
                        work["spec"] = body_spec(spec)
                        await self.hub.client.update(MANIFESTWORKS, work, side.cluster)
                    break
                except Conflict:
                    continue
                except Invalid as err:
                    # The hub's validation: the same for both sides, the first refuses.
                    self.run.log(f"  the hub refused {name}: {str(err)[:300]}")
                    return False
        return True

    async def delete(self, name: str) -> None:
        for side in self.hub.sides:
            await self.hub.client.delete(MANIFESTWORKS, name, side.cluster)

    async def read(self, side: Side, name: str) -> dict[str, Any] | None:
        return await hub_work(self.hub, side, name)

    def comparable(self, work: dict[str, Any]) -> Any:
        """The status and finalizers, and what the servers may touch of the rest."""
        meta = work.get("metadata") or {}
        hub_meta = {"labels": meta.get("labels"), "annotations": meta.get("annotations")}
        hub_meta.update({"deleting": bool(meta.get("deletionTimestamp"))})
        return {**super().comparable(work), "hub": hub_meta, "generation": meta.get("generation")}

    async def gone(self, name: str) -> None:
        async def read(side: Side) -> Any:
            work = await hub_work(self.hub, side, name)
            return None if work is None else self.comparable(work)

        await same_on_both(
            self.hub,
            f"work {name!r} deleted",
            read,
            lambda w: w,
            ready=lambda w: w is None,
            timeout=SETTLE,
        )


@pytest.mark.parametrize("peers", ["grpc-server"], indirect=True)
async def test_random_works_through_both_servers(peers: Hub) -> None:
    """Random works and steps for the budget; every divergence is a finding."""
    run = fuzz_run("grpcserver", DEFAULT_BUDGET)
    gen = Gen(run.rng("works"), our_agent=False)
    await HubScenario(run, peers, gen).play()
    run.assert_none()
