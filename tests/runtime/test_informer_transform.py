"""An informer's transform: listed and watched objects are cached as it made them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ocmkit.kube import CONFIGMAPS, KubeClient
from ocmkit.runtime import Object, strip_managed_fields
from tests.conftest import eventually
from tests.runtime.conftest import NS, InformerFactory, cm, recorded


def cached(informer_store: Callable[[], Object | None]) -> Callable[[], Awaitable[bool]]:
    """A check that the object is cached (for :func:`eventually`)."""

    async def check() -> bool:
        return informer_store() is not None

    return check


async def test_listed_and_watched_objects_lose_their_managed_fields(
    kube: KubeClient, informers: InformerFactory
) -> None:
    await kube.create(CONFIGMAPS, cm("listed", a="1"), NS)
    assert (await kube.get(CONFIGMAPS, "listed", NS))["metadata"].get("managedFields")
    informer, rec = await recorded(informers, "t-transform", transform=strip_managed_fields)
    await kube.create(CONFIGMAPS, cm("watched", a="1"), NS)
    await eventually(cached(lambda: informer.store.get(f"{NS}/watched")), what="the watched one")
    await informer.wait_handlers_idle()
    for name in ("listed", "watched"):
        obj = informer.store.get(f"{NS}/{name}")
        assert obj is not None
        assert "managedFields" not in obj["metadata"]
        assert obj["metadata"]["resourceVersion"] and obj["data"] == {"a": "1"}
    assert rec.of("watched") == [("add", {"a": "1"})]
