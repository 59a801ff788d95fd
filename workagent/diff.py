"""``workagent diff``: what the agent would change on a managed cluster for one ManifestWork.

The manifests go through the agent's own code paths, in the agent's order
(parsing, resource mapping, ``manifestConfigs``, owner references, the
strategy's applier), over a :class:`~workagent.dryrun.DryRunClient` whose
every write is a server-side dry run. docs/user-guide.md ("Previewing a
change") describes the output and the exit codes (``kubectl diff``'s).
"""

from __future__ import annotations

import asyncio
import copy
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

import yaml

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    MANIFESTWORKS,
    Forbidden,
    KubeClient,
    KubeConfigError,
    KubeError,
    NotFound,
    RESTMapper,
    Unauthorized,
    Unreachable,
)
from ocmkit.runtime import configure_logging
from schemas.work_v1 import ManifestWorkSpec, UpdateStrategyType
from workagent.apply import Appliers, ApplyRequest
from workagent.cli import PROG, DiffCommand
from workagent.controllers.apply_results import ManifestResult
from workagent.controllers.manifestconfig import find_manifest_config, work_spec
from workagent.controllers.manifests import map_resource, parse_manifest
from workagent.controllers.manifestwork import describe_error
from workagent.controllers.metrics import UNEXPECTED_FAILURE, failure_reason
from workagent.controllers.ownership import (
    applied_work_owner,
    owned_by_the_work,
    owner_for,
    owner_reference,
)
from workagent.dryrun import DryRunClient, without_server_fields
from workagent.identity import applied_work_name, hub_hash
from workagent.settings import SPOKE_USER_AGENT
from workagent.sources import kubeconfig_server

EXIT_NO_CHANGES: Final = 0
EXIT_CHANGES: Final = 1
EXIT_ERROR: Final = 2

#: The uid shown for the owner reference to an AppliedManifestWork not created yet.
UNKNOWN_UID: Final = "00000000-0000-0000-0000-000000000000"


class DiffError(Exception):
    """The diff cannot be made (bad input, unreadable work, unreachable cluster)."""


@dataclass
class ManifestDiff:
    """What the agent would do to one manifest."""

    ordinal: int
    what: str  # ``ConfigMap default/name``
    strategy: str
    verdict: str  # the header's words: "no changes", "would change", "would create", ...
    changed: bool = False
    failed: bool = False
    diff: str = ""

    def render(self) -> str:
        """The header line, then the diff (if any)."""
        head = f"{self.what} (manifest {self.ordinal}, {self.strategy}): {self.verdict}\n"
        return head + self.diff


def _first_line(text: str) -> str:
    return " ".join(text.split("\n", 1)[0].split()) or text.strip()


