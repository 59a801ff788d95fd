"""Random ManifestWorks for the agent, grpcserver and mqtt areas, and changes to them.

One seeded generator (``Generator``) draws works of ConfigMaps, Secrets,
ServiceAccounts, Deployments, Jobs, Namespaces, ClusterRoles, objects someone else
wrote first (``PRE``, written by ``write_pre``), an unknown kind and invalid
manifests, with update strategies, feedback rules, condition rules, scrape types and
delete options; then changes them (content, order, manifests added, removed, broken
and fixed, configs and options redrawn). Its options leave out what one area cannot
compare (see ``Generator``). Logs name manifests by ``outline`` and works by
``spec_outline``, never by content. Beside it: the objects a work's
AppliedManifestWorks list (``listed``) and someone else's edits of them
(``edit_on_spokes``).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Collection, Iterable
from typing import Any

from ocmkit.kube import CONFIGMAPS, SECRETS, SERVICE_ACCOUNTS
from ocmkit.kube.resource import DEPLOYMENTS
from tests.peers.test_agent_side_by_side import NS, Hub, Side, applied_work
from tests.support.manifests import configmap, deployment, manifest_config

#: Objects on both managed clusters before any work, written by "someone-else" (for
#: conflicts and takeovers).
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
#: plural -> resource, of what PRE holds and what someone else edits on the clusters.
RESOURCES = {r.plural: r for r in (CONFIGMAPS, SECRETS, SERVICE_ACCOUNTS, DEPLOYMENTS)}
#: What someone else changes of an object on the managed clusters, besides a label.
SPOKE_EDITS: dict[str, dict[str, Any]] = {
    "configmaps": {"data": {"a": "edited", "e": "new"}},
    "secrets": {"data": {"a": "ZWRpdGVk"}},
    "deployments": {"spec": {"replicas": 5}},
}
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
#: Feedback paths per kind that every area draws.
PATHS = {
    "ConfigMap": [
        *(".data", ".data.a", ".data.b", ".metadata.labels", ".metadata.name"),
        *("{.data.a}", ".data[*]", ".binaryData", ".immutable"),
    ],
    "Secret": [".type", ".metadata.name"],
    "ServiceAccount": [".automountServiceAccountToken", ".metadata.name", ".secrets"],
    "Deployment": [
        *(".spec.replicas", ".status.readyReplicas", ".status.replicas"),
        *(".spec.template.spec.containers[0].image", ".spec.paused", ".spec.strategy"),
        '.status.conditions[?(@.type=="Available")].status',
        *("..image", ".spec.template.spec.containers[*].name", ".metadata.generation"),
        ".status.observedGeneration",
    ],
    "Job": [
        *(".status.succeeded", ".spec.backoffLimit", ".spec.completions"),
        '.status.conditions[?(@.type=="Complete")].status',
        ".spec.template.spec.containers[0].command",
    ],
    "Namespace": [".status.phase", ".metadata.labels", ".spec.finalizers"],
    "ClusterRole": [".rules", ".rules[0].verbs", ".rules[0].verbs[0]", ".metadata.labels"],
    "Widget": [".spec"],
}
#: Paths that read a Secret's data (``secret_feedback``).
SECRET_PATHS = [".data", ".data.a", ".stringData"]
#: Paths to a list of conditions (not with ``raw_feedback``).
CONDITION_PATHS = {"Deployment": [".status.conditions"], "Job": [".status.conditions"]}
#: Paths on any kind, odd or broken ones among them.
ODD_PATHS = [
    *(".nothing.here", "bad[", "{.data.a", ".metadata.uid[0]", ".metadata.annotations"),
    *('.metadata.labels["pre"]', ".kind", "$.metadata.name", ".spec.x.y.z"),
    "{range .data}{end}",
]
#: A descent through a whole object (``descent``).
DESCENT_PATHS = ["..", ".[*]"]
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
#: Condition rules' types (and ``Available`` with ``available_rule``).
CONDITIONS = ["Ready", "Progressing", "Degraded", "Healthy", "Complete"]
#: Manifests the managed cluster (or the hub's CRD) refuses.
INVALID = [
    *("cm-int", "cm-list-data", "bad-label", "bad-name", "missing-ns", "dep-str-replicas"),
    *("dep-no-selector", "secret-bad-b64", "unknown-field", "sa-bad-automount", "pod"),
]


class Generator:
    """Random work specs and changes to them, from one seeded random source.

    What docs/compatibility.md says differs visibly is not generated. Never a Job under
    ``Update``: OCM's agent PUTs the manifest again, which a Job's immutable selector
    refuses; with our agent on one side it does so where ours does not (row "`Update`
    on kinds without a typed path"), through OCM's server it applies every new work
    twice (row "first status of a work").

    The options say what the area can compare (the defaults: what the mqtt area takes):

    - ``our_agent`` (our agent serves one side; agent, mqtt): an unknown kind only
      alone (row "a manifest that cannot be resolved (unknown kind)"), ``ignoreFields``
      by ``jsonPaths`` only (row "`ignoreFields.jsonPointers`,
      `ignoreFields.jqPathExpressions`"). Otherwise (OCM's agent through both servers;
      grpcserver): no Namespace under ``ServerSideApply``, whose second apply gives it
      a ``before-first-apply`` managedFields entry (row "first status of a work").
    - ``raw_feedback`` (the agents run with ``RawFeedbackJsonString``; grpcserver): no
      ``.status.conditions`` feedback, whose value then holds each cluster's times.
    - ``secret_feedback`` (findings redact Secret content; agent): feedback paths on a
      Secret's data. Elsewhere the run's log must not carry it.
    - ``descent`` (off in every area): ``..`` and ``.[*]`` on a whole object. OCM's
      agent orders their values by Go's random map order, so its own two runs differ
      (grpcserver seed 91: the same ServiceAccount's values in two orders behind the
      two servers), and their values hold each cluster's uids and times.
    - ``available_rule`` (agent): condition rules named ``Available``. Over gRPC and
      MQTT, such a rule makes OCM v1.2.1's agent rewrite the manifest's built-in
      condition on every sync and storm status events (thousands a minute), which
      starves its apply of new generations for minutes (an OCM bug: ours writes one
      status per sync for such a work).
    """

    def __init__(
        self,
        rng: random.Random,
        *,
        our_agent: bool,
        raw_feedback: bool = False,
        secret_feedback: bool = False,
        descent: bool = False,
        available_rule: bool = False,
    ) -> None:
        self.rng = rng
        self.our_agent = our_agent
        self.count = 0
        self.unused_pre = sorted(PRE)
        rng.shuffle(self.unused_pre)
        self.odd_paths = ODD_PATHS + (DESCENT_PATHS if descent else [])
        self.paths = {kind: PATHS.get(kind, []) + self.odd_paths for kind in GROUPS}
        if secret_feedback:
            self.paths["Secret"] += SECRET_PATHS
        if not raw_feedback:
            for kind, paths in CONDITION_PATHS.items():
                self.paths[kind] += paths
        self.conditions = CONDITIONS + (["Available"] if available_rule else [])

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

    def obj(self, api_version: str, kind: str, name: str, **body: Any) -> dict[str, Any]:
        """A namespaced object with random metadata."""
        return {"apiVersion": api_version, "kind": kind, "metadata": self.meta(name), **body}

    def manifest(self, kind: str = "", allow_invalid: bool = True) -> dict[str, Any]:
        """A manifest of ``kind`` (random when empty; ``pre``: an object someone else
        wrote, ``invalid``: one the managed cluster refuses)."""
        r = self.rng
        kinds = [*list(GROUPS)[:7], "pre", "invalid"]
        kind = kind or r.choices(kinds, [5, 2, 2, 3, 1, 1, 1, 3, 2 if allow_invalid else 0])[0]
        if kind == "pre":
            return self.pre() if self.unused_pre else self.manifest("ConfigMap")
        if kind == "invalid":
            return self.invalid(r.choice(INVALID))
        if kind == "ConfigMap":
            obj = self.obj("v1", kind, self.name("cm"), data=self.data())
            return {**obj, **self.some(0.1, immutable=True, binaryData={"bin": "AAEC"})}
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

    def pre(self) -> dict[str, Any]:
        """A manifest of an object someone else wrote first, with our values."""
        obj = copy.deepcopy(PRE[self.unused_pre.pop()])
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
        image = r.choice(["nginx:1.27", "nginx:1.28"])
        obj = deployment(name, NS, image=image, replicas=r.choice([0, 1, 2, 3]))
        obj["metadata"] = self.meta(name)
        if r.random() < 0.2:
            del obj["spec"]["replicas"]
        obj["spec"].update(self.some(0.15, paused=True, strategy={"type": "Recreate"}))
        return obj

    def invalid(self, which: str) -> dict[str, Any]:
        """A manifest the managed cluster (or the hub's CRD) refuses, as ``which`` says."""
        name = self.name("bad")
        if which in ("dep-str-replicas", "dep-no-selector"):
            dep = self.deployment()
            if which == "dep-str-replicas":
                dep["spec"]["replicas"] = "two"
            else:
                del dep["spec"]["selector"]
            return dep
        bodies: dict[str, tuple[str, dict[str, Any]]] = {
            "cm-int": ("ConfigMap", {"data": {"a": 1}}),
            "cm-list-data": ("ConfigMap", {"data": ["a"]}),
            "secret-bad-b64": ("Secret", {"data": {"a": "not base64!"}}),
            "unknown-field": ("ConfigMap", {"data": {"a": "1"}, "spec": {"x": 1}}),
            "sa-bad-automount": ("ServiceAccount", {"automountServiceAccountToken": "yes"}),
            "pod": ("Pod", {"spec": {"containers": [{"name": "c", "image": ""}]}}),
        }
        if which in bodies:
            kind, body = bodies[which]
            return self.obj("v1", kind, name, **body)
        meta: dict[str, Any] = {"name": name, "namespace": NS}
        if which == "bad-label":
            meta["labels"] = {"a": "bad value!"}
        elif which == "bad-name":
            meta["name"] = name.upper() + "_X"
        else:  # missing-ns
            meta["namespace"] = "fz-missing"
        return {**configmap(name), "metadata": meta, "data": {"a": "1"}}

    def strategy(self, kind: str) -> dict[str, Any] | None:
        """An update strategy (None: the default)."""
        r = self.rng
        types = ["Update", "ServerSideApply", "CreateOnly", "ReadOnly", None]
        t = r.choices(types, [1, 3, 1, 1, 3])[0]
        if kind == "Job" and t in (None, "Update"):
            t = "ServerSideApply"  # see the class
        elif kind == "Namespace" and t == "ServerSideApply" and not self.our_agent:
            t = None
        if t is None:
            return None
        strategy: dict[str, Any] = {"type": t}
        if t != "ServerSideApply" or r.random() < 0.3:
            return strategy
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
            pool = self.paths.get(kind, self.odd_paths)
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
        rules: list[dict[str, Any]] = []
        for condition in dict.fromkeys(r.choice(self.conditions) for _ in range(r.randint(1, 2))):
            if r.random() < 0.25:
                rule: dict[str, Any] = {"type": "WellKnownConditions", "condition": condition}
            else:
                exprs = r.sample(CEL["any"] + CEL.get(kind, []) * 2, r.randint(1, 2))
                rule = {"type": "CEL", "condition": condition, "celExpressions": exprs}
            if r.random() < 0.3:
                rule["messageExpression"] = r.choice(MESSAGE_EXPRESSIONS)
            elif r.random() < 0.3:
                rule["message"] = "custom"
            rules.append(rule)
        return rules

    def configs(self, manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``manifestConfigs`` for some of ``manifests`` (always for Jobs)."""
        configs = []
        for m in manifests:
            kind = m.get("kind", "")
            if kind not in GROUPS or (kind != "Job" and self.rng.random() < 0.25):
                continue
            group, resource, namespaced = GROUPS[kind]
            meta = m.get("metadata") or {}
            config = manifest_config(
                group,
                resource,
                str(meta.get("name", "")),
                str(meta.get("namespace", "")) if namespaced else "",
                feedback=self.feedback(kind),
                rules=self.rules(kind),
                strategy=self.strategy(kind),
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
            if r.random() < 0.2:  # one that names nothing
                absent = {"group": "", "resource": "configmaps", "name": "fz-nothing"}
                rules.append({**absent, "namespace": NS})
            option["selectivelyOrphans"] = {"orphaningRules": rules}
        return option

    def work(self) -> dict[str, Any]:
        """A work's spec. ``_solo`` marks a work of one manifest of an unknown kind: alone,
        so that nothing beside it is recorded (with ``our_agent``)."""
        if self.rng.random() < 0.06:
            meta = {"name": self.name("w"), "namespace": NS}
            widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta}
            if self.our_agent:
                return {"workload": {"manifests": [widget]}, "_solo": True}
            return {"workload": {"manifests": [widget, self.manifest()]}}
        manifests = [self.manifest() for _ in range(self.rng.randint(1, 3))]
        spec: dict[str, Any] = {"workload": {"manifests": manifests}}
        configs = self.configs(manifests)
        if configs:
            spec["manifestConfigs"] = configs
        option = self.delete_option(manifests)
        if option:
            spec["deleteOption"] = option
        return spec

    # -- changes ----------------------------------------------------------------------

    def mutate(self, spec: dict[str, Any]) -> str:
        """Change ``spec`` in place at random; what was done (``noop``: nothing)."""
        r = self.rng
        ops = ["data", "reorder", "strategy", "feedback", "rules", "deleteOption", "drop-config"]
        if not spec.get("_solo"):
            ops += ["add", "add", "remove", "fix-or-break"]
        op = r.choice(ops)
        manifests = spec["workload"]["manifests"]
        if op == "data":
            return self.change_data(manifests)
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
            manifests[i] = self.manifest("invalid" if r.random() < 0.5 else "", allow_invalid=False)
            if manifests[i]["kind"] == "Job":
                spec.setdefault("manifestConfigs", []).extend(self.configs(manifests[i : i + 1]))
            return f"replace #{i} with {outline(manifests[i])}"
        if op == "deleteOption":
            option = self.delete_option(manifests)
            set_or_drop(spec, "deleteOption", option)
            return f"deleteOption {(option or {}).get('propagationPolicy', 'default')}"
        configs = spec.get("manifestConfigs") or []
        if not configs:
            spec["manifestConfigs"] = self.configs(manifests)
            return "new configs"
        i = r.randrange(len(configs))
        resource = configs[i]["resourceIdentifier"]["resource"]
        kind = next((k for k, v in GROUPS.items() if v[1] == resource), "")
        if op == "drop-config":
            if kind == "Job":
                return "noop"  # a Job keeps its strategy (see the class)
            configs.pop(i)
            return "drop one config"
        key, make = {
            "strategy": ("updateStrategy", self.strategy),
            "feedback": ("feedbackRules", self.feedback),
            "rules": ("conditionRules", self.rules),
        }[op]
        set_or_drop(configs[i], key, make(kind))
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
                data.pop(r.choice(sorted(data)))
            else:
                data[r.choice(["a", "b", "e"])] = r.choice(["ours", "changed", ""])
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
        return f"data of {outline(m)}"


def set_or_drop(mapping: dict[str, Any], key: str, value: Any) -> None:
    """``mapping[key] = value``, or no ``key`` when ``value`` is None."""
    if value is None:
        mapping.pop(key, None)
    else:
        mapping[key] = value


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


async def write_pre(sides: Iterable[Side]) -> None:
    """Someone else writes PRE on every side's managed cluster (server-side apply)."""
    for side in sides:
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


async def edit_on_spokes(
    hub: Hub, name: str, rng: random.Random, resources: Collection[str], log: Callable[[str], None]
) -> bool:
    """Someone else edits one object of work ``name`` whose resource is in ``resources``
    alike on both managed clusters (a label, and data or replicas); False: none listed."""
    objs = [o for o in await listed(hub, name) if o["resource"] in resources]
    if not objs:
        return False
    o = rng.choice(objs)
    log(f"someone else edits {o['resource']} {o['name']} of {name}")
    patch = {"metadata": {"labels": {"edited": "yes"}}, **SPOKE_EDITS.get(o["resource"], {})}
    for side in hub.sides:
        try:
            await side.spoke.patch(
                RESOURCES[o["resource"]],
                o["name"],
                patch,
                o["namespace"] or None,
                patch_type="merge",
                field_manager="someone-else",
            )
        except Exception as err:  # e.g. an immutable ConfigMap: refused alike, compared later
            log(f"  the edit failed on {side.cluster}: {type(err).__name__}: {str(err)[:200]}")
    return True
