"""The ManifestWork examples of OCM's user documentation, OCM's agent and ours side by side.

The harness of :mod:`tests.peers.test_agent_side_by_side` (its ``peers`` fixture on
the ``kube`` driver: one real hub, two real managed clusters with simulated
workload status, OCM's ``work agent`` v1.2.1 on ``cluster-ocm`` and ours on
``cluster-ours``) runs the ``kind: ManifestWork`` examples of the documentation
(the ManifestWork concept page, the "deploy Kubernetes resources" tutorial),
embedded below, and then what the docs tell a user to do next with them:
update the work, read the AppliedManifestWork, read the feedback values and
the condition-rule conditions, delete the work (with ``Orphan`` and
``SelectivelyOrphan``), let two works share a Deployment through server-side
apply, change a field that ``ignoreFields`` leaves to the managed cluster.

Where an example elides something (``metadata: ...``, ``workload: ...``) it is
completed with the docs' running example (the ``hello`` Deployment). Objects
get distinct names where two examples name the same one (``pi``, ``hello``),
since every work of this module goes to the same managed cluster.

Examples the corpus of ``test_agent_side_by_side`` already covers are not
repeated here: the ReadOnly and CreateOnly strategies on a ConfigMap, an
executor with permissions.

Both sides are compared with the helpers of that module: works' status (times
by shape), AppliedManifestWorks (uids masked) and every object they list. The
differences docs/compatibility.md names as deliberate are asserted as such,
where they apply (``DELIBERATE``).

Only the ``kube`` driver: on ``grpc`` OCM's agent (v1.2.1) applies selector-less Jobs
(four examples here) again on the server's resync events and fails them for good
(``spec.selector: ... field is immutable``), depending on timing; the same OCM bug
keeps the ``job`` case of ``test_agent_side_by_side`` on ``kube``.

Runs in the real leg only; ``make ocm`` builds OCM's agent.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from demo.examples import hello_deployment, hello_feedback_rules
from ocmkit.kube import APPLIED_MANIFESTWORKS, CONFIGMAPS, MANIFESTWORKS, NotFound
from ocmkit.kube.resource import (
    CRDS,
    DEPLOYMENTS,
    JOBS,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    SERVICES,
    Resource,
)
from tests.conftest import eventually
from tests.executor.conftest import cluster_role, role, role_binding
from tests.peers.test_agent_side_by_side import (
    NS,
    Case,
    Hub,
    Side,
    _comparable_as,
    _settled_as,
    applied_work,
    comparable_applied,
    comparable_work,
    compare_applied,
    compare_object,
    create_case,
    feedback,
    hub_work,
    peers,
    same_on_both,
)
from tests.support.manifests import configmap, pi_job

pytestmark = pytest.mark.realkube

__all__ = ["peers"]  # the fixture, imported to be used here

#: How long one comparison may take to become equal (both agents answer within seconds,
#: status sync interval 1 s).
SETTLE = 90.0


# -- the examples -------------------------------------------------------------------------


def hello(name: str = "hello") -> dict[str, Any]:
    """The docs' running example: the ``hello`` Deployment (no replicas)."""
    return hello_deployment(name=name)


def deployment_id(name: str) -> dict[str, Any]:
    return {"group": "apps", "resource": "deployments", "namespace": "default", "name": name}


def job_id(name: str) -> dict[str, Any]:
    return {"group": "batch", "resource": "jobs", "namespace": "default", "name": name}


def simple_job(name: str, container: str, image: str, command: list[str]) -> dict[str, Any]:
    """The docs' Jobs of the workload-completion examples (no selector)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": container, "image": image, "command": command}],
                    "restartPolicy": "Never",
                }
            }
        },
    }


def ignore_data(name: str, condition: str, *, force: bool = False) -> Case:
    """The docs' "Ignore fields in Server Side Apply": ConfigMap ``name`` applied with
    ServerSideApply, its ``.data`` ignored ``condition``."""
    strategy: dict[str, Any] = {
        "type": "ServerSideApply",
        "serverSideApply": {"ignoreFields": [{"condition": condition, "jsonPaths": [".data"]}]},
    }
    if force:
        strategy["force"] = True
    identifier = {"resource": "configmaps", "namespace": "default", "name": name}
    return Case(
        [configmap(name, a="hub")],
        {"manifestConfigs": [{"resourceIdentifier": identifier, "updateStrategy": strategy}]},
    )


def machines_role(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The docs' ClusterRole of "Permission setting for work agent": every verb on
    Cluster API machines."""
    verbs = ["get", "list", "watch", "create", "update", "patch", "delete"]
    rules = [{"apiGroups": ["cluster.x-k8s.io"], "resources": ["machines"], "verbs": verbs}]
    return cluster_role(name, rules, labels=labels)


