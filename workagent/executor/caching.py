"""The caching executor validator (feature gate ``ExecutorValidatingCaches``, spec section 16).

SubjectAccessReview outcomes are cached per executor and :class:`Dimension`;
informers on the spoke's Roles, ClusterRoles, RoleBindings and
ClusterRoleBindings invalidate the executors a change concerns, and a
controller (``executor-cache``) re-runs their reviews in the background:

- a binding added, changed or deleted concerns the service accounts it names
  (old and new subjects);
- a Role or ClusterRole concerns whoever is bound to it, and a ClusterRole
  also whoever is bound to the aggregated ClusterRoles it contributes to.

Invalidation is immediate (the handler marks the executor's outcomes unknown,
so a validation after an RBAC change asks the API server instead of trusting a
result that predates it); the refresh only refills them. A refresh does not
requeue works: they pick it up on their next (at most 60 s) retry.

The API server's authorizer follows RBAC objects through informers of its own
(one per API server replica), which may not have seen a change when ours
delivered it: a review right after the event can still answer as before. So
``recheck_after`` (5 s) after an executor's last invalidation, the controller
reviews all its outcomes once more; without that, a stale answer would stay
cached until the next RBAC change that concerns the executor.

Every ``cleanup_interval`` (10 min) dimensions no validation used during the
interval are dropped. Works re-validate their manifests at every apply pass
(at most 6 minutes apart), so what current works use stays cached.

Until the RBAC informers have synced, validations bypass the cache: without
the informers, nothing would ever invalidate it.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from ocmkit.kube import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
    KubeClient,
    Resource,
)
from ocmkit.runtime import (
    Clock,
    Controller,
    Informer,
    MonotonicClock,
    Object,
    Result,
    WorkQueue,
)
from workagent.executor.access import AccessReviewer
from workagent.executor.aggregation import aggregators_of, labels_of, name_of
from workagent.executor.basic import BasicExecutorValidator
from workagent.executor.cache import AccessCache, Dimension
from workagent.executor.rbacindex import (
    ROLE_REF_INDEX,
    BindingSubjects,
    binding_changed,
    binding_subjects,
    role_changed,
    role_key,
    role_key_of,
    role_ref_keys,
)
from workagent.executor.subject import (
    ManifestTarget,
    ServiceAccountExecutor,
)

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "executor-cache"
CLEANUP_INTERVAL_SECONDS = 600.0
RECHECK_AFTER_SECONDS = 5.0
# Not valid executor keys: service-account names and namespaces are DNS labels.
CLEANUP_KEY = "@cleanup"
RECHECK_PREFIX = "@recheck "


class CachingExecutorValidator(BasicExecutorValidator):
    """An executor validator that caches SubjectAccessReview outcomes (see the module docstring).

    Register :meth:`controllers` with the Manager (it brings the
    :meth:`informers` along). ``clock`` drives the cleanup (injectable for tests).
    """

    def __init__(
        self,
        spoke: KubeClient,
        *,
        reviewer: AccessReviewer | None = None,
        cleanup_interval: float = CLEANUP_INTERVAL_SECONDS,
        recheck_after: float = RECHECK_AFTER_SECONDS,
        clock: Clock | None = None,
        workers: int = 1,
    ) -> None:
        super().__init__(spoke, reviewer=reviewer)
        self.cache = AccessCache()
        self.cleanup_interval = cleanup_interval
        self.recheck_after = recheck_after
        # When each executor was last invalidated (by the clock), until its recheck.
        self._invalidated_at: dict[str, float] = {}
        self._clock: Clock = clock or MonotonicClock()
        self._cleanup_scheduled = False

        self.roles = self._informer(spoke, ROLES)
        self.cluster_roles = self._informer(spoke, CLUSTER_ROLES)
        self.role_bindings = self._informer(spoke, ROLE_BINDINGS)
        self.cluster_role_bindings = self._informer(spoke, CLUSTER_ROLE_BINDINGS)
        for informer in (self.roles, self.cluster_roles):
            informer.add_handler(
                on_add=lambda obj: self._on_role(None, obj),
                on_update=self._on_role,
                on_delete=lambda obj: self._on_role(None, obj),
            )
        for informer in (self.role_bindings, self.cluster_role_bindings):
            informer.add_indexer(ROLE_REF_INDEX, role_ref_keys)
            informer.add_handler(
                on_add=lambda obj: self._on_binding(None, obj),
                on_update=self._on_binding,
                on_delete=lambda obj: self._on_binding(None, obj),
            )

        self.queue = WorkQueue(CONTROLLER_NAME, clock=self._clock)
        self.controller = Controller(
            CONTROLLER_NAME, self.queue, self._reconcile, workers, depends_on=self.informers()
        )

    @staticmethod
    def _informer(spoke: KubeClient, resource: Resource) -> Informer:
        return Informer(spoke, resource, name=f"{CONTROLLER_NAME}-{resource.plural}")

    # -- the validator ---------------------------------------------------------------
    def informers(self) -> list[Informer]:
        """The spoke RBAC informers whose events invalidate the cache."""
        return [self.roles, self.cluster_roles, self.role_bindings, self.cluster_role_bindings]

    def controllers(self) -> list[Controller]:
        """The cache refresh and cleanup controller (depends on :meth:`informers`)."""
        return [self.controller]

    def cache_ready(self) -> bool:
        """Whether the cache is used: every RBAC informer has synced."""
        return all(informer.has_synced() for informer in self.informers())

    async def allowed_to_apply(
        self, account: ServiceAccountExecutor, target: ManifestTarget, owned_by_work: bool
    ) -> bool:
        """The cached outcome once every RBAC informer has synced, else fresh reviews."""
        if not self.cache_ready():
            return await super().allowed_to_apply(account, target, owned_by_work)
        dimension = Dimension(target, owned_by_work)
        allowed, epoch = self.cache.lookup(account.key, dimension, self._clock.now())
        self._schedule_cleanup()
        if allowed is None:
            # API errors propagate uncached: the next validation asks again.
            allowed = await super().allowed_to_apply(account, target, owned_by_work)
            self.cache.store(account.key, dimension, allowed, epoch)
        return allowed

    # -- invalidation (informer handlers) --------------------------------------------
    def _on_binding(self, old: Object | None, new: Object) -> None:
        if not self.cache.executors():
            return  # e.g. the initial list: nothing cached, nothing to invalidate
        if old is not None and not binding_changed(old, new):
            return
        self._invalidate([binding_subjects(b) for b in (old, new) if b is not None])

    def _on_role(self, old: Object | None, new: Object) -> None:
        if not self.cache.executors():
            return
        if old is not None and not role_changed(old, new):
            return
        ref = role_key_of(new)
        refs = {ref}
        if ref == role_key("ClusterRole", name_of(new)):
            label_sets = [labels_of(obj) for obj in (old, new) if obj is not None]
            aggregators = aggregators_of(name_of(new), label_sets, self.cluster_roles.store.list())
            refs |= {role_key("ClusterRole", name) for name in aggregators}
        bindings: list[Object] = []
        for ref in sorted(refs):
            for informer in (self.role_bindings, self.cluster_role_bindings):
                bindings += informer.store.by_index(ROLE_REF_INDEX, ref)
        self._invalidate([binding_subjects(b) for b in bindings])

    def _invalidate(self, grants: Iterable[BindingSubjects]) -> None:
        grants = list(grants)
        if not grants:
            return
        for key in self.cache.executors():
            if any(g.concerns(key) for g in grants) and self.cache.invalidate(key):
                log.debug("executor permissions invalidated", executor=key)
                self.queue.add(key)
                self._invalidated_at[key] = self._clock.now()
                self.queue.add_after(RECHECK_PREFIX + key, self.recheck_after)

    # -- refresh, recheck and cleanup (the controller) -------------------------------
    async def _reconcile(self, key: str) -> Result | None:
        if key == CLEANUP_KEY:
            return self.cleanup()
        if key.startswith(RECHECK_PREFIX):
            return await self.recheck(key.removeprefix(RECHECK_PREFIX))
        await self.refresh(key)
        return None

    async def refresh(self, executor_key: str) -> None:
        """Re-run the reviews of the executor's unknown outcomes and cache them.

        Outcomes computed before a newer invalidation are dropped (the newer
        one queued the executor again). API errors propagate, so the
        controller retries with backoff; meanwhile validations ask live.
        """
        account = ServiceAccountExecutor.from_key(executor_key)
        epoch = self.cache.epoch(executor_key)
        for dimension in self.cache.dimensions(executor_key):
            if self.cache.get(executor_key, dimension) is not None:
                continue  # filled by a validation since the invalidation
            allowed = await self.reviewer.allowed_to_apply(
                account, dimension.target, owned_by_work=dimension.owned_by_work
            )
            self.cache.store(executor_key, dimension, allowed, epoch)
            if self.cache.epoch(executor_key) != epoch:
                return  # invalidated again: that invalidation queued the next refresh

    async def recheck(self, executor_key: str) -> Result | None:
        """Review every outcome of the executor again, ``recheck_after`` after its last
        invalidation (a later invalidation postpones it).

        The outcomes stay cached meanwhile (they are as good as before the
        recheck), and a newer invalidation drops what this one computed.
        """
        invalidated = self._invalidated_at.get(executor_key)
        if invalidated is None:
            return None
        wait = invalidated + self.recheck_after - self._clock.now()
        if wait > 0:
            return Result(requeue_after=wait)
        del self._invalidated_at[executor_key]
        account = ServiceAccountExecutor.from_key(executor_key)
        epoch = self.cache.epoch(executor_key)
        changed = 0
        for dimension in self.cache.dimensions(executor_key):
            before = self.cache.get(executor_key, dimension)
            allowed = await self.reviewer.allowed_to_apply(
                account, dimension.target, owned_by_work=dimension.owned_by_work
            )
            if not self.cache.store(executor_key, dimension, allowed, epoch):
                return None  # invalidated again: that invalidation scheduled its own recheck
            changed += before is not None and before != allowed
        if changed:
            log.info(
                "executor permissions changed on recheck", executor=executor_key, changed=changed
            )
        return None

    def cleanup(self) -> Result | None:
        """Drop dimensions unused for a cleanup interval; ask to run again while any remain."""
        dropped = self.cache.prune(self._clock.now() - self.cleanup_interval)
        if dropped:
            log.info("executor cache cleaned up", dropped=dropped, kept=len(self.cache))
        if len(self.cache):
            return Result(requeue_after=self.cleanup_interval)
        self._cleanup_scheduled = False
        return None

    def _schedule_cleanup(self) -> None:
        if not self._cleanup_scheduled:
            self._cleanup_scheduled = True
            self.queue.add_after(CLEANUP_KEY, self.cleanup_interval)


def build_executor_validator(spoke: KubeClient, *, caching: bool) -> BasicExecutorValidator:
    """The validator for the agent: cached when ``ExecutorValidatingCaches`` is on.

    ``spoke`` is the agent's own spoke client: it creates the
    SubjectAccessReviews and, for the cached variant, watches RBAC objects.
    Register the result's ``controllers()`` with the Manager (a no-op list
    for the uncached validator).
    """
    if caching:
        return CachingExecutorValidator(spoke)
    return BasicExecutorValidator(spoke)
