"""Pure helpers about the ManifestWorks a ManifestWorkReplicaSet generates.

What a generated work looks like (spec/hub.md section 2.3.1), when a work is
up to date with the template (2.4.1), and how far a work's rollout has got
(2.4). Nothing here does I/O; objects are the wire dicts the informers cache.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hubcontroller.rollout import ClusterRolloutStatus, RolloutStatus
from ocmkit.kube import MANIFESTWORKS
from ocmkit.kube.mergepatch import normalized
from schemas.meta import parse_time
from schemas.wire import (
    CONDITION_APPLIED,
    CONDITION_AVAILABLE,
    CONDITION_DEGRADED,
    CONDITION_PROGRESSING,
    MANIFEST_WORK_REPLICA_SET_LABEL,
    PLACEMENT_NAME_LABEL,
)


def owner_label_value(namespace: str, name: str) -> str:
    """The value of the owner label on generated works: ``<namespace>.<name>``."""
    return f"{namespace}.{name}"


def owner_of(replica_set: Mapping[str, Any]) -> str:
    """The owner label value of a replica set's works."""
    rs_meta = meta(replica_set)
    return owner_label_value(str(rs_meta.get("namespace", "")), str(rs_meta.get("name", "")))


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` of a wire object (empty when absent)."""
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """Whether the object has a deletionTimestamp."""
    return bool(meta(obj).get("deletionTimestamp"))


def template_of(replica_set: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.manifestWorkTemplate`` of a replica set (an empty spec when absent)."""
    template = (replica_set.get("spec") or {}).get("manifestWorkTemplate")
    return dict(template) if isinstance(template, Mapping) else {}


def desired_work(
    replica_set: Mapping[str, Any],
    cluster: str,
    placement: str,
    existing_name: str | None,
) -> dict[str, Any]:
    """The ManifestWork for ``cluster`` (spec/hub.md 2.3.1).

    Labels: the replica set's own plus the owner and placement labels; no
    annotations and no ownerReferences (the replica set's finalizer does the
    cleanup); the spec is the template verbatim. A work that exists for this
    cluster and placement keeps its name; a new one gets a generated name
    prefixed with the replica set's name, so two replica sets of the same name
    in different namespaces never collide in a cluster namespace.
    """
    rs_meta = meta(replica_set)
    labels = dict(rs_meta.get("labels") or {})
    labels[MANIFEST_WORK_REPLICA_SET_LABEL] = owner_of(replica_set)
    labels[PLACEMENT_NAME_LABEL] = placement
    metadata: dict[str, Any] = {"namespace": cluster, "labels": labels}
    if existing_name:
        metadata["name"] = existing_name
    else:
        metadata["generateName"] = str(rs_meta.get("name", ""))
    return {
        "apiVersion": MANIFESTWORKS.api_version,
        "kind": MANIFESTWORKS.kind,
        "metadata": metadata,
        "spec": copy.deepcopy(template_of(replica_set)),
    }


# -- spec equality (2.4.1) ---------------------------------------------------------------


def _drop_creation_timestamp(obj: dict[str, Any]) -> None:
    """Remove ``metadata.creationTimestamp`` (and ``metadata`` if that emptied it)."""
    obj_meta = obj.get("metadata")
    if isinstance(obj_meta, dict):
        obj_meta.pop("creationTimestamp", None)
        if not obj_meta:
            del obj["metadata"]


def _go_zero(value: Any) -> bool:
    """Whether a field is ``""``, ``false`` or an object left empty.

    Every string and bool field of a ManifestWork spec outside the manifests is
    a plain Go value, so absent and zero decode alike; OCM's hub writes the
    zeros (``group: ""``, ``force: false``, ``message: ""``) into the works it
    generates. (The only number, ``ttlSecondsAfterFinished``, is a pointer:
    ``0`` is kept.)
    """
    return value == "" or value is False or value == {}


def comparable_spec(spec: Mapping[str, Any] | None) -> Any:
    """A work spec ready for comparison, as Go would compare the decoded specs.

    Empty and null fields are dropped (:func:`normalized`), and outside the
    manifests so are zero strings and bools (:func:`_go_zero`), so a
    work written by OCM's hub equals the template it came from. Tools that
    serialise typed objects write ``creationTimestamp: null`` into manifests
    (and pod templates); it must not count as a difference. The input is not
    modified.
    """
    out = normalized(spec or {})
    out = {
        key: value if key == "workload" else normalized(value, _go_zero)
        for key, value in out.items()
    }
    out = {key: value for key, value in out.items() if value != {}}
    workload = out.get("workload")
    manifests = workload.get("manifests") if isinstance(workload, dict) else None
    for manifest in manifests or []:
        if isinstance(manifest, dict):
            _drop_creation_timestamp(manifest)
            pod_spec = manifest.get("spec")
            if isinstance(pod_spec, dict) and isinstance(pod_spec.get("template"), dict):
                _drop_creation_timestamp(pod_spec["template"])
                if not pod_spec["template"]:
                    del pod_spec["template"]
                if not pod_spec:
                    del manifest["spec"]
    return out


# -- re-applied labels (2.3.1) ------------------------------------------------------------


def owned_metadata(work: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata the controller owns on a work: labels, annotations, ownerReferences."""
    work_meta = meta(work)
    return {
        "labels": dict(work_meta.get("labels") or {}),
        "annotations": dict(work_meta.get("annotations") or {}),
        "ownerReferences": list(work_meta.get("ownerReferences") or []),
    }


def ocm_to_apply(work: Mapping[str, Any]) -> bool:
    """Whether OCM's rollout status of the work is ``ToApply`` (spec/hub.md 2.4).

    ``Applied`` missing, stale or not True; ``Progressing`` missing or stale;
    or a stale ``Degraded``. OCM re-applies such works on every reconcile.
    """
    generation = meta(work).get("generation", 0)
    conds = _conditions(work)
    applied = conds.get(CONDITION_APPLIED)
    progressing = conds.get(CONDITION_PROGRESSING)
    degraded = conds.get(CONDITION_DEGRADED)
    return (
        applied is None
        or applied.get("observedGeneration") != generation
        or applied.get("status") != "True"
        or progressing is None
        or progressing.get("observedGeneration") != generation
        or (degraded is not None and degraded.get("observedGeneration") != generation)
    )


def needs_relabel(work: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether an up-to-date work must be re-applied for its metadata, as OCM would.

    OCM re-applies every work it judges ToApply, which resets its labels to the
    replica set's (and drops labels and annotations added by hand); works it
    judges otherwise keep theirs until the next re-apply.
    """
    return owned_metadata(work) != owned_metadata(desired) and ocm_to_apply(work)


# -- rollout status (2.4) -----------------------------------------------------------------


def _conditions(work: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = work.get("status") or {}
    out: dict[str, Mapping[str, Any]] = {}
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and isinstance(cond.get("type"), str):
            out[cond["type"]] = cond
    return out


def true_conditions(work: Mapping[str, Any]) -> frozenset[str]:
    """The types of the work's conditions whose status is True (generation ignored)."""
    return frozenset(t for t, c in _conditions(work).items() if c.get("status") == "True")


def find_condition(obj: Mapping[str, Any], condition_type: str) -> Mapping[str, Any] | None:
    """The first condition of this type in the object's ``status.conditions``, if any."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == condition_type:
            return cond
    return None


def transition_time(cond: Mapping[str, Any] | None) -> datetime | None:
    """A condition's ``lastTransitionTime``; None when absent or unreadable."""
    try:
        return parse_time(cond.get("lastTransitionTime") if cond is not None else None)
    except ValueError:
        return None


def _latest(*times: datetime | None) -> datetime | None:
    present = [t for t in times if t is not None]
    return max(present) if present else None


def spec_written_at(work: Mapping[str, Any]) -> datetime | None:
    """When the work's spec was last written, as well as the object tells.

    The newest ``managedFields`` entry (not of a subresource) that owns
    ``spec`` fields; the creation time when there is none. A metadata-only
    write by that manager moves the entry's time too, so callers remember the
    answer per generation (:class:`~hubcontroller.controllers.replicaset_cache.WorkJudgements`).
    """
    newest: datetime | None = None
    for entry in meta(work).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource"):
            continue
        fields = entry.get("fieldsV1")
        if not isinstance(fields, dict) or "f:spec" not in fields:
            continue
        newest = _latest(newest, transition_time({"lastTransitionTime": entry.get("time")}))
    if newest is not None:
        return newest
    return transition_time({"lastTransitionTime": meta(work).get("creationTimestamp")})


def cluster_rollout_status(
    cluster: str, work: Mapping[str, Any], written: datetime | None = None
) -> ClusterRolloutStatus:
    """How far the rollout of ``work`` has got on ``cluster``.

    With a work-level ``Progressing`` condition for the current generation
    (the agent writes one only when a condition rule named ``Progressing``
    asks for it), OCM's rules apply unchanged (spec/hub.md 2.4):
    ``Applied`` not True for this generation, or a stale ``Degraded`` ⇒
    ToApply; Progressing True and Degraded True ⇒ Failed; Progressing True or
    Unknown ⇒ Progressing; Progressing False ⇒ Succeeded.

    **Deviation.** OCM calls every other work ToApply forever, so a
    Progressive rollout of plain works never gets past its first batch. We
    judge such works by ``Applied`` and ``Available`` instead:

    * Applied and Available True for the current generation ⇒ Succeeded;
    * Applied False for the current generation ⇒ Failed;
    * otherwise (the agent has not reported this generation yet, or the
      resources are not available yet) ⇒ Progressing.

    Their time (from which minSuccessTime and progressDeadline count) is the
    latest of the conditions' transition times and of the moment the spec was
    last written (``written``, else :func:`spec_written_at`): a condition that
    stayed True across a template update must not let the new generation skip
    its soak, and a cluster whose agent never answers times out after
    progressDeadline.
    """
    generation = meta(work).get("generation", 0)
    conds = _conditions(work)

    def current(cond: Mapping[str, Any] | None) -> bool:
        return cond is not None and cond.get("observedGeneration") == generation

    progressing = conds.get(CONDITION_PROGRESSING)
    applied = conds.get(CONDITION_APPLIED)
    if current(progressing):
        assert progressing is not None
        degraded = conds.get(CONDITION_DEGRADED)
        if not current(applied) or (applied or {}).get("status") != "True":
            return ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY)
        if degraded is not None and not current(degraded):
            return ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY)
        state = progressing.get("status")
        if state == "True" and degraded is not None and degraded.get("status") == "True":
            return ClusterRolloutStatus(cluster, RolloutStatus.FAILED, transition_time(degraded))
        status = RolloutStatus.SUCCEEDED if state == "False" else RolloutStatus.PROGRESSING
        return ClusterRolloutStatus(cluster, status, transition_time(progressing))

    if written is None:
        written = spec_written_at(work)
    if not current(applied):
        return ClusterRolloutStatus(cluster, RolloutStatus.PROGRESSING, written)
    assert applied is not None
    available = conds.get(CONDITION_AVAILABLE)
    available_now = available if current(available) else None
    applied_at = transition_time(applied)
    if applied.get("status") == "False":
        return ClusterRolloutStatus(cluster, RolloutStatus.FAILED, _latest(applied_at, written))
    since = _latest(applied_at, transition_time(available_now), written)
    if (
        applied.get("status") == "True"
        and available_now is not None
        and available_now.get("status") == "True"
    ):
        return ClusterRolloutStatus(cluster, RolloutStatus.SUCCEEDED, since)
    return ClusterRolloutStatus(cluster, RolloutStatus.PROGRESSING, since)
