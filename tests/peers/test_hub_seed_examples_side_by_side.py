"""The ManifestWorkReplicaSet examples of OCM's user documentation, side by side.

OCM's Go hub manager (``work manager``, v1.2.1) and ours run on two real hubs
(the ``hubs`` fixture of ``tests/peers/test_hub_side_by_side.py``). This module
plays scheduler (Placements, PlacementDecisions with decision groups) and agent
(work conditions) alike on both and drives, step by step:

* the docs' ``mwrset-cronjob`` example (its template verbatim) with the three
  placements it refers to (All, Progressive with mandatory decision groups,
  ProgressivePerGroup), spelled with ``type:`` (the API field) and small
  durations, group after group until rolled out, then with failures and a
  timed-out mandatory cluster;
* Progressive with ``maxConcurrency`` as a count and as percentages, ``maxFailures``,
  ``progressDeadline`` (made deterministic with back-dated condition times),
  ``minSuccessTime``, mandatory groups by index and by a name spanning two
  indexes, a template update;
* ProgressivePerGroup with ``maxFailures`` as a percentage;
* the ``ManifestworkApplied`` reasons and summary counts; the replica set
  created before its placement and decisions; Foreground deletion; label
  changes, a placement reference removed, a placement deleted; works edited,
  deleted, or held by a finalizer; decisions changing mid-rollout; the docs'
  hello Deployment with ``creationTimestamp: null``; TTL collection of the docs'
  completed works.

The agent's part always writes a work-level ``Progressing`` condition: without
one OCM's manager never passes a first batch (a deliberate difference). Compared
at each step, once both sides have settled (OCM's timing with minSuccessTime
and progressDeadline is not deterministic enough to compare transient states):
the works by cluster (labels, annotations, owners, spec; not names) and the
replica set's status (conditions without times and observedGeneration, counts
with absent ones as 0, placement summaries). Condition messages are compared
too, except where ours names a problem OCM leaves unsaid (deliberate).

Differences are pinned, not hidden: the docs' verbatim ``rolloutType:``, works
without ``Progressing``, ``maxFailures`` above a group's size (all listed in
docs/compatibility.md), and two names OCM v1.2.1 cannot serve (a dot in the
name; an owner label over 63 characters), listed there too.

Runs in the real leg only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ocmkit.kube import MANIFESTWORK_REPLICASETS, MANIFESTWORKS, NAMESPACES, PLACEMENTS, NotFound
from tests.conftest import eventually
from tests.hub.test_replicaset import NS, Hub
from tests.peers import test_hub_side_by_side as harness
from tests.peers.test_hub_side_by_side import (
    Hubs,
    comparable_status,
    comparable_works,
    create_completed,
    same_on_both,
    work_names,
)
from tests.support.prepare import typed

pytestmark = pytest.mark.realkube

#: The harness's fixture: OCM's manager on one real hub, ours on another.
hubs = harness.hubs

# -- the docs' example (OCM docs, "ManifestWorkReplicaSet", mwrset-cronjob) ------------------

CRONJOB_TEMPLATE: dict[str, Any] = {
    "deleteOption": {
        "propagationPolicy": "SelectivelyOrphan",
        "selectivelyOrphans": {
            "orphaningRules": [
                {"group": "", "name": "ocm-ns", "namespace": "", "resource": "Namespace"}
            ]
        },
    },
    "manifestConfigs": [
        {
            "feedbackRules": [
                {
                    "jsonPaths": [
                        {"name": "lastScheduleTime", "path": ".status.lastScheduleTime"},
                        {"name": "lastSuccessfulTime", "path": ".status.lastSuccessfulTime"},
                    ],
                    "type": "JSONPaths",
                }
            ],
            "resourceIdentifier": {
                "group": "batch",
                "name": "sync-cronjob",
                "namespace": "ocm-ns",
                "resource": "cronjobs",
            },
        }
    ],
    "workload": {
        "manifests": [
            {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "ocm-ns"}},
            {
                "kind": "CronJob",
                "apiVersion": "batch/v1",
                "metadata": {"name": "sync-cronjob", "namespace": "ocm-ns"},
                "spec": {
                    "schedule": "* * * * *",
                    "concurrencyPolicy": "Allow",
                    "suspend": False,
                    "jobTemplate": {
                        "spec": {
                            "backoffLimit": 2,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "hello",
                                            "image": "quay.io/prometheus/busybox:latest",
                                            "args": [
                                                "/bin/sh",
                                                "-c",
                                                "date; echo Hello from the Kubernetes cluster",
                                            ],
                                        }
                                    ]
                                }
                            },
                        }
                    },
                },
            },
        ]
    },
}

ALL = "placement-rollout-all"
PROG = "placement-rollout-progressive"
PER_GROUP = "placement-rollout-progressive-per-group"


def cronjob_refs(spelling: str, min_success: str, deadline: str) -> list[dict[str, Any]]:
    """The example's placementRefs; ``spelling`` is ``type`` or the docs' ``rolloutType``."""
    return [
        {"name": ALL, "rolloutStrategy": {spelling: "All"}},
        {
            "name": PROG,
            "rolloutStrategy": {
                spelling: "Progressive",
                "progressive": {
                    "minSuccessTime": min_success,
                    "progressDeadline": deadline,
                    "maxFailures": "5%",
                    "mandatoryDecisionGroups": [
                        {"groupName": "prod-canary-west"},
                        {"groupName": "prod-canary-east"},
                    ],
                },
            },
        },
        {
            "name": PER_GROUP,
            "rolloutStrategy": {
                spelling: "ProgressivePerGroup",
                "progressivePerGroup": {"progressDeadline": deadline, "maxFailures": 2},
            },
        },
    ]


# Disjoint clusters per placement, so that each cluster has one work of the replica set.
ALL_CLUSTERS = ["all-1", "all-2"]
PROG_GROUPS = [
    ("prod-canary-west", ["west-1"]),
    ("prod-canary-east", ["east-1"]),
    ("prod", ["prod-1", "prod-2", "prod-3"]),
]
PG_GROUPS = [("g0", ["pg-1", "pg-2"]), ("g1", ["pg-3"]), ("g2", ["pg-4"])]
EXAMPLE_CLUSTERS = ALL_CLUSTERS + [c for _, m in PROG_GROUPS + PG_GROUPS for c in m]

# -- helpers on top of the harness ---------------------------------------------------------


async def add_clusters(hubs: Hubs, clusters: Sequence[str]) -> None:
    """Cluster namespaces on both hubs (the fixture makes cluster1..3 only)."""
    for hub in hubs.both:
        for name in clusters:
            await hub.client.create(NAMESPACES, {"metadata": {"name": name}})


async def replica_set(
    hub: Hub, name: str, refs: list[dict[str, Any]], template: dict[str, Any]
) -> None:
    """A replica set as a user writes it (labels of the docs' example: none)."""
    body = typed(
        MANIFESTWORK_REPLICASETS,
        metadata={"name": name, "namespace": NS},
        spec={"placementRefs": refs, "manifestWorkTemplate": copy.deepcopy(template)},
    )
    await hub.client.create(MANIFESTWORK_REPLICASETS, body, NS)


def works_reader(rs: str) -> Callable[[Hub], Any]:
    async def read(hub: Hub) -> Any:
        return comparable_works(await hub.works(rs))

    return read


def status_reader(rs: str) -> Callable[[Hub], Any]:
    async def read(hub: Hub) -> Any:
        try:
            return comparable_status(await hub.get_rs(rs))
        except NotFound:
            return None

    return read


def clusters_are(clusters: Sequence[str]) -> Callable[[Any], bool]:
    return lambda works: sorted(works) == sorted(clusters)


def status_is(
    conditions: dict[str, tuple[str, str]] | None = None, **counts: int
) -> Callable[[Any], bool]:
    """Ready when these conditions have (status, reason) and the summary these counts."""

    def ready(status: Any) -> bool:
        if not status:
            return False
        found = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
        if any(found.get(kind) != want for kind, want in (conditions or {}).items()):
            return False
        return all(status["summary"][key] == value for key, value in counts.items())

    return ready


async def same_works(hubs: Hubs, rs: str, clusters: Sequence[str], what: str) -> None:
    await same_on_both(hubs, what, works_reader(rs), clusters_are(clusters))


async def same_status(
    hubs: Hubs,
    rs: str,
    what: str,
    conditions: dict[str, tuple[str, str]] | None = None,
    **counts: int,
) -> Any:
    await same_on_both(hubs, what, status_reader(rs), status_is(conditions, **counts))
    return await status_reader(rs)(hubs.ours)


async def report(
    hubs: Hubs,
    rs: str,
    clusters: Sequence[str],
    *,
    applied: str = "True",
    available: str | None = "True",
    progressing: str | None = "False",
    degraded: str | None = None,
    ago: float = 0,
) -> None:
    """The agent's conditions on these clusters' works, on both hubs alike, for each
    work's current generation; ``ago`` back-dates their transition times (an agent keeps a
    condition's time while its status holds, so old times are ordinary)."""
    for hub in hubs.both:
        works = await hub.works(rs)
        for cluster in clusters:
            await hub.report(
                works[cluster],
                applied=applied,
                available=available,
                progressing=progressing,
                degraded=degraded,
                ago=ago,
            )


def succeed(hubs: Hubs, rs: str, clusters: Sequence[str]) -> Any:
    return report(hubs, rs, clusters)


def fail(hubs: Hubs, rs: str, clusters: Sequence[str], ago: float = 0) -> Any:
    """Applied, but progressing and degraded: a failed cluster in OCM's rollout."""
    return report(
        hubs, rs, clusters, available="False", progressing="True", degraded="True", ago=ago
    )


def in_progress(hubs: Hubs, rs: str, clusters: Sequence[str], ago: float = 0) -> Any:
    """Applied, still progressing, not available yet."""
    return report(hubs, rs, clusters, available="False", progressing="True", ago=ago)


VERIFIED = ("True", "AsExpected")
ROLLING = ("False", "Progressing")
ROLLED_OUT = ("True", "Complete")
APPLIED_OK = ("True", "AsExpected")
NOT_AS_EXPECTED = ("False", "NotAsExpected")
PROCESSING = ("False", "Processing")


def conds(rolled: tuple[str, str], applied: tuple[str, str]) -> dict[str, tuple[str, str]]:
    return {
        "PlacementVerified": VERIFIED,
        "PlacementRolledOut": rolled,
        "ManifestworkApplied": applied,
    }


async def setup_example(hubs: Hubs, spelling: str, min_success: str, deadline: str) -> None:
    await add_clusters(hubs, EXAMPLE_CLUSTERS)
    for hub in hubs.both:
        await hub.placement(ALL, [("", ALL_CLUSTERS)])
        await hub.placement(PROG, PROG_GROUPS)
        await hub.placement(PER_GROUP, PG_GROUPS)
        refs = cronjob_refs(spelling, min_success, deadline)
        await replica_set(hub, "mwrset-cronjob", refs, CRONJOB_TEMPLATE)


def placement_summary(status: Any) -> dict[str, Any]:
    return {
        p["name"]: (p["availableDecisionGroups"], p["summary"]) for p in status["placementSummary"]
    }


# -- the docs' example, step by step --------------------------------------------------------


async def test_docs_cronjob_example_rolls_out_group_by_group_alike(hubs: Hubs) -> None:
    rs = "mwrset-cronjob"
    await setup_example(hubs, "type", min_success="2s", deadline="10m")

    # First round: All everywhere, the first mandatory group, the first group.
    first = [*ALL_CLUSTERS, "west-1", "pg-1", "pg-2"]
    await same_works(hubs, rs, first, "the first works of the example")
    await same_status(
        hubs, rs, "the status before any agent reports", conds(ROLLING, NOT_AS_EXPECTED), total=5
    )

    # All succeed: after the soak, the second mandatory group; the next group at once.
    await succeed(hubs, rs, first)
    second = [*first, "east-1", "pg-3"]
    await same_works(hubs, rs, second, "the works after the first round succeeded")
    await same_status(
        hubs,
        rs,
        "the status of the second round",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=7,
        applied=5,
        available=5,
    )

    # The mandatory groups done: the rest of the progressive placement at once (no
    # maxConcurrency), and the last group of the other.
    await succeed(hubs, rs, ["east-1", "pg-3"])
    await same_works(hubs, rs, EXAMPLE_CLUSTERS, "the works once the mandatory groups passed")
    await same_status(
        hubs,
        rs,
        "the status of the third round",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=11,
        applied=7,
        available=7,
    )

    # One cluster progressing: counted, Processing.
    await in_progress(hubs, rs, ["prod-1"])
    await same_status(
        hubs,
        rs,
        "the status with one cluster progressing",
        conds(ROLLING, PROCESSING),
        total=11,
        applied=8,
        progressing=1,
    )
    await succeed(hubs, rs, EXAMPLE_CLUSTERS)
    status = await same_status(
        hubs,
        rs,
        "the status once rolled out",
        conds(ROLLED_OUT, APPLIED_OK),
        total=11,
        applied=11,
        available=11,
        progressing=0,
        degraded=0,
    )
    assert placement_summary(status) == {
        ALL: ("1 (2 / 2 clusters applied)", _n(2)),
        PROG: ("3 (5 / 5 clusters applied)", _n(5)),
        PER_GROUP: ("3 (4 / 4 clusters applied)", _n(4)),
    }

    # A cluster of the all placement degrades: counts and ManifestworkApplied follow.
    await report(hubs, rs, ["all-1"], progressing="True", degraded="True")
    await same_status(
        hubs,
        rs,
        "the status with a degraded cluster",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=11,
        degraded=1,
        progressing=1,
    )


def _n(total: int) -> dict[str, int]:
    return {
        "total": total,
        "applied": total,
        "available": total,
        "degraded": 0,
        "progressing": 0,
        "desiredTotal": 0,
        "updated": 0,
    }


async def test_docs_cronjob_example_verbatim(hubs: Hubs) -> None:
    """The example as the docs write it (``rolloutType:``). The API server prunes that
    field and defaults ``type: All``: OCM rolls every placement out at once; ours honours
    ``rolloutType`` (deliberate, docs/compatibility.md). Both agree on the All placement;
    the difference is pinned."""
    rs = "mwrset-cronjob"
    await setup_example(hubs, "rolloutType", min_success="5m", deadline="10m")

    stored = (await hubs.ocm.get_rs(rs))["spec"]["placementRefs"]
    assert all("rolloutType" not in ref["rolloutStrategy"] for ref in stored)
    assert {ref["rolloutStrategy"]["type"] for ref in stored} == {"All"}

    async def all_placement(hub: Hub) -> Any:
        return comparable_works(await hub.works(rs, ALL))

    await same_on_both(hubs, "the All placement's works", all_placement, clusters_are(ALL_CLUSTERS))
    ocm_expected = EXAMPLE_CLUSTERS
    ours_expected = [*ALL_CLUSTERS, "west-1", "pg-1", "pg-2"]
    await same_on_both(
        hubs,
        "PlacementVerified",
        lambda hub: _condition(hub, rs, "PlacementVerified"),
        lambda c: c == VERIFIED,
    )
    # Settled: OCM everywhere at once, ours the first step of each progressive strategy.
    for hub, expected in ((hubs.ocm, ocm_expected), (hubs.ours, ours_expected)):

        async def settled(hub: Hub = hub, expected: Sequence[str] = expected) -> Any:
            return sorted(await hub.works(rs)) == sorted(expected)

        who = "OCM's hub" if hub is hubs.ocm else "our hub"
        await eventually(settled, timeout=60, what=f"the verbatim example's works on {who}")


async def _condition(hub: Hub, rs: str, kind: str) -> Any:
    found = await hub.condition(rs, kind)
    return None if found is None else (found["status"], found["reason"])


# -- Progressive: maxConcurrency as a percentage, maxFailures, progressDeadline --------------


async def test_progressive_percent_concurrency_failures_and_deadline(hubs: Hubs) -> None:
    """Deadlines are made deterministic by back-dated condition times: a cluster whose
    Progressing/Degraded turned a minute ago is past a 30s progressDeadline at once."""
    rs = "rs"
    clusters = ["cluster1", "cluster2", "cluster3", "cluster4", "cluster5"]
    await add_clusters(hubs, clusters[3:])
    strategy = {
        "type": "Progressive",
        "progressive": {"maxConcurrency": "40%", "maxFailures": 1, "progressDeadline": "30s"},
    }
    for hub in hubs.both:
        await hub.placement("p", [("", clusters)])
        await replica_set(hub, rs, [{"name": "p", "rolloutStrategy": strategy}], CRONJOB_TEMPLATE)

    # 40% of 5: two at a time.
    await same_works(hubs, rs, clusters[:2], "the first batch (40% of 5)")
    await same_status(
        hubs, rs, "the first batch's status", conds(ROLLING, NOT_AS_EXPECTED), total=2
    )

    # cluster1 failed past its deadline (timed out: one failure, tolerated, not in
    # flight), cluster2 succeeded: two free slots.
    await fail(hubs, rs, ["cluster1"], ago=60)
    await succeed(hubs, rs, ["cluster2"])
    await same_works(hubs, rs, clusters[:4], "the works after a time-out and a success")
    await same_status(
        hubs,
        rs,
        "the status with a timed-out cluster",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=4,
        applied=2,
        available=1,
        degraded=1,
        progressing=1,
    )

    # cluster3 progressing within its deadline, cluster4 past it: two failures, more than
    # maxFailures: cluster5 is not started (it would be, one slot being free).
    await in_progress(hubs, rs, ["cluster3"])
    await in_progress(hubs, rs, ["cluster4"], ago=60)
    await same_status(
        hubs,
        rs,
        "the status past maxFailures",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=4,
        applied=4,
        available=1,
        degraded=1,
        progressing=3,
    )
    await same_works(hubs, rs, clusters[:4], "the works past maxFailures")

    # cluster1 recovers: one failure left (cluster4), within maxFailures; cluster3 still in
    # flight, one slot: cluster5.
    await succeed(hubs, rs, ["cluster1"])
    await same_works(hubs, rs, clusters, "the works after cluster1 recovered")
    await succeed(hubs, rs, clusters)
    await same_status(
        hubs,
        rs,
        "the status once every cluster succeeded",
        conds(ROLLED_OUT, APPLIED_OK),
        total=5,
        applied=5,
        available=5,
    )


async def test_progressive_count_concurrency_mandatory_group_index_and_update(
    hubs: Hubs,
) -> None:
    rs = "rs"
    every = ["cluster1", "cluster2", "cluster3", "cluster4", "cluster5"]
    groups = [("canary", ["cluster3"]), ("rest", ["cluster1", "cluster2", "cluster4", "cluster5"])]
    await add_clusters(hubs, ["cluster4", "cluster5"])
    strategy = {
        "type": "Progressive",
        "progressive": {
            "maxConcurrency": 3,
            "minSuccessTime": "1s",
            "mandatoryDecisionGroups": [{"groupIndex": 0}],
        },
    }
    for hub in hubs.both:
        await hub.placement("p", groups)
        await replica_set(hub, rs, [{"name": "p", "rolloutStrategy": strategy}], CRONJOB_TEMPLATE)
    await same_works(hubs, rs, ["cluster3"], "the mandatory group (by index) alone")
    await succeed(hubs, rs, ["cluster3"])
    await same_works(hubs, rs, ["cluster1", "cluster2", "cluster3", "cluster4"], "three more")
    await same_status(
        hubs, rs, "the second batch's status", conds(ROLLING, NOT_AS_EXPECTED), total=4, applied=1
    )
    await succeed(hubs, rs, ["cluster1", "cluster2", "cluster4"])
    await same_works(hubs, rs, every, "all")
    await succeed(hubs, rs, ["cluster5"])
    await same_status(
        hubs, rs, "rolled out", conds(ROLLED_OUT, APPLIED_OK), total=5, applied=5, available=5
    )

    # A new template: rolled out again the same way, the mandatory group first.
    template = copy.deepcopy(CRONJOB_TEMPLATE)
    template["workload"]["manifests"][1]["spec"]["schedule"] = "*/5 * * * *"
    for hub in hubs.both:
        await hub.client.patch(
            MANIFESTWORK_REPLICASETS, rs, {"spec": {"manifestWorkTemplate": template}}, NS
        )

    async def schedules(hub: Hub) -> Any:
        works = await hub.works(rs)
        return {
            cluster: work["spec"]["workload"]["manifests"][1]["spec"]["schedule"]
            for cluster, work in works.items()
        }

    def updated(clusters: Sequence[str]) -> Callable[[Any], bool]:
        return lambda found: (
            sorted(c for c, v in found.items() if v == "*/5 * * * *") == sorted(clusters)
        )

    await same_on_both(hubs, "the canary updated first", schedules, updated(["cluster3"]))
    await same_on_both(hubs, "the updated works", works_reader(rs), lambda w: len(w) == 5)
    # Outdated works are not counted; stale conditions of updated ones are (OCM ignores
    # observedGeneration there).
    await same_status(hubs, rs, "one work up to date", {"PlacementRolledOut": ROLLING}, total=1)
    await succeed(hubs, rs, ["cluster3"])
    batch = ["cluster1", "cluster2", "cluster3", "cluster4"]
    await same_on_both(hubs, "three more updated", schedules, updated(batch))
    await same_status(hubs, rs, "four up to date", {"PlacementRolledOut": ROLLING}, total=4)
    await succeed(hubs, rs, ["cluster1", "cluster2", "cluster4"])
    await same_on_both(hubs, "every work updated", schedules, updated(every))
    await succeed(hubs, rs, ["cluster5"])
    await same_status(
        hubs, rs, "the update rolled out", conds(ROLLED_OUT, APPLIED_OK), total=5, applied=5
    )


# -- ProgressivePerGroup: maxFailures as a percentage ----------------------------------------


async def test_progressive_per_group_percent_failures(hubs: Hubs) -> None:
    rs = "rs"
    groups = [
        ("g0", ["cluster1", "cluster2"]),
        ("g1", ["cluster3", "cluster4"]),
        ("g2", ["cluster5"]),
    ]
    await add_clusters(hubs, ["cluster4", "cluster5"])
    strategy = {"type": "ProgressivePerGroup", "progressivePerGroup": {"maxFailures": "50%"}}
    for hub in hubs.both:
        await hub.placement("p", groups)
        await replica_set(hub, rs, [{"name": "p", "rolloutStrategy": strategy}], CRONJOB_TEMPLATE)

    await same_works(hubs, rs, ["cluster1", "cluster2"], "the first group")
    # One failure of two is within 50%: the next group goes.
    await fail(hubs, rs, ["cluster1"])
    await succeed(hubs, rs, ["cluster2"])
    await same_works(hubs, rs, ["cluster1", "cluster2", "cluster3", "cluster4"], "the second group")
    await same_status(
        hubs,
        rs,
        "the status with a failed cluster in the first group",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=4,
        applied=2,
        available=1,
        degraded=1,
        progressing=1,
    )
    # Both of the second group fail: 2 > 50% of 2, the rollout stops there.
    await fail(hubs, rs, ["cluster3", "cluster4"])
    await same_status(
        hubs,
        rs,
        "the status past maxFailures",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=4,
        applied=4,
        degraded=3,
        progressing=3,
    )
    await same_works(hubs, rs, ["cluster1", "cluster2", "cluster3", "cluster4"], "no third group")
    # They recover: the last group.
    await succeed(hubs, rs, ["cluster1", "cluster3", "cluster4"])
    await same_works(hubs, rs, ["cluster1", "cluster2", "cluster3", "cluster4", "cluster5"], "all")
    await succeed(hubs, rs, ["cluster5"])
    status = await same_status(
        hubs, rs, "rolled out", conds(ROLLED_OUT, APPLIED_OK), total=5, applied=5, available=5
    )
    assert placement_summary(status) == {"p": ("3 (5 / 5 clusters applied)", _n(5))}


# -- ManifestworkApplied reasons under All ---------------------------------------------------


async def test_all_manifestwork_applied_reasons_and_counts(hubs: Hubs) -> None:
    rs = "rs"
    clusters = ["cluster1", "cluster2", "cluster3"]
    for hub in hubs.both:
        await hub.placement("p", [("", clusters)])
        await replica_set(
            hub, rs, [{"name": "p", "rolloutStrategy": {"type": "All"}}], CRONJOB_TEMPLATE
        )
    await same_works(hubs, rs, clusters, "every work at once")
    await same_status(hubs, rs, "nothing reported", conds(ROLLING, NOT_AS_EXPECTED), total=3)

    # Progressing, nothing degraded: Processing.
    await in_progress(hubs, rs, clusters)
    await same_status(
        hubs, rs, "all progressing", conds(ROLLING, PROCESSING), total=3, applied=3, progressing=3
    )
    # Applied False on one (the agent could not apply it): no longer applied.
    await report(hubs, rs, ["cluster2"], applied="False", available=None, progressing=None)
    await same_status(
        hubs, rs, "one not applied", conds(ROLLING, PROCESSING), total=3, applied=2, progressing=2
    )
    # (A work Available without a Progressing condition is rolled out for ours, not for
    # OCM: deliberate, docs/compatibility.md; not compared.)
    await succeed(hubs, rs, clusters)
    await same_status(
        hubs, rs, "rolled out", conds(ROLLED_OUT, APPLIED_OK), total=3, applied=3, available=3
    )
    # A cluster leaves: its work goes, the counts follow.
    for hub in hubs.both:
        await hub.decide("p", [("", clusters[:2])])
    await same_works(hubs, rs, clusters[:2], "the works after cluster3 left")
    status = await same_status(
        hubs, rs, "after cluster3 left", conds(ROLLED_OUT, APPLIED_OK), total=2, applied=2
    )
    assert placement_summary(status) == {"p": ("1 (2 / 2 clusters applied)", _n(2))}


# -- the docs' order: the replica set first, then its placement, its decisions ---------------


def without_messages(read: Callable[[Hub], Any]) -> Callable[[Hub], Any]:
    """A status reader that drops condition messages (ours names the problem, OCM's are
    empty: deliberate, docs/compatibility.md)."""

    async def stripped(hub: Hub) -> Any:
        status = await read(hub)
        for condition in (status or {}).get("conditions") or []:
            condition.pop("message", None)
        return status

    return stripped


async def test_replica_set_before_its_placement_then_foreground_deletion(hubs: Hubs) -> None:
    rs = "rs"
    clusters = ["cluster1", "cluster2"]
    for hub in hubs.both:
        body = typed(
            MANIFESTWORK_REPLICASETS,
            metadata={"name": rs, "namespace": NS},
            spec={
                "placementRefs": [{"name": "p", "rolloutStrategy": {"type": "All"}}],
                "manifestWorkTemplate": copy.deepcopy(CRONJOB_TEMPLATE),
                "cascadeDeletionPolicy": "Foreground",
            },
        )
        await hub.client.create(MANIFESTWORK_REPLICASETS, body, NS)
    status = without_messages(status_reader(rs))
    await same_on_both(
        hubs,
        "the status without the placement",
        status,
        status_is({"PlacementVerified": ("False", "PlacementDecisionNotFound")}),
    )
    # The scheduler has not decided yet.
    for hub in hubs.both:
        await hub.placement("p", [])
    await same_on_both(
        hubs,
        "the status without decisions",
        status,
        status_is(
            {
                "PlacementVerified": ("False", "PlacementDecisionEmpty"),
                "ManifestworkApplied": ("False", "PlacementDecisionEmpty"),
            }
        ),
    )
    for hub in hubs.both:
        await hub.decide("p", [("", clusters)])
    await same_works(hubs, rs, clusters, "the works once decided")
    await succeed(hubs, rs, clusters)
    await same_status(hubs, rs, "rolled out", conds(ROLLED_OUT, APPLIED_OK), total=2, applied=2)

    # Foreground: the replica set stays until its works are gone; an agent's finalizer
    # holds them.
    finalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"
    for hub in hubs.both:
        for cluster, work in (await hub.works(rs)).items():
            await hub.client.patch(
                MANIFESTWORKS,
                work["metadata"]["name"],
                {"metadata": {"finalizers": [finalizer]}},
                cluster,
            )
        await hub.client.delete(MANIFESTWORK_REPLICASETS, rs, NS)

    async def deleting(hub: Hub) -> Any:
        works = await hub.works(rs)
        try:
            replica = await hub.get_rs(rs)
        except NotFound:
            return None
        return {
            "works": {c: "deletionTimestamp" in w["metadata"] for c, w in works.items()},
            "finalizers": replica["metadata"].get("finalizers"),
            "deleting": "deletionTimestamp" in replica["metadata"],
        }

    await same_on_both(
        hubs,
        "the replica set waiting for its works",
        deleting,
        lambda d: d is not None and all(d["works"].values()) and len(d["works"]) == 2,
    )
    for hub in hubs.both:
        for cluster, work in (await hub.works(rs)).items():
            await hub.client.patch(
                MANIFESTWORKS, work["metadata"]["name"], {"metadata": {"finalizers": None}}, cluster
            )
    await same_on_both(hubs, "the replica set gone", deleting, lambda d: d is None)


# -- deliberate differences, pinned ------------------------------------------------------------


async def test_works_without_progressing_condition_differ_as_documented(hubs: Hubs) -> None:
    """An agent without a ``Progressing`` condition rule reports only Applied/Available.
    OCM judges such works ToApply forever (Progressive stays at its first batch,
    PlacementRolledOut never turns True); ours judges them by Applied/Available
    (deliberate, docs/compatibility.md "works without a Progressing condition")."""
    rs = "rs"
    clusters = ["cluster1", "cluster2", "cluster3"]
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}}
    for hub in hubs.both:
        await hub.placement("p", [("", clusters)])
        await replica_set(hub, rs, [{"name": "p", "rolloutStrategy": strategy}], CRONJOB_TEMPLATE)
    await same_works(hubs, rs, clusters[:1], "the first batch")
    await report(hubs, rs, clusters[:1], progressing=None)
    # OCM: the status of the pass that saw the report, and still one work.
    await eventually(
        lambda: _applied_is(hubs.ocm, rs, 1), timeout=30, what="OCM's status after the report"
    )
    assert sorted(await hubs.ocm.works(rs)) == clusters[:1]
    assert await _condition(hubs.ocm, rs, "PlacementRolledOut") == ROLLING
    # Ours: the next cluster.
    await eventually(
        lambda: _works_are(hubs.ours, rs, clusters[:2]), timeout=30, what="our second batch"
    )


