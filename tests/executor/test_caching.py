"""The caching validator (``ExecutorValidatingCaches``) against kubesim: cache keys,
invalidation on RBAC changes, refresh by the controller, cleanup."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ocmkit.kube import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    ROLE_BINDINGS,
    ROLES,
    KubeClient,
)
from ocmkit.runtime import object_key
from schemas.work_v1 import ManifestWorkExecutor
from tests.conftest import eventually
from tests.executor.conftest import (
    EXECUTOR_KEY,
    NS,
    SA_NS,
    CountingReviewer,
    cluster_role,
    cluster_role_binding,
    configmap,
    executor,
    role,
    role_binding,
    rule,
)
from tests.support.clock import FakeClock
from workagent.executor.access import Access
from workagent.executor.base import InvalidExecutorError, NotAllowedError
from workagent.executor.cache import Dimension
from workagent.executor.caching import CachingExecutorValidator, build_executor_validator
from workagent.executor.subject import ManifestTarget

APPLY = ["create", "update", "patch", "get"]
CM1 = Dimension(ManifestTarget("", "v1", "configmaps", NS, "cm1"), owned_by_work=False)
CM1_OWNED = Dimension(ManifestTarget("", "v1", "configmaps", NS, "cm1"), owned_by_work=True)


class Running:
    """A caching validator with its informers and controller running."""

    def __init__(self, validator: CachingExecutorValidator, reviewer: CountingReviewer) -> None:
        self.validator = validator
        self.reviewer = reviewer
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        for informer in self.validator.informers():
            await informer.start()
        for informer in self.validator.informers():
            assert await informer.wait_synced(10)
        self.task = asyncio.create_task(self.validator.controller.run())
        await self.validator.controller.wait_started()

    async def stop(self) -> None:
        await self.validator.controller.stop(5)
        if self.task is not None:
            await self.task
        for informer in self.validator.informers():
            await informer.stop()

    async def validate(self, obj: dict[str, Any], *, owned: bool = False) -> None:
        await self.validator.validate(executor(), CONFIGMAPS, obj, owned_by_work=owned)

    def cached(self, dimension: Dimension = CM1) -> bool | None:
        return self.validator.cache.get(EXECUTOR_KEY, dimension)

    async def settled(self, *written: dict[str, Any]) -> None:
        """The informers have seen (and handled) these RBAC writes."""
        informers = {i.resource.kind: i for i in self.validator.informers()}

        async def seen() -> bool:
            for obj in written:
                cached = informers[obj["kind"]].store.get(object_key(obj))
                version = obj["metadata"]["resourceVersion"]
                if cached is None or cached["metadata"]["resourceVersion"] != version:
                    return False
            return True

        await eventually(seen, what="the informers to see the RBAC writes")
        for informer in self.validator.informers():
            await informer.wait_handlers_idle()


@pytest.fixture
async def running(spoke: KubeClient) -> AsyncIterator[Running]:
    reviewer = CountingReviewer(spoke)
    # No recheck within a test: the review counts below are exact.
    validator = CachingExecutorValidator(spoke, reviewer=reviewer, recheck_after=3600)
    run = Running(validator, reviewer)
    await run.start()
    try:
        yield run
    finally:
        await run.stop()


async def test_outcomes_are_cached_per_executor_and_dimension(running: Running) -> None:
    with pytest.raises(NotAllowedError) as caught:
        await running.validate(configmap())
    assert str(caught.value) == (
        "not allowed to apply the resource  configmaps, demo cm1, will try again in 1m0s"
    )
    assert running.cached() is False
    asked = len(running.reviewer.asked)

    # A cached denial answers without asking, with the same message.
    with pytest.raises(NotAllowedError) as again:
        await running.validate(configmap())
    assert str(again.value) == str(caught.value)
    assert len(running.reviewer.asked) == asked

    # Owned (ApplyAndDelete) is another dimension.
    with pytest.raises(NotAllowedError):
        await running.validate(configmap(), owned=True)
    assert len(running.reviewer.asked) == asked + 1
    assert running.validator.cache.dimensions(EXECUTOR_KEY) == [CM1, CM1_OWNED]
    assert CM1_OWNED.owned_by_work and not CM1.owned_by_work


async def test_role_binding_invalidates_and_the_refresh_grants(
    running: Running, spoke: KubeClient
) -> None:
    with pytest.raises(NotAllowedError):
        await running.validate(configmap())
    assert running.cached() is False

    await spoke.create(ROLES, role("cm-writer", [rule([""], ["configmaps"], APPLY)]))
    await spoke.create(ROLE_BINDINGS, role_binding("cm-writer", "cm-writer"))

    async def refreshed() -> bool:
        return running.cached() is True

    # The controller re-runs the reviews on the binding event, with no validation.
    await eventually(refreshed, what="the cache refresh after the RoleBinding")
    asked = len(running.reviewer.asked)
    await running.validate(configmap())
    assert len(running.reviewer.asked) == asked  # served from the cache


class LaggingReviewer(CountingReviewer):
    """Answers ``stale`` while set: an authorizer that has not yet seen the last RBAC change."""

    def __init__(self, spoke: KubeClient) -> None:
        super().__init__(spoke)
        self.stale: bool | None = None

    async def allowed(self, executor: Any, access: Access) -> bool:
        if self.stale is None:
            return await super().allowed(executor, access)
        self.asked.append(access)
        return self.stale


@pytest.mark.parametrize("granted", [True, False], ids=["grant", "revoke"])
async def test_a_review_older_than_the_authorizer_is_corrected_by_the_recheck(
    spoke: KubeClient, granted: bool
) -> None:
    """The refresh right after a binding event can meet an authorizer that has not
    seen the binding yet; the recheck ``recheck_after`` later asks again."""
    clock = FakeClock()
    reviewer = LaggingReviewer(spoke)
    validator = CachingExecutorValidator(spoke, reviewer=reviewer, clock=clock, recheck_after=5)
    run = Running(validator, reviewer)
    await run.start()
    try:
        binding = role_binding("cm-writer", "cm-writer")
        await spoke.create(ROLES, role("cm-writer", [rule([""], ["configmaps"], APPLY)]))
        if not granted:
            binding = await spoke.create(ROLE_BINDINGS, binding)
            await run.settled(binding)
        before = not granted
        if granted:
            with pytest.raises(NotAllowedError):
                await run.validate(configmap())
        else:
            await run.validate(configmap())
        assert run.cached() is before

        reviewer.stale = before  # the authorizer lags behind the change below
        asked = len(reviewer.asked)
        if granted:
            await run.settled(await spoke.create(ROLE_BINDINGS, binding))
        else:
            await spoke.delete(ROLE_BINDINGS, "cm-writer", NS)
            for informer in validator.informers():
                await informer.wait_handlers_idle()

        async def refreshed() -> bool:
            return run.cached() is before and len(reviewer.asked) > asked

        await eventually(refreshed, what="the refresh to cache the lagging answer")
        reviewer.stale = None  # the authorizer has caught up
        clock.advance(4)
        assert run.cached() is before  # no recheck before recheck_after

        clock.advance(1)

        async def rechecked() -> bool:
            return run.cached() is granted

        await eventually(rechecked, what="the recheck to cache the authorizer's new answer")
    finally:
        await run.stop()


async def test_role_change_revokes_through_its_bindings(
    running: Running, spoke: KubeClient
) -> None:
    written = [
        await spoke.create(ROLES, role("cm-writer", [rule([""], ["configmaps"], APPLY)])),
        await spoke.create(ROLE_BINDINGS, role_binding("cm-writer", "cm-writer")),
    ]
    await running.settled(*written)
    await running.validate(configmap())
    assert running.cached() is True

    reduced = await spoke.get(ROLES, "cm-writer", NS)
    reduced["rules"] = [rule([""], ["configmaps"], ["get"])]
    await spoke.update(ROLES, reduced)

    async def revoked() -> bool:
        return running.cached() is False

    await eventually(revoked, what="the cache refresh after the Role change")
    with pytest.raises(NotAllowedError):
        await running.validate(configmap())


async def test_binding_deletion_revokes(running: Running, spoke: KubeClient) -> None:
    written = [
        await spoke.create(
            CLUSTER_ROLES, cluster_role("cm-writer", [rule([""], ["configmaps"], APPLY)])
        ),
        await spoke.create(CLUSTER_ROLE_BINDINGS, cluster_role_binding("cm-writer", "cm-writer")),
    ]
    await running.settled(*written)
    await running.validate(configmap())
    assert running.cached() is True

    await spoke.delete(CLUSTER_ROLE_BINDINGS, "cm-writer")

    async def revoked() -> bool:
        return running.cached() is False

    await eventually(revoked, what="the cache refresh after the binding deletion")


async def test_aggregated_cluster_role_member_change(running: Running, spoke: KubeClient) -> None:
    written = [
        await spoke.create(
            CLUSTER_ROLES,
            cluster_role(
                "aggregate",
                [],
                aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"agg": "cm"}}]},
            ),
        ),
        await spoke.create(CLUSTER_ROLE_BINDINGS, cluster_role_binding("aggregate", "aggregate")),
    ]
    await running.settled(*written)
    with pytest.raises(NotAllowedError):
        await running.validate(configmap())

    # A new member of the aggregate: only the member changes, not the binding.
    await spoke.create(
        CLUSTER_ROLES,
        cluster_role("cm-part", [rule([""], ["configmaps"], APPLY)], labels={"agg": "cm"}),
    )

    async def granted() -> bool:
        return running.cached() is True

    await eventually(granted, what="the refresh after an aggregated ClusterRole member appeared")


async def test_group_subjects_concern_service_accounts(running: Running, spoke: KubeClient) -> None:
    with pytest.raises(NotAllowedError):
        await running.validate(configmap())
    await spoke.create(ROLES, role("cm-writer", [rule([""], ["configmaps"], APPLY)]))
    group = {
        "kind": "Group",
        "name": f"system:serviceaccounts:{SA_NS}",
        "apiGroup": "rbac.authorization.k8s.io",
    }
    await spoke.create(ROLE_BINDINGS, role_binding("by-group", "cm-writer", subjects=[group]))

    async def granted() -> bool:
        return running.cached() is True

    await eventually(granted, what="the refresh after a group binding")


async def test_invalidation_is_immediate(running: Running, spoke: KubeClient) -> None:
    # Stop the refresh: validations after a change must not trust the old outcome.
    await running.validator.controller.stop(5)
    with pytest.raises(NotAllowedError):
        await running.validate(configmap())
    await spoke.create(ROLES, role("cm-writer", [rule([""], ["configmaps"], APPLY)]))
    await spoke.create(ROLE_BINDINGS, role_binding("cm-writer", "cm-writer"))

    async def invalidated() -> bool:
        return running.cached() is None

    await eventually(invalidated, what="the binding event")
    await running.validate(configmap())
    assert running.cached() is True


async def test_unrelated_rbac_changes_keep_the_cache(running: Running, spoke: KubeClient) -> None:
    with pytest.raises(NotAllowedError):
        await running.validate(configmap())
    written = [
        await spoke.create(ROLES, role("other", [rule([""], ["configmaps"], APPLY)])),
        await spoke.create(
            ROLE_BINDINGS,
            role_binding(
                "other",
                "other",
                subjects=[{"kind": "ServiceAccount", "name": "someone", "namespace": SA_NS}],
            ),
        ),
    ]
    await running.settled(*written)
    assert running.cached() is False


async def test_cache_is_bypassed_until_the_informers_sync(spoke: KubeClient) -> None:
    reviewer = CountingReviewer(spoke)
    validator = CachingExecutorValidator(spoke, reviewer=reviewer)
    assert not validator.cache_ready()
    with pytest.raises(NotAllowedError):
        await validator.validate(
            executor(),
            CONFIGMAPS,
            configmap(),
            owned_by_work=False,
        )
    assert len(validator.cache) == 0
    assert len(reviewer.asked) == 1


async def test_escalation_check_is_never_cached(running: Running, spoke: KubeClient) -> None:
    rbac = "rbac.authorization.k8s.io"
    written = [
        await spoke.create(ROLES, role("role-writer", [rule([rbac], ["roles"], APPLY)])),
        await spoke.create(ROLE_BINDINGS, role_binding("role-writer", "role-writer")),
    ]
    await running.settled(*written)
    secret_reader = role("secret-reader", [rule([""], ["secrets"], ["get"])])
    for _ in range(2):
        with pytest.raises(NotAllowedError, match="error: permission escalation"):
            await running.validator.validate(
                executor(),
                ROLES,
                secret_reader,
                owned_by_work=False,
            )
    escalation_reviews = [a for a in running.reviewer.asked if getattr(a, "verb", "") == "escalate"]
    assert len(escalation_reviews) == 2


async def test_no_executor_and_bad_subjects(spoke: KubeClient) -> None:
    validator = build_executor_validator(spoke, caching=True)
    await validator.validate(None, CONFIGMAPS, configmap(), owned_by_work=True)
    with pytest.raises(InvalidExecutorError, match=r"^the executor service account is nil$"):
        await validator.validate(
            ManifestWorkExecutor.model_validate({"subject": {"type": "ServiceAccount"}}),
            CONFIGMAPS,
            configmap(),
            owned_by_work=True,
        )


async def test_cleanup_drops_unused_dimensions(spoke: KubeClient) -> None:
    clock = FakeClock()
    validator = CachingExecutorValidator(spoke, clock=clock, cleanup_interval=600)
    run = Running(validator, CountingReviewer(spoke))
    for informer in validator.informers():
        await informer.start()
        assert await informer.wait_synced(10)
    try:
        with pytest.raises(NotAllowedError):
            await run.validate(configmap("cm1"))
        clock.advance(400)
        with pytest.raises(NotAllowedError):
            await run.validate(configmap("cm2"))
        assert validator.queue.waiting()  # the cleanup is scheduled
        clock.advance(300)
        # cm1 unused for 700 s, cm2 for 300 s.
        assert validator.cleanup() is not None
        assert [d.target.name for d in validator.cache.dimensions(EXECUTOR_KEY)] == ["cm2"]
        clock.advance(600)
        assert validator.cleanup() is None  # empty: no further runs until the next entry
        assert validator.cache.executors() == []
    finally:
        for informer in validator.informers():
            await informer.stop()
