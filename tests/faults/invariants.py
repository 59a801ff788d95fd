"""The converged state every fault test must end in, checked in one place.

Once a fault has cleared, the agent must converge to exactly this:

- hub: the ManifestWorks are the ones the test expects (a deleted work is
  gone, not stuck with its finalizer), each keeps the cleanup finalizer and
  reports ``Applied=True`` and ``Available=True`` for its current generation,
  with one ``resourceStatus.manifests`` entry per manifest (ordinal,
  resourceMeta, ``Applied=True`` of this generation, ``Available=True``) and no
  ``Deleting`` condition;
- spoke, per work: the AppliedManifestWork ``<hubHash>-<work>`` exists, is not
  being deleted, has its finalizer, its spec and the work's labels, and
  ``status.appliedResources`` lists exactly the work's objects with their live
  UIDs; every manifest's object exists as specified (``data`` exactly, other
  fields as a subset of what the API server defaulted) and is owned by that
  AppliedManifestWork;
- spoke, overall: no AppliedManifestWork of this hub without a hub work, and
  in the namespaces under test no object of the checked kinds that no work
  lists (unless the test made it itself: ``foreign``), nor any object owned
  by an AppliedManifestWork that does not record it.

Everything is read over HTTP with the tests' own clients (never the
emulator's internals), so the checker would run against a real cluster too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    CONFIGMAPS,
    DEPLOYMENTS,
    MANIFESTWORKS,
    SECRETS,
    KubeClient,
    KubeError,
    NotFound,
    Resource,
    split_api_version,
)
from schemas.wire import APPLIED_MANIFEST_WORK_FINALIZER, MANIFEST_WORK_FINALIZER
from tests.conftest import eventually
from workagent.identity import applied_work_name

CLUSTER = "cluster1"
#: The kinds fault-test works use, by (group, kind).
CHECKED_KINDS: dict[tuple[str, str], Resource] = {
    (r.group, r.kind): r for r in (CONFIGMAPS, SECRETS, DEPLOYMENTS)
}
#: Fields compared exactly (a foreign key added to a ConfigMap is drift, not defaulting).
EXACT_FIELDS = ("data", "binaryData")
#: How long convergence may take once a fault cleared (informer backoff after a
#: long outage reaches tens of seconds; CI machines are slow).
CONVERGE_SECONDS = 90.0

ObjectKey = tuple[str, str, str, str]  # (group, resource, namespace, name)


@dataclass(frozen=True)
class Expected:
    """What a test knows beyond the hub's own state.

    ``works``: the work names that must exist on the hub (None: whatever is
    there); ``namespaces``: spoke namespaces scanned for leftovers;
    ``foreign``: objects in those namespaces the test created itself, as
    (group, resource, namespace, name); ``kinds``: resources the test's works
    use beyond :data:`CHECKED_KINDS` (namespaced ones are scanned for
    leftovers like those; of cluster-scoped ones, which the cluster itself
    has plenty of, only objects owned by an AppliedManifestWork are).
    """

    works: Collection[str] | None = None
    namespaces: Collection[str] = ("default",)
    foreign: Collection[ObjectKey] = ()
    kinds: Collection[Resource] = ()

    def checked_kinds(self) -> dict[tuple[str, str], Resource]:
        """Every checked kind by (group, kind)."""
        return {**CHECKED_KINDS, **{(r.group, r.kind): r for r in self.kinds}}


def _conditions(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        str(c.get("type")): dict(c) for c in (obj.get("conditions") or []) if isinstance(c, dict)
    }


def _resource_of(
    manifest: Mapping[str, Any], kinds: Mapping[tuple[str, str], Resource] = CHECKED_KINDS
) -> Resource | None:
    group, _ = split_api_version(str(manifest.get("apiVersion") or ""))
    return kinds.get((group, str(manifest.get("kind") or "")))


def _key(res: Resource, namespace: str, name: str) -> ObjectKey:
    return (res.group, res.plural, namespace if res.namespaced else "", name)


def subset_differences(want: Any, live: Any, path: str) -> list[str]:
    """Where ``live`` does not carry ``want`` (maps as subsets, lists element-wise)."""
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return [f"{path}: want an object, live has {live!r}"]
        out: list[str] = []
        for key, value in want.items():
            if key not in live:
                out.append(f"{path}.{key}: missing (want {value!r})")
            else:
                out.extend(subset_differences(value, live[key], f"{path}.{key}"))
        return out
    if isinstance(want, list):
        if not isinstance(live, list) or len(live) != len(want):
            return [f"{path}: want {want!r}, live has {live!r}"]
        return [
            d
            for i, (w, v) in enumerate(zip(want, live, strict=True))
            for d in subset_differences(w, v, f"{path}[{i}]")
        ]
    return [] if want == live else [f"{path}: want {want!r}, live has {live!r}"]


def content_differences(manifest: Mapping[str, Any], live: Mapping[str, Any]) -> list[str]:
    """How a live object differs from its manifest, ignoring what the server adds."""
    out: list[str] = []
    for field, value in manifest.items():
        if field in ("apiVersion", "kind", "status"):
            continue
        if field == "metadata":
            meta = live.get("metadata") or {}
            for part in ("labels", "annotations"):
                out.extend(subset_differences(value.get(part) or {}, meta.get(part) or {}, part))
        elif field in EXACT_FIELDS:
            if value != live.get(field):
                out.append(f"{field}: want {value!r}, live has {live.get(field)!r}")
        else:
            out.extend(subset_differences(value, live.get(field), field))
    for field in EXACT_FIELDS:
        if field not in manifest and live.get(field):
            out.append(f"{field}: not in the manifest, live has {live[field]!r}")
    return out


def _check_work_status(
    work: Mapping[str, Any], kinds: Mapping[tuple[str, str], Resource] = CHECKED_KINDS
) -> list[str]:
    name = work["metadata"]["name"]
    generation = work["metadata"].get("generation")
    status = work.get("status") or {}
    conds = _conditions(status)
    out: list[str] = []
    for ctype in ("Applied", "Available"):
        cond = conds.get(ctype)
        if cond is None:
            out.append(f"work {name}: no {ctype} condition")
        elif cond.get("status") != "True" or cond.get("observedGeneration") != generation:
            out.append(
                f"work {name}: {ctype}={cond.get('status')} ({cond.get('reason')}: "
                f"{cond.get('message')}) for generation {cond.get('observedGeneration')}, "
                f"want True for {generation}"
            )
    if "Deleting" in conds:
        out.append(f"work {name}: has a Deleting condition")
    manifests = list(((work.get("spec") or {}).get("workload") or {}).get("manifests") or [])
    entries = list((status.get("resourceStatus") or {}).get("manifests") or [])
    if len(entries) != len(manifests):
        out.append(f"work {name}: {len(entries)} manifest statuses for {len(manifests)} manifests")
        return out
    by_ordinal = {(e.get("resourceMeta") or {}).get("ordinal"): e for e in entries}
    for ordinal, manifest in enumerate(manifests):
        entry = by_ordinal.get(ordinal)
        if entry is None:
            out.append(f"work {name}: no status for manifest {ordinal}")
            continue
        meta = entry.get("resourceMeta") or {}
        group, version = split_api_version(str(manifest.get("apiVersion") or ""))
        res = _resource_of(manifest, kinds)
        want_meta = {
            "group": group,
            "version": version,
            "kind": manifest.get("kind"),
            "resource": res.plural if res else meta.get("resource"),
            "name": manifest["metadata"]["name"],
            "namespace": manifest["metadata"].get("namespace", ""),
        }
        got_meta = {k: meta.get(k) for k in want_meta}
        if got_meta != want_meta:
            out.append(f"work {name}: manifest {ordinal} resourceMeta {got_meta}, want {want_meta}")
        mconds = _conditions(entry)
        applied, available = mconds.get("Applied"), mconds.get("Available")
        if (
            applied is None
            or applied.get("status") != "True"
            or applied.get("observedGeneration") != generation
        ):
            out.append(f"work {name}: manifest {ordinal} Applied is {applied}")
        if available is None or available.get("status") != "True":
            out.append(f"work {name}: manifest {ordinal} Available is {available}")
    return out


async def _get(client: KubeClient, res: Resource, name: str, namespace: str | None) -> Any:
    try:
        return await client.get(res, name, namespace)
    except NotFound:
        return None


async def _check_spoke_work(
    spoke: KubeClient,
    hub_hash: str,
    work: Mapping[str, Any],
    applied: Mapping[str, Any] | None,
    kinds: Mapping[tuple[str, str], Resource] = CHECKED_KINDS,
) -> list[str]:
    name = work["metadata"]["name"]
    amw_name = applied_work_name(hub_hash, name)
    if applied is None:
        return [f"work {name}: no AppliedManifestWork {amw_name}"]
    out: list[str] = []
    meta = applied["metadata"]
    if meta.get("deletionTimestamp"):
        out.append(f"AppliedManifestWork {amw_name}: being deleted")
    if APPLIED_MANIFEST_WORK_FINALIZER not in (meta.get("finalizers") or []):
        out.append(f"AppliedManifestWork {amw_name}: no cleanup finalizer")
    want_spec = {"hubHash": hub_hash, "manifestWorkName": name, "agentID": hub_hash}
    if applied.get("spec") != want_spec:
        out.append(f"AppliedManifestWork {amw_name}: spec {applied.get('spec')}, want {want_spec}")
    work_labels = work["metadata"].get("labels") or {}
    if (meta.get("labels") or {}) != work_labels:
        out.append(
            f"AppliedManifestWork {amw_name}: labels {meta.get('labels')}, want {work_labels}"
        )

    want_applied: list[dict[str, str]] = []
    manifests = list(((work.get("spec") or {}).get("workload") or {}).get("manifests") or [])
    for ordinal, manifest in enumerate(manifests):
        res = _resource_of(manifest, kinds)
        if res is None:
            out.append(
                f"work {name}: manifest {ordinal}: the checker knows no {manifest.get('kind')}"
            )
            continue
        obj_name = manifest["metadata"]["name"]
        namespace = (manifest["metadata"].get("namespace") or "") if res.namespaced else ""
        live = await _get(spoke, res, obj_name, namespace or None)
        what = f"work {name}: {res.plural} {namespace}/{obj_name}"
        if live is None:
            out.append(f"{what}: missing on the spoke")
            continue
        live_meta = live.get("metadata") or {}
        if live_meta.get("deletionTimestamp"):
            out.append(f"{what}: being deleted")
        refs = live_meta.get("ownerReferences") or []
        if not any(
            r.get("kind") == "AppliedManifestWork" and r.get("uid") == meta.get("uid") for r in refs
        ):
            out.append(f"{what}: not owned by {amw_name} ({refs})")
        out.extend(f"{what}: {d}" for d in content_differences(manifest, live))
        want_applied.append(
            {
                "group": res.group,
                "version": res.version,
                "resource": res.plural,
                "namespace": namespace,
                "name": obj_name,
                "uid": str(live_meta.get("uid")),
            }
        )
    want_applied.sort(key=_applied_sort_key)
    got = [
        {
            k: str(e.get(k) or "")
            for k in ("group", "version", "resource", "namespace", "name", "uid")
        }
        for e in (applied.get("status") or {}).get("appliedResources") or []
    ]
    if got != want_applied:
        out.append(
            f"AppliedManifestWork {amw_name}: appliedResources {_names(got)}, "
            f"want {_names(want_applied)}"
            + ("" if _names(got) != _names(want_applied) else " (UIDs differ)")
        )
    return out


def _applied_sort_key(entry: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(entry[k] for k in ("group", "version", "resource", "namespace", "name"))


def _names(entries: Iterable[Mapping[str, str]]) -> list[str]:
    return [f"{e['resource']}/{e['namespace']}/{e['name']}" for e in entries]


async def problems(
    hub: KubeClient, spoke: KubeClient, hub_hash: str, expected: Expected | None = None
) -> list[str]:
    """Every way the clusters differ from the converged state (empty: converged)."""
    expected = expected or Expected()
    kinds = expected.checked_kinds()
    out: list[str] = []
    works = (await hub.list(MANIFESTWORKS, CLUSTER))["items"]
    names = {w["metadata"]["name"] for w in works}
    if expected.works is not None and names != set(expected.works):
        missing, extra = sorted(set(expected.works) - names), sorted(names - set(expected.works))
        out.append(f"hub works: missing {missing}, unexpected {extra}")

    applied_works = {
        a["metadata"]["name"]: a for a in (await spoke.list(APPLIED_MANIFESTWORKS))["items"]
    }
    wanted: set[ObjectKey] = set()
    for work in works:
        name = work["metadata"]["name"]
        if work["metadata"].get("deletionTimestamp"):
            out.append(f"work {name}: still being deleted")
        if MANIFEST_WORK_FINALIZER not in (work["metadata"].get("finalizers") or []):
            out.append(f"work {name}: no cleanup finalizer")
        out.extend(_check_work_status(work, kinds))
        applied = applied_works.get(applied_work_name(hub_hash, name))
        out.extend(await _check_spoke_work(spoke, hub_hash, work, applied, kinds))
        for manifest in ((work.get("spec") or {}).get("workload") or {}).get("manifests") or []:
            res = _resource_of(manifest, kinds)
            if res is not None:
                meta = manifest["metadata"]
                namespace = (meta.get("namespace") or "") if res.namespaced else ""
                wanted.add(_key(res, namespace, meta["name"]))

    ours = {applied_work_name(hub_hash, n) for n in names}
    recorded: dict[str, set[ObjectKey]] = {}
    for amw_name, applied in applied_works.items():
        if amw_name.startswith(f"{hub_hash}-") and amw_name not in ours:
            out.append(f"AppliedManifestWork {amw_name}: left behind (its work is gone)")
        recorded[applied["metadata"]["uid"]] = {
            (
                str(e.get("group") or ""),
                str(e.get("resource") or ""),
                str(e.get("namespace") or ""),
                str(e.get("name") or ""),
            )
            for e in (applied.get("status") or {}).get("appliedResources") or []
        }

    foreign = set(expected.foreign)
    for namespace in expected.namespaces:
        for res in kinds.values():
            if not res.namespaced:
                continue
            for obj in (await spoke.list(res, namespace))["items"]:
                key = _key(res, namespace, obj["metadata"]["name"])
                out.extend(_leftover(res, obj, key, wanted, foreign, recorded))
    for res in kinds.values():
        if res.namespaced:
            continue
        for obj in (await spoke.list(res))["items"]:
            refs = obj["metadata"].get("ownerReferences") or []
            if any(ref.get("kind") == "AppliedManifestWork" for ref in refs):
                key = _key(res, "", obj["metadata"]["name"])
                out.extend(_leftover(res, obj, key, wanted, foreign, recorded))
    return out


def _leftover(
    res: Resource,
    obj: Mapping[str, Any],
    key: ObjectKey,
    wanted: set[ObjectKey],
    foreign: set[ObjectKey],
    recorded: Mapping[str, set[ObjectKey]],
) -> list[str]:
    """What is wrong with a live object: no work lists it, or an owner does not record it."""
    meta = obj["metadata"]
    what = f"{res.plural} {key[2] + '/' if key[2] else ''}{meta['name']}"
    out: list[str] = []
    if key not in wanted and key not in foreign:
        out.append(f"{what}: no work lists it (leaked)")
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") != "AppliedManifestWork":
            continue
        if key not in recorded.get(str(ref.get("uid")), set()):
            out.append(
                f"{what}: owned by AppliedManifestWork {ref.get('name')} ({ref.get('uid')}), "
                "which does not record it"
            )
    return out


async def converged(
    hub: KubeClient,
    spoke: KubeClient,
    hub_hash: str,
    expected: Expected | None = None,
    *,
    timeout: float = CONVERGE_SECONDS,
    what: str = "the agent to converge",
) -> None:
    """Wait until :func:`problems` finds nothing; on timeout, fail listing what is wrong."""
    last: list[str] = []

    async def check() -> bool:
        try:
            found = await problems(hub, spoke, hub_hash, expected)
        except KubeError as err:  # a cluster still coming back
            found = [f"cannot read the clusters: {err}"]
        last[:] = found
        return not found

    try:
        await eventually(check, timeout=timeout, what=what)
    except AssertionError as err:
        listing = "\n  ".join(last[:40])
        raise AssertionError(f"{err}; still wrong:\n  {listing}") from None