COMPLETE_RULE = [{"type": "WellKnownConditions", "condition": "Complete"}]

#: The docs' custom resource with CEL completion rules (the CRD is created on the
#: managed clusters first, as the docs assume it exists).
CUSTOM = Resource("example.com", "v1", "mycustomresources", "MyCustomResource", True)
CUSTOM_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "mycustomresources.example.com"},
    "spec": {
        "group": "example.com",
        "names": {
            "kind": "MyCustomResource",
            "plural": "mycustomresources",
            "singular": "mycustomresource",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def condition(work: Mapping[str, Any], ordinal: int, ctype: str) -> dict[str, Any] | None:
    """One manifest's condition of this type (None when absent)."""
    for entry in (work.get("status") or {}).get("resourceStatus", {}).get("manifests") or []:
        if entry.get("resourceMeta", {}).get("ordinal") == ordinal:
            for cond in entry.get("conditions") or []:
                if cond.get("type") == ctype:
                    return dict(cond)
    return None


def work_condition(work: Mapping[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (work.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def complete(work: Mapping[str, Any], ordinal: int = 0) -> bool:
    cond = condition(work, ordinal, "Complete")
    return cond is not None and cond.get("status") == "True"


EXAMPLES: dict[str, Case] = {
    # The first example of the concept page, and its status (Applied, Available).
    "hello-work-demo": Case([hello()]),
    # "Fine-grained field values tracking": WellKnownStatus and a filter JSONPath.
    "hello-feedback": Case(
        [hello("hello-fb")],
        {
            "manifestConfigs": [
                {
                    "resourceIdentifier": deployment_id("hello-fb"),
                    "feedbackRules": hello_feedback_rules(),
                }
            ]
        },
        ready=lambda w: (
            feedback(w, 0, "isAvailable") == {"type": "String", "string": "True"}
            and (feedback(w, 0, "AvailableReplicas") or {}).get("integer") == 1
        ),
    ),
    # "Feedback scrape types": Watch.
    "hello-watch": Case(
        [hello("hello-watch")],
        {
            "manifestConfigs": [
                {
                    "resourceIdentifier": deployment_id("hello-watch"),
                    "feedbackScrapeType": "Watch",
                    "feedbackRules": [{"type": "WellKnownStatus"}],
                }
            ]
        },
        ready=lambda w: (feedback(w, 0, "AvailableReplicas") or {}).get("integer") == 1,
    ),
    # "Delete options": Orphan.
    "orphan-work": Case([hello("hello-orphan")], {"deleteOption": {"propagationPolicy": "Orphan"}}),
    # SelectivelyOrphan: the Service helloworld is kept, the Deployment removed.
    "selective-delete-work": Case(
        [
            hello("hello-selective"),
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "helloworld", "namespace": "default"},
                "spec": {"selector": {"app": "hello-selective"}, "ports": [{"port": 80}]},
            },
        ],
        {
            "deleteOption": {
                "propagationPolicy": "SelectivelyOrphan",
                "selectivelyOrphans": {
                    "orphaningRules": [
                        {
                            "group": "",
                            "resource": "services",
                            "namespace": "default",
                            "name": "helloworld",
                        }
                    ]
                },
            }
        },
    ),
    # The first example again, switched to the ServerSideApply strategy later, as a
    # user following the page would do with hello-work-demo.
    "hello-switch": Case([hello("hello-switch")]),
    # "Resource Race and Adoption", step 1 (step 2 comes once it is applied).
    "hello-work-demo-ssa": Case(
        [hello("hello-ssa")],
        {
            "manifestConfigs": [
                {
                    "resourceIdentifier": deployment_id("hello-ssa"),
                    "updateStrategy": {"type": "ServerSideApply"},
                }
            ]
        },
    ),
    # "Permission setting for work agent", option 1 and option 2.
    "permission-set": Case(
        [
            machines_role(
                "open-cluster-management:klusterlet-work:my-role",
                {"open-cluster-management.io/aggregate-to-work": "true"},
            )
        ]
    ),
    "permission-set-binding": Case(
        [
            machines_role("open-cluster-management:klusterlet-work:my-role-2"),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "open-cluster-management:klusterlet-work:my-binding"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "open-cluster-management:klusterlet-work:my-role-2",
                },
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": "klusterlet-work-sa",
                        "namespace": "open-cluster-management-agent",
                    }
                ],
            },
        ]
    ),
    # "Treating defaulting/immutable fields in API": the three Jobs.
    "exmaple-job": Case([pi_job("pi")]),
    "exmaple-job-1": Case([pi_job("pi-manual", manual=True)]),
    "exmaple-job-ssa": Case(
        [pi_job("pi-ssa")],
        {
            "manifestConfigs": [
                {
                    "resourceIdentifier": job_id("pi-ssa"),
                    "updateStrategy": {"type": "ServerSideApply"},
                }
            ]
        },
    ),
    # "Dynamic identity authorization": executor1 does not exist on the managed cluster.
    "example-manifestwork-executor": Case(
        [
            {
                "apiVersion": "v1",
                "data": {"a": "b"},
                "kind": "ConfigMap",
                "metadata": {"namespace": "default", "name": "test"},
            }
        ],
        {
            "executor": {
                "subject": {
                    "type": "ServiceAccount",
                    "serviceAccount": {"namespace": "default", "name": "executor1"},
                }
            }
        },
    ),
    # The tutorial's work (also the clusteradm page's my-first-work, the same spec).
    "example-manifestwork": Case(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"namespace": "default", "name": "my-sa"},
            },
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "namespace": "default",
                    "name": "nginx-deployment",
                    "labels": {"app": "nginx"},
                },
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "nginx"}},
                    "template": {
                        "metadata": {"labels": {"app": "nginx"}},
                        "spec": {
                            "serviceAccountName": "my-sa",
                            "containers": [
                                {
                                    "name": "nginx",
                                    "image": "nginx:1.14.2",
                                    "ports": [{"containerPort": 80}],
                                }
                            ],
                        },
                    },
                },
            },
        ]
    ),
    # "Workload Completion": condition rules.
    "example-job": Case(
        [pi_job("pi-calculation", manual=True)],
        {
            "manifestConfigs": [
                {"resourceIdentifier": job_id("pi-calculation"), "conditionRules": COMPLETE_RULE}
            ]
        },
        ready=complete,
    ),
    "one-time-job": Case(
        [
            simple_job(
                "data-migration", "migrator", "my-migration-tool:latest", ["./migrate-data.sh"]
            )
        ],
        {
            "manifestConfigs": [
                {"resourceIdentifier": job_id("data-migration"), "conditionRules": COMPLETE_RULE}
            ]
        },
        ready=complete,
    ),
    "temp-job-with-cleanup": Case(
        [simple_job("temp-task", "worker", "busybox:latest", ["echo", "Task completed"])],
        {
            "deleteOption": {"ttlSecondsAfterFinished": 30},
            "manifestConfigs": [
                {"resourceIdentifier": job_id("temp-task"), "conditionRules": COMPLETE_RULE}
            ],
        },
        ready=complete,
    ),
    # "Resource Race and Adoption": a second work with the same Deployment (deleted
    # below: the Deployment stays with hello-work-demo).
    "hello-work-demo-twin": Case([hello()]),
    # "Mixed Completion": a rule whose CEL expression is ``false`` on another manifest
    # keeps the work from completing.
    "mixed-completion": Case(
        [
            simple_job("mixed-task", "worker", "busybox:latest", ["echo", "Task completed"]),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "mixed-cm", "namespace": "default"},
                "data": {"a": "1"},
            },
        ],
        {
            "manifestConfigs": [
                {"resourceIdentifier": job_id("mixed-task"), "conditionRules": COMPLETE_RULE},
                {
                    "resourceIdentifier": {
                        "group": "",
                        "resource": "configmaps",
                        "namespace": "default",
                        "name": "mixed-cm",
                    },
                    "conditionRules": [
                        {"type": "CEL", "condition": "Complete", "celExpressions": ["false"]}
                    ],
                },
            ]
        },
        ready=lambda w: complete(w, 0) and condition(w, 1, "Complete") is not None,
    ),
    # "Deleting the ManifestWork": a local resource held "Terminating" (a finalizer)
    # keeps the work and its AppliedManifestWork.
    "held-work": Case(
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "held",
                    "namespace": "default",
                    "finalizers": ["example.com/hold"],
                },
                "data": {"a": "1"},
            }
        ]
    ),
    # "Custom CEL Expressions" on the docs' custom resource (status written below).
    "custom-cel": Case(
        [
            {
                "apiVersion": "example.com/v1",
                "kind": "MyCustomResource",
                "metadata": {"name": "my-custom-resource", "namespace": "default"},
                "spec": {"size": 1},
            }
        ],
        {
            "manifestConfigs": [
                {
                    "resourceIdentifier": {
                        "group": "example.com",
                        "resource": "mycustomresources",
                        "namespace": "default",
                        "name": "my-custom-resource",
                    },
                    "conditionRules": [
                        {
                            "condition": "Complete",
                            "type": "CEL",
                            "celExpressions": [
                                "object.status.conditions.filter(\n"
                                "  c, c.type == 'Complete' || c.type == 'Failed'\n"
                                ").exists(\n"
                                "  c, c.status == 'True'\n"
                                ")\n"
                            ],
                            "messageExpression": 'result ? "Custom resource is complete" : '
                            '"Custom resource is not complete"\n',
                        }
                    ],
                }
            ]
        },
        ready=lambda w: condition(w, 0, "Complete") is not None,
    ),
    # "Ignore fields in Server Side Apply" (the docs' misplaced ``force: true`` is an
    # unknown field the hub prunes; the group is left out as in the docs).
    "hello-work-demo-ignore": ignore_data("some-configmap", "OnSpokePresent", force=True),
    # The same with ``OnSpokeChange``.
    "hello-work-demo-ignore-change": ignore_data("some-configmap-2", "OnSpokeChange"),
}

