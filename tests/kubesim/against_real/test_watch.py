"""Watches and lists: the streaming list client-go 1.35 sends, and its options.

Scenarios run on kubesim and on the real apiserver at once; see
tests/kubesim/against_real/__init__.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from tests.kubesim.truth import Answer, Record, Side, configmap, namespace, same
from tests.support.controlplane import informersync_binary

pytestmark = pytest.mark.realkube


# -- the streaming list (client-go's WatchList) --------------------------------------------

STREAM = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def initial_events_end(event: dict[str, Any]) -> bool:
    """Whether ``event`` is the bookmark that ends the initial events."""
    annotations = event["object"]["metadata"].get("annotations") or {}
    return event["type"] == "BOOKMARK" and annotations.get(INITIAL_EVENTS_END) == "true"


def rv_of(answer: Answer) -> int:
    """The resourceVersion of a list or object answer."""
    return int(answer.json["metadata"]["resourceVersion"])


async def test_streaming_list(sides: tuple[Side, Side]) -> None:
    """What client-go 1.35's informers send: the objects as ADDED events, then a
    BOOKMARK annotated ``k8s.io/initial-events-end``, then the changes."""
    ns = "stream"
    cms = f"/api/v1/namespaces/{ns}/configmaps"

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        first = await side.call("POST", cms, configmap("a", tier="x"))
        await side.call("POST", cms, configmap("b"))
        listed = await side.call("GET", cms)
        # Timeouts are short: no periodic bookmark can come before the end.
        for step, query in [
            ("rv unset", f"{STREAM}&timeoutSeconds=1"),
            ("rv 0", f"{STREAM}&resourceVersion=0&timeoutSeconds=1"),
            ("rv of the list", f"{STREAM}&resourceVersion={rv_of(listed)}&timeoutSeconds=1"),
            ("rv older", f"{STREAM}&resourceVersion={rv_of(first)}&timeoutSeconds=1"),
            ("label selector", f"{STREAM}&labelSelector=tier%3Dx&timeoutSeconds=1"),
            ("no match", f"{STREAM}&labelSelector=tier%3Dnone&timeoutSeconds=1"),
        ]:
            answer = await side.watch(f"{cms}?{query}", until=initial_events_end)
            rec.answer(step, answer)
            # The bookmark reports a resourceVersion at least as new as the state sent.
            bookmark = answer.events[-1]["object"]["metadata"]["resourceVersion"]
            rec.add(f"{step}: bookmark not older than the list", int(bookmark) >= rv_of(listed))

    await same(scenario, sides)


async def test_watch_starting_points(sides: tuple[Side, Side]) -> None:
    """Which events a watch starts with, by resourceVersion and ``sendInitialEvents``
    (absent, it defaults to true from ``""`` and ``"0"``, false otherwise)."""
    ns = "starts"
    cms = f"/api/v1/namespaces/{ns}/configmaps"

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        first = await side.call("POST", cms, configmap("a"))
        second = await side.call("POST", cms, configmap("b"))
        # rv "0" reads the watch cache as it is, which may not hold "b" yet: a
        # list not older than "b" waits until the cache does.
        caught_up = await side.call(
            "GET", f"{cms}?resourceVersion={rv_of(second)}&resourceVersionMatch=NotOlderThan"
        )
        assert caught_up.status == 200, caught_up.body
        # Three seconds: the real server's watch cache sends the initial-events-end
        # bookmark from a once-a-second timer, which a one-second watch on a loaded
        # machine could miss (CI saw it).
        queries = [
            (
                f"rv {name or 'unset'}{bookmarks}{initial}",
                f"watch=1&resourceVersion={rv}{bookmarks}{initial}&timeoutSeconds=3",
            )
            for name, rv in (("", ""), ("0", "0"), ("older", str(rv_of(first))))
            for bookmarks in ("", "&allowWatchBookmarks=true")
            for initial in (
                "",
                "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
                "&sendInitialEvents=false&resourceVersionMatch=NotOlderThan",
            )
        ]
        # At once: most of them wait for their timeout.
        answers = await asyncio.gather(*(side.watch(f"{cms}?{q}") for _, q in queries))
        for (step, _), answer in zip(queries, answers, strict=True):
            # A progress bookmark may come at any time (the API promises no more);
            # the real server's follow etcd's revision, which other API servers on
            # the shared etcd move. The initial-events-end bookmark is compared.
            answer.body = [
                event
                for event in answer.body
                if event["type"] != "BOOKMARK" or initial_events_end(event)
            ]
            rec.answer(step, answer)

    await same(scenario, sides)


async def test_streaming_list_then_changes(sides: tuple[Side, Side]) -> None:
    """After the initial-events bookmark the watch goes on with the changes."""
    ns = "changes"
    cms = f"/api/v1/namespaces/{ns}/configmaps"

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        await side.call("POST", cms, configmap("a"))

        async def change(event: dict[str, Any]) -> None:
            if initial_events_end(event):
                await side.call(
                    "PATCH",
                    f"{cms}/a",
                    {"data": {"k": "changed"}},
                    content_type="application/merge-patch+json",
                )
                await side.call("DELETE", f"{cms}/a")

        answer = await side.watch(
            f"{cms}?{STREAM}&timeoutSeconds=30",
            on_event=change,
            until=lambda event: event["type"] == "DELETED",
        )
        rec.answer("initial events, bookmark, changes", answer)

    await same(scenario, sides)


async def test_list_and_watch_option_errors(sides: tuple[Side, Side]) -> None:
    """Forbidden option combinations (422), resourceVersions that are not numbers,
    and one the server has not reached (504 after three seconds)."""
    ns = "opterrors"
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    queries = [
        "watch=1&sendInitialEvents=true",
        "watch=1&sendInitialEvents=true&allowWatchBookmarks=true",
        "watch=1&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        "watch=1&resourceVersion=5&resourceVersionMatch=Exact",
        "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact",
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&continue=abc",
        "watch=1&continue=abc",
        "watch=1&resourceVersion=abc",
        f"{STREAM}&resourceVersion=abc",
        "watch=1&resourceVersion=-1",
        "watch=1&resourceVersion=99999999999999999999",
        "sendInitialEvents=true",
        "sendInitialEvents=false&resourceVersionMatch=NotOlderThan",
        "resourceVersionMatch=Exact",
        "resourceVersion=5&resourceVersionMatch=Bogus",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersion=5&resourceVersionMatch=Exact&continue=abc",
        "resourceVersionMatch=Bogus&sendInitialEvents=true",
        "resourceVersion=abc",
        "resourceVersion=abc&resourceVersionMatch=NotOlderThan",
    ]
    # The server's current resourceVersion in the 504 message is its own.
    current = re.compile(r"current: \d+")

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        for query in queries:
            rec.answer(query, await side.call("GET", f"{cms}?{query}"))
        far = 10**9
        # Each waits three seconds for the server to reach the resourceVersion: at once.
        exact, newer, streamed = await asyncio.gather(
            side.call("GET", f"{cms}?resourceVersion={far}&resourceVersionMatch=Exact"),
            side.call("GET", f"{cms}?resourceVersion={far}"),
            side.watch(f"{cms}?{STREAM}&resourceVersion={far}&timeoutSeconds=10"),
        )
        for answer in (exact, newer):
            answer.body["message"] = current.sub("current: N", answer.json["message"])
        for event in streamed.events:
            event["object"]["message"] = current.sub("current: N", event["object"]["message"])
        rec.answer("list, Exact, a resourceVersion not reached", exact)
        rec.answer("list, a resourceVersion not reached", newer)
        rec.answer("streaming list from a resourceVersion not reached", streamed)

    await same(scenario, sides)


# -- a Go controller's informer (client-go 1.35) ---------------------------------------------


async def test_client_go_informer_syncs(sides: tuple[Side, Side]) -> None:
    """A client-go 1.35 informer starts with a streaming list and syncs once the
    initial-events bookmark comes; without it (kubesim before v1.35's answers) it
    never syncs, which is how OCM's Go agent hung at start. Only the streaming list
    is sent: no fallback to a plain list."""
    ns = "informer"
    binary = informersync_binary()

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        for name in ("a", "b"):
            await side.call("POST", f"/api/v1/namespaces/{ns}/configmaps", configmap(name))
        process = await asyncio.create_subprocess_exec(
            str(binary),
            f"--kubeconfig={side.kubeconfig}",
            f"--namespace={ns}",
            "--timeout=20s",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        assert out, err.decode()[-2000:]
        report = json.loads(out)
        # client-go picks a random watch timeout each time: not compared.
        report["requests"] = [
            re.sub(r"&?timeout(Seconds)?=[^&]*", "", request) for request in report["requests"]
        ]
        rec.add("informer", {"exit": process.returncode, **report})

    await same(scenario, sides)
