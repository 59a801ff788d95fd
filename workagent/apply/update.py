"""The ``Update`` strategy, the default (spec/agent.md 5.1).

Create the object when missing; otherwise merge and compare per the kind's
rules (:mod:`workagent.apply.kinds`) and PUT only when something the manifest
sets differs, with the live resourceVersion as a guard. A steady state
therefore sends no writes, even right after a restart: defaulted fields are
not compared. :mod:`workagent.apply.cache` spares the comparison, and a
request the API server refused as invalid, while neither side changes.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any, Final

import structlog

from ocmkit.kube import (
    APPLIED_MANIFESTWORKS,
    AlreadyExists,
    Forbidden,
    Invalid,
    KubeClient,
    KubeError,
    NotFound,
    Unauthorized,
    Unreachable,
)
from workagent.apply.base import ApplyRequest
from workagent.apply.cache import ApplyCache, CacheKey, digest
from workagent.apply.kinds import GENERIC, KindRules, Plan, rules_for
from workagent.apply.merge import MISSING, for_create
from workagent.apply.owners import api_group, same_owner
from workagent.apply.prepare import Target, prepare
from workagent.apply.recall import UNKNOWN, DefaultsNeeded, owned_fields, recalled_last

log = structlog.get_logger(__name__)

IMMUTABLE_MESSAGE: Final = "field is immutable"
# Metadata the API server sets; dropped from a body that recreates an object.
_SERVER_METADATA: Final = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def _rv(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _other_works_own(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    """Whether another work's AppliedManifestWork owns ``obj`` too: every work writes as
    the same field manager, so the keys it set are not this manifest's to recall."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if (
            isinstance(ref, dict)
            and ref.get("kind") == APPLIED_MANIFESTWORKS.kind
            and api_group(ref.get("apiVersion")) == APPLIED_MANIFESTWORKS.group
            and not same_owner(ref, owner)
        ):
            return True
    return False