#: "ReadOnly": only the metadata of the manifest; the feedback read from the Deployment
#: of hello-work-demo (created once that Deployment exists: OCM's agent records a
#: ReadOnly object in the AppliedManifestWork only if it exists when it reconciles the
#: work, and reconciles it again only on its periodic resync).
READ_ONLY = Case(
    [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "hello", "namespace": "default"},
        }
    ],
    {
        "manifestConfigs": [
            {
                "resourceIdentifier": deployment_id("hello"),
                "updateStrategy": {"type": "ReadOnly"},
                "feedbackRules": [{"type": "WellKnownStatus"}],
            }
        ]
    },
    ready=lambda w: (feedback(w, 0, "AvailableReplicas") or {}).get("integer") == 1,
)

#: Step 2 of "Resource Race and Adoption": a second work owning only ``replicas``.
REPLICA_PATCH = Case(
    [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "hello-ssa", "namespace": "default"},
            "spec": {"replicas": 3},
        }
    ],
    {
        "manifestConfigs": [
            {
                "resourceIdentifier": deployment_id("hello-ssa"),
                "updateStrategy": {
                    "type": "ServerSideApply",
                    "serverSideApply": {"force": True, "fieldManager": "work-agent-another"},
                },
            }
        ]
    },
)


# -- comparing ------------------------------------------------------------------------------