async def _applied_is(hub: Hub, rs: str, count: int) -> bool:
    return (
        int(((await hub.get_rs(rs)).get("status") or {}).get("summary", {}).get("applied") or 0)
        == count
    )


async def _works_are(hub: Hub, rs: str, clusters: Sequence[str]) -> bool:
    return sorted(await hub.works(rs)) == sorted(clusters)


# -- changes: labels, a placement reference removed, a placement deleted -------------------


async def test_labels_refs_and_placement_changes_alike(hubs: Hubs) -> None:
    rs = "rs"
    await add_clusters(hubs, ["cluster4"])
    refs = [
        {"name": "p", "rolloutStrategy": {"type": "All"}},
        {
            "name": "q",
            "rolloutStrategy": {"type": "Progressive", "progressive": {"maxConcurrency": 5}},
        },
    ]
    for hub in hubs.both:
        await hub.placement("p", [("", ["cluster1", "cluster2", "cluster3"])])
        await hub.placement("q", [("", ["cluster4"])])
        await replica_set(hub, rs, refs, CRONJOB_TEMPLATE)
    every = ["cluster1", "cluster2", "cluster3", "cluster4"]
    await same_works(hubs, rs, every, "the works of both placements")
    await succeed(hubs, rs, ["cluster1"])
    await same_status(
        hubs, rs, "one succeeded", conds(ROLLING, NOT_AS_EXPECTED), total=4, applied=1
    )

    # New labels on the replica set: re-applied to the works OCM judges "to apply" (the
    # unreported ones); the succeeded work keeps its labels until its next re-apply.
    for hub in hubs.both:
        await hub.client.patch(
            MANIFESTWORK_REPLICASETS, rs, {"metadata": {"labels": {"team": "a"}}}, NS
        )

    def relabelled(works: Any) -> bool:
        return sorted(c for c, w in works.items() if (w["labels"] or {}).get("team") == "a") == [
            "cluster2",
            "cluster3",
            "cluster4",
        ]

    await same_on_both(hubs, "the relabelled works", works_reader(rs), relabelled)

    # The reference to q is removed: its work goes.
    for hub in hubs.both:
        await hub.client.patch(
            MANIFESTWORK_REPLICASETS, rs, {"spec": {"placementRefs": refs[:1]}}, NS
        )
    await same_works(hubs, rs, every[:3], "the works once q is no longer referenced")
    await same_status(hubs, rs, "without q", {"PlacementVerified": VERIFIED}, total=3, applied=1)

    # The placement itself is deleted: reported, the works stay.
    for hub in hubs.both:
        await hub.client.delete(PLACEMENTS, "p", NS)
    await same_on_both(
        hubs,
        "the status without the placement",
        without_messages(status_reader(rs)),
        status_is({"PlacementVerified": ("False", "PlacementDecisionNotFound")}),
    )
    await same_works(hubs, rs, every[:3], "the works without the placement")


