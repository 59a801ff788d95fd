"""Randomized side-by-side run of OCM's Go work agent (v1.2.1) and ours.

The harness of ``tests/peers/test_agent_side_by_side.py`` (one real hub, two real
managed clusters with simulated workloads, OCM's agent on ``cluster-ocm``, ours on
``cluster-ours``) gets random works: ConfigMaps, Secrets, ServiceAccounts, Deployments,
Jobs, Namespaces, ClusterRoles, objects someone else wrote before, an unknown kind and
invalid manifests, with random update strategies, feedback rules, condition rules,
scrape types and delete options. Then random steps change, reorder, add, remove, break
and fix manifests and configs, edit objects on the managed clusters and delete works.
After each step the work's status, its AppliedManifestWork and every object it lists
are compared on both sides (``same_on_both``); a difference is a finding, and that
work is left alone from then on.

Both agents run on the ``kube`` driver. Not on ``grpc``: OCM's agent there backs off
exponentially after status conflicts and has been seen to leave a new generation
unapplied for minutes, which would read as a difference of ours.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ocmkit.kube import CONFIGMAPS, MANIFESTWORKS, SECRETS, SERVICE_ACCOUNTS
from ocmkit.kube.errors import Conflict, Invalid
from ocmkit.kube.mergepatch import normalized
from tests.fuzz.common import FuzzRun, fuzz_marks, fuzz_run
from tests.fuzz.workstatus import complete, known_lag
from tests.peers import test_agent_side_by_side as harness
from tests.peers.test_agent_side_by_side import NS, Case, Hub, Side, peers
from tests.support.manifests import configmap, deployment, manifest_config

#: Seconds of scenarios (``FUZZ_BUDGET``); the timeout leaves room for the control
#: planes' set-up and the last comparisons of every work.
DEFAULT_BUDGET = 720.0
pytestmark = fuzz_marks(DEFAULT_BUDGET, 2400)
__all__ = ["peers"]

#: How long one comparison waits for both sides to settle alike (generous: other
#: control planes may share the machine).
SETTLE = 90.0
FIRST_WORKS = 6
MAX_WORKS = 36

# -- objects someone else wrote before (server-side apply), for conflicts ------------------

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
#: The resources someone else writes (before the works, and as spoke edits).
EDITABLE = {r.plural: r for r in (CONFIGMAPS, SECRETS, SERVICE_ACCOUNTS)}
BY_KIND = {r.kind: r for r in EDITABLE.values()}

# -- what the generator picks from -----------------------------------------------------------

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
PATHS = {
    "ConfigMap": [
        *(".data", ".data.a", ".data.b", ".metadata.labels", ".metadata.name"),
        *("{.data.a}", ".data[*]", ".binaryData", ".immutable"),
    ],
    "Secret": [".data", ".data.a", ".type", ".metadata.name", ".stringData"],
    "ServiceAccount": [".automountServiceAccountToken", ".metadata.name", ".secrets"],
    "Deployment": [
        *(".spec.replicas", ".status.readyReplicas", ".status.replicas"),
        *(".spec.template.spec.containers[0].image", ".status.conditions"),
        '.status.conditions[?(@.type=="Available")].status',
        *(".spec.template.spec.containers[*].name", ".spec.paused", ".metadata.generation"),
        *(".status.observedGeneration", "..image", ".spec.strategy"),
    ],
    "Job": [
        *(".status.succeeded", ".spec.backoffLimit", ".status.conditions"),
        '.status.conditions[?(@.type=="Complete")].status',
        *(".spec.completions", ".spec.template.spec.containers[0].command"),
    ],
    "Namespace": [".status.phase", ".metadata.labels", ".spec.finalizers"],
    "ClusterRole": [".rules", ".rules[0].verbs", ".rules[0].verbs[0]", ".metadata.labels"],
}
# Not ``..`` or ``.[*]`` on a whole object: their values hold each cluster's uids and
# times, and OCM orders a descent through a map as Go's random map order has it.
ODD_PATHS = [
    *(".nothing.here", "bad[", "{.data.a", ".metadata.uid[0]", ".metadata.annotations"),
    *('.metadata.labels["pre"]', ".kind", "$.metadata.name", ".spec.x.y.z"),
    "{range .data}{end}",
]
CEL = {
    "any": [
        *("true", "false", "has(object.metadata.labels)", "object.metadata.name != ''"),
        *("object.kind == 'ConfigMap'", "object.missing == 1", "1 + 'a' == 2", "'x'"),
        "object.metadata.?labels.orValue({}).size() >= 0",
        "has(object.status) && hasConditions(object.status)",
        "size(object.metadata.name) > 3",
    ],
    "ConfigMap": [
        *("object.data.a == 'ours'", "has(object.data.b)"),
        *("object.data.exists(k, k.startsWith('a'))", "object.data.a.matches('^o')"),
    ],
    "Deployment": [
        *("object.status.readyReplicas == object.spec.replicas", "!has(object.spec.paused)"),
        "object.status.availableReplicas > 0",
        "object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
    ],
    "Job": [
        *("has(object.status.completionTime)", "object.status.succeeded >= 1"),
        "!has(object.status.completionTime)",
    ],
}
MESSAGE_EXPRESSIONS = [
    *("'n=' + object.metadata.name", "string(result)", "object.nope", "1"),
    *("result ? 'ok' : 'bad'", "badcel"),
]
CONDITIONS = ["Ready", "Progressing", "Degraded", "Healthy", "Complete", "Available"]
INVALID = [
    *("cm-int", "cm-list-data", "bad-label", "bad-name", "missing-ns", "dep-str-replicas"),
    *("dep-no-selector", "secret-bad-b64", "unknown-field", "sa-bad-automount", "pod"),
]


def job_strategy(strategy: dict[str, Any] | None) -> dict[str, Any] | None:
    """Jobs are never under ``Update``: OCM PUTs the manifest, without the selector the
    server generated (docs/compatibility.md, "``Update`` on kinds without a typed path")."""
    if strategy is None or strategy["type"] == "Update":
        return {"type": "ServerSideApply"}
    return strategy


class Generator:
    """Random works and random changes to them, from one random source."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.count = 0
        self.unused_pre = list(PRE)
        rng.shuffle(self.unused_pre)

    def name(self, stem: str) -> str:
        """A new object name."""
        self.count += 1
        return f"fz-{stem}-{self.count}"

    def some(self, chance: float, **options: Any) -> dict[str, Any]:
        """Each of ``options`` with probability ``chance``."""
        return {k: v for k, v in options.items() if self.rng.random() < chance}

    def data(self) -> dict[str, str]:
        """ConfigMap data: empty, unicode and markup values among them."""
        keys = self.rng.sample(["a", "b", "c", "d"], self.rng.randint(0, 3))
        return {k: self.rng.choice(["ours", "1", "", "x y", "ünï", "<&>"]) for k in keys}

    def meta(self, name: str, namespaced: bool = True) -> dict[str, Any]:
        """Metadata, sometimes with labels and annotations."""
        meta: dict[str, Any] = {"name": name}
        if namespaced:
            meta["namespace"] = NS
        if self.rng.random() < 0.3:
            key = self.rng.choice(["team", "app", "pre"])
            meta["labels"] = {key: self.rng.choice(["a", "b", "yes"])}
        if self.rng.random() < 0.15:
            meta["annotations"] = {"note": self.rng.choice(["hub", "x"])}
        return meta

    def manifest(self, kind: str | None = None, allow_invalid: bool = True) -> dict[str, Any]:
        """A manifest of ``kind`` (random when None; ``pre``: an object someone else
        wrote, ``invalid``: one the managed cluster refuses)."""
        r = self.rng
        kinds = [*list(GROUPS)[:7], "pre", "invalid"]
        kind = kind or r.choices(kinds, [5, 2, 2, 3, 1, 1, 1, 3, 2 if allow_invalid else 0])[0]
        if kind == "pre":
            return self.pre() if self.unused_pre else self.manifest("ConfigMap")
        if kind == "invalid":
            return self.invalid()
        if kind == "ConfigMap":
            obj = {**configmap(""), "metadata": self.meta(self.name("cm")), "data": self.data()}
            return {**obj, **self.some(0.1, immutable=True, binaryData={"bin": "AAEC"})}
        if kind == "Secret":
            obj = {"apiVersion": "v1", "kind": "Secret", "metadata": self.meta(self.name("sec"))}
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
            obj = {"apiVersion": "v1", "kind": "ServiceAccount"}
            obj["metadata"] = self.meta(self.name("sa"))
            if r.random() < 0.5:
                obj["automountServiceAccountToken"] = r.choice([True, False])
            return obj
        if kind == "Deployment":
            name = self.name("dep")
            image = r.choice(["nginx:1.27", "nginx:1.28"])
            obj = deployment(name, NS, image=image, replicas=r.choice([0, 1, 2, 3]))
            obj["metadata"] = self.meta(name)
            if r.random() < 0.2:
                del obj["spec"]["replicas"]
            obj["spec"].update(self.some(0.15, paused=True, strategy={"type": "Recreate"}))
            return obj
        if kind == "Job":
            obj = harness.job(self.name("job"))
            obj["spec"]["backoffLimit"] = r.choice([0, 2])
            return obj
        if kind == "Namespace":
            meta = self.meta(self.name("ns"), namespaced=False)
            return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}
        verbs = r.sample(["get", "list", "watch"], r.randint(1, 3))
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": self.meta(self.name("cr"), namespaced=False),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}],
        }

    def pre(self) -> dict[str, Any]:
        """A manifest of an object someone else wrote before, with our values."""
        obj = copy.deepcopy(PRE[self.unused_pre.pop()])
        obj["metadata"].pop("labels", None)
        if obj["kind"] == "ConfigMap":
            obj["data"] = self.data() or {"a": "ours"}
        elif obj["kind"] == "Secret":
            obj["data"] = {"a": self.rng.choice(["b3Vycw==", "dGhlaXJz"])}
        else:
            obj["automountServiceAccountToken"] = self.rng.choice([True, False])
        return obj

    def invalid(self) -> dict[str, Any]:
        """A manifest the managed cluster (or the hub's CRD) refuses."""
        which = self.rng.choice(INVALID)
        name = self.name("bad")
        cm = {**configmap(name), "metadata": self.meta(name), "data": {"a": "1"}}
        if which == "cm-int":
            return {**cm, "data": {"a": 1}}
        if which == "cm-list-data":
            return {**cm, "data": ["a"]}
        if which == "bad-label":
            return {**cm, "metadata": {"name": name, "namespace": NS, "labels": {"a": "bad !"}}}
        if which == "bad-name":
            return {**cm, "metadata": {"name": name.upper() + "_X", "namespace": NS}}
        if which == "missing-ns":
            return {**cm, "metadata": {"name": name, "namespace": "fz-missing"}}
        if which == "unknown-field":
            return {**cm, "spec": {"x": 1}}
        if which == "secret-bad-b64":
            return {**cm, "kind": "Secret", "data": {"a": "not base64!"}}
        if which == "sa-bad-automount":
            del cm["data"]
            return {**cm, "kind": "ServiceAccount", "automountServiceAccountToken": "yes"}
        if which == "pod":
            del cm["data"]
            return {**cm, "kind": "Pod", "spec": {"containers": [{"name": "c", "image": ""}]}}
        obj = self.manifest("Deployment")
        if which == "dep-str-replicas":
            obj["spec"]["replicas"] = "two"
        else:
            del obj["spec"]["selector"]
        return obj

    def strategy(self, kind: str) -> dict[str, Any] | None:
        """An update strategy (None: the default)."""
        r = self.rng
        kinds = ["Update", "ServerSideApply", "CreateOnly", "ReadOnly", None]
        t = r.choices(kinds, [1, 3, 1, 1, 3])[0]
        if t is None:
            return None
        strategy: dict[str, Any] = {"type": t}
        if t != "ServerSideApply" or r.random() >= 0.7:
            return strategy
        ssa: dict[str, Any] = {}
        if r.random() < 0.5:
            ssa["force"] = r.choice([True, False])
        if r.random() < 0.3:
            ssa["fieldManager"] = r.choice(["work-agent", "work-agent-fz"])
        if r.random() < 0.5:
            paths = {
                "ConfigMap": [".data.a", ".data"],
                "Deployment": [".spec.replicas"],
                "Secret": [".data"],
            }.get(kind, [".metadata.labels"])
            # jsonPaths only: OCM v1.2.1 has no jsonPointers or jqPathExpressions yet
            # (docs/compatibility.md, "ignoreFields.jsonPointers, ...jqPathExpressions").
            condition = r.choice(["OnSpokePresent", "OnSpokeChange"])
            field = {"condition": condition, "jsonPaths": r.sample(paths, 1)}
            ssa["ignoreFields"] = [field]
        if ssa:
            strategy["serverSideApply"] = ssa
        return strategy

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
        rules = []
        # Sorted: a set's order changes from process to process, the seed's draws must not.
        for condition in sorted({r.choice(CONDITIONS) for _ in range(r.randint(1, 2))}):
            if r.random() < 0.25:
                rule: dict[str, Any] = {"type": "WellKnownConditions", "condition": condition}
            else:
                pool = CEL["any"] + CEL.get(kind, []) * 2
                rule = {"type": "CEL", "condition": condition}
                rule["celExpressions"] = r.sample(pool, r.randint(1, 2))
            if r.random() < 0.3:
                rule["messageExpression"] = r.choice(MESSAGE_EXPRESSIONS)
            elif r.random() < 0.3:
                rule["message"] = "custom"
            rules.append(rule)
        return rules

    def configs(self, manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """manifestConfigs for some of ``manifests`` (always for Jobs)."""
        configs = []
        for m in manifests:
            kind = m.get("kind", "")
            if kind not in GROUPS or (kind != "Job" and self.rng.random() < 0.25):
                continue
            group, resource, namespaced = GROUPS[kind]
            meta = m.get("metadata") or {}
            strategy = self.strategy(kind)
            config = manifest_config(
                group,
                resource,
                str(meta.get("name", "")),
                str(meta.get("namespace", "")) if namespaced else "",
                feedback=self.feedback(kind),
                rules=self.rules(kind),
                strategy=job_strategy(strategy) if kind == "Job" else strategy,
                scrape=self.rng.choice([None, None, "Poll", "Watch"]),
            )
            configs.append(config)
        return configs

    def delete_option(self, manifests: list[dict[str, Any]]) -> dict[str, Any] | None:
        """A delete option (None: the default)."""
        r = self.rng
        policy = r.choices([None, "Foreground", "Orphan", "SelectivelyOrphan"], [4, 1, 1, 2])[0]
        if policy is None:
            return None
        option: dict[str, Any] = {"propagationPolicy": policy}
        if policy == "SelectivelyOrphan":
            rules = []
            for m in manifests:
                if m.get("kind") in GROUPS and r.random() < 0.5:
                    group, resource, namespaced = GROUPS[m["kind"]]
                    name = m["metadata"].get("name", "")
                    rule = {"group": group, "resource": resource, "name": name}
                    rules.append({**rule, "namespace": NS if namespaced else ""})
            if r.random() < 0.2:
                rules.append({"group": "", "resource": "configmaps", "namespace": NS, "name": "no"})
            option["selectivelyOrphans"] = {"orphaningRules": rules}
        return option

    def work(self) -> dict[str, Any]:
        """A work's spec. ``_solo`` marks a work of one manifest of an unknown kind: alone,
        so that nothing beside it is recorded (docs/compatibility.md, "a manifest that
        cannot be resolved")."""
        if self.rng.random() < 0.06:
            meta = {"name": self.name("w"), "namespace": NS}
            widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta}
            return {"workload": {"manifests": [widget]}, "_solo": True}
        manifests = [self.manifest() for _ in range(self.rng.randint(1, 3))]
        spec: dict[str, Any] = {"workload": {"manifests": manifests}}
        configs = self.configs(manifests)
        if configs:
            spec["manifestConfigs"] = configs
        option = self.delete_option(manifests)
        if option:
            spec["deleteOption"] = option
        return spec

    def mutate(self, spec: dict[str, Any]) -> str:
        """Change ``spec`` in place at random; what was done."""
        ops = ["data", "reorder", "strategy", "feedback", "rules", "deleteOption", "drop-config"]
        if not spec.get("_solo"):
            ops += ["add", "add", "remove", "fix-or-break"]
        op = self.rng.choice(ops)
        manifests = spec["workload"]["manifests"]
        if op == "data":
            return self.change_data(manifests)
        if op == "reorder":
            self.rng.shuffle(manifests)
            return "reorder"
        if op == "add":
            manifests.append(self.manifest())
            if self.rng.random() < 0.5 or manifests[-1]["kind"] == "Job":
                spec.setdefault("manifestConfigs", []).extend(self.configs(manifests[-1:]))
            return f"add {describe(manifests[-1])}"
        if op == "remove":
            if len(manifests) <= 1:
                return "noop"
            return f"remove {describe(manifests.pop(self.rng.randrange(len(manifests))))}"
        if op == "fix-or-break":
            i = self.rng.randrange(len(manifests))
            broken = self.rng.random() < 0.5
            manifests[i] = self.manifest("invalid" if broken else None, allow_invalid=False)
            if manifests[i]["kind"] == "Job":
                spec.setdefault("manifestConfigs", []).extend(self.configs(manifests[i : i + 1]))
            return f"replace #{i} with {describe(manifests[i])}"
        if op == "deleteOption":
            option = self.delete_option(manifests)
            set_or_drop(spec, "deleteOption", option)
            return f"deleteOption {(option or {}).get('propagationPolicy', 'default')}"
        configs = spec.get("manifestConfigs") or []
        if not configs:
            spec["manifestConfigs"] = self.configs(manifests)
            return "new configs"
        i = self.rng.randrange(len(configs))
        resource = configs[i]["resourceIdentifier"]["resource"]
        kind = next((k for k, v in GROUPS.items() if v[1] == resource), "")
        if op == "drop-config":
            if kind == "Job":
                return "noop"
            configs.pop(i)
            return "drop one config"
        if op == "strategy":
            strategy = self.strategy(kind)
            set_or_drop(
                configs[i], "updateStrategy", job_strategy(strategy) if kind == "Job" else strategy
            )
        else:
            make = self.feedback if op == "feedback" else self.rules
            set_or_drop(
                configs[i], "feedbackRules" if op == "feedback" else "conditionRules", make(kind)
            )
        return f"{op} of {resource} {configs[i]['resourceIdentifier']['name']}"

    def change_data(self, manifests: list[dict[str, Any]]) -> str:
        """Change the content of one manifest (and sometimes drop its labels)."""
        r = self.rng
        kinds = ("ConfigMap", "Secret", "Deployment", "ServiceAccount", "ClusterRole")
        candidates = [m for m in manifests if m.get("kind") in kinds]
        if not candidates:
            return "noop"
        m = r.choice(candidates)
        if m["kind"] == "ConfigMap" and isinstance(m.get("data"), dict):
            data = m["data"]
            if data and r.random() < 0.4:
                data.pop(r.choice(list(data)))
            else:
                data[r.choice(["a", "b", "e"])] = r.choice(["ours", "changed", ""])
        elif m["kind"] == "Secret":
            m.pop("stringData" if r.random() < 0.5 else "data", None)
            m.setdefault("data", {})["z"] = "eg=="
        elif m["kind"] == "Deployment":
            if r.random() < 0.5:
                m["spec"]["replicas"] = r.choice([0, 1, 2, 4])
            else:
                m["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.29"
        elif m["kind"] == "ServiceAccount":
            if m.pop("automountServiceAccountToken", None) is None:
                m["automountServiceAccountToken"] = False
        elif m["kind"] == "ClusterRole":
            verbs = m["rules"][0]["verbs"]
            m["rules"][0]["verbs"] = ["get"] if len(verbs) > 1 else ["list", "get"]
        if m["metadata"].get("labels") and r.random() < 0.3:
            del m["metadata"]["labels"]
        return f"data of {describe(m)}"


def set_or_drop(mapping: dict[str, Any], key: str, value: Any) -> None:
    """``mapping[key] = value``, or no ``key`` when ``value`` is None."""
    if value is None:
        mapping.pop(key, None)
    else:
        mapping[key] = value


def describe(manifest: dict[str, Any]) -> str:
    """A manifest as its kind and name (never its content)."""
    return f"{manifest.get('kind')} {(manifest.get('metadata') or {}).get('name')}"


def summary(spec: dict[str, Any]) -> str:
    """A work's spec as the kinds and names of its manifests and the options set."""
    manifests = ", ".join(describe(m) for m in spec["workload"]["manifests"])
    configs = len(spec.get("manifestConfigs") or [])
    policy = (spec.get("deleteOption") or {}).get("propagationPolicy", "default")
    return f"[{manifests}] configs={configs} delete={policy}"


def redacted(value: Any) -> Any:
    """``value`` without Secret content: data of Secret objects and feedback values of
    Secret manifests read ``<redacted>``."""
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if not isinstance(value, dict):
        return value
    secret = (
        value.get("kind") == "Secret" or (value.get("resourceMeta") or {}).get("kind") == "Secret"
    )
    hidden = ("data", "stringData", "statusFeedback") if secret else ()
    return {k: "<redacted>" if k in hidden else redacted(v) for k, v in value.items()}


def wording_for(spec: dict[str, Any]) -> dict[str, str]:
    """Our message for a ConfigMap without a namespace -> OCM's (docs/compatibility.md,
    "a namespaced manifest without ``metadata.namespace``")."""
    wording = {}
    for m in spec["workload"]["manifests"]:
        meta = m.get("metadata") or {}
        if m.get("kind") == "ConfigMap" and "namespace" not in meta:
            ours = (
                f'Failed to apply manifest: ConfigMap "{meta.get("name")}" has no '
                "metadata.namespace, but configmaps is namespaced"
            )
            wording[ours] = (
                "Failed to apply manifest: the server does not allow this method on the "
                "requested resource"
            )
    return wording


def comparable_status(case: Case, work: dict[str, Any] | None) -> Any:
    """The side-by-side test's comparable status, without work-level rule aggregates whose
    type no manifest carries (docs/compatibility.md, "a work-level rule condition whose
    manifest left the work": OCM can keep them stale)."""
    same = harness._comparable_as(case, work)
    if same is None:
        return same
    status = same["status"]
    manifests = (status.get("resourceStatus") or {}).get("manifests") or []
    types = {c.get("type") for entry in manifests for c in entry.get("conditions") or []}
    status["conditions"] = [
        c
        for c in status.get("conditions") or []
        if c.get("reason") != "ConditionRulesAggregated" or c.get("type") in types
    ]
    return same


def listed_of(applied: dict[str, Any] | None) -> set[tuple[str, str, str]]:
    """(resource, namespace, name) of what an AppliedManifestWork lists."""
    listed = ((applied or {}).get("status") or {}).get("appliedResources") or []
    return {(r["resource"], r.get("namespace") or "", r["name"]) for r in listed}


def comparable_record(applied: dict[str, Any] | None) -> Any:
    """The side-by-side test's comparable AppliedManifestWork; an emptied list equals no
    list (docs/compatibility.md, "an emptied AppliedManifestWork")."""
    if applied is None:
        return None
    same = harness.comparable_applied(applied)
    if same["status"].get("appliedResources") == []:
        del same["status"]["appliedResources"]
    return same


def settled(case: Case, work: dict[str, Any] | None) -> bool:
    """Settled as the side-by-side test says, or complete: a work-level ``Complete=True``
    stops both agents' apply loops, so its generation may never be applied."""
    if work is None or harness._settled_as(case, work):
        return work is not None
    conditions = (work.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions)


class AgentFuzz:
    """The run: the works as written, and the comparisons after each step."""

    def __init__(self, hub: Hub, run: FuzzRun, rng: random.Random) -> None:
        self.hub = hub
        self.run = run
        self.gen = Generator(rng)
        self.rng = rng
        self.settle = SETTLE
        self.works: dict[str, dict[str, Any]] = {}
        #: Works that differed: they are no longer changed, so one difference is one finding.
        self.diverged: set[str] = set()
        #: Works OCM's side has shown ``Complete`` (its apply loop then waits for a resync).
        self.was_complete: set[str] = set()
        self.created = 0

    async def put(self, name: str, spec: dict[str, Any]) -> bool:
        """Write the work on both sides; False when the hub refuses it."""
        body = {k: v for k, v in spec.items() if not k.startswith("_")}
        try:
            for side in self.hub.sides:
                await self.put_one(side, name, body)
        except Invalid as err:
            self.run.log(f"the hub refused {name}: {str(err)[:300]}")
            return False
        return True

    async def put_one(self, side: Side, name: str, spec: dict[str, Any]) -> None:
        """Create or replace one side's work (again after a conflict with a status write)."""
        for _ in range(20):
            work = await harness.hub_work(self.hub, side, name)
            try:
                if work is None:
                    work = {"apiVersion": MANIFESTWORKS.api_version, "kind": MANIFESTWORKS.kind}
                    work["metadata"] = {"name": name, "namespace": side.cluster}
                    work["spec"] = copy.deepcopy(spec)
                    await self.hub.client.create(MANIFESTWORKS, work, side.cluster)
                else:
                    work["spec"] = copy.deepcopy(spec)
                    await self.hub.client.update(MANIFESTWORKS, work, side.cluster)
                return
            except Conflict:
                await asyncio.sleep(0.2)  # sleep-ok: backing off a conflict
        raise AssertionError(f"work {name} on {side.cluster}: a conflict on every write")

    async def differs(
        self, what: str, check: Callable[[], Awaitable[None]], secret: bool = False
    ) -> bool:
        """Run a comparison; a difference is a finding, with the diff unless it may show
        Secret content."""
        try:
            await check()
        except AssertionError as err:
            first, *diff = str(err).splitlines()
            details = {} if secret else {"diff": diff}
            self.run.finding(f"{what}: {first}", **details)
            return True
        return False

    async def check(self, name: str, after: str) -> None:
        """The work's status, then its AppliedManifestWork and objects, then the status
        again a little later, are the same on both sides."""
        if name in self.diverged:
            return
        settled_alike = await self.compare_status(name, after)
        differs = settled_alike is False
        if settled_alike and name in self.works:
            differs = await self.compare_record(name, after)
            if not differs:
                # Feedback values and rule conditions follow with the status syncs after
                # the apply.
                await asyncio.sleep(3)  # sleep-ok: an observation window
                differs = await self.compare_status(name, f"{after}, later") is False
        if differs:
            self.diverged.add(name)

    async def compare_status(self, name: str, after: str) -> bool | None:
        """Whether the work's status is the same on both sides once settled (None: alike
        but not settled)."""
        spec = self.works.get(name)
        case = Case([], wording=wording_for(spec) if spec else {})

        async def read(side: Side) -> Any:
            work = await harness.hub_work(self.hub, side, name)
            if side is self.hub.ocm and complete(work):
                self.was_complete.add(name)
            return work

        try:
            await harness.same_on_both(
                self.hub,
                f"the status of work {name!r}",
                read,
                functools.partial(comparable_status, case),
                ready=functools.partial(settled, case) if spec else (lambda w: w is None),
                timeout=self.settle,
            )
        except AssertionError as err:
            raw = [await read(side) for side in self.hub.sides]
            if comparable_status(case, raw[0]) == comparable_status(case, raw[1]):
                # Alike, neither settled (e.g. a work-level Complete stopped both apply
                # loops before this generation): not a difference.
                self.run.log(f"{name} after {after}: alike on both sides, not settled")
                return None
            if row := known_lag(raw[0], raw[1], name in self.was_complete):
                # OCM's agent behind for a documented reason (docs/compatibility.md, row).
                self.run.log(f"{name} after {after}: known ({row})")
                self.diverged.add(name)
                return None
            first = str(err).splitlines()[0]
            ocm, ours = (redacted(w and w.get("status")) for w in raw)
            where = summary(spec) if spec else "deleted"
            what = f"the status of {name} after {after}: {first}"
            self.run.finding(what, spec=where, ocm=ocm, ours=ours)
            return False
        return True

    async def compare_record(self, name: str, after: str) -> bool:
        """The AppliedManifestWork and every object it lists are alike; True if not."""

        async def read(side: Side) -> Any:
            return side.unhashed(await harness.applied_work(side, name))

        known: list[str] = []

        async def record() -> None:
            what = f"the AppliedManifestWork of {name!r}"
            try:
                await harness.same_on_both(
                    self.hub, what, read, comparable_record, timeout=self.settle
                )
            except AssertionError:
                ocm, ours = [listed_of(await read(side)) for side in self.hub.sides]
                ocm_work = await harness.hub_work(self.hub, self.hub.ocm, name)
                if not (complete(ocm_work) and ocm < ours):
                    raise
                # docs/compatibility.md, "a generation whose rules complete the work at
                # once": OCM's agent may complete it before recording what it created.
                known.append("OCM's AppliedManifestWork misses objects of a Complete work")

        if await self.differs(f"the AppliedManifestWork of {name} after {after}", record):
            return True
        if known:
            self.run.log(f"{name} after {after}: known ({known[0]})")
            return True
        applied = await harness.applied_work(self.hub.ours, name)
        for res in ((applied or {}).get("status") or {}).get("appliedResources") or []:
            if await self.compare_object(res, f"after {after} of {name}"):
                return True
        return False

    async def compare_object(self, res: dict[str, Any], after: str) -> bool:
        """One managed-cluster object is alike on both sides; True if not."""
        what = f"{res['resource']} {res.get('namespace')}/{res['name']} {after}"
        secret = res["resource"] == "secrets"
        return await self.differs(
            what, lambda: harness.compare_object(self.hub, res, self.settle), secret=secret
        )

    async def listed(self, name: str) -> list[dict[str, Any]]:
        """The resources either side's AppliedManifestWork of ``name`` lists."""
        keys: list[dict[str, Any]] = []
        for side in self.hub.sides:
            applied = await harness.applied_work(side, name)
            for res in ((applied or {}).get("status") or {}).get("appliedResources") or []:
                key = {k: res.get(k) for k in ("group", "version", "resource", "namespace", "name")}
                if key not in keys:
                    keys.append(key)
        return keys

    async def create(self) -> None:
        """A new random work on both sides, compared."""
        self.created += 1
        name = f"fz{self.created}"
        spec = self.gen.work()
        self.run.log(f"create {name}: {summary(spec)}")
        if await self.put(name, spec):
            self.works[name] = spec
            await self.check(name, "create")

    async def delete(self, name: str) -> None:
        """Delete the work on both sides; what it leaves is compared."""
        listed = await self.listed(name)
        spec = self.works.pop(name)
        self.run.log(f"delete {name} ({summary(spec)}), {len(listed)} resources listed")
        for side in self.hub.sides:
            await self.hub.client.delete(MANIFESTWORKS, name, side.cluster)
        await self.check(name, "its deletion")
        for res in listed:
            await self.compare_object(res, f"after the deletion of {name}")

    async def edit_on_spokes(self, name: str) -> None:
        """Someone else edits one of the work's ConfigMaps, Secrets or ServiceAccounts on
        both managed clusters (not Deployments: docs/compatibility.md, "``Update`` on kinds
        without a typed path", OCM's PUT reverts others' fields)."""
        editable = [o for o in await self.listed(name) if o["resource"] in EDITABLE]
        if not editable:
            return
        target = self.rng.choice(editable)
        patch: dict[str, Any] = {"metadata": {"labels": {"edited": "yes"}}}
        if target["resource"] == "configmaps":
            patch["data"] = {"a": "edited", "e": "new"}
        elif target["resource"] == "secrets":
            patch["data"] = {"a": "ZWRpdGVk"}
        self.run.log(f"someone else edits {target['resource']} {target['name']} of {name}")
        for side in self.hub.sides:
            try:
                await side.spoke.patch(
                    EDITABLE[target["resource"]],
                    target["name"],
                    patch,
                    target["namespace"] or None,
                    patch_type="merge",
                    field_manager="someone-else",
                )
            except Exception as err:  # e.g. an immutable ConfigMap: alike on both
                self.run.log(f"the edit failed on {side.cluster}: {type(err).__name__}")

    async def step(self, number: int) -> None:
        """One random step: a new work, a deletion, or a change (perhaps after an edit on
        the managed clusters)."""
        live = [n for n in self.works if n not in self.diverged]
        roll = self.rng.random()
        if not live or (roll < 0.12 and len(self.works) < MAX_WORKS):
            await self.create()
            return
        name = self.rng.choice(live)
        if roll < 0.25:
            await self.delete(name)
            return
        if roll < 0.37:
            await self.edit_on_spokes(name)
        spec = self.works[name]
        old = copy.deepcopy(spec)
        what = self.gen.mutate(spec)
        if normalized(old) == normalized(spec):
            # Equal under Go's semantic equality: neither agent applies it before its
            # periodic resync (4 to 6 min), longer than a comparison waits.
            self.works[name] = old
            return
        self.run.log(f"step {number}: {name}: {what}: {summary(spec)}")
        if not await self.put(name, spec):
            self.works[name] = old
            return
        await self.check(name, f"step {number} ({what})")


@pytest.mark.parametrize("peers", ["kube"], indirect=True)
async def test_random_works_alike(peers: Hub) -> None:
    """Random works, changes and deletions: OCM's agent and ours write the same."""
    hub = peers
    run = fuzz_run("agent", DEFAULT_BUDGET)
    fuzz = AgentFuzz(hub, run, run.rng("works"))
    for side in hub.sides:
        for obj in PRE.values():
            kind = BY_KIND[obj["kind"]]
            name = obj["metadata"]["name"]
            body = copy.deepcopy(obj)
            await side.spoke.patch(
                kind, name, body, NS, patch_type="apply", field_manager="someone-else"
            )
    for _ in range(FIRST_WORKS):
        await fuzz.create()
    step = 0
    while run.left() > 0:
        await fuzz.step(step)
        step += 1
    # Everything once more at the end.
    for name in list(fuzz.works):
        await fuzz.check(name, "the last step")
    run.log(f"done after {step} steps, {len(fuzz.works)} works left")
    run.assert_none()