class Findings:
    """Comparisons that failed, kept so that one run reports them all."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    async def check(self, what: str, step: Callable[[], Awaitable[Any]]) -> None:
        try:
            await step()
        except AssertionError as err:
            self.problems.append(f"== {what}\n{err}")


async def deleted_object_comes_back_under_ours(hub: Hub) -> None:
    """``mixed-cm`` deleted on both managed clusters: OCM's agent reports it missing,
    ours creates it again (a new uid)."""
    old_uid = (await hub.ours.spoke.get(CONFIGMAPS, "mixed-cm", NS))["metadata"]["uid"]
    for side in hub.sides:
        await side.spoke.delete(CONFIGMAPS, "mixed-cm", NS)

    async def ocm_reports_it_missing() -> bool:
        work = await hub_work(hub, hub.ocm, "mixed-completion")
        return (condition(work or {}, 1, "Available") or {}).get("status") == "False"

    async def ours_created_it_again() -> bool:
        try:
            obj = await hub.ours.spoke.get(CONFIGMAPS, "mixed-cm", NS)
        except NotFound:
            return False
        work = await hub_work(hub, hub.ours, "mixed-completion")
        available = condition(work or {}, 1, "Available") or {}
        return obj["metadata"]["uid"] != old_uid and available.get("status") == "True"

    await eventually(ocm_reports_it_missing, timeout=SETTLE, what="OCM's agent to report it")
    await eventually(ours_created_it_again, timeout=SETTLE, what="ours to create it again")


async def works_alike(
    hub: Hub, name: str, case: Case, timeout: float = SETTLE, *, applied: bool = True
) -> None:
    """Work ``name``'s status, once settled, is the same on both sides (``applied``
    False: once the case is ready, whether or not the generation is applied)."""

    async def read(side: Side) -> dict[str, Any] | None:
        return await hub_work(hub, side, name)

    def ready(work: dict[str, Any] | None) -> bool:
        if not applied:
            return work is not None and case.ready(work)
        return _settled_as(case, work)

    await same_on_both(
        hub,
        f"the status of work {name!r}",
        read,
        functools.partial(_comparable_as, case),
        ready=ready,
        timeout=timeout,
    )


async def object_alike(hub: Hub, res: Mapping[str, Any], timeout: float = SETTLE) -> None:
    """One managed-cluster object is the same on both sides (or absent on both)."""
    await compare_object(hub, res, timeout)


async def applied_alike(hub: Hub, name: str, timeout: float = SETTLE) -> None:
    """Work ``name``'s AppliedManifestWork and every object it lists are the same on
    both sides."""
    await compare_applied(hub, [name], timeout)


def obj_ref(
    group: str, version: str, resource: str, name: str, namespace: str = NS
) -> dict[str, Any]:
    return {
        "group": group,
        "version": version,
        "resource": resource,
        "namespace": namespace,
        "name": name,
    }


async def change_work(hub: Hub, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    """A new generation of work ``name`` on both sides: ``change`` edits its spec."""
    for side in hub.sides:
        work = await hub.client.get(MANIFESTWORKS, name, side.cluster)
        change(work["spec"])
        await hub.client.patch(MANIFESTWORKS, name, {"spec": work["spec"]}, side.cluster)


async def delete_work(hub: Hub, name: str) -> None:
    """Delete work ``name`` on both sides; returns once it is gone from both."""
    for side in hub.sides:
        await hub.client.delete(MANIFESTWORKS, name, side.cluster)

    async def read(side: Side) -> Any:
        return None if await hub_work(hub, side, name) is None else "still there"

    await same_on_both(
        hub, f"work {name!r} deleted", read, lambda v: v, ready=lambda v: v is None, timeout=SETTLE
    )


def manifests(*items: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(spec: dict[str, Any]) -> None:
        spec["workload"]["manifests"] = [copy.deepcopy(i) for i in items]

    return change


# -- the scenario ---------------------------------------------------------------------------


@pytest.mark.timeout(600)
@pytest.mark.parametrize("peers", ["kube"], indirect=True)
async def test_seed_examples_same_on_both(peers: Hub) -> None:
    hub = peers
    found = Findings()

    # What the docs assume exists on the managed cluster: the custom resource's CRD.
    for side in hub.sides:
        await side.spoke.create(CRDS, copy.deepcopy(CUSTOM_CRD))

    async def crd_served(side: Side) -> bool:
        try:
            await side.spoke.list(CUSTOM, NS)
        except Exception:
            return False
        return True

    for side in hub.sides:
        await eventually(functools.partial(crd_served, side), timeout=30, what="the CRD served")

    # 1. Every example, created alike on both sides.
    for name, case in EXAMPLES.items():
        await create_case(hub, name, case)
    for name, case in EXAMPLES.items():
        await found.check(f"status of {name}", functools.partial(works_alike, hub, name, case))
    for name in EXAMPLES:
        await found.check(f"applied of {name}", functools.partial(applied_alike, hub, name))

    # `kubectl get appliedmanifestwork`: <hub hash>-<work name>, on both sides.
    for side in hub.sides:
        names = {
            a["metadata"]["name"] for a in (await side.spoke.list(APPLIED_MANIFESTWORKS))["items"]
        }
        assert {f"{side.hub_hash}-{n}" for n in EXAMPLES} <= names, (side.cluster, names)

    # ReadOnly on the Deployment hello-work-demo applied.
    await create_case(hub, "hello-read-only", READ_ONLY)
    await found.check("read-only", lambda: works_alike(hub, "hello-read-only", READ_ONLY))
    await found.check("read-only applied", lambda: applied_alike(hub, "hello-read-only"))

    # 2. The custom resource completes: its status is written on the managed clusters.
    for side in hub.sides:
        await side.spoke.patch(
            CUSTOM,
            "my-custom-resource",
            {"status": {"conditions": [{"type": "Complete", "status": "True"}]}},
            NS,
            subresource="status",
        )
    custom_done = Case(
        EXAMPLES["custom-cel"].manifests, EXAMPLES["custom-cel"].spec, ready=complete
    )
    await found.check("custom-cel completed", lambda: works_alike(hub, "custom-cel", custom_done))

    # 3. Resource race: the second work takes ``replicas`` over (force, its own manager).
    await create_case(hub, "hello-work-replica-patch", REPLICA_PATCH)
    await found.check(
        "replica patch", lambda: works_alike(hub, "hello-work-replica-patch", REPLICA_PATCH)
    )
    await found.check(
        "replica patch applied", lambda: applied_alike(hub, "hello-work-replica-patch")
    )
    # ... and the first work, updated to set replicas too, reports the conflict.
    with_replicas = hello("hello-ssa")
    with_replicas["spec"]["replicas"] = 2
    await change_work(hub, "hello-work-demo-ssa", manifests(with_replicas))
    await found.check(
        "ssa conflict",
        lambda: works_alike(hub, "hello-work-demo-ssa", EXAMPLES["hello-work-demo-ssa"]),
    )
    await found.check(
        "ssa conflict object",
        lambda: object_alike(hub, obj_ref("apps", "v1", "deployments", "hello-ssa")),
    )

    # 4. Updates the docs describe.
    # The tutorial: "update either the image name of the deployment or the replicas".
    tutorial = copy.deepcopy(EXAMPLES["example-manifestwork"].manifests)
    tutorial[1]["spec"]["replicas"] = 2
    tutorial[1]["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.16.1"
    await change_work(hub, "example-manifestwork", manifests(*tutorial))

    # The Jobs: a new generation (a label) of each.
    def relabel(spec: dict[str, Any]) -> None:
        spec["workload"]["manifests"][0]["metadata"]["labels"] = {"generation": "2"}

    for name in ("exmaple-job", "exmaple-job-1", "exmaple-job-ssa", "one-time-job"):
        await change_work(hub, name, relabel)
    # Watch feedback follows a change of the Deployment.
    watched = hello("hello-watch")
    watched["spec"]["replicas"] = 2
    await change_work(hub, "hello-watch", manifests(watched))
    # ignoreFields: another actor and the work both change ``.data``.
    for side in hub.sides:
        for cm in ("some-configmap", "some-configmap-2"):
            await side.spoke.patch(
                CONFIGMAPS, cm, {"data": {"a": "spoke", "b": "spoke"}}, NS, field_manager="someone"
            )
    for name, cm in (
        ("hello-work-demo-ignore", "some-configmap"),
        ("hello-work-demo-ignore-change", "some-configmap-2"),
    ):
        await change_work(
            hub,
            name,
            manifests(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": cm, "namespace": "default"},
                    "data": {"a": "hub2"},
                }
            ),
        )
    # "User creates a ManifestWork with ServerSideApply specified": the strategy of an
    # applied work changes from Update to ServerSideApply.
    switched_spec = {
        "manifestConfigs": [
            {
                "resourceIdentifier": deployment_id("hello-switch"),
                "updateStrategy": {"type": "ServerSideApply"},
            }
        ]
    }
    await change_work(hub, "hello-switch", lambda spec: spec.update(copy.deepcopy(switched_spec)))
    # Mixed completion: the ConfigMap (not complete) still follows the work.
    await change_work(
        hub,
        "mixed-completion",
        lambda spec: spec["workload"]["manifests"][1].update(data={"a": "2"}),
    )
    # The executor gets what it needs on the managed clusters.
    for side in hub.sides:
        for kind, obj in EXECUTOR_RBAC:
            await side.spoke.create(kind, copy.deepcopy(obj), NS)

    watch_case = Case(
        [watched],
        EXAMPLES["hello-watch"].spec,
        ready=lambda w: (feedback(w, 0, "AvailableReplicas") or {}).get("integer") == 2,
    )
    executed = Case(
        EXAMPLES["example-manifestwork-executor"].manifests,
        EXAMPLES["example-manifestwork-executor"].spec,
        ready=lambda w: (condition(w, 0, "Applied") or {}).get("status") == "True",
    )
    updated = {
        "example-manifestwork": EXAMPLES["example-manifestwork"],
        "exmaple-job-1": EXAMPLES["exmaple-job-1"],
        "exmaple-job-ssa": EXAMPLES["exmaple-job-ssa"],
        "hello-watch": watch_case,
        "hello-work-demo-ignore": EXAMPLES["hello-work-demo-ignore"],
        "hello-work-demo-ignore-change": EXAMPLES["hello-work-demo-ignore-change"],
        "example-manifestwork-executor": executed,
        "mixed-completion": EXAMPLES["mixed-completion"],
        "hello-switch": Case(EXAMPLES["hello-switch"].manifests, switched_spec),
    }
    for name, case in updated.items():
        await found.check(f"updated {name}", functools.partial(works_alike, hub, name, case))
    for name in updated:
        await found.check(f"updated applied {name}", functools.partial(applied_alike, hub, name))
    # A completed Job is not updated any more ("Completion Behavior").
    await found.check(
        "updated one-time-job",
        lambda: works_alike(hub, "one-time-job", EXAMPLES["one-time-job"], applied=False),
    )
    await found.check("updated applied one-time-job", lambda: applied_alike(hub, "one-time-job"))
    # The docs' Job without a selector: deliberately applied by us, failed by OCM.
    await found.check("defaulting job", lambda: defaulting_job(hub))

    # 5. Objects deleted on the managed clusters: a completed Job is not recreated.
    for side in hub.sides:
        await side.spoke.delete(JOBS, "data-migration", NS)
    gone = Case(
        EXAMPLES["one-time-job"].manifests,
        EXAMPLES["one-time-job"].spec,
        ready=lambda w: (condition(w, 0, "Available") or {}).get("status") != "True",
    )
    await found.check(
        "completed job deleted on the spoke",
        lambda: works_alike(hub, "one-time-job", gone, 30, applied=False),
    )
    await found.check(
        "completed job not recreated",
        lambda: object_alike(hub, obj_ref("batch", "v1", "jobs", "data-migration")),
    )

    # Watch back to Poll ("the work agent automatically cleans up the informers"): the
    # feedback still follows.
    polled = hello("hello-watch")
    polled["spec"]["replicas"] = 3

    def to_poll(spec: dict[str, Any]) -> None:
        spec["workload"]["manifests"] = [copy.deepcopy(polled)]
        spec["manifestConfigs"][0]["feedbackScrapeType"] = "Poll"

    await change_work(hub, "hello-watch", to_poll)
    poll_case = Case(
        [polled],
        EXAMPLES["hello-watch"].spec,
        ready=lambda w: (feedback(w, 0, "AvailableReplicas") or {}).get("integer") == 3,
    )
    await found.check("watch to poll", lambda: works_alike(hub, "hello-watch", poll_case))
    # An applied object deleted on the managed clusters (docs/compatibility.md): OCM's
    # agent reports it missing and recreates it at its periodic resync, minutes later
    # (not waited for here); ours recreates it after its next status sync. The work's
    # next generation brings both to the same state.
    await found.check("deleted object", lambda: deleted_object_comes_back_under_ours(hub))
    await change_work(
        hub,
        "mixed-completion",
        lambda spec: spec["workload"]["manifests"][1].update(data={"a": "3"}),
    )
    back = Case(
        EXAMPLES["mixed-completion"].manifests,
        EXAMPLES["mixed-completion"].spec,
        ready=lambda w: (condition(w, 1, "Available") or {}).get("status") == "True",
    )
    await found.check(
        "deleted object recreated", lambda: works_alike(hub, "mixed-completion", back)
    )
    await found.check("recreated object", lambda: applied_alike(hub, "mixed-completion"))

    # A work whose object is held Terminating stays, with its AppliedManifestWork.
    await found.check("held work", lambda: held_deletion(hub))

    # 6. Deletion: Orphan keeps the Deployment, SelectivelyOrphan the Service; the
    # Deployments another work also holds stay; the tutorial's objects go.
    deleted = (
        "orphan-work",
        "selective-delete-work",
        "hello-work-replica-patch",
        "hello-work-demo-twin",
        "hello-read-only",
        "example-manifestwork",
    )
    for name in deleted:
        await found.check(f"delete {name}", functools.partial(delete_work, hub, name))
    for ref in (
        obj_ref("apps", "v1", "deployments", "hello-orphan"),
        obj_ref("apps", "v1", "deployments", "hello-selective"),
        obj_ref("", "v1", "services", "helloworld"),
        obj_ref("apps", "v1", "deployments", "hello-ssa"),
        obj_ref("apps", "v1", "deployments", "hello"),
        obj_ref("apps", "v1", "deployments", "nginx-deployment"),
        obj_ref("", "v1", "serviceaccounts", "my-sa"),
    ):
        await found.check(
            f"after deletion {ref['name']}", functools.partial(object_alike, hub, ref)
        )
    for name in deleted:
        for side in hub.sides:
            assert await applied_work(side, name) is None, (side.cluster, name)
    for name in ("hello-work-demo-ssa", "hello-work-demo"):
        await found.check(
            f"{name} after the other work's deletion",
            functools.partial(works_alike, hub, name, EXAMPLES[name]),
        )
    for side in hub.sides:
        kept = {o["metadata"]["name"] for o in (await side.spoke.list(DEPLOYMENTS, NS))["items"]}
        assert {"hello-orphan", "hello", "hello-ssa"} <= kept, (side.cluster, kept)
        assert not {"hello-selective", "nginx-deployment"} & kept, (side.cluster, kept)
        await side.spoke.get(SERVICES, "helloworld", NS)

    assert not found.problems, "\n\n".join(found.problems)


#: The executor of the docs' example, allowed to manage ConfigMaps in ``default``.
EXECUTOR_RBAC: list[tuple[Resource, dict[str, Any]]] = [
    (
        SERVICE_ACCOUNTS,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "executor1"}},
    ),
    (
        ROLES,
        role("executor1", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}], NS),
    ),
    (
        ROLE_BINDINGS,
        role_binding(
            "executor1",
            "executor1",
            namespace=NS,
            subjects=[{"kind": "ServiceAccount", "name": "executor1", "namespace": NS}],
        ),
    ),
]


async def defaulting_job(hub: Hub) -> None:
    """The docs' Job without a selector, updated: OCM's agent PUTs the manifest and the
    API server refuses the selector it defaulted (``AppliedManifestFailed``, as the docs
    say); ours lays the manifest over the live Job and applies it. Deliberate
    (docs/compatibility.md, "`Update` on kinds without a typed path")."""
    seen: dict[str, Any] = {}

    async def check() -> bool:
        ocm = await hub_work(hub, hub.ocm, "exmaple-job")
        ours = await hub_work(hub, hub.ours, "exmaple-job")
        seen["ocm"] = condition(ocm or {}, 0, "Applied")
        seen["ours"] = condition(ours or {}, 0, "Applied")
        return (
            seen["ocm"] is not None
            and seen["ours"] is not None
            and seen["ocm"].get("observedGeneration") == 2
            and seen["ocm"]["status"] == "False"
            and seen["ocm"]["reason"] == "AppliedManifestFailed"
            and "field is immutable" in seen["ocm"]["message"]
            and seen["ours"].get("observedGeneration") == 2
            and seen["ours"]["status"] == "True"
            and seen["ours"]["reason"] == "AppliedManifestComplete"
        )

    try:
        await eventually(check, timeout=SETTLE, what="the defaulting Job's outcomes")
    except AssertionError as err:
        raise AssertionError(f"{err}: {seen}") from None
    ocm_job = await hub.ocm.spoke.get(JOBS, "pi", NS)
    ours_job = await hub.ours.spoke.get(JOBS, "pi", NS)
    assert "generation" not in (ocm_job["metadata"].get("labels") or {})
    assert ours_job["metadata"]["labels"]["generation"] == "2"


async def held_deletion(hub: Hub) -> None:
    """Delete ``held-work``, whose ConfigMap has a finalizer: the work and the
    AppliedManifestWork stay, being deleted, alike on both sides, until the finalizer
    goes; then both go."""
    for side in hub.sides:
        await hub.client.delete(MANIFESTWORKS, "held-work", side.cluster)

    async def read(side: Side) -> dict[str, Any]:
        return {
            "work": await hub_work(hub, side, "held-work"),
            "applied": side.unhashed(await applied_work(side, "held-work")),
        }

    def deleting(obj: Mapping[str, Any] | None) -> bool | None:
        return None if obj is None else bool(obj["metadata"].get("deletionTimestamp"))

    def normalize(value: dict[str, Any]) -> dict[str, Any]:
        work, applied = value["work"], value["applied"]
        return {
            "work": None
            if work is None
            else {"deleting": deleting(work), **comparable_work(work, {})},
            "applied": None
            if applied is None
            else {"deleting": deleting(applied), **comparable_applied(applied)},
        }

    await same_on_both(
        hub,
        "the held work being deleted",
        read,
        normalize,
        ready=lambda v: bool(deleting(v["work"])) and bool(deleting(v["applied"])),
        timeout=SETTLE,
    )
    await object_alike(hub, obj_ref("", "v1", "configmaps", "held"))
    for side in hub.sides:
        await side.spoke.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, NS)

    async def gone(side: Side) -> Any:
        work = await hub_work(hub, side, "held-work")
        applied = await applied_work(side, "held-work")
        return None if work is None and applied is None else "still there"

    await same_on_both(
        hub, "the held work gone", gone, lambda v: v, ready=lambda v: v is None, timeout=SETTLE
    )
    await object_alike(hub, obj_ref("", "v1", "configmaps", "held"))


#: "TTL and Automatic Garbage Collection": the docs elide the Job (``# ... job
#: specification``), which leaves a Job manifest with neither name nor namespace.
ELIDED_JOB = Case(
    [{"apiVersion": "batch/v1", "kind": "Job"}],
    {
        "deleteOption": {"ttlSecondsAfterFinished": 300},
        "manifestConfigs": [
            {"resourceIdentifier": job_id("my-job"), "conditionRules": COMPLETE_RULE}
        ],
    },
    # Our wording for a manifest without a name (docs/compatibility.md, "a manifest
    # without metadata.name") -> what OCM's agent writes when the namespace is missing too.
    wording={
        "Failed to apply manifest: the Job manifest has no metadata.name": (
            "Failed to apply manifest: name is required"
        )
    },
)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("peers", ["kube"], indirect=True)
async def test_elided_job_example(peers: Hub) -> None:
    await create_case(peers, "job-with-cleanup", ELIDED_JOB)
    await works_alike(peers, "job-with-cleanup", ELIDED_JOB, 30)
    await applied_alike(peers, "job-with-cleanup", 30)