# -- works changed by hand -----------------------------------------------------------------


async def test_works_edited_or_deleted_by_hand_are_restored_alike(hubs: Hubs) -> None:
    rs = "rs"
    clusters = ["cluster1", "cluster2", "cluster3"]
    strategy = {"type": "Progressive", "progressive": {"maxConcurrency": 1}}
    for hub in hubs.both:
        await hub.placement("p", [("", clusters)])
        await replica_set(hub, rs, [{"name": "p", "rolloutStrategy": strategy}], CRONJOB_TEMPLATE)
    for step in range(1, 4):
        await same_works(hubs, rs, clusters[:step], f"step {step}")
        await succeed(hubs, rs, clusters[step - 1 : step])
    await same_status(hubs, rs, "rolled out", conds(ROLLED_OUT, APPLIED_OK), total=3, applied=3)

    # Someone edits cluster2's work: it is no longer the template's, so it is applied
    # again (one at a time), and counted again once its agent reports.
    for hub in hubs.both:
        work = (await hub.works(rs))["cluster2"]
        await hub.client.patch(
            MANIFESTWORKS,
            work["metadata"]["name"],
            {"spec": {"deleteOption": {"propagationPolicy": "Orphan"}}},
            "cluster2",
        )

    def restored(works: Any) -> bool:
        # As the untouched cluster1's work (the API server adds defaults to the template).
        return len(works) == 3 and all(
            w["spec"] == works["cluster1"]["spec"] for w in works.values()
        )

    await same_on_both(hubs, "the edited work restored", works_reader(rs), restored)
    await same_status(hubs, rs, "after the edit", {"PlacementRolledOut": ROLLING}, total=3)
    await succeed(hubs, rs, ["cluster2"])
    await same_status(hubs, rs, "re-rolled out", conds(ROLLED_OUT, APPLIED_OK), total=3)

    # Someone deletes cluster3's work: it is created again.
    for hub in hubs.both:
        work = (await hub.works(rs))["cluster3"]
        await hub.client.delete(MANIFESTWORKS, work["metadata"]["name"], "cluster3")

    async def fresh(hub: Hub) -> Any:
        works = await hub.works(rs)
        return {c: "conditions" in (w.get("status") or {}) for c, w in works.items()}

    await same_on_both(
        hubs,
        "cluster3's work created again",
        fresh,
        lambda f: f == {"cluster1": True, "cluster2": True, "cluster3": False},
    )
    await same_status(hubs, rs, "after the deletion", {"PlacementRolledOut": ROLLING}, total=3)
    await succeed(hubs, rs, ["cluster3"])
    await same_status(hubs, rs, "rolled out again", conds(ROLLED_OUT, APPLIED_OK), total=3)