def read_work_file(path: str) -> dict[str, Any]:
    """The ManifestWork in ``path`` (``-``: standard input); DiffError if it is not one."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as err:
        raise DiffError(f"cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise DiffError(f"{path} is not a text file") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        problem = getattr(err, "problem", None) or _first_line(str(err))
        raise DiffError(f"{path} is not valid YAML{line}: {problem}") from None
    if len(docs) != 1:
        raise DiffError(f"{path} must hold exactly one ManifestWork, found {len(docs)} documents")
    return check_work(docs[0], path)


def check_work(doc: Any, where: str) -> dict[str, Any]:
    """``doc`` if it is a ManifestWork with a manifest list; DiffError otherwise."""
    if not isinstance(doc, dict):
        raise DiffError(f"{where} is not a ManifestWork (not an object)")
    if doc.get("apiVersion") != MANIFESTWORKS.api_version or doc.get("kind") != MANIFESTWORKS.kind:
        raise DiffError(
            f"{where} is not a ManifestWork: apiVersion {doc.get('apiVersion')!r}, "
            f"kind {doc.get('kind')!r} (want {MANIFESTWORKS.api_version}, {MANIFESTWORKS.kind})"
        )
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise DiffError(f"{where}: the ManifestWork has no metadata.name")
    manifests = ((doc.get("spec") or {}).get("workload") or {}).get("manifests")
    if manifests is not None and not isinstance(manifests, list):
        raise DiffError(f"{where}: spec.workload.manifests is not a list")
    return doc


def unified(before: dict[str, Any] | None, after: dict[str, Any], name: str) -> str:
    """A unified diff of two objects as YAML (``before`` None: the object is new)."""
    old = (
        yaml.safe_dump(without_server_fields(before), sort_keys=True) if before is not None else ""
    )
    new = yaml.safe_dump(without_server_fields(after), sort_keys=True)
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"live/{name}" if before is not None else "/dev/null",
        tofile=f"merged/{name}",
    )
    return "".join(lines)


class WorkDiff:
    """Diffs the manifests of one work against one managed cluster."""

    def __init__(self, spoke: DryRunClient, the_hash: str) -> None:
        self.spoke = spoke
        self.mapper = RESTMapper(spoke)
        self.appliers = Appliers(spoke)
        self.hub_hash = the_hash

    async def owner(self, work_name: str) -> tuple[dict[str, Any], str]:
        """The AppliedManifestWork owner reference the agent uses, and a note about it.

        With the hub hash, the AppliedManifestWork ``<hash>-<work>``; without
        it, the one AppliedManifestWork whose ``spec.manifestWorkName`` is the
        work. When there is none yet, the agent would create it first: its
        uid is not known, and :data:`UNKNOWN_UID` stands for it.
        """
        applied: dict[str, Any] | None = None
        if self.hub_hash:
            name = applied_work_name(self.hub_hash, work_name)
            try:
                applied = await self.spoke.get(APPLIED_MANIFESTWORKS, name)
            except NotFound:
                applied = None
        else:
            name = f"<hub hash>-{work_name}"
            try:
                items = (await self.spoke.list(APPLIED_MANIFESTWORKS))["items"]
            except (Forbidden, NotFound):  # no right to list them, or no CRD: none known
                items = []
            mine = [a for a in items if (a.get("spec") or {}).get("manifestWorkName") == work_name]
            if len(mine) == 1:
                applied = mine[0]
        if applied is not None:
            return applied_work_owner(applied), ""
        note = (
            f"note: no AppliedManifestWork of {work_name} on the managed cluster yet; the owner "
            f"reference shows uid {UNKNOWN_UID} for the one the agent would create\n"
        )
        return owner_reference(name, UNKNOWN_UID), note

    async def manifests(self, work: dict[str, Any]) -> tuple[list[ManifestDiff], str]:
        """The outcome of every manifest, in the agent's apply order; and a note."""
        try:
            spec, manifests = work_spec(work)  # validated as the agent does
        except ValueError as err:
            raise DiffError(f"invalid ManifestWork spec: {_first_line(str(err))}") from None
        work_name = str(work["metadata"]["name"])
        owner, note = await self.owner(work_name)
        results = [parse_manifest(i, raw) for i, raw in enumerate(manifests)]
        ordered = sorted(results, key=lambda r: (r.rank, r.ordinal))
        return [await self.one(work_name, spec, owner, result) for result in ordered], note

    async def one(
        self,
        work_name: str,
        spec: ManifestWorkSpec,
        owner: dict[str, Any],
        result: ManifestResult,
    ) -> ManifestDiff:
        """Dry-run one manifest with its strategy and compare."""
        meta = result.meta
        where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        what = f"{meta.get('kind') or 'manifest'} {where}".strip()
        entry = ManifestDiff(result.ordinal, what, "", "")
        try:
            if result.error is not None:
                raise result.error
            await map_resource(self.mapper, result)
            assert result.resource is not None and result.required is not None
            group, resource = meta["group"], meta["resource"]
            namespace, name = meta["namespace"], meta["name"]
            option = find_manifest_config(spec.manifest_configs, group, resource, namespace, name)
            strategy = option.update_strategy if option is not None else None
            applier = self.appliers.for_strategy(strategy)
            entry.strategy = str(getattr(applier, "strategy", "Update"))
            owned = owned_by_the_work(group, resource, namespace, name, spec.delete_option)
            try:
                live: dict[str, Any] | None = await self.spoke.get(
                    result.resource, name, namespace or None
                )
            except NotFound:
                live = None
            if strategy is not None and strategy.type == UpdateStrategyType.READ_ONLY:
                entry.verdict = "ReadOnly, never written" + (
                    "" if live is not None else " (the object does not exist)"
                )
                return entry
            after = await applier.apply(
                ApplyRequest(
                    resource=result.resource,
                    required=copy.deepcopy(result.required),
                    owner=owner_for(owner, owned),
                    option=option,
                    work_name=work_name,
                    # A running agent remembers the manifest it applied last; recall it.
                    may_have_changed=True,
                )
            )
        except (Unreachable, Unauthorized):
            raise  # the cluster, not the manifest: the whole diff fails
        except Exception as err:
            if failure_reason(err) == UNEXPECTED_FAILURE:
                raise  # a bug, not the manifest's fault
            entry.failed = True
            entry.strategy = entry.strategy or "not applied"
            entry.verdict = f"would fail: {describe_error(err)}"
            return entry
        label = f"{result.resource.api_version}.{result.resource.kind}.{where.replace('/', '.')}"
        key = (result.resource.group, result.resource.plural, namespace, name)
        recreated = key in self.spoke.recreated
        entry.diff = unified(live, after, label)
        entry.changed = recreated or live is None or bool(entry.diff)
        if recreated:
            entry.verdict = "would delete and re-create (a field that cannot change changed)"
        elif live is None:
            entry.verdict = "would create"
        elif entry.strategy == "CreateOnly":
            entry.verdict = "CreateOnly, content left alone" + (
                "; would change its owner references" if entry.changed else ""
            )
        else:
            entry.verdict = "would change" if entry.changed else "no changes"
        return entry


