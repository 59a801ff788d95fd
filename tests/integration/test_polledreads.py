"""Coalesced Poll-mode reads (:mod:`workagent.polledreads`) on a manual clock, both targets."""

from __future__ import annotations

from typing import Any, cast

import pytest

from ocmkit.kube import APPLIED_MANIFESTWORKS, KubeClient, Resource
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.polledreads import DEMAND_INTERVALS, LIST_THRESHOLD, WASTE_FACTOR, PolledReads

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
INTERVAL = 10.0
TEST_AGENT = ("integration-test",)


class ManualClock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def read_all(reads: PolledReads, client: KubeClient, names: list[str]) -> list[str]:
    """Read every name once; the names found."""
    found = []
    for name in names:
        obj = await reads.read(client, CONFIGMAPS, "default", name, interval=INTERVAL)
        if obj is not None:
            found.append(obj["metadata"]["name"])
    return found


async def test_a_stall_longer_than_the_demand_window_keeps_listing(
    spoke_client: KubeClient, spoke: Cluster
) -> None:
    """When every read comes late at once (the loop stalled for many intervals), the next
    round is still served by one LIST, not by one GET per object until demand is rebuilt."""
    names = [f"polled-{n}" for n in range(LIST_THRESHOLD + 4)]
    for name in names:
        await spoke_client.create(CONFIGMAPS, {"metadata": {"name": name}}, "default")
    clock = ManualClock()
    reads = PolledReads(clock=clock)
    # Demand builds up over the first round (below the threshold: GETs), then lists.
    assert await read_all(reads, spoke_client, names) == names
    clock.now += INTERVAL
    requests = RequestRecord(spoke)
    assert await read_all(reads, spoke_client, names) == names
    assert requests.count("get", "configmaps", user_agents=TEST_AGENT) == 0
    assert requests.count("list", "configmaps", user_agents=TEST_AGENT) == 1

    clock.now += 20 * INTERVAL  # a long stall: every sync of the next round is late
    requests.mark()
    assert await read_all(reads, spoke_client, names) == names
    assert requests.count("get", "configmaps", user_agents=TEST_AGENT) == 0
    assert requests.count("list", "configmaps", user_agents=TEST_AGENT) == 1


async def test_a_stall_before_a_slow_round_keeps_listing(
    spoke_client: KubeClient, spoke: Cluster
) -> None:
    """After a stall, the syncs of the next round may come one by one, more than half
    an interval apart (a loaded machine): the names of the works not synced yet are
    still read, and the round is served by LISTs, not by GETs until demand is rebuilt."""
    works = [[f"polled-{w}-{n}" for n in range(5)] for w in range(4)]
    for name in (name for work in works for name in work):
        await spoke_client.create(CONFIGMAPS, {"metadata": {"name": name}}, "default")
    clock = ManualClock()
    reads = PolledReads(clock=clock)
    for _ in range(2):  # demand builds up (GETs), then a round served by one LIST
        for work in works:
            assert await read_all(reads, spoke_client, work) == work
        clock.now += INTERVAL

    clock.now += 3 * INTERVAL  # the stall
    requests = RequestRecord(spoke)
    for work in works:
        assert await read_all(reads, spoke_client, work) == work
        clock.now += 0.6 * INTERVAL  # each sync of the round comes late
    assert requests.count("get", "configmaps", user_agents=TEST_AGENT) == 0
    assert requests.count("list", "configmaps", user_agents=TEST_AGENT) == 4