# -- TTL garbage collection of the docs' completed works ------------------------------------


async def test_completed_works_of_the_docs_are_collected_alike(hubs: Hubs) -> None:
    """The docs' ``temp-job-with-cleanup`` (ttlSecondsAfterFinished: 30, no
    propagationPolicy) and its variants: ttl 0, a Complete condition older than the TTL,
    Complete still False, a work of a replica set."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "temp-task", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "worker", "image": "busybox:latest", "command": ["echo", "done"]}
                    ],
                    "restartPolicy": "Never",
                }
            }
        },
    }
    rules = [
        {
            "resourceIdentifier": {
                "group": "batch",
                "resource": "jobs",
                "namespace": "default",
                "name": "temp-task",
            },
            "conditionRules": [{"type": "WellKnownConditions", "condition": "Complete"}],
        }
    ]

    def work(name: str, ttl: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name, "namespace": "cluster1"}
        if labels:
            metadata["labels"] = labels
        return {
            "apiVersion": "work.open-cluster-management.io/v1",
            "kind": "ManifestWork",
            "metadata": metadata,
            "spec": {
                "deleteOption": {"ttlSecondsAfterFinished": ttl},
                "workload": {"manifests": [job]},
                "manifestConfigs": rules,
            },
        }

    owned = {"work.open-cluster-management.io/manifestworkreplicaset": "ocm-ns.other"}
    cases = [
        # name, ttl, Complete status, seconds ago, labels
        ("temp-job-with-cleanup", 30, "True", 0, None),
        ("ttl-zero", 0, "True", 0, None),
        ("ttl-passed", 30, "True", 60, None),
        ("not-complete", 0, "False", 60, None),
        ("owned", 0, "True", 60, owned),
    ]
    for hub in hubs.both:
        for name, ttl, complete, ago, labels in cases:
            at = datetime.now(UTC) - timedelta(seconds=ago)
            await create_completed(hub, work(name, ttl, labels), complete, at)

    await same_on_both(
        hubs,
        "the works left",
        work_names,
        lambda n: n == ["not-complete", "owned", "temp-job-with-cleanup"],
    )


# -- the docs' example with failures ---------------------------------------------------------


async def test_docs_cronjob_example_with_failures(hubs: Hubs) -> None:
    """Failures in the example's placements: a failed mandatory group blocks its
    placement (timed out too), ``maxFailures: 2`` lets a group of two fail. A failure in a
    group of one cluster is where the two differ on purpose (docs/compatibility.md
    "maxFailures above the number of clusters": OCM tolerates none there, ours one)."""
    rs = "mwrset-cronjob"
    await setup_example(hubs, "type", min_success="1s", deadline="30s")
    first = [*ALL_CLUSTERS, "west-1", "pg-1", "pg-2"]
    await same_works(hubs, rs, first, "the first works of the example")

    await succeed(hubs, rs, ALL_CLUSTERS)
    await fail(hubs, rs, ["west-1", "pg-1", "pg-2"])
    # west-1 failed: the second mandatory group waits; two failures of two within
    # maxFailures 2: the next group goes.
    await same_works(hubs, rs, [*first, "pg-3"], "the works after the failures")
    await same_status(
        hubs,
        rs,
        "the status with failures",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=6,
        applied=5,
        available=2,
        degraded=3,
        progressing=3,
    )
    # west-1 times out: still blocked (a mandatory group tolerates no failure).
    await fail(hubs, rs, ["west-1"], ago=60)
    await same_status(
        hubs,
        rs,
        "the status with west-1 timed out",
        conds(ROLLING, NOT_AS_EXPECTED),
        total=6,
        applied=5,
        degraded=3,
    )
    await same_works(hubs, rs, [*first, "pg-3"], "the works with west-1 timed out")
    # west-1 recovers: after the soak, the next mandatory group.
    await succeed(hubs, rs, ["west-1"])
    await same_works(hubs, rs, [*first, "pg-3", "east-1"], "the works after west-1 recovered")

    # pg-3, alone in its group, fails: OCM's maxFailures 2 > 1 cluster becomes 0 and
    # stops; ours tolerates it and starts the last group (deliberate).
    await fail(hubs, rs, ["pg-3"])
    await eventually(
        lambda: _summary_is(hubs.ocm, rs, degraded=3),
        timeout=30,
        what="OCM's status after pg-3 failed",
    )
    assert "pg-4" not in await hubs.ocm.works(rs)
    await eventually(
        lambda: _has_work(hubs.ours, rs, "pg-4"), timeout=30, what="our last group despite pg-3"
    )


async def _summary_is(hub: Hub, rs: str, **counts: int) -> bool:
    summary = ((await hub.get_rs(rs)).get("status") or {}).get("summary") or {}
    return all(int(summary.get(k) or 0) == v for k, v in counts.items())


async def _has_work(hub: Hub, rs: str, cluster: str) -> bool:
    return cluster in await hub.works(rs)


# -- replica set names OCM v1.2.1 cannot serve: pinned differences ---------------------------


async def test_names_with_a_dot_or_too_long_differ_from_ocm_v1_2_1(hubs: Hubs) -> None:
    """Two names where ours and OCM v1.2.1 differ (docs/compatibility.md):

    * ``web.v1``: OCM maps a work event back by splitting the owner label on ``.``, so it
      never hears of its works' status; its status stays as first written. Ours follows
      (hubcontroller/controllers/replicaset_index.py documents it).
    * a name making ``<namespace>.<name>`` longer than 63 characters: OCM v1.2.1 cannot
      list its works (invalid label selector) and writes only
      ``ManifestworkApplied=False/NotAsExpected``; ours writes spec/hub.md 2.3's
      ``InvalidManifestWorkName`` (later OCM's)."""
    long = "a" * 60
    ref = [{"name": "p", "rolloutStrategy": {"type": "All"}}]
    for hub in hubs.both:
        await hub.placement("p", [("", ["cluster1", "cluster2"])])
        await replica_set(hub, "web.v1", ref, CRONJOB_TEMPLATE)
        await replica_set(hub, long, ref, CRONJOB_TEMPLATE)
    await same_works(hubs, "web.v1", ["cluster1", "cluster2"], "the dotted name's works")
    await same_status(
        hubs, "web.v1", "the dotted name's first status", conds(ROLLING, NOT_AS_EXPECTED), total=2
    )
    await succeed(hubs, "web.v1", ["cluster1", "cluster2"])
    await eventually(
        lambda: _summary_is(hubs.ours, "web.v1", applied=2, available=2),
        timeout=30,
        what="our status of web.v1 after the reports",
    )
    assert await _condition(hubs.ours, "web.v1", "PlacementRolledOut") == ROLLED_OUT
    assert await _summary_is(hubs.ocm, "web.v1", applied=0, available=0)
    assert await _condition(hubs.ocm, "web.v1", "PlacementRolledOut") == ROLLING

    async def conditions(hub: Hub) -> Any:
        status = (await hub.get_rs(long)).get("status") or {}
        return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions") or []}

    async def written() -> bool:
        return bool(await conditions(hubs.ocm)) and bool(await conditions(hubs.ours))

    await eventually(written, timeout=30, what="both statuses of the long name")
    assert await conditions(hubs.ocm) == {"ManifestworkApplied": NOT_AS_EXPECTED}
    assert await conditions(hubs.ours) == {
        "ManifestworkApplied": ("False", "InvalidManifestWorkName")
    }


# -- decisions change during rollouts ---------------------------------------------------------


async def test_decisions_change_during_progressive_rollouts(hubs: Hubs) -> None:
    """Clusters join and leave, a cluster moves to the first group, a work being deleted
    (an agent's finalizer holds it) is neither re-created nor counted twice."""
    rs = "rs"
    await add_clusters(hubs, ["cluster4", "cluster5"])
    strategy = {
        "type": "ProgressivePerGroup",
        "progressivePerGroup": {
            "minSuccessTime": "1s",
            "mandatoryDecisionGroups": [{"groupName": "canary"}],
        },
    }
    # Two indexes named canary: both mandatory.
    groups = [
        ("canary", ["cluster1"]),
        ("canary", ["cluster2"]),
        ("prod", ["cluster3", "cluster4"]),
    ]
    for hub in hubs.both:
        await hub.placement("p", groups)
        await replica_set(hub, rs, [{"name": "p", "rolloutStrategy": strategy}], CRONJOB_TEMPLATE)
    await same_works(hubs, rs, ["cluster1"], "the first canary index")
    await succeed(hubs, rs, ["cluster1"])
    await same_works(hubs, rs, ["cluster1", "cluster2"], "the second canary index")
    # cluster5 joins the prod group before it starts; cluster4 moves to the first index.
    moved = [
        ("canary", ["cluster1", "cluster4"]),
        ("canary", ["cluster2"]),
        ("prod", ["cluster3", "cluster5"]),
    ]
    for hub in hubs.both:
        await hub.decide("p", moved)
    await same_works(hubs, rs, ["cluster1", "cluster2", "cluster4"], "cluster4 now a canary")
    await succeed(hubs, rs, ["cluster2", "cluster4"])
    every = ["cluster1", "cluster2", "cluster3", "cluster4", "cluster5"]
    await same_works(hubs, rs, every, "the prod group")
    await succeed(hubs, rs, ["cluster3", "cluster5"])
    await same_status(
        hubs, rs, "rolled out", conds(ROLLED_OUT, APPLIED_OK), total=5, applied=5, available=5
    )

    # cluster5's work is deleted by hand while its agent's finalizer holds it.
    finalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"
    for hub in hubs.both:
        work = (await hub.works(rs))["cluster5"]
        name = work["metadata"]["name"]
        await hub.client.patch(
            MANIFESTWORKS, name, {"metadata": {"finalizers": [finalizer]}}, "cluster5"
        )
        await hub.client.delete(MANIFESTWORKS, name, "cluster5")
    await same_status(
        hubs, rs, "with a work being deleted", {"PlacementVerified": VERIFIED}, total=5, applied=4
    )
    # cluster3 leaves: its work goes; cluster5's finalizer goes: its work is created again.
    for hub in hubs.both:
        await hub.decide("p", [(g, [c for c in m if c != "cluster3"]) for g, m in moved])
        work = (await hub.works(rs))["cluster5"]
        await hub.client.patch(
            MANIFESTWORKS, work["metadata"]["name"], {"metadata": {"finalizers": None}}, "cluster5"
        )

    async def state(hub: Hub) -> Any:
        works = await hub.works(rs)
        return {c: bool((w.get("status") or {}).get("conditions")) for c, w in works.items()}

    await same_on_both(
        hubs,
        "the works after the changes",
        state,
        lambda s: s == {"cluster1": True, "cluster2": True, "cluster4": True, "cluster5": False},
    )
    await same_status(hubs, rs, "after the changes", {"PlacementRolledOut": ROLLING}, total=4)


# -- a template as kubectl writes it (creationTimestamp: null) --------------------------------

DEPLOYMENT_TEMPLATE: dict[str, Any] = {
    "workload": {
        "manifests": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "hello", "namespace": "default", "creationTimestamp": None},
                "spec": {
                    "selector": {"matchLabels": {"app": "hello"}},
                    "template": {
                        "metadata": {"labels": {"app": "hello"}, "creationTimestamp": None},
                        "spec": {
                            "containers": [
                                {
                                    "name": "hello",
                                    "image": "quay.io/asmacdo/busybox",
                                    "command": [
                                        "sh",
                                        "-c",
                                        'echo "Hello, Kubernetes!" && sleep 3600',
                                    ],
                                }
                            ]
                        },
                    },
                },
            }
        ]
    }
}


