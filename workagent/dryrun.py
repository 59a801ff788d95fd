"""A client that only dry-runs writes, and remembers their results for the next request.

``workagent diff`` runs the agent's own appliers against it. An applier may
send several writes for one manifest (ServerSideApply applies, then patches
the owner reference; Update may delete and re-create): each is a server-side
dry run (``dryRun=All``, so the API server validates and defaults it and
stores nothing), and the object it would have produced is kept in an
overlay, so that a later read sees it and a later write builds on it, as
they would against a cluster that had taken the first write:

- a GET of an object written in this dry run answers the overlay's version
  (NotFound after a dry-run delete);
- a merge patch of such an object is merged into the overlay's version
  locally (RFC 7386) and sent as a dry-run update of the object, or as a
  dry-run create when only the dry run created it;
- a create after a dry-run delete (Update's re-create of an object with a
  changed immutable field) cannot be dry-run, as the object still exists: the
  body is taken as it would be created, and the name is recorded in
  :attr:`DryRunClient.recreated`.

Every write the base client sends carries ``dryRun=All`` (``dry_run=True``),
so nothing here can change the cluster.
"""

from __future__ import annotations

import copy
from typing import Any

from ocmkit.kube import KubeClient, NotFound, Resource
from ocmkit.kube.mergepatch import apply_merge_patch

#: (group, plural, namespace, name) of an object.
ObjectKey = tuple[str, str, str, str]
#: Metadata the API server sets: not part of a body that creates the object again,
#: and noise in a diff (kubectl diff leaves it out too).
SERVER_FIELDS = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp")


class DryRunClient(KubeClient):
    """A :class:`KubeClient` whose writes are dry runs seen by its own later requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["dry_run"] = True
        super().__init__(*args, **kwargs)
        #: The object each dry-run write produced (None: deleted).
        self._overlay: dict[ObjectKey, dict[str, Any] | None] = {}
        #: Objects present before the dry run, as first read or written over.
        self._existed: dict[ObjectKey, bool] = {}
        #: Objects the dry run deleted and then created again.
        self.recreated: set[ObjectKey] = set()

    @staticmethod
    def _key(res: Resource, name: str, namespace: str | None) -> ObjectKey:
        return (res.group, res.plural, (namespace or "") if res.namespaced else "", name)

    def _body_key(self, res: Resource, body: dict[str, Any], namespace: str | None) -> ObjectKey:
        meta = body.get("metadata") or {}
        return self._key(res, str(meta.get("name") or ""), namespace or meta.get("namespace"))

    async def get(
        self, res: Resource, name: str, namespace: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """The overlay's version of an object this dry run wrote, else the server's."""
        key = self._key(res, name, namespace)
        subresource = options.get("subresource")
        if subresource is None and key in self._overlay:
            obj = self._overlay[key]
            if obj is None:
                raise NotFound(404, "NotFound", f'{res.plural} "{name}" not found (dry run)')
            return copy.deepcopy(obj)
        try:
            found = await super().get(res, name, namespace, **options)
        except NotFound:
            if subresource is None:
                self._existed.setdefault(key, False)
            raise
        if subresource is None:
            self._existed.setdefault(key, True)
        return found

    async def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """A dry-run create; after a dry-run delete of the same object, the body itself.

        With ``dry_run=True`` the caller itself asked for a dry run (a probe of the
        server's defaults, :mod:`workagent.apply.recall`): sent, never recorded.
        """
        if options.get("dry_run"):
            return await super().create(res, body, namespace, **options)
        key = self._body_key(res, body, namespace)
        subresource = options.get("subresource")
        if subresource is None and key in self._overlay and self._overlay[key] is None:
            self.recreated.add(key)
            created = without_server_fields(body)
            self._overlay[key] = created
            return copy.deepcopy(created)
        created = await super().create(res, body, namespace, **options)
        if subresource is None:
            self._existed.setdefault(key, False)
            self._overlay[key] = created
        return created

    async def update(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """A dry-run update (a dry-run create of an object only this dry run created);
        a probe (``dry_run=True``) as for :meth:`create`."""
        if options.get("dry_run"):
            return await super().update(res, body, namespace, **options)
        key = self._body_key(res, body, namespace)
        subresource = options.get("subresource")
        if subresource is None and self._existed.get(key) is False:
            self._overlay.pop(key, None)
            fresh = without_server_fields(body)
            return await self.create(
                res, fresh, namespace, field_manager=options.get("field_manager")
            )
        updated = await super().update(res, body, namespace, **options)
        if subresource is None:
            self._overlay[key] = updated
        return updated

    async def patch(
        self, res: Resource, name: str, body: Any, namespace: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """A dry-run patch; a merge patch of an object this dry run wrote builds on that."""
        key = self._key(res, name, namespace)
        subresource = options.get("subresource")
        field_manager = options.get("field_manager")
        current = self._overlay.get(key) if subresource is None else None
        if current is not None and options.get("patch_type", "merge") == "merge":
            # An update of the patched object (a create of one only this dry run created).
            patched = apply_merge_patch(current, body)
            return await self.update(res, patched, namespace, field_manager=field_manager)
        answer = await super().patch(res, name, body, namespace, **options)
        if subresource is None:
            self._existed.setdefault(key, bool(answer.get("metadata", {}).get("resourceVersion")))
            self._overlay[key] = answer
        return answer

    async def delete(
        self, res: Resource, name: str, namespace: str | None = None, **options: Any
    ) -> dict[str, Any] | None:
        """A dry-run delete; later reads of the object answer NotFound."""
        answer = await super().delete(res, name, namespace, **options)
        self._overlay[self._key(res, name, namespace)] = None
        return answer


def without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` without the metadata the API server maintains."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for field in SERVER_FIELDS:
            meta.pop(field, None)
    return out