class SlowLists:
    """A client whose LISTs take ``latency`` seconds of the manual clock (a slow server)."""

    def __init__(self, client: KubeClient, clock: ManualClock, latency: float) -> None:
        self._client, self._clock, self._latency = client, clock, latency

    async def list(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._clock.now += self._latency
        return await self._client.list(*args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return await self._client.get(*args, **kwargs)


async def test_lists_slower_than_their_max_age_keep_being_used(
    spoke_client: KubeClient, spoke: Cluster
) -> None:
    """A LIST that takes longer than half an interval is stale when it arrives, so each
    read of a sync waits for a new one and the syncs of a round spread over many
    intervals. The time spent waiting for the bucket's own lists does not age its
    demand: the reads stay LISTs instead of turning into GETs."""
    works = [[f"polled-{w}-{n}" for n in range(5)] for w in range(4)]
    for name in (name for work in works for name in work):
        await spoke_client.create(CONFIGMAPS, {"metadata": {"name": name}}, "default")
    clock = ManualClock()
    reads = PolledReads(clock=clock)
    slow = cast(KubeClient, SlowLists(spoke_client, clock, 0.6 * INTERVAL))
    for work in works:  # demand builds up (GETs, then the first lists)
        assert await read_all(reads, slow, work) == work
    requests = RequestRecord(spoke)
    for _ in range(3):
        for work in works:
            assert await read_all(reads, slow, work) == work
            clock.now += 0.1 * INTERVAL
    assert requests.count("get", "configmaps", user_agents=TEST_AGENT) == 0
    assert requests.count("list", "configmaps", user_agents=TEST_AGENT) >= 3 * len(works)


async def test_names_no_longer_read_are_forgotten(spoke_client: KubeClient, spoke: Cluster) -> None:
    """Objects nobody reads for two intervals while others are read stop counting as
    demand: below the threshold the bucket goes back to GETs."""
    names = [f"polled-{n}" for n in range(LIST_THRESHOLD + 2)]
    for name in names:
        await spoke_client.create(CONFIGMAPS, {"metadata": {"name": name}}, "default")
    clock = ManualClock()
    reads = PolledReads(clock=clock)
    await read_all(reads, spoke_client, names)
    kept = names[:3]
    for _ in range(3):  # three intervals of reading only three of them
        clock.now += INTERVAL
        await read_all(reads, spoke_client, kept)
    clock.now += INTERVAL
    requests = RequestRecord(spoke)
    assert await read_all(reads, spoke_client, kept) == kept
    assert requests.count("list", "configmaps", user_agents=TEST_AGENT) == 0
    assert requests.count("get", "configmaps", user_agents=TEST_AGENT) == len(kept)


async def test_a_list_tells_of_the_objects_it_shows_changed_or_gone(
    spoke_client: KubeClient, spoke: Cluster
) -> None:
    """A new list calls the listeners once for each read object that changed or went
    since the previous list, with the new (or the last listed) version; unchanged ones
    and objects never listed before are not told."""
    names = [f"polled-{n}" for n in range(LIST_THRESHOLD + 2)]
    for name in names:
        await spoke_client.create(CONFIGMAPS, {"metadata": {"name": name}}, "default")
    clock = ManualClock()
    reads = PolledReads(clock=clock)
    told: list[tuple[str, str]] = []
    reads.add_listener(lambda _res, _ns, obj: told.append((obj["metadata"]["name"], _rv(obj))))
    await read_all(reads, spoke_client, names)  # GETs while demand builds up
    clock.now += INTERVAL
    await read_all(reads, spoke_client, names)  # the first list: nothing to compare with
    assert told == []
    changed = await spoke_client.patch(CONFIGMAPS, names[0], {"data": {"k": "v"}}, "default")
    gone = await spoke_client.get(CONFIGMAPS, names[1], "default")
    await spoke_client.delete(CONFIGMAPS, names[1], "default")
    clock.now += INTERVAL
    found = await read_all(reads, spoke_client, names)  # the second list
    assert names[1] not in found
    assert sorted(told) == sorted([(names[0], _rv(changed)), (names[1], _rv(gone))])


@pytest.mark.parametrize("owned", [True, False], ids=["owned", "foreign"])
async def test_a_list_of_mostly_unread_objects_is_kept_only_for_the_works_own(
    spoke_client: KubeClient, spoke: Cluster, owned: bool
) -> None:
    """A list returning far more objects than are read goes back to GETs when the rest
    are foreign objects, but not when an AppliedManifestWork owns them (the works'
    own objects, say while many works are deleted and their status syncs stop)."""
    owners = []
    if owned:
        record = await spoke_client.create(
            APPLIED_MANIFESTWORKS,
            {
                "metadata": {"name": "polled-owner"},
                "spec": {"hubHash": "h", "agentID": "a", "manifestWorkName": "w"},
            },
        )
        owners = [
            {
                "apiVersion": APPLIED_MANIFESTWORKS.api_version,
                "kind": APPLIED_MANIFESTWORKS.kind,
                "name": "polled-owner",
                "uid": record["metadata"]["uid"],
            }
        ]
    read = [f"polled-{n}" for n in range(LIST_THRESHOLD + 2)]
    unread = [f"unread-{n}" for n in range(WASTE_FACTOR * len(read))]
    for name in read + unread:
        body = {"metadata": {"name": name, "ownerReferences": owners}}
        await spoke_client.create(CONFIGMAPS, body, "default")
    clock = ManualClock()
    reads = PolledReads(clock=clock)
    await read_all(reads, spoke_client, read)  # demand builds up; the first list
    clock.now += INTERVAL * DEMAND_INTERVALS  # settled: what is read is known now
    requests = RequestRecord(spoke)
    assert await read_all(reads, spoke_client, read) == read
    assert requests.count("list", "configmaps", user_agents=TEST_AGENT) == 1
    # Owned: the list serves the round; foreign: wasteful, so each object is read.
    gets = 0 if owned else len(read)
    assert requests.count("get", "configmaps", user_agents=TEST_AGENT) == gets


def _rv(obj: dict[str, object]) -> str:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return str(meta["resourceVersion"])
