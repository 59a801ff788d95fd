"""The ``ServerSideApply`` strategy (spec/agent.md 5.4).

Server-side apply the manifest with the configured field manager
(``serverSideApply.fieldManager``, default ``work-agent``) and ``force``; a
field conflict with another manager is a :class:`ServerSideApplyConflict`
carrying the API server's message. The applied body carries no owner
reference: the work's owner reference is ensured afterwards with a
separate merge patch, which is also how a delete-option change to Orphan
strips it from an SSA-managed object.

With ``ignoreFields``, the manifest without its ``OnSpokePresent`` fields
(*trimmed*) is hashed into the annotation
``open-cluster-management.io/config-spec-hash``, on both the trimmed and the
full manifest. A missing object is created from the full manifest (so
ignored fields get their initial value); an object whose annotation equals
the hash is not applied at all (only its owner reference is ensured); any
other object gets the trimmed manifest. So ``OnSpokePresent`` fields are set
once and then left to the managed cluster, ``OnSpokeChange`` fields are
re-applied when the hub changes them but spoke edits alone stand, and while
the hash matches no drift of any field is corrected.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Final

import structlog

from ocmkit.govalues import go_format_value
from ocmkit.kube import Conflict, KubeClient, NotFound
from workagent.apply.base import ApplyRequest, ServerSideApplyConflict
from workagent.apply.ignore_fields import trim
from workagent.apply.owners import ensure_owner
from workagent.apply.prepare import prepare

log = structlog.get_logger(__name__)

CONFIG_SPEC_HASH_ANNOTATION: Final = "open-cluster-management.io/config-spec-hash"
DEFAULT_FIELD_MANAGER: Final = "work-agent"


def strip_null_creation_timestamps(obj: Any) -> None:
    """Remove, anywhere in ``obj``, ``metadata.creationTimestamp: null`` (in place).

    A null creationTimestamp in an applied body makes the API server bump
    the generation although nothing changed (kubernetes/kubernetes#67610);
    nested objects (a ManifestWork inside a manifest) are cleaned too.
    """
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict) and meta.get("creationTimestamp", "") is None:
            del meta["creationTimestamp"]
        for value in obj.values():
            strip_null_creation_timestamps(value)
    elif isinstance(obj, list):
        for item in obj:
            strip_null_creation_timestamps(item)


def config_spec_hash(obj: dict[str, Any]) -> str:
    """The hash recorded for a trimmed manifest, as OCM's agent computes it: the MD5 hex
    of Go's ``%v`` of the ``*unstructured.Unstructured`` holding it (``&{map[...]}``).

    The same text means an object last applied by OCM's agent is not applied again
    when this agent takes over.
    """
    text = "&{" + go_format_value(obj, limit=None) + "}"
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


class ServerSideApplier:
    """Server-side apply with a field manager, ``force`` and ``ignoreFields``.

    The options come from the request's ``updateStrategy.serverSideApply``.
    """

    strategy = "ServerSideApply"

    def __init__(
        self, client: KubeClient, *, default_field_manager: str = DEFAULT_FIELD_MANAGER
    ) -> None:
        self.client = client
        self.default_field_manager = default_field_manager or DEFAULT_FIELD_MANAGER

    async def apply(self, request: ApplyRequest) -> dict[str, Any]:
        """Apply ``request`` and return the live object.

        Raises ServerSideApplyConflict on a field-manager conflict and
        IgnoreFieldsError when ``ignoreFields`` cannot be processed.
        """
        target = prepare(request)
        required = target.required
        strip_null_creation_timestamps(required)
        strategy = request.option.update_strategy if request.option is not None else None
        config = strategy.server_side_apply if strategy is not None else None
        force = config.force if config is not None else False
        manager = config.field_manager if config is not None else None
        field_manager = manager or self.default_field_manager

        body = required
        if config is not None and config.ignore_fields:
            trimmed = trim(copy.deepcopy(required), config.ignore_fields)
            spec_hash = config_spec_hash(trimmed)
            trimmed_meta = trimmed.setdefault("metadata", {})
            annotations = dict(trimmed_meta.get("annotations") or {})
            annotations[CONFIG_SPEC_HASH_ANNOTATION] = spec_hash
            trimmed_meta["annotations"] = annotations
            # Same map on the full manifest: ignored annotations are dropped even on create.
            required.setdefault("metadata", {})["annotations"] = dict(annotations)
            try:
                existing = await self.client.get(target.resource, target.name, target.namespace)
            except NotFound:
                body = required
            else:
                live = (existing.get("metadata") or {}).get("annotations") or {}
                if live.get(CONFIG_SPEC_HASH_ANNOTATION) == spec_hash:
                    return await ensure_owner(self.client, target.resource, existing, request.owner)
                body = trimmed

        try:
            applied = await self.client.patch(
                target.resource,
                target.name,
                body,
                target.namespace,
                patch_type="apply",
                field_manager=field_manager,
                force=force,
            )
        except Conflict as exc:
            raise ServerSideApplyConflict(exc.message) from exc
        target.log_written(
            log, "resource server-side applied", self.strategy, field_manager=field_manager
        )
        return await ensure_owner(self.client, target.resource, applied, request.owner)