async def load_work(command: DiffCommand) -> dict[str, Any]:
    """The ManifestWork from ``-f`` or from the hub."""
    if command.filename:
        return read_work_file(command.filename)
    try:
        hub = await KubeClient.from_kubeconfig(command.hub_kubeconfig, name="hub")
    except KubeConfigError as err:
        raise DiffError(f"--hub-kubeconfig: {err}") from None
    try:
        work = await hub.get(MANIFESTWORKS, command.work, command.cluster_name)
    except NotFound:
        raise DiffError(
            f'ManifestWork "{command.work}" not found in namespace "{command.cluster_name}" '
            "on the hub"
        ) from None
    except KubeError as err:
        raise DiffError(f"hub: {_first_line(str(err))}") from None
    finally:
        await hub.close()
    return check_work(work, f"ManifestWork {command.cluster_name}/{command.work}")


async def diff_work(command: DiffCommand, out: TextIO) -> int:
    """Print the diff of every manifest; the exit code."""
    work = await load_work(command)
    the_hash = ""
    if command.hub_kubeconfig:
        try:
            the_hash = hub_hash(kubeconfig_server(command.hub_kubeconfig))
        except KubeConfigError as err:
            raise DiffError(str(err)) from None
    try:
        spoke = await DryRunClient.from_kubeconfig(
            command.kubeconfig or None, user_agent=SPOKE_USER_AGENT, name="spoke", qps=0
        )
    except KubeConfigError as err:
        raise DiffError(f"--kubeconfig: {err}") from None
    try:
        try:
            results, note = await WorkDiff(spoke, the_hash).manifests(work)
        except KubeError as err:
            raise DiffError(f"managed cluster: {_first_line(str(err))}") from None
    finally:
        await spoke.close()
    out.write(note)
    for entry in sorted(results, key=lambda e: e.ordinal):
        out.write(entry.render())
    if any(e.failed for e in results):
        return EXIT_ERROR
    return EXIT_CHANGES if any(e.changed for e in results) else EXIT_NO_CHANGES


def run_diff(command: DiffCommand, out: TextIO, err: TextIO) -> int:
    """``workagent diff``: run it, print one line on failure; the exit code."""
    configure_logging("console", "error")  # the appliers' info lines are not the diff
    try:
        return asyncio.run(diff_work(command, out))
    except DiffError as error:
        print(f"{PROG} diff: {_first_line(str(error))}", file=err)
        return EXIT_ERROR