class UpdateApplier:
    """Create, or update what the manifest sets; quiet when nothing differs.

    One instance per spoke client, shared by every work: it holds the cache.
    """

    strategy = "Update"

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.cache = ApplyCache()
        #: The field manager the API server records for this client's writes.
        self.manager = client.user_agent.split("/")[0]

    async def apply(self, request: ApplyRequest) -> dict[str, Any]:
        """Apply ``request`` and return the live object."""
        target = prepare(request)
        res = target.resource
        # 5.1 step 1: the manifest's owner references are replaced by the work's.
        target.required["metadata"]["ownerReferences"] = [dict(request.owner)]
        rules = rules_for(res.group, res.kind)
        required = rules.prepare(target.required)
        key: CacheKey = (
            request.work_name,
            res.group,
            res.kind,
            target.namespace or "",
            target.name,
        )
        required_hash = digest(required)

        if request.create_first:
            # Believed absent: no GET. AlreadyExists (it existed before the work, or an
            # earlier run created it without recording its UID) and Forbidden (one may
            # update what one may not create, e.g. in a terminating namespace) go down
            # the GET path, which decides as if no create had been tried.
            with contextlib.suppress(AlreadyExists, Forbidden):
                created = await self._create(target, required)
                self.cache.put(key, required_hash, _rv(created), required)
                return created
        try:
            existing = request.known or await self.client.get(res, target.name, target.namespace)
        except NotFound:
            created = await self._create(target, required)
            self.cache.put(key, required_hash, _rv(created), required)
            return created

        entry = self.cache.get(key)
        if (
            entry is not None
            and entry.required_hash == required_hash
            and entry.resource_version == _rv(existing)
        ):
            if entry.error is not None:
                # A fresh traceback: re-raising the stored one would grow it each time.
                raise entry.error.with_traceback(None)
            return existing

        last = entry.last_required if entry is not None else None
        recalled = False
        if (
            last is None
            and request.may_have_changed
            and rules is GENERIC
            and not _other_works_own(existing, request.owner)
        ):
            existing, last = await self._recall(target, existing, required)
            recalled = last is not None
        try:
            return await self._settle(target, key, existing, required, rules, last)
        except (Invalid, Forbidden) as exc:
            if not recalled:
                raise
            # A recalled key may be one the server needs after all (one it generated
            # rather than defaulted), or one a policy keeps: apply without the recall.
            target.log_written(
                log, "retried without recalled fields", self.strategy, error=exc.message
            )
            try:
                return await self._settle(target, key, existing, required, rules, None)
            except Invalid as again:
                # Refused either way: keep the recall, so a later resourceVersion (a Job's
                # status) costs one refused write, not a dry run and two.
                self.cache.put(key, required_hash, _rv(existing), last, error=again)
                raise

    async def _settle(
        self,
        target: Target,
        key: CacheKey,
        existing: dict[str, Any],
        required: dict[str, Any],
        rules: KindRules,
        last: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Plan against ``last`` (None: unknown), write when something differs, remember."""
        required_hash = digest(required)
        plan = rules.plan(existing, required, MISSING if last is None else last)
        if plan is None:
            self.cache.put(key, required_hash, _rv(existing), required)
            return existing
        try:
            result = await self._write(target, existing, plan)
        except Invalid as exc:
            # Deterministic: the same body against the same object fails the same way.
            self.cache.put(key, required_hash, _rv(existing), last, error=exc)
            raise
        self.cache.put(key, required_hash, _rv(result), required)
        return result

    async def _recall(
        self, target: Target, existing: dict[str, Any], required: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the live object, a stand-in for the manifest applied last or None): see
        :mod:`workagent.apply.recall`. Costs a dry-run create only when the agent's
        managedFields entry owns keys the manifest does not set."""
        if "managedFields" not in (existing.get("metadata") or {}):
            # A listed object (polled reads drop managedFields): read it whole.
            existing = await self.client.get(target.resource, target.name, target.namespace)
        owned = owned_fields(existing, self.manager)
        try:
            return existing, recalled_last(owned, required, existing, UNKNOWN)
        except DefaultsNeeded:
            pass
        defaults = await self._defaults(target, existing, required)
        if defaults is None:
            return existing, None
        return existing, recalled_last(owned, required, existing, defaults)

    async def _defaults(
        self, target: Target, existing: dict[str, Any], required: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The manifest as the server defaults it: a dry-run create under a generated
        name, else (a quota at its limit, a kind whose name is fixed) a dry-run PUT of
        the manifest over the live object; None when both are refused."""
        probe = for_create(required)
        meta = probe.setdefault("metadata", {})
        meta["generateName"] = str(meta.pop("name", ""))[:50].rstrip(".-") + "-"
        try:
            return await self.client.create(target.resource, probe, target.namespace, dry_run=True)
        except (Unreachable, Unauthorized):
            raise
        except KubeError:
            pass
        probe = for_create(required)
        probe.setdefault("metadata", {})["resourceVersion"] = _rv(existing)
        try:
            return await self.client.update(target.resource, probe, target.namespace, dry_run=True)
        except (Unreachable, Unauthorized):
            raise
        except KubeError as exc:
            # Without the defaults a dropped key cannot be told from a defaulted one.
            log.warning(
                "keys the manifest dropped are not recalled",
                resource=str(target.resource),
                namespace=target.namespace or "",
                name=target.name,
                error=exc.message,
            )
            return None

    async def _create(self, target: Target, required: dict[str, Any]) -> dict[str, Any]:
        created = await self.client.create(target.resource, for_create(required), target.namespace)
        target.log_written(log, "resource created", self.strategy)
        return created

    async def _write(self, target: Target, existing: dict[str, Any], plan: Plan) -> dict[str, Any]:
        if plan.recreate:
            return await self._recreate(target, existing, plan.body)
        body = plan.body
        # Omitted managedFields are kept as they are; sending them back is only bulk.
        body.get("metadata", {}).pop("managedFields", None)
        try:
            updated = await self.client.update(target.resource, body, target.namespace)
        except Invalid as exc:
            if plan.recreate_if_immutable and IMMUTABLE_MESSAGE in exc.message:
                return await self._recreate(target, existing, body)
            raise
        target.log_written(log, "resource updated", self.strategy)
        return updated

    async def _recreate(
        self, target: Target, existing: dict[str, Any], body: dict[str, Any]
    ) -> dict[str, Any]:
        """Delete the live object (only that one: uid precondition) and create ``body``."""
        uid = (existing.get("metadata") or {}).get("uid")
        await self.client.delete(
            target.resource,
            target.name,
            target.namespace,
            preconditions={"uid": uid} if uid else None,
        )
        fresh = copy.deepcopy(body)
        meta = fresh.setdefault("metadata", {})
        for field in _SERVER_METADATA:
            meta.pop(field, None)
        fresh.pop("status", None)
        created = await self.client.create(target.resource, for_create(fresh), target.namespace)
        target.log_written(log, "resource recreated", self.strategy)
        return created