async def test_template_with_null_creation_timestamps_settles_alike(hubs: Hubs) -> None:
    """The docs' hello Deployment as ``kubectl create --dry-run -o yaml`` writes it: the
    works are written once (generation 1) and judged up to date; maxConcurrency "0%" and
    maxFailures "100%" fall back as OCM's."""
    rs = "rs"
    clusters = ["cluster1", "cluster2", "cluster3"]
    strategy = {
        "type": "Progressive",
        "progressive": {"maxConcurrency": "0%", "maxFailures": "100%", "progressDeadline": "None"},
    }
    for hub in hubs.both:
        await hub.placement("p", [("", clusters)])
        await replica_set(
            hub, rs, [{"name": "p", "rolloutStrategy": strategy}], DEPLOYMENT_TEMPLATE
        )
    await same_works(hubs, rs, clusters, "every work at once (0% means all)")
    await fail(hubs, rs, clusters)
    await same_status(
        hubs, rs, "every cluster failed", conds(ROLLING, NOT_AS_EXPECTED), total=3, degraded=3
    )
    await succeed(hubs, rs, clusters)
    await same_status(hubs, rs, "rolled out", conds(ROLLED_OUT, APPLIED_OK), total=3, applied=3)

    async def generations(hub: Hub) -> Any:
        return {c: w["metadata"]["generation"] for c, w in (await hub.works(rs)).items()}

    await same_on_both(
        hubs, "the works' generations", generations, lambda g: set(g.values()) == {1}
    )
